"""A remote teammate's task, as the facts of its worker's chat keep it.

A remote teammate (an A2A agent, :mod:`orchestrator.runtime.backends._a2a`) answers a
delegation with a task of its own. Each change of that task's state, and each artifact chunk
it sends, is a system-notification part of the worker's turn (a :class:`~orchestrator.core.
Notice`), whose ``_meta`` carries the remote truth under one key:

- :data:`REMOTE_TASK_META`: ``agent``, ``url``, ``remoteTaskId``, ``contextId``, ``state``
  (one of :data:`REMOTE_STATES`), ``rawState`` (the peer's own name for it, kept as sent),
  ``card`` (``name``, ``version``, ``skills``) and ``message`` (the text that came with it);
- :data:`ARTIFACT_META`: ``remoteTaskId``, ``artifactId``, ``name``, ``mediaType``,
  ``append``, ``lastChunk`` and ``parts`` (each ``{"text": ...}``, ``{"data": ...}`` or
  ``{"url": ...}``).

The projections read them back with :func:`remote_task_of` and :func:`artifact_of`. Pure: no
A2A types here (the SDK is an optional dependency of the runtime only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from orchestrator.ahp.state import ResponsePart, SystemNotificationResponsePart

__all__ = [
    "ARTIFACT_META",
    "REMOTE_STATES",
    "REMOTE_TASK_META",
    "TERMINAL_REMOTE_STATES",
    "artifact_of",
    "remote_state",
    "remote_task_of",
]

#: The ``_meta`` key of a part that records a remote task's state.
REMOTE_TASK_META: Final = "remoteTask"
#: The ``_meta`` key of a part that records an artifact (or a chunk of one).
ARTIFACT_META: Final = "artifact"

#: A remote task's states, in the Agent UI taxonomy's words (the A2A task states).
REMOTE_STATES: Final = (
    "submitted",
    "working",
    "input_required",
    "auth_required",
    "completed",
    "failed",
    "canceled",
    "rejected",
)
#: The states a remote task does not leave.
TERMINAL_REMOTE_STATES: Final = frozenset({"completed", "failed", "canceled", "rejected"})

_PREFIX: Final = "TASK_STATE_"


def remote_state(raw: str) -> str:
    """The taxonomy's word for a peer's task state (``TASK_STATE_INPUT_REQUIRED`` or
    ``input-required`` -> ``input_required``); ``unknown`` for one it does not name (a peer
    that speaks a newer protocol), whose ``rawState`` is kept as sent."""
    word = raw.removeprefix(_PREFIX).lower().replace("-", "_")
    if word == "cancelled":
        word = "canceled"
    return word if word in REMOTE_STATES else "unknown"


def remote_task_of(part: ResponsePart) -> Mapping[str, Any] | None:
    """The remote task's state a part records, or None."""
    return _meta(part, REMOTE_TASK_META)


def artifact_of(part: ResponsePart) -> Mapping[str, Any] | None:
    """The artifact chunk a part records, or None."""
    return _meta(part, ARTIFACT_META)


def _meta(part: ResponsePart, key: str) -> Mapping[str, Any] | None:
    if not isinstance(part, SystemNotificationResponsePart) or not part.meta:
        return None
    value = part.meta.get(key)
    return value if isinstance(value, Mapping) else None
