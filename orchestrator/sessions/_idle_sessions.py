"""What the daemon does with sessions nobody uses: a session never prompted is forgotten
(:meth:`IdleSessions.forget_unprompted`). One idle with no client is put away, recording
nothing: a client asking takes it up again (:meth:`IdleSessions.evict_idle`). A conversation
that waited long for its next prompt is ended (:meth:`IdleSessions.expire_conversations`).
So the daemon's memory holds the sessions in use, not every session it ever ran.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Protocol

import structlog
import trio

from orchestrator.base import FactLogError, OrchestratorError, timestamp, utc_now
from orchestrator.journal import JournalReader

from ._finding import SessionFinder, needs_running
from ._limits import Limits
from ._live_session import LiveSession

__all__ = [
    "IdleSessions",
]

log = structlog.get_logger("orchestrator.daemon")


class IdleHost(Protocol):
    """What the idle sessions' timers read of the daemon, and how they end a session."""

    sessions: dict[str, LiveSession]
    reader: JournalReader
    accepting: bool
    limits: Limits
    finder: SessionFinder

    async def dispose(self, live: LiveSession) -> None: ...


class IdleSessions:
    """The timers of a daemon's idle sessions (see the module)."""

    def __init__(self, daemon: IdleHost, *, drop: Callable[[LiveSession, str], None]) -> None:
        """``drop`` forgets a session never prompted, its clients told why."""
        self._daemon = daemon
        self._drop_unprompted = drop

    async def forget_unprompted(self, live: LiveSession) -> None:
        """Forget ``live`` if it is never prompted: ``unprompted_session`` seconds after it
        was opened or its last client left, and ``idle_session`` after it was opened even
        with a client on it (who is told the session ended). Nothing of it was recorded."""
        wait = self._daemon.limits.unprompted_session
        cap = live.opened_at + max(self._daemon.limits.idle_session, wait)
        while True:
            if not live.unprompted:
                return  # prompted, disposed or stopped: not ours any more
            now = trio.current_time()
            expires = max(live.opened_at, live.alone_since) + wait
            if now >= cap or (not live.clients and now >= expires):
                if not live.start_lock.locked():
                    break
                async with live.start_lock:  # a first prompt is starting: see how it ends
                    pass
            # Each wait ends at the first prompt too: this task holds the session, and a
            # session prompted soon after it opened must not outlive its being put away by
            # the rest of ``unprompted_session`` (the soak's memory, a cycle of sessions on).
            elif live.clients:
                with trio.move_on_at(cap):
                    await live.wait_alone_or_prompted()
            else:
                with trio.move_on_at(min(expires, cap)):
                    await live.prompted.wait()
        log.info("session never prompted forgotten", session=live.uri, after=now - live.opened_at)
        self._drop_unprompted(
            live, f"no prompt within {now - live.opened_at:g} s of opening: open a new session"
        )

    async def evict_idle(self, after: float | None = None) -> None:
        """Every so often, stop the sessions that have been idle with no client for ``after``
        seconds (default: ``idle_session``), recording nothing: a client asking takes them up
        again. So the daemon's memory holds the sessions in use, not every one it ran."""
        after = self._daemon.limits.idle_session if after is None else after
        while True:
            await trio.sleep(max(after / 4, 0.05))
            now = trio.current_time()
            live: LiveSession | None
            for live in list(self._daemon.sessions.values()):
                followed = self._daemon.finder.follower(live.uri)
                if followed is not None:
                    # Followed, idle or not: dropped once nobody has watched it for a while.
                    if live.clients == 0 and now - live.alone_since >= after:
                        log.info("followed session nobody watches dropped", session=live.uri)
                        followed.end(None)
                    continue
                if not live.started:
                    continue  # never prompted: forget_unprompted's own timer ends it
                if live.clients == 0 and live.idle.is_set() and now - live.idle_since >= after:
                    log.info("idle session put away", session=live.uri)
                    live.put_away = True
                    live.stop()
            live = None  # the last one scanned is not held until the next scan

    async def expire_conversations(self, after: float | None = None) -> None:
        """Every so often, end the conversations that have waited ``after`` seconds for their
        next prompt (default: the ``idle_conversation`` limit): each is recorded ``completed`` as if
        a client ended it (the daemon's ``dispose``), so ``prune`` can remove it in time.

        A live session counts from the end of its last turn; one not in memory (put away,
        or left idle by the daemon before a restart) from the journal's last write of it,
        and is taken up to be ended. A session at work (a turn running, an approval or a
        question waiting, a prompt queued) never expires.
        """
        after = self._daemon.limits.idle_conversation if after is None else after
        # Sessions this node could not take up to end (no team file recorded, run by another
        # process): said once, not every round.
        refused: set[str] = set()
        while True:
            await trio.sleep(min(max(after / 4, 0.05), 60.0))
            if not self._daemon.accepting:
                continue
            now = trio.current_time()
            for live in list(self._daemon.sessions.values()):
                if (
                    live.started
                    and not live.put_away
                    and not self._daemon.finder.followed(live.uri)
                    and not live.finished.is_set()
                    and not needs_running(live.state)
                    and now - live.idle_since >= after
                ):
                    await self._expire(live, after)
            try:
                infos = await trio.to_thread.run_sync(
                    functools.partial(self._daemon.reader.sessions, status="running")
                )
            except FactLogError as exc:
                log.warning("idle conversations not read", error=str(exc))
                continue
            cutoff = timestamp(utc_now() - datetime.timedelta(seconds=after))
            for info in infos:
                if info.updated_at >= cutoff or info.session in self._daemon.sessions:
                    continue
                if info.session in refused:
                    continue
                try:
                    found = await self._daemon.finder.find(info.session)
                except (OrchestratorError, OSError) as exc:
                    refused.add(info.session)
                    log.warning(
                        "idle conversation not taken up", session=info.session, error=str(exc)
                    )
                    continue
                if found is not None and not needs_running(found.state):
                    await self._expire(found, after)

    async def _expire(self, live: LiveSession, after: float) -> None:
        log.info("idle conversation ended", session=live.uri, after=after)
        try:
            await self._daemon.dispose(live)
        except (OrchestratorError, OSError) as exc:
            log.warning("idle conversation not ended", session=live.uri, error=str(exc))
