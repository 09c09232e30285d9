"""Review rounds (runtime/_reviewing.py): a reviewed worker's outcome goes to its reviewer
before the delegation ends; the facts of each round, in order, and what the coordinator reads."""

from __future__ import annotations

from typing import Any

import pytest
import trio.testing

from orchestrator.ahp.actions import ChatToolCallCompleteAction, ChatTurnStartedAction
from orchestrator.ahp.state import ToolResultSubagentContent
from orchestrator.core import (
    EdgeKind,
    Fact,
    MemberJoined,
    ReviewCompleted,
    ReviewRequested,
    Reviews,
    ReviewStarted,
    ReviewStatus,
    TaskFinished,
    TaskStatus,
    build_graph,
    to_mermaid,
)
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.spec import VERDICT_SCHEMA, parse_team
from tests.support.fake_openai import Answer, Stream, fake_openai, text, usage
from tests.support.runtime import Harness, run_to_end, wait_for
from tests.support.teams import review_team

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


def review_facts(h: Harness) -> list[Fact]:
    return [
        f
        for f in h.facts
        if isinstance(f.action, ReviewRequested | ReviewStarted | ReviewCompleted)
    ]


async def reviewed(verdicts: list[str], **options: object) -> Harness:
    h = Harness(parse_team(review_team(verdicts, **options), file="review.toml"))  # type: ignore[arg-type]
    outcome = await run_to_end(h)
    assert outcome.status == "completed", outcome
    return h


