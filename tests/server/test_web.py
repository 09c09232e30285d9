"""The web view's server side: the page, sign-in, origins, the JSON reads, and the one-file
export; against a real daemon on loopback (the page in a real browser is
tests/e2e/test_web_ui.py)."""

from __future__ import annotations

import gc
import gzip
import json
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from trio_websocket import ConnectionRejected, WebSocketConnection, open_websocket_url

from orchestrator.cli import main
from orchestrator.core import build_graph, diff_sessions, to_json
from orchestrator.journal import JournalReader
from orchestrator.protocols import (
    AgentUiProjector,
    envelope_to_json_line,
    project_facts,
    structure_envelope,
)
from orchestrator.server import (
    CONTENT_SECURITY_POLICY,
    Role,
    ServeConfig,
    Token,
    _web,
)
from orchestrator.sessions import EnvelopeCache, GraphCache, Limits
from orchestrator.spec import parse_team
from tests.support.agentui import check_human_agent_board, check_review_team
from tests.support.ahp_client import connect_ahp, user_message
from tests.support.ahp_session import new_chat, turn_started
from tests.support.daemon import RunningDaemon, connect, running_daemon
from tests.support.fuzz import Fuzzer
from tests.support.paths import PROJECT_ROOT
from tests.support.paths import TEAMS as PROJECT_TEAMS
from tests.support.remote_replay import replayed_backends
from tests.support.runtime import Harness
from tests.support.teams import COUNTED, ECHO, remote
from tests.support.web_browser import WEB_ASSETS

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

OPERATOR = "web-operator-secret-0123456789"
VIEWER = "web-viewer-secret-0123456789ab"
TOOL = "web-tool-secret-0123456789abcd"
TOKENS = (
    Token(name="olivia", role=Role.OPERATOR, secret=OPERATOR),
    Token(name="victor", role=Role.VIEWER, secret=VIEWER),
    Token(name="sandbox", role=Role.TOOL, secret=TOOL),
)
CONFIG = ServeConfig(tokens=TOKENS, limits=Limits(shutdown_grace=0.5))
TEAMS = {"echo": ECHO, "counted": COUNTED}


@asynccontextmanager
async def _signed_in(daemon: RunningDaemon, token: str) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client, signed in: it holds the cookie and sends its page's origin."""
    async with httpx.AsyncClient(
        base_url=daemon.url, timeout=10, headers={"origin": daemon.url}
    ) as client:
        answer = await client.post("/api/login", json={"token": token})
        assert answer.status_code == 200, answer.text
        yield client


@asynccontextmanager
async def _raw_websocket(url: str, headers: dict[str, str]) -> AsyncIterator[WebSocketConnection]:
    """A WebSocket handshake with exactly ``headers`` (a browser's: origin, cookie)."""
    extra = [(k.encode(), v.encode()) for k, v in headers.items()]
    connection: WebSocketConnection | None = None
    try:
        async with open_websocket_url(url, extra_headers=extra) as connection:
            yield connection
    finally:
        if connection is not None:
            await connection._stream.aclose()


async def _refused(url: str, headers: dict[str, str]) -> int:
    """The status of a refused WebSocket handshake."""
    with pytest.raises(ConnectionRejected) as rejection:
        async with _raw_websocket(url, headers):
            pass
    status = rejection.value.status_code
    del rejection
    gc.collect()  # trio-websocket leaves the refused socket to the collector
    return int(status)


async def _finished_session(daemon: RunningDaemon) -> str:
    """A session of the echo team that has answered one prompt; its id."""
    async with connect(daemon, "team=echo", token=OPERATOR) as client:
        init = await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "hello web"})
        await client.until_type("done")
    return str(init["sessionId"])


# ─── the page and its assets ─────────────────────────────────────────────────


async def test_the_page_is_served_with_its_policy_and_hashed_assets(tmp_path: Path) -> None:
    async with (
        running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon,
        httpx.AsyncClient(base_url=daemon.url, timeout=10) as http,
    ):
        page = await http.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert page.headers["cache-control"] == "no-cache"
        assert page.headers["x-frame-options"] == "DENY"
        referenced = re.findall(r'"/assets/([^"]+)"', page.text)
        assert referenced, page.text
        for name in referenced:
            # every reference is content-hashed, and served for a year
            assert re.search(r"\.[0-9a-f]{12}(\.[a-z]+)?$", name), name
            asset = await http.get(f"/assets/{name}")
            assert asset.status_code == 200, name
            assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
            assert asset.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            if name.endswith(".js"):
                assert asset.headers["content-type"].startswith("text/javascript")
        # the plain name, a stale hash, a path out of the directory: all 404
        for wrong in ("app.js", "app.000000000000.js", "../_web.py", "%2e%2e/_app.py"):
            answer = await http.get(f"/assets/{wrong}")
            assert answer.status_code == 404, wrong
            if answer.url.path.startswith("/assets/"):  # not normalised away by httpx
                assert answer.headers["cache-control"] == "no-store"


# ─── sign-in and origins ─────────────────────────────────────────────────────


