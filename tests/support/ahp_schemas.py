"""Frames a test saw on the wire, checked against the published AHP JSON Schemas.

The schemas are read from ``tests/protocols/ahp/schema`` (a byte-for-byte copy of the public
ones). ``SessionStatus`` is checked as the bitset it is (see ``tests/ahp/test_schema.py`` for
why the published enum is too narrow), and ``StateAction``'s empty reference is dropped.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from tests.support.paths import AHP_SCHEMAS

_STATUS_BITSET = {"type": "integer", "minimum": 0, "maximum": 4294967295}


@functools.cache
def _defs(schema: str) -> dict[str, Any]:
    path = AHP_SCHEMAS / f"{schema}.schema.json"
    defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    if "SessionStatus" in defs:
        defs["SessionStatus"] = _STATUS_BITSET
    if "StateAction" in defs:
        defs["StateAction"]["oneOf"] = [
            ref for ref in defs["StateAction"]["oneOf"] if ref != {"$ref": "#/$defs/"}
        ]
    return defs


def check_wire(schema: str, definition: str, value: Any) -> None:
    """Raise :class:`jsonschema.ValidationError` unless ``value`` (JSON as received) is a valid
    ``definition`` of the ``schema`` file (``state``, ``actions``, ``commands``...)."""
    defs = _defs(schema)
    jsonschema.Draft202012Validator({"$defs": defs, **defs[definition]}).validate(value)
