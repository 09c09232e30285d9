"""Who runs each session (``journal/_ownership``): one contract, two databases.

A SQLite file's record locks and a PostgreSQL journal's leases are both a
:class:`SessionOwnership`; every test of :class:`TestContract` runs against each, two nodes
on one journal (on SQLite two holders in this process, which refuse each other as two
processes would). What only one of them can do (a lease lapses, a lock never does) is said
by the ownership's own timings, not by asking which database it is.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import trio

from orchestrator.base import FactLogError, RunError
from orchestrator.journal import (
    HeldElsewhere,
    Journal,
    PostgresLeases,
    SessionLocks,
    SessionOwnership,
    SoleOwnership,
    open_journal,
)
from orchestrator.sessions import Daemon
from orchestrator.spec import parse_team
from tests.support.daemon import connect, running_daemon
from tests.support.postgres import direct_sql
from tests.support.teams import ECHO

# Every test here opens a journal on a real database or runs a daemon.
pytestmark = pytest.mark.daemon

SESSION = "ahp-session:/5e55104e-0000-4000-8000-000000000001"
OTHER = "ahp-session:/5e55104e-0000-4000-8000-000000000002"


@pytest.fixture
def two_nodes(journal_db: Path | str) -> Iterator[tuple[SessionOwnership, SessionOwnership]]:
    """Nodes ``a`` and ``b`` of one journal (a SQLite file, or a PostgreSQL database), each
    its journal's ownership as the daemon and ``orchestrator run`` get it."""
    journals = [open_journal(journal_db, node=node, lease_ttl=15.0) for node in ("a", "b")]
    for journal in journals:
        journal.open()
    try:
        yield journals[0].ownership, journals[1].ownership
    finally:
        for journal in journals:
            journal.ownership.release(SESSION)
            journal.ownership.release(OTHER)
            journal.close()


def lapse(ownership: SessionOwnership, session: str) -> bool:
    """Let ``session``'s hold lapse as if its node had stopped renewing it for a whole TTL;
    False where a hold cannot lapse (a lock lasts as long as its process)."""
    if math.isinf(ownership.ttl):
        return False
    assert isinstance(ownership, PostgresLeases)
    with direct_sql(ownership.url) as connection:
        connection.execute(
            "UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session = ?",
            (session,),
        )
        connection.execute(
            "INSERT INTO sessions (session, team, title, status, created_at, updated_at, "
            "last_sequence) VALUES (?, 't', '', 'running', '', '', 0)",
            (session,),
        )
    return True


