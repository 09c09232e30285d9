"""``POST /agui`` on the real daemon: AG-UI runs of a team over HTTP + SSE, checked with the
official models and driven by the official ``@ag-ui/client``, through an approval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator.core import build_graph, parse_traceparent
from orchestrator.journal import JournalReader
from orchestrator.runtime import Tracing, TracingSettings, install_tracing
from orchestrator.server import ServeConfig
from orchestrator.sessions import Limits
from tests.support.agui import check_run, client, of_type, printed, validate_event
from tests.support.ahp_client import connect_ahp
from tests.support.daemon import RunningDaemon, connect, running_daemon
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


THREAD = "release-thread-1"


def run_input(run_id: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": THREAD,
        "runId": run_id,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


async def post_run(
    daemon: RunningDaemon,
    body: dict[str, Any],
    *,
    team: str = "delivery",
    headers: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """POST one RunAgentInput; the events of its SSE stream, each validated."""
    events: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(base_url=daemon.url, timeout=30) as http,
        http.stream("POST", f"/agui?team={team}", json=body, headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line.removeprefix("data: "))
                validate_event(event)
                events.append(event)
    check_run(events)
    return events


class TestAguiEndpoint:
    async def test_a_run_from_a_traced_app_continues_its_trace(self, tmp_path: Path) -> None:
        """Tracing on: each prompt's run is a child of the ``traceparent`` its request came
        with, in that trace; the thread's second run links to its first."""
        first_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        second_parent = "00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203332-01"
        hello = {"id": "m1", "role": "user", "content": "hello"}
        again = {"id": "m2", "role": "user", "content": "again"}
        exporter = InMemorySpanExporter()
        tracing = Tracing(TracingSettings(enabled=True), processor=SimpleSpanProcessor(exporter))
        before = install_tracing(tracing)
        try:
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                await post_run(
                    daemon,
                    run_input("run-1", [hello]),
                    team="echo",
                    headers={"traceparent": first_parent},
                )
                await post_run(
                    daemon,
                    run_input("run-2", [hello, again]),
                    team="echo",
                    headers={"traceparent": second_parent},
                )
        finally:
            install_tracing(before)
        roots = [s for s in exporter.get_finished_spans() if s.name == "invoke_workflow echo"]
        expected = [parse_traceparent(first_parent), parse_traceparent(second_parent)]
        assert [
            (root.context.trace_id, root.parent.span_id if root.parent else None) for root in roots
        ] == [(p.trace_id, p.span_id) for p in expected if p is not None]
        assert [link.context.span_id for link in roots[1].links] == [roots[0].context.span_id]
        for root in roots:
            turns = [
                s
                for s in exporter.get_finished_spans()
                if s.parent is not None and s.parent.span_id == root.context.span_id
            ]
            assert [t.name for t in turns] == ["invoke_agent lead"]

    async def test_a_run_with_an_approval_interrupts_and_resumes(self, tmp_path: Path) -> None:
        user = {"id": "m1", "role": "user", "content": "Ship the release notes"}
        async with running_daemon(tmp_path) as daemon:
            first = await post_run(daemon, run_input("run-1", [user]))
            finished = first[-1]
            assert finished["type"] == "RUN_FINISHED"
            assert finished["outcome"]["type"] == "interrupt"
            (interrupt,) = finished["outcome"]["interrupts"]
            assert interrupt["metadata"]["toolName"] == "publish"
            assert interrupt["metadata"]["agent"] == "researcher"
            started = of_type(first, "SUBAGENT_STARTED")
            assert len(started) == 3
            delegations = {e["toolCallId"] for e in of_type(first, "TOOL_CALL_START")}
            assert {s["parentToolCallId"] for s in started} <= delegations
            resume = [
                {
                    "interruptId": interrupt["id"],
                    "status": "resolved",
                    "payload": {"approved": True},
                }
            ]
            second = await post_run(
                daemon, run_input("run-2", [user], resume=resume, parentRunId="run-1")
            )
        assert second[0] == {"type": "RUN_STARTED", "threadId": THREAD, "runId": "run-2"} | {
            k: v for k, v in second[0].items() if k not in ("type", "threadId", "runId")
        }
        assert second[-1]["type"] == "RUN_FINISHED"
        assert "The release notes are ready." in second[-1]["result"]
        assert "outcome" not in second[-1] or second[-1]["outcome"]["type"] != "interrupt"
        finished_workers = {
            e["subagentRunId"]
            for e in of_type(first + second, "SUBAGENT_FINISHED")
            if "outcome" not in e
        }
        assert len(finished_workers) == 3, "every worker's end reaches the client"
        facts = JournalReader(daemon.db).facts("ahp-session:/" + THREAD)
        assert build_graph(facts).check() == []

    @pytest.mark.parametrize(
        ("body", "status", "says"),
        [
            (b"{", 400, "not JSON"),
            (b"{}", 400, "threadId"),
            (json.dumps(run_input("r", [])).encode(), 400, "no new user message"),
            (
                json.dumps(
                    run_input("r", [{"id": "m", "role": "wizard", "content": "x"}])
                ).encode(),
                400,
                "$.messages[-1].role: the input ends with a 'wizard' message, not a new user",
            ),
            (
                json.dumps(run_input("r", [{"id": "m", "role": "user", "content": ""}])).encode(),
                400,
                "$.messages[-1].content: the user message is empty",
            ),
            (
                json.dumps(
                    {
                        **run_input("r", [{"id": "m", "role": "user", "content": "x"}]),
                        "threadId": "../etc",
                    }
                ).encode(),
                400,
                "threadId",
            ),
            (
                json.dumps(
                    run_input(
                        "r",
                        [{"id": "m", "role": "user", "content": "x"}],
                        resume=[
                            {
                                "interruptId": "approval-9",
                                "status": "resolved",
                                "payload": {"approved": True},
                            }
                        ],
                    )
                ).encode(),
                409,
                "approval-9",
            ),
        ],
    )
    async def test_a_bad_run_input_is_refused_before_any_stream(
        self, tmp_path: Path, body: bytes, status: int, says: str
    ) -> None:
        async with running_daemon(tmp_path) as daemon, daemon.http() as http:
            answer = await http.post(
                "/agui?team=delivery", content=body, headers={"content-type": "application/json"}
            )
        assert answer.status_code == status, answer.text
        assert says in answer.json()["error"]


