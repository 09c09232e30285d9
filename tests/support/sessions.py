"""Facts that open a session, for tests that build one by hand, and a daemon without an
HTTP server to open sessions of (:func:`serving`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import trio
import trio.testing

from orchestrator.ahp.actions import SessionChatAddedAction
from orchestrator.ahp.state import ChatSummary, SessionStatus, UserChatOrigin
from orchestrator.core import Action, MemberJoined, RunStarted
from orchestrator.server import assemble
from orchestrator.sessions import Daemon, Limits
from orchestrator.spec import parse_team
from tests.support.teammates import HeldClock
from tests.support.teams import ECHO


def solo_opening(
    session: str, chat: str, *, prompt: str, at: str, member: bool = True
) -> list[tuple[str, Action]]:
    """The first facts of a run of team ``t`` whose coordinator ``lead`` has ``chat``: the
    run started with ``prompt``, the chat added (idle, modified ``at``) and, unless not
    ``member``, the coordinator joined."""
    summary = ChatSummary(
        resource=chat,
        title="lead",
        status=SessionStatus.IDLE,
        modified_at=at,
        origin=UserChatOrigin(),
    )
    started = RunStarted(
        run="run-1",
        team="t",
        topology="coordinator_team",
        parallel_budget=1,
        coordinator="lead",
        prompt=prompt,
        task="task-1",
    )
    opening: list[tuple[str, Action]] = [
        (session, started),
        (session, SessionChatAddedAction(summary=summary)),
    ]
    if member:
        joined = MemberJoined(chat=chat, agent="lead", role="coordinator", task="task-1")
        opening.append((session, joined))
    return opening


@asynccontextmanager
async def serving(tmp_path: Path, limits: Limits) -> AsyncIterator[Daemon]:
    """A daemon (no HTTP server) of the echo team, with ``limits``, on the test's mock clock;
    stopped as SIGTERM stops it when the block ends."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "use the autojump_clock fixture"
    held = HeldClock(clock)
    journal = held.journal(tmp_path / "journal.db")
    teams = {"echo": parse_team(ECHO, file="echo.toml")}
    with held.holding_threads():
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            async with trio.open_nursery() as nursery:
                daemon = Daemon(
                    teams=teams, journal=journal, http=http, shutdown_grace=0.5, limits=limits
                )
                assemble(daemon)
                await nursery.start(daemon.serve)
                try:
                    yield daemon
                finally:
                    with trio.CancelScope(shield=True):
                        await daemon.stop()
                    nursery.cancel_scope.cancel()
            services.cancel_scope.cancel()
