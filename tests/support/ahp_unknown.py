"""The open unions' members and a chat of parts given as wire JSON: what the forward-compatibility
tests and the unknown holders' tests share."""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Final

from orchestrator.ahp import (
    UnknownVariant,
    structure,
)
from orchestrator.ahp.actions import (
    UnknownAction,
)
from orchestrator.ahp.state import (
    ChatState,
)


def _members(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return tuple(arg for arg in typing.get_args(tp) if arg is not type(None))
    return None


def _unknown_of(tp: Any) -> type[UnknownVariant] | None:
    """The unknown variant of union ``tp`` if it is open (UnknownAction aside: actions are
    injected whole, between the others)."""
    for member in _members(tp) or ():
        if isinstance(member, type) and issubclass(member, UnknownVariant):
            return None if member is UnknownAction else member
    return None


def text(value: Any) -> str:
    """JSON text that tells ``1`` from ``1.0`` and ``true`` from ``1``, keys in any order."""
    return json.dumps(value, sort_keys=True)


TURN: Final = "turn-1"


def chat_with_parts(*parts: dict[str, Any]) -> ChatState:
    return structure(
        {
            "resource": "ahp-chat:/c",
            "title": "t",
            "status": 8,
            "modifiedAt": "2025-01-01T00:00:00.000Z",
            "turns": [],
            "activeTurn": {
                "id": TURN,
                "startedAt": "2025-01-01T00:00:00.000Z",
                "message": {"text": "hi", "origin": {"kind": "user"}},
                "responseParts": list(parts),
            },
        },
        ChatState,
    )
