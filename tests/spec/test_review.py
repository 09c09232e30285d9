"""The reviewer's verdict (spec/_review.py) and the team-file keys of reviews."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import TeamFileError
from orchestrator.spec import (
    DEFAULT_MAX_REVIEW_ROUNDS,
    VERDICT_SCHEMA,
    Answer,
    EvidenceItem,
    SayStep,
    Verdict,
    check_answer,
    output_schema_problem,
    parse_team,
    tool_definitions,
    verdict_of,
)
from tests.support.examples import examples

REVIEW_TEAM = """
[team]
name = "r"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["writer"]
[agents.writer]
role = "writer"
[agents.checker]
role = "reviewer"
reviews = ["writer"]
[[agents.checker.turns]]
[[agents.checker.turns.steps]]
verdict = "changes_requested"
summary = "one gap"
fixes = ["cite the source"]
evidence = [
  { kind = "quote", text = "it is fast" },
  { kind = "fact", text = "the draft", ref = "task-1" },
]
"""

evidence = st.builds(
    EvidenceItem,
    kind=st.sampled_from(["quote", "tool_result", "link", "fact"]),
    text=st.text(max_size=20),
    ref=st.none() | st.text(min_size=1, max_size=10),
)
verdicts = st.builds(
    Verdict,
    verdict=st.sampled_from(["passed", "changes_requested", "failed"]),
    summary=st.text(max_size=20),
    fixes=st.lists(st.text(min_size=1, max_size=10), max_size=3).map(tuple),
    evidence=st.lists(evidence, max_size=3).map(tuple),
).filter(lambda v: not (v.verdict == "passed" and v.fixes))


def _wire(verdict: Verdict) -> dict[str, object]:
    return {
        "verdict": verdict.verdict,
        "summary": verdict.summary,
        "fixes": list(verdict.fixes),
        "evidence": [
            {"kind": e.kind, "text": e.text} | ({"ref": e.ref} if e.ref is not None else {})
            for e in verdict.evidence
        ],
    }


class TestVerdict:
    def test_the_schema_is_a_valid_json_schema(self) -> None:
        assert output_schema_problem(VERDICT_SCHEMA) is None

    @settings(max_examples=examples(200))
    @given(verdicts)
    def test_a_verdict_written_as_json_fits_the_schema_and_reads_back(self, v: Verdict) -> None:
        """The verdict's JSON fits the schema, and verdict_of reads it back whole."""
        answer = check_answer(VERDICT_SCHEMA, json.dumps(_wire(v)))
        assert isinstance(answer, Answer)
        assert verdict_of(answer.value) == v

    def test_a_passed_verdict_asks_for_nothing(self) -> None:
        assert verdict_of({"verdict": "passed", "fixes": ["x"]}).fixes == ()

    def test_an_unknown_verdict_does_not_fit(self) -> None:
        assert not isinstance(check_answer(VERDICT_SCHEMA, '{"verdict": "maybe"}'), Answer)


class TestTeamFile:
    def test_a_reviewer_gets_the_verdict_schema_and_its_verdict_step_is_its_json(self) -> None:
        team = parse_team(REVIEW_TEAM, file="r.toml")
        checker = team.agent("checker")
        assert checker.reviews == ("writer",)
        assert checker.max_review_rounds == DEFAULT_MAX_REVIEW_ROUNDS
        assert checker.output_schema == VERDICT_SCHEMA
        assert team.reviewer_of("writer") == checker
        assert team.reviewer_of("checker") is None
        assert team.review_mode == "always"
        (step,) = checker.turns[0].steps
        assert isinstance(step, SayStep)
        assert json.loads(step.text) == {
            "verdict": "changes_requested",
            "summary": "one gap",
            "fixes": ["cite the source"],
            "evidence": [
                {"kind": "quote", "text": "it is fast"},
                {"kind": "fact", "text": "the draft", "ref": "task-1"},
            ],
        }

    def test_two_reviewers_of_one_worker_are_refused_naming_the_second(self) -> None:
        text = REVIEW_TEAM + '[agents.second]\nrole = "reviewer"\nreviews = ["writer"]\n'
        with pytest.raises(TeamFileError) as caught:
            parse_team(text, file="r.toml")
        (problem,) = caught.value.problems
        assert problem.key_path == "agents.second.reviews[0]"
        assert "already reviewed by 'checker'" in problem.message

    def test_on_request_needs_the_review_tool(self) -> None:
        text = REVIEW_TEAM.replace(
            'delegates_to = ["writer"]', 'delegates_to = ["writer"]\nreview = "on_request"'
        )
        with pytest.raises(TeamFileError) as caught:
            parse_team(text, file="r.toml")
        assert caught.value.problems[0].key_path == "agents.lead.review"
        fixed = text.replace('tools = ["delegate"]', 'tools = ["delegate", "review"]')
        assert parse_team(fixed, file="r.toml").review_mode == "on_request"

    def test_a_delegation_may_say_when_it_is_reviewed(self) -> None:
        text = REVIEW_TEAM.replace(
            'delegates_to = ["writer"]',
            'delegates_to = ["writer"]\n[[agents.lead.turns]]\nsteps = [{ delegate = '
            '[{ agent = "writer", task = "t", review = "on_request" }] }]',
        )
        team = parse_team(text, file="r.toml")
        (step,) = team.agent("lead").turns[0].steps
        assert step.delegations[0].review == "on_request"  # type: ignore[union-attr]
        with pytest.raises(TeamFileError) as caught:
            parse_team(text.replace('review = "on_request"', 'review = "later"'), file="r.toml")
        assert caught.value.problems[0].key_path == (
            "agents.lead.turns[0].steps[0].delegate[0].review"
        )


class TestToolDefinitions:
    def test_delegate_offers_review_only_for_a_reviewed_worker_and_review_takes_a_task(
        self,
    ) -> None:
        text = (
            REVIEW_TEAM.replace(
                'tools = ["delegate"]\ndelegates_to = ["writer"]',
                'tools = ["delegate", "review"]\ndelegates_to = ["writer", "editor"]',
            )
            + '[agents.editor]\nrole = "editor"\n'
        )
        team = parse_team(text, file="r.toml")
        lead = team.agent("lead")
        delegate, review = tool_definitions(team, lead)
        properties = delegate.parameters["properties"]
        assert properties["review"]["enum"] == ["always", "on_request"]
        assert "writer" in properties["review"]["description"]
        assert "editor" not in properties["review"]["description"]
        assert "review" not in delegate.parameters["required"]
        assert review.parameters["required"] == ["task"]
        other = parse_team(
            text.replace('reviews = ["writer"]', 'reviews = ["editor"]'), file="r.toml"
        )
        (offered, _) = tool_definitions(other, other.agent("lead"))
        described = offered.parameters["properties"]["review"]["description"]
        assert ("editor" in described, "writer" in described) == (True, False)
