"""The daemon on loopback: a real hypercorn, a real journal, real WebSocket and HTTP clients."""

from __future__ import annotations

import gc
import json
import logging
import os
import socket
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected

from orchestrator.base import ConfigError
from orchestrator.core import ApprovalResolved, RunFinished, ViewUpdated, build_graph
from orchestrator.journal import JournalReader, SqliteJournal, open_reader
from orchestrator.server import Role, ServeConfig, Token
from orchestrator.server._app import BODY_TIMEOUT
from orchestrator.sessions import Limits
from tests.support.ahp_client import ROOT, AhpClient, connect_ahp
from tests.support.daemon import Client, RunningDaemon, connect, running_daemon, websocket
from tests.support.paths import PROJECT_ROOT
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

TASK = "release-1"


def of_type(events: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") in kinds]


async def run_delivery(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    """Prompt the delivery team, approve the publish request; (init, result) events."""
    init = await client.until_type("init")
    await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0", "taskId": TASK})
    request = await client.until_type("permission_request")
    await client.send({"channel": "agent", "type": "approve", "requestId": request["requestId"]})
    result = await client.until_type("result")
    done = await client.receive()
    assert done == {"channel": "agent", "type": "done", "taskId": TASK}
    return init, result


class TestHealthAndMetrics:
    async def test_healthz_and_metrics_answer_once_the_daemon_listens(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        async with running_daemon(tmp_path, db=journal_db) as daemon, daemon.http() as http:
            health = await http.get("/healthz")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            assert health.json()["node"] == f"{socket.gethostname()}:{os.getpid()}"
            assert health.json()["owned_sessions"] == []
            metrics = await http.get("/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain")
            assert 'orchestrator_sessions{activity="busy",status="running"} 0.0' in metrics.text
            assert 'orchestrator_sessions{activity="idle",status="running"} 0.0' in metrics.text
            assert "orchestrator_facts_appended_total" in metrics.text
            for counted in ("held", "taken_over_total", "lost_total"):
                assert f"orchestrator_leases_{counted} 0.0" in metrics.text

    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_a_team_file_that_cannot_be_used_does_not_stop_the_others(
        self, tmp_path: Path
    ) -> None:
        """The daemon serves the good teams, names the bad file in /healthz, and a client
        asking for that team is told why, not 'no such team'."""
        teams = {
            "delivery": (PROJECT_ROOT / "teams" / "delivery.toml").read_text(encoding="utf-8"),
            "broken": '[team]\nname = "broken"\ncoordinator = "lead"\nparalel_budget = 2\n',
        }
        async with running_daemon(tmp_path, teams=teams) as daemon:
            async with daemon.http() as http:
                health = (await http.get("/healthz")).json()
            assert health["status"] == "ok"
            assert health["teams"] == ["delivery"]
            assert list(health["invalid_teams"]) == ["broken"]
            assert "paralel_budget" in health["invalid_teams"]["broken"]
            status, body = await refused(daemon, "team=broken", None)
            assert status == 404
            message = json.loads(body)["error"]
            assert message.startswith("team 'broken' cannot be used: its file has problems")
            assert "paralel_budget" in message
            async with connect(daemon, "team=delivery") as client:
                _, result = await run_delivery(client)
            assert result["type"] == "result"


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestTeamNames:
    async def test_a_team_is_named_by_its_team_name_and_its_file_is_shown_beside_it(
        self, tmp_path: Path
    ) -> None:
        """``handoff.toml`` holding ``[team] name = "support"``: /healthz, the session's
        init, the sessions list and AHP's root agents all say ``support``; /healthz shows
        the file beside it; a client asking by file stem (as before) gets the same team."""
        support = ECHO.replace('name = "echo"', 'name = "support"')
        async with running_daemon(tmp_path, teams={"handoff": support}) as daemon:
            async with daemon.http() as http:
                health = (await http.get("/healthz")).json()
            assert health["teams"] == ["support"]
            assert health["team_files"] == {"support": "handoff.toml"}
            for asked in ("support", "handoff"):
                async with connect(daemon, f"team={asked}") as client:
                    init = await client.until_type("init")
                    await client.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    await client.until_type("done")
                assert init["team"] == "support"
            async with daemon.http() as http:
                listed = (await http.get("/api/sessions")).json()["sessions"]
                assert [s["team"] for s in listed] == ["support", "support"]
                agui = await http.post(
                    "/agui?team=handoff",
                    json={"threadId": init["sessionId"], "runId": "r", "messages": []},
                )
                assert "runs team" not in agui.text  # the stem names the session's team
            async with connect_ahp(daemon) as ahp:
                result = await ahp.initialize(subscriptions=(ROOT,))
                (root,) = result["snapshots"]
                assert [a["provider"] for a in root["state"]["agents"]] == ["support"]
                status, body = await refused(daemon, "team=nope", None)
            assert status == 404
            assert "(teams: support (handoff.toml))" in json.loads(body)["error"]

    async def test_two_files_of_one_team_name_keep_the_first(self, tmp_path: Path) -> None:
        """The second file is not served, and /healthz says why."""
        async with (
            running_daemon(tmp_path, teams={"a": ECHO, "b": ECHO}) as daemon,
            daemon.http() as http,
        ):
            health = (await http.get("/healthz")).json()
        assert health["teams"] == ["echo"]
        assert health["team_files"] == {"echo": "a.toml"}
        assert list(health["invalid_teams"]) == ["b"]
        assert "[team] name 'echo' is already that of a.toml" in health["invalid_teams"]["b"]


class TestAgentChannel:
    async def test_a_team_run_with_a_delegated_approval(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        """On each database (``serve --db PATH`` or ``postgresql://...``)."""
        async with (
            running_daemon(tmp_path, db=journal_db) as daemon,
            connect(daemon, "team=delivery") as client,
        ):
            init, result = await run_delivery(client)
        assert init["team"] == "delivery"
        events = client.received
        kinds = [e["type"] for e in events]
        assert kinds[:3] == ["init", "prompt", "thinking"]
        assert events[1] == {
            "channel": "agent",
            "type": "prompt",
            "prompt": "Ship 2.0",
            "taskId": TASK,
        }
        # Three delegations, each invoked then answered, before the final answer.
        invocations = of_type(events, "tool_invocation")
        assert [i["toolName"] for i in invocations] == ["delegate"] * 3
        results = of_type(events, "tool_result")
        assert {r["toolCallId"] for r in results} == {i["toolCallId"] for i in invocations}
        assert kinds.index("permission_request") < kinds.index("result")
        request = of_type(events, "permission_request")[0]
        assert request["agentName"] == "researcher"
        assert request["toolName"] == "publish"
        assert request["summary"] == "target=release page"
        assert request["agentId"].startswith("ahp-chat:/")
        resolved = of_type(events, "permission_resolved")[0]
        assert resolved == {
            "channel": "agent",
            "type": "permission_resolved",
            "requestId": request["requestId"],
            "decision": "approved",
            "by": "local",
        }
        assert "The release notes are ready." in result["summary"]
        text = "".join(e["content"] for e in of_type(events, "text"))
        assert text.startswith("I'll split this into three tasks")
        # The journal has the run, the approval with who decided, and a consistent graph.
        facts = open_reader(daemon.db).facts("ahp-session:/" + init["sessionId"])
        decisions = [f.action for f in facts if isinstance(f.action, ApprovalResolved)]
        assert [(d.resolved_by, d.principal) for d in decisions] == [("user", "local")]
        assert not any(isinstance(f.action, RunFinished) for f in facts), "still a conversation"
        assert build_graph(facts).check() == []

    async def test_a_second_prompt_is_the_next_turn_of_the_same_session(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as client,
        ):
            init = await client.until_type("init")
            assert init["team"] == "echo", "the only team is the default"
            for n, prompt in enumerate(("one", "two")):
                await client.send(
                    {"channel": "agent", "type": "prompt", "prompt": prompt, "taskId": f"t{n}"}
                )
                await client.until_type("done")
        results = of_type(client.received, "result")
        assert [(r["summary"], r["taskId"]) for r in results] == [
            ("first answer", "t0"),
            ("second answer", "t1"),
        ]

    async def test_reconnecting_replays_the_history_then_live_events(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        async with running_daemon(tmp_path, db=journal_db) as daemon:
            async with connect(daemon, "team=delivery") as first:
                init, _ = await run_delivery(first)
            async with connect(daemon, f"session={init['sessionId']}") as second:
                again = await second.until_type("init")
                history = await second.receive()
        assert again == init
        assert history["type"] == "history"
        live = [
            {k: v for k, v in e.items() if k != "taskId"}
            for e in first.received
            if e["type"]
            in (
                "prompt",
                "text",
                "thinking",
                "tool_invocation",
                "tool_result",
                "result",
                "done",
                "question",
            )
        ]
        replayed = history["messages"]
        # The history joins streamed text into one event per part, and puts each tool
        # call's result right after it (live, results come as the calls finish).
        assert of_type(replayed, "prompt", "result", "done") == of_type(
            live, "prompt", "result", "done"
        )
        for kind in ("tool_invocation", "tool_result"):
            assert sorted(of_type(replayed, kind), key=str) == sorted(of_type(live, kind), key=str)
        assert "".join(e["content"] for e in of_type(replayed, "text")) == "".join(
            e["content"] for e in of_type(live, "text")
        )

    async def test_reattaching_mid_turn_shows_what_waits_and_can_answer_it(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path) as daemon:
            async with connect(daemon, "team=delivery") as first:
                init = await first.until_type("init")
                await first.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"})
                request = await first.until_type("permission_request")
            async with connect(daemon, f"session={init['sessionId']}") as second:
                await second.until_type("init")
                history = await second.until_type("history")
                assert history["messages"] == [], "no turn has finished yet"
                waiting = await second.until_type("permission_request")
                assert waiting == request
                await second.send(
                    {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
                )
                result = await second.until_type("result")
        assert "The release notes are ready." in result["summary"]
        replayed = second.received[2 : second.received.index(waiting)]
        assert replayed[0] == {"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"}
        assert of_type(replayed, "tool_invocation"), "the running turn so far is replayed"

    async def test_attaching_to_an_ended_session_shows_its_history_and_views(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with connect(daemon) as first:
                init = await first.until_type("init")
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")
                async with daemon.http() as http:
                    posted = await http.post(
                        "/callback",
                        json={
                            "type": "view_update",
                            "group_id": init["sessionId"],
                            "view_type": "diff",
                            "content": {"patch": "+x"},
                        },
                    )
                    assert posted.status_code == 200
                uri = "ahp-session:/" + init["sessionId"]
                async with connect_ahp(daemon) as ahp:
                    await ahp.initialize()
                    await ahp.request("disposeSession", {"channel": uri})
                ended = await first.until_type("session_ended")
            async with connect(daemon, f"session={init['sessionId']}") as late:
                events = [await late.receive() for _ in range(4)]
                with pytest.raises(ConnectionClosed) as closed:
                    await late.receive()
        assert ended["sessionId"] == init["sessionId"]
        assert events[0] == init
        assert events[1]["type"] == "history"
        assert of_type(events[1]["messages"], "result") == [
            {"channel": "agent", "type": "result", "summary": "first answer"}
        ]
        assert events[2] == {
            "channel": "views",
            "type": "view_update",
            "view_type": "diff",
            "content": {"patch": "+x"},
        }
        assert events[3] == {
            "channel": "agent",
            "type": "session_ended",
            "sessionId": init["sessionId"],
            "status": "completed",  # disposed while it waited for its next message
        }
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1001

    # trio-websocket leaves a refused handshake's socket to the garbage collector: collect
    # it here, where its ResourceWarning is expected, not in whichever test runs next.
    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_an_unknown_session_or_team_is_refused_at_the_handshake(
        self, tmp_path: Path
    ) -> None:
        async with running_daemon(tmp_path) as daemon:
            for query in ("session=nope", "team=nope"):
                with pytest.raises(ConnectionRejected) as refused:
                    async with connect(daemon, query):
                        pass
                assert refused.value.status_code == 404
                assert b"nope" in (refused.value.body or b"")
                del refused
                gc.collect()

    async def test_an_error_answers_on_the_channel_of_the_frame_that_caused_it(
        self, tmp_path: Path
    ) -> None:
        """A bad team-channel frame is answered on the team channel; an agent-channel one,
        and a frame that names no channel, on the agent channel."""
        async with running_daemon(tmp_path) as daemon, connect(daemon, "team=delivery") as client:
            await client.until_type("init")
            await client.send({"channel": "team", "type": "subscribe", "fromSequence": -1})
            error = await client.until(lambda e: e.get("type") == "error")
            assert error["channel"] == "team"
            assert error["code"] == "bad_request"
            assert error["message"].startswith("$.fromSequence: ")
            await client.send({"channel": "team", "type": "dance"})
            error = await client.until(lambda e: e.get("type") == "error")
            assert (error["channel"], error["code"]) == ("team", "bad_request")
            await client.send({"channel": "agent", "type": "prompt", "prompt": 3})
            error = await client.until(lambda e: e.get("type") == "error")
            assert (error["channel"], error["code"]) == ("agent", "bad_request")
            await client.send("{")
            error = await client.until(lambda e: e.get("type") == "error")
            assert (error["channel"], error["code"]) == ("agent", "bad_request")


class TestViewUpdates:
    async def test_a_view_reaches_clients_is_replayed_and_can_be_cleared(
        self, tmp_path: Path
    ) -> None:
        diff = {"patch": "diff --git a/x b/x\n+hello", "nested": {"kept": [1, None, "as is"]}}
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            daemon.http() as http,
        ):
            async with connect(daemon) as watcher:
                init = await watcher.until_type("init")
                await watcher.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                await watcher.until_type("done")
                update = {
                    "type": "view_update",
                    "group_id": init["sessionId"],
                    "view_type": "diff",
                    "content": diff,
                }
                posted = await http.post("/callback", json=update)
                assert posted.status_code == 200, posted.text
                seen = await watcher.until_type("view_update", channel="views")
            assert seen == {
                "channel": "views",
                "type": "view_update",
                "view_type": "diff",
                "content": diff,
            }
            async with connect(daemon, f"session={init['sessionId']}") as late:
                replayed = await late.until_type("view_update", channel="views")
            assert replayed == seen, "a connecting client gets the active views"
            cleared = await http.post("/callback", json={**update, "content": {}})
            assert cleared.status_code == 200
            async with connect(daemon, f"session={init['sessionId']}") as later:
                await later.until_type("history")
                await later.send({"channel": "agent", "type": "prompt", "prompt": "again"})
                await later.until_type("done")
            assert not of_type(later.received, "view_update"), "a cleared view is not replayed"

    @pytest.mark.parametrize(
        ("body", "status", "names"),
        [
            (b"not json", 400, "not JSON"),
            (b"[1, 2]", 400, "JSON object"),
            (
                b'{"type": "view_upd", "group_id": "g", "view_type": "d", "content": {}}',
                400,
                "type",
            ),
            (b'{"type": "view_update", "view_type": "d", "content": {}}', 400, "group_id"),
            (b'{"type": "view_update", "group_id": "g", "content": {}}', 400, "view_type"),
            (
                b'{"type": "view_update", "group_id": "g", "view_type": "d", "content": "x"}',
                400,
                "content",
            ),
            (
                b'{"type": "view_update", "group_id": "unknown", "view_type": "d", "content": {}}',
                404,
                "group_id",
            ),
            (
                b'{"type": "view_update", "group_id": "g", "view_type": "d", "content": {"p": "'
                + b"x" * 2_000_000
                + b'"}}',
                413,
                "limit",
            ),
        ],
    )
    # An oversize body is refused before it is read: httpx's upload generator, left
    # unfinished under trio, warns when collected. Collect it here, where that is expected.
    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_a_bad_view_update_is_refused_with_a_clear_error(
        self, tmp_path: Path, body: bytes, status: int, names: str
    ) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with daemon.http() as http:
                answer = await http.post(
                    "/callback", content=body, headers={"content-type": "application/json"}
                )
                assert answer.status_code == status
                assert names in answer.json()["error"]
                assert (await http.get("/healthz")).status_code == 200, "still serving"
            gc.collect()


#: A command tool that posts a view update into its own session and into the one named in
#: the file ``argv[1]``, writes the token it was told to ``argv[2]``, and prints the two
#: answers' statuses and its token.
CALLBACK_PROBE = """
import json, os, sys, urllib.error, urllib.request

token = os.environ["ORCHESTRATOR_CALLBACK_TOKEN"]
with open(sys.argv[2], "w") as told:
    told.write(token)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(group):
    update = {"type": "view_update", "group_id": group, "view_type": "diff",
              "content": {"patch": "+x"}}
    headers = {"content-type": "application/json", "authorization": "Bearer " + token}
    request = urllib.request.Request(
        os.environ["ORCHESTRATOR_CALLBACK_URL"], json.dumps(update).encode(), headers,
        method="POST")
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


with open(sys.argv[1]) as other:
    other_group = other.read()
own = post(os.environ["ORCHESTRATOR_GROUP_ID"])
print(json.dumps({"own": own, "other": post(other_group), "env": token}))
"""

OPERATOR, VIEWER, TOOL = "operator-token-0123456789", "viewer-token-0123456789", "tool-token-012345"
TOKENS = ServeConfig(
    tokens=(
        Token(name="alice", role=Role.OPERATOR, secret=OPERATOR),
        Token(name="victor", role=Role.VIEWER, secret=VIEWER),
        Token(name="sandbox", role=Role.TOOL, secret=TOOL),
    ),
    limits=Limits(shutdown_grace=0.5),
)


async def refused(daemon: RunningDaemon, query: str, token: str | None) -> tuple[int, bytes]:
    """The status and body of a refused WebSocket handshake."""
    with pytest.raises(ConnectionRejected) as rejection:
        async with connect(daemon, query, token=token):
            pass
    status, body = rejection.value.status_code, rejection.value.body or b""
    del rejection
    gc.collect()  # trio-websocket leaves the refused socket to the collector
    return status, body


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestAuth:
    async def test_each_role_may_do_what_it_should_and_nothing_else(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=TOKENS) as daemon:
            assert (await refused(daemon, "", None))[0] == 401
            assert (await refused(daemon, "", "wrong-token-0123456789"))[0] == 401
            assert (await refused(daemon, "", TOOL))[0] == 403
            status, body = await refused(daemon, "", VIEWER)
            assert status == 403
            assert b"operator" in body
            for secret in (OPERATOR, VIEWER, TOOL, "wrong"):
                assert secret.encode() not in body
            async with connect(daemon, token=OPERATOR) as operator:
                init = await operator.until_type("init")
                async with connect(daemon, f"session={init['sessionId']}", token=VIEWER) as viewer:
                    await viewer.until_type("history")
                    await viewer.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    error = await viewer.until_type("error")
                    assert error["code"] == "refused"
                    assert "victor may watch, not act" in error["message"]
                    await operator.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    await viewer.until_type("done")  # the viewer watches the operator's turn
            update = {
                "type": "view_update",
                "group_id": init["sessionId"],
                "view_type": "diff",
                "content": {"patch": ""},
            }
            checks = [
                (None, "GET", "/metrics", 401),
                (TOOL, "GET", "/metrics", 403),
                (VIEWER, "GET", "/metrics", 200),
                (None, "POST", "/callback", 401),
                (VIEWER, "POST", "/callback", 403),
                (OPERATOR, "POST", "/callback", 403),
                (TOOL, "POST", "/callback", 200),
                (None, "GET", "/healthz", 200),
            ]
            for token, method, path, status in checks:
                async with daemon.http(token) as http:
                    answer = await http.request(method, path, json=update)
                assert answer.status_code == status, (token, path, answer.text)
                if status == 401:
                    assert answer.headers["www-authenticate"] == "Bearer"
                for secret in (OPERATOR, VIEWER, TOOL):
                    assert secret not in answer.text

    async def test_an_approval_records_the_name_of_the_token_that_decided(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, config=TOKENS) as daemon,
            connect(daemon, "team=delivery", token=OPERATOR) as client,
        ):
            init, _ = await run_delivery(client)
        resolved = of_type(client.received, "permission_resolved")[0]
        assert resolved["by"] == "alice"
        facts = JournalReader(daemon.db).facts("ahp-session:/" + init["sessionId"])
        decisions = [f.action for f in facts if isinstance(f.action, ApprovalResolved)]
        assert [d.principal for d in decisions] == ["alice"]

    async def test_a_tool_call_s_token_posts_into_its_own_session_while_the_call_runs(
        self, tmp_path: Path
    ) -> None:
        """A command tool is given a token made for its call, not the daemon's tool token:
        POST /callback takes it for the call's own session (200), refuses it for another
        (403), and refuses it once the call has ended (401). A tool that prints it records
        ``[redacted]``; the journal never holds it."""
        other_file, token_file = tmp_path / "other-session", tmp_path / "told-token"
        script = tmp_path / "view_probe.py"
        script.write_text(CALLBACK_PROBE)
        argv = json.dumps([sys.executable, str(script), str(other_file), str(token_file)])
        team = (
            '[team]\nname = "views"\ncoordinator = "lead"\n'
            f"[tools.probe]\ncommand = {argv}\n"
            '[agents.lead]\nrole = "coordinator"\ntools = ["probe"]\n'
            '[[agents.lead.turns]]\nsteps = [ { tool = "probe" }, { say = "saw {outcomes}" } ]\n'
        )
        teams = {"views": team, "echo": ECHO}
        async with (
            running_daemon(tmp_path, teams=teams, config=TOKENS) as daemon,
            connect(daemon, "team=echo", token=OPERATOR) as bystander,
            connect(daemon, "team=views", token=OPERATOR) as client,
        ):
            other = (await bystander.until_type("init"))["sessionId"]
            await bystander.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
            await bystander.until_type("done")  # a started run: it takes views
            other_file.write_text(other)
            own = (await client.until_type("init"))["sessionId"]
            await client.send({"channel": "agent", "type": "prompt", "prompt": "go"})
            result = await client.until_type("result")
            told = token_file.read_text()
            update = {
                "type": "view_update",
                "group_id": own,
                "view_type": "diff",
                "content": {"patch": "+late"},
            }
            async with daemon.http(told) as http:
                late = await http.post("/callback", json=update)
            async with daemon.http(TOOL) as http:  # an outside tool's token still works
                outside = await http.post(
                    "/callback", json={**update, "content": {"patch": "+outside"}}
                )
        reported = json.loads(result["summary"].removeprefix("saw "))
        assert reported == {"own": 200, "other": 403, "env": "[redacted]"}
        assert len(told) >= 32
        assert told not in (OPERATOR, VIEWER, TOOL)
        assert late.status_code == 401, late.text
        assert outside.status_code == 200, outside.text
        reader = JournalReader(daemon.db)
        views = {
            session: [
                f.action.content
                for f in reader.facts("ahp-session:/" + session)
                if isinstance(f.action, ViewUpdated)
            ]
            for session in (own, other)
        }
        assert views == {own: [{"patch": "+x"}, {"patch": "+outside"}], other: []}
        assert told.encode() not in Path(daemon.db).read_bytes()

    def test_without_tokens_only_a_loopback_address_may_be_bound(self) -> None:
        ServeConfig(host="127.0.0.1").check()
        ServeConfig(host="::1").check()
        with pytest.raises(ConfigError, match=r"host: no \[tokens\] configured"):
            ServeConfig(host="0.0.0.0").check()
        ServeConfig(host="0.0.0.0", tokens=TOKENS.tokens).check()


async def test_the_example_client_runs_a_team_through_the_daemon(tmp_path: Path) -> None:
    async with running_daemon(tmp_path) as daemon:
        done = await trio.run_process(
            [
                sys.executable,
                str(PROJECT_ROOT / "examples" / "agent_client.py"),
                "Ship 2.0",
                "--url",
                daemon.ws_url,
                "--approve",
            ],
            capture_stdout=True,
            capture_stderr=True,
        )
    out = done.stdout.decode()
    assert (
        "researcher #3 (task: Publish the release notes to the release page) wants to run "
        "publish(target=release page)"
    ) in out
    # The workers show (from the team channel), each started and done.
    assert out.count("+ researcher@delivery#") == 3
    assert out.count("✔ researcher@delivery#") == 3
    # The answer once: streamed, then only "done".
    assert out.count("The release notes are ready.") == 1
    assert "== done" in out


async def test_the_example_client_says_in_one_line_that_a_session_is_unknown(
    tmp_path: Path,
) -> None:
    """A 404 (no such session) is one line naming the refusal and a failing exit, not a
    traceback."""
    async with running_daemon(tmp_path) as daemon:
        done = await trio.run_process(
            [
                sys.executable,
                str(PROJECT_ROOT / "examples" / "agent_client.py"),
                "--session",
                "0000-no-such-session",
                "--url",
                daemon.ws_url,
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err.count("\n") == 1, err
    assert err.startswith(f"agent_client: the daemon at {daemon.ws_url} refused: HTTP 404: ")
    assert "0000-no-such-session" in err


ASKS = """
[team]
name = "asks"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask", "delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { ask = "Which database?" }, { say = "Using {outcomes}." } ]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "slow work" } ] }, { say = "{outcomes}" } ]
[agents.worker]
role = "r"
[[agents.worker.turns]]
steps = [ { sleep = 60 }, { say = "never" } ]
"""


class TestRequests:
    async def test_a_question_is_answered_with_tool_response(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams={"asks": ASKS}) as daemon,
            connect(daemon) as client,
        ):
            await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "set up"})
            question = await client.until_type("question")
            assert question["questions"] == ["Which database?"]
            assert question["agentName"] == "lead"
            await client.send(
                {"channel": "agent", "type": "tool_response", "toolCallId": "nope", "result": "x"}
            )
            refused = await client.until_type("error")
            assert refused["code"] == "refused"
            assert "no open question for tool call 'nope'" in refused["message"]
            await client.send(
                {
                    "channel": "agent",
                    "type": "tool_response",
                    "toolCallId": question["toolCallId"],
                    "result": "PostgreSQL",
                }
            )
            result = await client.until_type("result")
        assert result["summary"] == "Using PostgreSQL."

    async def test_abort_cancels_the_task_s_turn_and_its_workers_and_the_session_goes_on(
        self, tmp_path: Path
    ) -> None:
        async with (
            running_daemon(tmp_path, teams={"asks": ASKS}) as daemon,
            connect(daemon) as client,
        ):
            await client.until_type("init")
            await client.send({"channel": "agent", "type": "prompt", "prompt": "a", "taskId": "q"})
            question = await client.until_type("question")
            await client.send(
                {
                    "channel": "agent",
                    "type": "tool_response",
                    "toolCallId": question["toolCallId"],
                    "result": "SQLite",
                }
            )
            await client.until_type("done")
            await client.send({"channel": "agent", "type": "abort", "taskId": "slow"})
            unknown = await client.until_type("error")
            assert "no task 'slow'" in unknown["message"]
            await client.send(
                {"channel": "agent", "type": "prompt", "prompt": "b", "taskId": "slow"}
            )
            await client.until_type("tool_invocation")
            await client.send({"channel": "agent", "type": "abort", "taskId": "slow"})
            error = await client.until_type("error")
            done = await client.receive()
            async with daemon.http() as http:
                metrics = (await http.get("/metrics")).text
        assert error == {
            "channel": "agent",
            "type": "error",
            "message": "cancelled",
            "taskId": "slow",
        }
        assert done == {"channel": "agent", "type": "done", "taskId": "slow"}
        # `orchestrator sessions` says running too: one vocabulary; idle is the activity.
        assert 'orchestrator_sessions{activity="idle",status="running"} 1.0' in metrics
        assert 'orchestrator_chats{status="killed"} 1.0' in metrics, "the aborted worker"


class _SmallDisk(SqliteJournal):
    """The real journal on a file SQLite may not grow past 96 KiB: a disk that fills up."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(path, max_bytes=96 * 1024, **options)


async def test_a_full_journal_turns_healthz_503_and_the_daemon_keeps_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("orchestrator.server._app.open_journal", _SmallDisk)
    async with running_daemon(tmp_path) as daemon, daemon.http() as http:
        assert (await http.get("/healthz")).status_code == 200
        async with connect(daemon, "team=delivery") as client:
            await client.until_type("init")
            for n in range(30):
                await client.send(
                    {"channel": "agent", "type": "prompt", "prompt": f"Ship {n} " + "x" * 3000}
                )
            ended = await client.until(lambda e: e["type"] in ("session_ended", "error"))
        health = await http.get("/healthz")
        assert health.status_code == 503, ended
        assert health.json()["status"] == "journal failed"
        assert "full" in health.json()["error"]
        assert (await http.get("/metrics")).status_code == 200, "still answering"


ALICE, BOB = "alice-operator-token-0123", "bob-operator-token-01234"
TWO_OPERATORS = ServeConfig(
    tokens=(
        Token(name="alice", role=Role.OPERATOR, secret=ALICE),
        Token(name="bob", role=Role.OPERATOR, secret=BOB),
    ),
    limits=Limits(shutdown_grace=0.5, max_unprompted_per_token=2),
)


async def refused_at(daemon: RunningDaemon, path: str, token: str | None) -> tuple[int, Any]:
    """The status and JSON body of a refused WebSocket handshake on ``path``."""
    with pytest.raises(ConnectionRejected) as rejection:
        async with websocket(f"{daemon.ws_url}{path}", token=token):
            pass
    status, body = rejection.value.status_code, rejection.value.body or b""
    del rejection
    gc.collect()  # trio-websocket leaves the refused socket to the collector
    return status, json.loads(body)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestLimits:
    async def test_a_token_holds_a_few_sessions_without_a_prompt(self, tmp_path: Path) -> None:
        """The next /ws?team= of that token is refused (429, naming the limit); another
        token is served; a prompt frees the place."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=TWO_OPERATORS) as daemon,
            connect(daemon, token=ALICE) as first,
            connect(daemon, token=ALICE) as second,
        ):
            await first.until_type("init")
            await second.until_type("init")
            status, body = await refused_at(daemon, "/ws", ALICE)
            assert status == 429
            assert body["limit"] == "max_unprompted_per_token"
            assert "alice holds 2 sessions with no prompt yet" in body["error"]
            async with connect(daemon, token=BOB) as other:
                await other.until_type("init")
            await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await first.until_type("done")
            async with connect(daemon, token=ALICE) as third:
                await third.until_type("init")

    async def test_connections_beyond_max_connections_are_refused_503(self, tmp_path: Path) -> None:
        """Every long-lived endpoint refuses one more with a JSON reason; /healthz and
        /metrics answer; a place freed is taken again."""
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_connections=2))
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            daemon.http() as http,
            connect(daemon) as first,
        ):
            await first.until_type("init")
            async with connect_ahp(daemon) as ahp:
                await ahp.initialize()
                for path in ("/ws", "/ahp", "/teammates"):
                    status, body = await refused_at(daemon, path, None)
                    assert (status, path) == (503, path)
                    assert "its limit (max_connections)" in body["error"]
                agui = await http.post("/agui?team=echo", json={"threadId": "t"})
                assert agui.status_code == 503
                assert "max_connections" in agui.json()["error"]
                assert (await http.get("/healthz")).status_code == 200
                assert (await http.get("/metrics")).status_code == 200
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")  # those connected are served on
            async with connect(daemon) as again:
                await again.until_type("init")

    async def test_no_session_is_opened_beyond_max_sessions(self, tmp_path: Path) -> None:
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_sessions=1))
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            connect(daemon) as first,
        ):
            await first.until_type("init")
            status, body = await refused_at(daemon, "/ws", None)
            assert status == 503
            assert body["limit"] == "max_sessions"
            await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await first.until_type("done")


