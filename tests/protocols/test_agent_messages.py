"""A finished turn as the agent channel's history, and the facts that undo, truncate and
restore a chat's turns. Chats are built from facts (``tests/support/scenarios.Log``) and
folded by the AHP chat reducer, as the journal does."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp import reduce_chat
from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatPendingMessageSetAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallReadyAction,
    ChatTruncatedAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import (
    ChatState,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessageKind,
    ReasoningResponsePart,
    SessionStatus,
)
from orchestrator.base import RunError
from orchestrator.core import Fact
from orchestrator.protocols import (
    restore_actions,
    truncate_action,
    turn_from_facts,
    turn_messages,
    undo_action,
)
from tests.support.examples import examples
from tests.support.scenarios import LEAD, Log


def folded(facts: Iterable[Fact], chat: str = LEAD) -> ChatState:
    """The chat as the journal folds its facts."""
    state = ChatState(resource=chat, title="", status=SessionStatus.IDLE, modified_at="", turns=())
    for fact in facts:
        if fact.channel == chat:
            state = reduce_chat(state, fact.action, now=fact.at)  # type: ignore[arg-type]
    return state


def chat_of_turns(*answers: str) -> Log:
    """A chat with one finished turn per answer, turn-1 first."""
    log = Log()
    for answer in answers:
        log.turn(LEAD, f"ask {answer}")
        log.say(LEAD, answer)
        log.end_turn(LEAD)
    return log


def reason(log: Log, text: str) -> None:
    turn = log.active_turn[LEAD]
    part = ReasoningResponsePart(id="thought", content="")
    log.add(LEAD, ChatResponsePartAction(turn_id=turn, part=part))
    log.add(LEAD, ChatReasoningAction(turn_id=turn, part_id="thought", content=text))


class TestTurnMessages:
    def test_a_finished_turn_in_order_then_its_result_and_done(self) -> None:
        log = Log()
        log.turn(LEAD, "Ship it")
        reason(log, "first, search")
        call = log.tool_call(LEAD, "search")
        log.complete_call(LEAD, call)
        log.say(LEAD, "shipped")
        log.end_turn(LEAD)
        turn = folded(log.facts).turns[-1]
        assert turn_messages(turn) == [
            {"channel": "agent", "type": "prompt", "prompt": "Ship it"},
            {"channel": "agent", "type": "thinking", "content": "first, search"},
            {
                "channel": "agent",
                "type": "tool_invocation",
                "toolCallId": call,
                "toolName": "search",
                "args": {},
            },
            {"channel": "agent", "type": "tool_result", "toolCallId": call, "result": "done"},
            {"channel": "agent", "type": "text", "content": "shipped "},
            {"channel": "agent", "type": "result", "summary": "shipped "},
            {"channel": "agent", "type": "done"},
        ]

    def test_a_failed_turn_ends_with_its_error(self) -> None:
        log = Log()
        log.turn(LEAD)
        log.say(LEAD, "trying")
        log.fail_turn(LEAD)
        events = turn_messages(folded(log.facts).turns[-1])
        assert [e["type"] for e in events] == ["prompt", "text", "error", "done"]
        assert events[-2]["message"] == "model unavailable"

    def test_a_cancelled_turn_ends_with_its_state_and_its_calls_cancelled(self) -> None:
        log = Log()
        log.turn(LEAD)
        call = log.tool_call(LEAD, "search")
        log.cancel_turn(LEAD)
        events = turn_messages(folded(log.facts).turns[-1])
        assert events[-2:] == [
            {"channel": "agent", "type": "error", "message": "cancelled"},
            {"channel": "agent", "type": "done"},
        ]
        [result] = [e for e in events if e["type"] == "tool_result"]
        assert result["toolCallId"] == call
        assert result["result"].startswith("cancelled: ")

    @pytest.mark.parametrize(
        ("tool_input", "args"),
        [
            ('{"q": "launch", "n": 2}', {"q": "launch", "n": 2}),
            ("not json", {"input": "not json"}),
            ("[" * 5000, {"input": "[" * 5000}),
        ],
    )
    def test_tool_input_is_its_json_or_kept_as_text(self, tool_input: str, args: object) -> None:
        log = Log()
        turn = log.turn(LEAD)
        call = log.tool_call(LEAD, "search")
        [ready] = [f for f in log.facts if isinstance(f.action, ChatToolCallReadyAction)]
        log.facts[log.facts.index(ready)] = Fact(
            sequence=ready.sequence,
            session=ready.session,
            channel=ready.channel,
            at=ready.at,
            action=ChatToolCallReadyAction(
                turn_id=turn, tool_call_id=call, invocation_message="", tool_input=tool_input
            ),
        )
        log.complete_call(LEAD, call)
        log.end_turn(LEAD)
        [invocation] = [
            e for e in turn_messages(folded(log.facts).turns[-1]) if e["type"] == "tool_invocation"
        ]
        assert invocation["args"] == args


class TestTurnFromFacts:
    @settings(max_examples=examples(50))
    @given(
        pieces=st.lists(st.text("ab é\n", min_size=1, max_size=4), min_size=1, max_size=12),
        thoughts=st.lists(st.text("xy ", min_size=1, max_size=3), max_size=5),
    )
    def test_a_streamed_turn_is_the_turn_its_facts_fold_to(
        self, pieces: list[str], thoughts: list[str]
    ) -> None:
        """Runs of deltas are merged before folding: the turn is the same as folding each."""
        log = Log()
        turn = log.turn(LEAD)
        if thoughts:
            reason(log, thoughts[0])
            for thought in thoughts[1:]:
                log.add(LEAD, ChatReasoningAction(turn_id=turn, part_id="thought", content=thought))
        part = MarkdownResponsePart(id="answer", content="")
        log.add(LEAD, ChatResponsePartAction(turn_id=turn, part=part))
        for piece in pieces:
            log.add(LEAD, ChatDeltaAction(turn_id=turn, part_id="answer", content=piece))
        log.end_turn(LEAD)
        assert turn_from_facts(LEAD, log.facts) == folded(log.facts).turns[-1]

    def test_the_last_turn_of_the_chat_named(self) -> None:
        log = chat_of_turns("one", "two")
        last = turn_from_facts(LEAD, log.facts)
        assert last is not None
        assert (last.id, last.message.text) == ("turn-2", "ask two")

    def test_no_turn_is_none(self) -> None:
        assert turn_from_facts(LEAD, []) is None
        assert turn_from_facts("ahp-chat:/other", chat_of_turns("one").facts) is None


class TestUndoAndTruncate:
    def test_undo_keeps_the_turn_before_the_last(self) -> None:
        chat = folded(chat_of_turns("one", "two", "three").facts)
        assert undo_action(chat) == ChatTruncatedAction(turn_id="turn-2")

    def test_undo_of_the_only_turn_keeps_none(self) -> None:
        assert undo_action(folded(chat_of_turns("one").facts)) == ChatTruncatedAction(turn_id=None)

    def test_undo_without_turns_is_refused(self) -> None:
        with pytest.raises(RunError, match=f"^{LEAD} has no turn to undo$"):
            undo_action(folded([]))

    def test_truncate_keeps_up_to_the_turn_named(self) -> None:
        chat = folded(chat_of_turns("one", "two", "three").facts)
        assert truncate_action(chat, "turn-1") == ChatTruncatedAction(turn_id="turn-1")
        assert truncate_action(chat, None) == ChatTruncatedAction(turn_id=None)

    @pytest.mark.parametrize(
        ("keep", "message"),
        [
            ("turn-9", "has no turn 'turn-9' (its turns: turn-1, turn-2)"),
            ("turn-2", "has no turn after turn-2 to remove"),
        ],
    )
    def test_truncate_that_removes_nothing_is_refused(self, keep: str, message: str) -> None:
        chat = folded(chat_of_turns("one", "two").facts)
        with pytest.raises(RunError) as caught:
            truncate_action(chat, keep)
        assert str(caught.value) == f"{LEAD} {message}"

    def test_truncating_an_empty_chat_is_refused(self) -> None:
        with pytest.raises(RunError, match="has no turn after the start to remove"):
            truncate_action(folded([]), None)

    def test_history_does_not_change_under_a_running_turn(self) -> None:
        log = chat_of_turns("one")
        log.turn(LEAD)
        chat = folded(log.facts)
        with pytest.raises(RunError, match="has a turn running"):
            undo_action(chat)
        with pytest.raises(RunError, match="has a turn running"):
            truncate_action(chat, None)
        with pytest.raises(RunError, match="has a turn running"):
            restore_actions(chat, log.facts)


def truncated(log: Log, action: ChatTruncatedAction) -> ChatState:
    log.add(LEAD, action)
    return folded(log.facts)


class TestRestore:
    def test_restore_brings_back_the_turns_the_last_cut_removed(self) -> None:
        log = chat_of_turns("one", "two", "three")
        chat = truncated(log, truncate_action(folded(log.facts), "turn-1"))
        assert [t.id for t in chat.turns] == ["turn-1"]
        actions = restore_actions(chat, log.facts)
        assert [a.turn_id for a in actions if isinstance(a, ChatTurnStartedAction)] == [
            "turn-2",
            "turn-3",
        ]
        for action in actions:
            log.add(LEAD, action)
        restored = folded(log.facts)
        assert [t.id for t in restored.turns] == ["turn-1", "turn-2", "turn-3"]
        assert restored.turns == folded(chat_of_turns("one", "two", "three").facts).turns

    def test_a_turn_restored_twice_comes_back_once(self) -> None:
        """Undo, restore, undo, restore: the turn's latest run is the one taken."""
        log = chat_of_turns("one", "two")
        for _ in range(2):
            chat = truncated(log, undo_action(folded(log.facts)))
            for action in restore_actions(chat, log.facts):
                log.add(LEAD, action)
        assert [t.id for t in folded(log.facts).turns] == ["turn-1", "turn-2"]

    def test_what_is_not_of_a_turn_is_not_replayed(self) -> None:
        """A pending message set between the turns stays out of the restore."""
        log = chat_of_turns("one")
        message = Message(text="later", origin=MessageOrigin(kind=MessageKind.USER))
        log.add(
            LEAD,
            ChatPendingMessageSetAction(
                kind=PendingMessageKind.QUEUED, id="queued-1", message=message
            ),
        )
        chat = truncated(log, undo_action(folded(log.facts)))
        actions = restore_actions(chat, log.facts)
        assert not any(isinstance(a, ChatPendingMessageSetAction) for a in actions)
        assert isinstance(actions[0], ChatTurnStartedAction)

    def test_a_chat_never_cut_has_nothing_to_restore(self) -> None:
        log = chat_of_turns("one")
        with pytest.raises(RunError, match="has nothing to restore: its history was never cut"):
            restore_actions(folded(log.facts), log.facts)

    def test_a_chat_that_moved_on_since_the_cut_is_refused(self) -> None:
        log = chat_of_turns("one", "two")
        truncated(log, undo_action(folded(log.facts)))
        log.turn(LEAD, "new")
        log.say(LEAD, "newer")
        log.end_turn(LEAD)
        cut = next(f for f in log.facts if isinstance(f.action, ChatTruncatedAction))
        with pytest.raises(RunError) as caught:
            restore_actions(folded(log.facts), log.facts)
        assert str(caught.value) == (
            f"{LEAD} has moved on since its history was cut at sequence {cut.sequence}: "
            "restoring would put old turns after new ones"
        )
