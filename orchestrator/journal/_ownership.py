"""Who runs each session of a journal: one seam, :class:`SessionOwnership`, whatever the
database.

Theory of operation
-------------------
A session must run in one process at a time: two runtimes of one session would run its
turns twice (a tool call runs twice), and the slower one's writes would fail. A journal says
which sessions this process (a *node*: a daemon, an ``orchestrator run``) owns through its
:attr:`~._interface.Journal.ownership`, one of three:

* a SQLite file: :class:`~._session_locks.SessionLocks`, a record lock per session that the
  kernel lets go of when the process ends. Nothing expires, nothing is renewed, and a
  session is never lost while it is held.
* a PostgreSQL database that several daemons share: :class:`~.postgres.PostgresLeases`, a
  lease per session that expires unless renewed every :attr:`~SessionOwnership.renew_every`
  seconds. A lease found taken is *lost* (the session stops here, recording nothing); a
  lease that expired is taken over by another node's scan (:meth:`~SessionOwnership.expired`).
* a journal nobody else writes (a PostgreSQL journal opened without a node id):
  :class:`SoleOwnership`, which takes every session and keeps the set in memory.

The callers (the daemon, ``run`` and ``resume``, the background teammates' scheduler) see
only the protocol. What does not apply to an ownership is a no-op there: a lock's
:meth:`~SessionOwnership.renew` loses nothing, its :meth:`~SessionOwnership.expired` lists
nothing, and its :attr:`~SessionOwnership.renew_every` is infinite, so a renewal loop sleeps
for good. Every method may block (a lease asks the database): call them from a worker
thread. Only :meth:`~SessionOwnership.holds`, :attr:`~SessionOwnership.held` and
:meth:`~SessionOwnership.epoch` read memory alone.
"""

from __future__ import annotations

import math
import os
import socket
import threading
from collections.abc import Collection
from typing import Protocol

import attrs

from orchestrator.base import FactLogError

__all__ = ["HeldElsewhere", "OwnershipStatistics", "SessionOwnership", "SoleOwnership"]


@attrs.frozen(kw_only=True)
class HeldElsewhere:
    """Who holds a session this node could not take: ``owner`` names it (a node id, or the
    process that holds a SQLite file's lock), ``description`` says so as the end of a
    sentence that starts with the session's URI (``"runs on node a (its lease lasts until
    ...)"``)."""

    owner: str
    description: str


@attrs.frozen(kw_only=True)
class OwnershipStatistics:
    """What a node's ownership does: how many sessions it holds, and how many it lost since
    it started (another node took them over)."""

    node: str
    held: int
    lost: int


class SessionOwnership(Protocol):
    """Which sessions of a journal this node runs (see the module docstring)."""

    #: This node's id: a daemon's ``node =``, ``run:HOSTNAME:PID``, or ``HOSTNAME:PID``.
    node: str

    @property
    def renew_every(self) -> float:
        """Seconds between two renewals of what this node holds, and between two scans for
        what expired (``math.inf``: nothing expires)."""
        ...

    @property
    def ttl(self) -> float:
        """Seconds what is held lasts unless renewed (``math.inf``: for good)."""
        ...

    @property
    def retry_every(self) -> float:
        """Seconds between two tries to take a session another node holds, for a node that
        waits for it (a background teammate's stream)."""
        ...

    @property
    def held(self) -> Collection[str]:
        """The sessions this node holds now."""
        ...

    def holds(self, session: str) -> bool:
        """Whether this node holds ``session`` (memory only: never blocks)."""
        ...

    def claim(self, session: str, *, replacing: str = "") -> HeldElsewhere | None:
        """Take ``session`` for this node: None once it holds it (at once if it did), else
        who does. ``replacing``: a node the caller knows is dead (an ``orchestrator run``
        of this machine whose process is gone), whose session may be taken at once."""
        ...

    def release(self, session: str, *, keep: bool = False) -> None:
        """Give ``session`` up (nothing if this node does not hold it); ``keep``: it still
        has work, so another node should take it up at once."""
        ...

    def drop_unused(self, session: str) -> None:
        """Give up ``session``, which nothing was recorded of (opened, never prompted)."""
        ...

    def renew(self) -> list[str]:
        """Renew what this node holds; the sessions it lost meanwhile (their runtimes here
        must stop)."""
        ...

    def expired(self) -> list[str]:
        """The running sessions whose owner let them lapse (it died), for this node to take
        up."""
        ...

    def forget(self, session: str, *, why: str) -> None:
        """Count ``session`` as lost without asking anyone (its renewals failed for a whole
        :attr:`ttl`: another node may hold it by now)."""
        ...

    def lost_error(self, session: str) -> FactLogError:
        """The error a session lost by this node ends with."""
        ...

    def epoch(self, session: str) -> int | None:
        """What the journal's writes of ``session`` are fenced by (None: not fenced)."""
        ...

    def statistics(self) -> OwnershipStatistics: ...

    def close(self) -> None:
        """Let go of what the ownership keeps open (a connection), not of what it holds."""
        ...


def default_node() -> str:
    """``HOSTNAME:PID``: a node id unique among the processes running now."""
    return f"{socket.gethostname()}:{os.getpid()}"


class SoleOwnership:
    """The ownership of a journal nobody else writes: every session this node asks for is
    its own, kept in memory, never lost."""

    renew_every = math.inf
    ttl = math.inf
    retry_every = math.inf

    def __init__(self, *, node: str | None = None) -> None:
        self.node = node or default_node()
        self._held: set[str] = set()
        self._lock = threading.Lock()  # worker threads and trio's both call in

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def holds(self, session: str) -> bool:
        return session in self._held

    def claim(self, session: str, *, replacing: str = "") -> HeldElsewhere | None:
        with self._lock:
            self._held.add(session)
        return None

    def release(self, session: str, *, keep: bool = False) -> None:
        with self._lock:
            self._held.discard(session)

    def drop_unused(self, session: str) -> None:
        self.release(session)

    def renew(self) -> list[str]:
        return []

    def expired(self) -> list[str]:
        return []

    def forget(self, session: str, *, why: str) -> None:
        self.release(session)

    def lost_error(self, session: str) -> FactLogError:
        return FactLogError(f"session {session} is not held by node {self.node}", source=self.node)

    def epoch(self, session: str) -> int | None:
        return None

    def statistics(self) -> OwnershipStatistics:
        return OwnershipStatistics(node=self.node, held=len(self._held), lost=0)

    def close(self) -> None:
        pass
