"""The journal on PostgreSQL: the SQLite journal's writer, rules and rows, on a server.

Theory of operation
-------------------
:class:`PostgresJournal` is the SQLite journal's machinery on a psycopg 3 connection instead
of a ``sqlite3`` one. That machinery is :class:`~.._group_commit._GroupCommitJournal`: one
writer thread with the only write connection, group commit, the write-ahead rule, the sorting
of faults, the drain on stop, snapshots in parts. The blocking driver runs in that writer
thread, as ``sqlite3`` does. trio's thread only encodes and queues batches. The writer
completes their tickets through the trio token after ``COMMIT`` returned. The rows are the same
statements (:mod:`.._rows`, adapted by :class:`~._connection.PgConnection`), in the tables of
:mod:`._schema`. The exception is a group's facts, which are copied in with one ``COPY`` when
there are more than a few. That is seven times the rows a second of multi-row ``INSERT``s.
Batched appends went from 16k to 60k facts a second on this machine, about what SQLite does.

Durability: a batch is acknowledged once the server answered its transaction's
``COMMIT``. With ``--durability power`` (the default) the writer's session keeps the
server's ``synchronous_commit``. That is ``on`` unless the server says otherwise: the commit is
flushed to the server's WAL, and to its synchronous standbys if it has any. With ``process``
it sets ``synchronous_commit = off`` for its own transactions. Then an acknowledged batch
survives this process being killed. A server crash may lose the last few hundred milliseconds
of commits (never corrupt them).

Faults, as :mod:`.._group_commit` sorts them:

- the connection's (:func:`~._connection.transient`: the server restarted, failed over or
  ended the connection) make the writer connect again, for ``reconnect_for`` seconds (default
  :data:`~._connection.RECONNECT_FOR`, a lease's TTL). It reads back what its lost
  transaction committed and writes the rest, while appends wait;
- the server's (:func:`~._connection.environmental`: the disk full, the database read-only,
  no privilege, or the server unreachable past that bound) fail the journal, and a restart
  recovers;
- one item's (a duplicate ``(session, sequence)``, text the server refuses) fail that batch
  and its session; the rest of the group commits.

The reader's kept connections are dropped when the writer reconnects (they
were lost with it), and the leases' connection reconnects at its next statement.

Several daemons on one database: a node's journal has its node's
:class:`~._leases.PostgresLeases` as its :attr:`ownership`. Every write transaction fences the
sessions it writes by them (:meth:`_write_rows`). A batch of a session whose lease another
node took fails ("lease lost"). Its session is refused from then on, as any batch that cannot
be stored. A snapshot or team file of such a session is dropped (they would overwrite the new
owner's). Without a node the journal is this process's
alone (a :class:`~.._ownership.SoleOwnership`): no leases, no fence.

Other nodes follow a node's sessions: in each group's transaction a node's writer notifies
:data:`~._notify.FACTS_CHANNEL` once per session it wrote facts of, with the session's
last sequence (:func:`_notify_followers`; delivered on commit, see :mod:`._notify`).

Not yet: ``--max-bytes``, which stays the SQLite journal's.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .._durability import Durability
from .._group_commit import DRAIN_LIMIT, SNAPSHOT_EVERY, _GroupCommitJournal
from .._ownership import SessionOwnership, SoleOwnership
from .._rows import _Batch, _Forget, _Item, _write_group
from ._connection import (
    RECONNECT_FOR,
    PgConnection,
    connect,
    environmental,
    redacted,
    transient,
)
from ._leases import LEASE_TTL, LeaseLostError, PostgresLeases
from ._notify import FACTS_CHANNEL, facts_payload
from ._reader import PostgresReader
from ._schema import migrate

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
        node: str | None = None,
        lease_ttl: float = LEASE_TTL,
        reconnect_for: float = RECONNECT_FOR,
    ) -> None:
        """Make the journal of the PostgreSQL database at ``url`` (not opened yet).

        Args:
            url: The database's ``postgresql://`` URL.
            durability: What an acknowledged fact survives (:class:`Durability`).
            snapshot_every: A session is snapshot after this many committed facts (and at
                least one fact per entry of its state).
            drain_limit: Seconds a stopping journal drains what was submitted, at most.
            node: This daemon's node id. Its sessions are then leased to it (see
                :mod:`._leases`). Without one, the journal is this process's alone.
            lease_ttl: Seconds a lease lasts unless renewed.
            reconnect_for: Seconds the writer tries to reconnect to a server it lost before the
                journal fails.
        """
        if not reconnect_for >= 0:
            from orchestrator.base import FactLogError

            raise FactLogError("reconnect_for must be 0 seconds or more", source=redacted(url))
        super().__init__(
            snapshot_every=snapshot_every, drain_limit=drain_limit, reconnect_for=reconnect_for
        )
        self.url = url
        self.source = redacted(url)
        self.durability = durability
        self.reader = PostgresReader(url)
        # This node's leases (several daemons on one database: every write is fenced by
        # them); without a node, the journal is this process's alone.
        self._leases = None if node is None else PostgresLeases(url, node=node, ttl=lease_ttl)
        self.ownership: SessionOwnership = SoleOwnership() if self._leases is None else self._leases

    def _connect(self) -> PgConnection:
        connection = PgConnection(connect(self.url, application="orchestrator journal writer"))
        try:
            old = migrate(connection, self.source)
            if self.durability is Durability.PROCESS:
                connection.execute("SET synchronous_commit = off")
            if self._leases is not None:
                # A write transaction holds its sessions' lease rows (the fence): a writer
                # that stalls inside one (a stopped process, a partition) must not keep
                # other nodes from taking them over. The server ends a connection idle in
                # a transaction past the TTL (its sessions are taken up elsewhere); the
                # writer then reconnects, and its retried batches meet the fence.
                ttl_ms = max(1, round(self._leases.ttl * 1000))
                connection.execute(f"SET idle_in_transaction_session_timeout = {ttl_ms}")
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
        if self._lost_at is not None:
            self.reader.close()  # its kept connections were lost with the writer's
        return connection

    def _transient(self, exc: BaseException, connection: PgConnection | None) -> bool:
        return transient(exc, None if connection is None else connection.raw)

    def _environmental(self, exc: BaseException) -> bool:
        return environmental(exc)

    def _write_rows(self, connection: PgConnection, group: Sequence[_Item]) -> None:
        """The group's rows, once the fence let them.

        A batch may be submitted under a lease this node does not hold any more (its epoch
        moved on). It fails the group; its items are then written one by one, and that batch
        fails alone. A snapshot or team file of a session this node does not hold is dropped
        (it would overwrite the new owner's)."""
        leases = self._leases
        # Word that a session left memory writes no row: no fence for it (its lease is
        # given up before), and it is done after what the group writes of the session.
        forgets = [item for item in group if isinstance(item, _Forget)]
        group = [item for item in group if not isinstance(item, _Forget)]
        if leases is not None and group:
            current = {item.session: leases.epoch(item.session) for item in group}
            wanted = {
                (item.session, item.epoch if isinstance(item, _Batch) else current[item.session])
                for item in group
            }
            lost = leases.fence(connection, wanted)
            if lost:
                for item in group:
                    if isinstance(item, _Batch) and (item.session, item.epoch) in lost:
                        raise leases.lost_error(item.session)
                group = [
                    item for item in group if (item.session, current[item.session]) not in lost
                ]
        _write_group(connection, [*group, *forgets], self._history)
        if leases is not None:
            _notify_followers(connection, group)

    def _refuses_session(self, exc: Exception) -> bool:
        # A batch kept out by the fence was submitted under a lease lost since: the batches
        # after it meet the fence each, and this node may take the session up again later
        # (under a new epoch) and write it then.
        return not isinstance(exc, LeaseLostError)

    def _describe(self) -> dict[str, str]:
        return {"path": self.source, "durability": str(self.durability)}

    def _close(self, connection: PgConnection | None) -> None:
        if connection is not None:
            connection.close()
        self.reader.close()
        self.ownership.close()  # its connection; opened again if it is used after


def _notify_followers(connection: PgConnection, group: Sequence[_Item]) -> None:
    """Tell the nodes following these sessions that facts were committed (one statement
    per group, one notification per session: its last sequence in the group)."""
    last: dict[str, int] = {}
    for item in group:
        if isinstance(item, _Batch) and (item.facts or item.rows):
            last[item.session] = max(last.get(item.session, 0), item.last_sequence)
    if last:
        connection.execute(
            "SELECT pg_notify(?, payload) FROM unnest(?::text[]) AS payload",
            (FACTS_CHANNEL, [facts_payload(session, n) for session, n in last.items()]),
        )
