"""The team-file model: the defaults a parsed team gets, its typed steps and questions, the
agent lookup's error, and MCP tool references.
"""

from __future__ import annotations

import pytest

from orchestrator.base import RunError
from orchestrator.spec import (
    McpToolRef,
    mcp_tool_ref,
)
from tests.support.team_files import FILE, VALID, parse


class TestModel:
    def test_defaults(self) -> None:
        """Omitted keys take the documented defaults."""
        team = parse(VALID)
        assert team.topology == "coordinator_team"
        assert team.parallel_budget == 4
        assert team.description == ""
        assert team.file == FILE
        lead, researcher = team.agents
        assert lead.interactivity == "full"
        assert researcher.interactivity == "read-only"
        assert lead.backend == "scripted"
        assert researcher.approved_by == "user"
        assert researcher.timeout is None
        assert researcher.tool_result("web_search") == "ok"
        assert researcher.plain_tools == ("web_search", "publish")

    def test_unknown_agent_lookup_is_a_run_error(self) -> None:
        """TeamSpec.agent names the team and suggests a close name instead of a KeyError."""
        with pytest.raises(RunError, match=r"no agent 'reseacher' \(did you mean 'researcher'"):
            parse(VALID).agent("reseacher")


class TestToolReferences:
    @pytest.mark.parametrize(
        ("name", "ref"),
        [
            ("mcp.time/get_current_time", McpToolRef("time", "get_current_time")),
            ("mcp.t/*", McpToolRef("t", "*")),
            ("mcp.t/a/b", McpToolRef("t", "a/b")),
            ("run_tests", None),
            ("mcp.time", None),
            ("mcp./x", None),
            ("mcp.t/", None),
        ],
    )
    def test_mcp_tool_ref(self, name: str, ref: McpToolRef | None) -> None:
        assert mcp_tool_ref(name) == ref

    def test_covers(self) -> None:
        assert McpToolRef("t", "*").covers("mcp.t/x")
        assert not McpToolRef("t", "*").covers("mcp.u/x")
        assert McpToolRef("t", "x").covers("mcp.t/x")
        assert not McpToolRef("t", "x").covers("mcp.t/y")
        assert str(McpToolRef("t", "x")) == "mcp.t/x"
