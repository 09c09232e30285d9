"""``orchestrator replay``: a recorded session run again on its recorded model rounds."""

from __future__ import annotations

from pathlib import Path

import pytest

import orchestrator
from orchestrator.cli import main
from orchestrator.core import diff_sessions
from orchestrator.journal import open_reader
from tests.support.paths import PROJECT_ROOT

#: Every shipped team a person prompts whose agents are scripted, and a prompt for it.
SHIPPED = [
    ("delivery.toml", "Ship it"),
    ("handoff.toml", "refund"),
    ("review.toml", "write the release notes"),
    ("structured.toml", "review the release notes"),
    # Its tools are a program and an MCP server: processes.
    pytest.param("tools.toml", "count these words", marks=pytest.mark.daemon),
]

COUNTER = """
[team]
name = "counter"
coordinator = "lead"
[tools.count]
command = ["python", "-c", "print({count})"]
description = "Count."
[agents.lead]
role = "coordinator"
tools = ["count"]
[[agents.lead.turns]]
steps = [ {{ tool = "count" }}, {{ say = "counted {{outcomes}}" }} ]
"""


def _recorded(db: Path, team: str | Path, prompt: str) -> str:
    outcome = orchestrator.run_team_sync(team, prompt, journal=db, on_approval=lambda r: True)
    assert outcome.status is orchestrator.RunStatus.COMPLETED, outcome.error
    return outcome.session


class TestReplay:
    @pytest.mark.parametrize(("file", "prompt"), SHIPPED)
    def test_a_shipped_teams_run_is_reproduced(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, prompt: str
    ) -> None:
        """The replay, with no model, does what the recorded run did: every chat's turns,
        tool calls, answers and tasks; its approvals decided as they were."""
        db = tmp_path / "j.db"
        session = _recorded(db, PROJECT_ROOT / "teams" / file, prompt)
        assert main(["replay", session, "--db", str(db)]) == 0
        replayed = capsys.readouterr().out.strip()
        reader = open_reader(db)
        assert reader.session(replayed).status == "completed"
        found = diff_sessions(reader.facts(session), reader.facts(replayed))
        assert found.chats == ()
        if file != "delivery.toml":  # its three workers run at once: their facts interleave
            assert found.same

    @pytest.mark.daemon  # the tool is a program
    def test_a_changed_tool_is_named_where_the_request_first_differs(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """With ``--team``, a tool that now says something else: the coordinator's next
        round is asked another outcome than was recorded, and the replay says so."""
        db = tmp_path / "j.db"
        recorded = tmp_path / "counter.toml"
        recorded.write_text(COUNTER.format(count=1), encoding="utf-8")
        changed = tmp_path / "changed.toml"
        changed.write_text(COUNTER.format(count=2), encoding="utf-8")
        session = _recorded(db, recorded, "count")
        assert main(["replay", session, "--db", str(db), "--team", str(changed)]) == 1
        captured = capsys.readouterr()
        assert "the replay failed: lead: replay: lead (ahp-chat:/" in captured.err
        assert "turn 1, round 2: tool outcome 1 differs in output: '2" in captured.err
        assert "lead (chat 1):" in captured.out.splitlines()

    def test_until_replays_a_prefix(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "j.db"
        session = _recorded(db, PROJECT_ROOT / "teams" / "handoff.toml", "refund")
        assert main(["replay", session, "--db", str(db), "--until", "12"]) == 0
        replayed = capsys.readouterr().out.strip()
        assert open_reader(db).session(replayed).status == "cancelled"
