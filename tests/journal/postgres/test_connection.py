"""A PostgreSQL journal outlives its server's restart (issue 21): a lost connection pauses
the writer, which connects again, reads back what its lost transaction committed and
writes the rest (no fact lost, none twice); readers and leases reconnect too; past
``reconnect_for`` the journal fails, saying the database was unreachable.

Tests that stop or restart the server take a cluster of their own (``own_postgres_server``);
those that end one connection (``pg_terminate_backend``) share the test process's. The
writer is a thread and the server a process: those tests wait in real time (bounded by
``fail_after``); the back-off itself is tested on a fake clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import structlog
import trio
from hypothesis import given
from hypothesis import strategies as st
from psycopg.errors import _sqlcodes  # every SQLSTATE psycopg knows, with its class

from orchestrator.base import FactLogError
from orchestrator.core import RunStatus, build_graph
from orchestrator.journal import (
    Journal,
    LeaseLostError,
    PostgresJournal,
    PostgresLeases,
    open_journal,
    open_reader,
)
from orchestrator.journal.postgres._connection import (
    PgConnection,
    environmental,
    redacted,
    transient,
)
from orchestrator.runtime import TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.server import ServeConfig
from orchestrator.sessions import Limits
from orchestrator.spec import load_team
from tests.support.daemon import connect, running_daemon
from tests.support.journal import DELIVERY, A, B, facts_of, started, view, wait_all
from tests.support.postgres import PostgresServer, direct_sql, end_connections
from tests.support.teams import APPROVER

#: Every SQLSTATE psycopg has an error class for (its table also holds them by name).
SQLSTATES = sorted(code for code in _sqlcodes if len(code) == 5 and not code.isalpha())


def events(logs: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


# ── sorting the errors ───────────────────────────────────────────────────


class TestErrorSorting:
    @given(st.sampled_from(SQLSTATES))
    def test_only_the_connections_loss_is_transient(self, sqlstate: str) -> None:
        """An error with a SQLSTATE is transient exactly when it is the connection's
        (class 08) or the server going away (shut down, crashed, starting); every transient
        one failed the journal before (it is environmental too), so no fault of one item
        (a constraint, bad text) is ever retried on a new connection."""
        error = _sqlcodes[sqlstate]("message")
        assert error.sqlstate == sqlstate
        expected = sqlstate.startswith("08") or sqlstate in ("57P01", "57P02", "57P03")
        assert transient(error) is expected
        if expected:
            assert environmental(error)

    def test_a_connection_that_answered_nothing_is_lost(self) -> None:
        """No SQLSTATE (the socket closed, the connection found closed): lost. What is not
        the driver's (a lease fence, a bug) never is."""
        assert transient(psycopg.OperationalError("server closed the connection unexpectedly"))
        assert not transient(psycopg.ProgrammingError("no results to fetch"))
        assert not transient(LeaseLostError("lease lost", source="db"))
        assert not transient(FactLogError("anything", source="db"))
        assert not transient(ValueError("x"))

    def test_the_fatal_faults_of_the_server_are_not_transient(self) -> None:
        """A full disk, a read-only database, no privilege: a new connection meets them
        again; the journal fails at once, as before."""
        for sqlstate in ("53100", "25006", "42501"):
            error = _sqlcodes[sqlstate]("message")
            assert environmental(error)
            assert not transient(error)


# ── one connection ended (the shared cluster) ─────────────────────────────


@pytest.fixture
def journal(postgres_database: str) -> Journal:
    return open_journal(postgres_database, reconnect_for=20)


