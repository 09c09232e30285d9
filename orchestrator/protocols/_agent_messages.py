"""Conversation history for the agent channel: what a finished turn was, as agent-channel
events, and the facts that undo, truncate and restore a chat's history.

The journal keeps these events in its ``agent_messages`` table, one row per event. They are
written in the transaction of the fact that ends the turn. A client reconnecting to the agent
channel is replayed the rows of its chat, in order, then live state. Undo and truncation
are ``chat/truncated`` facts: the chat's state drops the turns, and their rows are marked
deleted (never removed). Restoring re-appends the dropped turns' own facts, which brings
the turns back into the chat's state and their rows back into the replay.

Pure: turns and facts in, events and actions out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from orchestrator.ahp import TURN_ENDS, reduce_chat
from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatQueuedMessagesReorderedAction,
    ChatReasoningAction,
    ChatTruncatedAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatState,
    InputRequestResponsePart,
    MarkdownResponsePart,
    ReasoningResponsePart,
    ResponsePart,
    SessionStatus,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallCompletedState,
    ToolCallResponsePart,
    ToolResultTextContent,
    Turn,
    TurnState,
    known_questions,
)
from orchestrator.base import RunError, evolve
from orchestrator.core import (
    PRINCIPAL_META,
    STEERING_META,
    Action,
    Fact,
    artifact_of,
    artifact_words,
    remote_task_of,
    remote_task_words,
    turn_text,
)

__all__ = [
    "TURN_ENDS",
    "notice_event",
    "restore_actions",
    "truncate_action",
    "turn_from_facts",
    "turn_messages",
    "undo_action",
]

#: Chat actions that are not part of any turn (a restore does not replay them).
_NOT_OF_A_TURN = (
    ChatPendingMessageSetAction,
    ChatPendingMessageRemovedAction,
    ChatQueuedMessagesReorderedAction,
    ChatTruncatedAction,
)


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"channel": "agent", "type": kind, **fields}


def turn_messages(turn: Turn, *, steering: bool = False) -> list[dict[str, Any]]:
    """A finished turn as the agent-channel events a client replays, in order.

    The user's message comes first as the ``prompt`` that started the turn; worker
    notifications are left out (the team channel carries them); a remote task's states and
    artifacts are ``remote_task`` and ``artifact`` events, in words (:func:`notice_event`).
    ``steering``: as :func:`turn_so_far`'s.
    """
    events = turn_so_far(turn, steering=steering)
    if turn.state is TurnState.COMPLETE:
        events.append(_event("result", summary=turn_text(turn)))
    else:
        message = turn.error.message if turn.error is not None else str(turn.state)
        events.append(_event("error", message=message))
    events.append(_event("done"))
    return events


def turn_so_far(turn: Turn | ActiveTurn, *, steering: bool = False) -> list[dict[str, Any]]:
    """A turn's events up to its end (a running turn's, as streamed so far): its prompt,
    then its text, reasoning, tool calls and results, and questions.

    ``steering``: the steering messages taken into the turn are events too, where they were
    taken in (``{"type": "steering", "text", "messageId", "principal"}``, the principal
    None when not recorded). The transcript shows them; the agent channel's history, whose
    clients sent them, leaves them out."""
    events = [_event("prompt", prompt=turn.message.text)]
    for part in turn.response_parts:
        match part:
            case SystemNotificationResponsePart(content=content, meta=meta) if (
                steering and meta is not None and STEERING_META in meta
            ):
                principal = meta.get(PRINCIPAL_META)
                events.append(
                    _event(
                        "steering",
                        text=content,
                        messageId=meta[STEERING_META],
                        principal=principal if isinstance(principal, str) else None,
                    )
                )
            case MarkdownResponsePart(content=content) if content:
                events.append(_event("text", content=content))
            case ReasoningResponsePart(content=content) if content:
                events.append(_event("thinking", content=content))
            case ToolCallResponsePart(tool_call=call):
                events.append(
                    _event(
                        "tool_invocation",
                        toolCallId=call.tool_call_id,
                        toolName=call.tool_name,
                        args=_arguments(getattr(call, "tool_input", None)),
                    )
                )
                if isinstance(call, ToolCallCompletedState):
                    text = "\n".join(
                        c.text for c in call.content or () if isinstance(c, ToolResultTextContent)
                    )
                    events.append(_event("tool_result", toolCallId=call.tool_call_id, result=text))
                elif isinstance(call, ToolCallCancelledState):
                    reason = call.reason_message if isinstance(call.reason_message, str) else None
                    events.append(
                        _event(
                            "tool_result",
                            toolCallId=call.tool_call_id,
                            result=f"cancelled: {reason or call.reason}",
                        )
                    )
            case InputRequestResponsePart(request=request):
                asked = [q.message for q in known_questions(request.questions) if q.message]
                events.append(_event("question", questions=asked or [request.message or ""]))
            case SystemNotificationResponsePart():
                notice = notice_event(part)
                if notice is not None:
                    events.append(notice)
            case _:
                pass
    return events


def notice_event(part: ResponsePart) -> dict[str, Any] | None:
    """A part that records a remote teammate's task state (``remote_task``) or an artifact
    (``artifact``), as an event whose ``text`` says it in words; None for any other part.

    The spec's events take added types; a client that does not know them ignores them."""
    remote = remote_task_of(part)
    if remote is not None:
        return _event(
            "remote_task",
            remoteTaskId=str(remote.get("remoteTaskId") or ""),
            state=str(remote.get("state") or ""),
            text=remote_task_words(remote),
        )
    artifact = artifact_of(part)
    if artifact is not None:
        return _event(
            "artifact",
            artifactId=str(artifact.get("artifactId") or ""),
            name=str(artifact.get("name") or ""),
            mediaType=str(artifact.get("mediaType") or ""),
            text=artifact_words(artifact),
        )
    return None


