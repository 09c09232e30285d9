"""The reviews of a session, folded from its review facts (:mod:`._review_actions`).

A review's status is the Agent UI review teammate's: ``requested``, ``reviewing``, then one of
``passed``, ``changes_requested`` or ``failed``. The lifecycle is a table
(:data:`LIFECYCLE`): each status lists the actions it takes, looked up before anything
changes. An action the table does not allow raises :class:`IllegalTransitionError` naming the
review, the action and the status, and the reviews are left as they were.

A task's reviews are its rounds, in order: a new round is requested only once the last one
finished with ``changes_requested`` (round 1 when the task has none).

Pure: no trio and no IO.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from orchestrator.base import IllegalTransitionError
from orchestrator.spec import EvidenceItem

from ._facts import Fact
from ._review_actions import ReviewAction, ReviewCompleted, ReviewRequested, ReviewStarted

__all__ = [
    "LIFECYCLE",
    "ReviewRecord",
    "ReviewStatus",
    "Reviews",
    "reduce_review",
]


class ReviewStatus(enum.StrEnum):
    """A review's status (Agent UI review teammate status values)."""

    REQUESTED = "requested"
    REVIEWING = "reviewing"
    PASSED = "passed"
    CHANGES_REQUESTED = "changes_requested"
    FAILED = "failed"


#: The statuses a review ends in.
FINISHED: Final = frozenset(
    {ReviewStatus.PASSED, ReviewStatus.CHANGES_REQUESTED, ReviewStatus.FAILED}
)

#: Which action each status takes (None: a review not requested yet). A completed review's
#: next status is its verdict.
LIFECYCLE: Final[Mapping[ReviewStatus | None, frozenset[type[ReviewAction]]]] = {
    None: frozenset({ReviewRequested}),
    ReviewStatus.REQUESTED: frozenset({ReviewStarted, ReviewCompleted}),
    ReviewStatus.REVIEWING: frozenset({ReviewCompleted}),
    ReviewStatus.PASSED: frozenset(),
    ReviewStatus.CHANGES_REQUESTED: frozenset(),
    ReviewStatus.FAILED: frozenset(),
}


@attrs.frozen(kw_only=True)
class ReviewRecord:
    """One review as its facts leave it."""

    review: str
    task: str
    worker_chat: str
    reviewer: str
    round: int
    requested_by: str
    tool_call_id: str
    status: ReviewStatus = ReviewStatus.REQUESTED
    # The reviewer's chat, once it took the review up.
    chat: str | None = None
    summary: str = ""
    fixes: tuple[str, ...] = ()
    evidence: tuple[EvidenceItem, ...] = ()
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


def _refuse(reason: str, action: ReviewAction, status: ReviewStatus | None) -> None:
    raise IllegalTransitionError(
        reason,
        action_type=action.type,
        channel=action.review,
        state=status.value if status is not None else "not requested",
    )


def reduce_review(
    reviews: Mapping[str, ReviewRecord], action: ReviewAction
) -> dict[str, ReviewRecord]:
    """The reviews after ``action``: a new mapping, ``reviews`` untouched.

    Raises :class:`IllegalTransitionError` for an action the review's status does not take
    (see :data:`LIFECYCLE`), or a round that does not follow its task's last review.
    """
    record = reviews.get(action.review)
    status = record.status if record is not None else None
    if type(action) not in LIFECYCLE[status]:
        _refuse(f"a {status or 'missing'} review does not take {action.type}", action, status)
    changed = dict(reviews)
    match action:
        case ReviewRequested():
            rounds = sorted(
                (r for r in reviews.values() if r.task == action.task), key=lambda r: r.round
            )
            last = rounds[-1] if rounds else None
            expected = 1 if last is None else last.round + 1
            if action.round != expected:
                _refuse(f"task {action.task}'s next round is {expected}", action, status)
            if last is not None and last.status is not ReviewStatus.CHANGES_REQUESTED:
                _refuse(
                    f"task {action.task}'s {last.review} is {last.status}; a new round "
                    "follows changes_requested",
                    action,
                    status,
                )
            changed[action.review] = ReviewRecord(
                review=action.review,
                task=action.task,
                worker_chat=action.worker_chat,
                reviewer=action.reviewer,
                round=action.round,
                requested_by=action.requested_by,
                tool_call_id=action.tool_call_id,
            )
        case ReviewStarted():
            assert record is not None
            changed[action.review] = attrs.evolve(
                record, status=ReviewStatus.REVIEWING, chat=action.chat
            )
        case ReviewCompleted():
            assert record is not None
            changed[action.review] = attrs.evolve(
                record,
                status=ReviewStatus(action.verdict),
                summary=action.summary,
                fixes=action.fixes,
                evidence=action.evidence,
                error=action.error,
            )
    return changed


class Reviews:
    """A session's reviews, folded fact by fact (facts of other kinds are skipped)."""

    def __init__(self, records: Mapping[str, ReviewRecord] | None = None) -> None:
        """Folded from ``records`` on (a state's ``run.reviews``: a projector that starts
        mid-session), or from none."""
        self.records: dict[str, ReviewRecord] = dict(records or {})

    def apply(self, fact: Fact) -> ReviewRecord | None:
        """Fold one fact; the review it changed, if it is a review fact."""
        action = fact.action
        if not isinstance(action, ReviewRequested | ReviewStarted | ReviewCompleted):
            return None
        self.records = reduce_review(self.records, action)
        return self.records[action.review]

    @classmethod
    def fold(cls, facts: Iterable[Fact], *, lenient: bool = False) -> Reviews:
        """The reviews of ``facts``; ``lenient``: a fact the lifecycle refuses is skipped
        (a reader's view of a log it did not write) instead of raising."""
        reviews = cls()
        for fact in facts:
            try:
                reviews.apply(fact)
            except IllegalTransitionError:
                if not lenient:
                    raise
        return reviews

    def of_task(self, task: str) -> list[ReviewRecord]:
        """A task's reviews, by round."""
        return sorted((r for r in self.records.values() if r.task == task), key=lambda r: r.round)

    def of_worker(self, worker_chat: str) -> list[ReviewRecord]:
        """The reviews of a worker chat's work, by round."""
        return sorted(
            (r for r in self.records.values() if r.worker_chat == worker_chat),
            key=lambda r: r.round,
        )
