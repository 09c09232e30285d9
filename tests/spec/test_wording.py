"""The words of team-file messages: key paths a user can find in the file, "did you mean"
hints, and values named as the user wrote them."""

from __future__ import annotations

import datetime
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.spec._wording import _describe, _did_you_mean, _join, _one_of
from tests.support.examples import examples


class TestKeyPaths:
    @pytest.mark.parametrize(
        ("path", "key", "joined"),
        [
            ("", "team", "team"),
            ("agents", "lead-2_b", "agents.lead-2_b"),
            ("tools", "web search", 'tools."web search"'),
            ("env", "ÉTÉ", 'env."ÉTÉ"'),
            ("a", 'say "hi"', 'a."say \\"hi\\""'),
        ],
    )
    def test_a_key_is_quoted_unless_bare(self, path: str, key: str, joined: str) -> None:
        assert _join(path, key) == joined

    @settings(max_examples=examples(100))
    @given(
        st.lists(
            st.text(
                st.characters(exclude_categories=["Cs"], exclude_characters="\x7f"), max_size=8
            ),
            min_size=1,
            max_size=3,
        )
    )
    def test_a_key_path_is_a_toml_key_that_reads_back(self, keys: list[str]) -> None:
        """Whatever the keys, the path names them as TOML would: a user can search for it.
        DEL is left out: JSON leaves it raw, which TOML refuses, so its path shows it raw."""
        path = ""
        for key in keys:
            path = _join(path, key)
        expected: object = 1
        for key in reversed(keys):
            expected = {key: expected}
        assert tomllib.loads(f"{path} = 1") == expected


class TestDidYouMean:
    def test_a_close_word_is_suggested(self) -> None:
        assert _did_you_mean("modle", ["model", "tools", "turns"]) == " (did you mean 'model'?)"

    def test_no_hint_when_nothing_is_close(self) -> None:
        assert _did_you_mean("xyz", ["model", "tools"]) == ""
        assert _did_you_mean("model", []) == ""


class TestDescribe:
    @pytest.mark.parametrize(
        ("value", "described"),
        [
            (True, "boolean true"),
            (3, "integer 3"),
            (1.5, "float 1.5"),
            ("gpt", 'string "gpt"'),
            ("x" * 40, f'string "{"x" * 40}"'),
            ("x" * 41, f'string "{"x" * 37}..."'),
            ([1], "an array"),
            ({"a": 1}, "a table"),
            (datetime.datetime(2026, 1, 1, 3, 0), "a datetime"),
            (datetime.date(2026, 1, 1), "a date"),
            (datetime.time(3, 0), "a time"),
            (None, "NoneType"),
        ],
    )
    def test_each_toml_type_by_its_name(self, value: object, described: str) -> None:
        assert _describe(value) == described


def test_one_of_quotes_each_choice() -> None:
    assert _one_of(["scripted", "openai"]) == "'scripted', 'openai'"
