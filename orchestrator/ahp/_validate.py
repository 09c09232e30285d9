"""Validation: may this action be appended to this channel, given its current state?

Theory of operation
-------------------
Reduction and validation are separate. The reducers (:mod:`._chat_reducer`,
:mod:`._session_reducer`) are total: like the upstream AHP reducers they ignore what does not
apply, because a fold over a journal or a replay must never fail. Validation runs *before* the
runtime appends an action (its own facts as well as the actions clients dispatch) and refuses,
with :class:`~orchestrator.IllegalTransitionError`, an action that

* is an **illegal transition**: a tool-call event that :data:`TOOL_CALL_TRANSITIONS` has no
  entry for in the call's status (or that its guard refuses), a turn-scoped action while no turn
  is active or a new turn while one is (:data:`TURN_TRANSITIONS`), a stale ``turnId``, or an
  action that would break a documented invariant (a reused turn id, two parts with one id, an
  answer to a question the request does not ask); or
* is a **no-op**: reducing it would leave the state as it is, ``modified_at`` aside (it names
  a part, tool call, request, pending message or turn that does not exist, or changes nothing).

The error's ``reason`` goes back to an AHP client as ``rejectionReason``; ``state`` names what
the action met ("tool call running", "no active turn", "turn 'turn-1' active").

**Always legal, even when nothing changes** (:data:`IDEMPOTENT_CHAT_ACTIONS`): actions that
*state a value* rather than *make a change*, so that saying it twice is harmless and refusing
the second would turn two writers agreeing (two clients, or the runtime re-asserting) into an
error. They are still refused when what they address does not exist (``chat/usage`` of a turn
that is not active, reordering a queue that is empty). The session side works the same way,
in :mod:`._validate_session`; this module checks chat actions.

Validation is pure and cheap: one table lookup and, for the no-op test, one reduction whose
result shares every unchanged sub-tree with the state, so the equality test stops at the first
identical object.
"""

from __future__ import annotations

import enum
import operator
import types
from collections.abc import Callable, Mapping
from typing import Any, Final, NoReturn, TypeAlias

from orchestrator.base import IllegalTransitionError, registrar

from ._chat_reducer import find_part, part_id, reduce_chat
from ._tool_call_lifecycle import (
    TOOL_CALL_TRANSITIONS,
    ToolCallAction,
    ToolCallEvent,
    tool_call_event,
    tool_call_guard,
    tool_call_status,
)
from .actions import (
    ChatAction,
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputAnswerChangedAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatPendingMessageRemovedAction,
    ChatQueuedMessagesReorderedAction,
    ChatReasoningAction,
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
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnsLoadedAction,
    ChatTurnStartedAction,
    ChatUsageAction,
    UnknownAction,
)
from .state import (
    ActiveTurn,
    ChatInputAnswer,
    ChatInputAnswered,
    ChatInputMultiSelectQuestion,
    ChatInputNumberAnswerValue,
    ChatInputQuestion,
    ChatInputRequest,
    ChatInputSelectedAnswerValue,
    ChatInputSelectedManyAnswerValue,
    ChatInputSingleSelectQuestion,
    ChatState,
    InputRequestResponsePart,
    MarkdownResponsePart,
    PendingMessageKind,
    ReasoningResponsePart,
    ResponsePart,
    ToolCallResponsePart,
    UnknownChatInputQuestion,
)

__all__ = [
    "IDEMPOTENT_CHAT_ACTIONS",
    "TURN_TRANSITIONS",
    "TurnPhase",
    "answer_problem",
    "describe_chat_state",
    "validate_chat_action",
]


# ─── The turn lifecycle ──────────────────────────────────────────────────────


class TurnPhase(enum.StrEnum):
    """Whether a chat has an active turn."""

    IDLE = "idle"
    ACTIVE = "active"


_TOOL_CALL_ACTION_TYPES: Final = (
    "chat/toolCallStart",
    "chat/toolCallDelta",
    "chat/toolCallReady",
    "chat/toolCallConfirmed",
    "chat/toolCallComplete",
    "chat/toolCallResultConfirmed",
    "chat/toolCallContentChanged",
    "chat/toolCallAuthRequired",
    "chat/toolCallAuthResolved",
)

