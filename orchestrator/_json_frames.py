"""A client's WebSocket text frame as one JSON object, or an error that says what is wrong.

The agent channel and the teammates channel read their frames the same way: a size limit,
text only, JSON that this server reads, an object. Pure.
"""

from __future__ import annotations

import json
from typing import Any

from ._ahp_wire import json_type
from ._errors import PeerProtocolError

__all__ = ["decode_object", "shown"]


def decode_object(frame: str | bytes, *, max_bytes: int, protocol: str) -> dict[str, Any]:
    """The JSON object ``frame`` holds; :class:`PeerProtocolError` (of ``protocol``) if the
    frame is over ``max_bytes``, binary, not JSON, or not an object."""
    size = len(frame) if isinstance(frame, bytes) else len(frame.encode("utf-8", "replace"))

    def error(message: str) -> PeerProtocolError:
        return PeerProtocolError(message, path="$", protocol=protocol)

    if size > max_bytes:
        raise error(f"the frame is {size} bytes; the limit is {max_bytes}")
    if isinstance(frame, bytes):
        raise error("binary frames are not part of this protocol: send JSON as a text frame")
    try:
        data = json.loads(frame)
    except json.JSONDecodeError as exc:
        raise error(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise error("not JSON this server reads: nested too deeply") from None
    except ValueError as exc:
        # An integer of more digits than int() converts (sys.get_int_max_str_digits()).
        raise error(f"not JSON this server reads: {str(exc).partition(':')[0]}") from None
    if not isinstance(data, dict):
        raise error(f"expected a JSON object, got {json_type(data)}")
    return data


def shown(value: object) -> str:
    """``value`` as an error message shows it: a short string itself, else its JSON type."""
    return repr(value) if isinstance(value, str) and len(value) <= 40 else json_type(value)
