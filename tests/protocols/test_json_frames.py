"""A client's WebSocket text frame as one JSON object: the size limit (in UTF-8 bytes), text
only, the input gate's limits, an object; each refusal a ``PeerProtocolError`` of the channel
that read it, at ``$``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import JsonLimits, PeerProtocolError
from orchestrator.protocols._json_frames import decode_object, shown
from tests.support.examples import examples


def refused(frame: str | bytes, max_bytes: int = 100, **limits: int) -> PeerProtocolError:
    with pytest.raises(PeerProtocolError) as caught:
        decode_object(
            frame, max_bytes=max_bytes, protocol="test channel", limits=JsonLimits(**limits)
        )
    assert caught.value.protocol == "test channel"
    return caught.value


class TestDecodeObject:
    def test_an_object_is_returned_as_read(self) -> None:
        frame = '{"type": "list", "id": 3, "nested": {"a": [1, null]}}'
        assert decode_object(frame, max_bytes=100, protocol="p") == json.loads(frame)

    def test_the_limit_counts_utf8_bytes_not_characters(self) -> None:
        """Ten characters of which two take two bytes each: twelve bytes."""
        frame = '{"a":"éé"}'
        assert decode_object(frame, max_bytes=12, protocol="p") == {"a": "éé"}
        error = refused(frame, max_bytes=11)
        assert (error.path, error.message) == ("$", "the frame is 12 bytes; the limit is 11")

    def test_a_frame_at_the_limit_is_read(self) -> None:
        frame = '{"a":1}'
        assert decode_object(frame, max_bytes=len(frame), protocol="p") == {"a": 1}

    def test_a_binary_frame_is_refused_even_if_it_holds_json(self) -> None:
        error = refused(b'{"type": "list"}')
        assert error.path == "$"
        assert error.message == (
            "binary frames are not part of this protocol: send JSON as a text frame"
        )

    def test_an_oversized_binary_frame_is_refused_for_its_size_first(self) -> None:
        assert refused(b"x" * 101).message == "the frame is 101 bytes; the limit is 100"

    @pytest.mark.parametrize(
        ("frame", "got"),
        [("[]", "an array"), ('"x"', "a string"), ("3", "a number"), ("null", "null")],
    )
    def test_json_that_is_not_an_object_is_refused_naming_its_type(
        self, frame: str, got: str
    ) -> None:
        assert refused(frame).message == f"expected a JSON object, got {got}"

    def test_text_that_is_not_json_is_refused(self) -> None:
        assert refused("{nope").message.startswith("not JSON: ")

    def test_the_limits_given_are_the_gates(self) -> None:
        """A frame nested past ``max_depth`` is refused, the same frame read under a larger one."""
        frame = '{"a":{"b":{"c":1}}}'
        assert "nested deeper than 2 levels" in refused(frame, max_depth=2).message
        assert decode_object(frame, max_bytes=100, protocol="p", limits=JsonLimits(max_depth=3))

    @settings(max_examples=examples(50))
    @given(
        value=st.recursive(
            st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
            max_leaves=8,
        )
    )
    def test_any_json_is_its_object_or_refused_at_the_root(self, value: Any) -> None:
        frame = json.dumps(value)
        if isinstance(value, dict):
            assert decode_object(frame, max_bytes=10_000, protocol="p") == value
        else:
            with pytest.raises(PeerProtocolError) as caught:
                decode_object(frame, max_bytes=10_000, protocol="p")
            assert caught.value.path == "$"


class TestShown:
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ("agent", "'agent'"),
            ("x" * 40, repr("x" * 40)),
            ("x" * 41, "a string"),
            (None, "null"),
            (3, "a number"),
            (True, "a boolean"),
            ([1], "an array"),
            ({}, "an object"),
        ],
    )
    def test_a_short_string_itself_anything_else_its_json_type(
        self, value: object, text: str
    ) -> None:
        """An error message quotes what a peer sent only when it is short and a string."""
        assert shown(value) == text
