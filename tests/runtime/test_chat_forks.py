"""Forked chats and side chats inside a running session (AHP ``createChat`` with a source)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import ChatTurnCompleteAction, SessionChatAddedAction
from orchestrator.ahp.state import (
    ForkChatOrigin,
    SideChatOrigin,
    SideChatSelection,
    ToolCallResponsePart,
    ToolResultSubagentContent,
)
from orchestrator.base import RunError
from orchestrator.core import Backend, ModelEvent, RoundContext, build_graph
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, parse_team
from tests.support.runtime import Harness, every_scenario_is_checked, fanout, wait_for
from tests.support.teams import ECHO

__all__ = ["every_scenario_is_checked"]
pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


class Heard:
    """Scripted backends that note the conversation each round of each chat was given."""

    def __init__(self) -> None:
        self.histories: dict[str, list[tuple[tuple[str, str], ...]]] = {}

    def __call__(self, agent: AgentSpec) -> Backend:
        inner = ScriptedBackend(agent)
        heard = self

        class _Backend:
            def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
                heard.histories.setdefault(context.chat, []).append(tuple(context.history))
                return inner.stream_round(context)

        return _Backend()


async def _idle_after_turns(harness: Harness, chat: str | None, count: int) -> None:
    await wait_for(
        harness,
        lambda f: (
            sum(
                1
                for g in harness.facts
                if isinstance(g.action, ChatTurnCompleteAction)
                and (chat is None or g.channel == chat)
            )
            >= count
        ),
    )


async def _conversation(harness: Harness, nursery: trio.Nursery, prompt: str = "Ship it") -> str:
    nursery.start_soon(harness.runtime.run, prompt)
    await wait_for(harness, lambda f: harness.runtime.state.coordinator_chat() is not None)
    coordinator = harness.runtime.state.coordinator_chat()
    assert coordinator is not None
    await _idle_after_turns(harness, coordinator, 1)
    return coordinator


def _added(harness: Harness, chat: str) -> SessionChatAddedAction:
    return next(a for a in harness.actions(SessionChatAddedAction) if a.summary.resource == chat)


class TestForkedChat:
    async def test_a_fork_copies_the_turns_through_the_one_named_and_runs_on(
        self, nursery: trio.Nursery
    ) -> None:
        """The fork's visible history is the source's through the turn; its worker spawns
        are kept as results without their subagent content; its next turn is the source
        agent's, and the graph draws a forked edge."""
        harness = Harness(fanout(), conversation=True)
        lead = await _conversation(harness, nursery)
        source = harness.runtime.state.chats[lead]
        turn = source.turns[0].id
        await harness.runtime.fork_chat("ahp-chat:/fork-1", source=lead, turn_id=turn)
        fork = harness.runtime.state.chats["ahp-chat:/fork-1"]
        assert fork.origin == ForkChatOrigin(chat=lead, turn_id=turn)
        assert [t.id for t in fork.turns] == [turn]
        assert fork.turns[0].message == source.turns[0].message
        calls = [p for p in fork.turns[0].response_parts if isinstance(p, ToolCallResponsePart)]
        assert calls
        assert all(
            not isinstance(c, ToolResultSubagentContent)
            for p in calls
            for c in (getattr(p.tool_call, "content", None) or ())
        )
        assert harness.runtime.state.members["ahp-chat:/fork-1"].agent == "lead"
        await harness.runtime.prompt_chat("ahp-chat:/fork-1", "again, please")
        await _idle_after_turns(harness, "ahp-chat:/fork-1", 2)
        fork = harness.runtime.state.chats["ahp-chat:/fork-1"]
        assert fork.turns[-1].message.text == "again, please"
        graph = build_graph(harness.facts)
        assert graph.graph.has_edge(lead, "ahp-chat:/fork-1", key="forked")
        # The source is not touched by its fork.
        assert harness.runtime.state.chats[lead].turns == source.turns
        harness.runtime.close()

    async def test_a_fork_names_a_completed_turn_of_a_chat_of_the_session(
        self, nursery: trio.Nursery
    ) -> None:
        harness = Harness(parse_team(ECHO, file="echo.toml"), conversation=True)
        lead = await _conversation(harness, nursery)
        facts = len(harness.facts)
        with pytest.raises(RunError, match="has no turn 'nope'"):
            await harness.runtime.fork_chat("ahp-chat:/f", source=lead, turn_id="nope")
        with pytest.raises(RunError, match="no chat ahp-chat:/other"):
            await harness.runtime.fork_chat("ahp-chat:/f", source="ahp-chat:/other", turn_id="t")
        with pytest.raises(RunError, match="exists already"):
            await harness.runtime.fork_chat(lead, source=lead, turn_id="t")
        with pytest.raises(RunError, match="not a forked chat"):
            await harness.runtime.prompt_chat(lead, "hello")
        assert len(harness.facts) == facts  # nothing recorded
        harness.runtime.close()


