"""A scripted turn cut into the model rounds it plays: the steps that apply to the task, cut
after every step that requests tool calls, and one more round after the last such step.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    ToolStep,
    UsageStep,
)
from tests.support.examples import examples
from tests.support.team_files import parse, with_lead_steps

conditions = st.sampled_from([None, "search", "PLAN"])
steps: st.SearchStrategy[Step] = st.one_of(
    st.builds(SayStep, text=st.just("a"), when_task_contains=conditions),
    st.builds(ToolStep, tool=st.just("t"), when_task_contains=conditions),
    st.builds(AskStep, question=st.just("q"), when_task_contains=conditions),
    st.builds(SleepStep, seconds=st.just(0.0), when_task_contains=conditions),
)


class TestRounds:
    def test_round_ending_last_step_adds_an_empty_round(self) -> None:
        """A turn ending with a tool step still has a last round, empty, after the tools."""
        lead = parse(with_lead_steps('{ ask = "Which one?" }')).agent("lead")
        assert lead.turns[0].rounds_for("x") == ((AskStep(question="Which one?"),), ())

    def test_steps_for_another_task_are_dropped_before_cutting(self) -> None:
        """A tool step that does not apply cuts nothing: its neighbours share a round."""
        say, other = SayStep(text="a"), SayStep(text="b")
        tool = ToolStep(tool="search", when_task_contains="SEARCH")
        turn = ScriptedTurn(steps=(say, tool, other))
        assert turn.rounds_for("write the notes") == ((say, other),)
        assert turn.rounds_for("search the web") == ((say, tool), (other,))

    def test_a_turn_without_steps_is_one_empty_round(self) -> None:
        assert ScriptedTurn(steps=()).rounds_for("x") == ((),)

    @settings(max_examples=examples(100))
    @given(st.lists(steps, max_size=8), st.sampled_from(["plan", "search it", "Search", ""]))
    def test_the_rounds_are_the_kept_steps_cut_after_each_tool_request(
        self, script: list[Step], task: str
    ) -> None:
        rounds = ScriptedTurn(steps=tuple(script)).rounds_for(task)
        kept = [step for step in script if step.applies_to(task)]
        assert [step for round_ in rounds for step in round_] == kept
        assert len(rounds) == sum(step.ends_round for step in kept) + 1
        *cut, last = rounds
        for round_ in cut:
            assert [step.ends_round for step in round_] == [False] * (len(round_) - 1) + [True]
        assert not any(step.ends_round for step in last)


class TestAppliesTo:
    @pytest.mark.parametrize(
        ("condition", "task", "applies"),
        [
            (None, "anything", True),
            ("search", "Search the web", True),
            ("SEARCH", "research", True),
            ("straße", "STRASSE bauen", True),
            ("search", "write", False),
        ],
    )
    def test_the_condition_is_a_case_insensitive_substring(
        self, condition: str | None, task: str, applies: bool
    ) -> None:
        assert SayStep(text="x", when_task_contains=condition).applies_to(task) is applies


@pytest.mark.parametrize(
    ("step", "ends"),
    [
        (SayStep(text="x"), False),
        (ThinkStep(text="x"), False),
        (FailStep(message="x"), False),
        (SleepStep(seconds=1), False),
        (UsageStep(input_tokens=1, output_tokens=1), False),
        (ToolStep(tool="t"), True),
        (DelegateStep(delegations=(Delegation(agent="a", task="t"),)), True),
        (HandoffStep(agent="a", reason="r", resume="b"), True),
        (AskStep(question="q"), True),
    ],
    ids=lambda value: type(value).__name__,
)
def test_the_steps_that_request_tool_calls_end_their_round(step: Step, ends: bool) -> None:
    """They are exactly the steps the runtime runs tools for before the next round."""
    assert step.ends_round is ends
