"""Several daemons on one PostgreSQL journal (issue 21): ``orchestrator serve`` processes,
each a node holding the leases of the sessions it runs.

A node that dies (SIGKILL) or stalls past its lease (SIGSTOP) loses its sessions to another
node, which takes them up by the start-up's recovery rules; the log stays one log (each
sequence once, none missing), and the stalled node, once it runs again, stops the session
("lease lost") instead of writing to it. A node asked for another node's session follows
it (its clients see the owner's facts, with the owner's numbers) and forwards their
commands to the owner; when the owner dies, the follower's clients are told to reattach and
the follower takes the session over.

These tests wait for processes (real time, with a short ``lease_ttl``), as
``e2e/test_serve_process`` does; the lease logic itself is tested without waiting in
``journal/postgres/test_leases``."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from orchestrator.core import build_graph, teammate_uri, turn_text
from orchestrator.journal import open_reader
from tests.support.ahp_client import connect_ahp
from tests.support.daemon import RunningDaemon, connect
from tests.support.paths import PROJECT_ROOT
from tests.support.postgres import direct_sql
from tests.support.teams import (
    APPROVER,
    DELEGATING_CONVERSATION,
    NIGHTLY_PUBLISHER,
    TICKING_TEAMMATE,
    side_team,
    slow_answer,
)

#: Seconds a lease lasts in these tests (renewed every second, scanned every second).
TTL = 3.0
DELIVERY = (PROJECT_ROOT / "teams" / "delivery.toml").read_text(encoding="utf-8")


@attrs.define
class Node:
    name: str
    process: subprocess.Popen[str]
    url: str
    log: Path

    @property
    def daemon(self) -> RunningDaemon:
        return RunningDaemon(url=self.url, db="", stop=trio.Event())

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    async def health(self) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as http:
            answer = await http.get("/healthz")
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    async def metrics(self) -> str:
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as http:
            return (await http.get("/metrics")).text


#: A conversation whose second scripted turn, a side chat's first (its context holds one
#: user message, its own the second), takes a while; its first is the coordinator's.
SIDE = side_team('{ say = "first answer" }', '{ sleep = 3 }, { say = "side answer" }')

TEAMS = {
    "side": SIDE,
    "publisher": NIGHTLY_PUBLISHER,
    "delivery": DELIVERY,
    "ticker": TICKING_TEAMMATE,
    "approver": APPROVER,
    "conversation": DELEGATING_CONVERSATION,
    "board": (PROJECT_ROOT / "teams" / "board.toml").read_text(encoding="utf-8"),
}


def start_node(
    tmp_path: Path,
    name: str,
    db: str,
    *,
    team: str = "delivery",
    ttl: float = TTL,
    limits: str = "",
) -> Node:
    """``orchestrator serve`` as node ``name`` on ``db``, serving the delivery team (or
    the ticker)."""
    teams = tmp_path / "teams"
    teams.mkdir(parents=True, exist_ok=True)
    (teams / f"{team}.toml").write_text(TEAMS[team])
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f'node = "{name}"\nlease_ttl = {ttl}\n[limits]\nshutdown_grace = 0.2\n{limits}\n',
        encoding="utf-8",
    )
    log = tmp_path / f"{name}.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "serve",
                "--config",
                config,
                "--teams",
                teams,
                "--db",
                db,
                "--port",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if record.get("event") == "daemon listening":
                return Node(name=name, process=process, url=str(record["url"]), log=log)
        assert process.poll() is None, log.read_text()
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"node {name} did not say where it listens:\n{log.read_text()}")


@pytest.fixture
def nodes(tmp_path: Path, postgres_database: str) -> Iterator[Callable[..., Node]]:
    started: list[Node] = []

    def start(name: str, team: str = "delivery", ttl: float = TTL, limits: str = "") -> Node:
        node = start_node(
            tmp_path / team, name, postgres_database, team=team, ttl=ttl, limits=limits
        )
        started.append(node)
        return node

    try:
        yield start
    finally:
        for node in started:
            if node.process.poll() is None:
                os.kill(node.process.pid, signal.SIGCONT)
                node.process.kill()
            node.process.wait(10)
            # pytest shows a test's captured output only when it fails: then the end of
            # each node's log is there to read (these tests fail under load, if at all).
            tail = node.log.read_text(errors="replace").splitlines()[-60:]
            print(
                f"--- node {node.name}: the last {len(tail)} lines of {node.log}", *tail, sep="\n"
            )


async def wait_until_owned(node: Node, uri: str, *, within: float) -> float:
    """Seconds until ``node``'s /healthz lists ``uri`` among its sessions (polling the
    process: real time)."""
    began = time.monotonic()
    with trio.fail_after(within):
        while uri not in (await node.health())["owned_sessions"]:  # noqa: ASYNC110 (a process)
            await trio.sleep(0.05)
    return time.monotonic() - began


async def park_a_session(node: Node, team: str = "delivery") -> tuple[str, dict[str, Any]]:
    """A session of ``team`` on ``node`` whose turn waits for an approval: its URI and the
    request."""
    async with connect(node.daemon, f"team={team}") as client:
        init = await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"})
        request = await client.until_type("permission_request")
    return "ahp-session:/" + init["sessionId"], request


async def approve_on(node: Node, uri: str, request: dict[str, Any]) -> dict[str, Any]:
    """Attach to ``uri`` on ``node``, see the request waiting, approve it; the result."""
    async with connect(node.daemon, "session=" + uri.removeprefix("ahp-session:/")) as client:
        waiting = await client.until_type("permission_request")
        assert waiting["requestId"] == request["requestId"]
        assert waiting["toolName"] == "publish"
        await client.send(
            {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
        )
        return await client.until_type("result")


def assert_one_log(db: str, uri: str, *, resumed: int = 1) -> None:
    """The session's facts are each sequence once, none missing, its graph checks clean,
    and the run was taken up ``resumed`` times (a conversation: it waits for the next
    prompt)."""
    reader = open_reader(db)
    facts = reader.facts(uri)
    assert [fact.sequence for fact in facts] == list(range(1, len(facts) + 1))
    assert build_graph(facts).check() == []
    assert reader.session(uri).status == "running"
    assert [f.type for f in facts].count("team/runResumed") == resumed, "taken up by one node"


class TestTakeOver:
    async def test_a_killed_nodes_parked_session_is_taken_up_by_another(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A runs a session parked on an approval; while A lives B leaves it alone (its
        scans find no expired lease); A is killed; B takes the session up within the TTL
        and a margin, shows the approval waiting, and approving on B finishes the run."""
        a, b = nodes("a"), nodes("b")
        uri, request = await park_a_session(a)
        assert (await a.health())["owned_sessions"] == [uri]
        assert (await a.health())["node"] == "a"
        deadline = time.monotonic() + 2 * TTL  # a few of B's scans while A renews
        while time.monotonic() < deadline:
            assert (await b.health())["owned_sessions"] == []
            await trio.sleep(0.1)

        a.process.send_signal(signal.SIGKILL)
        a.process.wait(10)
        took = await wait_until_owned(b, uri, within=TTL + 10)
        result = await approve_on(b, uri, request)

        assert "The release notes are ready." in result["summary"]
        # The TTL, a scan (a third of it) and room for a loaded machine (2 cores shared with
        # parallel test runs, where this test failed once with tighter bounds).
        assert took < TTL + 4, f"taken over after {took:.1f} s"
        assert "session taken over" in [e["event"] for e in b.events()]
        metrics = await b.metrics()
        assert "orchestrator_leases_taken_over_total 1.0" in metrics
        assert_one_log(postgres_database, uri)
        assert (await b.health())["owned_sessions"] == [uri]

    async def test_a_stalled_node_loses_its_session_and_stops_it_there(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A stalls past its lease (SIGSTOP); B takes the session up; when A runs again its
        renewal finds the lease lost, and A stops the session ("lease lost") rather than
        write to it; B finishes the run, and the log is one log."""
        # A team with nothing else going: A is stopped between transactions (one stopped
        # inside a write transaction loses its connection after the TTL: see
        # journal/postgres/test_leases).
        a, b = nodes("a", "approver"), nodes("b", "approver")
        uri, request = await park_a_session(a, "approver")
        a.process.send_signal(signal.SIGSTOP)
        await wait_until_owned(b, uri, within=TTL + 10)
        a.process.send_signal(signal.SIGCONT)
        with trio.fail_after(10):
            while "session stopped: lease lost" not in [e["event"] for e in a.events()]:  # noqa: ASYNC110
                await trio.sleep(0.05)  # polling another process's log
        assert (await a.health())["owned_sessions"] == []
        assert "orchestrator_leases_lost_total 1.0" in await a.metrics()

        result = await approve_on(b, uri, request)
        assert "The release notes are ready." in result["summary"]
        assert_one_log(postgres_database, uri)
        lost = next(e for e in a.events() if e["event"] == "session stopped: lease lost")
        assert (lost["session"], lost["node"]) == (uri, "a")


class TestHandOver:
    async def test_a_node_stopping_hands_its_busy_session_over_at_once(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """SIGTERM: A stops its session (recording nothing, as ever) and gives the lease up
        as due, so B takes the session up at its next scan (every 10 s here), before the
        lease, renewed until the stop, could have expired (20 s at the earliest)."""
        a, b = nodes("a", ttl=30), nodes("b", ttl=30)
        uri, request = await park_a_session(a)
        a.process.send_signal(signal.SIGTERM)
        assert await trio.to_thread.run_sync(a.process.wait, 15) == 0
        took = await wait_until_owned(b, uri, within=25)
        result = await approve_on(b, uri, request)
        assert "The release notes are ready." in result["summary"]
        assert took < 15, f"taken up after {took:.1f} s: when the lease expired, not at once"
        assert_one_log(postgres_database, uri)


class TestTeammates:
    async def test_a_teammates_wakes_happen_once_across_nodes(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """Two nodes serve a teammate that wakes every second: one node holds its stream
        and runs the wakes; when it dies the other takes the stream over and goes on. Each
        scheduled wake is recorded once, each run has its own session, none twice."""
        a, b = nodes("a", "ticker"), nodes("b", "ticker")
        stream = teammate_uri("ticker", "tick")
        reader = open_reader(postgres_database)

        async def runs_started(count: int) -> list[Any]:
            started: list[Any] = []
            with trio.move_on_after(30):
                while True:
                    facts = await trio.to_thread.run_sync(reader.facts, stream)
                    started = [f for f in facts if f.type == "team/teammateRunStarted"]
                    if len(started) >= count:
                        return facts
                    await trio.sleep(0.1)  # polling the nodes' work
            raise AssertionError(f"{len(started)} runs started in 30 s, not {count}")

        await runs_started(2)
        holders = [n for n in (a, b) if stream in (await n.health())["owned_sessions"]]
        assert len(holders) == 1, "one node runs the teammate"
        (holder,) = holders
        other = b if holder is a else a
        holder.process.send_signal(signal.SIGKILL)
        holder.process.wait(10)
        before = len([f for f in await runs_started(0) if f.type == "team/teammateRunStarted"])
        facts = await runs_started(before + 2)  # the other node wakes it from now on

        assert stream in (await other.health())["owned_sessions"]
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        woke = [f.action for f in facts if f.type == "team/teammateWoke"]
        scheduled = [w.scheduled_for for w in woke if w.scheduled_for is not None]
        assert len(scheduled) == len(set(scheduled)), "no scheduled wake recorded twice"
        sessions = [f.action.session for f in facts if f.type == "team/teammateRunStarted"]
        assert len(sessions) == len(set(sessions))
        for session in sessions[:before]:
            ran = await trio.to_thread.run_sync(reader.facts, session)
            assert [f.type for f in ran].count("team/runStarted") == 1

    async def test_a_teammate_follows_its_run_where_another_node_took_it_up(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """Node c runs a teammate whose run waits for an approval, and dies. Node b (which
        does not serve the teammate's team) takes the parked run up; node a, stopped
        meanwhile, then takes the teammate's stream over: it follows the run on b (and
        keeps following it with no client watching, past ``idle_session``) instead of
        recording it failed. When b dies too, a takes the run up and waits for it there.
        Approved, the run finishes and a records it completed, once."""
        stream = teammate_uri("publisher", "nightly")
        reader = open_reader(postgres_database)

        async def stream_facts(until: Callable[[list[Any]], bool]) -> list[Any]:
            with trio.fail_after(40):
                while True:
                    facts = await trio.to_thread.run_sync(reader.facts, stream)
                    if until(facts):
                        return facts
                    await trio.sleep(0.1)  # polling the nodes' work

        c = nodes("c", "publisher")
        started = await stream_facts(
            lambda facts: any(f.type == "team/teammateRunStarted" for f in facts)
        )
        run = next(f.action.session for f in started if f.type == "team/teammateRunStarted")
        with trio.fail_after(20):
            while not any(  # noqa: ASYNC110 (polling the node's work)
                f.type == "team/approvalRequested"
                for f in await trio.to_thread.run_sync(reader.facts, run)
            ):
                await trio.sleep(0.1)
        b = nodes("b", "approver")
        a = nodes("a", "publisher", limits="idle_session = 1.0")
        a.process.send_signal(signal.SIGSTOP)
        try:
            c.process.send_signal(signal.SIGKILL)
            c.process.wait(10)
            await wait_until_owned(b, run, within=TTL + 10)  # b's scan: the run had work
        finally:
            a.process.send_signal(signal.SIGCONT)
        await wait_until_owned(a, stream, within=TTL + 10)
        with trio.fail_after(20):
            while run not in (await a.health())["followed_sessions"]:  # noqa: ASYNC110
                await trio.sleep(0.1)
        await trio.sleep(3.0)  # idle_session thrice: the teammate's watch keeps it followed
        assert run in (await a.health())["followed_sessions"]
        b.process.send_signal(signal.SIGKILL)  # the run's node dies too: a takes it up
        b.process.wait(10)
        await wait_until_owned(a, run, within=TTL + 10)
        async with connect(a.daemon, "session=" + run.removeprefix("ahp-session:/")) as client:
            request = await client.until_type("permission_request")
            await client.send(
                {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
            )
            result = await client.until_type("result")
        assert "The release notes are ready." in result["summary"]
        facts = await stream_facts(
            lambda facts: any(
                f.type == "team/teammateRunFinished" and f.action.session == run for f in facts
            )
        )
        finished = [
            f.action
            for f in facts
            if f.type == "team/teammateRunFinished" and f.action.session == run
        ]
        assert [(f.outcome.value, f.error) for f in finished] == [("completed", "")]
        ran = await trio.to_thread.run_sync(reader.facts, run)
        assert [f.sequence for f in ran] == list(range(1, len(ran) + 1))
        assert build_graph(ran).check() == []
        assert [f.type for f in ran].count("team/runResumed") == 2, "by b, then by a"


def orchestrator(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=PROJECT_ROOT,
    )


class TestRunsBesideNodes:
    async def test_a_run_holds_its_sessions_lease_while_it_runs(
        self, nodes: Callable[..., Node], postgres_database: str, tmp_path: Path
    ) -> None:
        """``orchestrator run --db postgresql://`` beside a daemon: the run's lease (1.5 s
        here) is renewed while it runs (5 s), so the daemon, scanning every second for
        expired leases, never takes the session over; the run completes as one log."""
        a = nodes("a")
        team = tmp_path / "slow.toml"
        team.write_text(slow_answer(seconds=5, answer="done at last"), encoding="utf-8")
        run = functools.partial(
            orchestrator,
            "run",
            team,
            "take your time",
            "--db",
            postgres_database,
            "--plain",
            "--approve",
            "auto",
            "--json",
            "--lease-ttl",
            "1.5",
        )
        done = await trio.to_thread.run_sync(run)

        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        assert outcome["status"] == "completed"
        uri = outcome["session"]
        facts = open_reader(postgres_database).facts(uri)
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        assert "team/runResumed" not in [f.type for f in facts], "nobody took it over"
        assert "session taken over" not in [e["event"] for e in a.events()]
        assert "lease lost" not in done.stderr
        assert (await a.health())["owned_sessions"] == []
        with direct_sql(postgres_database) as connection:
            owners = connection.execute(
                "SELECT owner FROM session_leases WHERE session = ?", (uri,)
            ).fetchall()
        assert owners in ([], [("",)]), "given up when the run ended"

    async def test_resume_refuses_a_session_a_live_node_holds_naming_it(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A session parked on node a: ``orchestrator resume`` on the same database does
        not take it (exit 3: try again later), and says which node runs it; a keeps it."""
        a = nodes("a")
        uri, _ = await park_a_session(a)
        refused = await trio.to_thread.run_sync(
            functools.partial(
                orchestrator, "resume", uri, "--db", postgres_database, "--approve", "auto"
            )
        )
        assert refused.returncode == 3, refused.stderr
        assert f"{uri} runs on node a" in refused.stderr
        assert (await a.health())["owned_sessions"] == [uri]
        facts = open_reader(postgres_database).facts(uri)
        assert "team/runResumed" not in [f.type for f in facts]


