"""Facts made up for tests: a session's title changes."""

from __future__ import annotations

from orchestrator.ahp.actions import SessionTitleChangedAction
from orchestrator.core import (
    Fact,
)

SESSION = "ahp-session:/00000000-0000-0000-0000-000000000001"


def facts(first: int, count: int) -> list[Fact]:
    return [
        Fact(
            sequence=n,
            session=SESSION,
            channel=SESSION,
            at="2026-11-22T00:00:00.000Z",
            action=SessionTitleChangedAction(title=f"title {n}"),
        )
        for n in range(first, first + count)
    ]


def sequences(received: list[Fact]) -> list[int]:
    return [fact.sequence for fact in received]
