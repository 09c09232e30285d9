"""A chat's conversation as a model reads it, derived from the chat's state (never kept twice).

Theory of operation: every turn a restart did not interrupt becomes its user message, then
its response parts grouped into model rounds. A round is the answer text it streamed and
the tool calls it asked for (an :class:`AssistantMessage`), followed by one
:class:`ToolMessage` per call with what the call came to. A round ends where text follows a
tool call or where the next call was asked for by another round (``_meta.round``). The active
turn is rendered the same way, so a model's next round sees its own earlier rounds of the
turn and their results.

A steering message the user injected into a running turn is a user message where it was
injected (the runtime keeps it in the turn as a system-notification part). So is the prompt that
asks again for an answer that did not fit the agent's output_schema.

What a model does not see: reasoning (providers do not take it back), worker notifications
(the delegate call's result already carries the worker's report) and turns a restart cut off
(they ran again or were reported failed).

Pure: no trio and no IO.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final, TypeAlias, TypeGuard

import attrs

from orchestrator.ahp.state import (
    ActiveTurn,
    ChatState,
    MarkdownResponsePart,
    ResponsePart,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallCompletedState,
    ToolCallResponsePart,
    ToolCallState,
    Turn,
)
from orchestrator.core import (
    OUTPUT_RETRY_META,
    STEERING_META,
    is_interrupted,
    outcome_of,
    round_of,
)

__all__ = [
    "AssistantMessage",
    "AssistantToolCall",
    "ToolMessage",
    "TranscriptMessage",
    "UserMessage",
    "tool_call_ids",
    "transcript",
]

#: What a model reads for a call that never finished (a turn that ended around it).
UNFINISHED: Final = "{tool} did not finish: {status}"


@attrs.frozen(kw_only=True)
class UserMessage:
    """What the user (or, for a worker, the delegating agent) asked."""

    text: str


@attrs.frozen(kw_only=True)
class AssistantToolCall:
    """One call the model asked for; ``arguments`` is its input as JSON text."""

    tool_call_id: str
    tool_name: str
    arguments: str


@attrs.frozen(kw_only=True)
class AssistantMessage:
    """One model round: the text it streamed and the calls it asked for."""

    text: str
    tool_calls: tuple[AssistantToolCall, ...] = ()


@attrs.frozen(kw_only=True)
class ToolMessage:
    """What one call came to, as the model is told."""

    tool_call_id: str
    tool_name: str
    content: str


TranscriptMessage: TypeAlias = UserMessage | AssistantMessage | ToolMessage


def transcript(chat: ChatState) -> tuple[TranscriptMessage, ...]:
    """``chat``'s conversation, oldest first, ending with the active turn's rounds so far."""
    messages: list[TranscriptMessage] = []
    turns: list[Turn | ActiveTurn] = [t for t in chat.turns if not is_interrupted(t)]
    if chat.active_turn is not None:
        turns.append(chat.active_turn)
    for turn in turns:
        messages.append(UserMessage(text=turn.message.text))
        messages.extend(_rounds(turn.response_parts))
    return tuple(messages)


def tool_call_ids(chat: ChatState) -> set[str]:
    """Every tool call id the chat holds, interrupted turns included (a new call must not
    reuse one: its input request id, ``input-<id>``, would clash)."""
    turns: list[Turn | ActiveTurn] = list(chat.turns)
    if chat.active_turn is not None:
        turns.append(chat.active_turn)
    return {
        part.tool_call.tool_call_id
        for turn in turns
        for part in turn.response_parts
        if isinstance(part, ToolCallResponsePart)
    }


def _rounds(parts: Iterable[ResponsePart]) -> list[TranscriptMessage]:
    messages: list[TranscriptMessage] = []
    text: list[str] = []
    calls: list[ToolCallState] = []

    def flush() -> None:
        if text or calls:
            messages.append(
                AssistantMessage(
                    text="".join(text), tool_calls=tuple(_assistant_call(c) for c in calls)
                )
            )
            messages.extend(_result(c) for c in calls)
        text.clear()
        calls.clear()

    for part in parts:
        if isinstance(part, MarkdownResponsePart):
            if calls:
                flush()
            text.append(part.content)
        elif isinstance(part, SystemNotificationResponsePart):
            meta = part.meta or {}
            if STEERING_META in meta or OUTPUT_RETRY_META in meta:
                flush()
                content = part.content
                said = content if isinstance(content, str) else content.markdown
                messages.append(UserMessage(text=said))
        elif isinstance(part, ToolCallResponsePart):
            call = part.tool_call
            if calls and round_of(calls[-1]) != round_of(call):
                flush()
            calls.append(call)
    flush()
    return messages


def _assistant_call(call: ToolCallState) -> AssistantToolCall:
    """The call as the model asked for it.

    Input that is not a JSON object (a model's malformed JSON, a call cut off mid-stream) goes
    back as ``{}``. Servers refuse a history holding it. The call's result already says what
    was wrong."""
    arguments = getattr(call, "tool_input", None)
    return AssistantToolCall(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        arguments=arguments if _is_json_object(arguments) else "{}",
    )


def _is_json_object(text: object) -> TypeGuard[str]:
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    # ValueError: not JSON, or a number past the digit limit; RecursionError: too deep
    except (ValueError, RecursionError):
        return False


def _result(call: ToolCallState) -> ToolMessage:
    if isinstance(call, ToolCallCompletedState | ToolCallCancelledState):
        content = outcome_of(call).output
    else:
        content = UNFINISHED.format(tool=call.tool_name, status=call.status)
    return ToolMessage(tool_call_id=call.tool_call_id, tool_name=call.tool_name, content=content)
