"""The SQLite journal's versions: older files migrated in one transaction, newer ones
refused untouched, a schema-3 snapshot converted to parts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.base import FactLogError
from orchestrator.core import TeamState
from orchestrator.journal import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    JournalReader,
    SqliteJournal,
    encode_state,
)
from tests.support.journal import (
    a_run_and_its_fork,
    back_to_schema_4,
    back_to_schema_7,
    run_team,
)


def file_bytes(path: Path) -> bytes:
    return path.read_bytes()


class TestVersions:
    def v1_journal(self, path: Path) -> None:
        """A journal as schema 1 wrote it, with one session and one fact."""
        connection = sqlite3.connect(path)
        schema = MIGRATIONS[1]
        assert isinstance(schema, str)
        connection.executescript(schema)
        connection.execute(
            "INSERT INTO sessions VALUES ('ahp-session:/1', 'old', 'an old run', 'completed', "
            "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1)"
        )
        fact = {
            "sequence": 1,
            "session": "ahp-session:/1",
            "channel": "ahp-session:/1",
            "at": "2026-01-01T00:00:00.000Z",
            "action": {"type": "session/titleChanged", "title": "an old run"},
        }
        connection.execute(
            "INSERT INTO facts (session, sequence, channel, at, type, fact) VALUES "
            "('ahp-session:/1', 1, 'ahp-session:/1', '2026-01-01T00:00:00.000Z', "
            "'session/titleChanged', ?)",
            (json.dumps(fact),),
        )
        connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
        connection.execute("PRAGMA user_version=1")
        connection.commit()
        connection.close()

    async def test_an_older_journal_is_migrated_and_keeps_its_facts(self, tmp_path: Path) -> None:
        db = tmp_path / "old.db"
        self.v1_journal(db)
        journal = SqliteJournal(db)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        journal._connection.close()
        (version,) = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()
        assert version == SCHEMA_VERSION
        reader = JournalReader(db)
        assert [s.title for s in reader.sessions()] == ["an old run"]
        assert [(f.type, f.origin) for f in reader.facts("ahp-session:/1")] == [
            ("session/titleChanged", None)  # written before facts kept a client's origin
        ]

    async def test_a_schema_7_journal_gets_its_forks_lineage_from_their_facts(
        self, tmp_path: Path
    ) -> None:
        """Schema 8 keeps a fork's lineage in its session row; the forks of an older file get
        theirs from their team/sessionForked fact when it is migrated."""
        db = tmp_path / "journal.db"
        source, fork, sequence = await a_run_and_its_fork(db)
        back_to_schema_7(sqlite3.connect(db))
        journal = SqliteJournal(db)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        journal._connection.close()
        by_uri = {s.session: s for s in JournalReader(db).sessions()}
        assert (by_uri[fork].forked_from, by_uri[fork].forked_at) == (source, sequence)
        assert by_uri[source].forked_from is None

    async def test_a_failed_migration_leaves_the_file_as_it_was(self, tmp_path: Path) -> None:
        """The migration is one transaction: one that cannot complete changes nothing."""
        db = tmp_path / "old.db"
        self.v1_journal(db)
        connection = sqlite3.connect(db)
        connection.execute("CREATE TABLE snapshots (x)")  # makes migration 2 fail half-way
        connection.commit()
        connection.close()
        with pytest.raises(FactLogError, match="snapshots already exists"):
            await trio.to_thread.run_sync(SqliteJournal(db).open)
        connection = sqlite3.connect(db)
        assert connection.execute("PRAGMA user_version").fetchone() == (1,)
        columns = [row[1] for row in connection.execute("PRAGMA table_info(sessions)")]
        assert "team_toml" not in columns

    async def test_a_newer_journal_is_refused_untouched(self, tmp_path: Path) -> None:
        db = tmp_path / "new.db"
        connection = sqlite3.connect(db)
        connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        connection.execute("CREATE TABLE future (x)")
        connection.commit()
        connection.close()
        before = file_bytes(db)
        with pytest.raises(FactLogError, match="written by a newer orchestrator"):
            await trio.to_thread.run_sync(SqliteJournal(db).open)
        with pytest.raises(FactLogError, match="newer orchestrator"):
            JournalReader(db).sessions()
        assert file_bytes(db) == before
        assert not db.with_name("new.db-wal").exists()

    async def test_a_schema_3_snapshot_is_converted_to_parts(self, tmp_path: Path) -> None:
        """A schema-3 journal's whole-state snapshot becomes parts when the file is migrated,
        and the session opens from them as from a fold."""
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db, snapshot_every=20)
        reader = JournalReader(db)
        facts = reader.facts(runtime.session)
        at = facts[len(facts) // 2 - 1].sequence
        connection = sqlite3.connect(db)
        back_to_schema_4(connection)
        connection.execute("DROP TABLE snapshot_parts")
        connection.execute("DELETE FROM snapshots")
        old = encode_state(TeamState.fold(runtime.session, facts[: len(facts) // 2]))
        connection.execute(
            "INSERT INTO snapshots (session, sequence, state) VALUES (?, ?, ?)",
            (runtime.session, at, json.dumps(old)),
        )
        connection.execute("PRAGMA user_version=3")
        connection.commit()
        connection.close()
        journal = SqliteJournal(db)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        journal._connection.close()
        connection = sqlite3.connect(db)
        assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        (header,) = connection.execute("SELECT state FROM snapshots").fetchone()
        assert json.loads(header)["sequence"] == at
        (parts,) = connection.execute("SELECT count(*) FROM snapshot_parts").fetchone()
        assert parts > 0
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, facts)
        assert opened.chats == folded.chats
        assert opened.approvals == folded.approvals
        assert opened.session == folded.session
