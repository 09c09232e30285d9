"""The checks of single team-file values: each returns the value typed, or raises a
:class:`TeamFileError` naming the file, the key path and what is wrong."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import TeamFileError
from orchestrator.spec._checks import _ValueChecks
from tests.support.examples import examples

CHECKS = _ValueChecks("teams/t.toml")


def refusal(check: Callable[[], object]) -> TeamFileError:
    with pytest.raises(TeamFileError) as caught:
        check()
    assert caught.value.file == "teams/t.toml"
    return caught.value


@pytest.mark.parametrize(
    ("check", "key_path", "message"),
    [
        (lambda: CHECKS.table([1], "team"), "team", "expected a table, got an array"),
        (lambda: CHECKS.string(3, "team.name"), "team.name", "expected a string, got integer 3"),
        (lambda: CHECKS.string("  ", "team.name"), "team.name", "must not be empty"),
        (
            lambda: CHECKS.name("a b", "agents", "agent name"),
            "agents",
            "agent name 'a b' must be 1-64 letters, digits, '_' or '-'",
        ),
        (lambda: CHECKS.name("x" * 65, "agents", "agent name"), "agents", "must be 1-64"),
        (
            lambda: CHECKS.integer(True, "team.budget", minimum=1),
            "team.budget",
            "expected an integer, got boolean true",
        ),
        (lambda: CHECKS.integer(0, "team.budget", minimum=1), "team.budget", "must be >= 1, got 0"),
        (
            lambda: CHECKS.number("1", "t", positive=False),
            "t",
            'expected a number (int or float), got string "1"',
        ),
        (lambda: CHECKS.number(math.inf, "t", positive=False), "t", "must be a finite number"),
        (lambda: CHECKS.number(0, "t", positive=True), "t", "must be > 0, got 0"),
        (lambda: CHECKS.number(-1.5, "t", positive=False), "t", "must be >= 0, got -1.5"),
        (
            lambda: CHECKS.choice("scriptd", "b", {"scripted": 1, "openai": 2}, "backend"),
            "b",
            "unknown backend 'scriptd' (did you mean 'scripted'?); allowed: scripted, openai",
        ),
        (lambda: CHECKS.array("x", "tools"), "tools", 'expected an array, got string "x"'),
        (lambda: CHECKS.duration("soon", "timeout"), "timeout", "soon"),
        (lambda: CHECKS.names(["a", "b", "a"], "tools", "tool"), "tools[2]", "'a' is listed twice"),
        (lambda: CHECKS.names(["a", 1], "tools", "tool"), "tools[1]", "expected a string"),
        (
            lambda: CHECKS.json_value({"q": [1, math.nan]}, "input"),
            "input.q[1]",
            "nan is not valid JSON; use a finite number",
        ),
        (
            lambda: CHECKS.json_value({"at": datetime.date(2026, 1, 1)}, "input"),
            "input.at",
            "a date is not valid JSON; write it as a string",
        ),
        (
            lambda: CHECKS.argument("a\0b", "cmd[0]", empty_ok=True),
            "cmd[0]",
            "must not contain a NUL character",
        ),
    ],
)
def test_a_bad_value_is_refused_where_it_is(
    check: Callable[[], object], key_path: str, message: str
) -> None:
    error = refusal(check)
    assert error.key_path == key_path
    assert message in error.message


def test_unknown_and_missing_keys_are_named_with_their_path() -> None:
    allowed = ("model", "tools")
    error = refusal(lambda: CHECKS.check_keys({"modle": 1}, "agents.lead", allowed))
    assert error.key_path == "agents.lead.modle"
    assert error.message == (
        "unknown key 'modle' (did you mean 'model'?); allowed keys: model, tools"
    )
    error = refusal(
        lambda: CHECKS.check_keys({"tools": []}, "agents.lead", allowed, required=["model"])
    )
    assert (error.key_path, error.message) == ("agents.lead.model", "missing required key 'model'")
    CHECKS.check_keys({"model": "m"}, "agents.lead", allowed, required=["model"])


def test_good_values_come_back_typed() -> None:
    assert CHECKS.number(2, "t", positive=True) == 2.0
    assert isinstance(CHECKS.number(2, "t", positive=True), float)
    assert CHECKS.string("", "t", empty_ok=True) == ""
    assert CHECKS.choice("openai", "b", {"openai": "the value"}, "backend") == "the value"
    assert CHECKS.duration("90s", "timeout") == datetime.timedelta(seconds=90)
    assert CHECKS.names(["a", "b-2"], "tools", "tool") == ("a", "b-2")
    assert CHECKS.argument("", "cwd", empty_ok=True) == ""


@settings(max_examples=examples(100))
@given(st.integers(), st.integers(min_value=-5, max_value=5))
def test_an_integer_is_taken_from_its_minimum(value: int, minimum: int) -> None:
    if value >= minimum:
        assert CHECKS.integer(value, "n", minimum=minimum) == value
    else:
        assert refusal(lambda: CHECKS.integer(value, "n", minimum=minimum)).key_path == "n"


#: What TOML can write that JSON can hold: no null, finite numbers only.
toml_json_values: st.SearchStrategy[Any] = st.recursive(
    st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=examples(100))
@given(toml_json_values)
def test_json_values_are_copied_as_they_are(value: Any) -> None:
    copy = CHECKS.json_value(value, "input")
    assert copy == value
    if isinstance(value, dict | list) and value:
        assert copy is not value


def test_a_value_json_cannot_hold_is_refused_naming_where() -> None:
    assert refusal(lambda: CHECKS.json_value([{1, 2}], "input")).key_path == "input[0]"


def test_null_is_json_a_team_defined_in_python_may_hold() -> None:
    """A file cannot write null; a pydantic model's schema, given in code, holds it."""
    assert CHECKS.json_value({"default": None}, "input") == {"default": None}
