"""Several daemons on one PostgreSQL journal: each running session leased to one node.

Theory of operation
-------------------
A *node* is one daemon process, named by its node id (``node =`` in daemon.toml,
``--node``). A node runs a session only while it holds the session's lease: a row of
``session_leases`` naming the owner, an *epoch* and when the lease expires. The owner
renews its leases every ``ttl / 3`` seconds (:meth:`PostgresLeases.renew`). A node that stops
renewing (killed, cut off from the database) lets them expire, and another node takes the
session up. :meth:`PostgresLeases.acquire` succeeds on an expired lease, or on one of its own
node id, and adds one to the epoch. A lease given up keeps its row (owner
``''``), so that a session's epochs only ever grow.

Safety does not rest on clocks: every write transaction of the journal *fences* the
sessions it writes (:meth:`PostgresLeases.fence`, in the writer thread, in the same
transaction). It locks each session's lease row (``FOR SHARE``) where it still names this node
with the epoch this node acquired. A lease taken over meanwhile (its epoch moved on)
fails the batch, and the journal refuses the session from then on (its runtime ends,
recording nothing: "lease lost"). A take-over's ``UPDATE`` waits for a writer holding the
row, so the new owner reads the journal after the old owner's last commit, never before:
no fact is written by two owners, none is lost between them.

Clocks matter only for *when* a lease expires: ``expires_at`` is the database's
``clock_timestamp()`` plus the TTL (so nodes need not agree on the time), unless a caller
passes ``now`` (tests give trio's clock).

A background teammate's stream (its schedule, wakes and runs: a stream of facts like a
session's) is leased the same way. The node holding it runs the teammate; the others wait to
take it over. A wake recorded in the stream is fenced like any fact, so it happens once across
nodes.

All methods block (psycopg): call them from a worker thread, as the journal does. The
component keeps one connection of its own for leases and claims (the writer's is only for
the fence). When the server restarted, that connection is found lost at its next
statement. It is opened again and the statement tried once more at once. Every statement here
may run twice: a renewal or a release sets what it sets, and an acquire of this node's own
lease moves its epoch on again. So a renewal after a short restart does not wait for the next
one. A server still down fails the statement, and renewals go on failing. The daemon stops its
sessions only after a whole TTL of them.

:class:`PostgresLeases` is the PostgreSQL journal's
:class:`~orchestrator.journal._ownership.SessionOwnership` (:meth:`~PostgresLeases.claim`
and the rest); :meth:`~PostgresLeases.acquire` and :meth:`~PostgresLeases.lease` say more
of a lease than the seam needs (its epoch, its expiry).
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

from .._ownership import HeldElsewhere, OwnershipStatistics
from ._connection import connect, connect_error, redacted, transient

__all__ = ["Lease", "LeaseLostError", "PostgresLeases"]

log = structlog.get_logger("orchestrator.journal")

#: Seconds a session's lease lasts unless renewed (renewed every third of it).
LEASE_TTL: Final = 15.0
#: Most expired leases one scan returns (the next scan takes the rest).
SCAN_LIMIT: Final = 100


class LeaseLostError(FactLogError):
    """A write of a session this node does not hold the lease of any more (or never did):
    another node took the session over. It fails that write, and the session's runtime here
    ends; the journal goes on, and this node may take the session up again later."""


@attrs.frozen(kw_only=True)
class Lease:
    """Who owns ``session``: ``owner``, at ``epoch``, until ``expires_at``."""

    session: str
    owner: str
    epoch: int
    expires_at: dt.datetime


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

    def statistics(self) -> OwnershipStatistics:
        return OwnershipStatistics(node=self.node, held=len(self._held), lost=self._lost_count)

    @property
    def renew_every(self) -> float:
        """Renewals (and scans for what expired) every third of the TTL."""
        return self.ttl / 3

    @property
    def retry_every(self) -> float:
        return self.ttl / 3

    # ── the database ───────────────────────────────────────────────────────

    def _run(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """``sql`` on this component's connection (opened again if it was lost, and the
        statement tried again at once if it was lost under it: see the module docstring)."""
        with self._lock:
            fresh = self._connection is None or self._connection.closed
            if fresh:
                self._connection = self._connect()
            assert self._connection is not None
            try:
                try:
                    cursor = self._connection.execute(sql, parameters)
                except psycopg.Error as exc:
                    if fresh or not transient(exc, self._connection):
                        raise
                    self._connection.close()  # lost since its last statement (a restart)
                    self._connection = self._connect()
                    cursor = self._connection.execute(sql, parameters)
                return cursor.fetchall() if cursor.description is not None else []
            except psycopg.errors.LockNotAvailable as exc:
                raise FactLogError(
                    f"a lease row is held by a write in progress (of a node that may have "
                    f"stalled) past the lock timeout ({' '.join(str(exc).split())}); "
                    "tried again at the next scan",
                    source=self.source,
                ) from exc
            except psycopg.OperationalError as exc:
                self._connection.close()
                raise connect_error(self.source, exc) from exc
            except psycopg.Error as exc:
                raise FactLogError(
                    f"cannot manage session leases: {exc}", source=self.source
                ) from exc

    def _connect(self) -> psycopg.Connection[Any]:
        # A lease row another node's writer holds (see fence) waits a third of the TTL at
        # most: renewals must not stall behind a take-over attempt.
        wait_ms = max(1, round(self.ttl * 1000 / 3))
        return connect(
            self.url, application="orchestrator leases", options=f"-c lock_timeout={wait_ms}"
        )

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def acquire(
        self, session: str, *, now: dt.datetime | None = None, replacing: str = ""
    ) -> Lease:
        """Take ``session``'s lease if it is free to take.

        It is free to take when:

        - nobody holds it, or it expired;
        - it is this node id's own; its epoch then moves on, so whatever wrote under the old
          one is fenced off;
        - it is node ``replacing``'s, one the caller knows is dead (an ``orchestrator run``
          killed on this machine).

        Returns the lease as it now is: ``lease.owner != self.node`` when another node holds
        it."""
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
                "OR l.owner = excluded.owner OR (%s <> '' AND l.owner = %s) "
                "RETURNING epoch, expires_at",
                (session, self.node, now, self.ttl, now, replacing, replacing),
            )
            if rows:
                epoch, expires_at = int(rows[0][0]), rows[0][1]
                with self._lost_lock:
                    self._held[session] = epoch
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

    def claim(self, session: str, *, replacing: str = "") -> HeldElsewhere | None:
        """:meth:`acquire`, saying which node holds ``session`` when it is refused."""
        lease = self.acquire(session, replacing=replacing)
        if lease.owner == self.node:
            return None
        return HeldElsewhere(
            owner=lease.owner,
            description=(
                f"runs on node {lease.owner} (its lease lasts until "
                f"{lease.expires_at.isoformat(timespec='seconds')}, renewed while that node "
                "lives)"
            ),
        )

    def renew(self, *, now: dt.datetime | None = None) -> list[str]:
        """Extend every lease this node holds by the TTL; the sessions whose lease another
        node took meanwhile (no longer held: their runtimes must stop)."""
        held = dict(self._held)
        if not held:
            return []
        # The rows locked in the order the writer's fence locks them (by session): a renewal
        # and a write transaction of this node never wait for each other in a cycle.
        rows = self._run(
            "UPDATE session_leases "
            "SET expires_at = coalesce(%s::timestamptz, clock_timestamp()) "
            "+ make_interval(secs => %s) "
            "WHERE session IN (SELECT session FROM session_leases WHERE owner = %s "
            "AND (session, epoch) IN (SELECT * FROM unnest(%s::text[], %s::bigint[])) "
            "ORDER BY session FOR UPDATE) "
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
        """Give ``session``'s lease up: to nobody (the session ended, or is idle: the next
        node a client asks takes it), or with ``keep`` expired at once (it still has work:
        the next scan of any node takes it up). Nothing if another node holds it.

        The row stays (owner ``''``): a session's epochs only ever grow, so a batch
        submitted under an old lease never passes the fence of a new one."""
        epoch = self._held.pop(session, None)
        if epoch is None:
            return
        self._run(
            "UPDATE session_leases SET expires_at = 'epoch', owner = %s "
            "WHERE session = %s AND owner = %s AND epoch = %s",
            (self.node if keep else "", session, self.node, epoch),
        )

    def drop_unused(self, session: str) -> None:
        """Give ``session``'s lease up and delete its row, if nothing was ever written under
        it (no run of it started: a session opened and never prompted); else as
        :meth:`release`. Nothing if another node holds it."""
        epoch = self._held.pop(session, None)
        if epoch is None:
            return
        self._run(
            "DELETE FROM session_leases l WHERE l.session = %s AND l.owner = %s "
            "AND l.epoch = %s AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session = %s)",
            (session, self.node, epoch, session),
        )
        self._run(
            "UPDATE session_leases SET expires_at = 'epoch', owner = '' "
            "WHERE session = %s AND owner = %s AND epoch = %s",
            (session, self.node, epoch),
        )

    def expired(self, *, now: dt.datetime | None = None) -> list[str]:
        """The running sessions whose lease expired (their owner died or let them go with
        work left), oldest expiry first; expired leases of sessions that ended are deleted
        on the way (they are never written again). Leases of what has no running session
        (a background teammate's stream) are not listed: their nodes wait for them."""
        self._run(
            "DELETE FROM session_leases l "
            "WHERE l.expires_at <= coalesce(%s::timestamptz, clock_timestamp()) "
            "AND EXISTS (SELECT 1 FROM sessions s "
            "WHERE s.session = l.session AND s.status <> 'running')",
            (now,),
        )
        rows = self._run(
            "SELECT l.session FROM session_leases l JOIN sessions s ON s.session = l.session "
            "WHERE l.expires_at <= coalesce(%s::timestamptz, clock_timestamp()) "
            "AND l.owner <> '' AND s.status = 'running' "
            "ORDER BY l.expires_at, l.session LIMIT %s",
            (now, SCAN_LIMIT),
        )
        return [row[0] for row in rows if row[0] not in self._held]

    def forget(self, session: str, *, why: str) -> None:
        """Count ``session``'s lease as lost without asking the database (its renewals
        failed for a whole TTL: another node may hold it by now)."""
        epoch = self._held.pop(session, None)
        if epoch is not None:
            self._lose(session, epoch, why)

    def lease(self, session: str) -> Lease | None:
        """``session``'s lease as the database has it (None: nobody's)."""
        rows = self._run(
            "SELECT owner, epoch, expires_at FROM session_leases WHERE session = %s", (session,)
        )
        if not rows or not rows[0][0]:
            return None
        owner, epoch, expires_at = rows[0]
        return Lease(session=session, owner=owner, epoch=int(epoch), expires_at=expires_at)

    # ── the writer thread's ────────────────────────────────────────────────

    def epoch(self, session: str) -> int | None:
        """The epoch this node holds ``session``'s lease at (None: it does not)."""
        return self._held.get(session)

    def fence(
        self, connection: Any, wanted: Iterable[tuple[str, int | None]]
    ) -> Set[tuple[str, int | None]]:
        """In the writer's transaction: lock the lease of each ``(session, epoch)`` that
        this node still holds at that epoch (a take-over waits for this transaction); the
        pairs it does not hold (their writes must not be made)."""
        pairs = set(wanted)
        known = [(session, epoch) for session, epoch in pairs if epoch is not None]
        kept: set[tuple[str, int | None]] = set()
        if known:
            rows = connection.execute(
                "SELECT session, epoch FROM session_leases WHERE owner = ? "
                "AND (session, epoch) IN (SELECT * FROM unnest(?::text[], ?::bigint[])) "
                "ORDER BY session FOR SHARE",
                (self.node, [s for s, _ in known], [e for _, e in known]),
            ).fetchall()
            kept = {(row[0], int(row[1])) for row in rows}
        lost = pairs - kept
        for session, epoch in lost:
            why = "taken over by another node" if epoch is not None else "never acquired"
            with self._lost_lock:
                if epoch is not None and self._held.get(session) == epoch:
                    del self._held[session]
            self._lose(session, epoch, why)
        return lost

    def lost_message(self, session: str) -> str:
        return (
            f"lease lost: node {self.node} no longer owns session {session} (another node "
            "took it over, or it was released); it records nothing more of it here"
        )

    def lost_error(self, session: str) -> FactLogError:
        return LeaseLostError(self.lost_message(session), source=self.source)

    def _lose(self, session: str, epoch: int | None, why: str) -> None:
        with self._lost_lock:
            first = session not in self._lost
            self._lost.add(session)
            self._lost_count += first
        if first:
            log.error("lease lost", session=session, node=self.node, epoch=epoch, why=why)