def _arguments(tool_input: object) -> Any:
    if isinstance(tool_input, str):
        try:
            return json.loads(tool_input)
        # ValueError: not JSON, or a number past the digit limit; RecursionError: too deep
        except (ValueError, RecursionError):
            return {"input": tool_input}
    return {}


def turn_from_facts(chat: str, facts: Iterable[Fact]) -> Turn | None:
    """The last turn the chat facts ``facts`` (from a ``chat/turnStarted`` on) record."""
    state = _fold(chat, facts)
    return state.turns[-1] if state.turns else None


def _fold(chat: str, facts: Iterable[Fact]) -> ChatState:
    """The turns ``facts`` record for ``chat`` (its catalog fields are left blank)."""
    state = ChatState(resource=chat, title="", status=SessionStatus.IDLE, modified_at="", turns=())
    for action, at in _coalesced(fact for fact in facts if fact.channel == chat):
        state = reduce_chat(state, action, now=at)  # type: ignore[arg-type]
    return state


def _coalesced(facts: Iterable[Fact]) -> Iterator[tuple[Action, str]]:
    """The chat's actions with each run of text appended to one part merged into one
    append: the same turn for the reducer, in a fraction of the steps (a streamed answer
    is mostly deltas)."""
    pending: ChatDeltaAction | ChatReasoningAction | None = None
    pending_at = ""
    pieces: list[str] = []
    for fact in facts:
        action = fact.action
        if (
            isinstance(action, ChatDeltaAction | ChatReasoningAction)
            and pending is not None
            and type(action) is type(pending)
            and (action.turn_id, action.part_id) == (pending.turn_id, pending.part_id)
        ):
            pieces.append(action.content)
            pending_at = fact.at
            continue
        if pending is not None:
            yield evolve(pending, content="".join(pieces)), pending_at
            pending = None
        if isinstance(action, ChatDeltaAction | ChatReasoningAction):
            pending, pending_at, pieces = action, fact.at, [action.content]
        else:
            yield action, fact.at
    if pending is not None:
        yield evolve(pending, content="".join(pieces)), pending_at


