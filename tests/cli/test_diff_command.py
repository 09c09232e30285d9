"""``orchestrator diff A B``: two sessions of a journal compared, in words or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import orchestrator
from orchestrator.cli import main
from tests.support.teams import fan_team


def _runs(db: Path) -> tuple[str, str]:
    team = orchestrator.parse_team(fan_team(2), file="fan.toml")
    a = orchestrator.run_team_sync(team, "first", journal=db).session
    b = orchestrator.run_team_sync(team, "second", journal=db).session
    return a, b


class TestDiff:
    def test_two_runs_part_at_their_prompts(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Exit 1 when they differ: the first fact where they part, then the chats."""
        db = tmp_path / "j.db"
        a, b = _runs(db)
        assert main(["diff", a, b, "--db", str(db)]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == "they part at A's fact 1 (team/runStarted), B's fact 1 (team/runStarted)"
        assert "lead (chat 1):" in lines
        assert "  turn 1: asked 'first' / 'second'" in lines
        assert main(["diff", a, b[len("ahp-session:/") :][:8], "--db", str(db), "--json"]) == 1
        found = json.loads(capsys.readouterr().out)
        assert found["partedAt"]["a"] == {"sequence": 1, "type": "team/runStarted"}
        assert found["chats"][0]["chat"] == "lead (chat 1)"

    def test_a_session_is_the_same_as_itself(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "j.db"
        a, _ = _runs(db)
        assert main(["diff", a, a, "--db", str(db)]) == 0
        assert capsys.readouterr().out == f"{a} and {a} did the same\n"
