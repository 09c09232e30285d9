"""``orchestrator run``, run as a user runs it: a subprocess, real files, real stdin."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from orchestrator.protocols import (
    envelope_from_json_line,
    project_facts,
    structure_envelope,
    unstructure_envelope,
)
from orchestrator.runtime import read_facts
from tests.support import teams
from tests.support.agentui import check_review_team
from tests.support.command_line import DELIVERY, HANDOFF, orchestrator, run_delivery_team
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


@pytest.fixture(scope="module")
def delivery_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One auto-approved run of the delivery team, shared by the tests that read its files."""
    out = tmp_path_factory.mktemp("run")
    return run_delivery_team(out), out


class TestRun:
    def test_delivery_completes_and_prints_the_final_answer(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        """Exit 0, the coordinator's answer alone on stdout, progress lines on stderr."""
        done, _ = delivery_run
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("Here is what the team found:")
        assert "The release notes are ready." in done.stdout
        assert (
            "researcher #3 (task: Publish the release notes to the release page) asks to run "
            "publish(target=release page)"
        ) in done.stderr
        assert "approved by you" in done.stderr
        assert "the run completed (session ahp-session:/" in done.stderr

    def test_events_file_holds_agent_ui_envelopes_in_sequence(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        """--events writes JSON Lines envelopes, sequence 1..n, with the team event classes."""
        _, out = delivery_run
        lines = (out / "run.jsonl").read_text().splitlines()
        envelopes = [structure_envelope(json.loads(line)) for line in lines]
        assert [e.sequence for e in envelopes] == list(range(1, len(envelopes) + 1))
        types = [e.type for e in envelopes]
        assert types[0] == "run.started"
        assert types[-1] == "run.finished"
        assert types.count("agent.spawned") == 4  # coordinator + three researchers
        assert types.count("worker.notification") == 3
        assert types.index("action.required") < types.index("action.resolved")

    def test_events_equal_a_projection_of_the_fact_log(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        """What --events wrote live equals, as JSON objects, a projection of --facts."""
        _, out = delivery_run
        facts = list(read_facts(out / "run.facts.jsonl"))
        live = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
        replayed = [unstructure_envelope(e) for e in project_facts(facts[0].session, facts)]
        assert live == replayed

    def test_graph_of_the_run_checks_clean_and_draws(
        self, delivery_run: tuple[subprocess.CompletedProcess[str], Path]
    ) -> None:
        _, out = delivery_run
        facts = str(out / "run.facts.jsonl")
        checked = orchestrator("graph", "--facts", facts, "--check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "is consistent" in checked.stdout
        mermaid = orchestrator("graph", "--facts", facts, "--format", "mermaid")
        assert mermaid.returncode == 0
        assert mermaid.stdout.startswith("flowchart TD")
        assert mermaid.stdout.count("spawned") >= 3
        for fmt, marker in (("json", '"nodes"'), ("dot", "digraph"), ("graphml", "<graphml")):
            drawn = orchestrator("graph", "--facts", facts, "--format", fmt)
            assert drawn.returncode == 0
            assert marker in drawn.stdout

    def test_approval_answered_at_the_prompt(self) -> None:
        """--approve ask reads the answer from stdin: 'y' approves."""
        done = orchestrator("run", DELIVERY, "Ship the release notes", stdin="y\n")
        assert done.returncode == 0, done.stderr
        assert "Approve? [y/N]" in done.stderr
        assert "published to https://example.invalid" in done.stdout

    def test_end_of_input_at_the_prompt_denies(self) -> None:
        """No answer (stdin closed) is a no: the publish call is denied, the run completes."""
        done = orchestrator("run", DELIVERY, "Ship the release notes", stdin="")
        assert done.returncode == 0, done.stderr
        assert "denied by you" in done.stderr
        assert "publish was denied by user" in done.stdout

    def test_deny_policy(self) -> None:
        done = orchestrator("run", DELIVERY, "Ship the release notes", "--approve", "deny")
        assert done.returncode == 0, done.stderr
        assert "publish was denied by user" in done.stdout

    def test_handoff_team(self, tmp_path: Path) -> None:
        facts = tmp_path / "h.jsonl"
        done = orchestrator("run", HANDOFF, "I was charged twice", "--facts", str(facts))
        assert done.returncode == 0, done.stderr
        assert "handed off to billing" in done.stderr
        assert orchestrator("graph", "--facts", str(facts), "--check").returncode == 0

    def test_nightly_team_runs_its_background_prompt_offline(self, tmp_path: Path) -> None:
        """The example background teammate's turn, run by hand: it delegates and reports."""
        facts = tmp_path / "n.jsonl"
        done = orchestrator(
            "run",
            str(PROJECT_ROOT / "teams" / "nightly.toml"),
            "Audit the lock file and report new advisories",
            "--facts",
            str(facts),
        )
        assert done.returncode == 0, done.stderr
        assert "0 new advisories since the last audit" in done.stdout
        assert orchestrator("graph", "--facts", str(facts), "--check").returncode == 0

    def test_a_journal_that_refuses_the_first_facts_fails_the_run_in_one_line(
        self, tmp_path: Path
    ) -> None:
        """The journal's failure at the run's first facts (here its facts table is gone) is
        the run's failure: exit 1, one line naming the file and the cause, ``--json`` says
        so too; no traceback. The other sessions of the file are left as they were."""
        db = tmp_path / "j.db"
        first = orchestrator("run", DELIVERY, "Ship", "--approve", "auto", "--db", str(db))
        assert first.returncode == 0, first.stderr
        with sqlite3.connect(db) as connection:
            connection.execute("DROP TABLE facts")
        done = orchestrator(
            "run", DELIVERY, "Ship again", "--approve", "auto", "--db", str(db), "--json"
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        failed = [json.loads(line) for line in done.stderr.splitlines() if "the run failed" in line]
        assert len(failed) == 1, done.stderr
        assert failed[0]["status"] == "failed"
        assert "no such table: facts" in failed[0]["event"]
        assert f"{db}:" in failed[0]["event"]
        said = json.loads(done.stdout)
        assert said["status"] == "failed"
        assert said["session"] == failed[0]["session"]
        assert "no such table: facts" in said["error"]


class TestBadInput:
    def test_an_invalid_team_file_names_file_and_key(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.toml"
        bad.write_text('[team]\nname = "x"\ncoordinator = "lead"\nparalel_budget = 2\n')
        done = orchestrator("run", str(bad), "hello")
        assert done.returncode == 2
        assert str(bad) in done.stderr
        assert "paralel_budget" in done.stderr
        assert "parallel_budget" in done.stderr

    def test_an_empty_prompt_is_bad_input(self) -> None:
        done = orchestrator("run", DELIVERY, "  ")
        assert done.returncode == 2
        assert "prompt is empty" in done.stderr

    def test_an_unwritable_events_file_is_bad_input(self, tmp_path: Path) -> None:
        """Named, exit 2, and before anything ran: no traceback."""
        target = tmp_path / "missing" / "run.jsonl"
        done = orchestrator("run", DELIVERY, "Ship it", "--events", str(target))
        assert done.returncode == 2
        assert f"{target}: cannot open for writing" in done.stderr
        assert "Traceback" not in done.stderr


class TestOutput:
    """A run's stderr in one format, its outcome as JSON, its prompt."""

    def test_a_failed_run_says_so_once_on_stderr_in_one_format(self, tmp_path: Path) -> None:
        """Piped stderr is JSON records only; the failure is said once, with its session,
        which is also the session the run announced when it started."""
        team = tmp_path / "failing.toml"
        team.write_text(teams.FAILING)
        done = orchestrator("run", str(team), "go", "--db", str(tmp_path / "j.db"), "--plain")
        assert done.returncode == 1
        records = [json.loads(line) for line in done.stderr.splitlines()]
        started, *_, ended = records
        assert started["event"] == f"session {started['session']}"
        assert ended["level"] == "error"
        assert ended["session"] == started["session"]
        assert ended["status"] == "failed"
        assert "gave up" in ended["event"]
        assert sum("gave up" in r["event"] for r in records) == 1

    def test_console_format_has_no_json(self, tmp_path: Path) -> None:
        team = tmp_path / "failing.toml"
        team.write_text(teams.FAILING)
        done = orchestrator(
            "run", str(team), "go", "--db", str(tmp_path / "j.db"), "--log-format", "console"
        )
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert lines[0].startswith("orchestrator: session ahp-session:/")
        assert lines[-1].startswith("orchestrator: the run failed: ")
        assert not any(line.startswith("{") for line in lines)

    def test_run_json_is_the_outcome(self, tmp_path: Path) -> None:
        done = orchestrator(
            "run", HANDOFF, "refund", "--db", str(tmp_path / "j.db"), "--json", "--plain"
        )
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        assert outcome["status"] == "completed"
        assert outcome["error"] is None
        assert outcome["result"]
        assert outcome["result_value"] is None  # its coordinator has no output_schema
        listed = orchestrator("sessions", "--json", "--db", str(tmp_path / "j.db"))
        assert [s["session"] for s in json.loads(listed.stdout)] == [outcome["session"]]

    def test_run_json_has_the_coordinators_structured_value(self, tmp_path: Path) -> None:
        team = tmp_path / "structured.toml"
        team.write_text(
            teams.structured(answer="""'{"score": 3}'""", lead_says='{"approved": true}')
        )
        done = orchestrator("run", str(team), "score it", "--db", str(tmp_path / "j.db"), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["result_value"] == {"approved": True}

    @pytest.mark.parametrize("how", ["stdin", "file"])
    def test_the_prompt_comes_from_stdin_or_a_file(self, tmp_path: Path, how: str) -> None:
        prompt = "Refund order 42,\nplease: it came broken.\n"
        facts = tmp_path / "facts.jsonl"
        if how == "stdin":
            done = orchestrator("run", HANDOFF, "-", "--facts", str(facts), "--plain", stdin=prompt)
        else:
            (tmp_path / "prompt.txt").write_text(prompt)
            done = orchestrator(
                "run",
                HANDOFF,
                "--prompt-file",
                str(tmp_path / "prompt.txt"),
                "--facts",
                str(facts),
                "--plain",
            )
        assert done.returncode == 0, done.stderr
        first_turn = next(f for f in read_facts(facts) if f.action.type == "chat/turnStarted")
        assert first_turn.action.message.text == prompt  # type: ignore[union-attr]

    def test_no_prompt_is_bad_input(self) -> None:
        done = orchestrator("run", HANDOFF)
        assert done.returncode == 2
        assert "give a prompt" in done.stderr

    def test_a_model_for_a_team_without_such_agents_is_bad_input(self) -> None:
        done = orchestrator("run", HANDOFF, "refund", "--model", "tiny-1")
        assert done.returncode == 2
        assert "no agent of" in done.stderr


class TestReviewTeam:
    def test_the_shipped_review_team_passes_the_agent_ui_checker(self, tmp_path: Path) -> None:
        """teams/review.toml through the command line: one fix, then passed; the Agent UI
        envelopes it writes (--events) pass the review_team checker."""
        events = tmp_path / "run.jsonl"
        done = orchestrator(
            "run",
            str(PROJECT_ROOT / "teams" / "review.toml"),
            "Write the notes",
            "--events",
            str(events),
        )
        assert done.returncode == 0, done.stderr
        assert "[review by reviewer, passed, round 2 of 2]" in done.stdout
        envelopes = [envelope_from_json_line(line) for line in events.read_text().splitlines()]
        reviews = check_review_team(envelopes)
        assert [(e.type, (e.payload or {})["status"]) for e in reviews] == [
            ("review.requested", "requested"),
            ("evidence.changed", "changes_requested"),
            ("review.completed", "changes_requested"),
            ("review.requested", "requested"),
            ("evidence.changed", "passed"),
            ("review.completed", "passed"),
        ]
