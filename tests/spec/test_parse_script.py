"""Scripted turns and their steps as the team file writes them: each step becomes its typed
step, checked against its agent (the tools it may call, the agents it may hand off to); a bad
step is refused with its path.
"""

from __future__ import annotations

import pytest

from orchestrator.spec import (
    AskStep,
    DelegateStep,
    Delegation,
    FailStep,
    HandoffStep,
    SayStep,
    ScriptedTurn,
    SleepStep,
    Step,
    ThinkStep,
    UsageStep,
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


class TestEveryStepKind:
    @pytest.mark.parametrize(
        ("written", "step"),
        [
            ('{ say = "hi", chunks = 1 }', SayStep(text="hi", chunks=1)),
            ('{ think = "hmm" }', ThinkStep(text="hmm")),
            ('{ fail = "boom" }', FailStep(message="boom")),
            ("{ sleep = 0.5 }", SleepStep(seconds=0.5)),
            (
                "{ usage = [3, 4] }",
                UsageStep(input_tokens=3, output_tokens=4),
            ),
            ('{ ask = "Name?" }', AskStep(question="Name?")),
            (
                '{ say = "only for docs", when_task_contains = "docs" }',
                SayStep(text="only for docs", when_task_contains="docs"),
            ),
            (
                '{ delegate = [{ agent = "researcher", task = "a" }, '
                '{ agent = "researcher", task = "b" }] }',
                DelegateStep(
                    delegations=(
                        Delegation(agent="researcher", task="a"),
                        Delegation(agent="researcher", task="b"),
                    )
                ),
            ),
        ],
    )
    def test_each_step_key_makes_its_step(self, written: str, step: Step) -> None:
        assert parse(with_lead_steps(written)).agent("lead").turns[0].steps == (step,)

    @pytest.mark.parametrize(
        ("written", "key_path", "fragment"),
        [
            (
                '{ delegate = [{ agent = "writer", task = "a" }] }',
                "agents.lead.turns[0].steps[0].delegate[0].agent",
                "writer",
            ),
            ("{ sleep = -1 }", "agents.lead.turns[0].steps[0].sleep", ">= 0"),
            ('{ ask = "Q", kind = "essay" }', "agents.lead.turns[0].steps[0].kind", "essay"),
            ("{ say = 1 }", "agents.lead.turns[0].steps[0].say", "expected a string"),
            ("{ usage = [3] }", "agents.lead.turns[0].steps[0].usage", "got 1 items"),
            ("{ usage = [3, -4] }", "agents.lead.turns[0].steps[0].usage[1]", ">= 0"),
        ],
    )
    def test_a_bad_value_of_a_step_is_refused_where_it_is(
        self, written: str, key_path: str, fragment: str
    ) -> None:
        error = parse_error(with_lead_steps(written))
        assert error.key_path == key_path
        assert fragment in error.message