class TestRounds:
    async def test_passed_first_time(self, autojump_clock: trio.testing.MockClock) -> None:
        """One round: requested and started with the reviewer's turn, the verdict with the
        delegation's report; the coordinator reads the verdict after the outcome."""
        h = await reviewed(["passed"])
        requested, started, completed = (f.action for f in review_facts(h))
        assert isinstance(requested, ReviewRequested)
        assert (requested.review, requested.round, requested.reviewer) == (
            "task-2-review-1",
            1,
            "checker",
        )
        assert isinstance(started, ReviewStarted)
        assert isinstance(completed, ReviewCompleted)
        assert completed.verdict == "passed"
        assert completed.evidence[0].ref == "task-1"
        # The verdict is recorded in the batch that ends the task (the fact right before it).
        sequences = {type(f.action): f.sequence for f in h.facts}
        assert sequences[TaskFinished] == sequences[ReviewCompleted] + 1
        (finished,) = h.actions(TaskFinished)
        assert finished.status is TaskStatus.COMPLETED
        assert finished.summary == "draft: it is faster"
        (reviewer,) = [m for m in h.actions(MemberJoined) if m.agent == "checker"]
        assert started.chat == reviewer.chat
        (record,) = Reviews.fold(h.facts).of_task("task-2")
        assert record.status is ReviewStatus.PASSED
        results = [
            a for a in h.actions(ChatToolCallCompleteAction) if "review by checker" in str(a)
        ]
        assert len(results) == 1
        output = results[0].result.content or ()
        text = " ".join(getattr(c, "text", "") for c in output)
        assert "[review by checker, passed, round 1 of 2] reads well" in text
        chats = [c.resource for c in output if isinstance(c, ToolResultSubagentContent)]
        assert chats[1] == reviewer.chat  # the call spawned the reviewer too

    async def test_one_fix_then_pass(self, autojump_clock: trio.testing.MockClock) -> None:
        """changes_requested: the verdict is recorded with the worker's next turn, which gets
        the fixes; round 2 passes, and the task's summary is the fixed draft."""
        h = await reviewed(["changes_requested", "passed"])
        kinds = [
            (type(f.action).__name__, getattr(f.action, "review", "")) for f in review_facts(h)
        ]
        assert kinds == [
            ("ReviewRequested", "task-2-review-1"),
            ("ReviewStarted", "task-2-review-1"),
            ("ReviewCompleted", "task-2-review-1"),
            ("ReviewRequested", "task-2-review-2"),
            ("ReviewStarted", "task-2-review-2"),
            ("ReviewCompleted", "task-2-review-2"),
        ]
        first = review_facts(h)[2]
        worker = h.worker_chats()[0]
        fix_turn = next(
            f
            for f in h.facts
            if f.channel == worker
            and isinstance(f.action, ChatTurnStartedAction)
            and f.sequence > first.sequence
        )
        assert fix_turn.sequence == first.sequence + 1
        assert isinstance(fix_turn.action, ChatTurnStartedAction)
        assert "name the breaking change" in fix_turn.action.message.text
        (finished,) = h.actions(TaskFinished)
        assert finished.summary == "draft, fixed once"
        rounds = Reviews.fold(h.facts).of_task("task-2")
        assert [r.status for r in rounds] == [
            ReviewStatus.CHANGES_REQUESTED,
            ReviewStatus.PASSED,
        ]
        assert rounds[0].fixes == ("name the breaking change",)
        (reviewer,) = [m.chat for m in h.actions(MemberJoined) if m.agent == "checker"]
        assert {r.chat for r in rounds} == {reviewer}  # one reviewer chat, a turn per round

    async def test_fails_after_max_review_rounds(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The reviewer keeps asking: after max_review_rounds the delegation ends with the
        last verdict (changes_requested), which the coordinator reads with the fixes."""
        h = await reviewed(["changes_requested"] * 3, max_rounds=2)
        rounds = Reviews.fold(h.facts).of_task("task-2")
        assert [r.status for r in rounds] == [ReviewStatus.CHANGES_REQUESTED] * 2
        worker = h.worker_chats()[0]
        assert h.finished().chats[worker].turns.__len__() == 2  # the task, one round of fixes
        text = str(h.actions(ChatToolCallCompleteAction))
        assert "[review by checker, changes_requested, round 2 of 2]" in text
        assert "Fixes asked: name the breaking change" in text

    async def test_a_reviewer_crash_is_a_failed_review_with_its_error(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The reviewer's turn fails: the review is failed with the error, and the delegation
        ends (never hangs) with the worker's outcome and that verdict."""
        h = await reviewed(["crash"])
        (record,) = Reviews.fold(h.facts).of_task("task-2")
        assert record.status is ReviewStatus.FAILED
        assert record.error is not None
        assert "the reviewer fell over" in record.error
        (finished,) = h.actions(TaskFinished)
        assert finished.status is TaskStatus.COMPLETED
        assert "[review by checker, failed, round 1 of 2]" in str(
            h.actions(ChatToolCallCompleteAction)
        )

    async def test_a_failed_verdict_ends_the_reviews(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = await reviewed(["failed", "passed"])
        (record,) = Reviews.fold(h.facts).of_task("task-2")
        assert (record.status, record.summary) == (ReviewStatus.FAILED, "off topic")


class TestOnRequest:
    async def test_the_coordinator_s_review_call_runs_the_rounds(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """review = "on_request": the delegation ends unreviewed; the coordinator's review call
        then spawns the reviewer, runs one fix and a pass, and its result is the verdict."""
        h = await reviewed(["changes_requested", "passed"], mode="on_request")
        (finished,) = h.actions(TaskFinished)
        assert finished.summary == "draft: it is faster"  # the delegation was not reviewed
        facts = review_facts(h)
        assert all(f.sequence > h.facts_of(TaskFinished)[0].sequence for f in facts)
        rounds = Reviews.fold(h.facts).of_task("task-2")
        assert [r.status for r in rounds] == [
            ReviewStatus.CHANGES_REQUESTED,
            ReviewStatus.PASSED,
        ]
        (call,) = {r.tool_call_id for r in rounds}
        (result,) = [a for a in h.actions(ChatToolCallCompleteAction) if a.tool_call_id == call]
        assert result.result.success
        text = str(result.result.content)
        assert "draft, fixed once" in text
        assert "[review by checker, passed, round 2 of 2]" in text


class TestReviewEdges:
    async def test_a_review_is_an_edge_from_the_reviewer_to_the_worker_with_its_verdict(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """One edge per review, keyed by it: the reviewer's chat to the worker's, with the
        round and the verdict (changes_requested, then passed); the graph checks clean."""
        h = await reviewed(["changes_requested", "passed"])
        graph = build_graph(h.facts)
        assert graph.check() == []
        edges = [
            (u, v, data)
            for u, v, data in graph.graph.edges(data=True)
            if data["kind"] == EdgeKind.REVIEWED
        ]
        (writer,) = h.worker_chats()
        assert [(v, d["round"], d["verdict"]) for _, v, d in edges] == [
            (writer, 1, "changes_requested"),
            (writer, 2, "passed"),
        ]
        assert edges[0][2]["fixes"] == ["name the breaking change"]
        assert edges[0][0] == edges[1][0]  # one reviewer chat
        assert "reviewed: passed" in to_mermaid(graph)


MODEL_REVIEWER = """
[team]
name = "review"
topology = "review_team"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["writer"]
[[agents.lead.turns]]
steps = [ { delegate = [{ agent = "writer", task = "Draft the notes" }] }, { say = "{outcomes}" } ]
[agents.writer]
role = "writer"
[[agents.writer.turns]]
steps = [ { say = "draft" } ]
[[agents.writer.turns]]
steps = [ { say = "draft, fixed" } ]
[agents.checker]
role = "reviewer"
reviews = ["writer"]
backend = "openai"
model = "fake-model"
base_url = "URL"
api_key_env = "FAKE_KEY"
max_retries = 0
"""


# The fake model server listens on loopback; httpx's nested generators warn when the backend
# stops reading at [DONE] (as tests/runtime/backends/test_openai.py says: nothing leaks).
@pytest.mark.daemon
@pytest.mark.filterwarnings(
    r"ignore:Async generator '(httpx|httpcore|httpx_sse)\.[^']*' was garbage collected"
    ":ResourceWarning"
)
class TestModelReviewer:
    async def test_an_openai_compatible_reviewer_is_asked_for_a_structured_verdict(
        self,
    ) -> None:
        """A reviewer on the OpenAI-compatible backend: each round's request asks for the
        verdict's JSON Schema as its response format; its answers are the verdicts (one fix,
        then passed), the evidence kept."""
        answers = [
            '{"verdict": "changes_requested", "fixes": ["say why"], '
            '"evidence": [{"kind": "quote", "text": "draft"}]}',
            '{"verdict": "passed", "summary": "good"}',
        ]

        seen: list[dict[str, Any]] = []

        def answer(request: dict[str, Any]) -> Answer:
            seen.append(request)
            return Stream([*text(answers[len(seen) - 1]), usage(5, 5)])

        async with fake_openai(answer) as server, http_client() as http:
            team = parse_team(MODEL_REVIEWER.replace("URL", server.url), file="review.toml")
            h = Harness(
                team, backends=backend_factory(team, client=http, environ={"FAKE_KEY": "k"})
            )
            with trio.fail_after(60):
                outcome = await h.runtime.run("go")
        assert outcome.status == "completed", outcome
        assert len(seen) == 2
        for request in seen:
            assert request["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
        assert "draft, fixed" in seen[1]["messages"][-1]["content"]
        first, second = Reviews.fold(h.facts).of_task("task-2")
        assert (first.status, first.fixes) == (ReviewStatus.CHANGES_REQUESTED, ("say why",))
        assert first.evidence[0].text == "draft"
        assert (second.status, second.summary) == (ReviewStatus.PASSED, "good")


class TestPerDelegation:
    async def test_a_delegation_on_request_is_not_reviewed_when_it_ends(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The coordinator's mode is always, but its delegate call says on_request: the
        delegation ends unreviewed (no review fact, no reviewer chat)."""
        text = review_team(["passed"]).replace(
            'task = "Draft the release notes" }',
            'task = "Draft the release notes", review = "on_request" }',
        )
        h = Harness(parse_team(text, file="review.toml"))
        outcome = await run_to_end(h)
        assert outcome.status == "completed"
        assert review_facts(h) == []
        assert [m.agent for m in h.actions(MemberJoined)] == ["lead", "writer"]


class TestCancel:
    async def test_a_task_cancelled_under_review_is_killed_and_its_round_failed(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """cancel_task while the reviewer reads: the reviewer stops, its round ends failed,
        and the task is killed (not completed with a verdict)."""
        h = Harness(parse_team(review_team(["passed"], pause=5), file="review.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "go")
            await wait_for(h, lambda f: isinstance(f.action, ReviewStarted))
            h.runtime.cancel_task("task-2")
        (finished,) = h.actions(TaskFinished)
        assert finished.status is TaskStatus.KILLED
        (record,) = Reviews.fold(h.facts).of_task("task-2")
        assert record.status is ReviewStatus.FAILED
