"""Forward compatibility: what a newer AHP peer adds is kept, passed on unchanged, and skipped.

The property tests take valid states and actions, encode them, and inject what a newer peer
could send: unknown keys in every object (names that cannot be wire keys of ours, any JSON
value), unknown variants of every open union (into its lists and its absent optional fields)
and actions of unknown types. The injected JSON must (a) decode, (b) re-encode to exactly the
same JSON, unknown keys after the known ones, and (c) reduce exactly as the original does:
folding the injected actions over the injected state and then removing what was injected gives
the original fold, while the state's own unknown fields survive the fold.

Example tests pin down each union opened, the closed ones, the open enums, and the reducers'
no-ops.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, Final

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.ahp import (
    UnknownVariant,
    WireObject,
    reduce_chat,
    reduce_session,
    structure,
    structure_as,
    unstructure,
    validate_chat_action,
    validate_session_action,
    wire_name,
)
from orchestrator.ahp import state as ahp_state
from orchestrator.ahp.actions import (
    ActionEnvelope,
    ChatAction,
    ChatDeltaAction,
    ChatInputAnswerChangedAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatSummaryChanges,
    ChatToolCallCompleteAction,
    ChatToolCallReadyAction,
    SessionAction,
    SessionCustomizationToggledAction,
    SessionCustomizationUpdatedAction,
    SessionInputNeededSetAction,
    StateAction,
)
from orchestrator.ahp.state import (
    ChatCatalog,
    ChatState,
    Customization,
    MessageAttachment,
    ResponsePart,
    ResponseParts,
    SessionState,
    SessionStatus,
    SessionSummary,
    ToolCallState,
    ToolResultContent,
    UnknownChatOrigin,
    UnknownCustomization,
    UnknownSessionInputRequest,
)
from orchestrator.base import IllegalTransitionError
from tests.support.ahp_unknown import TURN, _members, _unknown_of, chat_with_parts, text
from tests.support.examples import examples
from tests.support.strategies import (
    NOW,
    empty_chats,
    json_values,
    pooled_actions,
    session_actions,
    session_states,
    state_actions,
    unknown_actions,
)

PREFIX: Final = "x-fwd-"
"""Every injected key and every injected tag starts with it; no wire key of ours has a ``-``."""

TAGS: Final = ("kind", "type", "status", "state")

RUN = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples(30)
)

names = st.from_regex(r"x-fwd-[a-z]{1,6}", fullmatch=True)
unknown_objects = st.dictionaries(names, json_values, max_size=2)


# ─── Injecting ───────────────────────────────────────────────────────────────


def _item_type(tp: Any) -> Any:
    if tp is ResponseParts:
        return ResponsePart
    if tp is ChatCatalog:
        return ahp_state.ChatSummary
    if typing.get_origin(tp) is tuple:
        return typing.get_args(tp)[0]
    return None


@st.composite
def unknown_variant(draw: st.DrawFn, cls: type[UnknownVariant]) -> dict[str, Any]:
    return {cls.TAG: draw(names), **draw(unknown_objects)}


#: Values whose absent fields mean "unchanged": a value of a new kind there is a change (the
#: reducer keeps and applies it), which stripping it cannot undo, so none is injected. A
#: second ``toolCallReady`` on a pending confirmation refines it: an absent risk assessment
#: keeps the one before, a new kind of assessment replaces it.
PARTIAL_UPDATES: Final = frozenset({ChatSummaryChanges, ChatToolCallReadyAction})


def inject(draw: st.DrawFn, data: Any, tp: Any) -> Any:
    """``data`` (the JSON of a value of type ``tp``) with unknown keys and variants injected."""
    members = _members(tp)
    if members is not None:
        if len(members) == 1:
            return inject(draw, data, members[0])
        if not isinstance(data, dict):
            return data  # a string of StringOrMarkdown, a JSON primitive...
        return inject(draw, data, type(structure_as(data, tp)))
    item = _item_type(tp)
    if item is not None:
        items = [inject(draw, x, item) for x in data]
        unknown = _unknown_of(item)
        if unknown is not None:
            for _ in range(draw(st.integers(0, 1))):
                position = draw(st.integers(0, len(items)))
                items.insert(position, draw(unknown_variant(unknown)))
        return items
    if typing.get_origin(tp) is Mapping:
        value_type = typing.get_args(tp)[1]
        if value_type is Any:
            return data
        return {key: inject(draw, value, value_type) for key, value in data.items()}
    if not (isinstance(tp, type) and issubclass(tp, WireObject)):
        return data
    hints = typing.get_type_hints(tp)
    out: dict[str, Any] = {}
    for field in attrs.fields(tp):
        if field.name == "unknown_fields":
            continue
        key = wire_name(tp, field.name)
        field_type = hints[field.name]
        if key in data:
            out[key] = inject(draw, data[key], field_type)
        elif (
            (unknown := _unknown_of(field_type)) is not None
            and tp not in PARTIAL_UPDATES
            and draw(st.integers(0, 3)) == 0
        ):
            out[key] = draw(unknown_variant(unknown))  # an absent optional, now of a new kind
    out.update(draw(unknown_objects))
    return out


@st.composite
def injected(draw: st.DrawFn, value: Any, tp: Any) -> Any:
    """The JSON of ``value`` (of type ``tp``) with injections."""
    return inject(draw, unstructure(value), tp)


# ─── Removing what was injected ──────────────────────────────────────────────

_EMPTIED: Final = "<emptied by stripping>"


def _is_injected_variant(value: Any) -> bool:
    return isinstance(value, dict) and any(
        isinstance(value.get(tag), str) and value[tag].startswith(PREFIX) for tag in TAGS
    )


def strip(value: Any) -> Any:
    """``value`` without injected keys and variants; a list or a map that held only injected
    variants becomes :data:`_EMPTIED` (the reducer may keep it where the original fold had
    none: a question's answer of a new kind makes a map of answers the fold without it has not)."""
    if isinstance(value, dict):
        known = {key: item for key, item in value.items() if not key.startswith(PREFIX)}
        fields = {key: strip(item) for key, item in known.items() if not _is_injected_variant(item)}
        return _EMPTIED if known and not fields else fields
    if isinstance(value, list):
        kept = [strip(item) for item in value if not _is_injected_variant(item)]
        return _EMPTIED if value and not kept else kept
    return value


_ABSENT: Final = object()


def same(stripped: Any, original: Any) -> bool:
    """``strip``'s result equals ``original``; an emptied list or map stands for ``[]``,
    ``{}`` or absent."""
    if isinstance(stripped, dict) and isinstance(original, dict):
        for key in stripped.keys() | original.keys():
            mine, theirs = stripped.get(key, _ABSENT), original.get(key, _ABSENT)
            if mine is _EMPTIED:
                if not (theirs is _ABSENT or theirs == [] or theirs == {}):
                    return False
            elif mine is _ABSENT or theirs is _ABSENT or not same(mine, theirs):
                return False
        return True
    if isinstance(stripped, list) and isinstance(original, list):
        return len(stripped) == len(original) and all(map(same, stripped, original))
    return type(stripped) is type(original) and stripped == original


def unknown_keys_come_last(value: Any) -> bool:
    """In every object of ``value``, the injected keys follow the known ones."""
    if isinstance(value, dict):
        injected_at = [key.startswith(PREFIX) for key in value]
        return injected_at == sorted(injected_at) and all(
            map(unknown_keys_come_last, value.values())
        )
    if isinstance(value, list):
        return all(map(unknown_keys_come_last, value))
    return True


# ─── Properties ──────────────────────────────────────────────────────────────


class TestRoundTrip:
    @pytest.mark.parametrize(
        "tp",
        [
            ChatState,
            SessionState,
            SessionSummary,
            ResponsePart,
            ToolCallState,
            ToolResultContent,
            MessageAttachment,
            Customization,
            ChatAction,
            SessionAction,
            ActionEnvelope,
        ],
        ids=lambda tp: getattr(tp, "__name__", None) or str(tp),
    )
    @RUN
    @given(data=st.data())
    def test_injected_json_decodes_and_reencodes_verbatim(
        self, tp: Any, data: st.DataObject
    ) -> None:
        """(a) decodes, (b) re-encodes to exactly the injected JSON; stripping gives back the
        original encoding (so the injection is what the other properties remove)."""
        from tests.support.strategies import ahp_values

        value = data.draw(ahp_values(tp))
        wire = data.draw(injected(value, tp))
        decoded = structure_as(wire, tp)
        reencoded = unstructure(decoded)
        assert text(reencoded) == text(wire)
        assert unknown_keys_come_last(reencoded)
        assert same(strip(wire), unstructure(value))

    @RUN
    @given(data=st.data())
    def test_unknown_state_actions_reencode_verbatim(self, data: st.DataObject) -> None:
        action = data.draw(unknown_actions)
        wire = unstructure(action)
        assert structure_as(wire, StateAction) == action
        assert text(unstructure(structure_as(wire, StateAction))) == text(wire)


@st.composite
def chat_histories(draw: st.DrawFn) -> tuple[ChatState, list[ChatAction]]:
    """A chat and a sequence of actions that keep meeting its live ids."""
    state = draw(empty_chats())
    actions: list[ChatAction] = []
    live = state
    for _ in range(draw(st.integers(0, 25))):
        action = draw(pooled_actions(live=live))
        actions.append(action)
        live = reduce_chat(live, action, now=NOW)
    return state, actions


def fold_chat(state: ChatState, actions: list[Any]) -> ChatState:
    for action in actions:
        state = reduce_chat(state, action, now=NOW)
    return state


def fold_session(state: SessionState, actions: list[Any]) -> SessionState:
    for action in actions:
        state = reduce_session(state, action, now=NOW)
    return state


@st.composite
def with_unknown_actions(draw: st.DrawFn, actions: list[Any]) -> list[Any]:
    """The JSON of ``actions``, injected, with actions of unknown types among them."""
    wires: list[Any] = [draw(injected(action, StateAction)) for action in actions]
    for _ in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(wires)))
        wires.insert(position, unstructure(draw(unknown_actions)))
    return wires


