"""The compiled encoder (:func:`orchestrator.ahp._wire_encode.unstructure`) writes what the
converter's hooks write, in the same order, for every AHP type.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from orchestrator.ahp import _wire as _ahp_wire
from orchestrator.ahp import (
    structure_as,
    unstructure,
)
from orchestrator.ahp.actions import StateAction
from orchestrator.ahp.state import (
    ChatState,
    SessionState,
    SessionStatus,
    SystemNotificationResponsePart,
)
from orchestrator.base import PeerProtocolError
from tests.support import strategies
from tests.support.ahp_types import AHP_TYPES, PROPERTY_SETTINGS, over_the_wire


def in_order(value: Any) -> Any:
    """``value`` with every dict as the list of its items and every leaf with its class:
    equal only in the same key order (the JSON text's, and a fact's stored text must not
    change) and with the same types (a string enum member is no string)."""
    if isinstance(value, dict):
        return (dict, [(in_order(key), in_order(item)) for key, item in value.items()])
    if isinstance(value, list | tuple):
        return (type(value), [in_order(item) for item in value])
    return (type(value), value)


class TestCompiledEncoder:
    """``unstructure`` is compiled per class (``_wire_encode``): for every value it gives
    what the cattrs converter of ``_wire`` gives, containers, types and key order included."""

    @pytest.mark.parametrize("name", sorted(AHP_TYPES))
    @PROPERTY_SETTINGS
    @given(data=st.data())
    def test_every_type_as_the_converter(self, name: str, data: st.DataObject) -> None:
        value = data.draw(strategies.ahp_values(AHP_TYPES[name]), label=name)
        expected = _ahp_wire._converter.unstructure(value)
        assert in_order(unstructure(value)) == in_order(expected)

    @PROPERTY_SETTINGS
    @given(data=st.data())
    def test_unknown_fields_as_the_converter(self, data: st.DataObject) -> None:
        """Values decoded from a newer peer's JSON keep keys no model names: written after
        the known ones, at any depth, as the converter writes them."""
        tp = data.draw(st.sampled_from([ChatState, SessionState, StateAction]), label="type")
        value = data.draw(strategies.ahp_values(tp), label="value")
        sent = data.draw(strategies.with_unknown_keys(over_the_wire(value)), label="sent")
        try:
            decoded = structure_as(sent, tp)
        except PeerProtocolError:
            assume(False)  # a key added where a map of typed values has no room for it
        expected = _ahp_wire._converter.unstructure(decoded)
        assert in_order(unstructure(decoded)) == in_order(expected)

    @PROPERTY_SETTINGS
    @given(strategies.json_values)
    def test_free_form_json_as_the_converter(self, value: object) -> None:
        """A value of no declared type (``_meta``'s, a config default) by its class."""
        meta = {"free": value, "nested": {"list": [value, (value,)], "tuple": (value, 1)}}
        part = SystemNotificationResponsePart(content="x", meta=meta)
        expected = _ahp_wire._converter.unstructure(part)
        assert in_order(unstructure(part)) == in_order(expected)

    def test_order_and_types_are_checked(self) -> None:
        """``in_order`` tells apart two dicts that differ only in their keys' order, and a
        string enum member from its string."""
        assert in_order({"a": 1, "b": 2}) != in_order({"b": 2, "a": 1})
        assert in_order([SessionStatus(1)]) != in_order([1])
