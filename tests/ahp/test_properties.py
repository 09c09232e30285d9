"""Property: every AHP value survives encoding to JSON text and decoding back, unchanged; the
compiled encoder gives what the converter gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
)
from tests.support import strategies
from tests.support.ahp_types import AHP_TYPES, PROPERTY_SETTINGS, over_the_wire

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
