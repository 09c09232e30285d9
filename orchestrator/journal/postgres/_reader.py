"""Reading a PostgreSQL journal: :class:`PostgresReader`, the reader's queries on a few
kept connections.

The same reads as :class:`~.._reader.JournalReader` (the same statements, through
:class:`~._connection.PgConnection`). A read borrows an idle connection (or opens one)
for its statements and gives it back. The reader keeps up to :data:`IDLE_CONNECTIONS` of them.
So a daemon's reads do not open a connection each (a few milliseconds and a server process),
nor wait for the writer. The connections read in ``repeatable read`` transactions. So opening
a session reads a snapshot's header and parts, and the facts after it, in one view (as one
SQLite read transaction does).

Not psycopg_pool's pool: it runs worker threads of its own. When a pool that was never
closed is collected, its ``__del__`` joins them from whichever thread the collector runs on.
That is a ``RuntimeError`` when the collector runs on one of them. Readers here are made freely
(each command, each lookup in tests) and seldom closed. A list of idle connections needs no
thread. A connection fails where it is opened, with the clear errors of :mod:`._connection` (a
server that is not there, a database that does not exist) rather than a pool's timeout.

The schema version is checked once per reader (:mod:`._schema`). Every fact read is
checked against its checksum, as on SQLite.

A server that restarted (or an administrator) ends every kept connection, and says so on
each before it closes it. A kept connection with something to read (that notice, or the end of
the stream) is dropped before it is lent (one ``select`` of its socket). So a read after a
restart connects anew rather than fail. A connection lost in the middle of a read
fails that read (``UnavailableError``, as when the server is not there) and drops the
other kept ones with it; the journal's writer, when it reconnects, drops them as well.
"""

from __future__ import annotations

import contextlib
import select
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Final

import psycopg

from orchestrator.base import FactLogError

from .._reader import JournalReader
from .._sql import _Connection
from ._connection import (
    PgConnection,
    checked_url,
    connect,
    connect_error,
    redacted,
    transient,
)
from ._schema import PG_SCHEMA_VERSION, schema_version

__all__ = ["PostgresReader"]

#: Idle connections a reader keeps for its next reads (more are opened when reads overlap).
IDLE_CONNECTIONS: Final = 4


class PostgresReader(JournalReader):
    """Reads a PostgreSQL journal; safe beside its writer (and beside other nodes').

    Synchronous: call it from a worker thread in trio code (``trio.to_thread.run_sync``).
    """

    _NEWEST_FIRST = "created_at DESC, id DESC"

    def __init__(self, url: str) -> None:
        self.url = checked_url(url)
        self.source = redacted(url)
        self._idle: list[psycopg.Connection[Any]] = []  # changed in place (see below)
        self._version_checked = False
        self._lock = threading.Lock()
        # A reader nobody closed closes its idle connections as it goes (psycopg warns of a
        # connection collected open).
        weakref.finalize(self, _close_all, self._idle, self._lock)

    def checked(self) -> None:
        """The schema has just been checked (by the writer that opened the journal)."""
        self._version_checked = True

    def close(self) -> None:
        """Close the idle connections (a later read opens new ones)."""
        _close_all(self._idle, self._lock)

    def _take(self) -> psycopg.Connection[Any]:
        while True:
            with self._lock:
                if not self._idle:
                    break
                kept = self._idle.pop()
            if not _lost(kept):
                return kept
            kept.close()
        connection = connect(
            self.url,
            application="orchestrator journal reader",
            options="-c default_transaction_isolation=repeatable\\ read",
        )
        if not self._version_checked:
            try:
                version = schema_version(PgConnection(connection), self.source)
            except BaseException:
                connection.close()
                raise
            if version != PG_SCHEMA_VERSION:
                connection.close()
                if version == 0:
                    raise FactLogError(
                        "no journal here (run a team with --db to create one)",
                        source=self.source,
                    )
                raise FactLogError(
                    f"this journal has schema {version}; open it for writing once (for "
                    f"example with orchestrator run --db) to migrate it to "
                    f"{PG_SCHEMA_VERSION}",
                    source=self.source,
                )
            self._version_checked = True
        return connection

    def _give_back(self, connection: psycopg.Connection[Any]) -> None:
        idle = (
            not connection.closed
            and connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
        if idle:
            with self._lock:
                if len(self._idle) < IDLE_CONNECTIONS:
                    self._idle.append(connection)
                    return
        connection.close()

    @contextlib.contextmanager
    def _connection(self) -> Iterator[_Connection]:
        connection = self._take()
        try:
            yield PgConnection(connection)
        except psycopg.OperationalError as exc:
            connection.close()
            if transient(exc, connection):
                self.close()  # the kept ones were lost with it: the next read reconnects
            raise connect_error(self.source, exc) from exc
        except psycopg.Error as exc:
            raise FactLogError(f"cannot read the journal: {exc}", source=self.source) from exc
        finally:
            self._give_back(connection)


def _lost(connection: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection was ended by the server (it has something to say, which
    can only be why it ended it, or the stream's end); without waiting."""
    try:
        readable, _, _ = select.select([connection.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)


def _close_all(connections: list[psycopg.Connection[Any]], lock: threading.Lock) -> None:
    with lock:
        idle = connections[:]
        connections.clear()
    for connection in idle:
        connection.close()
