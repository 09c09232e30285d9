"""The journal through the command line, on a SQLite file and on a PostgreSQL server:
``sessions``, ``events`` and ``graph`` of past runs, and what ``--db postgresql://...`` says
when it cannot be used. The tests of each journal module are in its mirrored test module."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.journal import DELIVERY, HANDOFF
from tests.support.postgres import PostgresServer, direct_sql


@pytest.mark.daemon
class TestCommandLine:
    def orchestrator(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def test_sessions_events_and_graph_of_past_runs(self, journal_db: Path | str) -> None:
        """``--db`` a SQLite file or ``postgresql://...``: the same commands, the same answers."""
        db = str(journal_db)
        first = self.orchestrator("run", str(HANDOFF), "refund", "--db", db)
        second = self.orchestrator("run", str(DELIVERY), "Ship it", "--db", db, "--approve", "auto")
        assert first.returncode == second.returncode == 0
        listed = json.loads(self.orchestrator("sessions", "--db", db, "--json").stdout)
        assert [(s["team"], s["status"], s["title"]) for s in listed] == [
            ("support", "completed", "refund"),
            ("delivery", "completed", "Ship it"),
        ]
        assert all(s["session"].startswith("ahp-session:/") and s["createdAt"] for s in listed)
        short = listed[1]["session"].removeprefix("ahp-session:/")[:8]
        facts = self.orchestrator("events", short, "--db", db, "--json").stdout.splitlines()
        assert json.loads(facts[0])["action"]["type"] == "team/runStarted"
        envelopes = self.orchestrator("events", short, "--db", db, "--format", "agent-ui", "--json")
        assert json.loads(envelopes.stdout.splitlines()[-1])["type"] == "run.finished"
        checked = self.orchestrator("graph", short, "--db", db, "--check")
        assert checked.returncode == 0
        assert "is consistent" in checked.stdout
        as_json = json.loads(
            self.orchestrator("graph", short, "--db", db, "--check", "--json").stdout
        )
        assert as_json == {"source": listed[1]["session"], "ok": True, "violations": []}

        # For a person: one line per fact, numbered, with the agent and what happened.
        lines = self.orchestrator("events", short, "--db", db).stdout.splitlines()
        assert len(lines) == len(facts)
        assert lines[0].split()[0::3] == ["1", "team/runStarted"]
        assert any(line.split()[2] == "researcher" and "chat/turnStarted" in line for line in lines)
        assert any("+ lead joined (coordinator)" in line for line in lines)
        people = self.orchestrator("events", short, "--db", db, "--format", "agent-ui")
        assert people.stdout.splitlines()[-1].split()[-1] == "run.finished"

    def test_an_unknown_session_is_named(self, tmp_path: Path) -> None:
        db = str(tmp_path / "journal.db")
        assert self.orchestrator("run", str(HANDOFF), "refund", "--db", db).returncode == 0
        done = self.orchestrator("events", "nope", "--db", db)
        assert done.returncode == 2
        assert "no session 'nope'" in done.stderr


class TestPostgresInput:
    """What ``--db postgresql://...`` says when it cannot be used: each a clear error naming
    what was wrong, with the README's exit status (2: bad input, 3: unreachable)."""

    def orchestrator(self, *args: str) -> subprocess.CompletedProcess[str]:
        return TestCommandLine().orchestrator(*args)

    @pytest.mark.daemon
    def test_a_url_that_does_not_parse(self) -> None:
        done = self.orchestrator("sessions", "--db", "postgresql://me@127.0.0.1:port/journal")
        assert done.returncode == 2, done.stderr
        assert "this PostgreSQL URL does not parse" in done.stderr
        done = self.orchestrator("sessions", "--db", "postgresql://me@127.0.0.1:5432")
        assert done.returncode == 2, done.stderr
        assert "names no database" in done.stderr

    @pytest.mark.daemon
    def test_a_server_that_is_not_there(self) -> None:
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"postgresql://me:secret@127.0.0.1:{port}/journal"
        for command in (("sessions",), ("run", str(HANDOFF), "refund")):
            done = self.orchestrator(*command, "--db", url)
            assert done.returncode == 3, done.stderr
            assert "cannot reach the PostgreSQL server" in done.stderr
            assert f"127.0.0.1:{port}" in done.stderr
            assert "secret" not in done.stderr, "the password is never shown"

    def test_a_database_that_does_not_exist(self, postgres_server: PostgresServer) -> None:
        url = postgres_server.url("no_such_database")
        for command in (("sessions",), ("run", str(HANDOFF), "refund")):
            done = self.orchestrator(*command, "--db", url)
            assert done.returncode == 2, done.stderr
            assert "no such database" in done.stderr
            assert "no_such_database" in done.stderr

    def test_an_empty_database_and_a_foreign_one(self, postgres_database: str) -> None:
        done = self.orchestrator("sessions", "--db", postgres_database)
        assert done.returncode == 2, done.stderr
        assert "no journal here" in done.stderr
        with direct_sql(postgres_database) as connection:
            connection.execute("CREATE TABLE facts (id integer)")
        done = self.orchestrator("run", str(HANDOFF), "refund", "--db", postgres_database)
        assert done.returncode == 2, done.stderr
        assert "not an orchestrator journal" in done.stderr
        with direct_sql(postgres_database) as connection:
            (tables,) = connection.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == 1, "nothing was written to it"

    def test_prune_of_a_database_without_a_journal_says_so(self, postgres_database: str) -> None:
        """prune works on PostgreSQL too (tests/journal/test_prune.py); on an empty database it
        says there is no journal there (exit 2), and creates nothing."""
        done = self.orchestrator("prune", "--older-than", "30d", "--db", postgres_database)
        assert done.returncode == 2, done.stderr
        assert f"{postgres_database}: no journal here" in done.stderr
        with direct_sql(postgres_database) as connection:
            (tables,) = connection.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == 0