def session_actions(client: Any, uri: str) -> list[tuple[int, dict[str, Any]]]:
    return [(e["serverSeq"], e["action"]) for e in client.actions if e["channel"] == uri]


async def same_actions(
    first: Any, second: Any, uri: str, db: str
) -> list[tuple[int, dict[str, Any]]]:
    """Wait until both clients received the same actions of ``uri``, up to the last the
    journal holds for it; those actions."""
    facts = open_reader(db).facts(uri)
    last = max(f.sequence for f in facts if f.channel == uri)
    with trio.fail_after(20):
        while True:
            ours, theirs = session_actions(first, uri), session_actions(second, uri)
            if ours and ours == theirs and ours[-1][0] >= last:
                return ours
            with trio.move_on_after(0.2):
                await (first if len(ours) <= len(theirs) else second).receive()


class TestFollowing:
    async def test_a_client_on_another_node_sees_the_session_live(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """B follows A's session: an AHP client of B receives the very actions (serverSeq,
        order, content) an AHP client of A does as the run goes on, gap-free; a client that
        reconnects to B with a cursor is replayed what came after it, once each."""
        a, b = nodes("a", "approver"), nodes("b", "approver")
        uri, request = await park_a_session(a, "approver")
        async with connect_ahp(a.daemon) as on_a, connect_ahp(b.daemon) as on_b:
            await on_a.initialize(client_id="on-a", subscriptions=(uri,))
            await on_b.initialize(client_id="on-b", subscriptions=(uri,))
            assert on_b.snapshots[uri]["fromSeq"] == on_a.snapshots[uri]["fromSeq"]
            start = on_a.snapshots[uri]["fromSeq"]
            assert (await b.health())["owned_sessions"] == [], "B follows, A owns"
            result = await approve_on(a, uri, request)
            assert "The release notes are ready." in result["summary"]
            seen = await same_actions(on_a, on_b, uri, postgres_database)
        sequences = [seq for seq, _ in seen]
        assert sequences == sorted(set(sequences))
        assert sequences[0] > start
        facts = open_reader(postgres_database).facts(uri)
        assert sequences[-1] <= facts[-1].sequence
        middle = sequences[len(sequences) // 2]
        async with connect_ahp(b.daemon) as again:
            resumed = await again.request(
                "reconnect",
                {
                    "channel": "ahp-root://",
                    "clientId": "on-b",
                    "lastSeenServerSeq": 0,
                    "subscriptions": [uri],
                    "cursors": {uri: middle},
                },
            )
        assert resumed["type"] == "replay"
        replayed = [
            (e["serverSeq"], e["action"]) for e in resumed["actions"] if e["channel"] == uri
        ]
        assert replayed == [(seq, action) for seq, action in seen if seq > middle]
        assert "following session" in [e["event"] for e in b.events()]
        assert_one_log(postgres_database, uri, resumed=0)

    async def test_a_page_of_a_session_another_node_runs_is_live_and_names_it(
        self, nodes: Callable[..., Node]
    ) -> None:
        """The web view's reads on B of A's session follow it, so its page attaches (before:
        not live on B, and the page said "the daemon is unreachable"); the summary names
        the node that runs it. Reading does not take the session up."""
        a, b = nodes("a", "approver"), nodes("b", "approver")
        uri, _ = await park_a_session(a, "approver")
        session = uri.removeprefix("ahp-session:/")
        async with httpx.AsyncClient(base_url=b.url, timeout=10) as http:
            page = (await http.get(f"/api/sessions/{session}/envelopes")).json()
            summary = (await http.get(f"/api/sessions/{session}")).json()
        assert (page["session"]["live"], page["session"]["runBy"]) == (True, {"node": "a"})
        assert (summary["live"], summary["runBy"]) == (True, {"node": "a"})
        assert (await b.health())["followed_sessions"] == [uri]
        assert (await a.health())["owned_sessions"] == [uri]


class TestAnyNodeFromTheStart:
    async def test_a_session_opened_on_one_node_is_served_by_another_at_once(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A client opens a session on A and is told its id (``init``); the very next
        moment, before any prompt (the journal has nothing of it), B serves it: a client
        of B attaches (not 404), prompts it (the prompt goes to A, which runs it), and
        hears its run as A's client does; a session A forgets unprompted leaves no lease."""
        a, b = nodes("a", "approver"), nodes("b", "approver")
        async with connect(a.daemon, "team=approver") as on_a:
            init = await on_a.until_type("init")
            async with connect(b.daemon, "session=" + init["sessionId"]) as on_b:
                attached = await on_b.until_type("init")
                assert attached["sessionId"] == init["sessionId"]
                await on_b.send(
                    {"channel": "agent", "type": "prompt", "prompt": "Ship", "taskId": "t1"}
                )
                request = await on_b.until_type("permission_request")
                assert request["toolName"] == "publish"
                assert (await on_a.until_type("permission_request")) == request
                await on_b.send(
                    {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
                )
                result = await on_b.until_type("result")
                assert result["taskId"] == "t1"
                assert "The release notes are ready." in result["summary"]
                async with connect(b.daemon, "session=" + init["sessionId"]) as again:
                    assert (await again.until_type("init"))["team"] == "approver"
        uri = "ahp-session:/" + init["sessionId"]
        assert (await a.health())["owned_sessions"] == [uri], "A runs it, B followed"
        assert_one_log(postgres_database, uri, resumed=0)
        # Never prompted, then forgotten (disposed here): its lease's row goes with it.
        async with connect_ahp(a.daemon) as ahp:
            await ahp.initialize()
            unused = "ahp-session:/" + str(uuid.uuid4())
            await ahp.request("createSession", {"channel": unused, "provider": "approver"})
            assert (await a.health())["owned_sessions"] == sorted([uri, unused])
            await ahp.request("disposeSession", {"channel": unused})
        with trio.fail_after(10):
            while lease_rows(postgres_database, unused):  # noqa: ASYNC110 (another process)
                await trio.sleep(0.05)


def lease_rows(db: str, uri: str) -> int:
    """How many lease rows the journal has of ``uri``."""
    with direct_sql(db) as connection:
        return len(
            connection.execute(
                "SELECT owner FROM session_leases WHERE session = ?", (uri,)
            ).fetchall()
        )


async def refusal(node: Node, uri: str, message: dict[str, Any]) -> str:
    """What ``node`` answers ``message`` (a request it refuses) on ``uri``'s /ws."""
    async with connect(node.daemon, "session=" + uri.removeprefix("ahp-session:/")) as client:
        await client.until_type("init")
        await client.send(message)
        error = await client.until_type("error")
    return str(error["message"])


class TestPromptsThroughAFollower:
    async def test_a_followers_client_hears_its_own_tasks_end(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A /ws client of B prompts A's idle conversation, twice, with task ids: the turn
        starts at once on A, and B may read its facts before A's answer; each ``result``
        B's client hears still carries the client's ``taskId`` (bound before any fact of
        the turn could come), and the turns are in A's log, in order."""
        a, b = nodes("a", "conversation"), nodes("b", "conversation")
        async with connect(a.daemon, "team=conversation") as client:
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await client.until_type("result")
        uri = "ahp-session:/" + init["sessionId"]
        async with connect(b.daemon, f"session={init['sessionId']}") as client:
            await client.until_type("init")
            for task, prompt in (("t2", "two"), ("t3", "three")):
                await client.send(
                    {"channel": "agent", "type": "prompt", "prompt": prompt, "taskId": task}
                )
                with trio.fail_after(20):
                    result = await client.until_type("result")
                assert result.get("taskId") == task, result
                assert "part" in result["summary"]
        facts = open_reader(postgres_database).facts(uri)
        started = [f.action.message.text for f in facts if f.type == "chat/turnStarted"]  # type: ignore[union-attr]
        assert [text for text in started if text in {"one", "two", "three"}] == [
            "one",
            "two",
            "three",
        ]
        assert (await b.health())["owned_sessions"] == []
        assert_one_log(postgres_database, uri, resumed=0)


class TestFollowedSessionsEnd:
    async def test_a_followed_session_nobody_watches_is_dropped(
        self, nodes: Callable[..., Node]
    ) -> None:
        """B follows A's session while a client watches it there; once nobody has for
        ``idle_session``, B drops it (A runs on, unaware), and follows it again when asked."""
        a = nodes("a", "approver")
        b = nodes("b", "approver", limits="idle_session = 1.0")
        uri, request = await park_a_session(a, "approver")
        session = uri.removeprefix("ahp-session:/")
        async with connect(b.daemon, f"session={session}") as client:
            await client.until_type("permission_request")
            assert (await b.health())["followed_sessions"] == [uri]
        with trio.fail_after(20):
            while "followed session nobody watches dropped" not in [  # noqa: ASYNC110
                e["event"] for e in b.events()
            ]:
                await trio.sleep(0.1)  # polling another process's log
        assert (await b.health())["followed_sessions"] == []
        assert (await a.health())["owned_sessions"] == [uri]
        async with connect(b.daemon, f"session={session}") as client:
            again = await client.until_type("permission_request")
        assert again["requestId"] == request["requestId"]


class TestForwarding:
    async def test_commands_sent_to_a_follower_reach_the_owner(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A view update, an approval and a prompt sent to B (which follows A's session)
        are carried out by A; a refused approval comes back to B's client with A's own
        message; the log is one log, written by A alone."""
        a, b = nodes("a", "approver"), nodes("b", "approver")
        uri, request = await park_a_session(a, "approver")
        session = uri.removeprefix("ahp-session:/")
        bogus = {"channel": "agent", "type": "approve", "requestId": "no-such-approval"}
        assert await refusal(b, uri, bogus) == await refusal(a, uri, bogus)

        async with httpx.AsyncClient(base_url=b.url, timeout=40) as http:
            update = await http.post(
                "/callback",
                json={
                    "type": "view_update",
                    "group_id": session,
                    "view_type": "diff",
                    "content": {"lines": 3},
                },
            )
        assert update.status_code == 200, update.text
        result = await approve_on(b, uri, request)
        assert "The release notes are ready." in result["summary"]
        async with connect(b.daemon, f"session={session}") as client:
            await client.until_type("init")
            await client.send(
                {"channel": "agent", "type": "prompt", "prompt": "And again", "taskId": "t2"}
            )
            with trio.fail_after(20):
                done = await client.until_type("result")
            assert done["taskId"] == "t2", "B's client hears its own task end"
        turns = [
            f.action.message.text  # type: ignore[union-attr]
            for f in open_reader(postgres_database).facts(uri)
            if f.type == "chat/turnStarted"
        ]
        assert "And again" in turns
        facts = open_reader(postgres_database).facts(uri)
        views = [f for f in facts if f.type == "team/viewUpdated"]
        assert [dict(f.action.content) for f in views] == [{"lines": 3}]  # type: ignore[union-attr,arg-type]
        assert (await a.health())["owned_sessions"] == [uri]
        assert (await b.health())["owned_sessions"] == []
        assert_one_log(postgres_database, uri, resumed=0)
        # Ending the conversation on B: A records its end (completed: it was idle).
        async with connect(b.daemon, f"session={session}") as client:
            await client.until_type("init")
            await client.send({"channel": "agent", "type": "end"})
            with trio.fail_after(20):
                ended = await client.until_type("session_ended")
        assert ended["status"] == "completed"
        (info,) = [i for i in open_reader(postgres_database).sessions() if i.session == uri]
        assert info.status == "completed"

    async def test_a_board_change_sent_to_a_follower_is_made_by_the_owner(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A person's board request on B, which follows A's board session: A carries it
        out (its board refuses as on A, with the same words), B answers with the board once
        it has read the facts A wrote, and the log is one log, written by A."""
        a, b = nodes("a", "board"), nodes("b", "board")
        async with connect(a.daemon, "team=board") as client:
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship the notes"})
            await client.until_type("done")
        session = init["sessionId"]
        uri = "ahp-session:/" + session
        url = f"/api/sessions/{session}/board"

        def statuses(board: dict[str, Any]) -> dict[str, str]:
            return {item["id"]: item["status"] for item in board["items"]}

        async with (
            httpx.AsyncClient(base_url=a.url, timeout=40) as on_a,
            httpx.AsyncClient(base_url=b.url, timeout=40) as on_b,
        ):
            with trio.fail_after(30):
                while statuses((await on_a.get(url)).json()).get("draft") != "done":  # noqa: ASYNC110 (a process)
                    await trio.sleep(0.05)
            early = {"op": "done", "item": "publish"}
            refused_on_b, refused_on_a = (
                await on_b.post(url, json=early),
                await on_a.post(url, json=early),
            )
            assert refused_on_b.status_code == refused_on_a.status_code == 409
            assert refused_on_b.json() == refused_on_a.json()
            assert refused_on_b.json()["error"].startswith("refused: "), refused_on_b.text
            done = await on_b.post(url, json={"op": "done", "item": "approve"})
            assert done.status_code == 200, done.text
            assert statuses(done.json())["approve"] == "done", "B answers after reading it"
        facts = open_reader(postgres_database).facts(uri)
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        approved = [
            f
            for f in facts
            if f.type == "team/boardItemDone" and f.action.item == "approve"  # type: ignore[union-attr]
        ]
        assert len(approved) == 1
        assert (await a.health())["owned_sessions"] == [uri]
        assert (await b.health())["owned_sessions"] == []


class TestOwnerDies:
    async def test_a_follower_takes_the_session_over_and_its_clients_reattach(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """B follows A's session (its client sees the approval waiting); A is killed; B's
        followed session ends, its client told why (reattach), B takes the session over;
        the client reattaches to B, approves, and the run finishes: one log, taken up once."""
        a, b = nodes("a", "approver"), nodes("b", "approver")
        uri, request = await park_a_session(a, "approver")
        session = uri.removeprefix("ahp-session:/")
        async with connect(b.daemon, f"session={session}") as client:
            waiting = await client.until_type("permission_request")
            assert waiting["requestId"] == request["requestId"]
            a.process.send_signal(signal.SIGKILL)
            a.process.wait(10)
            ended = await client.until_type("session_ended")
        assert "reattach" in ended["reason"]
        assert "node a" in ended["reason"]
        await wait_until_owned(b, uri, within=TTL + 10)
        result = await approve_on(b, uri, request)
        assert "The release notes are ready." in result["summary"]
        assert_one_log(postgres_database, uri)
        events = [e["event"] for e in b.events()]
        assert "session no longer followed" in events
        assert "session taken over" in events or "session taken up" in events

    async def test_an_ahp_clients_origin_survives_forwarding(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """An AHP client of B confirms the tool call of A's session: A records the
        confirmation with the client's origin, and B's client receives its own action
        echoed with that origin (as it would from the owner)."""
        a, b = nodes("a", "approver"), nodes("b", "approver")
        uri, _ = await park_a_session(a, "approver")
        state = open_reader(postgres_database).open(uri)
        chat = state.coordinator_chat()
        assert chat is not None
        (pending,) = state.pending_approvals()
        async with connect_ahp(b.daemon) as on_b:
            await on_b.initialize(client_id="tablet", subscriptions=(uri, chat))
            seq = await on_b.dispatch(
                chat,
                {
                    "type": "chat/toolCallConfirmed",
                    "turnId": pending.request.turn_id,
                    "toolCallId": pending.request.tool_call_id,
                    "approved": True,
                    "confirmed": "user-action",
                },
            )
            confirmed = await on_b.until_action(
                lambda e: e["action"]["type"] == "chat/toolCallConfirmed"
            )
            assert "rejectionReason" not in confirmed
            assert confirmed["origin"] == {"clientId": "tablet", "clientSeq": seq}
            await on_b.until_action(
                lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
            )
        facts = open_reader(postgres_database).facts(uri)
        (fact,) = [f for f in facts if f.type == "chat/toolCallConfirmed"]
        assert fact.origin is not None
        assert (fact.origin.client_id, fact.origin.client_seq) == ("tablet", seq)
        assert_one_log(postgres_database, uri, resumed=0)


async def first_turn(node: Node, chat: str) -> str:
    """The id of ``chat``'s first turn, as ``node``'s AHP snapshot has it."""
    async with connect_ahp(node.daemon) as client:
        await client.initialize(client_id="reader", subscriptions=())
        state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    return str(state["turns"][0]["id"])


async def a_side_chat(node: Node, uri: str, lead: str, side: str) -> None:
    """Open ``side``, a side chat of ``lead``'s first turn, on ``node`` over AHP, with its
    first message; returns once the node answered."""
    turn = await first_turn(node, lead)
    async with connect_ahp(node.daemon) as client:
        await client.initialize(client_id="side-client", subscriptions=(uri,))
        await client.request(
            "createChat",
            {
                "channel": uri,
                "chat": side,
                "source": {"kind": "sideChat", "chat": lead, "turnId": turn},
                "initialMessage": {"text": "explain", "origin": {"kind": "user"}},
            },
        )


async def a_conversation(node: Node, db: str) -> tuple[str, str]:
    """A ``side`` conversation on ``node`` that answered its first prompt: its URI and its
    coordinator's chat."""
    async with connect(node.daemon, "team=side") as client:
        init = await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "What is up?"})
        await client.until_type("result")
    uri = "ahp-session:/" + init["sessionId"]
    lead = open_reader(db).open(uri).coordinator_chat()
    assert lead is not None
    return uri, lead


class TestForkedChats:
    async def test_a_side_chats_turn_cut_off_by_kill_9_runs_again_with_its_context(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """A side chat's turn is running when its node is killed; the node that takes the
        session up ends that turn interrupted (named in ``team/runResumed``) and runs it
        again, given the same context (the scripted answer of its second user message)."""
        a = nodes("a", "side")
        uri, lead = await a_conversation(a, postgres_database)
        side = f"ahp-chat:/{uuid.uuid4()}"
        await a_side_chat(a, uri, lead, side)
        reader = open_reader(postgres_database)
        with trio.fail_after(20):
            while reader.open(uri).chats.get(side) is None or (  # noqa: ASYNC110 (a process)
                reader.open(uri).chats[side].active_turn is None
            ):
                await trio.sleep(0.05)
        cut = reader.open(uri).chats[side].active_turn
        assert cut is not None
        a.process.send_signal(signal.SIGKILL)
        a.process.wait(10)
        b = nodes("b", "side")
        await wait_until_owned(b, uri, within=TTL + 20)
        with trio.fail_after(30):
            while len(reader.open(uri).chats[side].turns) < 2:  # noqa: ASYNC110 (a process)
                await trio.sleep(0.1)
        facts = reader.facts(uri)
        [resumed] = [f for f in facts if f.type == "team/runResumed"]
        assert resumed.action.interrupted == (side,)  # type: ignore[union-attr]
        on_side = [(f.sequence, f.type) for f in facts if f.channel == side]
        error = next(seq for seq, kind in on_side if kind == "chat/error")
        again = [seq for seq, kind in on_side if kind == "chat/turnStarted"][-1]
        assert resumed.sequence < error < again
        state = reader.open(uri)
        interrupted, rerun = state.chats[side].turns
        assert interrupted.id == cut.id
        assert interrupted.error is not None
        assert interrupted.error.error_type == "Interrupted"
        assert rerun.message.text == "explain"
        assert turn_text(rerun) == "side answer", "the side chat's context survived"
        assert [t.state.value for t in state.chats[lead].turns] == ["complete"]
        member = state.members[side]
        assert member.context == (("user", "What is up?"), ("assistant", "first answer"))
        assert_one_log(postgres_database, uri)

    async def test_a_side_chat_opened_cancelled_and_disposed_on_a_follower_is_the_owners(
        self, nodes: Callable[..., Node], postgres_database: str
    ) -> None:
        """``createChat`` with a source, a turn cancelled and ``disposeChat``, sent to B
        (which follows A's session), are carried out by A; B answers once it has read A's
        facts; a refusal comes back with A's words; the log is one log, written by A."""
        a, b = nodes("a", "side"), nodes("b", "side")
        uri, lead = await a_conversation(a, postgres_database)
        side, other = f"ahp-chat:/{uuid.uuid4()}", f"ahp-chat:/{uuid.uuid4()}"
        turn = await first_turn(a, lead)
        async with connect_ahp(b.daemon) as on_b:
            await on_b.initialize(client_id="tablet", subscriptions=(uri, lead))
            await on_b.request(
                "createChat",
                {
                    "channel": uri,
                    "chat": side,
                    "source": {
                        "kind": "sideChat",
                        "chat": lead,
                        "turnId": turn,
                        "selection": {"text": "first answer"},
                    },
                    "initialMessage": {"text": "explain", "origin": {"kind": "user"}},
                },
            )
            snapshot = (await on_b.request("subscribe", {"channel": side}))["snapshot"]
            assert snapshot["state"]["origin"] == {
                "kind": "sideChat",
                "chat": lead,
                "turnId": turn,
                "selection": {"text": "first answer"},
            }
            if not snapshot["state"]["turns"]:  # its turn (an instant one) may be done already
                await on_b.until_action(
                    lambda e: e["channel"] == side and e["action"]["type"] == "chat/turnComplete"
                )
            refused = await on_b.call(
                "createChat",
                {
                    "channel": uri,
                    "chat": other,
                    "source": {"kind": "fork", "chat": lead, "turnId": "nope"},
                },
            )
            assert "has no turn 'nope'" in refused["error"]["message"], refused
            # A fork, whose next turn is cancelled from B, then disposed of from B.
            await on_b.request(
                "createChat",
                {
                    "channel": uri,
                    "chat": other,
                    "source": {"kind": "fork", "chat": lead, "turnId": turn},
                    "initialMessage": {"text": "again", "origin": {"kind": "user"}},
                },
            )
            forked = (await on_b.request("subscribe", {"channel": other}))["snapshot"]["state"]
            if forked.get("activeTurn") is not None:
                running = forked["activeTurn"]["id"]
            else:  # it started after the subscribe
                started = await on_b.until_action(
                    lambda e: e["channel"] == other and e["action"]["type"] == "chat/turnStarted"
                )
                running = started["action"]["turnId"]
            seq = await on_b.dispatch(
                other, {"type": "chat/turnCancelled", "turnId": running, "duration": 0}
            )
            cancelled = await on_b.until_action(
                lambda e: e["channel"] == other and e["action"]["type"] == "chat/turnCancelled"
            )
            assert cancelled["origin"] == {"clientId": "tablet", "clientSeq": seq}
            assert cancelled["action"]["turnId"] == running
            await on_b.request("disposeChat", {"channel": other})
        facts = open_reader(postgres_database).facts(uri)
        added = [f for f in facts if f.type == "session/chatAdded"]
        assert [f.action.summary.resource for f in added] == [lead, side, other]  # type: ignore[union-attr]
        state = open_reader(postgres_database).open(uri)
        assert turn_text(state.chats[side].turns[-1]) != ""
        assert [t.state.value for t in state.chats[other].turns][-1] == "cancelled"
        assert [t.state.value for t in state.chats[lead].turns] == ["complete"]
        graph = build_graph(facts)
        assert graph.graph.has_edge(lead, side, key="forked")
        assert graph.graph.has_edge(lead, other, key="forked")
        assert (await a.health())["owned_sessions"] == [uri]
        assert (await b.health())["owned_sessions"] == []
        assert_one_log(postgres_database, uri, resumed=0)
