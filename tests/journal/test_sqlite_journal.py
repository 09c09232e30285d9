"""The SQLite journal: what ``--durability`` sets, and a full disk stopping the run."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

import orchestrator
from orchestrator.core import RunStatus, TeamState
from orchestrator.journal import (
    Durability,
    JournalReader,
    SqliteJournal,
)
from orchestrator.sessions import fork_session
from tests.support.journal import run_team
from tests.support.teams import fan_team


class TestDurability:
    @pytest.mark.parametrize("durability", list(Durability))
    async def test_each_durability_sets_sqlite_to_match(
        self, tmp_path: Path, durability: Durability
    ) -> None:
        journal = SqliteJournal(tmp_path / "journal.db", durability=durability)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        (level,) = journal._connection.execute("PRAGMA synchronous").fetchone()
        assert level == {Durability.POWER: 2, Durability.PROCESS: 1}[durability]
        (mode,) = journal._connection.execute("PRAGMA journal_mode").fetchone()
        assert mode == "wal"
        journal._connection.close()


class TestFailures:
    async def test_a_full_disk_stops_the_run_and_keeps_what_was_acknowledged(
        self, tmp_path: Path
    ) -> None:
        """When the journal cannot grow, the run stops with SQLite's reason; the file holds
        every acknowledged fact, in order, and nothing half-written."""
        db = tmp_path / "journal.db"
        outcome, runtime, _ = await run_team(db, max_bytes=96 * 1024)
        assert outcome.status is RunStatus.FAILED
        assert "database or disk is full" in outcome.error
        facts = JournalReader(db).facts(runtime.session)
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        assert len(facts) == runtime.state.last_sequence
        assert TeamState.fold(runtime.session, facts).chats == runtime.state.chats


class TestCheckpoints:
    async def test_a_fork_is_acknowledged_before_the_checkpoint_it_sets_off(
        self, tmp_path: Path
    ) -> None:
        """A large group (a fork) commits with SQLite's automatic checkpoint off; the
        checkpoint follows once its ticket is completed, then the automatic one is back on.
        The fork is whole in the file."""
        db = tmp_path / "journal.db"
        team = orchestrator.parse_team(fan_team(1), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        journal = SqliteJournal(db)
        seen: list[str] = []
        async with trio.open_nursery() as nursery:
            await nursery.start(journal.serve)
            assert journal._connection is not None
            journal._connection.set_trace_callback(seen.append)
            first = await fork_session(journal, source.session)
            # The writer is past the first fork's checkpoint once the second is written.
            await fork_session(journal, source.session)
            nursery.cancel_scope.cancel()
        commits = [s for s in seen if s == "COMMIT" or "wal_" in s]
        start = commits.index("PRAGMA wal_autocheckpoint=0")
        assert commits[start : start + 4] == [
            "PRAGMA wal_autocheckpoint=0",
            "COMMIT",
            "PRAGMA wal_checkpoint(PASSIVE)",
            "PRAGMA wal_autocheckpoint=1000",
        ]
        # Each fork's, the second's too (the writer finished it before it stopped); the
        # team file's rows are small groups, committed as ever.
        assert commits.count("PRAGMA wal_autocheckpoint=0") == 2
        assert commits.count("PRAGMA wal_checkpoint(PASSIVE)") == 2
        wal = [s for s in commits if s != "COMMIT"]
        assert wal == 2 * [
            "PRAGMA wal_autocheckpoint=0",
            "PRAGMA wal_checkpoint(PASSIVE)",
            "PRAGMA wal_autocheckpoint=1000",
        ]
        reader = JournalReader(db)
        assert len(reader.facts(first.session)) == first.sequence + 1
