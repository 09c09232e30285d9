"""The journal's reader: a missing journal, and sessions opened from their snapshots
(on both databases where a test takes ``journal_db``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from orchestrator.base import FactLogError, PeerProtocolError
from orchestrator.core import TeamState
from orchestrator.journal import (
    JournalReader,
    open_reader,
)
from orchestrator.journal._reader import _snapshot
from tests.support.journal import run_team
from tests.support.postgres import direct_sql


class TestReading:
    def test_reading_a_missing_journal_says_how_to_make_one(self, tmp_path: Path) -> None:
        with pytest.raises(FactLogError, match="no journal here"):
            JournalReader(tmp_path / "nope.db").sessions()


class TestSnapshots:
    async def test_opening_a_session_starts_from_its_snapshot(self, journal_db: Path | str) -> None:
        """With snapshots every 20 facts the latest is kept; opening from it equals a fold."""
        db = journal_db
        _, runtime, journal = await run_team(db, snapshot_every=20)
        assert journal.statistics().snapshots >= 3
        with direct_sql(db) as connection:
            rows = connection.execute("SELECT sequence FROM snapshots").fetchall()
        assert len(rows) == 1
        assert rows[0][0] >= runtime.state.last_sequence - 20
        reader = open_reader(db)
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, reader.facts(runtime.session))
        assert opened.chats == folded.chats
        assert opened.tasks == folded.tasks
        assert opened.approvals == folded.approvals
        assert opened.session == folded.session
        assert opened.run == folded.run
        assert opened.last_sequence == folded.last_sequence

    async def test_a_part_newer_than_its_header_is_refused(self, tmp_path: Path) -> None:
        """Header and parts are written in one transaction and read in one; a part newer
        than the header (a snapshot read half) would fold the facts after it twice."""
        db = tmp_path / "journal.db"
        await run_team(db, snapshot_every=20)
        connection = sqlite3.connect(db)
        (sequence, header) = connection.execute("SELECT sequence, state FROM snapshots").fetchone()
        parts = connection.execute(
            "SELECT kind, name, position, sequence, data FROM snapshot_parts"
        ).fetchall()
        assert _snapshot(sequence, header, parts).last_sequence == sequence
        newer = [
            (*part[:3], sequence + 1, part[4]) if part[0] == "chat" else part for part in parts
        ]
        with pytest.raises(PeerProtocolError, match="a part is newer than its snapshot"):
            _snapshot(sequence, header, newer)

    @pytest.mark.parametrize(
        "damage",
        [
            "UPDATE snapshots SET state = '{\"format\": 99}'",
            "UPDATE snapshot_parts SET data = 'not json' WHERE kind = 'turns'",
            "DELETE FROM snapshot_parts WHERE kind = 'turns'",
            "UPDATE snapshot_parts SET data = '{}' WHERE kind = 'task'",
            "UPDATE snapshot_parts SET sequence = sequence + 1000 WHERE kind = 'chat'",
        ],
    )
    async def test_a_damaged_snapshot_is_only_a_cache(
        self, journal_db: Path | str, damage: str
    ) -> None:
        _, runtime, _ = await run_team(journal_db, snapshot_every=20)
        with direct_sql(journal_db) as connection:
            connection.execute(damage)
        opened = open_reader(journal_db).open(runtime.session)
        assert opened.chats == runtime.state.chats
        assert opened.last_sequence == runtime.state.last_sequence


class TestChatFacts:
    async def test_one_chats_facts_and_the_kinds_asked_for_in_order(
        self, journal_db: Path | str
    ) -> None:
        """chat_facts reads the facts on one chat's channel and those of the types asked
        for on any channel, in order: of what facts() reads, those and no other."""
        _, runtime, _ = await run_team(journal_db)
        reader = open_reader(journal_db)
        every = reader.facts(runtime.session)
        chats = {f.channel for f in every if f.channel.startswith("ahp-chat:")}
        assert len(chats) >= 2
        kinds = {"team/taskCreated", "team/runFinished"}
        for chat in chats:
            got = reader.chat_facts(runtime.session, chat, kinds)
            assert got == [f for f in every if f.channel == chat or f.type in kinds]
            assert any(f.channel == chat for f in got)
            assert any(f.type == "team/runFinished" for f in got)
        assert reader.chat_facts(runtime.session, "ahp-chat:/nobody", ()) == []
