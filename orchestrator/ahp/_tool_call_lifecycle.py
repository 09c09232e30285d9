"""The tool-call lifecycle: a table of every legal transition of a tool call's status.

:data:`TOOL_CALL_TRANSITIONS` maps a tool call's status and a :class:`ToolCallEvent` (an action
type, refined by the payload where the payload picks the target: ``approved``, ``confirmed``,
``requiresResultConfirmation``, ``success``) to the next status. The chat reducer
(:mod:`orchestrator.ahp._chat_reducer`) looks the pair up with :func:`next_tool_call_status`
*before* building anything; a missing entry is a no-op there and a refusal in
:mod:`orchestrator.ahp._validate`, which reads the same table. Statuses with an empty row are
terminal; a turn that ends force-cancels every tool call that is not (reason ``skipped``).
What the next state holds is :mod:`orchestrator.ahp._tool_call_builders`' business.

The module is pure: no IO, no trio.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from typing import Final, TypeAlias

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
from .state import ToolCallMcpContributor, ToolCallState

__all__ = [
    "BLOCKING_TOOL_CALL_STATUSES",
    "EVENTS_THAT_REFRESH_STATUS",
    "TOOL_CALL_TRANSITIONS",
    "ToolCallAction",
    "ToolCallEvent",
    "ToolCallStatus",
    "next_tool_call_status",
    "tool_call_event",
    "tool_call_guard",
    "tool_call_status",
]


class ToolCallStatus(enum.StrEnum):
    """The ``status`` of a :data:`~orchestrator.ahp.state.ToolCallState`."""

    STREAMING = "streaming"
    PENDING_CONFIRMATION = "pending-confirmation"
    RUNNING = "running"
    AUTH_REQUIRED = "auth-required"
    PENDING_RESULT_CONFIRMATION = "pending-result-confirmation"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class ToolCallEvent(enum.StrEnum):
    """What a tool-call action does, as far as the lifecycle cares.

    Most events are an action type; where the payload decides the target status, the event
    names the payload too (``chat/toolCallConfirmed`` approves or denies).
    """

    DELTA = "chat/toolCallDelta"
    READY = "chat/toolCallReady"
    READY_CONFIRMED = "chat/toolCallReady (confirmed)"
    APPROVED = "chat/toolCallConfirmed (approved)"
    DENIED = "chat/toolCallConfirmed (denied)"
    COMPLETE = "chat/toolCallComplete (success)"
    COMPLETE_FAILED = "chat/toolCallComplete (failure)"
    COMPLETE_FOR_REVIEW = "chat/toolCallComplete (success, requiresResultConfirmation)"
    COMPLETE_FAILED_FOR_REVIEW = "chat/toolCallComplete (failure, requiresResultConfirmation)"
    RESULT_APPROVED = "chat/toolCallResultConfirmed (approved)"
    RESULT_DENIED = "chat/toolCallResultConfirmed (denied)"
    CONTENT_CHANGED = "chat/toolCallContentChanged"
    AUTH_REQUIRED = "chat/toolCallAuthRequired"
    AUTH_RESOLVED = "chat/toolCallAuthResolved"


_S = ToolCallStatus
_E = ToolCallEvent

TOOL_CALL_TRANSITIONS: Final[Mapping[ToolCallStatus, Mapping[ToolCallEvent, ToolCallStatus]]] = (
    types.MappingProxyType(
        {
            _S.STREAMING: {
                _E.DELTA: _S.STREAMING,
                _E.READY: _S.PENDING_CONFIRMATION,
                _E.READY_CONFIRMED: _S.RUNNING,
            },
            _S.PENDING_CONFIRMATION: {
                # A second ready refines the pending confirmation (e.g. a finished risk
                # assessment) without losing what the first one said.
                _E.READY: _S.PENDING_CONFIRMATION,
                _E.READY_CONFIRMED: _S.RUNNING,
                _E.APPROVED: _S.RUNNING,
                _E.DENIED: _S.CANCELLED,
                # The tool ran without waiting (confirmed counts as "not-needed").
                _E.COMPLETE: _S.COMPLETED,
                _E.COMPLETE_FAILED: _S.COMPLETED,
                _E.COMPLETE_FOR_REVIEW: _S.PENDING_RESULT_CONFIRMATION,
                _E.COMPLETE_FAILED_FOR_REVIEW: _S.PENDING_RESULT_CONFIRMATION,
            },
            _S.RUNNING: {
                # Re-confirmation: a running tool asks for more permission.
                _E.READY: _S.PENDING_CONFIRMATION,
                _E.READY_CONFIRMED: _S.RUNNING,
                _E.CONTENT_CHANGED: _S.RUNNING,
                # Only for MCP-contributed calls: see tool_call_guard().
                _E.AUTH_REQUIRED: _S.AUTH_REQUIRED,
                _E.COMPLETE: _S.COMPLETED,
                _E.COMPLETE_FAILED: _S.COMPLETED,
                _E.COMPLETE_FOR_REVIEW: _S.PENDING_RESULT_CONFIRMATION,
                _E.COMPLETE_FAILED_FOR_REVIEW: _S.PENDING_RESULT_CONFIRMATION,
            },
            _S.AUTH_REQUIRED: {
                _E.AUTH_RESOLVED: _S.RUNNING,
                # Only a failed result can end a call that never resumed after the challenge
                # (the client gave up authenticating); it is final, there is nothing to review.
                _E.COMPLETE_FAILED: _S.COMPLETED,
                _E.COMPLETE_FAILED_FOR_REVIEW: _S.COMPLETED,
            },
            _S.PENDING_RESULT_CONFIRMATION: {
                _E.RESULT_APPROVED: _S.COMPLETED,
                _E.RESULT_DENIED: _S.CANCELLED,
            },
            _S.COMPLETED: {},
            _S.CANCELLED: {},
        }
    )
)
"""``{status: {event: next status}}``: every legal tool-call transition, and nothing else.

