"""The contract a model backend implements, where a backend author looks for it.

A backend is anything with ``stream_round(context) -> AsyncGenerator[ModelEvent, None]``
(:class:`Backend`): given a :class:`RoundContext` it streams :data:`ModelEvent` values (text,
reasoning, tool-call start / input / request, usage) and never writes facts. The types are
defined in :mod:`orchestrator.core` (``core/_model_round.py``) because they are pure data that
recovery planning reads too (a parked turn's outstanding :class:`ToolCallRequest` values and
its finished calls' :class:`ToolOutcome` values); this module names them for the backends.
"""

from __future__ import annotations

from orchestrator.core import (
    Backend,
    ModelEvent,
    Notice,
    ReasoningDelta,
    RemoteBackend,
    RoundContext,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolOutcome,
    UsageReport,
)

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