class TestReducersSkipWhatTheyDoNotKnow:
    @RUN
    @given(history=chat_histories(), data=st.data())
    def test_chat_fold_is_the_fold_without_injections(
        self, history: tuple[ChatState, list[ChatAction]], data: st.DataObject
    ) -> None:
        """(c) The injected fold, stripped, is the original fold; the state's unknown fields
        survive it."""
        state, actions = history
        wire_state = data.draw(injected(state, ChatState))
        wire_actions = data.draw(with_unknown_actions(actions))
        decoded = structure(wire_state, ChatState)
        folded = fold_chat(decoded, [structure_as(a, StateAction) for a in wire_actions])
        expected = unstructure(fold_chat(state, actions))
        assert same(strip(unstructure(folded)), expected)
        assert folded.unknown_fields == decoded.unknown_fields

    @RUN
    @given(state=session_states(), data=st.data())
    def test_session_fold_is_the_fold_without_injections(
        self, state: SessionState, data: st.DataObject
    ) -> None:
        actions = data.draw(st.lists(session_actions(), max_size=8))
        wire_state = data.draw(injected(state, SessionState))
        wire_actions = data.draw(with_unknown_actions(actions))
        decoded = structure(wire_state, SessionState)
        folded = fold_session(decoded, [structure_as(a, StateAction) for a in wire_actions])
        expected = unstructure(fold_session(state, actions))
        assert same(strip(unstructure(folded)), expected)
        assert folded.unknown_fields == decoded.unknown_fields

    @RUN
    @given(actions=st.lists(state_actions(), max_size=5), data=st.data())
    def test_envelopes_keep_their_injections(self, actions: list[Any], data: st.DataObject) -> None:
        for action in actions:
            envelope = ActionEnvelope(channel="ahp-chat:/c", action=action, server_seq=1)
            wire = data.draw(injected(envelope, ActionEnvelope))
            assert text(unstructure(structure(wire, ActionEnvelope))) == text(wire)