async def test_sign_in_gives_a_cookie_that_reads_and_acts_by_role(tmp_path: Path) -> None:
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        async with httpx.AsyncClient(base_url=daemon.url, timeout=10) as http:
            assert (await http.get("/api/me")).status_code == 401
            refused = await http.post("/api/login", json={"token": "not-a-token"})
            assert refused.status_code == 401
            assert "set-cookie" not in refused.headers
            # a guesser is slowed down: ten failures at once, then one every 6 s
            for _ in range(9):
                wrong = await http.post("/api/login", json={"token": "guess"})
                assert wrong.status_code == 401
            limited = await http.post("/api/login", json={"token": "guess"})
            assert limited.status_code == 429
            assert "too many failed sign-ins" in limited.json()["error"]
            tool = await http.post("/api/login", json={"token": TOOL})
            assert tool.status_code == 403
            assert "may not read" in tool.json()["error"]
            for body, where in ((b"[]", "$.token"), (b'{"token": 5}', "$.token"), (b"{", "")):
                answer = await http.post("/api/login", content=body)
                assert answer.status_code == 400, body
                assert where in answer.json()["error"], body
            huge = await http.post("/api/login", content=b"x" * 10_000)
            assert huge.status_code == 413
            signed = await http.post("/api/login", json={"token": VIEWER})
            attributes = signed.headers["set-cookie"].lower().split("; ")
            assert {"httponly", "samesite=strict", "path=/"} <= set(attributes)
            assert "secure" not in attributes  # plain http on loopback
        async with _signed_in(daemon, VIEWER) as viewer:
            [cookie] = list(viewer.cookies.jar)
            assert cookie.name == "orchestrator_session"
            assert cookie.value is not None
            assert VIEWER not in cookie.value
            me = (await viewer.get("/api/me")).json()
            assert me == {"name": "victor", "permissions": ["read"], "open": False}
            assert (await viewer.get("/api/sessions")).status_code == 200
            logout = await viewer.post("/api/logout")
            assert logout.status_code == 204
            assert (await viewer.get("/api/me")).status_code == 401
        async with _signed_in(daemon, OPERATOR) as operator:
            me = (await operator.get("/api/me")).json()
            assert me["permissions"] == ["operate", "read"]


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_page_of_another_site_cannot_use_the_cookie(tmp_path: Path) -> None:
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        session = await _finished_session(daemon)
        async with _signed_in(daemon, OPERATOR) as operator:
            cookie = operator.cookies["orchestrator_session"]
            evil = {"origin": "https://evil.example", "cookie": f"orchestrator_session={cookie}"}
            async with httpx.AsyncClient(base_url=daemon.url, timeout=10) as http:
                answer = await http.get("/api/sessions", headers=evil)
                assert answer.status_code == 403
                login = await http.post(
                    "/api/login",
                    json={"token": OPERATOR},
                    headers={"origin": "https://evil.example"},
                )
                assert login.status_code == 403
                same = {"origin": daemon.url, "cookie": f"orchestrator_session={cookie}"}
                assert (await http.get("/api/sessions", headers=same)).status_code == 200
            ws_url = f"{daemon.ws_url}/ws?session={session}"
            async with _raw_websocket(ws_url, same) as ws:
                assert json.loads(await ws.get_message())["type"] == "init"
            assert await _refused(ws_url, evil) == 403
            # a token brought by the page itself is taken from any origin, as before
            async with httpx.AsyncClient(base_url=daemon.url, timeout=10) as http:
                bearer = {"origin": "https://ui.example", "authorization": f"Bearer {VIEWER}"}
                assert (await http.get("/metrics", headers=bearer)).status_code == 200


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_with_no_tokens_only_loopback_pages_may_drive_the_daemon(tmp_path: Path) -> None:
    async with (
        running_daemon(tmp_path, teams=TEAMS) as daemon,
        httpx.AsyncClient(base_url=daemon.url, timeout=10) as http,
    ):
        me = await http.get("/api/me")
        assert me.json() == {
            "name": "local",
            "permissions": ["callback", "operate", "read"],
            "open": True,
        }
        for origin, status in (
            ("http://localhost:5173", 200),
            ("http://127.0.0.1:9", 200),
            ("https://evil.example", 403),
            ("http://attacker.test:8765", 403),  # DNS rebinding: its own name
            ("null", 403),
        ):
            answer = await http.get("/api/me", headers={"origin": origin})
            assert answer.status_code == status, origin
        port = daemon.url.rsplit(":", 1)[1]
        rebinding = {"origin": f"http://attacker.test:{port}"}
        assert await _refused(f"{daemon.ws_url}/ahp", rebinding) == 403


# ─── the JSON reads ──────────────────────────────────────────────────────────