class TestTheWriterReconnects:
    async def test_a_writer_whose_connection_was_ended_goes_on(
        self, postgres_database: str, journal: Journal
    ) -> None:
        """An administrator ends the writer's connection between two transactions: the
        next batches wait while it reconnects, then commit; nothing fails or is lost, and
        the loss and the reconnection are logged once each."""
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            end_connections(postgres_database, "orchestrator journal writer")
            with structlog.testing.capture_logs() as logs:
                tickets = [journal.submit([view(A, 2)]), journal.submit([started(B)])]
                await wait_all(*tickets)
            assert [t.error for t in tickets] == [None, None]
            assert journal.failed is None
            assert journal.reconnecting is None
            services.cancel_scope.cancel()
        assert [f.sequence for f in open_reader(postgres_database).facts(A)] == [1, 2]
        assert [f.sequence for f in open_reader(postgres_database).facts(B)] == [1]
        assert len(events(logs, "journal connection lost: reconnecting")) == 1
        (reconnected,) = events(logs, "journal reconnected")
        assert reconnected["committed"] == 0

    @pytest.mark.parametrize("committed", [True, False], ids=["after-commit", "before-commit"])
    async def test_a_commit_whose_outcome_was_lost_is_read_back_not_written_twice(
        self, postgres_database: str, committed: bool
    ) -> None:
        """The connection drops during a group's ``COMMIT``: after the server committed it
        (the answer lost), or before. The writer reads back what is stored: the committed
        group's batches are acknowledged as they are (written once: a second write would
        have failed on its duplicate key), the rolled-back group is written again."""
        journal = DropsAtCommit(postgres_database, reconnect_for=20, after_commit=committed)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            journal.drop_next_commit = True
            with structlog.testing.capture_logs() as logs:
                tickets = [
                    journal.submit([view(A, 2), view(A, 3)]),
                    journal.submit([started(B)]),
                    journal.submit([view(A, 4)]),
                ]
                await wait_all(*tickets)
            assert [t.error for t in tickets] == [None, None, None]
            assert journal.failed is None
            assert not journal.drop_next_commit, "the commit was dropped"
            services.cancel_scope.cancel()
        reader = open_reader(postgres_database)
        assert [f.sequence for f in reader.facts(A)] == [1, 2, 3, 4]
        assert [f.sequence for f in reader.facts(B)] == [1]
        assert reader.session(A).last_sequence == 4
        (reconnected,) = events(logs, "journal reconnected")
        assert (reconnected["committed"] > 0) is committed
        assert journal.statistics().facts == 5, "each fact counted written once"

    async def test_a_run_goes_on_when_its_writer_connection_is_ended_mid_run(
        self, postgres_database: str, journal: Journal
    ) -> None:
        """The delivery team's run, its writer's connection ended when it asks for an
        approval: the run completes, each fact once, none missing, the graph clean."""
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            runtime = TeamRuntime(load_team(DELIVERY), backends=ScriptedBackend, factlog=journal)
            ended = 0

            async def end_then_approve() -> None:
                nonlocal ended
                async for fact in facts_of(runtime):
                    if fact.type == "team/approvalRequested":
                        await trio.to_thread.run_sync(
                            end_connections, postgres_database, "orchestrator journal writer"
                        )
                        ended += 1
                        await runtime.resolve_approval(fact.action.approval, approved=True)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(end_then_approve)
                with trio.fail_after(60):
                    outcome = await runtime.run("Ship the release notes")
                nursery.cancel_scope.cancel()
            services.cancel_scope.cancel()
        assert outcome.status is RunStatus.COMPLETED, outcome.error
        assert ended >= 1
        facts = open_reader(postgres_database).facts(runtime.state.session_uri)
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        assert facts[-1].sequence == runtime.state.last_sequence
        assert build_graph(facts).check() == []


class DropsAtCommit(PostgresJournal):
    """A journal whose connection drops once at a ``COMMIT`` (``drop_next_commit``): after
    the server committed (``after_commit``: only the answer is lost) or before."""

    def __init__(self, url: str, *, after_commit: bool, **options: Any) -> None:
        super().__init__(url, **options)
        self.after_commit = after_commit
        self.drop_next_commit = False

    def _connect(self) -> PgConnection:
        return _Dropping(self, super()._connect().raw)