A status whose row is empty is terminal. A turn that ends cancels every tool call that is not
(that is not an event: it happens to all of them at once, see ``chat/turnComplete``).
"""

BLOCKING_TOOL_CALL_STATUSES: Final = frozenset(
    {_S.PENDING_CONFIRMATION, _S.PENDING_RESULT_CONFIRMATION, _S.AUTH_REQUIRED}
)
"""Statuses that wait on something outside the turn: they make the chat "input needed"."""

EVENTS_THAT_REFRESH_STATUS: Final = frozenset(_E) - {_E.DELTA, _E.CONTENT_CHANGED}
"""Events that can enter or leave a blocking status, after which the chat's ``status`` is
recomputed (the upstream reducer leaves it alone after deltas and content changes)."""

ToolCallAction: TypeAlias = (
    ChatToolCallDeltaAction
    | ChatToolCallReadyAction
    | ChatToolCallApprovedAction
    | ChatToolCallDeniedAction
    | ChatToolCallCompleteAction
    | ChatToolCallResultConfirmedAction
    | ChatToolCallContentChangedAction
    | ChatToolCallAuthRequiredAction
    | ChatToolCallAuthResolvedAction
)
"""The actions that move an existing tool call through :data:`TOOL_CALL_TRANSITIONS`."""


def tool_call_status(tool_call: ToolCallState) -> ToolCallStatus:
    """``ToolCallStatus(tool_call.status)``, looked up (the enum's call runs Python code, and
    this is asked for every tool-call action, by the validator and the reducer)."""
    status = _STATUSES.get(tool_call.status)
    return status if status is not None else ToolCallStatus(tool_call.status)


_STATUSES: Final[Mapping[str, ToolCallStatus]] = {status.value: status for status in _S}


def tool_call_event(action: ToolCallAction) -> ToolCallEvent:
    """The lifecycle event ``action`` stands for."""
    # By the action's class first: most classes are one event (the match below tests the
    # classes one after another).
    event = _EVENT_OF_CLASS.get(type(action))
    return event if event is not None else _event_of(action)


def _event_of(action: ToolCallAction) -> ToolCallEvent:
    """:func:`tool_call_event`, by the action's class and payload."""
    match action:
        case ChatToolCallDeltaAction():
            return _E.DELTA
        case ChatToolCallReadyAction():
            return _E.READY if action.confirmed is None else _E.READY_CONFIRMED
        case ChatToolCallApprovedAction():
            return _E.APPROVED
        case ChatToolCallDeniedAction():
            return _E.DENIED
        case ChatToolCallCompleteAction():
            if action.requires_result_confirmation:
                if action.result.success:
                    return _E.COMPLETE_FOR_REVIEW
                return _E.COMPLETE_FAILED_FOR_REVIEW
            return _E.COMPLETE if action.result.success else _E.COMPLETE_FAILED
        case ChatToolCallResultConfirmedAction():
            return _E.RESULT_APPROVED if action.approved else _E.RESULT_DENIED
        case ChatToolCallContentChangedAction():
            return _E.CONTENT_CHANGED
        case ChatToolCallAuthRequiredAction():
            return _E.AUTH_REQUIRED
        case ChatToolCallAuthResolvedAction():
            return _E.AUTH_RESOLVED


#: The event of each action class that stands for one event whatever its payload.
_EVENT_OF_CLASS: Final[Mapping[type, ToolCallEvent]] = {
    ChatToolCallDeltaAction: _E.DELTA,
    ChatToolCallApprovedAction: _E.APPROVED,
    ChatToolCallDeniedAction: _E.DENIED,
    ChatToolCallContentChangedAction: _E.CONTENT_CHANGED,
    ChatToolCallAuthRequiredAction: _E.AUTH_REQUIRED,
    ChatToolCallAuthResolvedAction: _E.AUTH_RESOLVED,
}


def tool_call_guard(tool_call: ToolCallState, event: ToolCallEvent) -> str | None:
    """Why a transition the table allows is still refused for this tool call, or None.

    The one guard: authentication is an MCP concept, so only a call contributed by an MCP
    server can enter ``auth-required`` (the invariant of ``ToolCallAuthRequiredState``).
    """
    if event is _E.AUTH_REQUIRED and not isinstance(tool_call.contributor, ToolCallMcpContributor):
        return "only a tool call contributed by an MCP server can require authentication"
    return None


def next_tool_call_status(tool_call: ToolCallState, event: ToolCallEvent) -> ToolCallStatus | None:
    """The status ``event`` moves ``tool_call`` to; None if the table or the guard refuses it."""
    target = TOOL_CALL_TRANSITIONS[tool_call_status(tool_call)].get(event)
    if target is None or tool_call_guard(tool_call, event) is not None:
        return None
    return target
