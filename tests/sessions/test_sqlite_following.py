"""A daemon follows the sessions that other processes on its SQLite file run
(``sessions/_sqlite_following``): an ``orchestrator run`` beside the daemon is watched live,
read-only, to its end, and the daemon says who runs it.

Against a real process: a real ``orchestrator run`` parked on its approval, a real daemon on
loopback, real clients (``/ws``, HTTP). With the clock in the test's hands: the run is
recorded by the code the CLI runs (a :class:`TeamRuntime` on its own journal of the same
file, holding the session's lock), and the facts reach the daemon's client within one look
at the file (``PRAGMA data_version``, one per interval for the whole journal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from orchestrator.core import ApprovalRequested, ViewUpdated, summary_updates
from orchestrator.journal import JournalReader
from orchestrator.runtime import TeamRuntime
from orchestrator.runtime.backends import backend_factory
from orchestrator.sessions._sqlite_following import CHANGES_POLL, HOLDER_CHECK
from orchestrator.spec import parse_team
from tests.support.ahp_client import connect_ahp
from tests.support.cli import TEAM, acknowledged, orchestrator
from tests.support.daemon import RunningDaemon, connect, running_daemon
from tests.support.teammates import HeldClock
from tests.support.teams import PARKS

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

#: Real seconds of quiet before the clock jumps (it is held while threads work: see
#: HeldClock).
THREADS = 0.05


def parking_run(db: Path, mirror: Path) -> subprocess.Popen[str]:
    """``orchestrator run`` of the delivery team, parked on its publish approval until the
    test answers on its stdin."""
    return orchestrator(
        "run", TEAM, "Ship the release notes", "--db", db, "--plain", "--facts", mirror,
        stdin=subprocess.PIPE,
    )  # fmt: skip


def parked(mirror: Path) -> tuple[str, str]:
    """The session of a run parked on its approval, and the approval's id."""
    deadline = time.monotonic() + 60
    while True:
        asked = [f for f in acknowledged(mirror) if isinstance(f.action, ApprovalRequested)]
        if asked:
            action = asked[0].action
            assert isinstance(action, ApprovalRequested)
            return asked[0].session, action.approval
        assert time.monotonic() < deadline, "no approval was asked for"
        time.sleep(0.01)  # another process's progress: no clock to jump here


