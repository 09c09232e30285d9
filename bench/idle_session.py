"""What one idle session holds: the memory of a session in the daemon between prompts.

A daemon (no HTTP server: the :class:`~orchestrator.server.Daemon` its clients reach, with
its journal on a SQLite file, durability "process") opens ``--sessions`` sessions of a team,
prompts each ``--prompts`` times and waits until each is idle (no turn running, no client).
Measured with ``tracemalloc``, what Python holds with them all idle, less what it held
before, per session; then the same once the daemon put them away (``idle_session``) and
collected what they held. That second column is no session's: it is what running sessions
side by side grew once (trio's sets, the thread pool), some 100-150 KB in all, divided by
``--sessions`` (3 KB a session at 50, 22 KB at 5). Two teams: ``echo`` (a coordinator
that answers) and ``fan`` (a coordinator that hands three tasks to workers every prompt).
Memory outside Python's allocator (SQLite's page cache, malloc's free pages) is not counted:
the RSS of a whole daemon is ``bench/soak.py memory``'s.

    .venv/bin/python bench/idle_session.py
    .venv/bin/python bench/idle_session.py --sessions 200 --prompts 3
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Final

import httpx
import structlog
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.journal import Durability, open_journal
from orchestrator.server import assemble
from orchestrator.sessions import Daemon, Limits, LiveSession
from orchestrator.spec import parse_team
from tests.support.teams import fan_team

ECHO: Final = """
[team]
name = "echo"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "an answer of a few words", chunks = 2 } ]
"""
FAN: Final = fan_team(20)  # a prompt each, up to --prompts 20
#: Seconds an idle session with no client stays (short: the bench waits for it).
IDLE: Final = 2.0


async def answered(live: LiveSession, prompts: int) -> None:
    """Until ``live`` is idle with ``prompts`` prompts answered (its coordinator's turns)."""
    while True:
        coordinator = live.state.coordinator_chat()
        chat = live.state.chats.get(coordinator) if coordinator is not None else None
        if live.idle.is_set() and chat is not None and len(chat.turns) >= prompts:
            return
        await trio.sleep(0.01)


async def put_away(daemon: Daemon) -> None:
    """Until the daemon put every session away (idle for :data:`IDLE` seconds, no client)
    and collected what they held."""
    with trio.move_on_after(120) as waiting:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(daemon.evict_idle, IDLE)
            while daemon.statistics().sessions or daemon.statistics().reclaim.waiting:  # noqa: ASYNC110
                await trio.sleep(0.5)
            nursery.cancel_scope.cancel()
    if waiting.cancelled_caught:
        raise RuntimeError("the sessions were not put away within 120 s")


async def measure(team: str, text: str, sessions: int, prompts: int) -> tuple[float, float]:
    """Bytes a session holds idle, and once put away, for ``sessions`` sessions of ``team``."""
    with tempfile.TemporaryDirectory(prefix="idle-session-") as directory:
        journal = open_journal(Path(directory) / "journal.db", durability=Durability.PROCESS)
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            daemon = Daemon(
                teams={team: parse_team(text, file=f"{team}.toml")},
                journal=journal,
                http=http,
                limits=Limits(idle_session=IDLE, max_sessions=sessions + 10),
            )
            assemble(daemon)
            await services.start(daemon.serve)
            # A first session warms up what every session uses once (code paths, caches).
            warm = await daemon.open_session(team)
            for prompt in range(prompts):
                await warm.prompt(f"warm up {prompt}", task_id=None)
                await answered(warm, prompt + 1)
            del warm
            await put_away(daemon)
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]

            async def converse(index: int) -> None:
                live = await daemon.open_session(team)
                for prompt in range(prompts):
                    await live.prompt(f"session {index}, prompt {prompt}", task_id=None)
                    await answered(live, prompt + 1)

            async with trio.open_nursery() as nursery:
                for index in range(sessions):
                    nursery.start_soon(converse, index)
            gc.collect()
            idle = (tracemalloc.get_traced_memory()[0] - before) / sessions
            await put_away(daemon)
            left = (tracemalloc.get_traced_memory()[0] - before) / sessions
            await daemon.stop()
            services.cancel_scope.cancel()
    return idle, left


async def main(sessions: int, prompts: int) -> None:
    tracemalloc.start()
    print(f"\nidle sessions: {sessions} of each team, {prompts} prompt(s) each\n")
    print("| team | chats a session | held idle, a session | after put away, a session |")
    print("|---|---:|---:|---:|")
    for team, text in (("echo", ECHO), ("fan", FAN)):
        idle, put_away = await measure(team, text, sessions, prompts)
        chats = 1 + (3 * prompts if team == "fan" else 0)
        print(f"| {team} | {chats} | {idle / 1024:,.1f} KB | {put_away / 1024:,.2f} KB |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--prompts", type=int, default=1)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    trio.run(main, args.sessions, args.prompts)
