"""Review actions: the facts of a reviewed delegation's reviews.

A worker whose agent has a reviewer (a team file's ``reviews``) has its outcome checked before
its delegation completes (spec/_review.py). Each check is one *review*, ``review-<n>``:

1. ``team/reviewRequested``: the delegation's outcome goes to the reviewer (round ``round``,
   from 1), by the runtime (``always``) or the coordinator's ``review`` call (``on_request``);
2. ``team/reviewStarted``: the reviewer's chat took it up, recorded with that chat's
   ``session/chatAdded`` when it is the chat's first review;
3. ``team/reviewCompleted``: the verdict, the fixes asked and the evidence; or ``failed``
   with the error when the reviewer could not answer (it crashed, timed out, was cancelled).

A ``changes_requested`` verdict with rounds left gives the worker the fixes as its next turn,
then the next round's ``team/reviewRequested``. :mod:`._reviews` folds these facts into each
review's status.

Pure: no trio and no IO.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from orchestrator.spec import EvidenceItem

__all__ = [
    "REVIEW_ACTION_TYPES",
    "ReviewAction",
    "ReviewCompleted",
    "ReviewRequested",
    "ReviewStarted",
    "ReviewVerdict",
]

#: What a finished review says: the reviewer's verdict, or ``failed`` when it gave none.
ReviewVerdict: TypeAlias = Literal["passed", "changes_requested", "failed"]


@attrs.frozen(kw_only=True)
class ReviewRequested:
    """A delegation's outcome was sent to its reviewer (see the module docstring).

    ``tool_call_id`` is the coordinator's call the review belongs to: the ``delegate`` call
    (a review the runtime asked for) or the ``review`` call (one the coordinator asked for).
    """

    type: str = attrs.field(default="team/reviewRequested", init=False)
    review: str
    task: str
    worker_chat: str
    reviewer: str  # the reviewer's agent name
    round: int
    requested_by: str  # the coordinator's chat
    tool_call_id: str


@attrs.frozen(kw_only=True)
class ReviewStarted:
    """The reviewer's chat took the review up."""

    type: str = attrs.field(default="team/reviewStarted", init=False)
    review: str
    chat: str


@attrs.frozen(kw_only=True)
class ReviewCompleted:
    """A review's verdict, with the fixes asked and the evidence; or ``failed`` and ``error``
    when the reviewer gave no verdict.

    Invariant: self.error is None or self.verdict == "failed"
    """

    type: str = attrs.field(default="team/reviewCompleted", init=False)
    review: str
    verdict: ReviewVerdict
    summary: str = ""
    fixes: tuple[str, ...] = ()
    evidence: tuple[EvidenceItem, ...] = ()
    error: str | None = None


ReviewAction = ReviewRequested | ReviewStarted | ReviewCompleted

#: Wire ``type`` of every review action, for the converter's tagged union.
REVIEW_ACTION_TYPES: dict[str, type[ReviewAction]] = {
    "team/reviewRequested": ReviewRequested,
    "team/reviewStarted": ReviewStarted,
    "team/reviewCompleted": ReviewCompleted,
}
