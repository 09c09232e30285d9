"""The AHP converter: wire names, optional fields, unions, strictness and error paths."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import PeerProtocolError
from orchestrator.ahp import (
    structure,
    structure_action,
    structure_as,
    structure_chat_action,
    structure_chat_state,
    structure_envelope,
    structure_session_action,
    structure_session_state,
    unstructure,
    wire_name,
)
from orchestrator.ahp.actions import (
    ActionEnvelope,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatTurnStartedAction,
    SessionChatUpdatedAction,
    SessionTitleChangedAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ActiveTurn,
    ChatInputNumberQuestion,
    ChatInputQuestion,
    ChatState,
    ContentRef,
    MarkdownResponsePart,
    MarkdownString,
    McpAuthRequiredReason,
    McpServerAuthRequiredState,
    Message,
    MessageKind,
    MessageOrigin,
    ProtectedResourceMetadata,
    ResponsePart,
    SessionStatus,
    SessionSummary,
    StringOrMarkdown,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
    ToolCallResponsePart,
    ToolCallRunningState,
    ToolInput,
    ToolResultSubagentContent,
    UsageInfo,
)

HELLO: dict[str, Any] = {"text": "Hello", "origin": {"kind": "user"}}


def chat_state_json(**changes: Any) -> dict[str, Any]:
    """A minimal chat state as sent on the wire, with ``changes`` applied."""
    state: dict[str, Any] = {
        "resource": "ahp-chat:/c1",
        "title": "Chat",
        "status": 8,
        "modifiedAt": "2025-03-10T18:42:03.123Z",
        "turns": [],
    }
    state.update(changes)
    return state


def active_turn_json(*parts: object) -> dict[str, Any]:
    return {
        "id": "turn-1",
        "startedAt": "2025-03-10T18:42:00.000Z",
        "message": HELLO,
        "responseParts": list(parts),
    }


RUNNING_TOOL_CALL: dict[str, Any] = {
    "status": "running",
    "toolCallId": "tc-1",
    "toolName": "delegate",
    "displayName": "Delegate",
    "invocationMessage": "Delegating",
    "confirmed": "not-needed",
    "_meta": {"team": "alpha"},
    "content": [{"type": "subagent", "resource": "ahp-chat:/w1", "title": "Worker"}],
}


def error_of(data: object, tp: Any) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as info:
        structure_as(data, tp)
    return info.value


class TestWireNames:
    def test_keys_are_camel_case_and_meta_is_underscored(self) -> None:
        """Python snake_case attributes travel as camelCase keys; ``meta`` as ``_meta``."""
        part = structure_as({"kind": "toolCall", "toolCall": RUNNING_TOOL_CALL}, ResponsePart)
        assert isinstance(part, ToolCallResponsePart)
        call = part.tool_call
        assert isinstance(call, ToolCallRunningState)
        assert call.tool_call_id == "tc-1"
        assert call.meta == {"team": "alpha"}
        assert call.content == (ToolResultSubagentContent(resource="ahp-chat:/w1", title="Worker"),)
        assert unstructure(part) == {"kind": "toolCall", "toolCall": RUNNING_TOOL_CALL}

    def test_rfc_9728_metadata_keeps_snake_case(self) -> None:
        """ProtectedResourceMetadata mirrors RFC 9728, whose keys are snake_case."""
        wire = {
            "kind": "authRequired",
            "reason": "expired",
            "resource": {"resource": "https://api.example", "scopes_supported": ["read"]},
            "requiredScopes": ["read"],
        }
        state = structure(wire, McpServerAuthRequiredState)
        assert state.reason is McpAuthRequiredReason.EXPIRED
        assert state.resource == ProtectedResourceMetadata(
            resource="https://api.example", scopes_supported=("read",)
        )
        assert unstructure(state) == wire

    def test_wire_name(self) -> None:
        assert wire_name(ChatState, "turns_next_cursor") == "turnsNextCursor"
        assert wire_name(ChatState, "meta") == "_meta"
        assert wire_name(ProtectedResourceMetadata, "jwks_uri") == "jwks_uri"


class TestOptionalFields:
    def test_null_is_read_as_absent(self) -> None:
        """Fixtures write absent optionals as ``null``: both decode to None."""
        with_nulls = chat_state_json(activeTurn=None, origin=None, queuedMessages=None)
        assert structure_chat_state(with_nulls) == structure_chat_state(chat_state_json())

    def test_none_is_omitted_on_output(self) -> None:
        """An optional field that is None leaves its key out; it is never written as null."""
        state = structure_chat_state(chat_state_json(activeTurn=None, activity=None))
        assert unstructure(state) == chat_state_json()

    def test_empty_sequence_is_not_absent(self) -> None:
        """``[]`` and an absent key are different values and re-encode differently."""
        state = structure_chat_state(chat_state_json(queuedMessages=[]))
        assert state.queued_messages == ()
        assert unstructure(state)["queuedMessages"] == []

    def test_unknown_keys_are_kept(self) -> None:
        """Keys the schema does not know are kept and re-encoded after the known ones."""
        wire = {
            "resource": "ahp-session:/s1",
            "provider": "demo",
            "title": "Hello",
            "status": 0,
            "createdAt": "2024-01-01T00:00:00.001Z",
            "modifiedAt": "2024-01-01T00:00:00.002Z",
        }
        summary = structure({"future": {"nested": True}, **wire}, SessionSummary)
        assert summary.unknown_fields == {"future": {"nested": True}}
        assert list(unstructure(summary).items()) == [*wire.items(), ("future", {"nested": True})]

    def test_models_are_built_with_defaults(self) -> None:
        """Discriminators and optionals have defaults, so models read like the wire."""
        part = MarkdownResponsePart(id="p1", content="hi")
        assert unstructure(part) == {"kind": "markdown", "id": "p1", "content": "hi"}
        assert unstructure(UsageInfo()) == {}


class TestSessionStatus:
    def test_is_a_bitset(self) -> None:
        """Flags combine and are tested with ``&``; INPUT_NEEDED implies IN_PROGRESS."""
        status = SessionStatus.INPUT_NEEDED | SessionStatus.IS_READ
        assert status & SessionStatus.IN_PROGRESS
        assert not status & SessionStatus.IDLE
        assert unstructure(status) == 56

    @pytest.mark.parametrize("value", [0, 1, 72, 2147483720, 2**32 - 1])
    def test_round_trips_every_32_bit_value(self, value: int) -> None:
        """Unknown bits survive: the value re-encodes exactly (fixtures 004 and 005)."""
        status = structure(value, SessionStatus)
        assert status == value
        assert unstructure(status) == value
        assert type(unstructure(status)) is int

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            (-1, "out of the 32-bit unsigned range"),
            (2**32, "out of the 32-bit unsigned range"),
            (True, "got a boolean"),
            ("8", "got a string"),
            (8.0, "got a number"),
        ],
    )
    def test_rejects_what_is_no_bitset(self, value: object, message: str) -> None:
        error = error_of({**chat_state_json(), "status": value}, ChatState)
        assert error.path == "$.status"
        assert message in error.message


class TestUntaggedUnions:
    def test_string_or_markdown(self) -> None:
        """A bare string stays a string; ``{"markdown": ...}`` becomes MarkdownString."""
        assert structure_as("plain", StringOrMarkdown) == "plain"
        rich = structure_as({"markdown": "**bold**"}, StringOrMarkdown)
        assert rich == MarkdownString(markdown="**bold**")
        assert unstructure(rich) == {"markdown": "**bold**"}

    def test_tool_input_inline_or_by_reference(self) -> None:
        assert structure_as('{"cmd": "ls"}', ToolInput) == '{"cmd": "ls"}'
        assert structure_as({"uri": "file:///in.json"}, ToolInput) == ContentRef(
            uri="file:///in.json"
        )

    def test_other_json_is_refused(self) -> None:
        error = error_of(["not", "text"], StringOrMarkdown)
        assert error.path == "$"
        assert "a string or a {markdown} object" in error.message


class TestActions:
    def test_every_action_has_its_type(self) -> None:
        action = structure_action({"type": "session/titleChanged", "title": "Hello"})
        assert action == SessionTitleChangedAction(title="Hello")
        assert action.type == "session/titleChanged"

    def test_unknown_action_is_kept_verbatim(self) -> None:
        """An unknown ``type`` decodes to UnknownAction and re-encodes unchanged (fixture 002)."""
        wire = {"type": "future/newAction", "foo": 42, "nested": {"a": [1, None]}}
        action = structure_action(wire)
        assert isinstance(action, UnknownAction)
        assert action.type == "future/newAction"
        assert unstructure(action) == wire

    def test_actions_of_unmodelled_channels_are_unknown(self) -> None:
        """Root, terminal, changeset... actions are not modelled: they pass through."""
        wire = {"type": "terminal/data", "data": "ls\r\n"}
        assert structure_action(wire) == UnknownAction(raw=wire)

    def test_channel_specific_decoders_refuse_unknown_types(self) -> None:
        with pytest.raises(PeerProtocolError) as info:
            structure_chat_action({"type": "session/titleChanged", "title": "x"})
        assert info.value.path == "$.type"
        with pytest.raises(PeerProtocolError):
            structure_session_action({"type": "future/newAction"})

    def test_tool_call_confirmed_is_discriminated_on_approved(self) -> None:
        """``chat/toolCallConfirmed`` is approved or denied, each with its own fields."""
        ids = {"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "tc-1"}
        approved = structure_action({**ids, "approved": True, "confirmed": "user-action"})
        assert approved == ChatToolCallApprovedAction(
            turn_id="t1", tool_call_id="tc-1", confirmed=ToolCallConfirmationReason.USER_ACTION
        )
        denied = structure_action({**ids, "approved": False, "reason": "skipped"})
        assert isinstance(denied, ChatToolCallDeniedAction)
        assert denied.reason is ToolCallCancellationReason.SKIPPED
        assert unstructure(denied) == {**ids, "approved": False, "reason": "skipped"}

    def test_approved_must_be_a_boolean(self) -> None:
        ids = {"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "tc-1"}
        with pytest.raises(PeerProtocolError) as info:
            structure_action({**ids, "approved": 1, "confirmed": "user-action"})
        assert info.value.path == "$.approved"

    def test_denied_reason_excludes_result_denied(self) -> None:
        ids = {"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "tc-1"}
        with pytest.raises(PeerProtocolError) as info:
            structure_action({**ids, "approved": False, "reason": "result-denied"})
        assert info.value.path == "$.reason"

    def test_chat_updated_carries_partial_summary(self) -> None:
        wire = {"type": "session/chatUpdated", "chat": "ahp-chat:/c1", "changes": {"title": "T"}}
        action = structure_action(wire)
        assert isinstance(action, SessionChatUpdatedAction)
        assert action.changes.title == "T"
        assert action.changes.status is None
        assert unstructure(action) == wire

    def test_turn_started_round_trips(self) -> None:
        action = ChatTurnStartedAction(
            turn_id="t1",
            started_at="2025-03-10T18:42:00.000Z",
            message=Message(text="Hi", origin=MessageOrigin(kind=MessageKind.USER)),
        )
        assert structure_chat_action(unstructure(action)) == action


class TestEnvelope:
    def test_origin_absent_stays_absent(self) -> None:
        """Server-originated envelopes have no origin, and none is written (fixture 025)."""
        wire = {
            "channel": "ahp-session:/s1",
            "action": {"type": "session/titleChanged", "title": "Hello"},
            "serverSeq": 2148131814,
        }
        envelope = structure_envelope(wire)
        assert envelope == ActionEnvelope(
            channel="ahp-session:/s1",
            action=SessionTitleChangedAction(title="Hello"),
            server_seq=2148131814,
        )
        assert unstructure(envelope) == wire


class TestErrors:
    def test_unknown_tag_names_the_discriminator(self) -> None:
        """A nested unknown tool-call status is reported at its wire path."""
        bad_call = {**RUNNING_TOOL_CALL, "status": "exploded"}
        wire = chat_state_json(
            activeTurn=active_turn_json({"kind": "toolCall", "toolCall": bad_call})
        )
        error = error_of(wire, ChatState)
        assert error.path == "$.activeTurn.responseParts[0].toolCall.status"
        assert "exploded" in error.message
        assert "running" in error.message

    def test_missing_discriminator(self) -> None:
        error = error_of(chat_state_json(origin={"chat": "ahp-chat:/p"}), ChatState)
        assert error.path == "$.origin.kind"
        assert "missing" in error.message

    def test_missing_required_field_uses_wire_name(self) -> None:
        """Paths use the camelCase wire keys, never the Python attribute names."""
        call = {k: v for k, v in RUNNING_TOOL_CALL.items() if k != "toolCallId"}
        wire = chat_state_json(activeTurn=active_turn_json({"kind": "toolCall", "toolCall": call}))
        error = error_of(wire, ChatState)
        assert error.path == "$.activeTurn.responseParts[0].toolCall.toolCallId"
        assert error.message == "required field is missing"

    @pytest.mark.parametrize("data", [[], "state", 3, None, True])
    def test_top_level_must_be_an_object(self, data: object) -> None:
        error = error_of(data, ChatState)
        assert error.path == "$"
        assert error.message.startswith("expected a JSON object")

    def test_nested_value_must_be_an_object(self) -> None:
        error = error_of(chat_state_json(activeTurn=active_turn_json("text")), ChatState)
        assert error.path == "$.activeTurn.responseParts[0]"
        assert "got a string" in error.message

    @pytest.mark.parametrize(
        ("changes", "path", "message"),
        [
            ({"title": 5}, "$.title", "expected a string, got a number"),
            ({"turns": "none"}, "$.turns", "expected a JSON array, got a string"),
            ({"_meta": []}, "$._meta", "expected a JSON object, got an array"),
            ({"interactivity": "loud"}, "$.interactivity", '"read-only"'),
            ({"workingDirectories": [1]}, "$.workingDirectories[0]", "expected a string"),
        ],
    )
    def test_wrong_types(self, changes: dict[str, Any], path: str, message: str) -> None:
        error = error_of(chat_state_json(**changes), ChatState)
        assert error.path == path
        assert message in error.message

    def test_numbers_are_not_booleans(self) -> None:
        usage = {"inputTokens": True}
        turn = {**active_turn_json(), "usage": usage}
        error = error_of(chat_state_json(activeTurn=turn), ChatState)
        assert error.path == "$.activeTurn.usage.inputTokens"

    def test_mapping_values_are_located_by_key(self) -> None:
        request = {"id": "r1", "answers": {"q1": {"state": 5}}}
        part = {"kind": "inputRequest", "request": request}
        error = error_of(part, ResponsePart)
        assert error.path == "$.request.answers['q1'].state"

    def test_session_state_errors_too(self) -> None:
        with pytest.raises(PeerProtocolError) as info:
            structure_session_state({"provider": "p", "title": "t", "status": 1})
        assert info.value.path == "$.lifecycle"

    def test_error_is_chained_and_printable(self) -> None:
        error = error_of(chat_state_json(title=None), ChatState)
        assert error.__cause__ is not None
        assert str(error) == f"ahp: $.title: {error.message}"


class TestTypedValues:
    def test_numbers_keep_their_json_form(self) -> None:
        """A ``float`` field keeps an integral JSON number an int, so ``0`` stays ``0``."""
        wire = {"kind": "number", "id": "q1", "message": "How many?", "min": 0, "max": 2.5}
        question = structure_as(wire, ChatInputQuestion)
        assert isinstance(question, ChatInputNumberQuestion)
        assert unstructure(question) == wire
        assert type(unstructure(question)["min"]) is int

    def test_integer_fields_refuse_fractions(self) -> None:
        error = error_of({"uri": "file:///a", "sizeHint": 1.5}, ToolInput)
        assert error.path == "$.sizeHint"
        assert error.message == "expected an integer, got a number"

    def test_active_turn_usage_is_optional(self) -> None:
        turn = structure({**active_turn_json(), "usage": None}, ActiveTurn)
        assert turn.usage is None
