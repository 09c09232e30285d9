"""The board's Agent UI envelopes (human_agent_board): the shipped board team run through the
runtime passes the topology's checker, each board fact a work item's task.changed with its
statuses and principal; and the AG-UI state view follows the board fact by fact."""

from __future__ import annotations

import trio

from orchestrator.core import BoardItemBlocked, BoardItemClaimed, BoardItemCreated, fold_board
from orchestrator.protocols import project_facts
from orchestrator.protocols._project_board import board_status
from orchestrator.spec import load_team
from tests.support.agentui import check_human_agent_board
from tests.support.paths import TEAMS
from tests.support.runtime import Harness


async def test_the_shipped_board_passes_the_topology_s_checker() -> None:
    h = Harness(load_team(TEAMS / "board.toml"))
    with trio.fail_after(60):
        await h.runtime.run("Ship it")
    items = check_human_agent_board(project_facts(h.runtime.session, h.facts))
    payloads = [e.payload or {} for e in items]
    assert [(p["workItemId"], p["status"], p.get("boardStatus")) for p in payloads] == [
        ("notes", "open", "assigned"),
        ("draft", "open", "assigned"),
        ("approve", "open", "assigned"),
        ("publish", "open", "assigned"),
        ("notes", "running", "claimed"),
        ("notes", "running", "commented"),
        ("notes", "done", "done"),
        ("draft", "running", "claimed"),
        ("draft", "done", "done"),
    ]
    approve = items[2]
    assert approve.payload is not None
    assert (approve.payload["assigneeName"], approve.payload["assigneeKind"]) == ("user", "person")


def test_each_fact_s_board_status() -> None:
    created = BoardItemCreated(item="a", title="A", by="t", by_kind="team")
    assert board_status(created) is None  # no assignee: nothing assigned
    assert board_status(BoardItemClaimed(item="a", by="w", by_kind="agent")) == "claimed"
    blocked = BoardItemBlocked(item="a", by="w", by_kind="agent", reason="?")
    assert board_status(blocked) == "blocked"
    assert fold_board([(created, "2026-12-07T15:00:00.000Z")]).items["a"].title == "A"
