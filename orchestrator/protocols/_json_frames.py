"""A client's WebSocket text frame as one JSON object, or an error that says what is wrong.

The agent channel and the teammates channel read their frames the same way: a size limit,
text only, JSON through the input gate (:mod:`orchestrator.base._input_gate`), an object. Pure.
"""

from __future__ import annotations

from typing import Any

from orchestrator.ahp import json_type
from orchestrator.base import JSON_LIMITS, JsonLimits, PeerProtocolError, parse_json

__all__: list[str] = []


def decode_object(
    frame: str | bytes, *, max_bytes: int, protocol: str, limits: JsonLimits = JSON_LIMITS
) -> dict[str, Any]:
    """The JSON object ``frame`` holds; :class:`PeerProtocolError` (of ``protocol``) if the
    frame is over ``max_bytes``, binary, not JSON the gate takes, or not an object."""
    size = len(frame) if isinstance(frame, bytes) else len(frame.encode("utf-8", "replace"))

    def error(message: str) -> PeerProtocolError:
        return PeerProtocolError(message, path="$", protocol=protocol)

    if size > max_bytes:
        raise error(f"the frame is {size} bytes; the limit is {max_bytes}")
    if isinstance(frame, bytes):
        raise error("binary frames are not part of this protocol: send JSON as a text frame")
    data = parse_json(frame, protocol=protocol, limits=limits)
    if not isinstance(data, dict):
        raise error(f"expected a JSON object, got {json_type(data)}")
    return data


def shown(value: object) -> str:
    """``value`` as an error message shows it: a short string itself, else its JSON type."""
    return repr(value) if isinstance(value, str) and len(value) <= 40 else json_type(value)
