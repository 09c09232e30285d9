"""Session leases on a PostgreSQL journal (issue 21): one owner per running session, and
the epoch fence on every write.

The lease clock is given (``now=``): expiry is a matter of the database's timestamps, and a
test says which instant each node acts at instead of waiting for it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import trio

from orchestrator.base import FactLogError
from orchestrator.journal import Journal, PostgresLeases, SoleOwnership, open_journal, open_reader
from tests.support.facts import SESSION, facts
from tests.support.postgres import direct_sql

T0 = dt.datetime(2026, 11, 27, 4, 0, tzinfo=dt.UTC)
TTL = 15.0


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def journal_of(db: str, node: str) -> Journal:
    journal = open_journal(db, node=node, lease_ttl=TTL)
    journal.open()  # the schema, migrated
    return journal


def leases_of(journal: Journal) -> PostgresLeases:
    assert isinstance(journal.ownership, PostgresLeases)
    return journal.ownership


@pytest.fixture
def two_nodes(postgres_database: str) -> Any:
    a, b = journal_of(postgres_database, "a"), journal_of(postgres_database, "b")
    try:
        yield leases_of(a), leases_of(b)
    finally:
        a.close()
        b.close()


def running_session(db: str, session: str = SESSION) -> None:
    with direct_sql(db) as connection:
        connection.execute(
            "INSERT INTO sessions (session, team, title, status, created_at, updated_at, "
            "last_sequence) VALUES (?, 't', '', 'running', '', '', 0)",
            (session,),
        )


class TestOwnership:
    def test_a_session_has_one_owner_until_its_lease_expires(self, two_nodes: Any) -> None:
        """A holds the lease; B is refused (and told who holds it) until the TTL passed,
        then takes it with the next epoch, and A's renewal finds it lost."""
        a, b = two_nodes
        first = a.acquire(SESSION, now=at(0))
        assert (first.owner, first.epoch, first.expires_at) == ("a", 1, at(TTL))
        refused = b.acquire(SESSION, now=at(TTL - 0.001))
        assert (refused.owner, refused.epoch) == ("a", 1)
        assert not b.holds(SESSION)
        taken = b.acquire(SESSION, now=at(TTL))
        assert (taken.owner, taken.epoch) == ("b", 2)
        assert a.renew(now=at(TTL + 1)) == [SESSION]
        assert not a.holds(SESSION)
        assert a.held == {}
        assert b.held == {SESSION: 2}
        assert a.statistics().lost == 1
        assert b.statistics().lost == 0

    def test_a_renewed_lease_stays_its_owners(self, two_nodes: Any) -> None:
        a, b = two_nodes
        a.acquire(SESSION, now=at(0))
        assert a.renew(now=at(10)) == []
        assert b.acquire(SESSION, now=at(20)).owner == "a"
        assert b.acquire(SESSION, now=at(10 + TTL)).owner == "b"

    def test_a_node_id_takes_its_own_lease_again_under_a_new_epoch(
        self, postgres_database: str
    ) -> None:
        """A daemon restarted with the same node id takes its sessions up at once; the
        epoch moves on, so whatever the old process wrote under the old one is fenced."""
        old, new = journal_of(postgres_database, "a"), journal_of(postgres_database, "a")
        try:
            assert leases_of(old).acquire(SESSION, now=at(0)).epoch == 1
            again = leases_of(new).acquire(SESSION, now=at(1))
            assert (again.owner, again.epoch) == ("a", 2)
            assert leases_of(old).renew(now=at(2)) == [SESSION]
        finally:
            old.close()
            new.close()

    def test_a_released_lease_is_free_and_a_kept_one_is_due_for_take_over(
        self, postgres_database: str, two_nodes: Any
    ) -> None:
        a, b = two_nodes
        running_session(postgres_database)
        a.acquire(SESSION, now=at(0))
        assert b.expired(now=at(1)) == []
        a.release(SESSION, keep=True)  # it still has work: any node takes it at once
        assert a.held == {}
        assert b.expired(now=at(1)) == [SESSION]
        assert b.acquire(SESSION, now=at(1)).owner == "b"
        b.release(SESSION)  # idle or ended: the row goes
        assert b.lease(SESSION) is None
        assert a.expired(now=at(100)) == []

    def test_expired_leases_of_sessions_that_ended_are_cleared(
        self, postgres_database: str, two_nodes: Any
    ) -> None:
        a, b = two_nodes
        running_session(postgres_database)
        a.acquire(SESSION, now=at(0))
        with direct_sql(postgres_database) as connection:
            connection.execute("UPDATE sessions SET status = 'completed'")
        assert b.expired(now=at(TTL)) == []
        assert b.lease(SESSION) is None

    def test_a_stream_that_is_no_session_is_left_to_its_waiting_nodes(self, two_nodes: Any) -> None:
        """A background teammate's stream has no sessions row: its expired lease is neither
        listed for take-over (nodes wait for it themselves) nor cleared (its epochs grow)."""
        a, b = two_nodes
        stream = "ahp-teammate:/nightly/audit"
        a.acquire(stream, now=at(0))
        assert b.expired(now=at(TTL)) == []
        assert b.acquire(stream, now=at(TTL)).epoch == 2

    def test_a_node_id_must_be_given_and_bounded(self, postgres_database: str) -> None:
        with pytest.raises(FactLogError, match="node id must be 1 to 200"):
            PostgresLeases(postgres_database, node="")
        with pytest.raises(FactLogError, match="TTL must be above 0"):
            PostgresLeases(postgres_database, node="a", ttl=0)


