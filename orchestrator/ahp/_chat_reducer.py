"""The chat reducer: ``reduce_chat(state, action, now=...)`` folds one ``chat/*`` action.

Theory of operation
-------------------
A chat channel's state is a fold of its actions: ``state = reduce_chat(state, action, now=t)``
for each journaled action in order. The reducer is pure: no IO, no clock (the time stamped into
``modified_at`` comes in as ``now``), no trio. It follows the upstream AHP reducer
(``types/channels-chat/reducer.ts``) action for action, so that the shared JSON fixtures hold.

Three rules shape it:

* **A no-op returns the very same object, whatever ``now`` is.** An action that names a turn
  that is not the active one, a part or tool call that does not exist, or a tool call in a
  state that does not accept it, or that would set what is already set, changes nothing (not
  even ``modified_at``; the one upstream exception, a truncation that keeps every turn, still
  stamps the chat) and ``reduce_chat(s, a, now=t) is s``. The validator relies on it: it
  reduces an action once and refuses it when the result *is* the state it started from, never
  comparing two states of thousands of parts. Unchanged sub-trees are shared between the old
  and the new state, never copied.
* **The tool-call lifecycle is a table.**
  :data:`~orchestrator.ahp._tool_call_lifecycle.TOOL_CALL_TRANSITIONS` maps a tool call's status
  and a :class:`~orchestrator.ahp._tool_call_lifecycle.ToolCallEvent` (an action type, refined
  by the payload where the payload picks the target: ``approved``, ``confirmed``,
  ``requiresResultConfirmation``, ``success``) to the next status. The reducer looks the pair
  up *before* building anything (the builders of the next tool-call state are in
  :mod:`orchestrator.ahp._tool_call_builders`); a missing entry is a no-op here and a refusal
  in :mod:`orchestrator.ahp._validate`, which reads the same table. Statuses with an empty row
  are terminal; a turn that ends force-cancels every tool call that is not terminal (reason
  ``skipped``).
* **``status`` is derived, except for its orthogonal flags.** The low five bits (idle, error,
  in progress, input needed) are recomputed from the active turn after every action that can
  change them: input is needed while an input request is unanswered or a tool call waits for a
  confirmation or authentication. The other bits (read, archived, and bits unknown to us) are
  kept, except that a new turn or a new input request clears "read".

Actions of a type this module does not know (:class:`UnknownAction`) leave the state as it is.
So does an action aimed at a part of a kind it does not model (:class:`UnknownResponsePart` has
no id it knows), or at a part without an id. What a newer peer added is carried along: parts
and tool calls are rebuilt with ``evolve``, which keeps their ``unknown_fields``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

from orchestrator.base import evolve, registrar

from ._tool_call_builders import TOOL_CALL_BUILDERS, force_cancel
from ._tool_call_lifecycle import (
    BLOCKING_TOOL_CALL_STATUSES,
    EVENTS_THAT_REFRESH_STATUS,
    TOOL_CALL_TRANSITIONS,
    ToolCallAction,
    next_tool_call_status,
    tool_call_event,
    tool_call_status,
)
from .actions import (
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
    ChatWorkingDirectoryRemovedAction,
    ChatWorkingDirectorySetAction,
    UnknownAction,
)
from .state import (
    ActiveTurn,
    ChatInputAnswer,
    ChatState,
    ErrorInfo,
    InputRequestResponsePart,
    MarkdownResponsePart,
    PendingMessage,
    PendingMessageKind,
    ReasoningResponsePart,
    ResponsePart,
    ResponseParts,
    SessionStatus,
    ToolCallResponsePart,
    ToolCallStreamingState,
    Turn,
    TurnState,
)

__all__ = ["TURN_ENDS", "find_part", "part_id", "reduce_chat", "summary_status"]


#: The actions that end the active turn: one that applies appends the turn it ended to
#: ``turns`` (so it is ``turns[-1]`` of the state it leaves).
TURN_ENDS: Final = (ChatTurnCompleteAction, ChatErrorAction, ChatTurnCancelledAction)


# ─── Status and lookups ──────────────────────────────────────────────────────

_ACTIVITY_MASK: Final = (1 << 5) - 1  # idle, error, in progress, input needed: exclusive
_KEPT_BITS: Final = ~_ACTIVITY_MASK
_IDLE: Final = int(SessionStatus.IDLE)
_ERROR: Final = int(SessionStatus.ERROR)
_IN_PROGRESS: Final = int(SessionStatus.IN_PROGRESS)
_INPUT_NEEDED: Final = int(SessionStatus.INPUT_NEEDED)
_UNREAD_BITS: Final = ~int(SessionStatus.IS_READ)

# The flag values met so far, by value: the status is derived after many actions, and both
# ``SessionStatus(value)`` and an operator between flags run the enum's Python code. Bounded:
# only values of the bits the protocol names (a peer's unknown bits are made each time).
_STATUSES: dict[int, SessionStatus] = {}
_CACHED_BITS: Final = (1 << 7) - 1


def _status_of(value: int) -> SessionStatus:
    """``SessionStatus(value)``, the flag made once per value."""
    status = _STATUSES.get(value)
    if status is None:
        status = SessionStatus(value)
        if 0 <= value <= _CACHED_BITS:
            _STATUSES[value] = status
    return status


def _needs_input(turn: ActiveTurn | None) -> bool:
    if turn is None:
        return False
    # A tally keeps only keys with items: any key (see ResponseParts.tally_of) of an open
    # input request or of a tool call in a blocking status is a part that waits on the user.
    for key in turn.response_parts.tally:  # not count_where: one call per key less
        if key[0] == "input" or key[1] in BLOCKING_TOOL_CALL_STATUSES:
            return True
    return False


def _derived_status(
    status: SessionStatus, turn: ActiveTurn | None, *, failed: bool = False
) -> SessionStatus:
    """``status`` with its activity bits derived from ``turn``, the chat's active turn (see
    :func:`summary_status`): so that a handler building a new state can set its status in
    the same ``evolve``."""
    if failed:
        activity = _ERROR
    elif turn is None:
        activity = _IDLE
    elif _needs_input(turn):
        activity = _INPUT_NEEDED
    else:
        activity = _IN_PROGRESS
    return _status_of((int(status) & _KEPT_BITS) | activity)


def summary_status(state: ChatState, *, failed: bool = False) -> SessionStatus:
    """``state.status`` with its activity bits derived from the active turn.

    ``failed`` (the turn just ended with an error) wins over everything; the bits outside the
    activity mask (read, archived, unknown) are kept as they are.
    """
    return _derived_status(state.status, state.active_turn, failed=failed)


def _unread(status: SessionStatus) -> SessionStatus:
    return _status_of(int(status) & _UNREAD_BITS)


def _refresh_status(state: ChatState) -> ChatState:
    status = summary_status(state)
    return state if status == state.status else evolve(state, status=status)


def part_id(part: ResponsePart) -> str | None:
    """The id ``chat/delta`` and ``chat/reasoning`` address a part by (a tool call's id)."""
    # Exact type tests: this runs for every part on every delta (isinstance on a union is
    # several times slower, and the part classes are final).
    if type(part) is MarkdownResponsePart:
        return part.id
    if type(part) is ToolCallResponsePart:
        return part.tool_call.tool_call_id
    if type(part) is ReasoningResponsePart:
        return part.id
    return None


def find_part(turn: ActiveTurn, wanted_id: str) -> tuple[int, ResponsePart] | None:
    """The first part of ``turn`` whose :func:`part_id` is ``wanted_id``, with its index."""
    index = turn.response_parts.find(("part", wanted_id))
    return None if index is None else (index, turn.response_parts[index])


def _active_turn(state: ChatState, turn_id: str) -> ActiveTurn | None:
    turn = state.active_turn
    return turn if turn is not None and turn.id == turn_id else None


def _find_open_request(turn: ActiveTurn, request_id: str) -> int | None:
    """The index of the unanswered input request ``request_id`` (answered ones are not keyed)."""
    return turn.response_parts.find(("input", request_id))


def _with_parts(state: ChatState, turn: ActiveTurn, parts: ResponseParts) -> ChatState:
    return evolve(state, active_turn=evolve(turn, response_parts=parts))


# ─── Handlers, one per action class ──────────────────────────────────────────

_Handler: TypeAlias = Callable[[ChatState, Any, str], ChatState]
_HANDLERS: dict[type, _Handler] = {}


_handles = registrar(_HANDLERS)


@_handles(ChatTurnStartedAction)
def _turn_started(state: ChatState, action: ChatTurnStartedAction, now: str) -> ChatState:
    turn = ActiveTurn(
        id=action.turn_id, started_at=action.started_at, message=action.message, response_parts=()
    )
    steering, queued = state.steering_message, state.queued_messages
    # A turn started from a pending message consumes it.
    if action.queued_message_id:
        if steering is not None and steering.id == action.queued_message_id:
            steering = None
        if queued is not None:
            queued = tuple(m for m in queued if m.id != action.queued_message_id) or None
    status = _unread(_derived_status(state.status, turn))
    # The same turn started again (refused by validation, replayed from elsewhere) may
    # rebuild exactly what is there: then it is a no-op, and no-ops are the same object.
    if (
        state.active_turn == turn
        and status == state.status
        and steering is state.steering_message
        and queued is state.queued_messages
    ):
        return state
    return evolve(
        state,
        active_turn=turn,
        status=status,
        modified_at=now,
        steering_message=steering,
        queued_messages=queued,
    )


def _end_turn(
    state: ChatState,
    turn_id: str,
    now: str,
    *,
    outcome: TurnState,
    duration: float,
    error: ErrorInfo | None = None,
) -> ChatState:
    active = _active_turn(state, turn_id)
    if active is None:
        return state
    parts = tuple(
        ToolCallResponsePart(tool_call=force_cancel(part.tool_call))
        if isinstance(part, ToolCallResponsePart)
        and TOOL_CALL_TRANSITIONS[tool_call_status(part.tool_call)]
        else part
        for part in active.response_parts
    )
    turn = Turn(
        id=active.id,
        started_at=active.started_at,
        # The duration comes from the producer; a negative one would make no sense to show.
        duration=max(0, duration),
        message=active.message,
        response_parts=parts,
        usage=active.usage,
        state=outcome,
        error=error,
    )
    return evolve(
        state,
        turns=(*state.turns, turn),
        active_turn=None,
        modified_at=now,
        status=_derived_status(state.status, None, failed=outcome is TurnState.ERROR),
    )


@_handles(ChatTurnCompleteAction)
def _turn_complete(state: ChatState, action: ChatTurnCompleteAction, now: str) -> ChatState:
    return _end_turn(
        state, action.turn_id, now, outcome=TurnState.COMPLETE, duration=action.duration
    )


@_handles(ChatTurnCancelledAction)
def _turn_cancelled(state: ChatState, action: ChatTurnCancelledAction, now: str) -> ChatState:
    return _end_turn(
        state, action.turn_id, now, outcome=TurnState.CANCELLED, duration=action.duration
    )


@_handles(ChatErrorAction)
def _error(state: ChatState, action: ChatErrorAction, now: str) -> ChatState:
    return _end_turn(
        state,
        action.turn_id,
        now,
        outcome=TurnState.ERROR,
        duration=action.duration,
        error=action.error,
    )


def _append_text(
    state: ChatState, turn_id: str, wanted_id: str, content: str, kind: type[Any]
) -> ChatState:
    """``chat/delta`` and ``chat/reasoning``: append to the first part with that id, if its kind
    is ``kind`` (a delta aimed at a part of another kind is dropped)."""
    turn = _active_turn(state, turn_id)
    found = None if turn is None else find_part(turn, wanted_id)
    if turn is None or found is None or not content:
        return state
    index, part = found
    if not isinstance(part, kind):
        return state
    assert isinstance(part, MarkdownResponsePart | ReasoningResponsePart)
    updated = evolve(part, content=part.content + content)
    return _with_parts(state, turn, turn.response_parts.set(index, updated))


@_handles(ChatDeltaAction)
def _delta_text(state: ChatState, action: ChatDeltaAction, now: str) -> ChatState:
    return _append_text(state, action.turn_id, action.part_id, action.content, MarkdownResponsePart)


@_handles(ChatReasoningAction)
def _reasoning(state: ChatState, action: ChatReasoningAction, now: str) -> ChatState:
    return _append_text(
        state, action.turn_id, action.part_id, action.content, ReasoningResponsePart
    )


@_handles(ChatResponsePartAction)
def _response_part(state: ChatState, action: ChatResponsePartAction, now: str) -> ChatState:
    turn = _active_turn(state, action.turn_id)
    if turn is None:
        return state
    return _with_parts(state, turn, turn.response_parts.append(action.part))


@_handles(ChatUsageAction)
def _usage(state: ChatState, action: ChatUsageAction, now: str) -> ChatState:
    turn = _active_turn(state, action.turn_id)
    if turn is None or turn.usage == action.usage:
        return state
    return evolve(state, active_turn=evolve(turn, usage=action.usage))


@_handles(ChatActivityChangedAction)
def _activity(state: ChatState, action: ChatActivityChangedAction, now: str) -> ChatState:
    if state.activity == action.activity:
        return state
    return evolve(state, activity=action.activity)


@_handles(ChatDraftChangedAction)
def _draft(state: ChatState, action: ChatDraftChangedAction, now: str) -> ChatState:
    if state.draft == action.draft:
        return state
    return evolve(state, draft=action.draft)


@_handles(ChatWorkingDirectorySetAction)
def _directory_set(state: ChatState, action: ChatWorkingDirectorySetAction, now: str) -> ChatState:
    directories = state.working_directories or ()
    if action.directory in directories:
        return state
    return evolve(state, working_directories=(*directories, action.directory))


@_handles(ChatWorkingDirectoryRemovedAction)
def _directory_removed(
    state: ChatState, action: ChatWorkingDirectoryRemovedAction, now: str
) -> ChatState:
    directories = state.working_directories
    if directories is None or action.directory not in directories:
        return state
    index = directories.index(action.directory)
    # An emptied subset stays an (empty) subset: it does not fall back to the session's set.
    return evolve(state, working_directories=directories[:index] + directories[index + 1 :])


# ── Tool calls ──


@_handles(ChatToolCallStartAction)
def _tool_call_start(state: ChatState, action: ChatToolCallStartAction, now: str) -> ChatState:
    turn = _active_turn(state, action.turn_id)
    if turn is None:
        return state
    tool_call = ToolCallStreamingState(
        tool_call_id=action.tool_call_id,
        tool_name=action.tool_name,
        display_name=action.display_name,
        intention=action.intention,
        contributor=action.contributor,
        meta=action.meta,
    )
    return _with_parts(
        state, turn, turn.response_parts.append(ToolCallResponsePart(tool_call=tool_call))
    )


@_handles(
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
def _tool_call(state: ChatState, action: ToolCallAction, now: str) -> ChatState:
    turn = _active_turn(state, action.turn_id)
    if turn is None:
        return state
    # The first tool call with that id moves (ids are unique in a validated turn).
    index = turn.response_parts.find(("tool", action.tool_call_id))
    if index is None:
        return state
    part = turn.response_parts[index]
    assert isinstance(part, ToolCallResponsePart)
    event = tool_call_event(action)
    target = next_tool_call_status(part.tool_call, event)
    if target is None:
        return state
    updated = TOOL_CALL_BUILDERS[event](part.tool_call, action, target)
    if updated is part.tool_call or updated == part.tool_call:
        return state
    parts = turn.response_parts.set(index, evolve(part, tool_call=updated))
    moved = _with_parts(state, turn, parts)
    return _refresh_status(moved) if event in EVENTS_THAT_REFRESH_STATUS else moved


# ── History ──


@_handles(ChatTruncatedAction)
def _truncated(state: ChatState, action: ChatTruncatedAction, now: str) -> ChatState:
    if action.turn_id is None:
        turns: tuple[Turn, ...] = ()
        cursor = None  # nothing older is left to load
    else:
        index = next((i for i, t in enumerate(state.turns) if t.id == action.turn_id), None)
        if index is None:
            return state
        turns, cursor = state.turns[: index + 1], state.turns_next_cursor
    if (
        state.active_turn is None
        and len(turns) == len(state.turns)
        and cursor == state.turns_next_cursor
    ):
        # Nothing is dropped, yet upstream stamps the chat modified (fixture 064); the same
        # object when it already was, so that a no-op at ``now`` stays an identity.
        return state if state.modified_at == now else evolve(state, modified_at=now)
    truncated = evolve(
        state, turns=turns, turns_next_cursor=cursor, active_turn=None, modified_at=now
    )
    return evolve(truncated, status=summary_status(truncated))


@_handles(ChatTurnsLoadedAction)
def _turns_loaded(state: ChatState, action: ChatTurnsLoadedAction, now: str) -> ChatState:
    known = {turn.id for turn in state.turns}
    older = tuple(turn for turn in action.turns if turn.id not in known)
    if not older and action.turns_next_cursor == state.turns_next_cursor:
        return state
    return evolve(state, turns=(*older, *state.turns), turns_next_cursor=action.turns_next_cursor)


# ── Input requests ──


@_handles(ChatInputRequestedAction)
def _input_requested(state: ChatState, action: ChatInputRequestedAction, now: str) -> ChatState:
    turn = state.active_turn
    if turn is None:
        return state
    index = _find_open_request(turn, action.request.id)
    if index is None:
        parts = turn.response_parts.append(InputRequestResponsePart(request=action.request))
    else:
        # A re-sent request keeps the answers drafted so far unless it brings its own.
        current = turn.response_parts[index]
        assert isinstance(current, InputRequestResponsePart)
        request = action.request
        if request.answers is None and current.request.answers is not None:
            request = evolve(request, answers=current.request.answers)
        if request == current.request:
            return state  # re-sent as it stands: nothing new to ask
        parts = turn.response_parts.set(index, evolve(current, request=request))
    requested = _with_parts(state, turn, parts)
    return evolve(
        requested,
        status=_unread(summary_status(requested)),
        modified_at=now,
    )


def _open_request(
    state: ChatState, request_id: str
) -> tuple[ActiveTurn, int, InputRequestResponsePart] | None:
    turn = state.active_turn
    index = None if turn is None else _find_open_request(turn, request_id)
    if turn is None or index is None:
        return None
    part = turn.response_parts[index]
    assert isinstance(part, InputRequestResponsePart)
    return turn, index, part


def _answers_or_none(answers: dict[str, ChatInputAnswer]) -> dict[str, ChatInputAnswer] | None:
    return answers or None


@_handles(ChatInputAnswerChangedAction)
def _input_answer_changed(
    state: ChatState, action: ChatInputAnswerChangedAction, now: str
) -> ChatState:
    found = _open_request(state, action.request_id)
    if found is None:
        return state
    turn, index, part = found
    request = part.request
    answers = dict(request.answers or {})
    if action.answer is None:
        answers.pop(action.question_id, None)
    else:
        answers[action.question_id] = action.answer
    if answers == (request.answers or {}):
        return state
    part = evolve(part, request=evolve(request, answers=_answers_or_none(answers)))
    changed = _with_parts(state, turn, turn.response_parts.set(index, part))
    return evolve(changed, modified_at=now)


@_handles(ChatInputCompletedAction)
def _input_completed(state: ChatState, action: ChatInputCompletedAction, now: str) -> ChatState:
    found = _open_request(state, action.request_id)
    if found is None:
        return state
    turn, index, part = found
    request = part.request
    # The part stays in the turn as the record of what was asked and answered.
    answers = {**(request.answers or {}), **(action.answers or {})}
    part = evolve(
        part,
        request=evolve(request, answers=_answers_or_none(answers)),
        response=action.response,
    )
    completed = _with_parts(state, turn, turn.response_parts.set(index, part))
    return evolve(completed, status=summary_status(completed), modified_at=now)


# ── Pending messages ──


@_handles(ChatPendingMessageSetAction)
def _pending_set(state: ChatState, action: ChatPendingMessageSetAction, now: str) -> ChatState:
    entry = PendingMessage(id=action.id, message=action.message)
    if action.kind is PendingMessageKind.STEERING:
        if state.steering_message == entry:
            return state
        return evolve(state, steering_message=entry)
    queued = state.queued_messages or ()
    index = next((i for i, m in enumerate(queued) if m.id == action.id), None)
    if index is None:
        return evolve(state, queued_messages=(*queued, entry))
    if queued[index] == entry:
        return state
    return evolve(state, queued_messages=(*queued[:index], entry, *queued[index + 1 :]))


@_handles(ChatPendingMessageRemovedAction)
def _pending_removed(
    state: ChatState, action: ChatPendingMessageRemovedAction, now: str
) -> ChatState:
    if action.kind is PendingMessageKind.STEERING:
        steering = state.steering_message
        if steering is None or steering.id != action.id:
            return state
        return evolve(state, steering_message=None)
    queued = state.queued_messages
    if queued is None:
        return state
    kept = tuple(m for m in queued if m.id != action.id)
    if len(kept) == len(queued):
        return state
    return evolve(state, queued_messages=kept or None)


@_handles(ChatQueuedMessagesReorderedAction)
def _queued_reordered(
    state: ChatState, action: ChatQueuedMessagesReorderedAction, now: str
) -> ChatState:
    queued = state.queued_messages
    if queued is None:
        return state
    by_id = {m.id: m for m in queued}
    # Listed ids first (unknown and repeated ids ignored), then the rest in their old order.
    listed = [by_id[i] for i in dict.fromkeys(action.order) if i in by_id]
    placed = {m.id for m in listed}
    reordered = (*listed, *(m for m in queued if m.id not in placed))
    if reordered == queued:
        return state
    return evolve(state, queued_messages=reordered)


# ─── The reducer ─────────────────────────────────────────────────────────────


def reduce_chat(state: ChatState, action: ChatAction | UnknownAction, *, now: str) -> ChatState:
    """The chat state after ``action``; ``state`` itself if the action changes nothing.

    ``now`` (an ISO 8601 timestamp) becomes ``modified_at`` where the protocol says the chat
    was modified: a turn starts or ends, history is truncated, an input request changes.
    Never raises for a well-typed action: what the state cannot take is ignored, as upstream.
    Whether an action *should* be applied is
    :func:`orchestrator.ahp._validate.validate_chat_action`'s question.
    """
    handler = _HANDLERS.get(type(action))
    if handler is None:
        return state
    return handler(state, action, now)
