"""The reviews' fold (core/_reviews.py): its lifecycle table, one test per refused
transition, and a property over generated fact sequences."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import IllegalTransitionError
from orchestrator.core import (
    Fact,
    ReviewAction,
    ReviewCompleted,
    ReviewRecord,
    ReviewRequested,
    Reviews,
    ReviewStarted,
    ReviewStatus,
    RunStarted,
    TeamState,
    reduce_review,
)
from tests.support.examples import examples
from tests.support.review_facts import SESSION, actions, facts_of


def requested(review: str = "review-1", *, task: str = "task-1", round: int = 1) -> ReviewRequested:
    return ReviewRequested(
        review=review,
        task=task,
        worker_chat="ahp-chat:/w",
        reviewer="checker",
        round=round,
        requested_by="ahp-chat:/lead",
        tool_call_id="call-1",
    )


def run(*actions: ReviewAction) -> dict[str, ReviewRecord]:
    reviews: dict[str, ReviewRecord] = {}
    for action in actions:
        reviews = reduce_review(reviews, action)
    return reviews


class TestLifecycle:
    def test_one_fix_then_pass(self) -> None:
        """Two rounds of one task: changes requested with the fixes, then passed."""
        steps: list[ReviewAction] = [
            requested(),
            ReviewStarted(review="review-1", chat="ahp-chat:/c"),
            ReviewCompleted(review="review-1", verdict="changes_requested", fixes=("cite",)),
            requested("review-2", round=2),
            ReviewStarted(review="review-2", chat="ahp-chat:/c"),
            ReviewCompleted(review="review-2", verdict="passed"),
        ]
        reviews = run(*steps)
        first, second = Reviews.fold(facts_of(steps)).of_task("task-1")
        assert (first.status, first.fixes, first.chat) == (
            ReviewStatus.CHANGES_REQUESTED,
            ("cite",),
            "ahp-chat:/c",
        )
        assert second.status is ReviewStatus.PASSED
        assert reviews == {"review-1": first, "review-2": second}

    def test_a_reviewer_that_never_started_may_fail_its_review(self) -> None:
        (record,) = run(
            requested(), ReviewCompleted(review="review-1", verdict="failed", error="boom")
        ).values()
        assert (record.status, record.error) == (ReviewStatus.FAILED, "boom")

    @pytest.mark.parametrize(
        ("before", "action", "state"),
        [
            ((), ReviewStarted(review="review-1", chat="c"), "not requested"),
            ((), ReviewCompleted(review="review-1", verdict="passed"), "not requested"),
            ((requested(),), requested(), "requested"),
            (
                (requested(), ReviewStarted(review="review-1", chat="c")),
                ReviewStarted(review="review-1", chat="c"),
                "reviewing",
            ),
            (
                (requested(), ReviewCompleted(review="review-1", verdict="passed")),
                ReviewCompleted(review="review-1", verdict="failed"),
                "passed",
            ),
            ((), requested(round=2), "not requested"),
            (
                (requested(), ReviewCompleted(review="review-1", verdict="passed")),
                requested("review-2", round=2),
                "not requested",
            ),
            ((requested(),), requested("review-2", round=2), "not requested"),
        ],
        ids=[
            "start-unrequested",
            "complete-unrequested",
            "request-twice",
            "start-twice",
            "complete-finished",
            "round-2-first",
            "round-after-passed",
            "round-while-open",
        ],
    )
    def test_a_refused_action_names_the_review_and_changes_nothing(
        self, before: tuple[ReviewAction, ...], action: ReviewAction, state: str
    ) -> None:
        reviews = run(*before)
        with pytest.raises(IllegalTransitionError) as caught:
            reduce_review(reviews, action)
        assert caught.value.channel == action.review
        assert caught.value.state == state
        assert caught.value.action_type == action.type
        assert reviews == run(*before)


def _check(reviews: Mapping[str, ReviewRecord]) -> None:
    """What every fold of accepted facts keeps."""
    tasks = {r.task for r in reviews.values()}
    for task in tasks:
        rounds = sorted((r for r in reviews.values() if r.task == task), key=lambda r: r.round)
        assert [r.round for r in rounds] == list(range(1, len(rounds) + 1))
        assert all(r.status is ReviewStatus.CHANGES_REQUESTED for r in rounds[:-1])
    for record in reviews.values():
        if record.status is ReviewStatus.REVIEWING:
            assert record.chat is not None


@settings(max_examples=examples(300))
@given(st.lists(actions, max_size=25))
def test_the_fold_of_any_sequence_keeps_the_rounds_in_order(
    sequence: list[ReviewAction],
) -> None:
    """Folding any actions, refused ones skipped: each task's rounds run 1..n, all but the
    last asked for changes; a refused action leaves the reviews as they were; the Reviews fold
    of the accepted facts is the same state."""
    reviews: dict[str, ReviewRecord] = {}
    accepted: list[ReviewAction] = []
    for action in sequence:
        before = dict(reviews)
        try:
            reviews = reduce_review(reviews, action)
        except IllegalTransitionError:
            assert reviews == before
            continue
        accepted.append(action)
        assert reviews[action.review] == Reviews.fold(facts_of(accepted)).records[action.review]
        _check(reviews)
    assert Reviews.fold(facts_of(accepted)).records == reviews


RUN = RunStarted(
    run="run-1", team="t", topology="review_team", parallel_budget=2,
    coordinator="lead", prompt="go", task="task-0",
)  # fmt: skip


@settings(max_examples=examples(200))
@given(st.lists(actions, max_size=25))
def test_the_team_state_holds_the_reviews_a_lenient_fold_makes(
    sequence: list[ReviewAction],
) -> None:
    """The run's record keeps the session's reviews (a client that joins mid-session reads
    the lane from the state): the same as folding the facts on their own, refused ones
    skipped."""
    facts = [
        Fact(
            sequence=1, session=SESSION, channel=SESSION, at="2026-12-07T15:00:00.000Z", action=RUN
        ),
        *(attrs.evolve(f, sequence=f.sequence + 1) for f in facts_of(sequence)),
    ]
    state = TeamState.fold(SESSION, facts)
    assert state.run is not None
    assert dict(state.run.reviews) == Reviews.fold(facts, lenient=True).records