class _Dropping(PgConnection):
    def __init__(self, journal: DropsAtCommit, raw: psycopg.Connection[Any]) -> None:
        super().__init__(raw)
        self.journal = journal

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        if sql == "COMMIT" and self.journal.drop_next_commit:
            self.journal.drop_next_commit = False
            if self.journal.after_commit:
                super().execute(sql, parameters)
            self.raw.close()
            raise psycopg.OperationalError("the connection was lost during COMMIT")
        return super().execute(sql, parameters)


class TestReadersAndLeasesReconnect:
    def test_a_lease_renewal_reconnects_at_once(self, postgres_database: str) -> None:
        """The leases' connection ended: the next renewal opens a new one and renews, in
        the same call (not one renewal later)."""
        journal = open_journal(postgres_database, node="a", lease_ttl=15)
        journal.open()
        try:
            leases = journal.ownership
            assert isinstance(leases, PostgresLeases)
            with direct_sql(postgres_database) as connection:
                connection.execute(
                    "INSERT INTO sessions (session, team, title, status, created_at, "
                    "updated_at, last_sequence) VALUES (?, 't', '', 'running', '', '', 0)",
                    (A,),
                )
            first = leases.acquire(A)
            end_connections(postgres_database, "orchestrator leases")
            assert leases.renew() == []
            renewed = leases.lease(A)
            assert renewed is not None
            assert (renewed.owner, renewed.epoch) == ("a", first.epoch)
            assert renewed.expires_at > first.expires_at
        finally:
            journal.close()


# ── the server restarted (a cluster of the test's own) ───────────────────


