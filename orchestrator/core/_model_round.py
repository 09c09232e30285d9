"""The contract between the runtime and a model backend.

Theory of operation: a turn is a loop of *model rounds*. The runtime asks the
backend for one round (:meth:`Backend.stream_round`), turning each
:data:`ModelEvent` into AHP facts as it arrives (text → ``chat/delta``,
reasoning → ``chat/reasoning``, a tool call → ``chat/toolCallStart``, its streamed input
→ ``chat/toolCallDelta``, the complete call → ``chat/toolCallReady``). When a
round requested tool calls, the runtime runs them (delegating to workers, handing
off, asking the user, waiting for approvals, or executing a plain tool) and starts
the next round with their results visible in :class:`RoundContext`. A round that
requests no tool call ends the turn.

Backends are IO shells (they may sleep, stream over HTTP...) but they never
write facts themselves: everything they produce goes through the runtime, which
validates, appends and broadcasts it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from orchestrator.ahp.state import ChatState
from orchestrator.spec import ToolDefinition

__all__ = [
    "Backend",
    "ModelEvent",
    "Notice",
    "ReasoningDelta",
    "RemoteBackend",
    "RoundContext",
    "TextDelta",
    "ToolCallInputDelta",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolOutcome",
    "UsageReport",
]


@attrs.frozen(kw_only=True)
class TextDelta:
    """A chunk of answer text (markdown)."""

    text: str


@attrs.frozen(kw_only=True)
class ReasoningDelta:
    """A chunk of reasoning ("thinking") text, kept apart from the answer."""

    text: str


@attrs.frozen(kw_only=True)
class ToolCallStarted:
    """The model began a tool call whose input is still streaming.

    The input follows in :class:`ToolCallInputDelta` chunks; the call is complete only with
    the :class:`ToolCallRequest` of the same id. A round that ends without that request (a
    stream cut in the middle) never runs the call: the turn ends in error and the call is
    recorded cancelled. Backends that know a call whole send just the request.
    """

    tool_call_id: str
    tool_name: str


@attrs.frozen(kw_only=True)
class ToolCallInputDelta:
    """A fragment of a started call's input (JSON text, as the model streams it)."""

    tool_call_id: str
    text: str


@attrs.frozen(kw_only=True)
class ToolCallRequest:
    """The model asks for one tool call; ``arguments`` is the decoded JSON input.

    Several requests in one round run in parallel (delegations up to the team's
    parallel budget).

    ``input_error`` is set when the call cannot run as asked: input that is not a JSON
    object, does not fit the tool's schema, or names no tool on offer. The call is recorded
    with ``raw_input`` and completes failed with the message. The model reads it in its next
    round. Nothing runs.
    """

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    input_error: str | None = None
    raw_input: str | None = None


@attrs.frozen(kw_only=True)
class Notice:
    """Something the answering side did that is neither text nor a tool call.

    A remote teammate's task changed state, say, or sent an artifact. It is recorded as a
    system-notification part of the turn: ``text`` for a person, ``meta`` (JSON values, kept
    as given) for the projections. A model never reads it back.
    """

    text: str
    meta: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class UsageReport:
    """Token usage of the round, and what the server said about it (for its trace)."""

    input_tokens: int
    output_tokens: int
    model: str | None = None  # the model that answered, as the server named it
    finish_reasons: tuple[str, ...] = ()
    server: str | None = None  # the URL the round was asked of


ModelEvent = (
    TextDelta
    | ReasoningDelta
    | Notice
    | ToolCallStarted
    | ToolCallInputDelta
    | ToolCallRequest
    | UsageReport
)


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What one tool call of an earlier round came to, as the model sees it."""

    tool_call_id: str
    tool_name: str
    success: bool
    output: str


@attrs.frozen(kw_only=True)
class RoundContext:
    """Everything a backend may look at to produce the next round.

    - ``history`` is the chat's conversation in order (role, text) pairs, derived from the
      chat state, not kept twice.
    - ``round_index`` counts the rounds already done in this turn (0 for the first).
    - ``outcomes`` are the results of the previous round's tool calls.
    - ``steering`` is the steering messages injected into this turn so far, oldest first (a
      model sees them as user messages after the history).
    """

    chat: str
    agent: str
    task: str
    round_index: int
    history: Sequence[tuple[str, str]] = ()
    outcomes: Sequence[ToolOutcome] = ()
    steering: Sequence[str] = ()
    # How many of this chat's turns a restart cut off: a turn run again after one sees the
    # same history as the first attempt, and may need to tell its tool call ids apart.
    attempt: int = 0
    chat_state: ChatState | None = None
    tools: Sequence[ToolDefinition] = ()
    # Set for the round that answers again because the turn's answer did not fit the agent's
    # output_schema: what the model is told (also in ``chat_state``, as a user message).
    output_retry: str | None = None


class Backend(Protocol):
    """A source of model rounds for one agent definition."""

    def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        """Stream one model round (an async generator: the runtime closes it when the round
        ends, however it ends). Raising ends the turn in error."""
        ...


@runtime_checkable
class RemoteBackend(Backend, Protocol):
    """A backend whose rounds drive work elsewhere (a remote teammate's task).

    A turn of such a backend's chat that is cancelled, or fails, asks it to stop that work:
    :meth:`stop_chat` runs in a shielded scope with a bounded time, and what it raises is
    logged, not recorded.
    """

    async def stop_chat(self, chat: str) -> None:
        """Stop the work ``chat``'s turns started elsewhere, if it is still going."""
        ...
