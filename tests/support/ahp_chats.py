"""Chats, tool calls in every status and the actions that move them: the samples the chat
reducer's and the validator's tests share."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from orchestrator import IllegalTransitionError
from orchestrator.ahp import (
    ToolCallAction,
    ToolCallEvent,
    ToolCallStatus,
    validate_chat_action,
)
from orchestrator.ahp.actions import (
    ChatAction,
    ChatToolCallApprovedAction,
    ChatToolCallAuthRequiredAction,
    ChatToolCallAuthResolvedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallResultConfirmedAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatState,
    ConfirmationOption,
    ConfirmationOptionKind,
    McpAuthRequiredReason,
    McpAuthRequirement,
    Message,
    MessageKind,
    MessageOrigin,
    ProtectedResourceMetadata,
    SessionStatus,
    ToolCallCancellationReason,
    ToolCallCancelledState,
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
)
from orchestrator.ahp.state import ToolCallAuthRequiredState as AuthRequiredState

CHANNEL = "ahp-chat:/00000000-0000-4000-8000-000000000001"


TURN = "turn-1"


TOOL_CALL = "tc-1"


NOW = "2025-01-01T00:00:10.000Z"


BEFORE = "2025-01-01T00:00:00.000Z"


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


def with_tool_call(tool_call: ToolCallState) -> ChatState:
    return chat(ToolCallResponsePart(tool_call=tool_call))


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


def active_turn(state: ChatState) -> ActiveTurn:
    assert state.active_turn is not None
    return state.active_turn
