"""Scripted turns and their steps as the team file writes them: each step becomes its typed
step, checked against its agent (the tools it may call, the agents it may hand off to); a bad
step is refused with its path.
"""

from __future__ import annotations

from orchestrator.spec import (
    AskStep,
    DelegateStep,
    Delegation,
    HandoffStep,
    SayStep,
    ScriptedTurn,
)
from tests.support.team_files import (
    VALID,
    parse,
    parse_error,
    replaced,
    with_lead_steps,
)


class TestSteps:
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


class TestStepErrors:
    def test_unknown_step_key(self) -> None:
        """An unknown step key is named with the step's path and the closest step key."""
        error = parse_error(with_lead_steps('{ say = "a" }, { sya = "b" }'))
        assert error.key_path == "agents.lead.turns[0].steps[1].sya"
        assert "unknown step key 'sya' (did you mean 'say'?)" in error.message

    def test_step_with_two_actions(self) -> None:
        """A step does exactly one thing."""
        error = parse_error(with_lead_steps('{ say = "a", think = "b" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0]"
        assert "several actions (say, think)" in error.message

    def test_step_key_of_another_kind(self) -> None:
        """A key that belongs to another step kind says which."""
        error = parse_error(with_lead_steps('{ say = "a", reason = "b" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0].reason"
        assert "belongs to a handoff step" in error.message

    def test_tool_step_needs_the_tool(self) -> None:
        """A script may only call tools listed in the agent's tools."""
        error = parse_error(with_lead_steps('{ tool = "web_search" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0].tool"
        assert "'web_search' but it is not in its tools" in error.message

    def test_select_question_needs_options(self) -> None:
        """single-select and multi-select questions must list options."""
        error = parse_error(with_lead_steps('{ ask = "Which?", kind = "multi-select" }'))
        assert error.key_path == "agents.lead.turns[0].steps[0].options"

    def test_tool_input_must_be_json(self) -> None:
        """Tool inputs travel as JSON: TOML dates are refused where they appear."""
        text = VALID.replace('input = { query = "{task}" }', "input = { when = 2024-01-01 }")
        error = parse_error(text)
        assert error.key_path == "agents.researcher.turns[0].steps[0].input.when"
        assert "not valid JSON" in error.message
