"""The board as its clients read it: one JSON form for the daemon's endpoint, the CLI, the web
view and the Python client of a daemon.

:func:`board_to_json` writes a :class:`~orchestrator.core._board.Board` (camelCase keys, items
in creation order, each with its comments and history); :func:`board_from_json` reads it back,
refusing what does not fit with a :class:`~orchestrator.base.PeerProtocolError` naming the
place. The board a client shows is therefore the fold of the facts, written once.

Board requests a person sends (claim, comment, block, done...) are :class:`BoardRequest`,
read by :func:`parse_board_request` from the JSON body of ``POST .../board``.

Pure: no trio, no IO.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter

from orchestrator import ahp
from orchestrator.base import PeerProtocolError
from orchestrator.core import Board, BoardComment, BoardEvent, BoardItem

__all__ = [
    "BOARD_OPERATIONS",
    "BoardRequest",
    "board_from_json",
    "board_to_json",
    "parse_board_request",
]

_converter = make_converter(forbid_extra_keys=False)
for _cls in (BoardComment, BoardEvent, BoardItem):
    _renames: dict[str, Any] = {
        a.name: override(rename=ahp.wire_name(_cls, a.name)) for a in attrs.fields(_cls)
    }
    _converter.register_unstructure_hook(
        _cls, make_dict_unstructure_fn(_cls, _converter, **_renames)
    )
    _converter.register_structure_hook(_cls, make_dict_structure_fn(_cls, _converter, **_renames))


def board_to_json(board: Board) -> dict[str, Any]:
    """``{"items": [...]}``: every item, in the order the board created them."""
    return {"items": [_converter.unstructure(item) for item in board.items.values()]}


def board_from_json(data: object) -> Board:
    """The board :func:`board_to_json` wrote; :class:`PeerProtocolError` naming the place."""
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise PeerProtocolError("expected an object with an items array", path="$.items")
    try:
        items = [_converter.structure(entry, BoardItem) for entry in data["items"]]
    except (cattrs.ClassValidationError, ValueError, TypeError) as exc:
        problems = (
            cattrs.transform_error(exc, path="$.items")
            if isinstance(exc, cattrs.ClassValidationError)
            else [str(exc)]
        )
        raise PeerProtocolError("; ".join(problems), path="$.items") from exc
    return Board(items={item.id: item for item in items})


#: What a person may do on a board, and the fields each takes (required, optional).
BOARD_OPERATIONS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "claim": (("item",), ()),
    "comment": (("item", "text"), ()),
    "block": (("item", "reason"), ("waitingFor",)),
    "unblock": (("item",), ()),
    "done": (("item",), ("summary",)),
    "assign": (("item", "assignee"), ()),
    "update": (("item",), ("title", "description", "priority", "assignee", "reviewing")),
    "move": (("item", "status"), ()),
}

#: The longest text a request may carry (a comment, a reason, a title).
MAX_TEXT: Final = 8000


@attrs.frozen(kw_only=True)
class BoardRequest:
    """One operation a person asks of the board (see :data:`BOARD_OPERATIONS`)."""

    op: str
    item: str
    fields: dict[str, Any] = attrs.field(factory=dict)


def parse_board_request(data: object) -> BoardRequest:
    """A request's JSON object (already through the input gate), checked field by field."""
    if not isinstance(data, dict):
        raise PeerProtocolError("expected a JSON object", path="$")
    op = data.get("op")
    if not isinstance(op, str) or op not in BOARD_OPERATIONS:
        raise PeerProtocolError(
            f"unknown operation {op!r}; one of: {', '.join(BOARD_OPERATIONS)}", path="$.op"
        )
    required, optional = BOARD_OPERATIONS[op]
    fields: dict[str, Any] = {}
    for key, value in data.items():
        if key == "op":
            continue
        if key not in required and key not in optional:
            allowed = ", ".join(("op", *required, *optional))
            raise PeerProtocolError(f"unknown field for {op} (fields: {allowed})", path=f"$.{key}")
        if key == "reviewing":
            if not isinstance(value, bool):
                raise PeerProtocolError("expected true or false", path=f"$.{key}")
        elif not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
            raise PeerProtocolError(
                f"expected a non-empty string of at most {MAX_TEXT} characters", path=f"$.{key}"
            )
        fields[key] = value
    for key in required:
        if key not in fields:
            raise PeerProtocolError(f"missing field for {op}", path=f"$.{key}")
    item = fields.pop("item")
    return BoardRequest(op=op, item=item, fields=fields)