# ─── Examples ────────────────────────────────────────────────────────────────


FUTURE_PART: Final = {"kind": "hologram", "id": "h-1", "frames": [1, 2]}


class TestChatReducerNoOps:
    """An action aimed at a part it cannot place leaves the state as it is (the same object)."""

    @pytest.mark.parametrize(
        "action",
        [
            ChatDeltaAction(turn_id=TURN, part_id="h-1", content="x"),  # an unknown kind's id
            ChatReasoningAction(turn_id=TURN, part_id="h-1", content="x"),
            ChatDeltaAction(turn_id=TURN, part_id="nowhere", content="x"),  # no such part
            ChatDeltaAction(turn_id=TURN, part_id="r-1", content="x"),  # a part of another kind
        ],
    )
    def test_deltas(self, action: ChatAction) -> None:
        reasoning = {"kind": "reasoning", "id": "r-1", "content": ""}
        state = chat_with_parts(FUTURE_PART, {"kind": "contentRef", "uri": "u"}, reasoning)
        assert reduce_chat(state, action, now=NOW) is state

    def test_a_tool_call_action_for_an_unknown_part(self) -> None:
        state = chat_with_parts({**FUTURE_PART, "toolCallId": "h-1"})
        action = structure_as(
            {
                "type": "chat/toolCallComplete",
                "turnId": TURN,
                "toolCallId": "h-1",
                "result": {"success": True, "pastTenseMessage": "done"},
            },
            StateAction,
        )
        assert isinstance(action, ChatToolCallCompleteAction)
        assert reduce_chat(state, action, now=NOW) is state

    def test_a_contributor_of_an_unknown_kind_is_skipped(self) -> None:
        """``chat/toolCallReady`` naming a contributor we cannot judge keeps the call's own,
        with the call's unknown fields."""
        mcp = {"kind": "mcp", "customizationId": "c"}
        call = {
            "status": "streaming",
            "toolCallId": "t",
            "toolName": "n",
            "displayName": "d",
            "contributor": mcp,
            "x-later": 1,
        }
        state = chat_with_parts({"kind": "toolCall", "toolCall": call})
        ready = {
            "type": "chat/toolCallReady",
            "turnId": TURN,
            "toolCallId": "t",
            "invocationMessage": "m",
            "contributor": {"kind": "plugin"},
        }
        after = reduce_chat(state, structure_as(ready, StateAction), now=NOW)
        assert after.active_turn is not None
        moved = unstructure(after.active_turn.response_parts[0])["toolCall"]
        assert moved["status"] == "pending-confirmation"
        assert moved["contributor"] == mcp
        assert moved["x-later"] == 1

    def test_an_unknown_action(self) -> None:
        state = chat_with_parts(FUTURE_PART)
        action = structure_as({"type": "chat/hologramFrame", "partId": "h-1"}, StateAction)
        assert reduce_chat(state, action, now=NOW) is state

    def test_a_new_part_of_an_unknown_kind_is_kept(self) -> None:
        """``chat/responsePart`` appends whatever part it carries: it is passed on."""
        state = chat_with_parts()
        part = structure_as(FUTURE_PART, ResponsePart)
        after = reduce_chat(state, ChatResponsePartAction(turn_id=TURN, part=part), now=NOW)
        assert after.active_turn is not None
        assert unstructure(after.active_turn.response_parts[-1]) == FUTURE_PART


