"""The PostgreSQL reader: its kept connections, ended by the server, are replaced."""

from __future__ import annotations

import pytest
import trio

from orchestrator.journal import (
    Journal,
    open_journal,
    open_reader,
)
from tests.support.journal import A, started, wait_all
from tests.support.postgres import end_connections


@pytest.fixture
def journal(postgres_database: str) -> Journal:
    return open_journal(postgres_database, reconnect_for=20)


class TestReaderReconnects:
    async def test_a_reader_reads_after_its_kept_connections_were_ended(
        self, postgres_database: str, journal: Journal
    ) -> None:
        """The next read after the server ended the reader's kept connections connects
        anew, and answers."""
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            services.cancel_scope.cancel()
        reader = open_reader(postgres_database)
        assert reader.has_session(A)
        end_connections(postgres_database, "orchestrator journal reader")
        assert [f.sequence for f in reader.facts(A)] == [1]
