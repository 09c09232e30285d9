"""Tool definitions: the function name a tool is offered under, readable where it can be and
always valid and distinct, and the tools an agent's wildcards offer.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.spec import (
    ToolDefinition,
    function_name,
    tool_definitions,
)
from tests.support.mcp_team_files import VALID, parse, replaced

_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


class TestFunctionNames:
    @pytest.mark.parametrize(
        ("name", "offered"),
        [
            ("run_tests", "run_tests"),
            ("mcp.time/get_current_time", "time__get_current_time"),
            ("mcp.git/git-status", "git__git-status"),
        ],
    )
    def test_readable_where_it_can_be(self, name: str, offered: str) -> None:
        assert function_name(name) == offered

    @given(
        server=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
        tool=st.from_regex(r"[A-Za-z0-9_.-]{1,128}", fullmatch=True),
    )
    def test_every_mcp_tool_gets_a_valid_function_name(self, server: str, tool: str) -> None:
        assert _FUNCTION_NAME.match(function_name(f"mcp.{server}/{tool}"))

    def test_names_that_would_collide_stay_distinct(self) -> None:
        names = ["mcp.t/a.b", "mcp.t/a_b", "mcp.t/" + "x" * 100, "mcp.t/" + "x" * 101]
        offered = [function_name(n) for n in names]
        assert len(set(offered)) == len(offered)


def _listing(*names: str) -> dict[str, ToolDefinition]:
    return {n: ToolDefinition(name=n, description=n, parameters={"type": "object"}) for n in names}


class TestOffered:
    def test_wildcards_expand_in_listing_order_and_missing_tools_are_left_out(self) -> None:
        team = parse(VALID)
        discovered = _listing(
            "mcp.tracker/list_issues",
            "mcp.tracker/create_issue",
            "mcp.other/x",
        )
        offered = tool_definitions(team, team.agent("lead"), discovered)
        # get_current_time is not listed (its server is down): not offered, not guessed.
        assert [t.name for t in offered] == [
            "delegate",
            "mcp.tracker/list_issues",
            "mcp.tracker/create_issue",
        ]
        assert [t.function_name for t in offered][1:] == [
            "tracker__list_issues",
            "tracker__create_issue",
        ]

    def test_a_named_tool_and_its_server_s_wildcard_offer_it_once(self) -> None:
        team = parse(replaced('"mcp.tracker/*"]', '"mcp.tracker/list_issues", "mcp.tracker/*"]'))
        discovered = _listing("mcp.tracker/create_issue", "mcp.tracker/list_issues")
        offered = tool_definitions(team, team.agent("lead"), discovered)
        assert [t.name for t in offered] == [
            "delegate",
            "mcp.tracker/list_issues",
            "mcp.tracker/create_issue",
        ]
