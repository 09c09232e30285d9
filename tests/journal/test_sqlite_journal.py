"""The SQLite journal: what ``--durability`` sets, and a full disk stopping the run."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.core import RunStatus, TeamState
from orchestrator.journal import (
    Durability,
    JournalReader,
    SqliteJournal,
)
from tests.support.journal import run_team


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
