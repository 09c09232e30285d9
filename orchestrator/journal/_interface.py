"""One journal interface, two databases: :class:`Journal`, and :func:`open_journal` /
:func:`open_reader`, which pick the database from what ``--db`` names.

``--db postgresql://USER@HOST:PORT/DB`` (or ``postgres://``) is a PostgreSQL journal
(:mod:`.postgres`); anything else is the path of a SQLite file (:mod:`._sqlite_journal`), the
embedded default. Both journals are the same writer (:class:`~._group_commit._GroupCommitJournal`)
and their readers the same queries (:class:`~._reader.JournalReader`); :class:`Journal`
is what the daemon and the command line use of a journal, which mypy checks both satisfy.

Imports: the PostgreSQL modules (and psycopg) are imported only when a URL is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._durability import Durability
from .postgres import is_postgres_url

if TYPE_CHECKING:
    import datetime as dt

    import trio

    from orchestrator.ahp.state import Turn
    from orchestrator.base import FactLogError
    from orchestrator.core import Fact, ForkRows, TeamState
    from orchestrator.runtime import Ticket

    from ._group_commit import JournalStatistics
    from ._ownership import SessionOwnership
    from ._prune import PruneReport
    from ._reader import JournalReader

__all__ = ["Db", "Journal", "db_location", "open_journal", "open_reader", "prune"]

#: What ``--db`` (or ``db =``) may be: a SQLite file's path, or a PostgreSQL URL.
Db = str | os.PathLike[str]


class Journal(Protocol):
    """The durable fact log a daemon or a run writes, whatever the database."""

    #: Names the journal in errors and logs (a path, or a URL without its password).
    source: str
    drain_limit: float
    #: Which sessions this process runs, one process a session (:mod:`._ownership`): a
    #: SQLite file's record locks, a PostgreSQL node's leases, or, for a journal nobody
    #: else writes, every session it asks for.
    ownership: SessionOwnership

    @property
    def reader(self) -> JournalReader:
        """Reads the journal beside its writer (checked as the writer opened it)."""
        ...

    def open(self) -> None: ...

    def close(self) -> None: ...

    async def serve(self, *, task_status: trio.TaskStatus[Any] = ...) -> None: ...

    def stop_writing(self) -> None: ...

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket: ...

    def submit_fork(self, fork: ForkRows, *, team: tuple[str, str] | None) -> Ticket: ...

    def describe(self, session: str, *, team_file: str, team_toml: str) -> None: ...

    def committed(self, state: TeamState) -> None: ...

    def forget_session(self, session: str) -> None:
        """``session`` left this process's memory: let go of what is kept for it."""
        ...

    def kept_sessions(self) -> int:
        """The sessions something is kept for between batches."""
        ...

    @property
    def failed(self) -> FactLogError | None: ...

    @property
    def reconnecting(self) -> dt.datetime | None:
        """Since when the writer has been reconnecting to a database it lost, or waiting
        for a SQLite file another connection locked (None: it is not)."""
        ...

    async def wait_failed(self) -> FactLogError: ...

    def session_failed(self, session: str) -> FactLogError | None: ...

    def statistics(self) -> JournalStatistics: ...


def db_location(text: str | os.PathLike[str]) -> Path | str:
    """What ``--db`` or ``db =`` names: a PostgreSQL URL (kept as text: a ``Path`` would
    fold its ``//``), or a SQLite file's path."""
    return str(text) if is_postgres_url(str(text)) else Path(text)


def open_journal(
    db: Db,
    *,
    durability: Durability = Durability.POWER,
    node: str | None = None,
    lease_ttl: float | None = None,
    reconnect_for: float | None = None,
    **options: Any,
) -> Journal:
    """The journal ``db`` names (not opened yet: :meth:`Journal.open` or ``serve``).

    The sessions' owner is the journal's :attr:`Journal.ownership`. On PostgreSQL, the
    sessions this journal writes are leased to ``node`` (several daemons on one database, see
    :mod:`.postgres._leases`). A SQLite file has no leases. Each of its sessions is locked to
    the process that runs it (:mod:`._session_locks`), which ``node`` names.

    Args:
        db: A PostgreSQL URL or a SQLite file's path.
        durability: What an acknowledged fact survives (:class:`Durability`).
        node: A daemon's node id: on PostgreSQL, the sessions' leases are this node's; on
            SQLite, it names the process that holds each session's lock.
        lease_ttl: On PostgreSQL, with a ``node``: how long a lease lasts unless renewed.
        reconnect_for: Seconds a PostgreSQL journal tries to reconnect to a server it lost
            before it fails (default :data:`~.postgres._connection.RECONNECT_FOR`). On SQLite,
            seconds the journal waits for its file's lock another connection holds (default
            :data:`~._sqlite_journal.LOCKED_FOR`).
        **options: Passed on to the journal of that database.
    """
    if is_postgres_url(db):
        from .postgres import PostgresJournal

        if node is not None:
            options["node"] = node
            if lease_ttl is not None:
                options["lease_ttl"] = lease_ttl
        if reconnect_for is not None:
            options["reconnect_for"] = reconnect_for
        return PostgresJournal(str(db), durability=durability, **options)
    from ._sqlite_journal import SqliteJournal

    if reconnect_for is not None:
        options["reconnect_for"] = reconnect_for
    return SqliteJournal(Path(db), durability=durability, node=node, **options)


def open_reader(db: Db) -> JournalReader:
    """A reader of the journal ``db`` names (it connects when it first reads)."""
    if is_postgres_url(db):
        from .postgres import PostgresReader

        return PostgresReader(str(db))
    from ._reader import JournalReader

    return JournalReader(Path(db))


def prune(db: Db, *, older_than: dt.timedelta, now: dt.datetime, dry_run: bool) -> PruneReport:
    """Remove the ended sessions of the journal ``db`` names (a SQLite file, or a
    PostgreSQL database) last written before ``now - older_than`` (:mod:`._prune`,
    :mod:`.postgres._prune`); blocking."""
    if is_postgres_url(db):
        from .postgres import prune_postgres

        return prune_postgres(str(db), older_than=older_than, now=now, dry_run=dry_run)
    from ._prune import prune_sqlite

    return prune_sqlite(Path(db), older_than=older_than, now=now, dry_run=dry_run)


if TYPE_CHECKING:
    # Both journals are Journals: mypy checks these assignments.
    from ._sqlite_journal import SqliteJournal
    from .postgres import PostgresJournal

    _sqlite: type[Journal] = SqliteJournal
    _postgres: type[Journal] = PostgresJournal
