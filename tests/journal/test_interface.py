"""The journal's interface on both databases: which database ``--db`` names and the
journal, reader and ownership made for it (opening nothing), and a run written through
``open_journal`` that reads back through ``open_reader`` as it was recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.core import RunStatus, build_graph
from orchestrator.journal import (
    JournalReader,
    PostgresJournal,
    PostgresLeases,
    PostgresReader,
    SessionLocks,
    SoleOwnership,
    SqliteJournal,
    db_location,
    open_journal,
    open_reader,
)
from tests.support.journal import DELIVERY, run_team


class TestWriteAndRead:
    async def test_a_run_reads_back_as_it_was_recorded(self, journal_db: Path | str) -> None:
        """Every fact is on disk, in order; the session is listed with its status and title;
        opening it gives the state the runtime had; the graph checks clean."""
        outcome, runtime, journal = await run_team(journal_db)
        assert outcome.status is RunStatus.COMPLETED
        reader = open_reader(journal_db)
        facts = reader.facts(runtime.session)
        assert [f.sequence for f in facts] == list(range(1, runtime.state.last_sequence + 1))
        (info,) = reader.sessions()
        assert (info.session, info.status, info.title, info.team) == (
            runtime.session,
            "completed",
            "Ship the release notes",
            "delivery",
        )
        assert info.last_sequence == len(facts)
        assert info.team_file == str(DELIVERY)
        assert reader.team_toml(runtime.session)[1] == DELIVERY.read_text()
        opened = reader.open(runtime.session)
        assert opened.chats == runtime.state.chats
        assert opened.tasks == runtime.state.tasks
        assert build_graph(facts).check() == []
        stats = journal.statistics()
        assert stats.facts == len(facts)
        assert stats.transactions <= stats.batches


URL = "postgresql://me:secret@127.0.0.1:1/journal"  # nobody listens: nothing may connect


class TestWhichDatabase:
    @pytest.mark.parametrize(
        "text", [URL, "postgres://db.example/journal", "postgresql://me@db//j?sslmode=require"]
    )
    def test_a_postgresql_url_is_kept_as_text(self, text: str) -> None:
        assert db_location(text) == text, "a Path would fold its //"

    @pytest.mark.parametrize("text", ["journal.db", "postgresql.db", "./postgresql:/x.db"])
    def test_anything_else_is_a_sqlite_file_s_path(self, text: str) -> None:
        assert db_location(text) == Path(text)

    def test_a_url_gets_a_postgresql_journal_leased_to_its_node(self) -> None:
        journal = open_journal(URL, node="node-a", lease_ttl=5, reconnect_for=1)
        assert isinstance(journal, PostgresJournal)
        assert isinstance(journal.ownership, PostgresLeases)
        assert (journal.ownership.node, journal.ownership.ttl) == ("node-a", 5.0)
        assert journal.source == "postgresql://me:***@127.0.0.1:1/journal"
        alone = open_journal(URL).ownership
        assert isinstance(alone, SoleOwnership), "without a node, the process's alone"
        assert isinstance(open_reader(URL), PostgresReader)

    def test_a_path_gets_a_sqlite_journal_locked_to_its_process(self, tmp_path: Path) -> None:
        journal = open_journal(str(tmp_path / "journal.db"), node="node-a")
        assert isinstance(journal, SqliteJournal)
        assert isinstance(journal.ownership, SessionLocks)
        assert journal.ownership.node == "node-a"
        assert type(open_reader(tmp_path / "journal.db")) is JournalReader
        assert list(tmp_path.iterdir()) == [], "nothing opened"
