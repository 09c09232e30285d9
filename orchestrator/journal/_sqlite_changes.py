"""Whether a SQLite journal changed: :class:`SqliteChanges`, one pragma per look.

A daemon follows the sessions that other processes on its SQLite file run (an
``orchestrator run`` beside it): it reads a session's new facts when the file changed, and
only then. SQLite says so cheaply: ``PRAGMA data_version`` on a connection kept open
answers a number that differs from its last answer once any other connection (another
process's writer, or this process's own) has committed. One read-only connection per
journal asks it, whatever the number of sessions followed; each followed session then
reads from its own sequence on, so a change that was not its session's costs one
indexed query that finds nothing.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ._file import _error, _from_sqlite, _read_uri

__all__ = ["SqliteChanges"]


class SqliteChanges:
    """Asks a SQLite journal whether it changed (see the module docstring). Blocking: call
    it from a worker thread in trio code; one caller at a time is served at once, others
    wait for it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._version: int | None = None
        self._lock = threading.Lock()  # the connection is used from trio's worker threads
        self.looks = 0  # how many times the file was asked (for tests and statistics)

    def changed(self) -> bool:
        """Whether something was committed since the last call (True on the first, and
        after the connection was opened again). :class:`FactLogError` if the file cannot be
        read; the next call opens it again."""
        with self._lock:
            self.looks += 1
            try:
                if self._connection is None:
                    self._connection = sqlite3.connect(
                        _read_uri(self.path), uri=True, check_same_thread=False
                    )
                    self._version = None
                row = self._connection.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error as exc:
                self._close()
                raise _from_sqlite(self.path, exc, "see whether the journal changed") from exc
            if row is None or not isinstance(row[0], int):
                self._close()
                raise _error(self.path, f"PRAGMA data_version answered {row!r}")
            version, self._version = self._version, row[0]
            return version != row[0]

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
