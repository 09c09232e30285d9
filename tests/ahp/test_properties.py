"""Property: every AHP value survives encoding to JSON text and decoding back, unchanged; the
compiled encoder gives what the converter gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orchestrator.ahp import _wire as _ahp_wire
from orchestrator.ahp import actions as _ahp_actions
from orchestrator.ahp import state as _ahp_state
from orchestrator.ahp import (
    structure_action,
    structure_as,
    structure_chat_state,
    structure_envelope,
    structure_session_state,
    unstructure,
)
from orchestrator.ahp.actions import ActionEnvelope, StateAction
from orchestrator.ahp.state import (
    ChatState,
    SessionState,
    SessionStatus,
    SystemNotificationResponsePart,
)
from orchestrator.base import PeerProtocolError
from tests.support import strategies

PROPERTY_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def ahp_types() -> dict[str, Any]:
    """Every model class, union alias and enum the two modules export, by name."""
    return {
        name: getattr(module, name)
        for module in (_ahp_state, _ahp_actions)
        for name in module.__all__
        if not callable(getattr(module, name)) or isinstance(getattr(module, name), type)
    }


AHP_TYPES = ahp_types()

FREE_FORM = frozenset(
    {
        "_meta",
        "config",
        "values",
        "structuredContent",
        "default",
        "enum",
        "inputSchema",
        "outputSchema",
    }
)
"""Keys holding free-form JSON, where ``null`` is a legitimate value."""

FREE_FORM_OBJECTS = frozenset({"tools", "logging", "review"})
"""Keys holding a free-form JSON object in one type (MCP App ``sampling.tools``,
``logging``, a changeset's ``capabilities.review``) and typed data elsewhere (an agent's
``tools`` array)."""


def over_the_wire(value: object) -> Any:
    """The value's wire form, through JSON text as a peer would receive it."""
    return json.loads(json.dumps(unstructure(value)))


def nulls(value: Any, path: str = "$") -> list[str]:
    """The paths of ``null`` in encoded AHP data, free-form JSON aside."""
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [
            found
            for key, item in value.items()
            if key not in FREE_FORM and not (key in FREE_FORM_OBJECTS and isinstance(item, dict))
            for found in nulls(item, f"{path}.{key}")
        ]
    if isinstance(value, list):
        return [
            found for index, item in enumerate(value) for found in nulls(item, f"{path}[{index}]")
        ]
    return []


class TestRoundTrip:
    @pytest.mark.parametrize("name", sorted(AHP_TYPES))
    @PROPERTY_SETTINGS
    @given(data=st.data())
    def test_every_type(self, name: str, data: st.DataObject) -> None:
        """unstructure → JSON → structure gives back an equal value, for every AHP type."""
        tp = AHP_TYPES[name]
        value = data.draw(strategies.ahp_values(tp), label=name)
        assert structure_as(over_the_wire(value), tp) == value

    @PROPERTY_SETTINGS
    @given(strategies.chat_states())
    def test_chat_state_decoder(self, state: ChatState) -> None:
        assert structure_chat_state(over_the_wire(state)) == state

    @PROPERTY_SETTINGS
    @given(strategies.session_states())
    def test_session_state_decoder(self, state: SessionState) -> None:
        assert structure_session_state(over_the_wire(state)) == state

    @PROPERTY_SETTINGS
    @given(strategies.state_actions())
    def test_action_decoder(self, action: StateAction) -> None:
        """Known and unknown actions alike come back equal, with the same ``type``."""
        decoded = structure_action(over_the_wire(action))
        assert decoded == action
        assert decoded.type == action.type

    @PROPERTY_SETTINGS
    @given(strategies.action_envelopes())
    def test_envelope_decoder(self, envelope: ActionEnvelope) -> None:
        assert structure_envelope(over_the_wire(envelope)) == envelope


class TestEncoding:
    @PROPERTY_SETTINGS
    @given(strategies.session_statuses)
    def test_session_status_is_an_int_on_the_wire(self, status: SessionStatus) -> None:
        """Every 32-bit status, named bits or not, is the same integer on the wire."""
        assert unstructure(status) == int(status)
        assert structure_as(int(status), SessionStatus) == status

    @PROPERTY_SETTINGS
    @given(
        st.one_of(
            strategies.chat_states(),
            strategies.session_states(),
            strategies.known_state_actions(),
        )
    )
    def test_absent_optionals_are_never_null(self, value: object) -> None:
        """The encoder never writes ``null``: absent optionals are left out.

        Free-form JSON (``_meta``, config values, tool schemas, unknown actions) is exempt: it
        is passed through as received, ``null`` included.
        """
        assert nulls(unstructure(value)) == []


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