class TestThreadIdentity:
    async def test_a_thread_disposed_over_ahp_is_not_opened_again(self, tmp_path: Path) -> None:
        """Its threadId is refused (409, naming it) before anything is written: the
        journal keeps the thread as it ended and goes on serving other threads."""
        hello = {"id": "m1", "role": "user", "content": "hello"}
        again = {"id": "m2", "role": "user", "content": "again"}
        uri = f"ahp-session:/{THREAD}"
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            first = await post_run(daemon, run_input("run-1", [hello]), team="echo")
            assert first[-1]["type"] == "RUN_FINISHED"
            async with connect_ahp(daemon) as ahp:
                await ahp.initialize()
                await ahp.request("disposeSession", {"channel": uri})
            facts = JournalReader(daemon.db).facts(uri)
            async with daemon.http() as http:
                answer = await http.post("/agui?team=echo", json=run_input("run-2", [hello, again]))
                assert answer.status_code == 409, answer.text
                assert answer.json() == {
                    "error": f"threadId: thread {THREAD!r} has ended: start a new thread"
                }
                assert (await http.get("/healthz")).status_code == 200
            assert JournalReader(daemon.db).facts(uri) == facts, "nothing was written"
            other = await post_run(
                daemon, {**run_input("run-3", [hello]), "threadId": "thread-2"}, team="echo"
            )
            assert other[-1]["type"] == "RUN_FINISHED", "the journal serves other threads"
        sequences = [f.sequence for f in facts]
        assert sequences == list(range(1, len(sequences) + 1))

    async def test_a_token_at_its_limit_of_sessions_without_a_prompt_gets_429(
        self, tmp_path: Path
    ) -> None:
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_unprompted_per_token=1))
        hello = {"id": "m1", "role": "user", "content": "hello"}
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            connect(daemon) as watcher,
            daemon.http() as http,
        ):
            await watcher.until_type("init")  # a session with no prompt yet
            answer = await http.post("/agui?team=echo", json=run_input("run-1", [hello]))
            assert answer.status_code == 429
            assert answer.json()["limit"] == "max_unprompted_per_token"
            assert answer.headers["retry-after"] == "5"


async def test_the_official_client_runs_the_team_through_an_approval(
    tmp_path: Path, run_mjs: Path
) -> None:
    async with running_daemon(tmp_path) as daemon:
        done = await client(
            run_mjs, f"{daemon.url}/agui?team=delivery", "--prompt", "Ship the release notes"
        )
    assert done.returncode == 0, done.stderr.decode()
    events = printed(done)
    finished = of_type(events, "RUN_FINISHED")
    assert finished[0]["outcome"]["type"] == "interrupt"
    assert "The release notes are ready." in finished[-1]["result"]
    for event in events:
        validate_event(event)
