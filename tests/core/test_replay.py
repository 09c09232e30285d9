"""A session's model rounds read back from its facts, and matched to a new run's requests."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from orchestrator.ahp.state import ActiveTurn, Message, MessageKind, MessageOrigin
from orchestrator.core import (
    ReplayExhaustedError,
    ReplayMismatchError,
    ReplayScript,
    RoundContext,
    TeamState,
    TextDelta,
    ToolCallRequest,
    ToolOutcome,
    UsageReport,
    recorded_rounds,
)
from tests.support.team_state import fanout_facts


def _recorded() -> tuple[TeamState, ReplayScript, list[str]]:
    facts = list(fanout_facts())
    chats = recorded_rounds(facts)
    return TeamState.fold(facts[0].session, facts), ReplayScript(chats), [c.chat for c in chats]


def _context(state: TeamState, chat: str, round_index: int, **changes: Any) -> RoundContext:
    """The context the recorded chat's first turn had at ``round_index`` (as a replayed run
    would ask it: its first turn active again)."""
    chat_state = state.chats[chat]
    turn = chat_state.turns[0]
    active = ActiveTurn(
        id=turn.id, started_at=turn.started_at or "", message=turn.message, response_parts=()
    )
    context = RoundContext(
        chat=chat,
        agent=state.members[chat].agent,
        task=state.members[chat].task,
        round_index=round_index,
        chat_state=attrs.evolve(chat_state, turns=(), active_turn=active),
    )
    return attrs.evolve(context, **changes)


class TestRecordedRounds:
    def test_each_chat_has_its_turns_rounds_and_events(self) -> None:
        """The coordinator: a round of three delegations, then the summing up; each worker
        one round of text; usage closes a round."""
        facts = list(fanout_facts())
        lead, *workers = recorded_rounds(facts)
        assert lead.agent == "lead"
        assert len(workers) == 3
        [rounds] = lead.turns
        assert len(rounds) == 2
        asked = [e for e in rounds[0].events if isinstance(e, ToolCallRequest)]
        assert [e.tool_name for e in asked] == ["delegate"] * 3
        assert [e.arguments["task"] for e in asked] == ["alpha", "beta", "gamma"]
        assert rounds[0].outcomes == ()
        assert [o.tool_name for o in rounds[1].outcomes] == ["delegate"] * 3
        assert all(o.success for o in rounds[1].outcomes)
        text = "".join(e.text for e in rounds[1].events if isinstance(e, TextDelta))
        assert text.startswith("All done:")
        for worker in workers:
            [[only]] = worker.turns
            assert any(isinstance(e, TextDelta) for e in only.events)
            assert isinstance(only.events[-1], UsageReport | TextDelta)

    def test_until_keeps_the_rounds_begun_by_then(self) -> None:
        facts = list(fanout_facts())
        # Up to the coordinator's last text: its second round has begun, not ended.
        coordinator = TeamState.fold(facts[0].session, facts).coordinator_chat()
        began = max(
            f.sequence for f in facts if f.type == "chat/responsePart" and f.channel == coordinator
        )
        lead = recorded_rounds(facts, until=began)[0]
        [rounds] = lead.turns
        assert len(rounds) == 2
        first_round_end = recorded_rounds(facts)[0].turns[0][0].last_sequence
        lead = recorded_rounds(facts, until=first_round_end)[0]
        assert len(lead.turns[0]) == 1


class TestReplayScript:
    def test_a_round_asked_as_recorded_is_answered(self) -> None:
        state, script, chats = _recorded()
        found = script.round_for(_context(state, chats[0], 0))
        assert found.events
        outcomes = list(recorded_rounds(list(fanout_facts()))[0].turns[0][1].outcomes)
        assert script.round_for(_context(state, chats[0], 1, outcomes=outcomes)).events

    def test_a_different_outcome_is_named(self) -> None:
        state, script, chats = _recorded()
        outcomes = list(recorded_rounds(list(fanout_facts()))[0].turns[0][1].outcomes)
        changed = [
            *outcomes[:-1],
            ToolOutcome(
                tool_call_id=outcomes[-1].tool_call_id,
                tool_name="delegate",
                success=False,
                output="nope",
            ),
        ]
        with pytest.raises(
            ReplayMismatchError, match="turn 1, round 2: tool outcome 3 differs in success"
        ):
            script.round_for(_context(state, chats[0], 1, outcomes=changed))

    def test_a_different_message_is_named(self) -> None:
        state, script, chats = _recorded()
        context = _context(state, chats[0], 0)
        assert context.chat_state is not None
        other = Message(text="something else", origin=MessageOrigin(kind=MessageKind.USER))
        active = context.chat_state.active_turn
        assert active is not None
        chat_state = attrs.evolve(
            context.chat_state, active_turn=attrs.evolve(active, message=other)
        )
        with pytest.raises(ReplayExhaustedError, match="no recorded chat of that agent"):
            script.round_for(attrs.evolve(context, chat_state=chat_state))

    def test_a_round_not_recorded(self) -> None:
        state, script, chats = _recorded()
        with pytest.raises(ReplayExhaustedError, match="round 3: no such round was recorded"):
            script.round_for(_context(state, chats[0], 2))