def session_with(**changes: Any) -> SessionState:
    wire = {
        "provider": "p",
        "title": "t",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
        **changes,
    }
    return structure(wire, SessionState)


class TestSessionReducerNoOps:
    def test_toggling_an_unknown_customization(self) -> None:
        state = session_with(customizations=[{"type": "theme", "id": "t", "enabled": False}])
        action = SessionCustomizationToggledAction(id="t", enabled=True)
        assert reduce_session(state, action, now=NOW) is state

    def test_toggling_inside_a_container_skips_unknown_children(self) -> None:
        plugin = {
            "type": "plugin",
            "id": "p",
            "uri": "u",
            "name": "n",
            "enabled": True,
            "children": [{"type": "theme", "id": "t"}],
        }
        state = session_with(customizations=[plugin])
        action = SessionCustomizationToggledAction(id="t", enabled=False)
        assert reduce_session(state, action, now=NOW) is state

    def test_updating_with_an_unknown_customization(self) -> None:
        state = session_with(customizations=[])
        customization = structure_as({"type": "theme", "id": "t"}, Customization)
        assert isinstance(customization, UnknownCustomization)
        action = SessionCustomizationUpdatedAction(customization=customization)
        assert reduce_session(state, action, now=NOW) is state

    def test_an_input_request_of_an_unknown_kind(self) -> None:
        state = session_with()
        request = structure_as(
            {"kind": "payment", "id": "p", "chat": "c"}, ahp_state.SessionInputRequest
        )
        assert isinstance(request, UnknownSessionInputRequest)
        action = SessionInputNeededSetAction(request=request)
        assert reduce_session(state, action, now=NOW) is state
        with pytest.raises(IllegalTransitionError, match="payment"):
            validate_session_action(state, action, channel="ahp-session:/s")

    def test_an_unknown_input_request_does_not_make_the_session_wait(self) -> None:
        """Only requests we know block the user: the status is the host's to say."""
        unknown = {"kind": "payment", "id": "p", "chat": "ahp-chat:/c"}
        known = {"kind": "chatInput", "id": "k", "chat": "ahp-chat:/c", "request": {"id": "r"}}
        state = session_with(inputNeeded=[unknown, known], status=int(SessionStatus.INPUT_NEEDED))
        action = structure_as({"type": "session/inputNeededRemoved", "id": "k"}, StateAction)
        after = reduce_session(state, action, now=NOW)
        assert after.status == SessionStatus.IN_PROGRESS
        assert unstructure(after)["inputNeeded"] == [unknown]
        nothing = structure_as({"type": "session/inputNeededRemoved", "id": "p"}, StateAction)
        assert reduce_session(after, nothing, now=NOW) is after

    def test_a_chat_of_an_unknown_origin_is_kept(self) -> None:
        summary = {
            "resource": "ahp-chat:/c",
            "title": "t",
            "status": 1,
            "modifiedAt": "m",
            "origin": {"kind": "hologram"},
        }
        state = session_with(chats=[summary])
        assert isinstance(state.chats[0].origin, UnknownChatOrigin)
        assert unstructure(state)["chats"] == [summary]


