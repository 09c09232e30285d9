"""Several daemons on one PostgreSQL journal: each running session leased to one node.

Theory of operation
-------------------
A *node* is one daemon process, named by its node id (``node =`` in daemon.toml,
``--node``). A node runs a session only while it holds the session's lease: a row of
``session_leases`` naming the owner, an *epoch* and when the lease expires. The owner
renews its leases every ``ttl / 3`` seconds (:meth:`PostgresLeases.renew`); a node that
stops renewing (killed, cut off from the database) lets them expire, and another node
takes the session up (:meth:`PostgresLeases.acquire` succeeds on an expired lease, or on
one of its own node id, and adds one to the epoch).

Safety does not rest on clocks: every write transaction of the journal *fences* the
sessions it writes (:meth:`PostgresLeases.fence`, in the writer thread, in the same
transaction): it locks each session's lease row (``FOR SHARE``) where it still names this
node with the epoch this node acquired. A lease taken over meanwhile (its epoch moved on)
fails the batch, and the journal refuses the session from then on (its runtime ends,
recording nothing: "lease lost"). A take-over's ``UPDATE`` waits for a writer holding the
row, so the new owner reads the journal after the old owner's last commit, never before:
no fact is written by two owners, none is lost between them.

Clocks matter only for *when* a lease expires: ``expires_at`` is the database's
``clock_timestamp()`` plus the TTL (so nodes need not agree on the time), unless a caller
passes ``now`` (tests give trio's clock).

Wakes of background teammates are claimed the same way, once across nodes
(:meth:`PostgresLeases.claim_wake`): the first node to insert ``(teammate, wake time)``
runs the wake, the others skip it.

All methods block (psycopg): call them from a worker thread, as the journal does. The
component keeps one connection of its own for leases and claims (the writer's is only for
the fence).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterable, Set
from typing import Any, Final

import attrs
import psycopg
import structlog

from orchestrator.base import FactLogError

from ._pg_connection import connect, connect_error, redacted

__all__ = ["Lease", "LeaseStatistics", "PostgresLeases"]

log = structlog.get_logger("orchestrator.journal")

#: Seconds a session's lease lasts unless renewed (renewed every third of it).
LEASE_TTL: Final = 15.0
#: Most expired leases one scan returns (the next scan takes the rest).
SCAN_LIMIT: Final = 100


@attrs.frozen(kw_only=True)
class Lease:
    """Who owns ``session``: ``owner``, at ``epoch``, until ``expires_at``."""

    session: str
    owner: str
    epoch: int
    expires_at: dt.datetime


@attrs.frozen(kw_only=True)
class LeaseStatistics:
    """What a node's leases do: how many it holds, and how many it lost since it started."""

    node: str
    held: int
    lost: int