class TestStalledWriter:
    def test_a_take_over_waits_a_third_of_the_ttl_for_a_stalled_writer_not_forever(
        self, postgres_database: str
    ) -> None:
        """A writer stalled inside its transaction holds its lease rows (the fence): a
        node trying to take the session over gives up after a third of the TTL with an
        error saying so (it tries again at its next scan), so its own renewals go on."""
        a = journal_of(postgres_database, "a")
        b = PostgresLeases(postgres_database, node="b", ttl=0.3)
        try:
            leases_of(a).acquire(SESSION, now=at(0))
            with direct_sql(postgres_database) as stalled:
                stalled.execute("BEGIN")
                stalled.execute("SELECT * FROM session_leases FOR SHARE")
                with pytest.raises(FactLogError, match="lock timeout"):
                    b.acquire(SESSION, now=at(TTL))
                stalled.execute("ROLLBACK")
            assert b.acquire(SESSION, now=at(TTL)).owner == "b"
        finally:
            a.close()
            b.close()

    def test_a_daemons_writer_may_idle_in_a_transaction_for_the_ttl_at_most(
        self, postgres_database: str
    ) -> None:
        """Past that the server ends its connection (and the rows it holds are free): the
        journal fails as when its connection is lost; others take its sessions over."""
        journal = open_journal(postgres_database, node="a", lease_ttl=2.5)
        journal.open()
        try:
            connection = journal._connection  # type: ignore[attr-defined]
            (setting,) = connection.execute("SHOW idle_in_transaction_session_timeout").fetchone()
        finally:
            journal.close()
        assert setting == "2500ms"


class TestFence:
    async def test_a_node_that_lost_its_lease_cannot_append(self, postgres_database: str) -> None:
        """A writes facts 1-2; B takes the session over; A's next batch fails with "lease
        lost" and A refuses the session from then on; B appends 3-4 after what it read:
        the log has each sequence once, B's after A's, none lost."""
        a, b = journal_of(postgres_database, "a"), journal_of(postgres_database, "b")
        async with trio.open_nursery() as nursery:
            await nursery.start(a.serve)
            await nursery.start(b.serve)
            leases_of(a).acquire(SESSION, now=at(0))
            ticket = a.submit(facts(1, 2))
            await ticket.wait()
            assert ticket.error is None
            assert leases_of(b).acquire(SESSION, now=at(TTL)).owner == "b"
            read = await trio.to_thread.run_sync(b.reader.facts, SESSION)
            assert [f.sequence for f in read] == [1, 2]
            lost = a.submit(facts(3, 1))
            await lost.wait()
            assert lost.error is not None
            assert "lease lost: node a no longer owns session" in lost.error.message
            assert not leases_of(a).holds(SESSION)
            assert a.session_failed(SESSION) is None, "A may take it up again later"
            ticket = b.submit(facts(3, 2))
            await ticket.wait()
            assert ticket.error is None
            assert a.failed is None  # the journals go on
            assert b.failed is None
            nursery.cancel_scope.cancel()
        written = open_reader(postgres_database).facts(SESSION)
        assert [(f.sequence, getattr(f.action, "title", None)) for f in written] == [
            (n, f"title {n}") for n in range(1, 5)
        ]

    async def test_a_node_that_lost_a_session_may_take_it_up_again_later(
        self, postgres_database: str
    ) -> None:
        """Each batch carries the epoch it was submitted under: A's batch after losing the
        session is kept out; once B gave the session up A takes it again under a new epoch
        (epochs only grow, even across a release) and writes after B."""
        a, b = journal_of(postgres_database, "a"), journal_of(postgres_database, "b")
        async with trio.open_nursery() as nursery:
            await nursery.start(a.serve)
            await nursery.start(b.serve)
            leases_of(a).acquire(SESSION, now=at(0))
            await a.submit(facts(1, 1)).wait()
            leases_of(b).acquire(SESSION, now=at(TTL))
            stale = a.submit(facts(2, 1))  # under epoch 1
            await stale.wait()
            assert stale.error is not None
            assert "lease lost" in stale.error.message
            await b.submit(facts(2, 1)).wait()
            leases_of(b).release(SESSION)
            again = leases_of(a).acquire(SESSION, now=at(TTL + 1))
            assert (again.owner, again.epoch) == ("a", 3)
            fresh = a.submit(facts(3, 1))
            await fresh.wait()
            assert fresh.error is None
            nursery.cancel_scope.cancel()
        assert [f.sequence for f in open_reader(postgres_database).facts(SESSION)] == [1, 2, 3]

    async def test_a_session_never_leased_is_not_written(self, postgres_database: str) -> None:
        """A daemon's journal writes only the sessions its node holds."""
        a = journal_of(postgres_database, "a")
        async with trio.open_nursery() as nursery:
            await nursery.start(a.serve)
            ticket = a.submit(facts(1, 1))
            await ticket.wait()
            assert ticket.error is not None
            assert "lease lost" in ticket.error.message
            nursery.cancel_scope.cancel()
        assert open_reader(postgres_database).facts(SESSION) == []

    async def test_a_journal_without_a_node_has_no_leases(self, postgres_database: str) -> None:
        """``orchestrator run --db postgresql://`` (no node): one writer, no fence."""
        journal = open_journal(postgres_database)
        assert isinstance(journal.ownership, SoleOwnership)
        async with trio.open_nursery() as nursery:
            await nursery.start(journal.serve)
            ticket = journal.submit(facts(1, 1))
            await ticket.wait()
            assert ticket.error is None
            nursery.cancel_scope.cancel()