SLOW_SECOND = """
[team]
name = "slow-second"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "first answer" } ]
[[agents.lead.turns]]
steps = [ { sleep = 100 }, { say = "late answer" } ]
"""


class TestEnd:
    @pytest.mark.parametrize("end", ["end_conversation", "cancel"])
    async def test_a_forked_chat_at_work_ends_with_its_session(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock, end: str
    ) -> None:
        """Its running turn is cancelled when the session ends; the log stays consistent
        (the fixture folds and checks it) and the run ends cancelled."""
        harness = Harness(parse_team(SLOW_SECOND, file="slow.toml"), conversation=True)
        done = trio.Event()
        outcomes = []

        async def run() -> None:
            outcomes.append(await harness.runtime.run("go"))
            done.set()

        nursery.start_soon(run)
        await wait_for(harness, lambda f: harness.runtime.state.coordinator_chat() is not None)
        lead = harness.runtime.state.coordinator_chat()
        assert lead is not None
        await _idle_after_turns(harness, lead, 1)
        turn = harness.runtime.state.chats[lead].turns[0].id
        await harness.runtime.fork_chat("ahp-chat:/fork", source=lead, turn_id=turn)
        await harness.runtime.prompt_chat("ahp-chat:/fork", "and then?")
        await wait_for(
            harness,
            lambda f: harness.runtime.state.chats["ahp-chat:/fork"].active_turn is not None,
        )
        await harness.runtime.prompt_chat("ahp-chat:/fork", "queued while it runs")
        assert harness.runtime.state.chats["ahp-chat:/fork"].queued_messages
        getattr(harness.runtime, end)()
        await done.wait()
        [outcome] = outcomes
        assert outcome.status.value == "cancelled"
        fork = harness.runtime.state.chats["ahp-chat:/fork"]
        assert fork.active_turn is None
        assert fork.turns[-1].state.value == "cancelled"
        with pytest.raises(RunError, match="not running"):
            await harness.runtime.prompt_chat("ahp-chat:/fork", "too late")


class TestSideChat:
    async def test_a_side_chat_reads_its_source_as_context_not_as_history(
        self, nursery: trio.Nursery
    ) -> None:
        heard = Heard()
        harness = Harness(parse_team(ECHO, file="echo.toml"), backends=heard, conversation=True)
        lead = await _conversation(harness, nursery, "What is up?")
        turn = harness.runtime.state.chats[lead].turns[0].id
        selection = SideChatSelection(text="first answer")
        await harness.runtime.fork_chat(
            "ahp-chat:/side", source=lead, turn_id=turn, side=True, selection=selection
        )
        side = harness.runtime.state.chats["ahp-chat:/side"]
        assert side.turns == ()
        assert side.origin == SideChatOrigin(chat=lead, turn_id=turn, selection=selection)
        assert _added(harness, "ahp-chat:/side").summary.origin == side.origin
        await harness.runtime.prompt_chat("ahp-chat:/side", "explain that")
        await _idle_after_turns(harness, "ahp-chat:/side", 1)
        assert heard.histories["ahp-chat:/side"][0] == (
            ("user", "What is up?"),
            ("assistant", "first answer"),
            ("user", "About this part of the conversation:\n\nfirst answer"),
            ("user", "explain that"),
        )
        side = harness.runtime.state.chats["ahp-chat:/side"]
        assert [t.message.text for t in side.turns] == ["explain that"]
        harness.runtime.close()
