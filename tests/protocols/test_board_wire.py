"""The board's JSON for clients, and the requests a person sends: read back exactly, and bad
input refused naming the field."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import PeerProtocolError
from orchestrator.core import BoardItemCreated, fold_board
from orchestrator.protocols import (
    BoardRequest,
    board_from_json,
    board_to_json,
    parse_board_request,
)
from tests.support.examples import examples


def test_the_board_reads_back_in_camel_case() -> None:
    board = fold_board(
        [
            (
                BoardItemCreated(item="a", title="A", assignee="w", assignee_kind="agent",
                                 by="team", by_kind="agent"),
                "2026-12-07T15:00:00.000Z",
            )
        ]
    )  # fmt: skip
    data = board_to_json(board)
    assert data["items"][0]["assigneeKind"] == "agent"
    assert data["items"][0]["status"] == "open"
    assert board_from_json(data) == board


def test_a_bad_board_names_the_place() -> None:
    with pytest.raises(PeerProtocolError) as info:
        board_from_json({"items": [{"id": "a"}]})
    assert info.value.path == "$.items"
    with pytest.raises(PeerProtocolError, match="items array"):
        board_from_json([])


class TestRequests:
    def test_a_comment(self) -> None:
        assert parse_board_request({"op": "comment", "item": "a", "text": "hi"}) == BoardRequest(
            op="comment", item="a", fields={"text": "hi"}
        )

    @pytest.mark.parametrize(
        ("body", "path", "message"),
        [
            ([], "$", "expected a JSON object"),
            ({"op": "steal", "item": "a"}, "$.op", "unknown operation 'steal'"),
            ({"op": [], "item": "a"}, "$.op", "unknown operation"),
            ({"op": "claim"}, "$.item", "missing field for claim"),
            ({"op": "claim", "item": ""}, "$.item", "non-empty string"),
            ({"op": "claim", "item": "a", "text": "x"}, "$.text", "unknown field for claim"),
            ({"op": "update", "item": "a", "reviewing": "yes"}, "$.reviewing", "true or false"),
            ({"op": "comment", "item": "a", "text": "x" * 8001}, "$.text", "at most 8000"),
        ],
    )
    def test_bad_requests_name_the_field(self, body: object, path: str, message: str) -> None:
        with pytest.raises(PeerProtocolError, match=message) as info:
            parse_board_request(body)
        assert info.value.path == path

    @settings(max_examples=examples(200))
    @given(
        st.dictionaries(
            st.sampled_from(["op", "item", "text", "x"]),
            st.none() | st.text() | st.lists(st.integers(), max_size=2),
        )
    )
    def test_any_object_is_a_request_or_a_refusal(self, body: dict[str, object]) -> None:
        try:
            request = parse_board_request(body)
        except PeerProtocolError:
            return
        assert request.item.strip()
