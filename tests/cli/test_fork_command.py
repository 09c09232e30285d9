"""``orchestrator fork``, run as a user runs it: a subprocess and a real journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.ahp.actions import ChatTurnStartedAction
from orchestrator.journal import open_reader
from tests.support.command_line import orchestrator
from tests.support.teams import fan_team

# Its tests start processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, str]:
    """A journal with one finished run of a two-prompt fan team, and that session."""
    team = tmp_path / "fan.toml"
    team.write_text(fan_team(2), encoding="utf-8")
    db = tmp_path / "j.db"
    done = orchestrator("run", str(team), "first", "--db", str(db), "--plain", "--json")
    assert done.returncode == 0, done.stderr
    return db, json.loads(done.stdout)["session"]


class TestFork:
    def test_a_fork_prints_the_new_session(self, source: tuple[Path, str]) -> None:
        """Without a prompt, team or model: the fork is written, its URI printed, nothing run."""
        db, session = source
        short = session.removeprefix("ahp-session:/")[:8]
        # Fact 4 is the coordinator's turn's start, the end of a batch (since issue 35 no
        # recorded summary update follows it).
        done = orchestrator("fork", short, "--db", str(db), "--at", "4")
        assert done.returncode == 0, done.stderr
        forked = done.stdout.strip()
        assert forked.startswith("ahp-session:/")
        assert forked != session
        assert f"forked {session} at fact 4" in done.stderr
        facts = open_reader(db).facts(forked)
        assert [f.type for f in facts][-1] == "team/sessionForked"
        assert len(facts) == 5
        assert open_reader(db).session(forked).status == "running"

    def test_a_fork_runs_on_with_a_prompt(self, source: tuple[Path, str]) -> None:
        """``--at-turn`` and ``--prompt``: the fork runs the prompt as the coordinator's next
        message, to the end, as ``run`` does (the outcome as JSON)."""
        db, session = source
        facts = open_reader(db).facts(session)
        turn = next(f.action.turn_id for f in facts if isinstance(f.action, ChatTurnStartedAction))
        done = orchestrator(
            "fork",
            session,
            "--db",
            str(db),
            "--at-turn",
            turn,
            "--prompt",
            "again",
            "--plain",
            "--json",
        )
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        assert outcome["status"] == "completed"
        assert outcome["result"].startswith("done: ")
        state = open_reader(db).open(outcome["session"])
        coordinator = state.chats[state.coordinator_chat() or ""]
        assert [t.message.text for t in coordinator.turns] == ["first", "again"]

    def test_an_unknown_turn_is_refused(self, source: tuple[Path, str]) -> None:
        db, session = source
        done = orchestrator("fork", session, "--db", str(db), "--at-turn", "nope")
        assert done.returncode == 2
        assert "no turn 'nope' ended" in done.stderr
        assert len(open_reader(db).sessions()) == 1
