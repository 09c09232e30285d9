"""The PostgreSQL journal's writer: what ``--durability`` sets on its connection."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.journal import (
    Durability,
    PostgresJournal,
)


class TestDurability:
    @pytest.mark.parametrize(("durability", "expected"), [("power", "on"), ("process", "off")])
    async def test_each_durability_sets_the_writer_s_synchronous_commit(
        self, postgres_database: str, durability: str, expected: str
    ) -> None:
        journal = PostgresJournal(postgres_database, durability=Durability(durability))
        await trio.to_thread.run_sync(journal.open)
        try:
            (setting,) = journal._connection.execute("SHOW synchronous_commit").fetchone()
        finally:
            journal.close()
        assert setting == expected
