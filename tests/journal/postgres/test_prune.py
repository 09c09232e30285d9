"""Pruning a PostgreSQL journal: a database without one, and sessions live nodes hold."""

from __future__ import annotations

import datetime as dt

import pytest

from orchestrator.base import FactLogError
from orchestrator.journal import PostgresLeases, open_journal, open_reader, prune
from orchestrator.spec import load_team
from tests.support.journal import HANDOFF, NOW, age, run_team
from tests.support.postgres import direct_sql


class TestPrune:
    def test_a_database_that_is_no_journal_is_refused(self, postgres_database: str) -> None:
        with pytest.raises(FactLogError, match="no journal here"):
            prune(postgres_database, older_than=dt.timedelta(days=1), now=NOW, dry_run=True)


class TestPruneBesideNodes:
    async def test_a_session_a_live_node_holds_is_not_pruned(self, postgres_database: str) -> None:
        """Several daemons on one database: an old ended session whose lease a live node
        holds (a client on it) stays, however old; once the lease is given up (or expired)
        the next prune removes it, and its lease row with it."""
        db = postgres_database
        held, free = [(await run_team(db, load_team(HANDOFF)))[0].session for _ in range(2)]
        for session in (held, free):
            age(db, session, days=40)
        node = open_journal(db, node="a", lease_ttl=60)
        node.open()
        try:
            leases = node.ownership
            assert isinstance(leases, PostgresLeases)
            assert leases.acquire(held).owner == "a"
            dry = prune(db, older_than=dt.timedelta(days=30), now=NOW, dry_run=True)
            assert dry.sessions == (free,)
            first = prune(db, older_than=dt.timedelta(days=30), now=NOW, dry_run=False)
            assert first.sessions == (free,)
            assert open_reader(db).has_session(held)
            leases.release(held)
            second = prune(db, older_than=dt.timedelta(days=30), now=NOW, dry_run=False)
            assert second.sessions == (held,)
            assert leases.lease(held) is None
            with direct_sql(db) as connection:
                (leases,) = connection.execute(
                    "SELECT count(*) FROM session_leases WHERE session = ?", (held,)
                ).fetchone()
            assert leases == 0
        finally:
            node.close()
