"""Compact JSON text: exactly what ``json.dumps`` gives with the same options."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import compact_dumps

from .strategies import json_values

#: Text that ``ensure_ascii=False`` keeps raw, and characters that are always escaped.
awkward_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from('"\\\n\t\x00\u2028é😀'),
    max_size=20,
)


def reference(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class TestDumps:
    @given(json_values)
    def test_any_json_value_encodes_as_json_dumps_does(self, value: Any) -> None:
        assert compact_dumps(value) == reference(value)

    @given(st.dictionaries(awkward_text, awkward_text | st.floats(), max_size=5))
    def test_strings_and_floats_of_every_kind(self, value: dict[str, Any]) -> None:
        """Escapes, non-ASCII text kept raw, NaN and infinities written as json.dumps does."""
        assert compact_dumps(value) == reference(value)

    def test_bare_values(self) -> None:
        values: list[Any] = ["é\n", 1, 1.5, math.inf, True, None, [], {}]
        for value in values:
            assert compact_dumps(value) == reference(value)

    def test_a_tuple_is_an_array(self) -> None:
        """Unstructured models hold tuples: they are written as arrays, as json.dumps does."""
        assert compact_dumps({"a": (1, "b")}) == '{"a":[1,"b"]}'
