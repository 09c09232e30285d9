"""A three-worker fan-out's facts, and generated batches of actions to fold onto its state."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import trio
from hypothesis import strategies as st

from orchestrator.ahp.actions import UnknownAction
from orchestrator.core import Action, Fact, TaskCreated, TaskStatus, TeamState, decode_fact
from orchestrator.runtime import TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from tests.support.runtime import fanout
from tests.support.strategies import state_actions, team_actions


@functools.cache
def fanout_facts() -> tuple[Fact, ...]:
    """Every fact of a three-worker fan-out, as a reader sees them."""

    async def run() -> list[Fact]:
        runtime = TeamRuntime(fanout(budget=2), backends=ScriptedBackend)
        subscription = runtime.bus.subscribe("test", buffer_size=float("inf"))
        facts: list[Fact] = []

        async def read() -> None:
            facts.extend([fact async for fact in subscription])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            await runtime.run("Ship it")
            runtime.bus.close()
        return facts

    return tuple(trio.run(run))


def assert_same(fast: TeamState, slow: TeamState) -> None:
    assert fast.last_sequence == slow.last_sequence
    assert fast.session == slow.session
    assert fast.run == slow.run
    assert fast.chats == slow.chats
    assert fast.members == slow.members
    assert fast.tasks == slow.tasks
    assert fast.approvals == slow.approvals
    for status in TaskStatus:
        assert fast._delegated[status] == slow._delegated[status]
    for chat in fast.members:
        assert fast.member_status(chat) == slow.member_status(chat)


NOW = "2026-01-02T03:04:05.000Z"


@st.composite
def batches(draw: st.DrawFn) -> tuple[int, list[list[tuple[str, Action]]]]:
    """A prefix length of the fan-out's log, and batches of generated actions to fold onto
    the state it leaves: team actions about its tasks, chats and approvals (and unknown
    ones), chat and session actions, on the session, its chats or a chat that does not
    exist."""
    facts = fanout_facts()
    session = facts[0].session
    chats = sorted({f.channel for f in facts if f.channel.startswith("ahp-chat:")})
    tasks = sorted({f.action.task for f in facts if isinstance(f.action, TaskCreated)})
    prefix = draw(st.integers(0, len(facts)))
    channels = st.sampled_from([session, *chats, "ahp-chat:/no-such-chat"])
    generated = team_actions(
        tasks=["task-1", *tasks, "task-new"],
        chats=[*chats, "ahp-chat:/no-such-chat"],
    )
    unknown_team = st.builds(
        lambda name: UnknownAction(raw={"type": f"team/{name}"}), st.sampled_from(["x", "y"])
    )
    # Mostly team actions, mostly alone: one refused action refuses its whole batch.
    actions: st.SearchStrategy[Any] = st.one_of(
        generated, generated, generated, generated, unknown_team, state_actions()
    )
    drawn = draw(
        st.lists(st.lists(st.tuples(channels, actions), min_size=1, max_size=2), max_size=10)
    )
    return prefix, drawn


#: A three-worker fan-out's facts as a journal before issue 35 stored them: each batch's
#: ``session/chatUpdated`` facts recorded (written by the code of that time, main at e438b06).
BEFORE_35 = Path(__file__).parent / "journals" / "fanout-before-35.jsonl"


@functools.cache
def facts_before_35() -> tuple[Fact, ...]:
    """The facts of :data:`BEFORE_35`, decoded as a journal's reader decodes them."""
    lines = BEFORE_35.read_text(encoding="utf-8").splitlines()
    return tuple(decode_fact(json.loads(line)) for line in lines)
