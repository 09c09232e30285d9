"""Strategies for review facts (core/_review_actions.py), shared by the review tests."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from orchestrator.core import (
    Fact,
    ReviewAction,
    ReviewCompleted,
    ReviewRequested,
    ReviewStarted,
)
from orchestrator.spec import EvidenceItem

SESSION = "ahp-session:/00000000-0000-4000-8000-000000000000"
REVIEWS = ("review-1", "review-2", "review-3", "review-4")
TASKS = ("task-1", "task-2")

evidence = st.builds(
    EvidenceItem,
    kind=st.sampled_from(["quote", "tool_result", "link", "fact"]),
    text=st.text(max_size=12),
    ref=st.none() | st.text(min_size=1, max_size=8),
)
requested = st.builds(
    ReviewRequested,
    review=st.sampled_from(REVIEWS),
    task=st.sampled_from(TASKS),
    worker_chat=st.just("ahp-chat:/worker"),
    reviewer=st.just("checker"),
    round=st.integers(min_value=1, max_value=3),
    requested_by=st.just("ahp-chat:/lead"),
    tool_call_id=st.just("call-1"),
)
started = st.builds(
    ReviewStarted, review=st.sampled_from(REVIEWS), chat=st.just("ahp-chat:/checker")
)
completed = st.one_of(
    st.builds(
        ReviewCompleted,
        review=st.sampled_from(REVIEWS),
        verdict=st.sampled_from(["passed", "changes_requested"]),
        summary=st.text(max_size=12),
        fixes=st.lists(st.text(min_size=1, max_size=8), max_size=2).map(tuple),
        evidence=st.lists(evidence, max_size=2).map(tuple),
    ),
    st.builds(
        ReviewCompleted,
        review=st.sampled_from(REVIEWS),
        verdict=st.just("failed"),
        error=st.none() | st.text(min_size=1, max_size=12),
    ),
)
actions: st.SearchStrategy[ReviewAction] = st.one_of(requested, started, completed)


def facts_of(actions: Sequence[ReviewAction]) -> list[Fact]:
    """The facts recording ``actions``, numbered from 1."""
    return [
        Fact(sequence=n, session=SESSION, channel=SESSION, at="2026-12-07T15:00:00.000Z", action=a)
        for n, a in enumerate(actions, start=1)
    ]
