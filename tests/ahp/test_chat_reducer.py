"""The chat reducer, turn by turn: the turn table, what a turn's start and end do to the chat
and its tool calls, and the parts a change shares.

The shared fixtures (``test_reducer_fixtures.py``) pin the reducer's output; these tests pin
what the fixtures cannot, and that a refused or ignored action leaves the state untouched (the
very same object). The tool-call table's tests are in ``test_tool_call_lifecycle.py``, the
validator's in ``test_validate.py``.
"""

from __future__ import annotations

import attrs
import pytest

from orchestrator.ahp import (
    TOOL_CALL_TRANSITIONS,
    TURN_TRANSITIONS,
    ToolCallEvent,
    ToolCallStatus,
    TurnPhase,
    reduce_chat,
    validate_chat_action,
)
from orchestrator.ahp.actions import (
    ChatAction,
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatToolCallStartAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    ChatUsageAction,
)
from orchestrator.ahp.state import (
    ChatInputBooleanQuestion,
    ChatInputRequest,
    ChatInputResponseKind,
    ChatInputSkipped,
    ErrorInfo,
    InputRequestResponsePart,
    MarkdownResponsePart,
    SessionStatus,
    ToolCallCancellationReason,
    ToolCallCancelledState,
    ToolCallResponsePart,
    Turn,
    TurnState,
    UsageInfo,
)
from tests.support.ahp_chats import (
    _IDS,
    ACTIONS,
    BEFORE,
    CHANNEL,
    HELLO,
    NOW,
    TOOL_CALLS,
    TURN,
    active_turn,
    chat,
    refusal,
    with_tool_call,
)

# ─── Samples: one tool call per status, one action per event ─────────────────


class TestTurnLifecycle:
    TURN_SCOPED: tuple[ChatAction, ...] = (
        ChatDeltaAction(turn_id=TURN, part_id="md-1", content="x"),
        ChatUsageAction(turn_id=TURN, usage=UsageInfo(input_tokens=1)),
        ChatTurnCompleteAction(turn_id=TURN, duration=1),
        ChatToolCallStartAction(**_IDS, tool_name="search", display_name="Search"),
        ChatInputCompletedAction(request_id="r-1", response=ChatInputResponseKind.ACCEPT),
        ACTIONS[ToolCallEvent.APPROVED],
    )

    def test_table_rows(self) -> None:
        """Only turnStarted leaves idle; the three endings return to it."""
        assert dict(TURN_TRANSITIONS[TurnPhase.IDLE]) == {"chat/turnStarted": TurnPhase.ACTIVE}
        endings = {k for k, v in TURN_TRANSITIONS[TurnPhase.ACTIVE].items() if v is TurnPhase.IDLE}
        assert endings == {"chat/turnComplete", "chat/turnCancelled", "chat/error"}

    @pytest.mark.parametrize("action", TURN_SCOPED, ids=lambda a: a.type)
    def test_turn_scoped_action_without_active_turn_is_refused(self, action: ChatAction) -> None:
        """With no active turn, every action that needs one is refused, state "no active turn"."""
        state = chat(active=False)
        error = refusal(state, action)
        assert error.state == "no active turn"
        assert reduce_chat(state, action, now=NOW) is state

    @pytest.mark.parametrize(
        "action", [a for a in TURN_SCOPED if hasattr(a, "turn_id")], ids=lambda a: a.type
    )
    def test_stale_turn_id_is_refused(self, action: ChatAction) -> None:
        """An action for a turn that is not the active one is refused and ignored."""
        state = attrs.evolve(chat(), active_turn=attrs.evolve(active_turn(chat()), id="turn-2"))
        error = refusal(state, action)
        assert error.reason == "turn 'turn-1' is not the active turn"
        assert error.state == "turn 'turn-2' active"
        assert reduce_chat(state, action, now=NOW) is state

    def test_new_turn_while_one_is_active_is_refused(self) -> None:
        """The reducer would replace the active turn (upstream does); the validator refuses."""
        action = ChatTurnStartedAction(turn_id="turn-2", started_at=NOW, message=HELLO)
        error = refusal(chat(), action)
        assert "still active" in error.reason

    def test_reused_turn_id_is_refused(self) -> None:
        """A turn id already in the history cannot start again."""
        done = Turn(id=TURN, message=HELLO, response_parts=(), state=TurnState.COMPLETE)
        state = chat(active=False, turns=(done,))
        action = ChatTurnStartedAction(turn_id=TURN, started_at=NOW, message=HELLO)
        assert "already used" in refusal(state, action).reason

    def test_turn_start_clears_read_and_keeps_other_flags(self) -> None:
        """A new turn: in progress, no longer read, archived and unknown bits kept."""
        flags = SessionStatus.IS_READ | SessionStatus.IS_ARCHIVED | SessionStatus(1 << 12)
        state = attrs.evolve(chat(active=False), status=SessionStatus.IDLE | flags)
        action = ChatTurnStartedAction(turn_id="turn-2", started_at=NOW, message=HELLO)
        validate_chat_action(state, action, channel=CHANNEL)
        after = reduce_chat(state, action, now=NOW)
        assert int(after.status) == int(SessionStatus.IN_PROGRESS | SessionStatus.IS_ARCHIVED) | (
            1 << 12
        )
        assert after.modified_at == NOW

    @pytest.mark.parametrize("status", [s for s, row in TOOL_CALL_TRANSITIONS.items() if row])
    def test_turn_end_cancels_non_terminal_tool_calls(self, status: ToolCallStatus) -> None:
        """Every tool call not yet terminal is cancelled (skipped) when its turn completes."""
        state = with_tool_call(TOOL_CALLS[status])
        after = reduce_chat(state, ChatTurnCompleteAction(turn_id=TURN, duration=-3), now=NOW)
        (turn,) = after.turns
        assert turn.duration == 0
        (part,) = turn.response_parts
        assert isinstance(part, ToolCallResponsePart)
        assert isinstance(part.tool_call, ToolCallCancelledState)
        assert part.tool_call.reason is ToolCallCancellationReason.SKIPPED
        assert after.status == SessionStatus.IDLE
        assert after.active_turn is None

    def test_error_sets_error_status(self) -> None:
        """chat/error ends the turn with state error and the error activity bit."""
        error = ErrorInfo(error_type="boom", message="it broke")
        after = reduce_chat(chat(), ChatErrorAction(turn_id=TURN, duration=1, error=error), now=NOW)
        assert after.turns[0].state is TurnState.ERROR
        assert after.turns[0].error == error
        assert after.status == SessionStatus.ERROR


