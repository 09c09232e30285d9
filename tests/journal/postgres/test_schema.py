"""The PostgreSQL journal's schema: its migrations table, two nodes creating it at
once, and a newer journal refused."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import trio
import trio.testing

from orchestrator.base import FactLogError
from orchestrator.journal import (
    PG_SCHEMA_VERSION,
    open_journal,
    open_reader,
)
from orchestrator.journal.postgres._schema import PG_MIGRATIONS, schema_version
from tests.support.journal import a_run_and_its_fork, pg_back_to_version_4
from tests.support.postgres import direct_sql


class TestPostgresSchema:
    async def test_two_nodes_opening_a_new_database_at_once_create_it_once(
        self, postgres_database: str
    ) -> None:
        journals = [open_journal(postgres_database) for _ in range(4)]
        async with trio.open_nursery() as nursery:
            for journal in journals:
                nursery.start_soon(trio.to_thread.run_sync, journal.open)
        for journal in journals:
            journal.close()
        with direct_sql(postgres_database) as connection:
            versions = connection.execute("SELECT version FROM journal_migrations").fetchall()
        assert versions == [(version,) for version in range(1, PG_SCHEMA_VERSION + 1)]
        assert open_reader(postgres_database).sessions() == []

    def test_a_migration_committed_between_its_two_questions_is_a_journal(
        self, postgres_database: str
    ) -> None:
        """Opening asks whether the migrations table is there, then, if not, whether a
        journal's tables are: another node's migration (one transaction) committing between
        the two made a new journal look like a foreign database (a flaky refusal when two
        daemons start on a new database at once)."""

        class CommitsTheOtherAfterOneQuestion:
            def __init__(self, connection: Any, other: Any) -> None:
                self.connection, self.other, self.asked = connection, other, 0

            def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
                found = self.connection.execute(sql, params)
                self.asked += 1
                if self.asked == 1:
                    self.other.execute("COMMIT")
                return found

        with direct_sql(postgres_database) as other, direct_sql(postgres_database) as here:
            other.execute("BEGIN")
            other.execute("CREATE TABLE journal_migrations (version integer PRIMARY KEY)")
            for target in range(1, PG_SCHEMA_VERSION + 1):
                for statement in PG_MIGRATIONS[target]:
                    other.execute(statement)
                other.execute("INSERT INTO journal_migrations (version) VALUES (?)", (target,))
            asking = CommitsTheOtherAfterOneQuestion(here, other)
            assert schema_version(asking, postgres_database) == PG_SCHEMA_VERSION
            assert asking.asked >= 3, "the first question was asked before the commit"

    async def test_a_newer_journal_is_refused_untouched(self, postgres_database: str) -> None:
        journal = open_journal(postgres_database)
        await trio.to_thread.run_sync(journal.open)
        journal.close()
        with direct_sql(postgres_database) as connection:
            connection.execute(
                "INSERT INTO journal_migrations (version) VALUES (?)", (PG_SCHEMA_VERSION + 1,)
            )
        for opening in (
            open_journal(postgres_database).open,
            open_reader(postgres_database).sessions,
        ):
            with pytest.raises(FactLogError, match="written by a newer orchestrator"):
                opening()

    async def test_a_version_4_journal_gets_its_forks_lineage_from_their_facts(
        self, postgres_database: str
    ) -> None:
        """Version 5 keeps a fork's lineage in its session row; the forks of an older
        database get theirs from their team/sessionForked fact when it is migrated."""
        source, fork, sequence = await a_run_and_its_fork(postgres_database)
        with direct_sql(postgres_database) as connection:
            pg_back_to_version_4(connection)
        journal = open_journal(postgres_database)
        await trio.to_thread.run_sync(journal.open)
        journal.close()
        by_uri = {s.session: s for s in open_reader(postgres_database).sessions()}
        assert (by_uri[fork].forked_from, by_uri[fork].forked_at) == (source, sequence)
        assert by_uri[source].forked_from is None
