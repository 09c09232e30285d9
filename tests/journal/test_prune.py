"""Pruning a journal: ended sessions older than a cutoff go, with everything they hold;
running ones and recent ones stay, and so does every other session's data. On both
databases (``journal_db``); on PostgreSQL a session a live node holds the lease of stays."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.base import FactLogError
from orchestrator.journal import open_journal, open_reader, prune
from orchestrator.runtime import TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import load_team
from tests.support.journal import HANDOFF, NOW, age, run_team
from tests.support.paths import PROJECT_ROOT
from tests.support.postgres import direct_sql

TABLES = ("facts", "snapshot_parts", "snapshots", "agent_messages", "session_teams", "sessions")


def rows(db: Path | str, session: str) -> dict[str, int]:
    with direct_sql(db) as connection:
        return {
            table: connection.execute(
                f"SELECT count(*) FROM {table} WHERE session = ?",
                (session,),
            ).fetchone()[0]
            for table in (*TABLES, "chats")
        }


@pytest.fixture
async def journal_of_four(journal_db: Path | str) -> tuple[Path | str, list[str]]:
    """Four finished runs: old, old but still running, recent, old and failed."""
    db = journal_db
    sessions = []
    for _ in range(4):
        outcome, _, _ = await run_team(db, load_team(HANDOFF), snapshot_every=5)
        sessions.append(outcome.session)
    age(db, sessions[0], days=40)
    age(db, sessions[1], days=40, status="running")
    age(db, sessions[2], days=3)
    age(db, sessions[3], days=31, status="failed")
    return db, sessions


class TestPrune:
    async def test_old_ended_sessions_go_with_all_they_hold(
        self, journal_of_four: tuple[Path | str, list[str]]
    ) -> None:
        db, (old, running, recent, failed) = journal_of_four
        kept_before = {s: rows(db, s) for s in (running, recent)}
        assert all(rows(db, old)[table] for table in ("facts", "snapshots", "sessions"))

        report = prune(db, older_than=dt.timedelta(days=30), now=NOW, dry_run=False)

        assert report.sessions == (old, failed)
        assert report.facts > 0
        assert report.vacuumed
        for session in (old, failed):
            gone = rows(db, session)
            assert {table: gone[table] for table in TABLES} == dict.fromkeys(TABLES, 0)
            assert gone["chats"] > 0, "a chat URI once used stays taken"
        assert {s: rows(db, s) for s in (running, recent)} == kept_before
        reader = open_reader(db)
        assert [s.session for s in reader.sessions()] == [running, recent]
        assert reader.open(recent).run is not None  # still folds from its snapshot + facts

    async def test_a_dry_run_removes_nothing(
        self, journal_of_four: tuple[Path | str, list[str]]
    ) -> None:
        db, sessions = journal_of_four
        before = {s: rows(db, s) for s in sessions}
        report = prune(db, older_than=dt.timedelta(days=30), now=NOW, dry_run=True)
        assert report.sessions == (sessions[0], sessions[3])
        assert report.dry_run
        assert not report.vacuumed
        assert {s: rows(db, s) for s in sessions} == before

    async def test_nothing_old_enough_is_no_change(
        self, journal_of_four: tuple[Path | str, list[str]]
    ) -> None:
        db, _ = journal_of_four
        report = prune(db, older_than=dt.timedelta(days=60), now=NOW, dry_run=False)
        assert report.sessions == ()
        assert report.facts == 0

    async def test_it_runs_beside_a_writer_that_goes_on(self, journal_db: Path | str) -> None:
        """A daemon's journal stays open and writes on while a prune removes old sessions."""
        db = journal_db
        outcome, _, _ = await run_team(db, load_team(HANDOFF))
        age(db, outcome.session, days=40)
        journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            report = await trio.to_thread.run_sync(
                lambda: prune(db, older_than=dt.timedelta(days=30), now=NOW, dry_run=False)
            )
            runtime = TeamRuntime(load_team(HANDOFF), backends=ScriptedBackend, factlog=journal)
            later = await runtime.run("refund order 7")
            services.cancel_scope.cancel()
        assert report.sessions == (outcome.session,)
        sessions = open_reader(db).sessions()
        assert [(s.session, s.status) for s in sessions] == [(later.session, "completed")]

    def test_a_file_that_is_no_journal_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(FactLogError, match="no journal here"):
            prune(tmp_path / "none.db", older_than=dt.timedelta(days=1), now=NOW, dry_run=True)


@pytest.mark.daemon
class TestCommand:
    def orchestrator(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            check=False,
        )

    async def test_sessions_filters_and_prune_through_the_command(
        self, journal_of_four: tuple[Path | str, list[str]]
    ) -> None:
        db, (old, running, recent, failed) = journal_of_four
        listed = self.orchestrator("sessions", "--db", str(db), "--log-format", "console")
        header, *lines = listed.stdout.splitlines()
        assert header.split() == ["SESSION", "STATUS", "CREATED", "FACTS", "TEAM", "TITLE"]
        assert [line.split()[0] for line in lines] == [old, running, recent, failed]
        only = self.orchestrator("sessions", "--db", str(db), "--status", "failed", "--json")
        assert [s["session"] for s in json.loads(only.stdout)] == [failed]
        latest = self.orchestrator("sessions", "--db", str(db), "--limit", "2", "--json")
        assert [s["session"] for s in json.loads(latest.stdout)] == [recent, failed]
        none = self.orchestrator("sessions", "--db", str(db), "--team", "nope")
        assert none.stdout.startswith("no sessions (team nope) in ")

        # Every session here was written today: 1s old is the youngest AGE, so all ended go.
        done = self.orchestrator("prune", "--db", str(db), "--older-than", "1s", "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert set(report["sessions"]) == {old, failed, recent}
        left = self.orchestrator("sessions", "--db", str(db), "--json")
        assert [s["session"] for s in json.loads(left.stdout)] == [running]

    def test_a_bad_age_is_bad_input(self, tmp_path: Path) -> None:
        done = self.orchestrator("prune", "--db", str(tmp_path / "j.db"), "--older-than", "soon")
        assert done.returncode == 2
        assert "--older-than: invalid duration 'soon'" in done.stderr