TURN_TRANSITIONS: Final[Mapping[TurnPhase, Mapping[str, TurnPhase]]] = types.MappingProxyType(
    {
        TurnPhase.IDLE: {
            "chat/turnStarted": TurnPhase.ACTIVE,
        },
        TurnPhase.ACTIVE: {
            "chat/turnComplete": TurnPhase.IDLE,
            "chat/turnCancelled": TurnPhase.IDLE,
            "chat/error": TurnPhase.IDLE,
            "chat/delta": TurnPhase.ACTIVE,
            "chat/reasoning": TurnPhase.ACTIVE,
            "chat/responsePart": TurnPhase.ACTIVE,
            "chat/usage": TurnPhase.ACTIVE,
            "chat/inputRequested": TurnPhase.ACTIVE,
            "chat/inputAnswerChanged": TurnPhase.ACTIVE,
            "chat/inputCompleted": TurnPhase.ACTIVE,
            **dict.fromkeys(_TOOL_CALL_ACTION_TYPES, TurnPhase.ACTIVE),
        },
    }
)
"""``{phase: {action type: next phase}}`` for the actions that depend on the turn.

A chat action type in neither row (activity, draft, pending messages, working directories,
truncation, loading history) is legal in both phases. ``chat/truncated`` always ends the
phase in ``IDLE``; it is left out because it is legal in both.
"""

_TURN_SCOPED: Final = frozenset().union(*TURN_TRANSITIONS.values())

IDEMPOTENT_CHAT_ACTIONS: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        "chat/activityChanged": "sets the activity text (last writer wins)",
        "chat/draftChanged": "sets the draft (clients echo drafts while the user types)",
        "chat/usage": "sets the active turn's usage (producers may report the same totals)",
        "chat/pendingMessageSet": "creates or replaces a pending message by id",
        "chat/queuedMessagesReordered": "sets the queue's order (dropping an item in place)",
        "chat/workingDirectorySet": "adds to a set; the protocol calls it idempotent",
        "chat/workingDirectoryRemoved": "removes from a set; the protocol calls it idempotent",
        "chat/turnsLoaded": "answers a history fetch; an empty last page still ends the paging",
        "chat/inputRequested": "creates or replaces an input request by id",
    }
)
"""Chat action types accepted even when they change nothing: type → why."""


# ─── Describing the state an action met ──────────────────────────────────────


def describe_chat_state(state: ChatState) -> str:
    """The chat's turn phase as an error reports it: ``no active turn`` or ``turn 'x' active``."""
    turn = state.active_turn
    return "no active turn" if turn is None else f"turn {turn.id!r} active"


def _refuse(
    reason: str,
    action: ChatAction | UnknownAction,
    channel: str,
    state: str,
    tool_call_id: str | None = None,
) -> NoReturn:
    raise IllegalTransitionError(
        reason, action_type=action.type, channel=channel, state=state, tool_call_id=tool_call_id
    )


# ─── Chat checks, one per action class that has preconditions ────────────────

_Check: TypeAlias = Callable[[ChatState, Any, str], None]
_CHECKS: dict[type, _Check] = {}


_checks = registrar(_CHECKS)


def _statuses_accepting(event: ToolCallEvent) -> str:
    accepting = [status for status, row in TOOL_CALL_TRANSITIONS.items() if event in row]
    return " or ".join(accepting) if accepting else "no status"


@_checks(
    ChatToolCallDeltaAction,
    ChatToolCallReadyAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatToolCallCompleteAction,
    ChatToolCallResultConfirmedAction,
    ChatToolCallContentChangedAction,
    ChatToolCallAuthRequiredAction,
    ChatToolCallAuthResolvedAction,
)
def _check_tool_call(state: ChatState, action: ToolCallAction, channel: str) -> None:
    turn = state.active_turn
    assert turn is not None  # checked against TURN_TRANSITIONS before
    index = turn.response_parts.find(("tool", action.tool_call_id))
    if index is None:
        _refuse(
            f"turn {turn.id!r} has no tool call {action.tool_call_id!r}",
            action,
            channel,
            describe_chat_state(state),
            action.tool_call_id,
        )
    part = turn.response_parts[index]
    assert isinstance(part, ToolCallResponsePart)
    tool_call = part.tool_call
    status = tool_call_status(tool_call)
    event = tool_call_event(action)
    if event not in TOOL_CALL_TRANSITIONS[status]:
        _refuse(
            f"tool call {action.tool_call_id!r} is {status}; {event} applies only to a tool call "
            f"that is {_statuses_accepting(event)}",
            action,
            channel,
            f"tool call {status}",
            action.tool_call_id,
        )
    guard = tool_call_guard(tool_call, event)
    if guard is not None:
        _refuse(guard, action, channel, f"tool call {status}", action.tool_call_id)


_TURN_ID: Final = operator.attrgetter("id")