async def receive_until_closed(client: AhpClient) -> None:
    while True:
        await client.receive()


class TestShutdown:
    async def test_ahp_clients_get_a_going_away_close_frame(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with connect_ahp(daemon) as ahp:
                await ahp.initialize(subscriptions=(ROOT,))
                daemon.stop.set()
                with pytest.raises(ConnectionClosed) as closed:
                    await receive_until_closed(ahp)
            with trio.fail_after(10):
                await daemon.stopped.wait()
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1001
        assert closed.value.reason.reason == "the daemon is stopping"


async def raw_request(daemon: RunningDaemon, request: bytes, *, then: str) -> bytes:
    """Send ``request`` on a new TCP connection; ``then``: "close" at once, "eof" (a half
    close) or "wait" for the answer. What came back before the server closed."""
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    answer = b""
    with trio.fail_after(60):
        try:
            await stream.send_all(request)
            if then == "eof":
                await stream.send_eof()
            if then != "close":
                while chunk := await stream.receive_some(65_536):
                    answer += chunk
                    if then == "wait" and b"}" in answer:
                        break
        finally:
            await stream.aclose()
    return answer


class TestLyingContentLength:
    @pytest.mark.parametrize("path", ["/callback", "/agui"])
    async def test_a_body_shorter_or_longer_than_declared_is_answered_cleanly(
        self, tmp_path: Path, path: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Declared more than sent (the client then goes, or half-closes): the connection
        is closed (hypercorn answers a half-closed one 400) and nothing is logged as an
        error. Declared fewer: the body is what was declared, answered 400 JSON; the rest
        is the next request on the connection."""
        body = b'{"type": "view_update", "group_id": "g", "view_type": "d", "content": {}}'

        def request(declared: int) -> bytes:
            head = (
                f"POST {path}?team=echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
            )
            return head.encode() + body

        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            assert await raw_request(daemon, request(len(body) + 50), then="close") == b""
            half_closed = await raw_request(daemon, request(len(body) + 50), then="eof")
            assert half_closed.startswith(b"HTTP/1.1 400 ")
            fewer = await raw_request(daemon, request(len(body) - 10), then="wait")
            assert fewer.startswith(b"HTTP/1.1 400 ")
            assert b": not JSON: Unterminated string" in fewer
            async with daemon.http() as http:
                assert (await http.get("/healthz")).status_code == 200
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == []

    @pytest.mark.parametrize("path", ["/callback", "/agui"])
    async def test_a_huge_declared_body_and_a_half_close_is_answered_413_every_time(
        self, tmp_path: Path, path: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A Content-Length far over the limit is refused from the headers; a client that
        half-closes right after sending a little of the body still reads the whole 413,
        every time, and nothing is logged as an error (hypercorn used to close the socket
        under the answer: an empty reply, and a BusyResourceError logged, about one in two)."""
        request = (
            f"POST {path}?team=echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 99999999999999\r\n\r\n"
            '{"type": "view_update"'
        ).encode()
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            answers = [await raw_request(daemon, request, then="eof") for _ in range(30)]
            async with daemon.http() as http:
                assert (await http.get("/healthz")).status_code == 200
        for answer in answers:
            head, _, text = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 413 "), answer
            assert json.loads(text) == {
                "error": "the body is 99999999999999 bytes; the limit is 1048576"
            }
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []

    async def test_a_body_that_never_comes_is_answered_408_on_time(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A client that declares more than it sends and waits holds its request
        BODY_TIMEOUT seconds, then gets 408 JSON and the connection is closed."""
        body = b'{"type": "view_update"'
        request = (
            b"POST /callback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" + body
        )
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            asked = trio.current_time()
            answer = await raw_request(daemon, request, then="wait")
            assert trio.current_time() - asked == pytest.approx(BODY_TIMEOUT, abs=0.01)
        head, _, text = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 ")
        assert b"connection: close" in head
        assert json.loads(text) == {
            "error": f"the body did not arrive within 30 s ({len(body)} of 100 bytes declared came)"
        }


class TestJournalFaults:
    async def test_a_session_that_cannot_record_ends_its_clients_told_why_others_go_on(
        self, tmp_path: Path
    ) -> None:
        """A batch the journal cannot store (here: its sequence is taken, by a row written
        behind the daemon's back) ends that session only: its clients get
        ``session_ended`` with the reason; another session goes on, /healthz stays 200."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as first,
            connect(daemon) as second,
            daemon.http() as http,
        ):
            for client in (first, second):
                await client.until_type("init")
                await client.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await client.until_type("done")
            session = "ahp-session:/" + first.received[0]["sessionId"]
            last = JournalReader(daemon.db).session(session).last_sequence
            raw = sqlite3.connect(daemon.db, timeout=10)
            raw.executemany(
                "INSERT INTO facts (session, sequence, channel, at, type, fact, checksum) "
                "VALUES (?, ?, ?, '', '', '{}', 0)",
                [(session, last + n, session) for n in range(1, 100)],
            )
            raw.commit()
            raw.close()
            await first.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            ended = await first.until_type("session_ended")
            assert "can record nothing more" in ended["reason"]
            assert "UNIQUE constraint failed" in ended["reason"]
            assert session in ended["reason"]
            await second.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            result = await second.until_type("result")
            assert result["summary"] == "second answer"
            health = await http.get("/healthz")
            assert health.status_code == 200, health.text

    async def test_a_failed_journal_ends_every_session_its_clients_told_why(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A full disk ends every live session at once, the idle ones too (not only the one
        whose batch found the disk full): each client gets ``session_ended`` saying so."""
        monkeypatch.setattr("orchestrator.server._app.open_journal", _SmallDisk)
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as idle,
            connect(daemon) as busy,
            connect(daemon) as unprompted,
        ):
            await idle.until_type("init")
            await idle.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await idle.until_type("done")
            await busy.until_type("init")
            await unprompted.until_type("init")
            for n in range(40):
                await busy.send(
                    {"channel": "agent", "type": "prompt", "prompt": f"{n} " + "x" * 5000}
                )
            for client in (busy, idle, unprompted):
                ended = await client.until_type("session_ended")
                assert ended["reason"].startswith("the journal failed: database or disk is full")

    async def test_an_agui_run_ended_by_a_full_disk_says_so_in_its_run_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An AG-UI client streaming a run when the journal fails gets ``RUN_ERROR`` with
        the journal's reason, not a bare "the session ended"."""
        monkeypatch.setattr("orchestrator.server._app.open_journal", _SmallDisk)
        sleepy = ECHO.replace(
            'steps = [ { say = "first answer", chunks = 2 } ]', "steps = [ { sleep = 60 } ]"
        ).replace('name = "echo"', 'name = "sleepy"')
        body = {
            "threadId": "slow-thread",
            "runId": "run-1",
            "messages": [{"id": "m1", "role": "user", "content": "take your time"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        events: list[dict[str, Any]] = []
        with trio.fail_after(30):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO, "sleepy": sleepy}) as daemon,
                daemon.http() as http,
                http.stream("POST", "/agui?team=sleepy", json=body) as stream,
                connect(daemon, "team=echo") as busy,
            ):
                lines = stream.aiter_lines()
                async for line in lines:
                    if line.startswith("data: "):
                        events.append(json.loads(line.removeprefix("data: ")))
                        if events[-1]["type"] == "RUN_STARTED":
                            break
                await busy.until_type("init")
                for n in range(40):
                    await busy.send(
                        {"channel": "agent", "type": "prompt", "prompt": f"{n} " + "x" * 5000}
                    )
                events += [
                    json.loads(line.removeprefix("data: "))
                    async for line in lines
                    if line.startswith("data: ")
                ]
        error = events[-1]
        assert error["type"] == "RUN_ERROR"
        assert error["code"] == "session_ended"
        assert error["message"].startswith("the journal failed: database or disk is full")

    async def test_a_dead_journal_writer_turns_healthz_503_and_the_daemon_still_stops(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The journal's writer thread ending on what it cannot contain (a bug) does not
        leave sessions hanging: /healthz says why with 503, clients are told, and the daemon
        stops when asked."""

        def broken(*args: object) -> None:
            raise _WriterBug("a bug in the writer")

        with trio.fail_after(20):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
                daemon.http() as http,
                connect(daemon) as client,
            ):
                await client.until_type("init")
                await client.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await client.until_type("done")
                monkeypatch.setattr("orchestrator.journal._group_commit._write_group", broken)
                await client.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                ended = await client.until_type("session_ended")
                assert "the journal's writer stopped: _WriterBug" in ended["reason"]
                health = await http.get("/healthz")
                assert health.status_code == 503
                assert "writer stopped" in health.json()["error"]
            assert daemon.stopped.is_set()


class _WriterBug(BaseException):
    """What no error barrier catches as an ``Exception``."""
