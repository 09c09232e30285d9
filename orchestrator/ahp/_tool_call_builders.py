"""Building the next state of a tool call, once the lifecycle table has chosen its status.

The chat reducer (:mod:`orchestrator.ahp._chat_reducer`) moves a tool call in two steps:

1. the table (:mod:`orchestrator.ahp._tool_call_lifecycle`) says whether the event applies and
   which status comes next;
2. :data:`TOOL_CALL_BUILDERS` builds the tool call in that status from the one it was in and
   the action.

:func:`force_cancel` is what a turn that ends leaves of a call that was not done. Builders share
what they carry over: a no-op returns the tool call itself.

The module is pure: no IO, no trio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias, TypeVar

from orchestrator.base import evolve

from ._tool_call_lifecycle import ToolCallEvent, ToolCallStatus
from .actions import (
    ChatToolCallApprovedAction,
    ChatToolCallAuthRequiredAction,
    ChatToolCallAuthResolvedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallResultConfirmedAction,
)
from .state import (
    ConfirmationOption,
    StringOrMarkdown,
    ToolCallAuthRequiredState,
    ToolCallCancellationReason,
    ToolCallCancelledState,
    ToolCallClientContributor,
    ToolCallCompletedState,
    ToolCallConfirmationReason,
    ToolCallContributor,
    ToolCallPendingConfirmationState,
    ToolCallPendingResultConfirmationState,
    ToolCallRunningState,
    ToolCallState,
    ToolCallStreamingState,
    UnknownToolCallContributor,
)

__all__ = ["TOOL_CALL_BUILDERS", "force_cancel"]

T = TypeVar("T")

_S = ToolCallStatus
_E = ToolCallEvent


# ─── Building the next tool-call state ───────────────────────────────────────
# Each builder gets a tool call whose status the table accepted for its event, and the target
# status the table chose. Fields carried from state to state follow the upstream reducer.


def _first(value: T | None, fallback: T | None) -> T | None:
    """``value ?? fallback``: the first that is not None."""
    return value if value is not None else fallback


def _common(tool_call: ToolCallState, meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields every tool-call state shares; an action's ``_meta`` replaces the call's.

    The call's unknown fields (a newer peer's) go along, as a spread of the call would take
    them: the call is one object on the wire whatever its status.
    """
    return {
        "unknown_fields": tool_call.unknown_fields,
        "tool_call_id": tool_call.tool_call_id,
        "tool_name": tool_call.tool_name,
        "display_name": tool_call.display_name,
        "intention": tool_call.intention,
        "contributor": tool_call.contributor,
        "meta": _first(meta, tool_call.meta),
    }


def _refine_contributor(
    current: ToolCallContributor | None, proposed: ToolCallContributor | None
) -> ToolCallContributor | None:
    """The contributor after ``chat/toolCallReady`` named ``proposed``.

    Who executes a client tool is settled when the call starts: a client contributor can only
    be replaced by itself (same client), and a client cannot take over a call late. A
    contributor of a kind we do not model is skipped, as if absent: we cannot tell who would
    execute the call.
    """
    if proposed is None or isinstance(proposed, UnknownToolCallContributor):
        return current
    if isinstance(current, ToolCallClientContributor):
        same_client = (
            isinstance(proposed, ToolCallClientContributor)
            and proposed.client_id == current.client_id
        )
        return proposed if same_client else current
    if isinstance(proposed, ToolCallClientContributor):
        return current
    return proposed


def _selected_option(
    options: tuple[ConfirmationOption, ...] | None, option_id: str | None
) -> ConfirmationOption | None:
    if not option_id or options is None:
        return None
    return next((option for option in options if option.id == option_id), None)