@_checks(ChatTurnStartedAction)
def _check_turn_started(state: ChatState, action: ChatTurnStartedAction, channel: str) -> None:
    # A scan in C (map with attrgetter, then ``in``): a long conversation starts every
    # turn with it, and a generator over the turns cost 1 µs a turn.
    if action.turn_id in map(_TURN_ID, state.turns):
        _refuse(
            f"turn id {action.turn_id!r} is already used by a completed turn",
            action,
            channel,
            describe_chat_state(state),
        )


def _check_new_part_id(
    state: ChatState, turn: ActiveTurn, new_id: str | None, action: ChatAction, channel: str
) -> None:
    if new_id is not None and find_part(turn, new_id) is not None:
        _refuse(
            f"turn {turn.id!r} already has a response part with id {new_id!r}",
            action,
            channel,
            describe_chat_state(state),
            new_id if action.type == "chat/toolCallStart" else None,
        )


@_checks(ChatToolCallStartAction)
def _check_tool_call_start(state: ChatState, action: ChatToolCallStartAction, channel: str) -> None:
    assert state.active_turn is not None
    _check_new_part_id(state, state.active_turn, action.tool_call_id, action, channel)


@_checks(ChatResponsePartAction)
def _check_response_part(state: ChatState, action: ChatResponsePartAction, channel: str) -> None:
    assert state.active_turn is not None
    _check_new_part_id(state, state.active_turn, part_id(action.part), action, channel)
    if isinstance(action.part, InputRequestResponsePart):
        _check_request_answers(state, action.part.request, action, channel)


_APPEND_TARGETS: Final[Mapping[type, type[ResponsePart]]] = {
    ChatDeltaAction: MarkdownResponsePart,
    ChatReasoningAction: ReasoningResponsePart,
}


@_checks(ChatDeltaAction, ChatReasoningAction)
def _check_append(
    state: ChatState, action: ChatDeltaAction | ChatReasoningAction, channel: str
) -> None:
    turn = state.active_turn
    assert turn is not None
    found = find_part(turn, action.part_id)
    if found is None:
        _refuse(
            f"turn {turn.id!r} has no response part {action.part_id!r}",
            action,
            channel,
            describe_chat_state(state),
        )
    wanted = _APPEND_TARGETS[type(action)]
    _, part = found
    if not isinstance(part, wanted):
        _refuse(
            f"response part {action.part_id!r} is a {part.kind} part, not a "
            f"{_KIND_NAMES[wanted]} part",
            action,
            channel,
            describe_chat_state(state),
        )


_KIND_NAMES: Final[Mapping[type, str]] = {
    MarkdownResponsePart: "markdown",
    ReasoningResponsePart: "reasoning",
}


def _question_id(question: ChatInputQuestion) -> str | None:
    """A question's id; one of a kind we do not model has the id it was sent with, if any."""
    if isinstance(question, UnknownChatInputQuestion):
        sent = question.raw.get("id")
        return sent if isinstance(sent, str) else None
    return question.id


def _unknown_questions(
    request: ChatInputRequest, answers: Mapping[str, ChatInputAnswer] | None
) -> list[str]:
    asked = {_question_id(question) for question in request.questions or ()}
    return sorted(set(answers or ()) - asked)


#: The answer value kinds each question kind takes.
_ANSWER_KINDS: Final[Mapping[str, frozenset[str]]] = {
    "text": frozenset({"text"}),
    "number": frozenset({"number"}),
    "integer": frozenset({"number"}),
    "boolean": frozenset({"boolean"}),
    "single-select": frozenset({"selected"}),
    "multi-select": frozenset({"selected-many"}),
}


def answer_problem(question: ChatInputQuestion, answer: ChatInputAnswer) -> str | None:
    """Why ``answer`` cannot answer ``question`` (wrong kind, not an integer, an option the
    question does not offer), or None. A skipped question is never a problem here, nor is
    an answer to a question of a kind we do not model (we cannot judge it)."""
    if not isinstance(answer, ChatInputAnswered) or isinstance(question, UnknownChatInputQuestion):
        return None
    value = answer.value
    if value.kind not in _ANSWER_KINDS[question.kind]:
        return f"{question.id} is a {question.kind} question, answered with a {value.kind} value"
    if (
        question.kind == "integer"
        and isinstance(value, ChatInputNumberAnswerValue)
        and not float(value.value).is_integer()
    ):
        return f"{question.id} takes an integer, not {value.value}"
    if isinstance(value, ChatInputSelectedAnswerValue | ChatInputSelectedManyAnswerValue):
        assert isinstance(question, ChatInputSingleSelectQuestion | ChatInputMultiSelectQuestion)
        offered = {option.id for option in question.options}
        chosen = (value.value,) if isinstance(value.value, str) else value.value
        unknown = sorted(set(chosen) - offered)
        if unknown and not question.allow_freeform_input:
            return f"{question.id} offers no option {', '.join(unknown)}"
    return None


