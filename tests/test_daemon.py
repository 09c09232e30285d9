"""The daemon on loopback: a real hypercorn, a real journal, real WebSocket and HTTP clients."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from trio_websocket import ConnectionRejected

from orchestrator._graph import build_graph
from orchestrator._journal import JournalReader
from orchestrator._team_actions import ApprovalResolved, RunFinished

from .daemon import ECHO, Client, connect, running_daemon

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
    async def test_healthz_and_metrics_answer_once_the_daemon_listens(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path) as daemon, daemon.http() as http:
            health = await http.get("/healthz")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            metrics = await http.get("/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain")
            assert 'orchestrator_sessions{status="running"} 0.0' in metrics.text
            assert "orchestrator_facts_appended_total" in metrics.text


class TestAgentChannel:
    async def test_a_team_run_with_a_delegated_approval(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path) as daemon, connect(daemon, "team=delivery") as client:
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
        facts = JournalReader(daemon.db).facts("ahp-session:/" + init["sessionId"])
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

    async def test_reconnecting_replays_the_history_then_live_events(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path) as daemon:
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