# ── editing history ───────────────────────────────────────────────────────


def _idle(chat: ChatState) -> None:
    if chat.active_turn is not None:
        raise RunError(f"{chat.resource} has a turn running: its history can change once it ends")


def undo_action(chat: ChatState) -> ChatTruncatedAction:
    """Remove the chat's last turn."""
    _idle(chat)
    if not chat.turns:
        raise RunError(f"{chat.resource} has no turn to undo")
    keep = chat.turns[-2].id if len(chat.turns) > 1 else None
    return ChatTruncatedAction(turn_id=keep)


def truncate_action(chat: ChatState, keep: str | None) -> ChatTruncatedAction:
    """Keep the chat's turns up to and including ``keep`` (None: remove them all)."""
    _idle(chat)
    ids = [turn.id for turn in chat.turns]
    if keep is not None and keep not in ids:
        raise RunError(f"{chat.resource} has no turn {keep!r} (its turns: {', '.join(ids)})")
    if keep == (ids[-1] if ids else None):
        raise RunError(f"{chat.resource} has no turn after {keep or 'the start'} to remove")
    return ChatTruncatedAction(turn_id=keep)


def restore_actions(chat: ChatState, facts: Sequence[Fact]) -> list[Action]:
    """The actions that bring back the turns the chat's last truncation removed.

    ``facts``: the session's facts. Refused when the chat has changed since that
    truncation (a turn run since would end up before the restored ones).
    """
    _idle(chat)
    mine = [f for f in facts if f.channel == chat.resource]
    cuts = [i for i, f in enumerate(mine) if isinstance(f.action, ChatTruncatedAction)]
    if not cuts:
        raise RunError(f"{chat.resource} has nothing to restore: its history was never cut")
    cut = mine[cuts[-1]]
    assert isinstance(cut.action, ChatTruncatedAction)
    last = chat.turns[-1].id if chat.turns else None
    if last != cut.action.turn_id or any(
        isinstance(f.action, ChatTurnStartedAction) for f in mine[cuts[-1] + 1 :]
    ):
        raise RunError(
            f"{chat.resource} has moved on since its history was cut at sequence "
            f"{cut.sequence}: restoring would put old turns after new ones"
        )
    # The turns the cut removed: in the chat as it stood before the cut, after the kept one.
    earlier = mine[: cuts[-1]]
    before = _fold(chat.resource, earlier)
    ids = [turn.id for turn in before.turns]
    kept = ids.index(cut.action.turn_id) + 1 if cut.action.turn_id in ids else 0
    wanted = set(ids[kept:])
    # Each turn's facts run from its chat/turnStarted to the fact that ends it; a turn
    # restored before appears twice in the log, and its latest run is the one to take.
    segments: dict[str, list[Fact]] = {}
    current: list[Fact] | None = None
    for fact in earlier:
        action = fact.action
        if isinstance(action, ChatTurnStartedAction):
            current = [] if action.turn_id in wanted else None
            if current is not None:
                segments[action.turn_id] = current
        if current is not None and not isinstance(action, _NOT_OF_A_TURN):
            current.append(fact)
        if isinstance(action, TURN_ENDS):
            current = None
    removed = [fact for turn_id in ids[kept:] for fact in segments.get(turn_id, [])]
    actions: list[Action] = []
    for fact in removed:
        action = fact.action
        if isinstance(action, ChatTurnStartedAction) and action.queued_message_id is not None:
            # The queued message it took is long gone: restore the turn, not the queue.
            action = ChatTurnStartedAction(
                turn_id=action.turn_id, started_at=action.started_at, message=action.message
            )
        actions.append(action)
    if not actions:
        raise RunError(f"{chat.resource}: the last cut removed no turn")
    return actions
