"""The journal's interface on both databases: a run written through ``open_journal``
reads back through ``open_reader`` as it was recorded."""

from __future__ import annotations

from pathlib import Path

from orchestrator.core import RunStatus, build_graph
from orchestrator.journal import open_reader
from tests.support.journal import (
    DELIVERY,
    run_team,
)


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
