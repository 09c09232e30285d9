"""How a daemon follows the sessions another node or process runs: one seam, :class:`Following`.

Theory of operation
-------------------
A client may ask a daemon for a session it does not run: another node of its PostgreSQL
journal runs it, or another process of its SQLite file (an ``orchestrator run`` beside it).
The daemon then *follows* it (see :mod:`._followed`): a
:class:`~._live_session.LiveSession` over a :class:`~._followed.FollowedRuntime`, read from
the journal. How it learns who runs what and when to read depends on the journal, so the
daemon and its parts (:mod:`._finding`, :mod:`._runs`, :mod:`._idle_sessions`, the take-over
scan, the metrics) see only this protocol, implemented by:

* :class:`~._cluster.Cluster` for a node holding PostgreSQL leases: the lease's owner runs
  a session, its notifications say when to read, and commands are forwarded to it;
* :class:`~._sqlite_following.SqliteFollowing` for a SQLite file's locks: the lock's holder
  runs a session, ``PRAGMA data_version`` says when to read, and commands are refused;
* :class:`NoFollowing` for a journal nobody else writes (a PostgreSQL journal opened without
  a node id: :class:`~orchestrator.journal.SoleOwnership`): nothing runs elsewhere.

The choice is made once, by :func:`~._following_for.following_for`, from the journal's
ownership.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs
import trio

from orchestrator.base import RunError

from ._followed import FollowedRuntime
from ._live_session import LiveSession

__all__ = ["Following", "FollowingStatistics", "NoFollowing"]


@attrs.frozen(kw_only=True)
class FollowingStatistics:
    """What a daemon's following does: the sessions it follows, and how many times it
    asked its journal whether it changed (a SQLite file's polls; 0 where it is told)."""

    followed: int
    journal_looks: int


class Following(Protocol):
    """The sessions another node or process runs, followed by this daemon (see the module
    docstring); start it with ``await nursery.start(following.serve)``."""

    @property
    def followed(self) -> Mapping[str, FollowedRuntime]:
        """The sessions followed now, by URI."""
        ...

    async def serve(self, *, task_status: trio.TaskStatus[None] = ...) -> None:
        """Run the followed sessions' tasks (and what tells them when to read) until
        cancelled; report ``task_status.started`` once ready."""
        ...

    def runs_elsewhere(self, uri: str) -> bool:
        """Whether another node or process runs ``uri`` now. Blocking (a system call, or a
        query): call it from a worker thread."""
        ...

    def run_by(self, uri: str) -> dict[str, object] | None:
        """Who runs ``uri`` when this daemon does not (``{"node": ...}``, or the process
        holding a SQLite file's lock: ``{"program": ..., "pid": ...}``); None when this
        daemon runs it or nobody does (as far as it knows without asking the database)."""
        ...

    async def follow(self, uri: str) -> LiveSession:
        """Follow ``uri``, recorded in the journal, which another node or process holds
        (this node's claim of it said so); its clients reach it as any live session.
        :class:`~orchestrator.base.RunError` where nothing can be followed."""
        ...

    async def follow_unrecorded(self, uri: str) -> LiveSession | None:
        """Follow ``uri``, which the journal has nothing of yet, if another node opened it
        (and holds it): followed from its first fact, so any node serves a session from the
        moment its opener knows its id. None otherwise."""
        ...

    def follows(self, uri: str) -> FollowedRuntime | None:
        """How ``uri`` is followed, if it is."""
        ...

    async def unfollow(self, live: LiveSession, why: str | None) -> None:
        """End following ``live`` (its clients told ``why``); returns once it has ended."""
        ...

    async def tidy(self) -> None:
        """What the take-over scan has the following do after each scan (a cluster deletes
        the old forwarded commands now and then); never raises."""
        ...

    def statistics(self) -> FollowingStatistics: ...


class NoFollowing:
    """The following of a journal nobody else writes: no session runs elsewhere, so none is
    followed."""

    @property
    def followed(self) -> Mapping[str, FollowedRuntime]:
        return {}

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    def runs_elsewhere(self, uri: str) -> bool:
        return False

    def run_by(self, uri: str) -> dict[str, object] | None:
        return None

    async def follow(self, uri: str) -> LiveSession:
        raise RunError(
            f"session {uri} runs elsewhere, and this daemon follows no session another runs: "
            "ask the daemon that runs it"
        )

    async def follow_unrecorded(self, uri: str) -> LiveSession | None:
        return None

    def follows(self, uri: str) -> FollowedRuntime | None:
        return None

    async def unfollow(self, live: LiveSession, why: str | None) -> None:
        pass

    async def tidy(self) -> None:
        pass

    def statistics(self) -> FollowingStatistics:
        return FollowingStatistics(followed=0, journal_looks=0)
