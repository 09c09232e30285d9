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

The projections read them back with :func:`remote_task_of` and :func:`artifact_of`, and say
them in words with :func:`remote_task_words` and :func:`artifact_words` (what the agent
channel and the web view's transcript show: never the raw JSON). Pure: no A2A types here
(the SDK is an optional dependency of the runtime only).
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
    "artifact_words",
    "remote_state",
    "remote_task_of",
    "remote_task_words",
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

#: Each state in words, after the agent's name; "{message}" is the text that came with it.
_WORDS: Final = {
    "sending": "was sent the task",
    "submitted": "took the task",
    "working": "is working on it",
    "input_required": "needs input: {message}",
    "auth_required": "needs authentication: {message}",
    "completed": "completed its task: {message}",
    "failed": "failed: {message}",
    "canceled": "stopped: its task was canceled",
    "rejected": "rejected the task: {message}",
}
#: Characters of an artifact's content its words keep (the rest is cut, with "…").
_WORDS_LIMIT: Final = 300


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


def remote_task_words(remote: Mapping[str, Any]) -> str:
    """A remote task's state, as :func:`remote_task_of` reads it, in a sentence: ``glossary
    (remote) needs input: Which term?``."""
    agent = str(remote.get("agent") or (remote.get("card") or {}).get("name") or "the agent")
    state = str(remote.get("state") or "")
    message = str(remote.get("message") or "").strip()
    words = _WORDS.get(state)
    if words is None:
        raw = str(remote.get("rawState") or state or "unknown")
        return f"{agent} (remote): its task is {raw}"
    if "{message}" in words and not message:
        words = words.split(":")[0]
    return f"{agent} (remote) " + words.format(message=_shorten(message))


def artifact_words(artifact: Mapping[str, Any]) -> str:
    """An artifact (or a chunk of one), as :func:`artifact_of` reads it, in words: its name,
    media type and content (text as it is, data as ``key = value`` pairs, a URL as it is),
    cut to a few hundred characters."""
    name = str(artifact.get("name") or artifact.get("artifactId") or "artifact")
    media = str(artifact.get("mediaType") or "")
    head = ("More of artifact " if artifact.get("append") else "Artifact ") + name
    if media:
        head += f" ({media})"
    said = " ".join(_part_words(p) for p in artifact.get("parts") or () if isinstance(p, Mapping))
    return f"{head}: {_shorten(said)}" if said.strip() else head


def _part_words(part: Mapping[str, Any]) -> str:
    if "text" in part:
        return str(part["text"])
    if "url" in part:
        return str(part["url"])
    data = part.get("data")
    if isinstance(data, Mapping):
        return ", ".join(f"{key} = {_value_words(value)}" for key, value in data.items())
    return _value_words(data)


def _value_words(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"({len(value)} field{'' if len(value) == 1 else 's'})"
    if isinstance(value, list):
        return f"({len(value)} item{'' if len(value) == 1 else 's'})"
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _shorten(text: str) -> str:
    return text if len(text) <= _WORDS_LIMIT else text[: _WORDS_LIMIT - 1] + "…"
