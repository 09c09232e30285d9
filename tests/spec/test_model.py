"""The team-file model: the defaults a parsed team gets, its typed steps and questions, the
agent lookup's error, and MCP tool references.
"""

from __future__ import annotations

import pytest

from orchestrator.base import RunError
from orchestrator.spec import (
    AskStep,
    DelegateStep,
    Delegation,
    HandoffStep,
    McpToolRef,
    SayStep,
    ScriptedTurn,
    mcp_tool_ref,
)
from tests.support.team_files import FILE, VALID, parse, replaced, with_lead_steps


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

    def test_steps_are_typed(self) -> None:
        """Steps become step objects; the lead's turn splits after its delegate step."""
        lead = parse(VALID).agent("lead")
        assert lead.turns == (
            ScriptedTurn(
                steps=(
                    SayStep(text="On it."),
                    DelegateStep(delegations=(Delegation(agent="researcher", task="Look it up"),)),
                    SayStep(text="{outcomes}"),
                )
            ),
        )
        rounds = lead.turns[0].rounds_for("anything")
        assert [len(r) for r in rounds] == [2, 1]

    def test_round_ending_last_step_adds_an_empty_round(self) -> None:
        """A turn ending with a tool step still has a last round, empty, after the tools."""
        lead = parse(with_lead_steps('{ ask = "Which one?" }')).agent("lead")
        assert lead.turns[0].rounds_for("x") == ((AskStep(question="Which one?"),), ())

    def test_handoff_resume_defaults_to_the_agent_handing_off(self) -> None:
        """Without resume, the task comes back to the agent that handed it off."""
        text = replaced('tools = ["delegate", "ask"]', 'tools = ["handoff"]')
        text = text.replace(
            '{ delegate = [{ agent = "researcher", task = "Look it up" }] }',
            '{ handoff = "researcher", reason = "needs research" }',
        )
        step = parse(text).agent("lead").turns[0].steps[1]
        assert step == HandoffStep(agent="researcher", reason="needs research", resume="lead")

    def test_select_question_keeps_its_options(self) -> None:
        """A single-select ask carries its options in order."""
        team = parse(
            with_lead_steps('{ ask = "Which?", kind = "single-select", options = ["a", "b"] }')
        )
        assert team.agent("lead").turns[0].steps[0] == AskStep(
            question="Which?", kind="single-select", options=("a", "b")
        )

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