class TestContract:
    def test_each_journal_has_its_own_kind_of_ownership(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership], journal_db: Path | str
    ) -> None:
        a, _ = two_nodes
        expected = SessionLocks if isinstance(journal_db, Path) else PostgresLeases
        assert isinstance(a, expected)
        assert a.node == "a"
        assert 0 < a.renew_every <= a.ttl
        assert 0 < a.retry_every < math.inf

    def test_a_session_claimed_by_one_node_is_refused_to_the_other(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        """The first claim wins; the second is told who holds the session, in words that
        finish a sentence about it; claiming it again is holding it."""
        a, b = two_nodes
        assert a.claim(SESSION) is None
        assert a.holds(SESSION)
        assert set(a.held) == {SESSION}
        refused = b.claim(SESSION)
        assert isinstance(refused, HeldElsewhere)
        assert refused.owner in ("a", "another process")
        assert refused.description.startswith(("runs on node a", "is being run by another"))
        assert not b.holds(SESSION)
        assert set(b.held) == set()
        assert a.claim(SESSION) is None, "holding it again is holding it"
        assert a.statistics().held == 1
        assert b.statistics().held == 0

    def test_a_session_released_is_the_next_claimers(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        a, b = two_nodes
        assert a.claim(SESSION) is None
        a.release(SESSION)
        assert not a.holds(SESSION)
        a.release(SESSION)  # twice: nothing held, nothing done
        assert b.claim(SESSION) is None
        assert b.holds(SESSION)

    def test_a_session_released_with_work_left_is_the_next_claimers(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        """``keep``: due for take-over at once, not after a TTL."""
        a, b = two_nodes
        assert a.claim(SESSION) is None
        a.release(SESSION, keep=True)
        assert not a.holds(SESSION)
        assert b.claim(SESSION) is None

    def test_an_unused_session_dropped_is_free(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        a, b = two_nodes
        assert a.claim(OTHER) is None
        a.drop_unused(OTHER)
        assert not a.holds(OTHER)
        assert b.claim(OTHER) is None

    def test_a_session_held_and_renewed_is_never_lost_nor_expired(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        a, b = two_nodes
        assert a.claim(SESSION) is None
        assert a.renew() == []
        assert a.renew() == []
        assert a.holds(SESSION)
        assert SESSION not in b.expired()
        assert a.statistics().lost == 0
        assert a.epoch(OTHER) is None, "not held: nothing fences its writes"

    def test_a_session_that_lapsed_is_taken_over_and_its_old_owner_told(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        """Where a hold can lapse (a lease), another node's scan finds the session, takes
        it, and the old owner's next renewal reports it lost; a lock never lapses, so the
        other node's claim stays refused and nothing is reported."""
        a, b = two_nodes
        assert a.claim(SESSION) is None
        if not lapse(a, SESSION):
            assert b.expired() == []
            assert b.claim(SESSION) is not None
            assert a.renew() == []
            assert a.holds(SESSION)
            return
        assert b.expired() == [SESSION]
        assert b.claim(SESSION) is None
        assert a.renew() == [SESSION]
        assert not a.holds(SESSION)
        assert a.statistics().lost == 1
        error = a.lost_error(SESSION)
        assert isinstance(error, FactLogError)
        assert SESSION in error.message

    def test_a_session_forgotten_is_no_longer_held(
        self, two_nodes: tuple[SessionOwnership, SessionOwnership]
    ) -> None:
        """What a node forgets (its renewals failed for a whole TTL) it holds no more, and
        its error names the session."""
        a, _ = two_nodes
        assert a.claim(SESSION) is None
        a.forget(SESSION, why="not renewed for a whole TTL")
        assert not a.holds(SESSION)
        assert SESSION not in a.held
        assert SESSION in a.lost_error(SESSION).message


class TestSoleOwnership:
    def test_a_journal_nobody_shares_owns_what_it_asks_for(self) -> None:
        """A PostgreSQL journal opened without a node: every claim succeeds, nothing lapses
        or is lost, and its node is named all the same."""
        ownership = SoleOwnership(node="solo")
        assert ownership.claim(SESSION) is None
        assert ownership.holds(SESSION)
        assert ownership.renew() == []
        assert ownership.expired() == []
        assert ownership.epoch(SESSION) is None
        assert ownership.statistics().held == 1
        assert math.isinf(ownership.renew_every)
        ownership.release(SESSION)
        assert ownership.held == frozenset()

    def test_a_postgres_journal_without_a_node_owns_alone(self, postgres_database: str) -> None:
        journal = open_journal(postgres_database)
        assert isinstance(journal.ownership, SoleOwnership)


class TestDaemon:
    async def test_a_session_is_owned_from_its_opening_until_its_client_ends_it(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        """On either database, a session opened and never prompted is the daemon's at once
        (``/healthz`` lists it, another process is refused it), and free again once its
        client ends it."""
        other = open_journal(journal_db, node="other")  # never opened: its ownership only
        try:
            await self.owned_while_open(tmp_path, journal_db, other.ownership)
        finally:
            other.ownership.close()

    async def owned_while_open(
        self, tmp_path: Path, journal_db: Path | str, other: SessionOwnership
    ) -> None:
        async with running_daemon(tmp_path, db=journal_db) as daemon, daemon.http() as http:
            async with connect(daemon, "team=delivery") as client:
                uri = "ahp-session:/" + (await client.until_type("init"))["sessionId"]
                assert (await http.get("/healthz")).json()["owned_sessions"] == [uri]
                refused = await trio.to_thread.run_sync(other.claim, uri)
                assert refused is not None
                await client.send({"channel": "agent", "type": "end"})
                await client.until_type("session_ended")
            # Given up in the background (the node forgets it first, then tells the
            # database): both are asked until they say so.
            with trio.fail_after(10):
                while (await http.get("/healthz")).json()["owned_sessions"]:  # noqa: ASYNC110
                    await trio.sleep(0.05)
                while await trio.to_thread.run_sync(other.claim, uri) is not None:  # noqa: ASYNC110
                    await trio.sleep(0.05)
            assert other.holds(uri)
            other.release(uri)


@contextlib.asynccontextmanager
async def daemon_on(journal: Journal) -> AsyncIterator[Daemon]:
    """A daemon (no HTTP server) of the echo team on ``journal``, serving; closed after."""
    await trio.to_thread.run_sync(journal.open)
    teams = {"echo": parse_team(ECHO, file="echo.toml")}
    try:
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            async with trio.open_nursery() as nursery:
                daemon = Daemon(teams=teams, journal=journal, http=http, shutdown_grace=0.5)
                await nursery.start(daemon.serve)
                yield daemon
                nursery.cancel_scope.cancel()
            services.cancel_scope.cancel()
    finally:
        journal.close()


class TestFollowing:
    """How the daemon follows what another node or process runs: one seam
    (``sessions/_following``), chosen by the journal's ownership, whatever the database."""

    async def test_a_session_another_node_holds_runs_elsewhere(
        self, journal_db: Path | str
    ) -> None:
        """A session another node (another process on a SQLite file) holds runs elsewhere
        for the daemon's following until it lets go; one the journal has nothing of is not
        followed all the same (a page that reads it is told there is none)."""
        other = open_journal(journal_db, node="other")  # never opened: its ownership only
        try:
            async with daemon_on(open_journal(journal_db, node="a")) as daemon:
                following = daemon.following
                assert not await trio.to_thread.run_sync(following.runs_elsewhere, SESSION)
                assert await trio.to_thread.run_sync(other.ownership.claim, SESSION) is None
                assert await trio.to_thread.run_sync(following.runs_elsewhere, SESSION)
                assert await daemon.watch(SESSION) is None
                assert daemon.followed_sessions() == []
                assert following.statistics().followed == 0
                await trio.to_thread.run_sync(other.ownership.release, SESSION)
                assert not await trio.to_thread.run_sync(following.runs_elsewhere, SESSION)
        finally:
            other.ownership.close()

    async def test_a_daemon_alone_on_its_journal_follows_nothing(
        self, postgres_database: str
    ) -> None:
        """A PostgreSQL journal opened without a node id (nobody else writes it): nothing
        runs elsewhere, nothing is followed, and a session said to run elsewhere cannot be
        followed, with an error naming it."""
        async with daemon_on(open_journal(postgres_database)) as daemon:
            assert isinstance(daemon.ownership, SoleOwnership)
            following = daemon.following
            assert not await trio.to_thread.run_sync(following.runs_elsewhere, SESSION)
            assert following.run_by(SESSION) is None
            assert await following.follow_unrecorded(SESSION) is None
            assert await daemon.watch(SESSION) is None
            assert await daemon.find(SESSION) is None
            assert daemon.run_by(SESSION) is None
            assert daemon.followed_sessions() == []
            assert following.statistics().journal_looks == 0
            with pytest.raises(RunError, match=SESSION):
                await following.follow(SESSION)