def _answer_problems(
    request: ChatInputRequest, answers: Mapping[str, ChatInputAnswer] | None
) -> list[str]:
    questions = {_question_id(question): question for question in request.questions or ()}
    return [
        problem
        for question_id, answer in (answers or {}).items()
        if question_id in questions
        and (problem := answer_problem(questions[question_id], answer)) is not None
    ]


def _open_request(state: ChatState, request_id: str) -> ChatInputRequest | None:
    turn = state.active_turn
    assert turn is not None
    index = turn.response_parts.find(("input", request_id))  # keyed only while unanswered
    if index is None:
        return None
    part = turn.response_parts[index]
    assert isinstance(part, InputRequestResponsePart)
    return part.request


@_checks(ChatInputRequestedAction)
def _check_input_requested(
    state: ChatState, action: ChatInputRequestedAction, channel: str
) -> None:
    _check_request_answers(state, action.request, action, channel)
    # A re-sent request keeps the answers drafted so far unless it brings its own (the
    # reducer, as upstream): it must still ask the questions those answers answer.
    current = _open_request(state, action.request.id) if state.active_turn else None
    if current is not None and action.request.answers is None:
        dropped = _unknown_questions(action.request, current.answers)
        if dropped:
            _refuse(
                f"input request {action.request.id!r} is sent again without the questions "
                f"its drafted answers answer: {', '.join(dropped)}",
                action,
                channel,
                describe_chat_state(state),
            )


def _check_request_answers(
    state: ChatState, request: ChatInputRequest, action: ChatAction, channel: str
) -> None:
    # Invariant: set(request.answers or ()) <= {q.id for q in request.questions or ()}
    unknown = _unknown_questions(request, request.answers)
    if unknown:
        _refuse(
            f"input request {request.id!r} has answers to questions it does not ask: "
            f"{', '.join(unknown)}",
            action,
            channel,
            describe_chat_state(state),
        )
    problems = _answer_problems(request, request.answers)
    if problems:
        _refuse(
            f"input request {request.id!r}: {'; '.join(problems)}",
            action,
            channel,
            describe_chat_state(state),
        )


@_checks(ChatInputAnswerChangedAction, ChatInputCompletedAction)
def _check_input_answer(
    state: ChatState,
    action: ChatInputAnswerChangedAction | ChatInputCompletedAction,
    channel: str,
) -> None:
    request = _open_request(state, action.request_id)
    if request is None:
        _refuse(
            f"there is no open input request {action.request_id!r}",
            action,
            channel,
            describe_chat_state(state),
        )
    if isinstance(action, ChatInputCompletedAction):
        answers = action.answers
    elif action.answer is not None:
        answers = {action.question_id: action.answer}
    else:
        answers = None
    unknown = _unknown_questions(request, answers)
    if unknown:
        _refuse(
            f"input request {action.request_id!r} does not ask {', '.join(unknown)}",
            action,
            channel,
            describe_chat_state(state),
        )
    problems = _answer_problems(request, answers)
    if problems:
        _refuse(
            f"input request {action.request_id!r}: {'; '.join(problems)}",
            action,
            channel,
            describe_chat_state(state),
        )


@_checks(ChatPendingMessageRemovedAction)
def _check_pending_removed(
    state: ChatState, action: ChatPendingMessageRemovedAction, channel: str
) -> None:
    if action.kind is PendingMessageKind.STEERING:
        steering = state.steering_message
        present = steering is not None and steering.id == action.id
    else:
        present = any(m.id == action.id for m in state.queued_messages or ())
    if not present:
        _refuse(
            f"there is no {action.kind} message {action.id!r}",
            action,
            channel,
            describe_chat_state(state),
        )


@_checks(ChatQueuedMessagesReorderedAction)
def _check_reordered(
    state: ChatState, action: ChatQueuedMessagesReorderedAction, channel: str
) -> None:
    if state.queued_messages is None:
        _refuse("there are no queued messages", action, channel, describe_chat_state(state))


@_checks(ChatTruncatedAction)
def _check_truncated(state: ChatState, action: ChatTruncatedAction, channel: str) -> None:
    if action.turn_id is not None and all(turn.id != action.turn_id for turn in state.turns):
        _refuse(
            f"there is no completed turn {action.turn_id!r}",
            action,
            channel,
            describe_chat_state(state),
        )
    # The reducer stamps even a truncation that drops nothing (as upstream): refuse it here.
    keeps_everything = (
        state.turns[-1].id == action.turn_id
        if action.turn_id is not None
        else not state.turns and state.turns_next_cursor is None
    )
    if state.active_turn is None and keeps_everything:
        _refuse("there is nothing to truncate", action, channel, describe_chat_state(state))


