"""Forked chats and side chats inside a running session (AHP ``createChat`` with a source)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
import trio
import trio.testing
from trio.testing import wait_all_tasks_blocked

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatInputRequestedAction,
    ChatPendingMessageRemovedAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ForkChatOrigin,
    SideChatOrigin,
    SideChatSelection,
    ToolCallResponsePart,
    ToolResultSubagentContent,
)
from orchestrator.base import RunError
from orchestrator.core import (
    Backend,
    Fact,
    ModelEvent,
    RoundContext,
    RunFinished,
    RunResumed,
    TeamState,
    build_graph,
    fact_to_json,
    turn_text,
)
from orchestrator.runtime import Ids, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, parse_team
from tests.support.runtime import Harness, every_scenario_is_checked, fanout, wait_for
from tests.support.teams import ECHO, side_team

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


SIDE_TEAM = side_team(
    '{ say = "first answer" }',
    '{ sleep = 100 }, { say = "side answer" }',
    '{ say = "third answer" }',
)


async def _side_chat(
    harness: Harness, nursery: trio.Nursery, chat: str, *, side: bool = True
) -> str:
    """A conversation whose first turn is done, and ``chat``, a side chat of it (or a fork)
    at that turn, idle; the coordinator's chat."""
    lead = await _conversation(harness, nursery, "What is up?")
    turn = harness.runtime.state.chats[lead].turns[0].id
    await harness.runtime.fork_chat(chat, source=lead, turn_id=turn, side=side)
    return lead


async def _side_chat_at_work(
    harness: Harness, nursery: trio.Nursery, chat: str, *, side: bool = True
) -> str:
    """As :func:`_side_chat`, with ``chat``'s first turn running (it sleeps)."""
    lead = await _side_chat(harness, nursery, chat, side=side)
    await harness.runtime.prompt_chat(chat, "explain that")
    await wait_for(harness, lambda f: harness.runtime.state.chats[chat].active_turn is not None)
    return lead


class TestCancel:
    @pytest.mark.parametrize("side", [True, False])
    async def test_a_forked_chats_turn_is_cancelled_alone_and_its_next_message_runs(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock, side: bool
    ) -> None:
        """``cancel_turn`` on a side chat (or fork) ends its running turn ``cancelled``; the
        coordinator and the run go on, and the message queued to it runs next."""
        harness = Harness(parse_team(SIDE_TEAM, file="side.toml"), conversation=True)
        chat = "ahp-chat:/side"
        lead = await _side_chat_at_work(harness, nursery, chat, side=side)
        await harness.runtime.prompt_chat(chat, "and then?")
        running = harness.runtime.state.chats[chat].active_turn
        assert running is not None
        before = len(harness.facts)
        harness.runtime.cancel_turn(chat)
        await _idle_after_turns(harness, chat, 2 if not side else 1)
        after = harness.facts[before:]
        cancelled = [f for f in harness.facts_of(ChatTurnCancelledAction) if f.sequence > before]
        assert [(f.channel, f.action.turn_id) for f in cancelled] == [(chat, running.id)]
        started = [f for f in harness.facts_of(ChatTurnStartedAction) if f.sequence > before]
        assert [(f.channel, f.action.message.text) for f in started] == [(chat, "and then?")]
        assert cancelled[0].sequence < started[0].sequence
        assert all(f.channel in (chat, harness.runtime.session) for f in after)
        state = harness.runtime.state
        assert [t.state.value for t in state.chats[chat].turns][-2:] == ["cancelled", "complete"]
        assert state.run is not None
        assert state.run.status is None, "the run goes on"
        assert [t.state.value for t in state.chats[lead].turns] == ["complete"]
        # The coordinator still takes its next prompt.
        await harness.runtime.queue(lead, "next")
        await _idle_after_turns(harness, lead, 2)
        with pytest.raises(RunError, match="no running turn"):
            harness.runtime.cancel_turn(chat)
        harness.runtime.close()

    async def test_disposing_of_a_side_chat_withdraws_its_queue_and_cancels_its_turn(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
    ) -> None:
        harness = Harness(parse_team(SIDE_TEAM, file="side.toml"), conversation=True)
        chat = "ahp-chat:/side"
        lead = await _side_chat_at_work(harness, nursery, chat)
        await harness.runtime.prompt_chat(chat, "queued one")
        [queued] = harness.runtime.state.chats[chat].queued_messages or ()
        running = harness.runtime.state.chats[chat].active_turn
        assert running is not None
        before = len(harness.facts)
        await harness.runtime.dispose_chat(chat)
        await wait_for(harness, lambda f: isinstance(f.action, ChatTurnCancelledAction))
        await trio.sleep(1)
        after = harness.facts[before:]
        assert [(f.channel, type(f.action)) for f in after if f.channel == chat] == [
            (chat, ChatPendingMessageRemovedAction),
            (chat, ChatTurnCancelledAction),
        ]
        removed = next(
            f.action for f in after if isinstance(f.action, ChatPendingMessageRemovedAction)
        )
        assert removed.id == queued.id
        state = harness.runtime.state
        assert state.chats[chat].active_turn is None
        assert not state.chats[chat].queued_messages
        assert state.run is not None
        assert state.run.status is None
        assert [t.state.value for t in state.chats[lead].turns] == ["complete"]
        with pytest.raises(RunError, match="not a forked chat"):
            await harness.runtime.dispose_chat(lead)
        harness.runtime.close()

    async def test_a_chat_disposed_of_as_soon_as_it_is_prompted_runs_no_turn(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
    ) -> None:
        """``disposeChat`` right after a message to an idle side chat, before its task has
        begun: the message's turn never starts (it used to run, the dispose finding no turn
        to cancel); a message sent afterwards runs as usual."""
        harness = Harness(parse_team(SIDE_TEAM, file="side.toml"), conversation=True)
        chat = "ahp-chat:/side"
        await _side_chat(harness, nursery, chat)
        await harness.runtime.prompt_chat(chat, "never mind")
        await harness.runtime.dispose_chat(chat)
        await trio.sleep(5)
        assert harness.runtime.state.chats[chat].turns == ()
        assert not any("never mind" in fact_to_json(f) for f in harness.facts)
        await harness.runtime.prompt_chat(chat, "explain that")
        await wait_for(harness, lambda f: bool(harness.runtime.state.chats[chat].turns))
        [asked] = harness.runtime.state.chats[chat].turns
        assert asked.message.text == "explain that"
        harness.runtime.close()