class TestServerRestart:
    async def test_appends_pause_over_a_restart_and_none_is_lost(
        self, own_postgres_server: PostgresServer
    ) -> None:
        """Batches appended one after another while the server restarts: each is
        acknowledged (some after a pause), the log has each once, none missing."""
        db = own_postgres_server.create_database()
        journal = open_journal(db, reconnect_for=30)
        count = 150
        restarted = threading.Event()
        with structlog.testing.capture_logs() as logs:
            async with trio.open_nursery() as services:
                await services.start(journal.serve)
                await wait_all(journal.submit([started(A)]))
                with trio.fail_after(60):
                    for sequence in range(2, count + 1):
                        if sequence == 20:
                            services.start_soon(restart, own_postgres_server, restarted)
                        ticket = journal.submit([view(A, sequence, f"n{sequence}")])
                        await ticket.wait()
                        assert ticket.error is None, ticket.error
                        if sequence == count - 10:
                            await trio.to_thread.run_sync(restarted.wait)
                assert journal.failed is None
                services.cancel_scope.cancel()
        facts = open_reader(db).facts(A)
        assert [f.sequence for f in facts] == list(range(1, count + 1))
        assert len(events(logs, "journal connection lost: reconnecting")) == 1
        assert len(events(logs, "journal reconnected")) == 1

    async def test_a_journal_stopping_while_it_reconnects_stops_within_its_drain_limit(
        self, own_postgres_server: PostgresServer
    ) -> None:
        """A shutdown does not wait ``reconnect_for``: after the drain limit the reconnection
        stops, and the batch it held fails as a backlog abandoned (never acknowledged)."""
        db = own_postgres_server.create_database()
        journal = open_journal(db, reconnect_for=60, drain_limit=0.5)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            await trio.to_thread.run_sync(own_postgres_server.stop, "fast")
            held = journal.submit([view(A, 2)])
            with trio.fail_after(10):
                while journal.reconnecting is None:  # noqa: ASYNC110 (the writer is a thread)
                    await trio.sleep(0.01)
            began = time.monotonic()
            services.cancel_scope.cancel()
        assert time.monotonic() - began < 5
        assert held.error is not None
        assert "the journal closed before this batch was written" in held.error.message
        assert journal.failed is None

    async def test_a_daemons_session_pauses_over_a_restart_and_its_client_sees_no_error(
        self, tmp_path: Path, own_postgres_server: PostgresServer
    ) -> None:
        """A session parked on an approval; the server stops; the user approves: the
        writer cannot write, ``/healthz`` says the journal is reconnecting (and since
        when); the server starts again: the run finishes, the client saw no error, the log
        is one log and its graph is clean."""
        db = own_postgres_server.create_database()
        config = ServeConfig(limits=Limits(shutdown_grace=0.5), reconnect_for=60)
        async with (
            running_daemon(tmp_path, teams={"approver": APPROVER}, config=config, db=db) as daemon,
            daemon.http() as http,
            connect(daemon, "team=approver") as client,
        ):
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"})
            request = await client.until_type("permission_request")
            await trio.to_thread.run_sync(own_postgres_server.stop, "fast")
            await client.send(
                {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
            )
            with trio.fail_after(30):
                while "journal" not in (health := (await http.get("/healthz")).json()):  # noqa: ASYNC110
                    await trio.sleep(0.05)  # the writer is a thread: polling it
            assert health["status"] == "ok"
            assert health["journal"] == "reconnecting"
            assert health["journal_reconnecting_since"].endswith("Z")
            await trio.to_thread.run_sync(own_postgres_server.start)
            result = await client.until_type("result")
            assert "The release notes are ready." in result["summary"]
            answer = await http.get("/healthz")
            assert answer.status_code == 200
            assert "journal" not in answer.json()
        assert not [e for e in client.received if e.get("type") in ("error", "session_ended")]
        uri = "ahp-session:/" + init["sessionId"]
        facts = open_reader(db).facts(uri)
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        assert build_graph(facts).check() == []

    async def test_past_reconnect_for_the_journal_fails_and_the_daemon_still_answers(
        self, tmp_path: Path, own_postgres_server: PostgresServer
    ) -> None:
        """The server stays down longer than ``reconnect_for``: the journal fails saying
        the database was unreachable for so long, the session ends (its client told why),
        and the daemon goes on answering (``/healthz`` 503 with the reason)."""
        db = own_postgres_server.create_database()
        config = ServeConfig(limits=Limits(shutdown_grace=0.5), reconnect_for=1)
        async with (
            running_daemon(tmp_path, teams={"approver": APPROVER}, config=config, db=db) as daemon,
            daemon.http() as http,
            connect(daemon, "team=approver") as client,
        ):
            await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"})
            request = await client.until_type("permission_request")
            await trio.to_thread.run_sync(own_postgres_server.stop, "fast")
            await client.send(
                {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
            )
            ended = await client.until_type("session_ended")
            assert "the database was unreachable for 1 s" in ended["reason"]
            health = await http.get("/healthz")
            assert health.status_code == 503
            assert health.json()["status"] == "journal failed"
            assert "the database was unreachable for 1 s" in health.json()["error"]
            assert isinstance(await http.get("/healthz"), httpx.Response)


async def restart(server: PostgresServer, done: threading.Event) -> None:
    await trio.to_thread.run_sync(server.restart)
    done.set()


class TestRedacted:
    def test_a_password_never_names_the_journal(self) -> None:
        assert redacted("postgresql://me:secret@db.example:5432/j") == (
            "postgresql://me:***@db.example:5432/j"
        )
        assert redacted("postgresql://me@db.example/j") == "postgresql://me@db.example/j"
        assert redacted("postgresql://me@db.example/j?sslmode=require&password=secret") == (
            "postgresql://me@db.example/j?sslmode=require&password=***"
        )
        assert redacted("postgres://db/j?PassWord=a%26b&sslpassword=c") == (
            "postgres://db/j?PassWord=***&sslpassword=***"
        )


class TestStatements:
    def test_the_statements_question_marks_are_parameters_and_percents_are_text(
        self, postgres_database: str
    ) -> None:
        """The journal's statements are written with SQLite's ``?``; on PostgreSQL each is a
        parameter, and a ``%`` stays the character it is, with parameters or without."""
        with direct_sql(postgres_database) as connection:
            assert connection.execute("SELECT '100%'").fetchone() == ("100%",)
            assert connection.execute("SELECT '50%' || ?", ("?",)).fetchone() == ("50%?",)
