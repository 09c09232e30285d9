"""The chat reducer and its validator, transition by transition.

The shared fixtures (``test_ahp_reducer_fixtures.py``) pin the reducer's output; these tests
pin what the fixtures cannot: that :data:`TOOL_CALL_TRANSITIONS` drives both the reducer and
the validator, that every transition the table forbids is refused with an error naming the
chat, the tool call, its state and the action, and that a refused or ignored action leaves the
state untouched (the very same object).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from orchestrator import IllegalTransitionError
from orchestrator.ahp import (
    IDEMPOTENT_CHAT_ACTIONS,
    TOOL_CALL_TRANSITIONS,
    TURN_TRANSITIONS,
    ToolCallAction,
    ToolCallEvent,
    ToolCallStatus,
    TurnPhase,
    reduce_chat,
    tool_call_event,
    validate_chat_action,
    validate_session_action,
)
from orchestrator.ahp.actions import (
    ChatAction,
    ChatActivityChangedAction,
    ChatDeltaAction,
    ChatDraftChangedAction,
    ChatErrorAction,
    ChatInputAnswerChangedAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatQueuedMessagesReorderedAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallAuthRequiredAction,
    ChatToolCallAuthResolvedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallResultConfirmedAction,
    ChatToolCallStartAction,
    ChatTruncatedAction,
    ChatTurnCompleteAction,
    ChatTurnsLoadedAction,
    ChatTurnStartedAction,
    ChatUsageAction,
    ChatWorkingDirectoryRemovedAction,
    ChatWorkingDirectorySetAction,
    SessionChatRemovedAction,
    SessionDefaultChatChangedAction,
    SessionTitleChangedAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatInputAnswered,
    ChatInputAnswerValue,
    ChatInputBooleanQuestion,
    ChatInputNumberAnswerValue,
    ChatInputNumberQuestion,
    ChatInputOption,
    ChatInputQuestion,
    ChatInputRequest,
    ChatInputResponseKind,
    ChatInputSelectedAnswerValue,
    ChatInputSingleSelectQuestion,
    ChatInputSkipped,
    ChatInputTextAnswerValue,
    ChatState,
    ChatSummary,
    ConfirmationOption,
    ConfirmationOptionKind,
    ErrorInfo,
    InputRequestResponsePart,
    MarkdownResponsePart,
    McpAuthRequiredReason,
    McpAuthRequirement,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessage,
    PendingMessageKind,
    ProtectedResourceMetadata,
    ReasoningResponsePart,
    SessionLifecycle,
    SessionState,
    SessionStatus,
    ToolCallCancellationReason,
    ToolCallCancelledState,
    ToolCallClientContributor,
    ToolCallCompletedState,
    ToolCallConfirmationReason,
    ToolCallMcpContributor,
    ToolCallPendingConfirmationState,
    ToolCallPendingResultConfirmationState,
    ToolCallResponsePart,
    ToolCallResult,
    ToolCallRunningState,
    ToolCallState,
    ToolCallStreamingState,
    ToolResultTextContent,
    Turn,
    TurnState,
    UsageInfo,
)
from orchestrator.ahp.state import ToolCallAuthRequiredState as AuthRequiredState

CHANNEL = "ahp-chat:/00000000-0000-4000-8000-000000000001"
TURN = "turn-1"
TOOL_CALL = "tc-1"
NOW = "2025-01-01T00:00:10.000Z"
BEFORE = "2025-01-01T00:00:00.000Z"

# ─── Samples: one tool call per status, one action per event ─────────────────

MCP = ToolCallMcpContributor(customization_id="mcp-1")
OPTION = ConfirmationOption(id="opt-1", label="Allow", kind=ConfirmationOptionKind.APPROVE)
AUTH = McpAuthRequirement(
    reason=McpAuthRequiredReason.REQUIRED,
    resource=ProtectedResourceMetadata(resource="https://mcp.example"),
)
PARTIAL = (ToolResultTextContent(text="partial"),)
_COMMON: dict[str, Any] = {
    "tool_call_id": TOOL_CALL,
    "tool_name": "search",
    "display_name": "Search",
    "contributor": MCP,
}
_READY: dict[str, Any] = {**_COMMON, "invocation_message": "Search foo", "tool_input": "{}"}
_DONE: dict[str, Any] = {**_READY, "confirmed": ToolCallConfirmationReason.USER_ACTION}

TOOL_CALLS: dict[ToolCallStatus, ToolCallState] = {
    ToolCallStatus.STREAMING: ToolCallStreamingState(**_COMMON, partial_input='{"q":'),
    ToolCallStatus.PENDING_CONFIRMATION: ToolCallPendingConfirmationState(
        **_READY, options=(OPTION,)
    ),
    ToolCallStatus.RUNNING: ToolCallRunningState(**_DONE, content=PARTIAL),
    ToolCallStatus.AUTH_REQUIRED: AuthRequiredState(**_DONE, content=PARTIAL, auth=AUTH),
    ToolCallStatus.PENDING_RESULT_CONFIRMATION: ToolCallPendingResultConfirmationState(
        **_DONE, success=True, past_tense_message="Searched foo"
    ),
    ToolCallStatus.COMPLETED: ToolCallCompletedState(
        **_DONE, success=True, past_tense_message="Searched foo"
    ),
    ToolCallStatus.CANCELLED: ToolCallCancelledState(
        **_READY, reason=ToolCallCancellationReason.DENIED
    ),
}
"""A tool call in every status (all MCP-contributed, so only the table decides)."""

_IDS: dict[str, Any] = {"turn_id": TURN, "tool_call_id": TOOL_CALL}


def _complete(*, success: bool, review: bool) -> ChatToolCallCompleteAction:
    return ChatToolCallCompleteAction(
        **_IDS,
        result=ToolCallResult(success=success, past_tense_message="Done"),
        requires_result_confirmation=review or None,
    )


ACTIONS: dict[ToolCallEvent, ToolCallAction] = {
    ToolCallEvent.DELTA: ChatToolCallDeltaAction(**_IDS, content='"foo"}'),
    ToolCallEvent.READY: ChatToolCallReadyAction(**_IDS, invocation_message="Search bar"),
    ToolCallEvent.READY_CONFIRMED: ChatToolCallReadyAction(
        **_IDS, invocation_message="Search bar", confirmed=ToolCallConfirmationReason.SETTING
    ),
    ToolCallEvent.APPROVED: ChatToolCallApprovedAction(
        **_IDS, confirmed=ToolCallConfirmationReason.USER_ACTION, selected_option_id="opt-1"
    ),
    ToolCallEvent.DENIED: ChatToolCallDeniedAction(
        **_IDS, reason=ToolCallCancellationReason.DENIED
    ),
    ToolCallEvent.COMPLETE: _complete(success=True, review=False),
    ToolCallEvent.COMPLETE_FAILED: _complete(success=False, review=False),
    ToolCallEvent.COMPLETE_FOR_REVIEW: _complete(success=True, review=True),
    ToolCallEvent.COMPLETE_FAILED_FOR_REVIEW: _complete(success=False, review=True),
    ToolCallEvent.RESULT_APPROVED: ChatToolCallResultConfirmedAction(**_IDS, approved=True),
    ToolCallEvent.RESULT_DENIED: ChatToolCallResultConfirmedAction(**_IDS, approved=False),
    ToolCallEvent.CONTENT_CHANGED: ChatToolCallContentChangedAction(
        **_IDS, content=(ToolResultTextContent(text="more"),)
    ),
    ToolCallEvent.AUTH_REQUIRED: ChatToolCallAuthRequiredAction(**_IDS, auth=AUTH),
    ToolCallEvent.AUTH_RESOLVED: ChatToolCallAuthResolvedAction(**_IDS),
}
"""An action for every event, each of which changes a tool call the table lets it move."""

HELLO = Message(text="Hello", origin=MessageOrigin(kind=MessageKind.USER))


def chat(
    *parts: Any,
    active: bool = True,
    status: SessionStatus = SessionStatus.IN_PROGRESS,
    **fields: Any,
) -> ChatState:
    """A chat whose active turn ``turn-1`` holds ``parts`` (or no active turn)."""
    turn = ActiveTurn(id=TURN, started_at=BEFORE, message=HELLO, response_parts=parts)
    defaults: dict[str, Any] = {
        "resource": CHANNEL,
        "title": "Chat",
        "status": status if active else SessionStatus.IDLE,
        "modified_at": BEFORE,
        "turns": (),
        "active_turn": turn if active else None,
    }
    return ChatState(**{**defaults, **fields})


def completed_turn(turn_id: str) -> Turn:
    return Turn(
        id=turn_id,
        started_at=BEFORE,
        duration=1,
        message=HELLO,
        response_parts=(),
        state=TurnState.COMPLETE,
    )


def active_turn(state: ChatState) -> ActiveTurn:
    assert state.active_turn is not None
    return state.active_turn


def with_tool_call(tool_call: ToolCallState) -> ChatState:
    return chat(ToolCallResponsePart(tool_call=tool_call))


def tool_call_of(state: ChatState) -> ToolCallState:
    assert state.active_turn is not None
    (part,) = state.active_turn.response_parts
    assert isinstance(part, ToolCallResponsePart)
    return part.tool_call


def refusal(state: ChatState, action: ChatAction | UnknownAction) -> IllegalTransitionError:
    """Validate ``action``, expecting a refusal; check the state is untouched, on both sides."""
    before = attrs.evolve(state)
    with pytest.raises(IllegalTransitionError) as caught:
        validate_chat_action(state, action, channel=CHANNEL)
    assert state == before
    error = caught.value
    assert error.channel == CHANNEL
    assert error.action_type == action.type
    assert error.reason
    assert error.reason in str(error)
    return error


_FORBIDDEN = [
    (status, event)
    for status in ToolCallStatus
    for event in ToolCallEvent
    if event not in TOOL_CALL_TRANSITIONS[status]
]
_ALLOWED = [
    (status, event, target)
    for status, row in TOOL_CALL_TRANSITIONS.items()
    for event, target in row.items()
]


class TestToolCallTable:
    def test_every_status_has_a_row_and_every_event_a_use(self) -> None:
        """The table is complete: all seven statuses, every event legal somewhere."""
        assert set(TOOL_CALL_TRANSITIONS) == set(ToolCallStatus)
        assert {e for row in TOOL_CALL_TRANSITIONS.values() for e in row} == set(ToolCallEvent)

    def test_terminal_statuses(self) -> None:
        """Only completed and cancelled have no way out."""
        terminal = {s for s, row in TOOL_CALL_TRANSITIONS.items() if not row}
        assert terminal == {ToolCallStatus.COMPLETED, ToolCallStatus.CANCELLED}

    def test_samples_cover_the_table(self) -> None:
        """The samples below hold a tool call per status and an action per event."""
        assert {ToolCallStatus(tc.status) for tc in TOOL_CALLS.values()} == set(TOOL_CALLS)
        assert all(tool_call_event(a) is e for e, a in ACTIONS.items())
        assert set(TOOL_CALLS) == set(ToolCallStatus)
        assert set(ACTIONS) == set(ToolCallEvent)

    @pytest.mark.parametrize(("status", "event"), _FORBIDDEN, ids=lambda v: str(v))
    def test_forbidden_transition_is_refused(
        self, status: ToolCallStatus, event: ToolCallEvent
    ) -> None:
        """A transition missing from the table is refused: the error names the chat, the tool
        call, its state and the action; the reducer ignores it (same object back)."""
        state = with_tool_call(TOOL_CALLS[status])
        action = ACTIONS[event]
        error = refusal(state, action)
        assert error.tool_call_id == TOOL_CALL
        assert error.state == f"tool call {status}"
        assert event in error.reason
        for text in (CHANNEL, repr(TOOL_CALL), f"tool call {status}", action.type):
            assert text in str(error)
        assert reduce_chat(state, action, now=NOW) is state

    @pytest.mark.parametrize(("status", "event", "target"), _ALLOWED, ids=lambda v: str(v))
    def test_allowed_transition_moves_to_the_table_target(
        self, status: ToolCallStatus, event: ToolCallEvent, target: ToolCallStatus
    ) -> None:
        """A transition in the table is accepted and lands exactly where the table says."""
        state = with_tool_call(TOOL_CALLS[status])
        validate_chat_action(state, ACTIONS[event], channel=CHANNEL)
        assert tool_call_of(reduce_chat(state, ACTIONS[event], now=NOW)).status == target

    def test_auth_required_needs_an_mcp_contributor(self) -> None:
        """running → auth-required is in the table, but a client tool cannot take it."""
        client = ToolCallClientContributor(client_id="client-1")
        state = with_tool_call(ToolCallRunningState(**{**_DONE, "contributor": client}))
        action = ACTIONS[ToolCallEvent.AUTH_REQUIRED]
        error = refusal(state, action)
        assert error.state == "tool call running"
        assert "MCP" in error.reason
        assert reduce_chat(state, action, now=NOW) is state

    @pytest.mark.parametrize(
        "action",
        [ACTIONS[ToolCallEvent.DELTA], ChatToolCallDeltaAction(**_IDS, content="")],
        ids=["delta", "empty delta"],
    )
    def test_tool_call_of_another_id_is_refused(self, action: ChatToolCallDeltaAction) -> None:
        """An action for a tool call the turn does not hold names it and the turn."""
        state = chat()
        error = refusal(state, action)
        assert error.tool_call_id == TOOL_CALL
        assert error.state == "turn 'turn-1' active"

    def test_legal_but_empty_change_is_refused_as_no_op(self) -> None:
        """Content changed to what it already is: legal per the table, but a no-op."""
        running = TOOL_CALLS[ToolCallStatus.RUNNING]
        assert isinstance(running, ToolCallRunningState)
        action = ChatToolCallContentChangedAction(**_IDS, content=running.content or ())
        error = refusal(with_tool_call(running), action)
        assert error.state == "tool call running"
        assert "would not change" in error.reason


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


class TestOtherRefusals:
    def test_delta_to_unknown_part(self) -> None:
        """A delta names a part the turn does not have."""
        action = ChatDeltaAction(turn_id=TURN, part_id="md-1", content="x")
        assert refusal(chat(), action).reason == "turn 'turn-1' has no response part 'md-1'"

    def test_delta_to_reasoning_part(self) -> None:
        """A markdown delta aimed at a reasoning part is refused (and dropped by the reducer)."""
        state = chat(ReasoningResponsePart(id="md-1", content=""))
        action = ChatDeltaAction(turn_id=TURN, part_id="md-1", content="x")
        assert "not a markdown part" in refusal(state, action).reason
        assert reduce_chat(state, action, now=NOW) is state

    def test_duplicate_part_id(self) -> None:
        """A second part with an id the turn already uses is refused."""
        state = chat(MarkdownResponsePart(id="tc-1", content=""))
        action = ChatToolCallStartAction(**_IDS, tool_name="search", display_name="Search")
        assert "already has a response part" in refusal(state, action).reason
        part = ChatResponsePartAction(
            turn_id=TURN, part=MarkdownResponsePart(id="tc-1", content="")
        )
        assert "already has a response part" in refusal(state, part).reason

    def test_pending_message_removal_of_unknown_id(self) -> None:
        """Removing a pending message that is not there is refused."""
        action = ChatPendingMessageRemovedAction(kind=PendingMessageKind.QUEUED, id="m-1")
        assert refusal(chat(active=False), action).reason == "there is no queued message 'm-1'"

    def test_reorder_without_queue(self) -> None:
        """Reordering nothing is refused."""
        action = ChatQueuedMessagesReorderedAction(order=("m-1",))
        assert refusal(chat(active=False), action).reason == "there are no queued messages"

    def test_truncation_to_unknown_turn(self) -> None:
        """Truncating after a turn that is not in the history is refused."""
        action = ChatTruncatedAction(turn_id="turn-9")
        assert "no completed turn" in refusal(chat(active=False), action).reason

    def test_older_turns_repeating_an_id(self) -> None:
        """A page of older turns that lists one turn id twice would break turn-id uniqueness."""
        old = completed_turn("turn-0")
        action = ChatTurnsLoadedAction(turns=(old, old))
        assert "lists turn id 'turn-0' twice" in refusal(chat(active=False), action).reason
        validate_chat_action(
            chat(active=False), attrs.evolve(action, turns=(old,)), channel=CHANNEL
        )

    def test_older_turns_holding_the_active_turn(self) -> None:
        """A loaded turn may not reuse the id of the turn that is running."""
        old = completed_turn(TURN)
        action = ChatTurnsLoadedAction(turns=(old,))
        assert "which is active" in refusal(chat(), action).reason

    @pytest.mark.parametrize(
        ("question", "value", "problem"),
        [
            (
                ChatInputBooleanQuestion(id="q-1", message="Go?"),
                ChatInputTextAnswerValue(value="maybe"),
                "q-1 is a boolean question, answered with a text value",
            ),
            (
                ChatInputNumberQuestion(id="q-1", message="How many?", kind="integer"),
                ChatInputNumberAnswerValue(value=2.5),
                "q-1 takes an integer, not 2.5",
            ),
            (
                ChatInputSingleSelectQuestion(
                    id="q-1", message="Which?", options=(ChatInputOption(id="a", label="A"),)
                ),
                ChatInputSelectedAnswerValue(value="b"),
                "q-1 offers no option b",
            ),
        ],
    )
    def test_an_answer_the_question_cannot_take(
        self, question: ChatInputQuestion, value: ChatInputAnswerValue, problem: str
    ) -> None:
        """An answer of the wrong kind, or naming an option not offered, is refused."""
        request = ChatInputRequest(id="r-1", questions=(question,))
        state = chat(InputRequestResponsePart(request=request))
        answer = ChatInputAnswered(state="submitted", value=value)
        action = ChatInputCompletedAction(
            request_id="r-1", response=ChatInputResponseKind.ACCEPT, answers={"q-1": answer}
        )
        assert refusal(state, action).reason == f"input request 'r-1': {problem}"

    def test_input_answer_to_unknown_question(self) -> None:
        """An answer to a question the request does not ask would break its invariant."""
        question = ChatInputBooleanQuestion(id="q-1", message="Continue?")
        request = ChatInputRequest(id="r-1", questions=(question,))
        state = chat(InputRequestResponsePart(request=request))
        action = ChatInputAnswerChangedAction(
            request_id="r-1", question_id="q-2", answer=ChatInputSkipped()
        )
        assert refusal(state, action).reason == "input request 'r-1' does not ask q-2"
        ok = attrs.evolve(action, question_id="q-1")
        validate_chat_action(state, ok, channel=CHANNEL)

    def test_unknown_action_type(self) -> None:
        """A type this server does not model is refused; the reducer ignores it."""
        action = UnknownAction(raw={"type": "chat/somethingNew"})
        assert "not a chat action" in refusal(chat(), action).reason
        state = chat()
        assert reduce_chat(state, action, now=NOW) is state


class TestIdempotentActions:
    SAME_AGAIN: tuple[tuple[ChatState, ChatAction], ...] = (
        (chat(activity="thinking"), ChatActivityChangedAction(activity="thinking")),
        (chat(), ChatDraftChangedAction()),
        (chat(working_directories=("/a",)), ChatWorkingDirectorySetAction(directory="/a")),
        (chat(), ChatWorkingDirectoryRemovedAction(directory="/a")),
        (chat(), ChatTurnsLoadedAction(turns=())),
        (
            chat(steering_message=PendingMessage(id="m-1", message=HELLO)),
            ChatPendingMessageSetAction(kind=PendingMessageKind.STEERING, id="m-1", message=HELLO),
        ),
        (
            chat(queued_messages=(PendingMessage(id="m-1", message=HELLO),)),
            ChatQueuedMessagesReorderedAction(order=("m-1",)),
        ),
        (
            attrs.evolve(chat(), active_turn=attrs.evolve(active_turn(chat()), usage=UsageInfo())),
            ChatUsageAction(turn_id=TURN, usage=UsageInfo()),
        ),
    )

    def test_list_names_chat_actions_only(self) -> None:
        """Each always-legal type is a chat action type with a reason beside it."""
        assert all(t.startswith("chat/") and why for t, why in IDEMPOTENT_CHAT_ACTIONS.items())

    @pytest.mark.parametrize(("state", "action"), SAME_AGAIN, ids=lambda v: getattr(v, "type", ""))
    def test_setting_the_same_value_again_is_accepted(
        self, state: ChatState, action: ChatAction
    ) -> None:
        """Saying the same thing twice is harmless: accepted, and the reducer returns ``state``."""
        assert action.type in IDEMPOTENT_CHAT_ACTIONS
        validate_chat_action(state, action, channel=CHANNEL)
        assert reduce_chat(state, action, now=NOW) == state


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


class TestSessionValidation:
    SESSION = SessionState(
        provider="scripted",
        title="Session",
        status=SessionStatus.IDLE,
        lifecycle=SessionLifecycle.READY,
        active_clients=(),
        chats=(
            ChatSummary(
                resource=CHANNEL, title="Chat", status=SessionStatus.IDLE, modified_at=BEFORE
            ),
        ),
    )

    def test_unknown_chat_is_refused(self) -> None:
        """Naming a chat that is not in the catalog is refused."""
        with pytest.raises(IllegalTransitionError, match="no chat 'ahp-chat:/other'") as caught:
            validate_session_action(
                self.SESSION, SessionChatRemovedAction(chat="ahp-chat:/other"), channel="s"
            )
        assert caught.value.state == "session ready"
        with pytest.raises(IllegalTransitionError):
            validate_session_action(
                self.SESSION,
                SessionDefaultChatChangedAction(default_chat="ahp-chat:/other"),
                channel="s",
            )

    def test_setters_are_accepted(self) -> None:
        """A setter is accepted even when it sets the value the session already has."""
        validate_session_action(
            self.SESSION, SessionTitleChangedAction(title="Session"), channel="s"
        )
        validate_session_action(self.SESSION, SessionChatRemovedAction(chat=CHANNEL), channel="s")