def _delta(
    tc: ToolCallState, action: ChatToolCallDeltaAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(tc, ToolCallStreamingState)
    meta = _first(action.meta, tc.meta)
    partial_input = (
        tc.partial_input if action.content is None else (tc.partial_input or "") + action.content
    )
    invocation_message = (
        tc.invocation_message if action.invocation_message is None else action.invocation_message
    )
    if (
        meta is tc.meta
        and partial_input == tc.partial_input
        and invocation_message is tc.invocation_message
    ):
        return tc
    return evolve(tc, meta=meta, partial_input=partial_input, invocation_message=invocation_message)


def _ready(
    tc: ToolCallState, action: ChatToolCallReadyAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(
        tc, ToolCallStreamingState | ToolCallPendingConfirmationState | ToolCallRunningState
    )
    common = _common(tc, action.meta)
    common["contributor"] = _refine_contributor(tc.contributor, action.contributor)
    common["intention"] = _first(action.intention, tc.intention)
    tool_input = action.tool_input
    if tool_input is None and not isinstance(tc, ToolCallStreamingState):
        tool_input = tc.tool_input
    if target is _S.RUNNING:
        assert action.confirmed is not None
        return ToolCallRunningState(
            **common,
            invocation_message=action.invocation_message,
            tool_input=tool_input,
            confirmed=action.confirmed,
        )
    # A second ready on a pending confirmation refines it: what it leaves out is kept.
    if isinstance(tc, ToolCallPendingConfirmationState):
        return ToolCallPendingConfirmationState(
            **common,
            invocation_message=action.invocation_message,
            tool_input=tool_input,
            confirmation_title=tc.confirmation_title
            if action.confirmation_title is None
            else action.confirmation_title,
            risk_assessment=tc.risk_assessment
            if action.risk_assessment is None
            else action.risk_assessment,
            edits=_first(action.edits, tc.edits),
            editable=_first(action.editable, tc.editable),
            options=_first(action.options, tc.options),
        )
    return ToolCallPendingConfirmationState(
        **common,
        invocation_message=action.invocation_message,
        tool_input=tool_input,
        confirmation_title=action.confirmation_title,
        risk_assessment=action.risk_assessment,
        edits=action.edits,
        editable=action.editable,
        options=action.options,
    )


def _confirmed(
    tc: ToolCallState,
    action: ChatToolCallApprovedAction | ChatToolCallDeniedAction,
    target: ToolCallStatus,
) -> ToolCallState:
    assert isinstance(tc, ToolCallPendingConfirmationState)
    common = _common(tc, action.meta)
    selected_option = _selected_option(tc.options, action.selected_option_id)
    if isinstance(action, ChatToolCallApprovedAction):
        # An edit replaces inline input only; input held by reference stays as it is.
        edited = action.edited_tool_input
        return ToolCallRunningState(
            **common,
            invocation_message=tc.invocation_message,
            tool_input=edited
            if edited is not None and isinstance(tc.tool_input, str)
            else tc.tool_input,
            confirmed=action.confirmed,
            selected_option=selected_option,
        )
    return ToolCallCancelledState(
        **common,
        invocation_message=tc.invocation_message,
        tool_input=tc.tool_input,
        reason=ToolCallCancellationReason(action.reason),
        reason_message=action.reason_message,
        user_suggestion=action.user_suggestion,
        selected_option=selected_option,
    )


def _complete(
    tc: ToolCallState, action: ChatToolCallCompleteAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(
        tc, ToolCallPendingConfirmationState | ToolCallRunningState | ToolCallAuthRequiredState
    )
    if isinstance(tc, ToolCallPendingConfirmationState):
        confirmed, selected_option = ToolCallConfirmationReason.NOT_NEEDED, None
        earlier_content = None
    else:
        confirmed, selected_option = tc.confirmed, tc.selected_option
        # A call cancelled while waiting for authentication never resumed: the partial output
        # it produced before pausing is all it ever produced, unless the result says otherwise.
        earlier_content = tc.content if isinstance(tc, ToolCallAuthRequiredState) else None
    result = action.result
    state_class = (
        ToolCallPendingResultConfirmationState
        if target is _S.PENDING_RESULT_CONFIRMATION
        else ToolCallCompletedState
    )
    return state_class(
        **_common(tc, action.meta),
        invocation_message=tc.invocation_message,
        tool_input=tc.tool_input,
        confirmed=confirmed,
        selected_option=selected_option,
        success=result.success,
        past_tense_message=result.past_tense_message,
        content=_first(result.content, earlier_content),
        structured_content=result.structured_content,
        error=result.error,
    )


def _result_confirmed(
    tc: ToolCallState, action: ChatToolCallResultConfirmedAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(tc, ToolCallPendingResultConfirmationState)
    common = _common(tc, action.meta)
    if target is _S.COMPLETED:
        return ToolCallCompletedState(
            **common,
            invocation_message=tc.invocation_message,
            tool_input=tc.tool_input,
            confirmed=tc.confirmed,
            selected_option=tc.selected_option,
            success=tc.success,
            past_tense_message=tc.past_tense_message,
            content=tc.content,
            structured_content=tc.structured_content,
            error=tc.error,
        )
    return ToolCallCancelledState(
        **common,
        invocation_message=tc.invocation_message,
        tool_input=tc.tool_input,
        reason=ToolCallCancellationReason.RESULT_DENIED,
        selected_option=tc.selected_option,
    )


def _content_changed(
    tc: ToolCallState, action: ChatToolCallContentChangedAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(tc, ToolCallRunningState)
    return evolve(tc, meta=_first(action.meta, tc.meta), content=action.content)


def _auth_required(
    tc: ToolCallState, action: ChatToolCallAuthRequiredAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(tc, ToolCallRunningState)
    return ToolCallAuthRequiredState(
        **_common(tc, action.meta),
        invocation_message=tc.invocation_message,
        tool_input=tc.tool_input,
        confirmed=tc.confirmed,
        selected_option=tc.selected_option,
        content=tc.content,
        auth=action.auth,
    )


def _auth_resolved(
    tc: ToolCallState, action: ChatToolCallAuthResolvedAction, target: ToolCallStatus
) -> ToolCallState:
    assert isinstance(tc, ToolCallAuthRequiredState)
    return ToolCallRunningState(
        **_common(tc, action.meta),
        invocation_message=tc.invocation_message,
        tool_input=tc.tool_input,
        confirmed=tc.confirmed,
        selected_option=tc.selected_option,
        content=tc.content,
    )


_Builder: TypeAlias = Callable[[ToolCallState, Any, ToolCallStatus], ToolCallState]

TOOL_CALL_BUILDERS: Final[Mapping[ToolCallEvent, _Builder]] = {
    _E.DELTA: _delta,
    _E.READY: _ready,
    _E.READY_CONFIRMED: _ready,
    _E.APPROVED: _confirmed,
    _E.DENIED: _confirmed,
    _E.COMPLETE: _complete,
    _E.COMPLETE_FAILED: _complete,
    _E.COMPLETE_FOR_REVIEW: _complete,
    _E.COMPLETE_FAILED_FOR_REVIEW: _complete,
    _E.RESULT_APPROVED: _result_confirmed,
    _E.RESULT_DENIED: _result_confirmed,
    _E.CONTENT_CHANGED: _content_changed,
    _E.AUTH_REQUIRED: _auth_required,
    _E.AUTH_RESOLVED: _auth_resolved,
}
"""The builder of the next tool-call state, per event (the table has chosen the status)."""


def force_cancel(tc: ToolCallState) -> ToolCallCancelledState:
    """The tool call as a turn that ends leaves it: cancelled, reason ``skipped``."""
    if isinstance(tc, ToolCallStreamingState):
        invocation_message: StringOrMarkdown = tc.invocation_message or ""
        tool_input = None
    else:
        invocation_message, tool_input = tc.invocation_message, tc.tool_input
    return ToolCallCancelledState(
        **_common(tc, tc.meta),
        invocation_message=invocation_message,
        tool_input=tool_input,
        reason=ToolCallCancellationReason.SKIPPED,
    )
