"""What a newer peer adds is kept: unknown object keys (``WireObject.unknown_fields``), unknown
kinds of an open union (:class:`UnknownVariant`) and new values of an open enum
(:class:`OpenStrEnum`), while the closed unions and enums stay strict.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from orchestrator import PeerProtocolError
from orchestrator.ahp import (
    NO_UNKNOWN_FIELDS,
    UnknownVariant,
    reduce_chat,
    structure,
    structure_as,
    unstructure,
)
from orchestrator.ahp import state as ahp_state
from orchestrator.ahp.actions import (
    ChatAction,
    ChatDeltaAction,
    StateAction,
    UnknownAction,
)
from orchestrator.ahp.commands import ChatSource, UnknownChatSource
from orchestrator.ahp.state import (
    ChildCustomizationType,
    Customization,
    ResponsePart,
    ToolCallRiskAssessmentKind,
    TurnState,
    UnknownResponsePart,
)
from tests.support.ahp_unknown import TURN, _unknown_of, chat_with_parts, text
from tests.support.strategies import (
    NOW,
)


class TestUnknownFields:
    def test_known_keys_are_never_unknown(self) -> None:
        """``_meta`` and camelCase keys are the fields they name; ``meta`` and snake_case
        spellings are not, and are kept as they came."""
        wire = {
            "kind": "systemNotification",
            "content": "x",
            "_meta": {"a": 1},
            "meta": 2,
            "tool_call_id": 3,
        }
        part = structure_as(wire, ResponsePart)
        assert part.meta == {"a": 1}
        assert part.unknown_fields == {"meta": 2, "tool_call_id": 3}
        assert text(unstructure(part)) == text(wire)

    def test_snake_case_keys_of_protected_resource_metadata_are_known(self) -> None:
        wire = {"resource": "r", "resource_name": "n", "resourceName": "camel"}
        metadata = structure(wire, ahp_state.ProtectedResourceMetadata)
        assert metadata.resource_name == "n"
        assert metadata.unknown_fields == {"resourceName": "camel"}

    def test_models_without_unknown_fields_share_one_empty_mapping(self) -> None:
        part = structure_as({"kind": "markdown", "id": "m", "content": ""}, ResponsePart)
        assert part.unknown_fields is NO_UNKNOWN_FIELDS

    def test_unknown_fields_take_part_in_equality_not_in_hash(self) -> None:
        plain = structure_as({"kind": "markdown", "id": "m", "content": ""}, ResponsePart)
        extended = structure_as(
            {"kind": "markdown", "id": "m", "content": "", "x": 1}, ResponsePart
        )
        assert plain != extended
        assert hash(plain) == hash(extended)

    def test_a_reducer_keeps_the_unknown_fields_of_what_it_updates(self) -> None:
        state = chat_with_parts({"kind": "markdown", "id": "m", "content": "a", "x": [1]})
        state = reduce_chat(state, ChatDeltaAction(turn_id=TURN, part_id="m", content="b"), now=NOW)
        assert state.active_turn is not None
        (part,) = state.active_turn.response_parts
        assert unstructure(part) == {"kind": "markdown", "id": "m", "content": "ab", "x": [1]}

    def test_snapshot_keeps_unknown_fields(self) -> None:
        from orchestrator.ahp.commands import Snapshot

        state = unstructure(chat_with_parts())
        wire = {"resource": "ahp-chat:/c", "state": state, "fromSeq": 3, "future": True}
        assert unstructure(structure(wire, Snapshot)) == wire

    def test_json_rpc_responses_keep_unknown_fields(self) -> None:
        from orchestrator.ahp.commands import JsonRpcMessage

        wire = {"jsonrpc": "2.0", "id": 1, "result": None, "future": "yes"}
        assert unstructure(structure_as(wire, JsonRpcMessage)) == wire


OPEN_UNIONS: Final = [
    ("ResponsePart", {"kind": "hologram", "x": 1}),
    ("ToolResultContent", {"type": "hologram"}),
    ("MessageAttachment", {"type": "hologram", "label": "l"}),
    ("ChatOrigin", {"kind": "hologram"}),
    ("ChatInputQuestion", {"kind": "color", "id": "q"}),
    ("ChatInputAnswerValue", {"kind": "color", "value": "#fff"}),
    ("ChatInputAnswer", {"state": "pondering"}),
    ("ToolCallContributor", {"kind": "plugin"}),
    ("ToolCallRiskAssessment", {"status": "escalated", "kind": "judge"}),
    ("ToolCallRiskAssessment", {"status": "escalated", "kind": "judge"}),
    ("SessionInputRequest", {"kind": "payment", "id": "p", "chat": "c"}),
    ("CustomizationLoadState", {"kind": "paused"}),
    ("McpServerState", {"kind": "sleeping"}),
    ("ChildCustomization", {"type": "theme", "id": "t"}),
    ("Customization", {"type": "theme", "id": "t"}),
]


class TestUnknownVariants:
    @pytest.mark.parametrize(("union", "wire"), OPEN_UNIONS, ids=[u for u, _ in OPEN_UNIONS])
    def test_open_unions_keep_an_unknown_kind(self, union: str, wire: dict[str, Any]) -> None:
        value = structure_as(wire, getattr(ahp_state, union))
        assert isinstance(value, UnknownVariant)
        assert value.raw == wire
        assert text(unstructure(value)) == text(wire)

    def test_chat_sources_are_open(self) -> None:
        source = structure_as({"kind": "template", "id": "t"}, ChatSource)
        assert isinstance(source, UnknownChatSource)
        assert source.kind == "template"

    def test_the_tag_is_readable_under_its_own_name(self) -> None:
        part = structure_as({"kind": "hologram"}, ResponsePart)
        assert isinstance(part, UnknownResponsePart)
        assert part.kind == "hologram"

    @pytest.mark.parametrize("union", sorted({u for u, _ in OPEN_UNIONS}))
    def test_a_tag_of_the_wrong_type_is_still_an_error(self, union: str) -> None:
        tag = getattr(ahp_state, union)
        unknown = _unknown_of(tag)
        assert unknown is not None
        with pytest.raises(PeerProtocolError) as info:
            structure_as({unknown.TAG: 5}, tag)
        assert info.value.path == f"$.{unknown.TAG}"
        assert "as a string, got a number" in info.value.message

    @pytest.mark.parametrize(
        ("union", "wire"),
        [
            ("ToolCallState", {"status": "hibernating", "toolCallId": "t"}),
            ("ToolCallConfirmationState", {"status": "running"}),
        ],
    )
    def test_tool_call_states_are_closed(self, union: str, wire: dict[str, Any]) -> None:
        """The lifecycle table has no row for a status it does not know: still an error."""
        with pytest.raises(PeerProtocolError) as info:
            structure_as(wire, getattr(ahp_state, union))
        assert info.value.path == "$.status"

    def test_chat_and_session_action_unions_are_closed(self) -> None:
        with pytest.raises(PeerProtocolError):
            structure_as({"type": "chat/future"}, ChatAction)
        assert isinstance(structure_as({"type": "chat/future"}, StateAction), UnknownAction)


class TestOpenEnums:
    def test_open_enums_keep_a_new_value(self) -> None:
        kind = ToolCallRiskAssessmentKind("panel")
        assert kind == "panel"
        assert kind not in list(ToolCallRiskAssessmentKind)
        assert unstructure(kind) == "panel"
        wire = {"status": "loading", "kind": "panel"}
        assert unstructure(structure_as(wire, ahp_state.ToolCallRiskAssessment)) == wire

    def test_a_directory_of_a_new_kind_round_trips(self) -> None:
        wire = {
            "type": "directory",
            "id": "d",
            "uri": "file:///d",
            "name": "d",
            "enabled": True,
            "children": [{"type": "theme", "id": "t"}],
            "contents": "theme",
            "writable": False,
        }
        directory = structure_as(wire, Customization)
        assert directory.contents == ChildCustomizationType("theme")
        assert unstructure(directory) == wire

    def test_open_enums_still_want_a_string(self) -> None:
        with pytest.raises(PeerProtocolError):
            structure_as({"status": "loading", "kind": 1}, ahp_state.ToolCallRiskAssessment)

    @pytest.mark.parametrize("enum", [TurnState, ahp_state.ToolCallConfirmationReason])
    def test_closed_enums_stay_strict(self, enum: type) -> None:
        with pytest.raises(ValueError, match="someday"):
            enum("someday")