class TestValidatorsAcceptUnknownFields:
    def test_an_answer_with_unknown_fields_is_accepted(self) -> None:
        """A client's action is not refused because a nested object carries unknown keys."""
        question = {"kind": "text", "id": "q", "message": "?", "hint": "new"}
        request = {"id": "r", "questions": [question], "future": 1}
        state = chat_with_parts({"kind": "inputRequest", "request": request})
        action = structure_as(
            {
                "type": "chat/inputAnswerChanged",
                "requestId": "r",
                "questionId": "q",
                "answer": {
                    "state": "draft",
                    "value": {"kind": "text", "value": "a", "confidence": 0.5},
                    "x": True,
                },
                "y": [],
            },
            StateAction,
        )
        assert isinstance(action, ChatInputAnswerChangedAction)
        validate_chat_action(state, action, channel="ahp-chat:/c")
        after = reduce_chat(state, action, now=NOW)
        assert after.active_turn is not None
        part = unstructure(after.active_turn.response_parts[0])
        assert part["request"]["future"] == 1
        assert part["request"]["answers"]["q"]["value"]["confidence"] == 0.5

    def test_an_answer_of_an_unknown_kind_to_a_known_question_is_refused(self) -> None:
        request = {"id": "r", "questions": [{"kind": "text", "id": "q", "message": "?"}]}
        state = chat_with_parts({"kind": "inputRequest", "request": request})
        action = structure_as(
            {
                "type": "chat/inputAnswerChanged",
                "requestId": "r",
                "questionId": "q",
                "answer": {"state": "draft", "value": {"kind": "color", "value": "#fff"}},
            },
            StateAction,
        )
        assert isinstance(action, ChatInputAnswerChangedAction)
        with pytest.raises(IllegalTransitionError, match="color"):
            validate_chat_action(state, action, channel="ahp-chat:/c")
