"""Which fact carries an AHP client's action: an :class:`ExpectedAction` matches exactly the
action of its kind and key, and it and a client's origin travel to another node as JSON and
back unchanged, or are refused as the sender's error."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ActionOrigin,
    ChatInputCompletedAction,
    ChatPendingMessageSetAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
    ChatTurnCancelledAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import (
    ChatInputResponseKind,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessageKind,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
)
from orchestrator.base import PeerProtocolError
from orchestrator.core import Action
from orchestrator.sessions import ExpectedAction, decode_origin, encode_origin
from tests.support.examples import examples

AT = "2026-12-07T00:00:00.000Z"


def message(text: str) -> Message:
    return Message(text=text, origin=MessageOrigin(kind=MessageKind.USER))


def turn_started(text: str) -> ChatTurnStartedAction:
    return ChatTurnStartedAction(turn_id="turn-1", started_at=AT, message=message(text))


def pending(kind: PendingMessageKind, text: str) -> ChatPendingMessageSetAction:
    return ChatPendingMessageSetAction(kind=kind, id="pending-1", message=message(text))


APPROVED = ChatToolCallApprovedAction(
    turn_id="turn-1", tool_call_id="call-1", confirmed=ToolCallConfirmationReason.USER_ACTION
)
DENIED = ChatToolCallDeniedAction(
    turn_id="turn-1", tool_call_id="call-1", reason=ToolCallCancellationReason.DENIED
)
COMPLETED = ChatInputCompletedAction(request_id="input-1", response=ChatInputResponseKind.ACCEPT)
CANCELLED = ChatTurnCancelledAction(turn_id="turn-1", duration=0)

EVERY_ACTION: list[Action] = [
    turn_started("hello"),
    pending(PendingMessageKind.QUEUED, "hello"),
    pending(PendingMessageKind.STEERING, "hello"),
    APPROVED,
    DENIED,
    COMPLETED,
    CANCELLED,
]


class TestMatching:
    @pytest.mark.parametrize(
        ("expected", "matched"),
        [
            (ExpectedAction(kind="turn", key="hello"), [0]),
            (ExpectedAction(kind="pending", key="hello", pending="queued"), [1]),
            (ExpectedAction(kind="pending", key="hello", pending="steering"), [2]),
            (ExpectedAction(kind="confirmation", key="call-1"), [3, 4]),
            (ExpectedAction(kind="completion", key="input-1"), [5]),
            (ExpectedAction(kind="cancellation", key="turn-1"), [6]),
        ],
    )
    def test_each_kind_matches_its_action_and_no_other(
        self, expected: ExpectedAction, matched: list[int]
    ) -> None:
        """A confirmation is carried by the approval or the denial of its tool call."""
        found = [index for index, action in enumerate(EVERY_ACTION) if expected(action)]
        assert found == matched

    @pytest.mark.parametrize(
        ("expected", "action"),
        [
            (ExpectedAction(kind="turn", key="hello"), turn_started("hello again")),
            (
                ExpectedAction(kind="pending", key="hello", pending="steering"),
                pending(PendingMessageKind.QUEUED, "hello"),
            ),
            (ExpectedAction(kind="pending", key="hello", pending="queued"), turn_started("hello")),
            (ExpectedAction(kind="confirmation", key="call-2"), APPROVED),
            (ExpectedAction(kind="completion", key="input-2"), COMPLETED),
            (ExpectedAction(kind="cancellation", key="turn-2"), CANCELLED),
        ],
    )
    def test_another_key_or_pending_kind_is_not_matched(
        self, expected: ExpectedAction, action: Action
    ) -> None:
        assert not expected(action)


KINDS = st.sampled_from(["turn", "pending", "confirmation", "completion", "cancellation"])
EXPECTED = st.builds(ExpectedAction, kind=KINDS, key=st.text(), pending=st.text())
ORIGINS = st.builds(ActionOrigin, client_id=st.text(), client_seq=st.integers())


class TestTravel:
    @settings(max_examples=examples(100))
    @given(expected=EXPECTED)
    def test_an_expected_action_travels_whole(self, expected: ExpectedAction) -> None:
        assert ExpectedAction.from_json(expected.to_json()) == expected

    def test_pending_is_empty_when_left_out(self) -> None:
        assert ExpectedAction.from_json({"kind": "turn", "key": "hi"}) == ExpectedAction(
            kind="turn", key="hi", pending=""
        )

    @pytest.mark.parametrize(
        ("data", "said"),
        [
            (["turn", "hi"], "an expected action is an object"),
            ("turn", "an expected action is an object"),
            ({"kind": "rm -rf", "key": "hi"}, "not an expected action: {'kind': 'rm -rf'"),
            ({"kind": "turn"}, "not an expected action"),
            ({"kind": "turn", "key": 7}, "not an expected action"),
            ({"kind": "pending", "key": "hi", "pending": None}, "not an expected action"),
        ],
    )
    def test_what_to_json_does_not_make_is_refused(self, data: Any, said: str) -> None:
        with pytest.raises(PeerProtocolError, match=said.replace("{", r"\{")) as refused:
            ExpectedAction.from_json(data)
        assert refused.value.protocol == "forwarding"

    def test_a_long_refused_expected_action_is_cut_short(self) -> None:
        with pytest.raises(PeerProtocolError) as refused:
            ExpectedAction.from_json({"kind": "turn", "key": 1, "pad": "x" * 10_000})
        assert len(str(refused.value)) < 400

    @settings(max_examples=examples(100))
    @given(origin=ORIGINS)
    def test_an_origin_travels_whole(self, origin: ActionOrigin) -> None:
        assert decode_origin(encode_origin(origin)) == origin

    def test_an_origin_is_written_in_the_wire_s_names(self) -> None:
        origin = ActionOrigin(client_id="client-1", client_seq=3)
        assert encode_origin(origin) == {"clientId": "client-1", "clientSeq": 3}

    @pytest.mark.parametrize(
        ("data", "said"),
        [
            (None, "an origin is an object"),
            ({"clientId": "c"}, "not an origin"),
            ({"clientId": 1, "clientSeq": 1}, "not an origin"),
            ({"clientId": "c", "clientSeq": "1"}, "not an origin"),
            ({"clientId": "c", "clientSeq": True}, "not an origin"),  # a bool is no number here
        ],
    )
    def test_what_encode_origin_does_not_make_is_refused(self, data: Any, said: str) -> None:
        with pytest.raises(PeerProtocolError, match=said):
            decode_origin(data)
