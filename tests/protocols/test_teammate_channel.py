"""The teammates channel as data: each request a client sends read into its model, the
refusals that name the field, and the frames the daemon answers with.

The channel's first cases live beside the teammates' state (``core/test_teammate_state.py``);
these are the request's limits, its ``id``, and the answers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import JsonLimits, PeerProtocolError
from orchestrator.protocols import (
    ControlTeammate,
    ListTeammates,
    Subscribe,
    TeammateHistory,
    TeammateRequest,
    parse_request,
    teammates_message,
)
from tests.support.examples import examples


def read(data: dict[str, Any]) -> TeammateRequest:
    return parse_request(json.dumps(data), max_bytes=10_000)


def refused(data: dict[str, Any]) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as caught:
        read(data)
    assert caught.value.protocol == "teammates channel"
    return caught.value


class TestRequests:
    @pytest.mark.parametrize("action", ["pause", "resume", "trigger", "stop"])
    def test_each_control_names_its_teammate(self, action: str) -> None:
        assert read({"type": action, "name": "nightly/audit", "id": "c1"}) == ControlTeammate(
            action=action, name="nightly/audit", id="c1"
        )

    def test_a_history_reads_fifty_runs_unless_told(self) -> None:
        assert read({"type": "history", "name": "a"}) == TeammateHistory(name="a", limit=50)

    @pytest.mark.parametrize("limit", [1, 1000])
    def test_a_history_limit_from_1_to_1000(self, limit: int) -> None:
        assert read({"type": "history", "name": "a", "limit": limit}) == TeammateHistory(
            name="a", limit=limit
        )

    @pytest.mark.parametrize("limit", [0, 1001, -1, 2.5, "5", None])
    def test_any_other_limit_is_refused(self, limit: object) -> None:
        error = refused({"type": "history", "name": "a", "limit": limit})
        assert (error.path, error.message) == ("$.limit", "expected an integer from 1 to 1000")

    @pytest.mark.parametrize("request_id", ["x", 0, -7, 10**18])
    def test_an_id_is_a_string_or_an_integer(self, request_id: str | int) -> None:
        assert read({"type": "list", "id": request_id}) == ListTeammates(id=request_id)

    @pytest.mark.parametrize(("request_id", "got"), [(True, "a boolean"), (1.5, "a number")])
    def test_a_boolean_or_a_fraction_is_no_id(self, request_id: object, got: str) -> None:
        error = refused({"type": "subscribe", "id": request_id})
        assert (error.path, error.message) == (
            "$.id",
            f"expected a string or an integer, got {got}",
        )

    def test_a_name_of_200_characters_is_read_201_refused(self) -> None:
        assert read({"type": "stop", "name": "n" * 200}) == ControlTeammate("stop", "n" * 200)
        error = refused({"type": "stop", "name": "n" * 201})
        assert (error.path, error.message) == ("$.name", "201 characters; a name has at most 200")

    def test_a_blank_name_is_refused_as_empty(self) -> None:
        error = refused({"type": "pause", "name": "   "})
        assert error.message == "pause needs the teammate's name (a string), got an empty string"

    def test_list_and_subscribe_need_no_name(self) -> None:
        assert read({"type": "subscribe", "name": 5}) == Subscribe()
        assert read({"type": "list", "channel": "teammates"}) == ListTeammates()

    def test_a_long_type_is_named_by_its_json_type(self) -> None:
        """A peer's long string is not echoed back in full."""
        error = refused({"type": "x" * 41})
        assert error.path == "$.type"
        assert error.message.endswith("; got a string")

    def test_the_json_limits_given_are_applied(self) -> None:
        frame = json.dumps({"type": "list", "extra": [[[1]]]})
        assert parse_request(frame, max_bytes=1_000) == ListTeammates()
        with pytest.raises(PeerProtocolError, match="nested deeper than 3 levels"):
            parse_request(frame, max_bytes=1_000, limits=JsonLimits(max_depth=3))

    @settings(max_examples=examples(50))
    @given(
        kind=st.sampled_from(
            ["list", "subscribe", "history", "pause", "resume", "trigger", "stop"]
        ),
        name=st.text("ab/ é", min_size=1, max_size=12).filter(str.strip),
        request_id=st.none() | st.integers(-(10**18), 10**18) | st.text("xy1", max_size=5),
        extra=st.dictionaries(
            st.sampled_from(["x", "why", "since"]), st.integers(-9, 9), max_size=2
        ),
    )
    def test_a_request_is_read_back_from_its_fields(
        self, kind: str, name: str, request_id: str | int | None, extra: dict[str, int]
    ) -> None:
        """Keys the channel does not know are read past."""
        data: dict[str, Any] = {"type": kind, "name": name, **extra}
        if request_id is not None:
            data["id"] = request_id
        expected: TeammateRequest
        if kind == "list":
            expected = ListTeammates(id=request_id)
        elif kind == "subscribe":
            expected = Subscribe(id=request_id)
        elif kind == "history":
            expected = TeammateHistory(name=name, id=request_id)
        else:
            expected = ControlTeammate(action=kind, name=name, id=request_id)
        assert read(data) == expected


class TestMessages:
    def test_an_answer_carries_the_channel_the_type_and_the_fields(self) -> None:
        line = teammates_message("history", teammate="t/a", runs=[])
        assert json.loads(line) == {
            "channel": "teammates",
            "type": "history",
            "teammate": "t/a",
            "runs": [],
        }
        assert list(json.loads(line))[:2] == ["channel", "type"]

    @pytest.mark.parametrize("request_id", ["r1", 0])
    def test_the_request_id_is_echoed(self, request_id: str | int) -> None:
        line = teammates_message("error", request_id, code="not_found", message="no such")
        assert json.loads(line)["id"] == request_id

    def test_no_id_when_the_request_had_none(self) -> None:
        assert "id" not in json.loads(teammates_message("teammates", None, teammates=[]))

    def test_text_is_written_as_is_not_escaped(self) -> None:
        assert '"café"' in teammates_message("done", teammate={"name": "café"})