class PostgresLeases:
    """The session leases of node ``node`` on the journal at ``url`` (see the module
    docstring); blocking: call it from a worker thread."""

    def __init__(self, url: str, *, node: str, ttl: float = LEASE_TTL) -> None:
        if not node or len(node) > 200:
            raise FactLogError("a node id must be 1 to 200 characters", source=redacted(url))
        if not ttl > 0:
            raise FactLogError("a lease TTL must be above 0 seconds", source=redacted(url))
        self.url = url
        self.source = redacted(url)
        self.node = node
        self.ttl = float(ttl)
        # The sessions this node holds, with the epoch it acquired each at: written on the
        # trio side's threads (acquire, renew, release), read by the writer thread (fence).
        self._held: dict[str, int] = {}
        # Sessions lost and not acquired again, and how many were lost in all. A lock of
        # their own: the writer thread takes it while its transaction holds lease rows, which
        # a renewal (holding _lock) may be waiting for.
        self._lost: set[str] = set()
        self._lost_count = 0
        self._lost_lock = threading.Lock()
        self._lock = threading.Lock()
        self._connection: psycopg.Connection[Any] | None = None

    # ── what the node holds ────────────────────────────────────────────────

    @property
    def held(self) -> dict[str, int]:
        """The sessions this node holds a lease on, with their epochs (a copy)."""
        return dict(self._held)

    def holds(self, session: str) -> bool:
        return session in self._held

    def statistics(self) -> LeaseStatistics:
        return LeaseStatistics(node=self.node, held=len(self._held), lost=self._lost_count)

    # ── the database ───────────────────────────────────────────────────────

    def _run(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """``sql`` on this component's connection (opened again if it was lost)."""
        with self._lock:
            if self._connection is None or self._connection.closed:
                self._connection = connect(self.url, application="orchestrator leases")
            try:
                cursor = self._connection.execute(sql, parameters)
                return cursor.fetchall() if cursor.description is not None else []
            except psycopg.OperationalError as exc:
                self._connection.close()
                raise connect_error(self.source, exc) from exc
            except psycopg.Error as exc:
                raise FactLogError(
                    f"cannot manage session leases: {exc}", source=self.source
                ) from exc

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def acquire(self, session: str, *, now: dt.datetime | None = None) -> Lease:
        """Take ``session``'s lease if nobody holds it, it expired, or it is this node id's
        own (its epoch then moves on, so whatever wrote under the old one is fenced off);
        returns the lease as it now is: ``lease.owner != self.node`` when another node
        holds it."""
        epoch = self._held.get(session)
        if epoch is not None:
            rows = self._run(
                "SELECT owner, epoch, expires_at FROM session_leases WHERE session = %s",
                (session,),
            )
            if rows and rows[0][0] == self.node and rows[0][1] == epoch:
                return Lease(session=session, owner=self.node, epoch=epoch, expires_at=rows[0][2])
        for _ in range(3):  # a row deleted between the two statements: try again
            rows = self._run(
                "INSERT INTO session_leases AS l (session, owner, epoch, expires_at) "
                "VALUES (%s, %s, 1, coalesce(%s::timestamptz, clock_timestamp()) "
                "+ make_interval(secs => %s)) "
                "ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, "
                "epoch = l.epoch + 1, expires_at = excluded.expires_at "
                "WHERE l.expires_at <= coalesce(%s::timestamptz, clock_timestamp()) "
                "OR l.owner = excluded.owner "
                "RETURNING epoch, expires_at",
                (session, self.node, now, self.ttl, now),
            )
            if rows:
                epoch, expires_at = int(rows[0][0]), rows[0][1]
                self._held[session] = epoch
                with self._lost_lock:
                    self._lost.discard(session)
                return Lease(session=session, owner=self.node, epoch=epoch, expires_at=expires_at)
            rows = self._run(
                "SELECT owner, epoch, expires_at FROM session_leases WHERE session = %s",
                (session,),
            )
            if rows:
                owner, epoch, expires_at = rows[0]
                self._held.pop(session, None)
                return Lease(session=session, owner=owner, epoch=int(epoch), expires_at=expires_at)
        raise FactLogError(
            f"cannot acquire the lease of {session}: it changes hands too fast", source=self.source
        )

    def renew(self, *, now: dt.datetime | None = None) -> list[str]:
        """Extend every lease this node holds by the TTL; the sessions whose lease another
        node took meanwhile (no longer held: their runtimes must stop)."""
        held = dict(self._held)
        if not held:
            return []
        rows = self._run(
            "UPDATE session_leases "
            "SET expires_at = coalesce(%s::timestamptz, clock_timestamp()) "
            "+ make_interval(secs => %s) "
            "WHERE owner = %s "
            "AND (session, epoch) IN (SELECT * FROM unnest(%s::text[], %s::bigint[])) "
            "RETURNING session",
            (now, self.ttl, self.node, list(held), list(held.values())),
        )
        renewed = {row[0] for row in rows}
        lost = sorted(set(held) - renewed)
        for session in lost:
            if self._held.get(session) == held[session]:
                del self._held[session]
            self._lose(session, held[session], "not renewed: another node holds it now")
        return lost

    def release(self, session: str, *, keep: bool = False) -> None:
        """Give ``session``'s lease up: gone (the session ended, or is idle: the next node
        a client asks takes it), or with ``keep`` expired at once (it still has work: the
        next scan of any node takes it up). Nothing if another node holds it."""
        epoch = self._held.pop(session, None)
        if epoch is None:
            return
        if keep:
            self._run(
                "UPDATE session_leases SET expires_at = '-infinity' "
                "WHERE session = %s AND owner = %s AND epoch = %s",
                (session, self.node, epoch),
            )
        else:
            self._run(
                "DELETE FROM session_leases WHERE session = %s AND owner = %s AND epoch = %s",
                (session, self.node, epoch),
            )

    def expired(self, *, now: dt.datetime | None = None) -> list[str]:
        """The running sessions whose lease expired (their owner died or let them go),
        oldest expiry first; expired leases of sessions that are not running any more are
        deleted on the way."""
        self._run(
            "DELETE FROM session_leases l "
            "WHERE l.expires_at <= coalesce(%s::timestamptz, clock_timestamp()) "
            "AND NOT EXISTS (SELECT 1 FROM sessions s "
            "WHERE s.session = l.session AND s.status = 'running')",
            (now,),
        )
        rows = self._run(
            "SELECT l.session FROM session_leases l "
            "WHERE l.expires_at <= coalesce(%s::timestamptz, clock_timestamp()) "
            "ORDER BY l.expires_at, l.session LIMIT %s",
            (now, SCAN_LIMIT),
        )
        return [row[0] for row in rows if row[0] not in self._held]

    def lease(self, session: str) -> Lease | None:
        """``session``'s lease as the database has it (None: nobody's)."""
        rows = self._run(
            "SELECT owner, epoch, expires_at FROM session_leases WHERE session = %s", (session,)
        )
        if not rows:
            return None
        owner, epoch, expires_at = rows[0]
        return Lease(session=session, owner=owner, epoch=int(epoch), expires_at=expires_at)

    def claim_wake(self, teammate: str, wake_at: str) -> bool:
        """Whether this node runs ``teammate``'s wake scheduled for ``wake_at``: True for
        the first node to claim it, False for every other (and for this one again)."""
        rows = self._run(
            "INSERT INTO teammate_wakes (teammate, wake_at, node) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING RETURNING node",
            (teammate, wake_at, self.node),
        )
        return bool(rows)

    # ── the writer thread's ────────────────────────────────────────────────

    def fence(self, connection: Any, sessions: Iterable[str]) -> Set[str]:
        """In the writer's transaction: lock the lease of each of ``sessions`` that this
        node still holds at its epoch (a take-over waits for this transaction); the
        sessions it does not hold (their writes must not be made)."""
        wanted = set(sessions)
        held = {session: self._held.get(session) for session in wanted}
        known = {session: epoch for session, epoch in held.items() if epoch is not None}
        kept: set[str] = set()
        if known:
            rows = connection.execute(
                "SELECT session FROM session_leases WHERE owner = ? "
                "AND (session, epoch) IN (SELECT * FROM unnest(?::text[], ?::bigint[])) "
                "FOR SHARE",
                (self.node, list(known), list(known.values())),
            ).fetchall()
            kept = {row[0] for row in rows}
        lost = wanted - kept
        for session in lost:
            epoch = held[session]
            why = "taken over by another node" if epoch is not None else "never acquired"
            self._lose(session, epoch, why)
        return lost

    def lost_error(self, session: str) -> FactLogError:
        return FactLogError(
            f"lease lost: node {self.node} no longer owns session {session} (another node "
            "took it over, or it was released); it records nothing more of it here",
            source=self.source,
        )

    def _lose(self, session: str, epoch: int | None, why: str) -> None:
        with self._lost_lock:
            first = session not in self._lost
            self._lost.add(session)
            self._lost_count += first
        if first:
            log.error("lease lost", session=session, node=self.node, epoch=epoch, why=why)
