"""The journal on PostgreSQL: the SQLite journal's writer, rules and rows, on a server.

Theory of operation
-------------------
:class:`PostgresJournal` is the SQLite journal's machinery (:class:`~._journal.
_GroupCommitJournal`: one writer thread with the only write connection, group commit,
the write-ahead rule, the sorting of faults, the drain on stop, snapshots in parts) on a
psycopg 3 connection instead of a ``sqlite3`` one. The blocking driver runs in that writer
thread, as ``sqlite3`` does: trio's thread only encodes and queues batches, and the writer
completes their tickets through the trio token after ``COMMIT`` returned. The rows are the
same statements (:mod:`._rows`, adapted by :class:`~._pg_connection.PgConnection`), in
the tables of :mod:`._pg_schema`, but for a group's facts, which are copied in with one
``COPY`` when there are more than a few (seven times the rows a second of multi-row
``INSERT``s: batched appends went from 16k to 60k facts a second on this machine, about
what SQLite does).

Durability: a batch is acknowledged once the server answered its transaction's
``COMMIT``. With ``--durability power`` (the default) the writer's session keeps the
server's ``synchronous_commit`` (``on`` unless the server says otherwise: the commit is
flushed to the server's WAL, and to its synchronous standbys if it has any); with
``process`` it sets ``synchronous_commit = off`` for its own transactions: an
acknowledged batch survives this process being killed, and a server crash may lose the
last few hundred milliseconds of commits (never corrupt them).

Faults, as :mod:`._journal` sorts them: the server's or the connection's
(:func:`~._pg_connection.environmental`: the connection lost, the server shutting down,
the disk full, the database read-only, no privilege) fail the journal, and a restart
recovers; one item's (a duplicate ``(session, sequence)``, text the server refuses) fail
that batch and its session, the rest of the group commits.

Not yet: several daemons on one database (leases, LISTEN/NOTIFY, commands for the owner;
issue 21), reconnecting after the server restarts (the journal fails instead: the daemon
reports it on ``/healthz`` and a restart takes the sessions up), ``orchestrator prune`` and
``--max-bytes``, which stay the SQLite journal's.
"""

from __future__ import annotations

import psycopg

from ._durability import Durability
from ._journal import DRAIN_LIMIT, SNAPSHOT_EVERY, _GroupCommitJournal
from ._pg_connection import PgConnection, connect, environmental, redacted
from ._pg_reader import PostgresReader
from ._pg_schema import migrate

__all__ = ["PostgresJournal"]


class PostgresJournal(_GroupCommitJournal):
    """The durable fact log on a PostgreSQL database (``postgresql://USER@HOST:PORT/DB``);
    start it with ``await nursery.start(j.serve)``."""

    reader: PostgresReader
    _database_errors = (psycopg.Error,)

    def __init__(
        self,
        url: str,
        *,
        durability: Durability = Durability.POWER,
        snapshot_every: int = SNAPSHOT_EVERY,
        drain_limit: float = DRAIN_LIMIT,
    ) -> None:
        super().__init__(snapshot_every=snapshot_every, drain_limit=drain_limit)
        self.url = url
        self.source = redacted(url)
        self.durability = durability
        self.reader = PostgresReader(url)

    def _connect(self) -> PgConnection:
        connection = PgConnection(connect(self.url, application="orchestrator journal writer"))
        try:
            old = migrate(connection, self.source)
            if self.durability is Durability.PROCESS:
                connection.execute("SET synchronous_commit = off")
        except psycopg.Error as exc:
            connection.close()
            from orchestrator.base import FactLogError

            raise FactLogError(
                f"cannot prepare the journal for writing: {exc}", source=self.source
            ) from exc
        except BaseException:
            connection.close()
            raise
        if old > 0:
            import structlog

            structlog.get_logger("orchestrator.journal").info(
                "journal migrated", path=self.source, old=old
            )
        self.reader.checked()
        return connection

    def _environmental(self, exc: BaseException) -> bool:
        return environmental(exc)

    def _describe(self) -> dict[str, str]:
        return {"path": self.source, "durability": str(self.durability)}

    def _close(self, connection: PgConnection) -> None:
        connection.close()
        self.reader.close()  # its pool; opened again if it is read after
