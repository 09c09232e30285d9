"""A valid team file and the helpers that parse variants of it: what the team file's, the
parser's and the model's tests share."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from orchestrator.base import TeamFileError
from orchestrator.spec import (
    TeamSpec,
    parse_team,
    team_from_mapping,
)
from tests.support import teams

FILE = "teams/example.toml"


#: A small valid team the error tests start from (each test changes one thing).
VALID = teams.DELEGATE_AND_PUBLISH


def parse(text: str) -> TeamSpec:
    return parse_team(text, file=FILE)


def parse_error(text: str) -> TeamFileError:
    with pytest.raises(TeamFileError) as info:
        parse(text)
    error = info.value
    assert error.file == FILE
    assert str(error).startswith(FILE)
    return error


def replaced(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new, 1)


def with_lead_steps(steps: str) -> str:
    return replaced(
        """steps = [
  { say = "On it." },
  { delegate = [{ agent = "researcher", task = "Look it up" }] },
  { say = "{outcomes}" },
]""",
        f"steps = [{steps}]",
    )


_SCALARS = (
    st.text(max_size=10)
    | st.sampled_from(["lead", "researcher", "web_search", "delegate", "publish", "full", "user"])
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.datetimes()
    | st.dates()
    | st.times()
)


def _parse_or_error(document: dict[str, Any]) -> TeamSpec | TeamFileError:
    try:
        return team_from_mapping(document, file=FILE)
    except TeamFileError as exc:
        return exc


_KEYS = st.sampled_from(
    [
        "team",
        "agents",
        "name",
        "coordinator",
        "topology",
        "parallel_budget",
        "role",
        "tools",
        "delegates_to",
        "needs_approval",
        "approved_by",
        "timeout",
        "turns",
        "steps",
        "say",
        "delegate",
        "agent",
        "task",
        "ask",
        "kind",
        "options",
        "usage",
        "tool",
        "input",
        "tool_results",
        "lead",
        "researcher",
        "handoff",
        "resume",
        "sleep",
    ]
) | st.text(max_size=8)


_TOML_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=25,
)
