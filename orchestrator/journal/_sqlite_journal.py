"""The journal on a SQLite file: the group-commit writer (:mod:`._group_commit`, whose
docstring is the theory of operation) on a ``sqlite3`` connection.

This module says how a file is opened (:mod:`._file`), begun (``BEGIN IMMEDIATE``), which
faults are waited for (a lock another connection holds: :func:`._file.locked`) and which
are the file's (:data:`_ENVIRONMENT_CODES`), and when the WAL is checkpointed: by SQLite
as it commits, except after a large group (:data:`LARGE_GROUP_BYTES`, a fork), whose
tickets are completed first.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import structlog

from ._durability import Durability
from ._file import BUSY_TIMEOUT, _connect, _error, locked
from ._group_commit import DRAIN_LIMIT, SNAPSHOT_EVERY, _GroupCommitJournal
from ._reader import JournalReader
from ._rows import _Batch, _Item
from ._session_locks import SessionLocks

__all__ = ["SqliteJournal"]


#: Seconds a SQLite journal's writer waits for a lock another connection holds on its file
#: (after its ``busy_timeout``) before the journal fails. Longer than a PostgreSQL server's
#: bound (:data:`~.postgres._connection.RECONNECT_FOR`, a lease's TTL): no lease hangs on it (one
#: daemon writes a file), and the holder is a tool on this machine (the ``sqlite3`` shell,
#: a backup, a ``VACUUM``) that lets go when it is done, while failing the journal would
#: end every session until a restart. Yet bounded: a lock never let go (a stuck process)
#: fails the journal, and ``/healthz`` with it, within a minute.
LOCKED_FOR: Final = 60.0
#: A group whose facts' text is this large (or that writes a fork) commits without SQLite's
#: automatic checkpoint, which it would set off: the checkpoint (copying the WAL's pages
#: into the file, then an fsync) runs once the group's tickets are completed. A fork of
#: 100,000 facts was acknowledged 0.15-0.2 s sooner so. Smaller groups leave it to SQLite
#: (every :data:`AUTOCHECKPOINT` pages, its default).
LARGE_GROUP_BYTES: Final = 4 * 1024 * 1024
AUTOCHECKPOINT: Final = 1000

log = structlog.get_logger("orchestrator.journal")


class SqliteJournal(_GroupCommitJournal):
    """The durable fact log on a SQLite file; start it with ``await nursery.start(j.serve)``."""

    _waiting_event = "journal locked by another connection: waiting"
    _back_event = "journal unlocked"
    _waited_too_long = "the database stayed locked by another connection for {seconds:.0f} s"

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = Durability.POWER,
        snapshot_every: int = SNAPSHOT_EVERY,
        max_bytes: int | None = None,
        drain_limit: float = DRAIN_LIMIT,
        busy_timeout: float = BUSY_TIMEOUT,
        reconnect_for: float = LOCKED_FOR,
        node: str | None = None,
    ) -> None:
        """Make the journal of the SQLite file at ``path`` (not opened yet).

        Args:
            path: The SQLite file.
            durability: What an acknowledged fact survives (:class:`Durability`).
            snapshot_every: A session is snapshot after this many committed facts (and at
                least one fact per entry of its state).
            max_bytes: The largest the file may grow (None: no bound).
            drain_limit: Seconds a stopping journal drains what was submitted, at most.
            busy_timeout: Seconds a write waits for a lock another connection holds before
                the writer notices it (SQLite's busy handler).
            reconnect_for: Seconds it then waits on, trying again, before the journal fails
                (see the module docstring).
            node: What this process is called beside its session locks (default
                ``HOSTNAME:PID``).
        """
        if not (busy_timeout >= 0 and reconnect_for >= 0):
            raise _error(path, "busy_timeout and reconnect_for must be 0 seconds or more")
        super().__init__(
            snapshot_every=snapshot_every, drain_limit=drain_limit, reconnect_for=reconnect_for
        )
        self.path = Path(path)
        self.source = str(self.path)
        self.durability = durability
        self.max_bytes = max_bytes
        self.busy_timeout = busy_timeout
        self.reader = JournalReader(self.path)
        self.ownership = SessionLocks(self.path, node=node)

    _database_errors = (sqlite3.Error,)

    def _connect(self) -> sqlite3.Connection:
        connection = _connect(
            self.path,
            durability=self.durability,
            max_bytes=self.max_bytes,
            busy_timeout=self.busy_timeout,
        )
        self.reader.checked()  # by _connect, a moment ago: its reads need not again
        return connection

    _checkpoint_due = False

    def _commit(self, connection: sqlite3.Connection, group: Sequence[_Item]) -> None:
        if not _large(group):
            connection.execute("COMMIT")
            return
        connection.execute("PRAGMA wal_autocheckpoint=0")
        try:
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT}")
            raise
        self._checkpoint_due = True

    def _acknowledged(self, connection: sqlite3.Connection) -> None:
        """The checkpoint a large group's commit put off (PASSIVE: readers are not waited
        for; what it cannot copy yet, a later checkpoint does). It only copies committed
        pages into the file: one that fails loses nothing, and is logged."""
        if not self._checkpoint_due:
            return
        self._checkpoint_due = False
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            log.warning("journal checkpoint failed", path=self.source, error=str(exc))
        finally:
            with contextlib.suppress(sqlite3.Error):
                connection.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT}")

    def _begin(self, connection: sqlite3.Connection) -> None:
        # The write lock at once: a transaction that must wait for it fails now, before it
        # wrote anything, rather than at its first write.
        connection.execute("BEGIN IMMEDIATE")

    def _transient(self, exc: BaseException, connection: Any) -> bool:
        # Another connection holds the file's lock (the sqlite3 shell, a backup, a VACUUM):
        # the file is sound, and the group waits for the lock rather than failing the journal.
        return locked(exc)

    def _retries(self, exc: Exception) -> bool:
        return locked(exc)

    def _reconnect(self) -> Any:
        """The same connection, once it can take the write lock (a try of
        :func:`~._reconnect.reconnect`: a locked file is not lost, and opening it again
        would not get the lock sooner). SQLITE_BUSY while another connection holds it."""
        connection = self._connection
        if connection.in_transaction:
            # The lost transaction is still open (its COMMIT said SQLITE_BUSY, and the
            # ROLLBACK after it failed as well): what it wrote must not be read back as
            # committed (_stored_batches), so it is rolled back first, or this try fails.
            connection.execute("ROLLBACK")
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
        return connection

    def _environmental(self, exc: BaseException) -> bool:
        return _environmental(exc)

    def _describe(self) -> dict[str, str]:
        return {"path": self.source, "durability": str(self.durability)}


def _large(group: Sequence[_Item]) -> bool:
    """Whether ``group`` writes a fork, or facts of :data:`LARGE_GROUP_BYTES` or more."""
    size = 0
    for item in group:
        if isinstance(item, _Batch):
            if item.history is not None:
                return True
            size += sum(len(row[5]) for row in item.rows)
            if size >= LARGE_GROUP_BYTES:
                return True
    return False


#: SQLite's primary result codes that say the file or its environment cannot be written
#: (as opposed to one statement's data: a constraint, a value too big). A lock another
#: connection holds (SQLITE_BUSY, SQLITE_LOCKED) is waited for first
#: (:func:`._file.locked`), and fails the journal only past the writer's ``reconnect_for``.
_ENVIRONMENT_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_NOLFS,
        sqlite3.SQLITE_AUTH,
    }
)


def _environmental(exc: BaseException) -> bool:
    """Whether ``exc`` is the file's or the machine's fault (the journal cannot go on),
    rather than that of what one item holds (that item fails, the rest is written)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in _ENVIRONMENT_CODES
    return False