def is_team(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e.get("channel") == "team" and e.get("event", {}).get("type") == kind


class TestARunBesideTheDaemon:
    async def test_its_clients_see_the_runs_facts_live_and_its_end(self, tmp_path: Path) -> None:
        """The web view's path: ``GET /api/sessions/ID`` says the session is live and who
        runs it (before: not live, and the page said "the daemon is unreachable"); a /ws
        client subscribed from there gets each fact the run records after it, once, in
        order, up to ``run.finished``; a decision sent to the daemon is refused naming the
        process; then the session ends, and reads ``completed``, run by nobody."""
        db, mirror = tmp_path / "journal.db", tmp_path / "facts.jsonl"
        run = parking_run(db, mirror)
        try:
            uri, approval = await trio.to_thread.run_sync(parked, mirror)
            session = uri.removeprefix("ahp-session:/")
            async with running_daemon(tmp_path, db=db) as daemon, daemon.http() as http:
                listed = (await http.get("/api/sessions")).json()["sessions"]
                runner = {"program": "orchestrator run", "pid": run.pid}
                assert [(s["uri"], s["live"], s["runBy"]) for s in listed] == [
                    (uri, False, runner)
                ], "listed as the run's, not followed for a list"
                page = (await http.get(f"/api/sessions/{session}/envelopes")).json()
                assert page["session"]["live"] is True, "its page attaches"
                assert page["session"]["runBy"] == runner
                start = len(page["envelopes"])
                assert (await http.get("/healthz")).json()["followed_sessions"] == [uri]
                async with connect(daemon, f"session={session}") as client:
                    await client.until_type("init")
                    await client.send(
                        {"channel": "team", "type": "subscribe", "fromSequence": start}
                    )
                    await client.send(
                        {"channel": "agent", "type": "approve", "requestId": approval}
                    )
                    refused = await client.until_type("error")
                    assert f"is run by `orchestrator run`, pid {run.pid}" in refused["message"]
                    assert run.stdin is not None
                    run.stdin.write("y\n")  # the run's own console decides
                    run.stdin.flush()
                    finished = await client.until(is_team("run.finished"))
                    ended = await client.until_type("session_ended")
                team = [e["event"] for e in client.received if e.get("channel") == "team"]
                summary = (await http.get(f"/api/sessions/{session}")).json()
            _, err = await trio.to_thread.run_sync(lambda: run.communicate(timeout=60))
            assert run.returncode == 0, err
        finally:
            if run.returncode is None:
                run.kill()
                run.communicate()
        sequences = [e["sequence"] for e in team]
        assert sequences == list(range(start + 1, start + 1 + len(team))), "no gap, none twice"
        assert team[-1] == finished["event"]
        assert finished["event"]["payload"]["status"] == "completed"
        assert "reason" not in ended, "it ended as runs end"
        assert (summary["status"], summary["live"], summary["runBy"]) == ("completed", False, None)
        facts = JournalReader(db).facts(uri)
        assert not any(f.action.type == "team/runResumed" for f in facts), "only followed"

    async def test_a_run_killed_ends_the_followed_session_and_the_daemon_takes_it_up(
        self, tmp_path: Path
    ) -> None:
        """``kill -9`` of the run: its followed session ends with a reason to reattach (its
        lock is free, its run not finished), and the daemon takes the session up at once
        (as at its start); the client that reattaches finds it live there, its approval
        asked again, and the daemon runs its turn to its end."""
        db, mirror = tmp_path / "journal.db", tmp_path / "facts.jsonl"
        run = parking_run(db, mirror)
        try:
            uri, _ = await trio.to_thread.run_sync(parked, mirror)
            session = uri.removeprefix("ahp-session:/")
            async with running_daemon(tmp_path, db=db) as daemon, daemon.http() as http:
                async with connect(daemon, f"session={session}") as client:
                    await client.until_type("init")
                    run.send_signal(signal.SIGKILL)
                    await trio.to_thread.run_sync(run.communicate)
                    with trio.fail_after(HOLDER_CHECK * 5):
                        ended = await client.until_type("session_ended")
                reason = ended["reason"]
                assert f"`orchestrator run`, pid {run.pid}, which ran it, stopped" in reason
                assert "reattach" in reason
                with trio.fail_after(30):
                    owned = "owned_sessions"
                    while (await http.get("/healthz")).json()[owned] != [uri]:  # noqa: ASYNC110
                        await trio.sleep(0.05)  # a server's state, asked over HTTP
                async with connect(daemon, f"session={session}") as again:
                    await again.until_type("init")
                    asked = await again.until_type("permission_request")
                    await again.send(
                        {"channel": "agent", "type": "approve", "requestId": asked["requestId"]}
                    )
                    result = await again.until_type("result")
        finally:
            if run.returncode is None:
                run.kill()
                run.communicate()
        assert "The release notes are ready." in result["summary"]
        facts = JournalReader(db).facts(uri)
        assert [f.action.type for f in facts].count("team/runResumed") == 1, "taken up once"


@asynccontextmanager
async def runs_beside(
    db: Path | str, count: int, held: HeldClock
) -> AsyncIterator[list[TeamRuntime]]:
    """``count`` runs of :data:`PARKS` recorded as ``orchestrator run`` records them: a
    journal of their own on the file, each session locked to its runtime (here, this
    process's other holder of the file's locks), each run parked on its approval. The
    clock is held while their batches are written."""
    team = parse_team(PARKS, file="parks.toml")
    journal = held.journal(db)
    await trio.to_thread.run_sync(journal.open)
    locks = journal.ownership
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        runtimes = []
        for _ in range(count):
            runtime = TeamRuntime(
                team, backends=backend_factory(team, client=http), factlog=journal
            )
            assert locks.claim(runtime.session) is None
            await nursery.start(runtime.run, "Publish the notes")
            runtimes.append(runtime)
        for runtime in runtimes:
            while not runtime.state.approvals:  # noqa: ASYNC110 (the clock jumps)
                await trio.sleep(0.01)
        try:
            yield runtimes
        finally:
            for runtime in runtimes:
                runtime.stop()  # as a killed run: nothing more recorded
            nursery.cancel_scope.cancel()
            for runtime in runtimes:
                locks.release(runtime.session)


async def journal_looks(daemon: RunningDaemon) -> int:
    async with daemon.http() as http:
        text = (await http.get("/metrics")).text
    (line,) = [
        line for line in text.splitlines() if line.startswith("orchestrator_journal_looks_total")
    ]
    return int(float(line.split()[-1]))


class TestWhenToRead:
    async def test_a_fact_recorded_beside_reaches_a_client_within_a_look(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The decision the run records and its end reach the daemon's /ws client within
        about one look at the file (never on the 2 s poll of a PostgreSQL follower: a
        SQLite follower does not poll its session at all); then the session ends there."""
        autojump_clock.autojump_threshold = THREADS
        held = HeldClock(autojump_clock)
        with held.holding_threads():
            await self.decided_and_ended(tmp_path, held)

    async def decided_and_ended(self, tmp_path: Path, held: HeldClock) -> None:
        async with (
            running_daemon(tmp_path, teams={"parks": PARKS}) as daemon,
            runs_beside(daemon.db, 1, held) as (runtime,),
            daemon.http() as http,
        ):
            session = runtime.session.removeprefix("ahp-session:/")
            page = (await http.get(f"/api/sessions/{session}/envelopes")).json()
            assert page["session"]["runBy"] == {"program": None, "pid": os.getpid()}
            async with connect(daemon, f"session={session}") as client:
                await client.until_type("init")
                await client.send(
                    {
                        "channel": "team",
                        "type": "subscribe",
                        "fromSequence": len(page["envelopes"]),
                    }
                )
                await trio.sleep(5)  # nothing recorded meanwhile: nothing comes
                assert [e for e in client.received if e.get("channel") == "team"] == []
                (approval,) = runtime.state.approvals
                await runtime.resolve_approval(approval, approved=True)
                decided_at = trio.current_time()
                await client.until(lambda e: e.get("channel") == "team")
                assert trio.current_time() - decided_at <= 2 * CHANGES_POLL
                await client.until(is_team("run.finished"))
                ended_at = trio.current_time()
                await client.until_type("session_ended")
                assert trio.current_time() - ended_at <= HOLDER_CHECK

    async def test_one_look_per_interval_for_the_journal_and_none_while_nothing_is_followed(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Cheap: nothing followed, the file is not asked; three sessions followed, it is
        asked once per interval, not three times."""
        autojump_clock.autojump_threshold = THREADS
        held = HeldClock(autojump_clock)
        with held.holding_threads():
            await self.looks_of_three(tmp_path, held)

    async def looks_of_three(self, tmp_path: Path, held: HeldClock) -> None:
        async with (
            running_daemon(tmp_path, teams={"parks": PARKS}) as daemon,
            runs_beside(daemon.db, 3, held) as runtimes,
            daemon.http() as http,
        ):
            await trio.sleep(10)
            assert await journal_looks(daemon) == 0, "nothing followed: never asked"
            for runtime in runtimes:
                session = runtime.session.removeprefix("ahp-session:/")
                assert (await http.get(f"/api/sessions/{session}")).json()["live"]
            before, start = await journal_looks(daemon), trio.current_time()
            await trio.sleep(10)
            looks = await journal_looks(daemon) - before
            intervals = (trio.current_time() - start) / CHANGES_POLL
            assert intervals - 2 <= looks <= intervals + 1


class TestClients:
    async def test_an_ahp_subscriber_gets_the_runs_actions_and_commands_are_refused(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """An AHP client subscribed to the session gets each action the run records after
        its snapshot, in order, up to the last; a view update for the session (``POST
        /callback``) is refused 409 naming the process (not a 500), and the daemon writes
        nothing of the session."""
        autojump_clock.autojump_threshold = THREADS
        held = HeldClock(autojump_clock)
        with held.holding_threads():
            await self.subscribed(tmp_path, held)

    async def subscribed(self, tmp_path: Path, held: HeldClock) -> None:
        async with (
            running_daemon(tmp_path, teams={"parks": PARKS}) as daemon,
            runs_beside(daemon.db, 1, held) as (runtime,),
            daemon.http() as http,
            connect_ahp(daemon) as ahp,
        ):
            uri = runtime.session
            await ahp.initialize(subscriptions=(uri,))
            start = ahp.snapshots[uri]["fromSeq"]
            posted = await http.post(
                "/callback",
                json={
                    "type": "view_update",
                    "group_id": uri.removeprefix("ahp-session:/"),
                    "view_type": "diff",
                    "content": {"patch": "+x"},
                },
            )
            assert posted.status_code == 409
            assert f"is run by pid {os.getpid()}: this daemon follows it" in posted.json()["error"]
            (approval,) = runtime.state.approvals
            await runtime.resolve_approval(approval, approved=True)
            while runtime.state.run is None or runtime.state.run.status is None:  # noqa: ASYNC110
                await trio.sleep(0.1)
            facts = JournalReader(daemon.db).facts(uri)
            # The session channel's AHP actions: its session/* facts (team/* ones are not AHP),
            # and the catalog updates the chat facts derive, at their sequences (issue 35),
            # which this daemon derives as it follows the session.
            derived = summary_updates(uri, facts)
            assert derived
            wanted = [
                f.sequence
                for f in facts
                if f.sequence > start
                and (
                    (f.channel == uri and f.action.type.startswith("session/"))
                    or f.sequence in derived
                )
            ]
            await ahp.until_action(lambda e: e["channel"] == uri and e["serverSeq"] >= wanted[-1])
        seen = [e["serverSeq"] for e in ahp.actions if e["channel"] == uri]
        assert len(wanted) >= 2, "a decision and the run's end, at least"
        assert seen == wanted, "each once, in order, none missing"
        assert [f for f in facts if isinstance(f.action, ViewUpdated)] == []
