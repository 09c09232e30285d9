"""The input gate: JSON from outside is taken whole, or refused naming the field."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orchestrator.base import (
    JSON_LIMITS,
    JsonLimits,
    PeerProtocolError,
    clean_text,
    parse_json,
    parse_json_counted,
    text_problem,
)
from tests.support.examples import examples

#: Text that encodes as UTF-8 (no lone surrogates).
good_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**31), max_value=10**31)
    | st.floats(allow_nan=False, allow_infinity=False)
    | good_text
)
#: JSON values well within the default limits.
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(good_text, inner, max_size=4),
    max_leaves=20,
)
#: What the gate refuses as a leaf, with the words its message uses.
bad_leaves = st.sampled_from(
    [
        ('"a\\ud800b"', "lone surrogate \\ud800 at character 1"),
        ('"\\udfff"', "lone surrogate \\udfff at character 0"),
        ("NaN", "NaN is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e999", "too large for a float"),
        ("1" * 33, "an integer of 33 digits; the limit is 32"),
        ("-" + "9" * 5_000, "an integer of 5000 digits; the limit is 32"),
    ]
)
#: A path into a value: object keys and array indexes.
steps = st.lists(
    st.one_of(st.integers(0, 3), st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)), max_size=6
)


def nest(path: list[int | str], leaf: str) -> tuple[str, str]:
    """JSON text with ``leaf`` at ``path`` (arrays padded with nulls), and the path's text."""
    text = leaf
    for step in reversed(path):
        if isinstance(step, int):
            text = "[" + "null," * step + text + "]"
        else:
            text = "{" + json.dumps(step) + ":" + text + "}"
    wire = "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
    return text, wire


class TestTakes:
    @settings(max_examples=examples(300))
    @given(values)
    def test_any_json_value_within_the_limits_is_read_as_json_reads_it(self, value: Any) -> None:
        """What the standard library would read, the gate reads the same (within limits)."""
        text = json.dumps(value, ensure_ascii=False)
        assert parse_json(text, protocol="t") == json.loads(text)
        assert parse_json(text.encode(), protocol="t") == json.loads(text)

    def test_a_surrogate_pair_is_one_character_not_a_lone_surrogate(self) -> None:
        assert parse_json('"\\ud83d\\ude00"', protocol="t") == "\U0001f600"

    def test_the_limits_are_inclusive(self) -> None:
        limits = JsonLimits(max_depth=3, max_integer_digits=4)
        assert parse_json("[[[-1234]]]", protocol="t", limits=limits) == [[[-1234]]]


class TestRefuses:
    @settings(max_examples=examples(300))
    @given(steps, bad_leaves)
    @example(["content", "rows", 3], ('"\\ud800"', "lone surrogate"))
    def test_a_bad_leaf_anywhere_is_refused_naming_its_field(
        self, path: list[int | str], bad: tuple[str, str]
    ) -> None:
        leaf, words = bad
        text, wire = nest(path, leaf)
        with pytest.raises(PeerProtocolError) as caught:
            parse_json(text, protocol="view update")
        assert caught.value.path == wire
        assert words in caught.value.message
        assert caught.value.protocol == "view update"

    @pytest.mark.parametrize("depth", [65, 500, 10_000, 100_000])
    def test_nesting_past_the_limit_is_refused_at_once(self, depth: int) -> None:
        """Deeper than the interpreter's recursion limit too: still a refusal, no
        RecursionError leaks."""
        with pytest.raises(PeerProtocolError, match="nested deeper than 64 levels"):
            parse_json("[" * depth + "]" * depth, protocol="t")

    def test_a_deep_path_is_shown_shortened(self) -> None:
        with pytest.raises(PeerProtocolError) as caught:
            parse_json('{"a":' * 70 + "1" + "}" * 70, protocol="t")
        assert caught.value.path == "$.a.a.a.a.a.a….a.a.a.a"

    def test_a_surrogate_in_a_key_is_refused(self) -> None:
        with pytest.raises(PeerProtocolError) as caught:
            parse_json('{"ok": {"\\udc00x": 1}}', protocol="t")
        assert caught.value.path == '$.ok["\\ufffdx"]'
        assert "lone surrogate \\udc00 at character 0" in caught.value.message

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b"\xff{}", "not UTF-8 text: byte 0 (0xff) starts no character"),
            (b'{"a": "\xc3"}', "not UTF-8 text: byte 7 (0xc3) starts no character"),
            ("{", "not JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
            ("", "not JSON: Expecting value (line 1, column 1)"),
        ],
    )
    def test_text_that_is_not_json_is_refused(self, data: str | bytes, message: str) -> None:
        with pytest.raises(PeerProtocolError) as caught:
            parse_json(data, protocol="t")
        assert caught.value.message.startswith(message)
        assert caught.value.path == "$"

    def test_limits_come_from_the_caller(self) -> None:
        with pytest.raises(PeerProtocolError, match="nested deeper than 2 levels"):
            parse_json("[[[]]]", protocol="t", limits=JsonLimits(max_depth=2))
        with pytest.raises(PeerProtocolError, match="an integer of 3 digits; the limit is 2"):
            parse_json("123", protocol="t", limits=JsonLimits(max_integer_digits=2))

    def test_limits_past_what_python_reads_are_refused(self) -> None:
        with pytest.raises(ValueError, match="max_depth"):
            JsonLimits(max_depth=501)
        with pytest.raises(ValueError, match="max_integer_digits"):
            JsonLimits(max_integer_digits=4_301)


