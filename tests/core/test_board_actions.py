"""Board actions on the wire: every kind round-trips through the fact log's JSON, in camelCase,
and a journal line of one decodes to the same action."""

from __future__ import annotations

import json

import pytest

from orchestrator.core import (
    BOARD_ACTION_TYPES,
    BoardAction,
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCommented,
    BoardItemCreated,
    BoardItemDone,
    BoardItemStarted,
    BoardItemUnblocked,
    BoardItemUpdated,
    Fact,
    fact_from_json,
    fact_to_json,
)

EVERY: list[BoardAction] = [
    BoardItemCreated(
        item="a", title="A", depends_on=("b",), assignee="w", assignee_kind="agent",
        by="team", by_kind="agent",
    ),
    BoardItemClaimed(item="a", by="alice", by_kind="person"),
    BoardItemStarted(item="a", task="task-2", by="w"),
    BoardItemUpdated(item="a", by="w", by_kind="agent", priority="high", reviewing=True),
    BoardItemCommented(item="a", by="alice", by_kind="person", text="ok"),
    BoardItemBlocked(item="a", by="w", by_kind="agent", reason="?", waiting_for="alice",
                     waiting_for_kind="person"),
    BoardItemUnblocked(item="a", by="alice", by_kind="person"),
    BoardItemDone(item="a", by="w", by_kind="agent", summary="done"),
]  # fmt: skip


def test_every_board_action_type_is_listed() -> None:
    assert sorted(type(a).__name__ for a in EVERY) == sorted(
        c.__name__ for c in BOARD_ACTION_TYPES.values()
    )
    assert all(BOARD_ACTION_TYPES[a.type] is type(a) for a in EVERY)


@pytest.mark.parametrize("action", EVERY, ids=lambda a: a.type)
def test_a_board_fact_round_trips(action: BoardAction) -> None:
    fact = Fact(sequence=3, session="s", channel="s", at="2026-12-07T15:00:00.000Z", action=action)
    line = fact_to_json(fact)
    assert fact_from_json(line) == fact
    wire = json.loads(line)["action"]
    assert wire["type"] == action.type
    assert "byKind" in wire
    assert "by_kind" not in wire
