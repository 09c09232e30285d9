"""The contract between the runtime and a model backend.

Theory of operation: a turn is a loop of *model rounds*. The runtime asks the
backend for one round (:meth:`Backend.stream_round`), turning each
:data:`ModelEvent` into AHP facts as it arrives (text → ``chat/delta``,
reasoning → ``chat/reasoning``, a tool call → ``chat/toolCallStart`` ...
``chat/toolCallReady``). When a round requested tool calls, the runtime runs
them (delegating to workers, handing off, asking the user, waiting for
approvals, or executing a plain tool) and starts the next round with their
results visible in :class:`RoundContext`. A round that requests no tool call
ends the turn.

Backends are IO shells (they may sleep, stream over HTTP...) but they never
write facts themselves: everything they produce goes through the runtime, which
validates, appends and broadcasts it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol

import attrs

__all__ = [
    "Backend",
    "ModelEvent",
    "ReasoningDelta",
    "RoundContext",
    "TextDelta",
    "ToolCallRequest",
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
class ToolCallRequest:
    """The model asks for one tool call; ``arguments`` is the decoded JSON input.

    Several requests in one round run in parallel (delegations up to the team's
    parallel budget).
    """

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class UsageReport:
    """Token usage of the round."""

    input_tokens: int
    output_tokens: int


ModelEvent = TextDelta | ReasoningDelta | ToolCallRequest | UsageReport


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

    ``history`` is the chat's conversation in order (role, text) pairs, derived
    from the chat state, not kept twice; ``round_index`` counts the rounds
    already done in this turn (0 for the first); ``outcomes`` are the results
    of the previous round's tool calls; ``steering`` the steering messages
    injected into this turn so far, oldest first (a model sees them as user
    messages after the history).
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


class Backend(Protocol):
    """A source of model rounds for one agent definition."""

    def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        """Stream one model round (an async generator: the runtime closes it when the round
        ends, however it ends). Raising ends the turn in error."""
        ...
