"""A session's run: its run (the first prompt) or its resume (taken up) is started in the
daemon's nursery behind an error barrier, so a session that fails is logged and never takes
the daemon down (:class:`SessionRuns`). A session another node opened and runs is started
there (its first prompt forwarded). A client ends a session for good with
:meth:`SessionRuns.dispose`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs
import structlog
import trio

from orchestrator.base import RunError
from orchestrator.core import TeamState
from orchestrator.journal import HeldElsewhere
from orchestrator.runtime import RunOutcome

from ._finding import Claim, Release, Start, needs_running
from ._following import Following
from ._live_session import LiveSession

__all__ = [
    "SessionRuns",
]

log = structlog.get_logger("orchestrator.daemon")


class LauncherHost(Protocol):
    """What starting a session reads of the daemon."""

    following: Following

    @property
    def nursery(self) -> trio.Nursery | None: ...


class SessionRuns:
    """Starts a daemon's sessions' runs, resumes those it takes up, and ends them for good."""

    def __init__(
        self,
        daemon: LauncherHost,
        *,
        claim: Claim,
        release: Release,
        elsewhere: Callable[[str, HeldElsewhere], str],
        add: Callable[[LiveSession], None],
        remove: Callable[[LiveSession], None],
        drop: Callable[[LiveSession, str], None],
    ) -> None:
        """``add`` and ``remove`` make a session one of the daemon's, and no longer; ``drop``
        forgets a session never prompted, its clients told why."""
        self._daemon = daemon
        self._claim = claim
        self._release = release
        self._elsewhere = elsewhere
        self._add = add
        self._remove = remove
        self._drop_unprompted = drop

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        """Start ``live``'s run on ``prompt``; returns once its first facts are recorded (or,
        when another node opened it and runs it, read here)."""
        followed = self._daemon.following.follows(live.uri)
        if followed is not None:
            await followed.start(prompt)
            if followed.state.run is not None:
                live.team_name = followed.state.run.team  # unknown here before its run
            return
        held = await self._claim(live.uri)
        if held is not None:
            raise RunError(self._elsewhere(live.uri, held))

        async def run(
            *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
        ) -> RunOutcome:
            return await live.run(prompt, task_status=task_status)

        await self.launch(live, run)

    async def launch(self, live: LiveSession, start: Start) -> None:
        """Run ``start`` (the session's run or resume) in the daemon's nursery, behind an
        error barrier: a session that fails is logged and never takes the daemon down.

        Returns once ``start`` reported its first facts recorded; :class:`RunError` if it
        failed before that (nothing was recorded, or the journal failed).
        """
        nursery = self._daemon.nursery
        assert nursery is not None, "the daemon is not serving"
        self._add(live)
        errors: list[str] = []

        async def supervised(
            *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
        ) -> None:
            reported = _Reported(task_status)
            # Every log line of the session's tasks (its chats inherit the context) says
            # which session and team it is about.
            structlog.contextvars.bind_contextvars(session=live.uri, team=live.team_name)
            try:
                try:
                    outcome = await start(task_status=reported)
                    log.info("session ended", session=live.uri, status=str(outcome.status))
                finally:
                    live.close_streams()  # clients' streams end
                    live.end_sinks(live.end_reason)
            except Exception as exc:
                errors.append(_message(exc))
                log.error("session failed", session=live.uri, error=errors[-1], exc_info=exc)
            finally:
                # Its lease given up once it ends (kept due for take-over when it still has
                # work: a stopping daemon's busy session, another node takes it up at
                # once), while it is still in self.sessions: nobody here takes it up again
                # before the lease is given up.
                await self._release(live.uri, keep=_unfinished(live.state))
                live.finished.set()
                self._remove(live)
                if not reported.done:
                    reported.started()

        await nursery.start(supervised)
        if errors:
            raise RunError(f"session {live.id} could not start: {errors[0]}")

    async def dispose(self, live: LiveSession) -> None:
        """End ``live`` for good (AHP ``disposeSession``; ``end`` on ``/ws``, which the web
        view and ``orchestrator end`` send).

        - A conversation waiting for its next message is recorded ``completed``.
        - One at work has its turns cancelled and is recorded ``cancelled``
          (:meth:`LiveSession.end`).
        - A session never prompted is dropped.

        Returns once it has left :attr:`Daemon.sessions`."""
        async with live.start_lock:
            if not live.started:
                self._drop_unprompted(live, "the session was disposed")
                return
        run = live.state.run
        if not live.finished.is_set() and (run is None or run.status is None):
            await live.end()
        await live.finished.wait()


@attrs.define
class _Reported:
    """A task status that remembers whether it was reported."""

    status: trio.TaskStatus[None]
    done: bool = False

    def started(self, value: object = None) -> None:
        self.done = True
        self.status.started()


def _message(exc: BaseException) -> str:
    """The message of ``exc``, or of the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _unfinished(state: TeamState) -> bool:
    """A session that stopped with work left (its run not finished, a turn or a question
    going): another node should take it up."""
    run = state.run
    return run is not None and run.status is None and needs_running(state)
