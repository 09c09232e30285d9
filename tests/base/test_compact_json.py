"""Compact JSON text: what ``json.dumps`` writes with the same options, as JSON.

The text is ``json.dumps``'s, character for character, except the spelling of floats
(same value); NaN and infinities are refused (see ``base/_compact_json.py``)."""

from __future__ import annotations

import datetime
import json
import math
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import compact_dumps
from tests.support.strategies import json_values

#: Text that ``ensure_ascii=False`` keeps raw, and characters that are always escaped.
awkward_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from('"\\\n\t\x00\x7f\u2028é😀'),
    max_size=20,
)

#: Every JSON value without floats: for these the text is exactly json.dumps's.
float_free_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | awkward_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(awkward_text, inner, max_size=3),
    max_leaves=8,
)


def reference(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def typed(value: Any) -> Any:
    """``value`` with each number tagged by its type and floats by their exact bits, so that
    equal means the same JSON value (1 is not 1.0, 0.0 is not -0.0)."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


class TestDumps:
    @given(float_free_values)
    def test_without_floats_the_text_is_json_dumps_text(self, value: Any) -> None:
        assert compact_dumps(value) == reference(value)

    @given(json_values)
    def test_any_json_value_is_the_same_json_as_json_dumps_writes(self, value: Any) -> None:
        written = compact_dumps(value)
        assert typed(json.loads(written)) == typed(json.loads(reference(value)))
        assert typed(json.loads(written)) == typed(value)

    @given(
        st.dictionaries(
            awkward_text,
            awkward_text | st.floats(allow_nan=False, allow_infinity=False),
            max_size=5,
        )
    )
    def test_strings_and_floats_of_every_kind(self, value: dict[str, Any]) -> None:
        """Escapes and non-ASCII text as json.dumps writes them; every finite float read
        back as the same float."""
        written = compact_dumps(value)
        assert typed(json.loads(written)) == typed(value)
        if not any(isinstance(item, float) for item in value.values()):
            assert written == reference(value)

    def test_every_code_point_is_written_as_json_dumps_writes_it(self) -> None:
        points = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
        for start in range(0, len(points), 4096):
            text = "".join(points[start : start + 4096])
            assert compact_dumps([text]) == reference([text]), hex(ord(points[start]))

    def test_bare_values(self) -> None:
        values: list[Any] = ["é\n", 1, True, None, [], {}, 2**70]
        for value in values:
            assert compact_dumps(value) == reference(value)
        assert json.loads(compact_dumps(1.5)) == 1.5

    @pytest.mark.parametrize(
        "value",
        [
            {"big": 2**64, "small": -(2**63) - 1},  # past 64 bits: orjson cannot write them
            {1: "a", 2.5: "b", None: "c", False: "d"},  # keys json.dumps turns into strings
            {"lone": "\ud800"},  # a lone surrogate, kept as json.dumps keeps it
        ],
        ids=["big integers", "non-string keys", "lone surrogate"],
    )
    def test_what_orjson_cannot_write_is_written_as_json_dumps_writes_it(self, value: Any) -> None:
        assert compact_dumps(value) == reference(value)

    def test_deeper_than_orjson_goes(self) -> None:
        value: Any = 1
        for _ in range(300):
            value = [value]
        assert compact_dumps(value) == reference(value)

    @pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
    def test_nan_and_infinities_are_refused(self, number: float) -> None:
        """orjson would write null, json.dumps NaN (not JSON): neither, it is refused."""
        for value in (number, [number], {"a": {"b": [None, number]}}, {1: number}, [2**70, number]):
            with pytest.raises(ValueError, match="Out of range float values"):
                compact_dumps(value)

    def test_a_null_alone_is_written(self) -> None:
        assert compact_dumps({"a": None, "b": [None, 1.5]}) == '{"a":null,"b":[null,1.5]}'

    def test_values_json_dumps_refuses_are_refused(self) -> None:
        for value in (
            datetime.datetime(2026, 1, 1),
            {"at": datetime.date(2026, 1, 1)},
            {"s": {1, 2}},
        ):
            with pytest.raises(TypeError):
                compact_dumps(value)

    def test_a_tuple_is_an_array(self) -> None:
        """Unstructured models hold tuples: they are written as arrays, as json.dumps does."""
        assert compact_dumps({"a": (1, "b")}) == '{"a":[1,"b"]}'