class TestReducer:
    def test_input_request_lifecycle_drives_status(self) -> None:
        """An open input request makes the chat input-needed; completing it restores progress."""
        question = ChatInputBooleanQuestion(id="q-1", message="Continue?")
        request = ChatInputRequest(id="r-1", questions=(question,))
        state = reduce_chat(chat(), ChatInputRequestedAction(request=request), now=NOW)
        assert state.status == SessionStatus.INPUT_NEEDED
        done = ChatInputCompletedAction(
            request_id="r-1",
            response=ChatInputResponseKind.ACCEPT,
            answers={"q-1": ChatInputSkipped()},
        )
        validate_chat_action(state, done, channel=CHANNEL)
        state = reduce_chat(state, done, now=NOW)
        assert state.status == SessionStatus.IN_PROGRESS
        assert state.active_turn is not None
        (part,) = state.active_turn.response_parts
        assert isinstance(part, InputRequestResponsePart)
        assert part.response is ChatInputResponseKind.ACCEPT
        assert part.request.answers == {"q-1": ChatInputSkipped()}

    def test_unchanged_parts_are_shared(self) -> None:
        """A delta rebuilds the path to the part it touches and shares everything else."""
        other = MarkdownResponsePart(id="md-0", content="kept")
        state = chat(other, MarkdownResponsePart(id="md-1", content="a"))
        after = reduce_chat(
            state, ChatDeltaAction(turn_id=TURN, part_id="md-1", content="b"), now=NOW
        )
        assert after.active_turn is not None
        assert after.active_turn.response_parts[0] is other
        assert after.active_turn.response_parts[1] == MarkdownResponsePart(id="md-1", content="ab")
        assert after.turns is state.turns
        assert after.modified_at == BEFORE  # deltas do not touch modifiedAt, as upstream
