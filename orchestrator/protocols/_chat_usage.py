"""What each chat of a session used: tokens in and out, model calls and time, from the facts.

Nothing here is recorded for the purpose: a model round's usage is a ``chat/usage`` fact (one
per round that reported it: the model calls), a turn's wall time is the ``duration`` of the
fact that ended it (``chat/turnComplete``, ``chat/turnCancelled``, ``chat/error``). The web
view's table and graph show them per agent and in total.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from orchestrator.ahp import TURN_ENDS
from orchestrator.ahp.actions import ChatUsageAction
from orchestrator.core import Fact

__all__ = ["ChatUsage", "chat_usage", "usage_to_json"]


@attrs.frozen(kw_only=True)
class ChatUsage:
    """What one chat (or, summed, a session) used."""

    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    duration_ms: int = 0

    def __add__(self, other: ChatUsage) -> ChatUsage:
        return ChatUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            model_calls=self.model_calls + other.model_calls,
            duration_ms=self.duration_ms + other.duration_ms,
        )


def chat_usage(facts: Iterable[Fact]) -> dict[str, ChatUsage]:
    """Each chat's usage (by chat URI, in the order chats first used anything)."""
    used: dict[str, ChatUsage] = {}
    for fact in facts:
        action = fact.action
        if isinstance(action, ChatUsageAction):
            add = ChatUsage(
                input_tokens=max(0, action.usage.input_tokens or 0),
                output_tokens=max(0, action.usage.output_tokens or 0),
                model_calls=1,
            )
        elif isinstance(action, TURN_ENDS):  # each with its duration in milliseconds
            add = ChatUsage(duration_ms=max(0, round(action.duration)))
        else:
            continue
        used[fact.channel] = used.get(fact.channel, ChatUsage()) + add
    return used


def usage_to_json(used: dict[str, ChatUsage]) -> dict[str, Any]:
    """``{"chats": {uri: {...}}, "total": {...}}`` in the wire's camelCase."""

    def one(usage: ChatUsage) -> dict[str, int]:
        return {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "modelCalls": usage.model_calls,
            "durationMs": usage.duration_ms,
        }

    total = sum(used.values(), ChatUsage())
    return {"chats": {chat: one(usage) for chat, usage in used.items()}, "total": one(total)}
