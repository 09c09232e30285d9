"""``orchestrator board SESSION ...``: each operation's request, the board as a table, and a
person working the board of a running daemon's session from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.cli._board_command import board_table, request_body
from orchestrator.cli._main import build_parser
from orchestrator.core import (
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCreated,
    fold_board,
)
from orchestrator.protocols import envelope_from_json_line
from tests.support.agentui import check_human_agent_board
from tests.support.daemon import connect, running_daemon
from tests.support.paths import TEAMS

NOW = "2026-12-07T15:00:00.000Z"


@pytest.mark.parametrize(
    ("argv", "body"),
    [
        (["list"], None),
        (["claim", "a"], {"op": "claim", "item": "a"}),
        (["comment", "a", "looks good"], {"op": "comment", "item": "a", "text": "looks good"}),
        (
            ["block", "a", "which tone?", "--waiting-for", "@alice"],
            {"op": "block", "item": "a", "reason": "which tone?", "waitingFor": "@alice"},
        ),
        (["unblock", "a"], {"op": "unblock", "item": "a"}),
        (["done", "a", "--summary", "shipped"], {"op": "done", "item": "a", "summary": "shipped"}),
        (["assign", "a", "writer"], {"op": "assign", "item": "a", "assignee": "writer"}),
    ],
)
def test_each_operation_s_request(argv: list[str], body: dict[str, str] | None) -> None:
    args = build_parser().parse_args(["board", "s-1", *argv])
    assert request_body(args) == body


def test_the_board_as_a_table() -> None:
    board = fold_board(
        (action, NOW)
        for action in (
            BoardItemCreated(item="notes", title="Notes", assignee="writer",
                             assignee_kind="agent", by="t", by_kind="team"),
            BoardItemCreated(item="ok", title="Approve", assignee="alice",
                             assignee_kind="person", by="t", by_kind="team"),
            BoardItemClaimed(item="notes", by="writer", by_kind="agent"),
            BoardItemBlocked(item="ok", by="bob", by_kind="person", reason="later",
                             waiting_for="alice", waiting_for_kind="person"),
        )
    )  # fmt: skip
    assert board_table(board).splitlines() == [
        "notes        claimed   normal  writer       Notes  by writer",
        "ok           blocked   normal  @alice       Approve  blocked: later (waiting for alice)",
    ]


@pytest.mark.daemon
async def test_a_person_works_the_board_from_the_command_line(tmp_path: Path) -> None:
    teams = {"board": (TEAMS / "board.toml").read_text(encoding="utf-8")}
    async with running_daemon(tmp_path, teams=teams) as daemon:
        async with connect(daemon, "team=board") as client:
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship"})
            await client.until_type("done")
        session = init["sessionId"]
        command = [sys.executable, "-m", "orchestrator", "board", session[:8], "--url", daemon.url]

        async def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
            return await trio.run_process(
                [*command, *argv], capture_stdout=True, capture_stderr=True, check=check
            )

        early = await run("done", "publish", check=False)
        assert early.returncode != 0
        assert b"refused: item 'publish' depends on 'approve', not done yet" in early.stderr
        commented = await run("comment", "approve", "reads well")
        assert commented.stdout.decode().splitlines()[0] == "comment approve: ok"
        await run("done", "approve")
        listed = json.loads((await run("--json", "list")).stdout)
        approve = next(i for i in listed["items"] if i["id"] == "approve")
        # With no tokens, the loopback principal is "local".
        assert [(c["by"], c["text"]) for c in approve["comments"]] == [("local", "reads well")]
        assert approve["status"] == "done"
        assert approve["history"][-1]["by"] == "local"


@pytest.mark.daemon
async def test_the_board_team_run_from_the_cli_passes_the_agent_ui_checker(
    tmp_path: Path,
) -> None:
    """``orchestrator run teams/board.toml`` then ``orchestrator events --format agent-ui``:
    the envelopes pass the human_agent_board checker."""
    db = tmp_path / "board.db"
    orchestrator = [sys.executable, "-m", "orchestrator"]
    ran = await trio.run_process(
        [*orchestrator, "run", str(TEAMS / "board.toml"), "Ship", "--db", str(db), "--json"],
        capture_stdout=True,
        capture_stderr=True,
    )
    session = json.loads(ran.stdout)["session"]
    events = await trio.run_process(
        [*orchestrator, "events", session, "--db", str(db), "--format", "agent-ui", "--json"],
        capture_stdout=True,
        capture_stderr=True,
    )
    envelopes = [envelope_from_json_line(line) for line in events.stdout.decode().splitlines()]
    items = check_human_agent_board(envelopes)
    assert {(e.payload or {})["workItemId"] for e in items} == {
        "notes", "draft", "approve", "publish",
    }  # fmt: skip