async def _team_envelopes(daemon: RunningDaemon, session: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` envelopes the team channel sends from the start."""
    async with connect(daemon, f"session={session}", token=VIEWER) as client:
        await client.send({"channel": "team", "type": "subscribe", "fromSequence": 0})
        got: list[dict[str, Any]] = []
        while len(got) < count:
            event = await client.until(lambda e: e.get("channel") == "team")
            got.append(event["event"])
        return got


async def test_reads_match_what_the_live_channels_send(tmp_path: Path) -> None:
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        session = await _finished_session(daemon)
        second = await _finished_session(daemon)
        async with daemon.http(VIEWER) as http:
            listed = (await http.get("/api/sessions")).json()["sessions"]
            assert [s["id"] for s in listed] == [second, session]  # newest first
            summary = listed[1]
            assert summary["team"] == "echo"
            assert summary["live"] is True
            assert summary["pendingApprovals"] == 0
            assert summary["uri"] == f"ahp-session:/{session}"
            assert (await http.get(f"/api/sessions/{session}")).json() == summary
            assert len((await http.get("/api/sessions?limit=1")).json()["sessions"]) == 1
            none = (await http.get("/api/sessions?team=nobody")).json()
            assert none == {"sessions": []}

            read = (await http.get(f"/api/sessions/{session}/envelopes")).json()
            assert read["session"]["id"] == session
            envelopes = read["envelopes"]
            assert [e["sequence"] for e in envelopes] == list(range(1, len(envelopes) + 1))
            # the team channel's own numbering and content
            assert await _team_envelopes(daemon, session, len(envelopes)) == envelopes
            after = (await http.get(f"/api/sessions/{session}/envelopes?after=3")).json()
            assert after["envelopes"] == envelopes[3:]

            graph = (await http.get(f"/api/sessions/{session}/graph")).json()
            kinds = {n["kind"] for n in graph["nodes"]}
            assert {"session", "chat"} <= kinds
            chat = next(n["id"] for n in graph["nodes"] if n["kind"] == "chat")
            transcript = (
                await http.get(f"/api/sessions/{session}/transcript", params={"thread": chat})
            ).json()
            assert transcript["thread"] == chat
            assert transcript["agent"] == "lead"
            assert transcript["role"] == "coordinator"
            [turn] = transcript["turns"]
            kinds_seen = [e["type"] for e in turn["events"]]
            assert kinds_seen[0] == "prompt"
            assert kinds_seen[-2:] == ["result", "done"]
            assert turn["events"][0]["prompt"] == "hello web"

            for path, status, where in (
                ("/api/sessions/nope", 404, "no session 'nope'"),
                (f"/api/sessions/{session}/transcript", 400, "thread: missing"),
                (f"/api/sessions/{session}/transcript?thread=ahp-chat:/x", 404, "no chat"),
                (f"/api/sessions/{session}/envelopes?after=-1", 400, "after:"),
                (f"/api/sessions/{session}/envelopes?after=1e3", 400, "after:"),
                ("/api/sessions?limit=x", 400, "limit:"),
                ("/api/sessions?team=%01", 400, "team:"),
                ("/api/sessions?status=bogus", 400, "status: expected one of running, "),
            ):
                answer = await http.get(path)
                assert answer.status_code == status, (path, answer.text)
                assert where in answer.json()["error"], (path, answer.text)
    # an ended session, after a restart on the same journal, reads the same
    async with (
        running_daemon(tmp_path, teams=TEAMS, config=CONFIG, db=daemon.db) as again,
        again.http(VIEWER) as http,
    ):
        ended = (await http.get(f"/api/sessions/{session}/envelopes")).json()
        assert ended["envelopes"] == envelopes


async def test_a_pending_approval_is_counted_in_the_list(tmp_path: Path) -> None:
    async with (
        running_daemon(tmp_path, config=CONFIG) as daemon,
        connect(daemon, "team=delivery", token=OPERATOR) as client,
    ):  # the delivery team
        init = await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship it"})
        request = await client.until_type("permission_request")
        async with daemon.http(VIEWER) as http:
            summary = (await http.get(f"/api/sessions/{init['sessionId']}")).json()
            assert summary["pendingApprovals"] == 1
            assert (summary["pendingQuestions"], summary["pending"]) == (0, 1)
            assert summary["status"] == "running"
        await client.send(
            {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
        )
        await client.until_type("done")
        async with daemon.http(VIEWER) as http:
            summary = (await http.get(f"/api/sessions/{init['sessionId']}")).json()
            assert summary["pendingApprovals"] == 0


async def test_a_session_announced_before_its_first_fact_can_be_read(tmp_path: Path) -> None:
    """An AHP client opens a session and prompts it later: the root channel announces it at
    once, so the web's reads know it too (a running session with no facts yet, listed as
    the newest), not 404 until its first fact is down; its first prompt makes it the
    journal's, and the list shows it once."""
    async with running_daemon(tmp_path, config=CONFIG, teams=TEAMS) as daemon:
        recorded = await _finished_session(daemon)
        opened = f"ahp-session:/{uuid.uuid4()}"
        opened_id = opened.removeprefix("ahp-session:/")
        async with connect_ahp(daemon, token=OPERATOR) as ahp:
            await ahp.initialize()
            await ahp.request("createSession", {"channel": opened, "provider": "echo"})
            async with daemon.http(VIEWER) as http:
                summary = await http.get(f"/api/sessions/{opened_id}")
                listed = (await http.get("/api/sessions")).json()["sessions"]
                running = (await http.get("/api/sessions?status=running")).json()["sessions"]
                failed = (await http.get("/api/sessions?status=failed")).json()["sessions"]
                other_team = (await http.get("/api/sessions?team=counted")).json()["sessions"]
                newest = (await http.get("/api/sessions?limit=1")).json()["sessions"]
                reads = {
                    path: (await http.get(f"/api/sessions/{opened_id}/{path}")).status_code
                    for path in ("envelopes", "graph", "usage", "board")
                }
            assert summary.status_code == 200, summary.text
            assert {
                key: summary.json()[key]
                for key in ("id", "team", "status", "live", "resting", "facts")
            } == {
                "id": opened_id,
                "team": "echo",
                "status": "running",
                "live": True,
                "resting": False,
                "facts": 0,
            }
            assert [s["id"] for s in listed] == [opened_id, recorded]
            assert [s["id"] for s in running] == [opened_id, recorded]  # a conversation
            assert failed == []
            assert other_team == []
            assert [s["id"] for s in newest] == [opened_id]
            assert reads == dict.fromkeys(reads, 200)
            chat = new_chat()
            await ahp.request(
                "createChat",
                {"channel": opened, "chat": chat, "initialMessage": user_message("hello")},
            )
            await ahp.request("subscribe", {"channel": chat})
            await ahp.until_action(
                lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
            )
        async with daemon.http(VIEWER) as http:
            summary = await http.get(f"/api/sessions/{opened_id}")
            listed = (await http.get("/api/sessions")).json()["sessions"]
        assert summary.json()["facts"] > 0
        assert [s["id"] for s in listed] == [opened_id, recorded]
        unknown = uuid.uuid4()
        async with daemon.http(VIEWER) as http:
            assert (await http.get(f"/api/sessions/{unknown}")).status_code == 404


async def test_usage_per_chat_and_in_total_comes_from_the_facts(tmp_path: Path) -> None:
    """``GET /api/sessions/ID/usage``: each chat's tokens in and out, model calls (rounds
    that reported usage) and turn time; the total is their sum."""
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        async with connect(daemon, "team=counted", token=OPERATOR) as client:
            init = await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "write it"})
            await client.until_type("done")
        session = str(init["sessionId"])
        async with daemon.http(VIEWER) as http:
            answer = await http.get(f"/api/sessions/{session}/usage")
            graph = (await http.get(f"/api/sessions/{session}/graph")).json()
        assert answer.status_code == 200, answer.text
        used = answer.json()
        agent_of = {node["id"]: node.get("agent") for node in graph["nodes"]}
        by_agent = {agent_of.get(chat, chat): figures for chat, figures in used["chats"].items()}
        assert set(by_agent) == {"lead", "writer"}, used
        lead, writer = by_agent["lead"], by_agent["writer"]
        assert (lead["inputTokens"], lead["outputTokens"], lead["modelCalls"]) == (300, 50, 2)
        assert (writer["inputTokens"], writer["outputTokens"], writer["modelCalls"]) == (30, 7, 1)
        # The lead's turn waited for the writer's: it lasted at least as long.
        assert lead["durationMs"] >= writer["durationMs"]
        assert used["total"] == {
            key: lead[key] + writer[key]
            for key in ("inputTokens", "outputTokens", "modelCalls", "durationMs")
        }


async def test_a_fork_names_its_source_and_the_two_are_compared(tmp_path: Path) -> None:
    """A fork's summary carries ``forkedFrom``; ``GET /api/sessions/A/diff?with=B`` is what
    ``orchestrator diff --json`` prints, with each difference side by side; a ``with`` that
    names no session is a 404, none at all a 400."""
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        source = await _finished_session(daemon)
        async with daemon.http(VIEWER) as http:
            lead = next(
                n["id"]
                for n in (await http.get(f"/api/sessions/{source}/graph")).json()["nodes"]
                if n.get("kind") == "chat"
            )
            transcript = await http.get(f"/api/sessions/{source}/transcript?thread={lead}")
        [turn] = [t["id"] for t in transcript.json()["turns"]]
        fork = f"ahp-session:/{uuid.uuid4()}"
        async with connect_ahp(daemon, token=OPERATOR) as ahp:
            await ahp.initialize()
            fork_of = {"session": f"ahp-session:/{source}", "turnId": turn}
            await ahp.request("createSession", {"channel": fork, "fork": fork_of})
            chat = (await ahp.request("subscribe", {"channel": fork}))["snapshot"]["state"][
                "chats"
            ][0]["resource"]
            await ahp.request("subscribe", {"channel": chat})
            await ahp.dispatch(chat, turn_started("and now?"))
            await ahp.until_action(
                lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
            )
        fork_id = fork.removeprefix("ahp-session:/")
        async with daemon.http(VIEWER) as http:
            summary = (await http.get(f"/api/sessions/{fork_id}")).json()
            answer = await http.get(f"/api/sessions/{source}/diff?with={fork_id}")
            unknown = await http.get(f"/api/sessions/{source}/diff?with=nope")
            missing = await http.get(f"/api/sessions/{source}/diff")
        assert summary["forkedFrom"]["session"] == f"ahp-session:/{source}"
        assert summary["forkedFrom"]["turnId"] == turn
        assert answer.status_code == 200, answer.text
        reader = JournalReader(daemon.db)
        expected = diff_sessions(
            reader.facts(f"ahp-session:/{source}"), reader.facts(fork)
        ).to_json()
        assert answer.json() == expected
        [lead_diff] = answer.json()["chats"]
        assert {"what": "turn 2: asked", "a": "-", "b": "'and now?'"} in lead_diff["sides"]
        assert (unknown.status_code, missing.status_code) == (404, 400)
        assert "with" in unknown.json()["error"]
        assert "with: missing" in missing.json()["error"]


#: A team on the OpenAI-compatible backend (a local server: no key needed; never called).
LOCAL_MODEL = """
[team]
name = "local"
coordinator = "lead"
[openai]
model = "team-model"
base_url = "http://127.0.0.1:9/v1"
[agents.lead]
role = "coordinator"
backend = "openai"
"""


async def test_the_teams_a_run_can_be_started_with_are_listed(tmp_path: Path) -> None:
    """Each with the model of its OpenAI-compatible agents (what a new session may
    replace), or null."""
    teams_served = {**TEAMS, "local": LOCAL_MODEL}
    async with running_daemon(tmp_path, teams=teams_served, config=CONFIG) as daemon:
        async with daemon.http(VIEWER) as http:
            answer = await http.get("/api/teams")
        assert answer.status_code == 200, answer.text
        teams = answer.json()["teams"]
        assert [team["name"] for team in teams] == ["counted", "echo", "local"]
        assert teams[0] == {
            "name": "counted",
            "description": "A lead and a writer whose model calls report the tokens they used.",
            "coordinator": "lead",
            "agents": ["lead", "writer"],
            "model": None,
        }
        assert teams[2]["model"] == "team-model"
        async with httpx.AsyncClient(base_url=daemon.url) as anonymous:
            assert (await anonymous.get("/api/teams")).status_code == 401


async def test_a_stopping_daemon_says_so_rather_than_not_live(tmp_path: Path) -> None:
    """While the daemon stops it drops its sessions before its HTTP goes: a session read
    then answers 503, not ``live: false``, which a page would take for "ended"."""
    config = attrs.evolve(CONFIG, limits=Limits(shutdown_grace=3))
    async with (
        running_daemon(tmp_path, config=config) as daemon,
        connect(daemon, "team=delivery", token=OPERATOR) as client,
        daemon.http(VIEWER) as http,
    ):
        init = await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship it"})
        await client.until_type("permission_request")  # parked: stopping takes the grace
        path = f"/api/sessions/{init['sessionId']}"
        assert (await http.get(path)).json()["live"] is True
        daemon.stop.set()
        with trio.fail_after(5):
            while (answer := await http.get(path)).status_code == 200:
                assert answer.json()["live"] is True, "read as not live while stopping"
                await trio.sleep(0.01)
        assert answer.status_code == 503
        assert "stopping" in answer.json()["error"]
        assert (await http.get(f"{path}/envelopes")).status_code == 503


# ─── the one-file export ─────────────────────────────────────────────────────


async def test_graph_html_writes_one_file_that_draws_the_session_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        session = await _finished_session(daemon)
        async with daemon.http(VIEWER) as http:
            envelopes = (await http.get(f"/api/sessions/{session}/envelopes")).json()["envelopes"]
    out = tmp_path / "graph.html"
    code = await trio.to_thread.run_sync(
        lambda: main(["graph", session[:8], "--db", str(daemon.db), "--format", "html"])
    )
    assert code == 0
    html = capsys.readouterr().out
    out.write_text(html)
    assert "/assets/" not in html  # nothing to fetch: scripts and styles are inline
    assert "<script>" in html
    assert "<style>" in html
    data = re.search(r'id="orchestrator-data">(.*?)</script>', html, re.S)
    assert data is not None
    offline = json.loads(data.group(1))
    assert offline["envelopes"] == envelopes
    assert offline["session"]["id"] == session


# ─── hostile input ───────────────────────────────────────────────────────────


async def test_hostile_requests_to_the_web_routes_get_clear_refusals(tmp_path: Path) -> None:
    """Seeded: sign-in bodies broken every way the fuzzer knows, and hostile text in every
    path segment and query value. Each gets a 2xx or a 4xx JSON error (never a 5xx), and
    the daemon serves on."""
    fuzzer = Fuzzer(20261127)
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        session = await _finished_session(daemon)
        async with daemon.http(VIEWER) as http:
            for _ in range(120):
                body = fuzzer.frame({"token": VIEWER})
                answer = await http.post(
                    "/api/login",
                    content=body
                    if isinstance(body, bytes)
                    else body.encode("utf-8", "surrogatepass"),
                )
                assert answer.status_code in (200, 400, 401, 413, 429), (body, answer.text)
                assert isinstance(answer.json(), dict), (body, answer.status_code, answer.text)
            for _ in range(200):
                hostile = fuzzer.hostile()[:3000]
                path = fuzzer.random.choice(
                    [
                        "/api/sessions/{x}",
                        "/api/sessions/{x}/envelopes",
                        "/api/sessions/{x}/graph",
                        "/api/sessions/{x}/usage",
                        "/api/sessions/{x}/diff?with={x}",
                        f"/api/sessions/{session}/diff?with={{x}}",
                        "/api/teams?{x}={x}",
                        f"/api/sessions/{session}/transcript?thread={{x}}",
                        f"/api/sessions/{session}/envelopes?after={{x}}",
                        "/api/sessions?limit={x}&team={x}&status={x}",
                    ]
                )
                url = path.replace("{x}", httpx.QueryParams({"v": hostile}).__str__()[2:])
                answer = await http.get(url)
                assert answer.status_code < 500, (url, answer.text)
                if answer.status_code >= 400 and answer.url.path.startswith("/api/"):
                    assert "error" in answer.json(), (url, answer.text)
            assert (await http.get(f"/api/sessions/{session}")).status_code == 200


# ─── envelopes kept between reads ────────────────────────────────────────────


async def test_kept_envelopes_grow_with_the_log_and_the_oldest_go_first(tmp_path: Path) -> None:
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        first = await _finished_session(daemon)
        second = await _finished_session(daemon)
        reader = JournalReader(daemon.db)
        cache = EnvelopeCache(reader)
        uri = f"ahp-session:/{first}"
        before = await cache.envelopes(uri)
        # the same session answers a second prompt: the cache is fed only what is new
        async with connect(daemon, f"session={first}", token=OPERATOR) as client:
            await client.until_type("history")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "again"})
            await client.until_type("done")
        after = await cache.envelopes(uri)
        whole = [envelope_to_json_line(e) for e in project_facts(uri, reader.facts(uri))]
        assert after == whole
        assert after[: len(before)] == before
        assert len(after) > len(before)
        # past its capacity, the least recently read session goes
        small = EnvelopeCache(reader, capacity=cache.size)
        await small.envelopes(uri)
        await small.envelopes(f"ahp-session:/{second}")
        kept = await small.envelopes(f"ahp-session:/{second}")
        assert small.size == sum(len(line) for line in kept)


async def test_kept_graphs_grow_with_the_log_and_the_oldest_go_first(tmp_path: Path) -> None:
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        first = await _finished_session(daemon)
        second = await _finished_session(daemon)
        reader = JournalReader(daemon.db)
        graphs = GraphCache(reader)
        uri = f"ahp-session:/{first}"
        await graphs.graph_json(uri)
        folded = graphs.size
        async with connect(daemon, f"session={first}", token=OPERATOR) as client:
            await client.until_type("history")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "again"})
            await client.until_type("done")
        # fed only what is new, it is the graph of the whole log
        after = await graphs.graph_json(uri)
        assert after == to_json(build_graph(reader.facts(uri)))
        assert graphs.size == len(reader.facts(uri)) > folded
        # the daemon's endpoint answers the same
        async with daemon.http(VIEWER) as http:
            answer = await http.get(f"/api/sessions/{first}/graph")
        assert answer.json() == json.loads(after)
        # past its capacity, the least recently read session goes
        small = GraphCache(reader, capacity=graphs.size)
        await small.graph_json(uri)
        await small.graph_json(f"ahp-session:/{second}")
        assert small.size == len(reader.facts(f"ahp-session:/{second}"))


async def test_large_answers_are_gzipped_for_clients_that_take_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_web, "GZIP_FROM", 1)
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        session = await _finished_session(daemon)
        async with daemon.http(VIEWER) as http:
            path = f"/api/sessions/{session}/envelopes"
            zipped = await http.get(path, headers={"accept-encoding": "gzip"})
            plain = await http.get(path, headers={"accept-encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert zipped.json() == plain.json()
    assert int(zipped.headers["content-length"]) < int(plain.headers["content-length"])


class TestGzipCache:
    """A big answer that comes again (an ended session's envelopes) is compressed once."""

    def test_the_same_text_is_compressed_once_and_reads_back(self) -> None:
        cache = _web.GzipCache(capacity=2)
        data = json.dumps([{"sequence": n, "type": "agent.spawned"} for n in range(2000)])
        first = cache.compress(data.encode())
        assert gzip.decompress(first) == data.encode()
        assert cache.compress(data.encode()) is first  # kept, not compressed again
        other = cache.compress(b"another answer")
        assert gzip.decompress(other) == b"another answer"
        assert cache.compress(data.encode()) is first

    def test_the_least_recently_used_goes_first(self) -> None:
        cache = _web.GzipCache(capacity=2)
        a = cache.compress(b"a" * 100)
        b = cache.compress(b"b" * 100)
        assert cache.compress(b"a" * 100) is a  # a used last: b is the oldest now
        cache.compress(b"c" * 100)
        assert cache.compress(b"a" * 100) is a
        again = cache.compress(b"b" * 100)
        assert again is not b
        assert gzip.decompress(again) == b"b" * 100

    async def test_an_answer_served_twice_is_the_same_gzipped_bytes(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_web, "GZIP_FROM", 1)
        async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
            session = await _finished_session(daemon)
            async with daemon.http(VIEWER) as http:
                path = f"/api/sessions/{session}/envelopes"
                first = await http.get(path, headers={"accept-encoding": "gzip"})
                second = await http.get(path, headers={"accept-encoding": "gzip"})
                plain = await http.get(path, headers={"accept-encoding": "identity"})
        assert first.headers["content-encoding"] == "gzip"
        assert first.json() == second.json() == plain.json()
        assert first.headers["content-length"] == second.headers["content-length"]


async def test_a_live_sessions_envelopes_are_projected_once_for_every_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two team-channel subscribers from different cursors and the web view's reads share
    one projection: each fact of the session is fed to a projector once, and each reader
    sees the same envelopes, with no gap and no duplicate, across a live turn."""
    fed: list[int] = []
    original = AgentUiProjector.feed

    def counting(self: AgentUiProjector, fact: Any) -> Any:
        fed.append(fact.sequence)
        return original(self, fact)

    monkeypatch.setattr(AgentUiProjector, "feed", counting)
    async with running_daemon(tmp_path, teams=TEAMS, config=CONFIG) as daemon:
        session = await _finished_session(daemon)
        async with (
            daemon.http(VIEWER) as http,
            connect(daemon, f"session={session}", token=OPERATOR) as first,
            connect(daemon, f"session={session}", token=VIEWER) as second,
        ):
            path = f"/api/sessions/{session}/envelopes"
            before = (await http.get(path)).json()["envelopes"]
            await first.send({"channel": "team", "type": "subscribe", "fromSequence": 0})
            await second.send({"channel": "team", "type": "subscribe", "fromSequence": 2})
            await first.until_type("history")
            await first.send({"channel": "agent", "type": "prompt", "prompt": "again"})
            await first.until_type("done")
            after = (await http.get(path)).json()["envelopes"]
            assert after[: len(before)] == before
            assert len(after) > len(before)
            for client, start in ((first, 0), (second, 2)):
                seen = [e["event"] for e in client.received if e.get("channel") == "team"]
                while len(seen) < len(after) - start:
                    seen.append((await client.until(lambda e: e.get("channel") == "team"))["event"])
                assert seen == after[start:]
    assert sorted(fed) == sorted(set(fed))  # no fact projected twice


class TestRemoteTeammateInTheGraph:
    """graph-model.js (run by node, no browser) folds a remote teammate's envelopes into a
    node of its own kind, whose status says its remote task's state in words."""

    async def test_a_remote_teammate_is_a_remote_node(self, tmp_path: Path) -> None:
        team = parse_team(remote({"far": "http://127.0.0.1:9/"}), file="remote.toml")
        h = Harness(team, backends=replayed_backends)
        with trio.fail_after(60):
            await h.runtime.run("Go")
        lines = [envelope_to_json_line(e) for e in project_facts(h.runtime.session, h.facts)]
        (tmp_path / "envelopes.json").write_text("[" + ",".join(lines) + "]")
        script = (
            f"require({str(WEB_ASSETS / 'graph-model.js')!r});"
            f"const envs = require({str(tmp_path / 'envelopes.json')!r});"
            "const m = globalThis.Orchestrator.graphModel;"
            "const model = m.foldEnvelopes(envs);"
            "console.log(JSON.stringify(m.tableRows(model).map(r => [r.kind, r.agent, r.status])));"
        )
        done = await trio.run_process(["node", "-e", script], capture_stdout=True)
        rows = json.loads(done.stdout)
        assert ["remote", "far", "completed (remote: completed)"] in rows
        assert ["chat", "helper", "completed"] in rows
        assert ["chat", "lead", "completed"] in rows


# ─── the board ───────────────────────────────────────────────────────────────

BOARD_TEAMS = {"board": (PROJECT_TEAMS / "board.toml").read_text(encoding="utf-8")}


async def _board_session(daemon: RunningDaemon) -> str:
    """A session of the shipped board team, its first prompt answered and its agents' items
    done (notes, draft); the item for a person waits."""
    async with connect(daemon, "team=board", token=OPERATOR) as client:
        init = await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship the notes"})
        await client.until_type("done")
    session = str(init["sessionId"])
    async with daemon.http(OPERATOR) as http:
        with trio.fail_after(30):
            while True:
                items = (await http.get(f"/api/sessions/{session}/board")).json()["items"]
                if [i["status"] for i in items][:2] == ["done", "done"]:
                    return session
                await trio.sleep(0.05)


def _statuses(board: dict[str, Any]) -> dict[str, str]:
    return {item["id"]: item["status"] for item in board["items"]}


class TestBoard:
    async def test_a_person_works_the_board_and_a_viewer_is_refused(self, tmp_path: Path) -> None:
        """Through the daemon: a viewer's request is refused and writes nothing; the
        operator's done is attributed to her principal, and frees the writer's item, which
        the runtime then starts. After a restart (the journal reopened), each item's history
        reads back the same."""
        db = tmp_path / "journal.db"
        async with running_daemon(tmp_path, teams=BOARD_TEAMS, config=CONFIG, db=db) as daemon:
            session = await _board_session(daemon)
            url = f"/api/sessions/{session}/board"
            async with daemon.http(VIEWER) as viewer:
                before = (await viewer.get(url)).json()
                assert _statuses(before) == {
                    "notes": "done", "draft": "done", "approve": "open", "publish": "open",
                }  # fmt: skip
                refused = await viewer.post(url, json={"op": "claim", "item": "approve"})
                assert refused.status_code == 403
                assert (await viewer.get(url)).json() == before
            async with daemon.http(OPERATOR) as olivia:
                early = await olivia.post(url, json={"op": "done", "item": "publish"})
                assert early.status_code == 409
                assert early.json()["error"] == (
                    "refused: item 'publish' depends on 'approve', not done yet"
                )
                done = await olivia.post(url, json={"op": "done", "item": "approve"})
                assert done.status_code == 200, done.text
                with trio.fail_after(30):
                    while True:  # the writer is started on publish, and does it
                        after = (await olivia.get(url)).json()
                        if _statuses(after)["publish"] == "done":
                            break
                        await trio.sleep(0.05)
                # The daemon's Agent UI envelopes of the session pass the topology's checker.
                read = await olivia.get(f"/api/sessions/{session}/envelopes")
                check_human_agent_board([structure_envelope(e) for e in read.json()["envelopes"]])
        approve = next(i for i in after["items"] if i["id"] == "approve")
        assert [(e["event"], e["by"], e["byKind"]) for e in approve["history"]] == [
            ("create", "board", "team"),
            ("done", "olivia", "person"),
        ]
        publish = next(i for i in after["items"] if i["id"] == "publish")
        assert [(e["event"], e["by"]) for e in publish["history"]] == [
            ("create", "board"),
            ("start", "writer"),
            ("done", "writer"),
        ]
        # The journal reopened: the same board, history and all.
        assert JournalReader(db).open(f"ahp-session:/{session}").run is not None
        async with (
            running_daemon(tmp_path, teams=BOARD_TEAMS, config=CONFIG, db=db) as daemon,
            daemon.http(VIEWER) as viewer,
        ):
            reopened = (await viewer.get(f"/api/sessions/{session}/board")).json()
        assert reopened == after

    async def test_hostile_board_requests_get_clear_refusals(self, tmp_path: Path) -> None:
        """Seeded: board requests broken every way the fuzzer knows. Each gets a 200 or a 4xx
        JSON error naming what was wrong (never a 5xx), and the daemon serves on."""
        fuzzer = Fuzzer(20261207)
        async with running_daemon(tmp_path, teams=BOARD_TEAMS, config=CONFIG) as daemon:
            session = await _board_session(daemon)
            url = f"/api/sessions/{session}/board"
            async with daemon.http(OPERATOR) as http:
                for _ in range(150):
                    template = fuzzer.random.choice(
                        [
                            {"op": "comment", "item": "approve", "text": "looks good"},
                            {"op": "block", "item": "publish", "reason": "?", "waitingFor": "@x"},
                            {"op": "assign", "item": "approve", "assignee": "writer"},
                            {"op": "move", "item": "approve", "status": "claimed"},
                        ]
                    )
                    body = fuzzer.frame(template)
                    answer = await http.post(
                        url,
                        content=body
                        if isinstance(body, bytes)
                        else body.encode("utf-8", "surrogatepass"),
                    )
                    assert answer.status_code in (200, 400, 409, 413), (body, answer.text)
                    assert isinstance(answer.json(), dict), (body, answer.text)
                    if answer.status_code != 200:
                        assert answer.json()["error"], (body, answer.text)
                assert (await http.get(url)).status_code == 200
                assert (await http.get(f"/api/sessions/{session}")).status_code == 200


class TestReviewTeamInTheDaemon:
    async def test_its_envelopes_pass_the_agent_ui_checker(self, tmp_path: Path) -> None:
        """The review team run by the daemon: the session's Agent UI envelopes (the web
        view's read) pass the review_team checker, one fix then passed."""
        team = (PROJECT_ROOT / "teams" / "review.toml").read_text(encoding="utf-8")
        async with running_daemon(tmp_path, teams={"review": team}, config=CONFIG) as daemon:
            async with connect(daemon, "team=review", token=OPERATOR) as client:
                init = await client.until_type("init")
                await client.send({"channel": "agent", "type": "prompt", "prompt": "notes"})
                await client.until_type("done")
            session = str(init["sessionId"])
            async with daemon.http(VIEWER) as http:
                read = (await http.get(f"/api/sessions/{session}/envelopes")).json()
        envelopes = [structure_envelope(e) for e in read["envelopes"]]
        reviews = check_review_team(envelopes)
        assert [(e.type, (e.payload or {})["status"]) for e in reviews][-1] == (
            "review.completed",
            "passed",
        )
        assert len(reviews) == 6
