"""The teammates channel: background teammates over WebSocket (``/teammates``), as data.

One JSON object per text frame, both ways. A client sends::

    {"type": "list"}
    {"type": "history", "name": "dependency-audit", "limit": 20}
    {"type": "pause" | "resume" | "trigger" | "stop", "name": "nightly/dependency-audit"}
    {"type": "subscribe"}

each with an optional ``id`` (a string or an integer) that the answer carries back, so a
client can match answers to requests. ``name`` is a teammate's name, or ``TEAM/NAME`` where
two teams have one of that name. The daemon answers::

    {"channel": "teammates", "type": "teammates", "teammates": [...], "id": ...}
    {"channel": "teammates", "type": "history", "teammate": "team/name", "runs": [...]}
    {"channel": "teammates", "type": "done", "action": "pause", "teammate": {...},
     "changed": true}                              # trigger adds "decision"
    {"channel": "teammates", "type": "error", "code": "bad_request", "message": "$.name: ..."}

and after ``subscribe``, the Agent UI envelopes of every teammate (``task.changed`` and
``agent.changed``, ``runtimeEntity = "automation_job"``): first one pair per teammate as it
is now, then one pair per change::

    {"channel": "teammates", "type": "event", "teammate": "team/name", "envelope": {...}}

Error codes: ``bad_request`` (the frame; names the field), ``not_found`` (no such
teammate), ``forbidden`` (a viewer token asked for a control), ``refused`` (the daemon is
stopping), ``rate_limited``, ``unavailable`` (the journal failed).

Pure: parsing and building messages; :mod:`orchestrator.server._teammates_socket` serves them.
"""

from __future__ import annotations

import json
from typing import Any, Final

import attrs

from orchestrator.ahp import json_type
from orchestrator.base import JSON_LIMITS, JsonLimits, PeerProtocolError

from ._json_frames import decode_object, shown

__all__ = [
    "ControlTeammate",
    "ListTeammates",
    "Subscribe",
    "TeammateHistory",
    "TeammateRequest",
    "parse_request",
    "teammates_message",
]

CONTROLS: Final = ("pause", "resume", "trigger", "stop")
#: Most runs a history answer carries.
MAX_HISTORY: Final = 1_000
_MAX_NAME: Final = 200


@attrs.frozen
class ListTeammates:
    id: str | int | None = None


@attrs.frozen
class TeammateHistory:
    name: str
    limit: int = 50
    id: str | int | None = None


@attrs.frozen
class ControlTeammate:
    action: str  # one of CONTROLS
    name: str
    id: str | int | None = None


@attrs.frozen
class Subscribe:
    id: str | int | None = None


TeammateRequest = ListTeammates | TeammateHistory | ControlTeammate | Subscribe

_TYPES: Final = ("list", "history", *CONTROLS, "subscribe")


def _error(message: str, path: str = "$") -> PeerProtocolError:
    return PeerProtocolError(message, path=path, protocol="teammates channel")


def parse_request(
    frame: str | bytes, *, max_bytes: int, limits: JsonLimits = JSON_LIMITS
) -> TeammateRequest:
    """Read one client frame; :class:`PeerProtocolError` says what is wrong and where."""
    data = decode_object(frame, max_bytes=max_bytes, protocol="teammates channel", limits=limits)
    channel = data.get("channel", "teammates")
    if channel != "teammates":
        raise _error(f'expected "teammates" (or no channel), got {shown(channel)}', "$.channel")
    request_id = data.get("id")
    if request_id is not None and (
        isinstance(request_id, bool) or not isinstance(request_id, str | int)
    ):
        raise _error(f"expected a string or an integer, got {json_type(request_id)}", "$.id")
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:
        raise _error(f"expected one of {', '.join(_TYPES)}; got {shown(kind)}", "$.type")
    if kind == "list":
        return ListTeammates(id=request_id)
    if kind == "subscribe":
        return Subscribe(id=request_id)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        got = "an empty string" if isinstance(name, str) else json_type(name)
        raise _error(f"{kind} needs the teammate's name (a string), got {got}", "$.name")
    if len(name) > _MAX_NAME:
        raise _error(f"{len(name)} characters; a name has at most {_MAX_NAME}", "$.name")
    if kind == "history":
        limit = data.get("limit", 50)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_HISTORY:
            raise _error(f"expected an integer from 1 to {MAX_HISTORY}", "$.limit")
        return TeammateHistory(name=name, limit=limit, id=request_id)
    return ControlTeammate(action=kind, name=name, id=request_id)


def teammates_message(kind: str, request_id: str | int | None = None, **fields: Any) -> str:
    """A server frame of the teammates channel (``id`` echoed when the request had one)."""
    message: dict[str, Any] = {"channel": "teammates", "type": kind, **fields}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message, ensure_ascii=False)