#: Number literals around every limit: integers to 40 digits, floats to 1e±400.
number_literals = st.one_of(
    st.integers(-(10**40), 10**40).map(str),
    st.builds("{}e{}".format, st.integers(-(10**35), 10**35), st.integers(-400, 400)),
    st.builds("{}.{}".format, st.integers(-(10**35), 10**35), st.integers(0, 10**5)),
)
#: JSON text: containers of number literals, strings (escaped surrogates among them) and
#: constants, as raw text.
json_texts = st.recursive(
    number_literals
    | st.sampled_from(
        ['"ok"', '"\\ud800"', '"x\\udc00"', '"\\ud83d\\ude00"', "NaN", "true", "null"]
    ),
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
        | st.lists(inner, max_size=4).map(
            lambda items: "{" + ",".join(f'"k{i}":{v}' for i, v in enumerate(items)) + "}"
        )
    ),
    max_leaves=12,
)


def breaks_a_rule(value: Any, limits: JsonLimits, depth: int = 1) -> bool:
    """The gate's rules, written out plainly: the oracle the gate must agree with."""
    if isinstance(value, str):
        return text_problem(value) is not None
    if isinstance(value, float):
        return math.isinf(value) or math.isnan(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return len(str(abs(value))) > limits.max_integer_digits
    if isinstance(value, dict | list):
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        return depth > limits.max_depth or any(
            (isinstance(k, str) and text_problem(k) is not None)
            or breaks_a_rule(v, limits, depth + 1)
            for k, v in items
        )
    return False


class TestAgreesWithItsRules:
    @settings(max_examples=examples(500))
    @given(json_texts, st.integers(1, 6), st.sampled_from([2, 20, 32, 40, 400]))
    def test_the_gate_refuses_exactly_what_breaks_a_rule(
        self, text: str, depth: int, digits: int
    ) -> None:
        """Whether the look at the text lets the value through at once or the walk checks
        it, the gate takes a value exactly when it breaks none of its rules."""
        limits = JsonLimits(max_depth=depth, max_integer_digits=digits)
        expected = breaks_a_rule(json.loads(text), limits)
        try:
            parse_json(text, protocol="t", limits=limits)
        except PeerProtocolError:
            assert expected, text
        else:
            assert not expected, text


class TestReplaces:
    @settings(max_examples=examples(200))
    @given(steps, st.sampled_from(["\\ud800", "\\udfff", "x\\udbff"]))
    def test_a_lone_surrogate_from_a_model_becomes_u_fffd(
        self, path: list[int | str], escaped: str
    ) -> None:
        text, _ = nest(path, f'"{escaped}"')
        value, replaced = parse_json_counted(text, protocol="t", bad_text="replace")
        assert replaced == 1
        encoded = json.dumps(value, ensure_ascii=False).encode("utf-8")  # now encodes
        assert "\ufffd" in encoded.decode()

    def test_keys_are_replaced_too_and_order_is_kept(self) -> None:
        value, replaced = parse_json_counted(
            '{"a": 1, "\\ud800": 2, "c": ["\\udc00", "ok"]}', protocol="t", bad_text="replace"
        )
        assert value == {"a": 1, "\ufffd": 2, "c": ["\ufffd", "ok"]}
        assert list(value) == ["a", "\ufffd", "c"]
        assert replaced == 2

    def test_numbers_are_still_refused_when_text_is_replaced(self) -> None:
        with pytest.raises(PeerProtocolError, match="NaN"):
            parse_json('{"x": NaN}', protocol="t", bad_text="replace")

    def test_clean_text_counts_and_keeps_good_text_as_is(self) -> None:
        good = "fine ✓ \U0001f600"
        assert clean_text(good) == (good, 0)
        assert clean_text(good)[0] is good
        assert clean_text("a\ud800b\udfff") == ("a\ufffdb\ufffd", 2)
        assert text_problem(good) is None
        assert text_problem("ab\udc80") == (
            "text that cannot be encoded as UTF-8: a lone surrogate \\udc80 at character 2"
        )


def test_the_default_limits() -> None:
    assert (JSON_LIMITS.max_depth, JSON_LIMITS.max_integer_digits) == (64, 32)
    assert not math.isnan(parse_json("1.5", protocol="t"))