def _restarted(harness: Harness, facts: list[Fact], backends: Heard) -> Harness:
    """A second process's runtime on ``facts`` (what the first had made durable)."""
    restarted = Harness(harness.runtime.team, conversation=True)
    restarted.log.facts.extend(facts)
    restarted.runtime = TeamRuntime(
        harness.runtime.team,
        backends=backends,
        factlog=restarted.log,
        ids=Ids(deterministic=True, restart=1),
        clock=lambda: "2026-11-22T00:00:00.000Z",
        state=TeamState.fold(harness.runtime.session, facts),
        conversation=True,
    )
    return restarted


class TestRestart:
    async def test_a_side_chats_turn_cut_off_runs_again_with_its_context(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A stop mid-turn: the recovery ends the side chat's turn interrupted (named in
        ``team/runResumed``), and its turn runs again, given the same context as before."""
        heard = Heard()
        harness = Harness(
            parse_team(SIDE_TEAM, file="side.toml"), backends=heard, conversation=True
        )
        chat = "ahp-chat:/side"
        lead = await _side_chat_at_work(harness, nursery, chat)
        durable = list(harness.facts)
        cut = harness.runtime.state.chats[chat].active_turn
        assert cut is not None
        harness.runtime.cancel()  # the first process is gone: what it writes now is not read

        again = Heard()
        restarted = _restarted(harness, durable, again)
        nursery.start_soon(restarted.runtime.resume)
        await _idle_after_turns(restarted, chat, 1)
        after = restarted.facts[len(durable) :]
        [resumed] = [f.action for f in after if isinstance(f.action, RunResumed)]
        assert resumed.interrupted == (chat,)
        durable_count = len(durable)
        [error] = [f for f in restarted.facts_of(ChatErrorAction) if f.sequence > durable_count]
        assert (error.channel, error.action.turn_id) == (chat, cut.id)
        assert error.action.error.error_type == "Interrupted"
        [rerun] = [
            f for f in restarted.facts_of(ChatTurnStartedAction) if f.sequence > durable_count
        ]
        assert rerun.channel == chat
        assert rerun.action.message.text == "explain that"
        assert error.sequence < rerun.sequence
        side = restarted.runtime.state.chats[chat]
        assert [t.state.value for t in side.turns] == ["error", "complete"]
        assert turn_text(side.turns[-1]) == "side answer"
        # The same context as before the stop, read from the journal.
        assert again.histories[chat][0] == heard.histories[chat][0]
        assert again.histories[chat][0][:2] == (
            ("user", "What is up?"),
            ("assistant", "first answer"),
        )
        assert (
            restarted.runtime.state.chats[lead].turns == harness.runtime.state.chats[lead].turns[:1]
        )
        restarted.runtime.close()

    async def test_a_side_chat_keeps_the_context_it_was_given_at_a_running_turn(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A side chat opened at its source's running turn is given that turn as it stood;
        its model reads that, after the source's turn went on, and after a restart."""
        team = """
[team]
name = "running"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "so far" }, { sleep = 50 }, { say = ", and the rest" } ]
[[agents.lead.turns]]
steps = [ { say = "side answer" } ]
"""
        heard = Heard()
        harness = Harness(parse_team(team, file="running.toml"), backends=heard, conversation=True)
        nursery.start_soon(harness.runtime.run, "Tell me")
        await wait_for(harness, lambda f: "so far" in str(f.action))
        lead = harness.runtime.state.coordinator_chat()
        assert lead is not None
        active = harness.runtime.state.chats[lead].active_turn
        assert active is not None
        chat = "ahp-chat:/side"
        await harness.runtime.fork_chat(chat, source=lead, turn_id=active.id, side=True)
        given = (("user", "Tell me"), ("assistant", "so far"))
        assert harness.runtime.state.members[chat].context == given
        await _idle_after_turns(harness, lead, 1)  # the source's turn went on
        await harness.runtime.prompt_chat(chat, "why?")
        await _idle_after_turns(harness, chat, 1)
        assert heard.histories[chat][0] == (*given, ("user", "why?"))
        harness.runtime.close()
        # A restart (the run was left unfinished): the context comes from the journal.
        facts = [f for f in harness.facts if not isinstance(f.action, RunFinished)]
        again = Heard()
        restarted = _restarted(harness, facts, again)
        nursery.start_soon(restarted.runtime.resume)
        await wait_for(restarted, lambda f: isinstance(f.action, RunResumed))
        await restarted.runtime.prompt_chat(chat, "and?")
        await _idle_after_turns(restarted, chat, 2)
        assert again.histories[chat][0][:2] == given
        restarted.runtime.close()

    async def test_a_side_chats_turn_parked_on_a_question_goes_on_after_a_restart(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A stop while a side chat's turn waits for the user's answer: the recovery cuts
        nothing off; the same turn takes the answer after the restart and ends complete."""
        team = """
[team]
name = "asking"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask"]
[[agents.lead.turns]]
steps = [ { say = "first answer" } ]
[[agents.lead.turns]]
steps = [ { ask = "Which one?" }, { say = "Picked {outcomes}" } ]
"""
        harness = Harness(parse_team(team, file="asking.toml"), conversation=True)
        chat = "ahp-chat:/side"
        await _side_chat(harness, nursery, chat)
        await harness.runtime.prompt_chat(chat, "choose")
        asked = await wait_for(harness, lambda f: isinstance(f.action, ChatInputRequestedAction))
        assert asked.channel == chat
        assert isinstance(asked.action, ChatInputRequestedAction)
        durable = list(harness.facts)
        parked = harness.runtime.state.chats[chat].active_turn
        assert parked is not None
        harness.runtime.cancel()

        restarted = _restarted(harness, durable, Heard())
        nursery.start_soon(restarted.runtime.resume)
        await wait_for(restarted, lambda f: isinstance(f.action, RunResumed))
        [resumed] = restarted.actions(RunResumed)
        assert resumed.interrupted == ()
        assert not restarted.actions(ChatErrorAction)
        await wait_all_tasks_blocked()
        await restarted.runtime.answer_input(chat, asked.action.request.id, "the red one")
        await _idle_after_turns(restarted, chat, 1)
        side = restarted.runtime.state.chats[chat]
        [done] = side.turns
        assert done.id == parked.id
        assert done.state.value == "complete"
        assert turn_text(done).startswith("Picked")
        assert "the red one" in turn_text(done)
        restarted.runtime.close()

    async def test_a_message_queued_before_the_stop_runs_once_after_it(
        self, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Two messages sent to a new side chat at once: the second is queued (durable)
        before the first's turn starts. A stop then (the first was never durable) leaves the
        queued one: after the restart it runs, once, as the chat's first turn."""
        heard = Heard()
        harness = Harness(
            parse_team(SIDE_TEAM, file="side.toml"), backends=heard, conversation=True
        )
        chat = "ahp-chat:/side"
        await _side_chat(harness, nursery, chat)
        await harness.runtime.prompt_chat(chat, "first")
        await harness.runtime.prompt_chat(chat, "second")
        started = await wait_for(
            harness,
            lambda f: f.channel == chat and isinstance(f.action, ChatTurnStartedAction),
        )
        durable = harness.facts[: started.sequence - 1]
        [queued] = (
            TeamState.fold(harness.runtime.session, durable).chats[chat].queued_messages or ()
        )
        assert queued.message.text == "second"
        harness.runtime.cancel()

        restarted = _restarted(harness, durable, Heard())
        nursery.start_soon(restarted.runtime.resume)
        await _idle_after_turns(restarted, chat, 1)
        await wait_all_tasks_blocked()
        side = restarted.runtime.state.chats[chat]
        assert [t.message.text for t in side.turns] == ["second"]
        assert side.active_turn is None
        assert not side.queued_messages
        starts = [f for f in restarted.facts_of(ChatTurnStartedAction) if f.channel == chat]
        assert [f.action.queued_message_id for f in starts] == [queued.id]
        restarted.runtime.close()
