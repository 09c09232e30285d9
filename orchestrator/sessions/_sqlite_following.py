"""Following the sessions that other processes on the daemon's SQLite file run.

Theory of operation
-------------------
A SQLite journal may have several writers, one per session (see
:mod:`orchestrator.journal._session_locks`): an ``orchestrator run`` beside the daemon runs
its session while the daemon runs its own. A client may ask the daemon for the run's
session (the web view, ``/ws``, an AHP subscribe). It gets it *followed*, as a follower daemon
of a PostgreSQL journal follows another node's (see :mod:`._followed`). That is a
:class:`~._live_session.LiveSession` over a :class:`~._followed.FollowedRuntime`, read from
the journal, read-only and live. Its clients see the run's facts as the process records
them, with the journal's sequence numbers, and see the run end.

When to read: the file says when it changed. :class:`SqliteFollowing` asks
(:class:`~orchestrator.journal.SqliteChanges`, ``PRAGMA data_version``) every
:data:`CHANGES_POLL` seconds while it follows a session. That is one pragma per journal per
interval, whatever the number of sessions, and nothing while it follows none. When the file
changed, it wakes every followed session. Each reads its own facts after its sequence.

Who runs it: the process holding the session's lock (the kernel says which, see
:meth:`~orchestrator.journal.SessionLocks.holder`), asked every :data:`HOLDER_CHECK`
seconds. Once nobody holds it, the facts it wrote last are read. Then:

- a run that finished ends as it does on a PostgreSQL follower (clients' streams end, no
  reason given);
- a run that did not finish (the process was killed) ends with a reason telling its clients to
  reattach. The daemon takes the session up at once by its start-up rules (``take_up``), so
  that they find it live. That is how a node of a PostgreSQL journal takes up the session of a
  node that died.

Writing: the process takes no commands from the daemon; each (a prompt, a decision, an
answer, a cancel) is refused with an error that names the process (see
:class:`~._followed.Refusal`).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import structlog
import trio

from orchestrator.base import FactLogError, OrchestratorError
from orchestrator.journal import Holder, JournalReader, SessionLocks, SqliteChanges

from ._followed import FollowedRuntime, Refusal, follow_session
from ._following import FollowingStatistics
from ._live_session import LiveSession, SessionHost

__all__ = ["SqliteFollowing"]

log = structlog.get_logger("orchestrator.daemon")

#: Seconds between two looks at whether the journal changed, while a session is followed.
CHANGES_POLL: Final = 0.25
#: Seconds between two looks at which process holds a followed session.
HOLDER_CHECK: Final = 1.0
#: What a command to a followed session is told (after "session S is run by P: ").
REFUSED: Final = (
    "this daemon follows it and takes no commands for it: answer that process (its "
    "console), or ask the daemon again once it has stopped"
)


def _process_gone(session: str, owner: str) -> str:
    return (
        f"session {session}: {owner}, which ran it, stopped before its run ended; "
        "reattach with your cursor: this daemon takes the session up"
    )


class SqliteFollowing:
    """The sessions that other processes run on a SQLite journal, followed (see the module
    docstring); start it with ``await nursery.start(following.serve)``."""

    def __init__(
        self,
        host: SessionHost,
        *,
        locks: SessionLocks,
        reader: JournalReader,
        add: Callable[[LiveSession], None],
        remove: Callable[[LiveSession], None],
        take_up: Callable[[str], Awaitable[object]],
        poll: float = CHANGES_POLL,
        holder_check: float = HOLDER_CHECK,
    ) -> None:
        """``locks``: the daemon's locks of the journal's sessions; ``add`` and
        ``remove``: the daemon's hands on its sessions; ``take_up``: the daemon's take-up
        of a session whose process died before its run ended (never raises)."""
        self._host = host
        self._locks = locks
        self._reader = reader
        self._add = add
        self._remove = remove
        self._poll = poll
        self._holder_check = holder_check
        self._take_up = take_up
        self._orphans: set[str] = set()  # followed sessions whose process died mid-run
        self.changes = SqliteChanges(reader.path)
        self.followed: dict[str, FollowedRuntime] = {}
        self._following = trio.Event()  # set while a session is followed
        self._nursery: trio.Nursery | None = None

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the followed sessions' tasks and look for changes, until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._watch)
                task_status.started()
        finally:
            self.changes.close()

    def holder(self, uri: str) -> Holder | None:
        """The process that runs ``uri`` when it is not this daemon; None when nobody does,
        or this daemon does. :class:`~orchestrator.base.FactLogError` if the lock file
        cannot be read."""
        return self._locks.holder(uri)

    def runs_elsewhere(self, uri: str) -> bool:
        """Whether another process holds ``uri``'s lock now. Blocking (a system call)."""
        return self._locks.holder(uri) is not None

    def run_by(self, uri: str) -> dict[str, object] | None:
        """The process holding ``uri`` (``{"program": "orchestrator run", "pid": 4242}``,
        either None where unknown); None when nobody does, this daemon does, or the lock
        file cannot be read. A system call, a file of /proc: cheap, but not a checkpoint."""
        try:
            holder = self._locks.holder(uri)
        except FactLogError:
            return None
        return None if holder is None else holder.to_json()

    # ── following ──────────────────────────────────────────────────────────

    async def follow(self, uri: str) -> LiveSession:
        """Follow ``uri``, which another process runs; its clients reach it as any live
        session. (A process that let go of it meanwhile: following ends at once, as the
        run ended or with a reason to reattach.)"""
        assert self._nursery is not None, "the daemon's following is not serving"
        holder = self._locks.holder(uri)
        state = await trio.to_thread.run_sync(self._reader.open, uri)
        team_file, _ = await trio.to_thread.run_sync(self._reader.team_toml, uri)
        name = Path(team_file).stem if team_file else (state.run.team if state.run else "")
        runtime = FollowedRuntime(
            state,
            owner=str(holder) if holder is not None else "another process",
            reader=self._reader,
            forwarder=Refusal(REFUSED),
            live_owner=self._live_owner,
            lease_check=self._holder_check,
            poll=math.inf,  # woken by _watch: no session reads on its own
            gone=self._gone,
        )
        live = LiveSession(self._host, name, runtime)
        self.followed[uri] = runtime
        self._following.set()
        self._add(live)
        await self._nursery.start(self._run_followed, live, runtime)
        log.info("following session", session=uri, run_by=runtime.owner)
        return live

    def _gone(self, uri: str, owner: str) -> str:
        self._orphans.add(uri)
        return _process_gone(uri, owner)

    def _live_owner(self, uri: str) -> str | None:
        holder = self._locks.holder(uri)
        return None if holder is None else str(holder)

    async def _run_followed(
        self,
        live: LiveSession,
        runtime: FollowedRuntime,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            await follow_session(live, runtime, task_status=task_status)
        finally:
            self._remove(live)
            if self.followed.get(live.uri) is runtime:
                del self.followed[live.uri]
            if not self.followed:
                self._following = trio.Event()
            log.info("session no longer followed", session=live.uri, why=runtime.end_reason)
            if live.uri in self._orphans:
                self._orphans.discard(live.uri)
                assert self._nursery is not None
                self._nursery.start_soon(self._take_up, live.uri)

    async def unfollow(self, live: LiveSession, why: str | None) -> None:
        """End following ``live`` (its clients told ``why``); returns once it has ended."""
        runtime = self.followed.get(live.uri)
        if runtime is not None:
            runtime.end(why)
            await live.finished.wait()

    async def follow_unrecorded(self, uri: str) -> LiveSession | None:
        """None: only a session the file records is followed (a lock says who runs a
        session, not that it exists)."""
        return None

    def follows(self, uri: str) -> FollowedRuntime | None:
        return self.followed.get(uri)

    async def tidy(self) -> None:
        """Nothing to tidy (the take-over scan never runs on a SQLite file: locks do not
        expire)."""

    def statistics(self) -> FollowingStatistics:
        return FollowingStatistics(followed=len(self.followed), journal_looks=self.changes.looks)

    # ── when to read ───────────────────────────────────────────────────────

    async def _watch(self) -> None:
        """Every :data:`CHANGES_POLL` seconds while a session is followed: wake them all
        if the journal changed (or cannot tell: each reads, and says what failed)."""
        while True:
            await self._following.wait()
            await trio.sleep(self._poll)
            if not self.followed:
                continue
            try:
                changed = await trio.to_thread.run_sync(self.changes.changed)
            except (OrchestratorError, OSError) as exc:
                log.warning("journal changes not seen", error=str(exc))
                changed = True
            if changed:
                for runtime in list(self.followed.values()):
                    runtime.wake()