@_checks(ChatTurnsLoadedAction)
def _check_turns_loaded(state: ChatState, action: ChatTurnsLoadedAction, channel: str) -> None:
    # Invariant: turn ids are unique within a chat (completed turns and the active one).
    seen: set[str] = set()
    for turn in action.turns:
        if turn.id in seen:
            _refuse(
                f"the page of older turns lists turn id {turn.id!r} twice",
                action,
                channel,
                describe_chat_state(state),
            )
        seen.add(turn.id)
    if state.active_turn is not None and state.active_turn.id in seen:
        _refuse(
            f"the page of older turns holds turn {state.active_turn.id!r}, which is active",
            action,
            channel,
            describe_chat_state(state),
        )


# Turn-scoped actions whose turn_id must name the active turn.
_ADDRESS_ACTIVE_TURN: Final = (
    ChatTurnCompleteAction,
    ChatTurnCancelledAction,
    ChatErrorAction,
    ChatDeltaAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatUsageAction,
    ChatToolCallStartAction,
    ChatToolCallDeltaAction,
    ChatToolCallReadyAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatToolCallCompleteAction,
    ChatToolCallResultConfirmedAction,
    ChatToolCallContentChangedAction,
    ChatToolCallAuthRequiredAction,
    ChatToolCallAuthResolvedAction,
)


#: Whether an action class is one of _ADDRESS_ACTIVE_TURN (the isinstance on the tuple tests
#: its classes one after another, for every chat action).
_ADDRESSES_ACTIVE_TURN: dict[type, bool] = {}


def validate_chat_action(
    state: ChatState,
    action: ChatAction | UnknownAction,
    *,
    channel: str,
    reduced: ChatState | None = None,
) -> None:
    """Refuse ``action`` on chat ``channel`` if it is illegal now or would change nothing.

    Raises :class:`~orchestrator.IllegalTransitionError`; returns None when the action may be
    appended, in which case ``reduce_chat(state, action, now=...)`` changes the state unless
    the action type is in :data:`IDEMPOTENT_CHAT_ACTIONS`. ``reduced`` is
    ``reduce_chat(state, action, now=...)`` when the caller has it already (the runtime
    reduces every action once, then validates); it is computed here otherwise.
    """
    if isinstance(action, UnknownAction):
        _refuse(
            f"{action.type!r} is not a chat action this server knows",
            action,
            channel,
            describe_chat_state(state),
        )
    tool_call_id = getattr(action, "tool_call_id", None)
    turn = state.active_turn
    phase = TurnPhase.IDLE if turn is None else TurnPhase.ACTIVE
    if action.type in _TURN_SCOPED and action.type not in TURN_TRANSITIONS[phase]:
        reason = (
            "there is no active turn"
            if turn is None
            else f"turn {turn.id!r} is still active; it must complete, be cancelled or fail "
            "before another turn starts"
        )
        _refuse(reason, action, channel, describe_chat_state(state), tool_call_id)
    addresses = _ADDRESSES_ACTIVE_TURN.get(type(action))
    if addresses is None:
        addresses = _ADDRESSES_ACTIVE_TURN[type(action)] = isinstance(action, _ADDRESS_ACTIVE_TURN)
    if addresses:
        assert turn is not None
        turn_id = action.turn_id  # type: ignore[union-attr]  # one of _ADDRESS_ACTIVE_TURN
        if turn_id != turn.id:
            _refuse(
                f"turn {turn_id!r} is not the active turn",
                action,
                channel,
                describe_chat_state(state),
                tool_call_id,
            )
    check = _CHECKS.get(type(action))
    if check is not None:
        check(state, action, channel)
    if action.type in IDEMPOTENT_CHAT_ACTIONS:
        return
    # The reducer returns the very same object for a no-op, whatever ``now`` (a property test
    # holds it to that), so identity answers the question without comparing two states.
    if reduced is None:
        reduced = reduce_chat(state, action, now=state.modified_at)
    if reduced is state:
        _refuse(
            "the action would not change the chat",
            action,
            channel,
            _describe_target(state, tool_call_id),
            tool_call_id,
        )


def _describe_target(state: ChatState, tool_call_id: str | None) -> str:
    turn = state.active_turn
    if tool_call_id is not None and turn is not None:
        for part in turn.response_parts:
            if (
                isinstance(part, ToolCallResponsePart)
                and part.tool_call.tool_call_id == tool_call_id
            ):
                return f"tool call {part.tool_call.status}"
    return describe_chat_state(state)
