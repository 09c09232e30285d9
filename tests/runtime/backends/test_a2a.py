"""The remote teammate backend against real A2A agents on loopback (``a2a-sdk``'s own server,
tests/support/a2a_peers.py): what a delegation to one records, in order, with its ids."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

import httpx
import pytest
import trio
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputRequestedAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
)
from orchestrator.ahp.state import MarkdownResponsePart, SystemNotificationResponsePart
from orchestrator.core import (
    HandoffRecorded,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamState,
    artifact_of,
    parse_traceparent,
    remote_task_of,
)
from orchestrator.protocols import project_facts
from orchestrator.runtime import Ids, TeamRuntime, Tracing, TracingSettings, install_tracing
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.spec import TeamSpec, parse_team
from tests.support.a2a_peers import (
    A2APeers,
    EchoAgent,
    a2a_app,
    broken_app,
    serve_a2a_app_in_thread,
    serve_peers,
)
from tests.support.agentui import check_remote_teammate
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness, wait_for
from tests.support.teams import remote

pytestmark = pytest.mark.daemon

ENV = {"REMOTE_TOKEN": "s3cret-token"}


@pytest.fixture(scope="module")
def peers() -> Iterator[A2APeers]:
    with serve_peers() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def harness(team: TeamSpec, http: httpx.AsyncClient) -> Harness:
    return Harness(team, backends=backend_factory(team, client=http, environ=ENV))


def team_of(peers: A2APeers, *names: str, local: bool = False, **tasks: str) -> TeamSpec:
    urls = {name: peers.url[name] for name in names}
    return parse_team(remote(urls, tasks=tasks, local=local), file="remote.toml")


def chat_of(h: Harness, agent: str) -> str:
    """The chat of the task delegated to ``agent``."""
    agents = {a.task: a.agent for a in h.actions(TaskCreated)}
    return next(a.chat for a in h.actions(TaskStarted) if agents[a.task] == agent)


def parts_of(h: Harness, chat: str) -> list[Any]:
    return [
        f.action.part
        for f in h.facts
        if f.channel == chat and isinstance(f.action, ChatResponsePartAction)
    ]


def states_of(h: Harness, chat: str) -> list[str]:
    return [
        meta["state"] for part in parts_of(h, chat) if (meta := remote_task_of(part)) is not None
    ]


def finished_of(h: Harness, chat: str) -> TaskFinished:
    return next(a for a in h.actions(TaskFinished) if a.chat == chat)


class TestDelegation:
    async def test_two_remote_agents_and_a_local_worker_run_in_parallel(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        """A streaming agent, a polled one and a local worker: each outcome is the
        coordinator's, and each remote task's states are facts of its worker's chat."""
        h = harness(team_of(peers, "echo", "echo_polled", local=True), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed", outcome
        assert "[echo, completed] (task: hello echo) echo: hello echo" in outcome.result
        assert "[echo_polled, completed] (task: hello echo_polled) echo: hello" in outcome.result
        assert "[helper, completed] (task: tidy up) tidied tidy up" in outcome.result
        for agent in ("echo", "echo_polled"):
            chat = chat_of(h, agent)
            # The remote truth, in order: sent, then the peer's own states.
            states = states_of(h, chat)
            assert states[0] == "sending"
            assert states[-1] == "completed"
            # A stream shows every state; polling shows those it happens to see, in order.
            order = ["sending", "submitted", "working", "completed"]
            assert states == sorted(states, key=order.index)
            if agent == "echo":
                assert "working" in states
            metas = [m for p in parts_of(h, chat) if (m := remote_task_of(p)) is not None]
            task_ids = {m["remoteTaskId"] for m in metas[1:]}
            assert len(task_ids) == 1
            assert "" not in task_ids
            assert metas[-1]["rawState"] == "TASK_STATE_COMPLETED"
            assert metas[-1]["card"] == {"name": agent, "version": "1.2.3", "skills": [agent]}
            assert metas[-1]["url"] == peers.url[agent]
            artifacts = [a for p in parts_of(h, chat) if (a := artifact_of(p)) is not None]
            assert [a["name"] for a in artifacts] == ["echo.txt"]
            assert artifacts[0]["remoteTaskId"] in task_ids
            # The answer is the turn's text, after every notice, and the task's summary.
            last = parts_of(h, chat)[-1]
            assert isinstance(last, MarkdownResponsePart)
            assert last.content.startswith(f"echo: hello {agent}")
            assert "[artifact echo.txt]" in last.content
            assert finished_of(h, chat).status is TaskStatus.COMPLETED
        # No credential in any fact.
        assert all("s3cret" not in repr(f) for f in h.facts)

    async def test_three_artifact_chunks_are_three_facts_and_one_artifact(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "chunks"), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "chunks")
        chunks = [a for p in parts_of(h, chat) if (a := artifact_of(p)) is not None]
        assert [(c["artifactId"], c["append"], c["lastChunk"]) for c in chunks] == [
            ("report-1", False, False),
            ("report-1", True, False),
            ("report-1", True, True),
        ]
        assert [c["parts"] for c in chunks] == [
            [{"text": "alpha "}],
            [{"text": "beta "}],
            [{"text": "gamma"}],
        ]
        assert "report written\n\n[artifact report.md]\nalpha beta gamma" in outcome.result
        # The chunks came between working and completed.
        kinds = [
            "artifact" if artifact_of(p) else (remote_task_of(p) or {}).get("state", p.kind)
            for p in parts_of(h, chat)
        ]
        assert kinds == [
            "sending",
            "submitted",
            "working",
            *["artifact"] * 3,
            "completed",
            "markdown",
        ]


class TestFailures:
    async def test_a_failed_remote_task_ends_its_delegation_and_the_team_goes_on(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "failing", local=True), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "failing")
        finished = finished_of(h, chat)
        assert finished.status is TaskStatus.FAILED
        assert finished.summary.startswith(f"remote agent failing ({peers.url['failing']}): task ")
        assert finished.summary.endswith("failed (TASK_STATE_FAILED): the disk is full")
        errors = [
            f.action for f in h.facts if f.channel == chat and isinstance(f.action, ChatErrorAction)
        ]
        assert [e.error.error_type for e in errors] == ["RemoteAgentError"]
        assert "[helper, completed]" in outcome.result

    async def test_an_unreachable_agent_ends_its_delegation_naming_it(
        self, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        with serve_peers("echo") as gone:
            url = gone.url["echo"]
        team = parse_team(remote({"echo": url}, local=True), file="remote.toml")
        h = harness(team, http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        summary = finished_of(h, chat_of(h, "echo")).summary
        assert summary.startswith(f"remote agent echo ({url}): its agent card could not be read")
        assert "[helper, completed]" in outcome.result

    @pytest.mark.parametrize(
        ("mode", "said"),
        [
            ("http_error", "HTTP Error 503"),
            pytest.param(
                "malformed",
                "Invalid JSON-RPC response in SSE stream",
                # The SDK raises from inside its SSE parser without closing it, nor httpx's
                # line iterators under it: trio closes them when they are collected (at
                # once), and warns. The connection is closed all the same.
                marks=pytest.mark.filterwarnings("ignore:Async generator:ResourceWarning"),
            ),
            ("stream_stops", "stopped before the task ended (last state: working)"),
        ],
    )
    async def test_a_broken_peer_ends_its_delegation_naming_it_and_what_happened(
        self, mode: str, said: str, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        with serve_a2a_app_in_thread(broken_app(mode)) as url:
            team = parse_team(remote({"broken": url}, local=True), file="remote.toml")
            h = harness(team, http)
            with trio.fail_after(30):
                outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "broken")
        finished = finished_of(h, chat)
        assert finished.status is TaskStatus.FAILED
        assert finished.summary.startswith(f"remote agent broken ({url}): ")
        assert said in finished.summary
        assert "[helper, completed]" in outcome.result
        assert "[broken, failed]" in outcome.result


class TestInputAndCancel:
    async def test_input_required_is_a_question_and_the_answer_goes_back(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "ask"), http)
        async with trio.open_nursery() as nursery:
            outcomes: list[Any] = []

            async def run() -> None:
                outcomes.append(await h.runtime.run("Go"))

            nursery.start_soon(run)
            with trio.fail_after(30):
                asked = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(asked.action, ChatInputRequestedAction)
            assert asked.action.request.message == "Which colour?"
            await h.runtime.answer_input(asked.channel, asked.action.request.id, "blue")
        outcome = outcomes[0]
        assert outcome.status == "completed"
        assert "[ask, completed] (task: hello ask) painted it blue" in outcome.result
        chat = chat_of(h, "ask")
        assert asked.channel == chat
        metas = [m for p in parts_of(h, chat) if (m := remote_task_of(p)) is not None]
        # One remote task throughout: the answer went to the same task, not a new one.
        assert len({m["remoteTaskId"] for m in metas[1:]}) == 1
        assert [m["state"] for m in metas] == [
            "sending",
            "submitted",
            "working",
            "input_required",
            "working",
            "completed",
        ]

    async def test_cancelling_the_run_cancels_the_remote_task(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "hanging"), http)
        hanging = peers.executor["hanging"]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "Go")
            with trio.fail_after(30):
                await wait_for(
                    h,
                    lambda f: (
                        isinstance(f.action, ChatResponsePartAction)
                        and (remote_task_of(f.action.part) or {}).get("state") == "working"
                    ),
                )
            nursery.cancel_scope.cancel()
        chat = chat_of(h, "hanging")
        remote_id = states_and_ids(h, chat)[-1][1]
        assert remote_id in hanging.cancelled  # type: ignore[attr-defined]
        assert any(
            f.channel == chat and isinstance(f.action, ChatTurnCancelledAction) for f in h.facts
        )


class TestRestart:
    """A stop of the process leaves the remote task running; the next start takes it up by
    its id (tasks/get, then resubscribe or polling) and does not send it again."""

    @pytest.mark.parametrize("agent", ["slow", "slow_polled"])
    async def test_a_remote_task_is_taken_up_by_its_id_not_sent_again(
        self, agent: str, peers: A2APeers, http: httpx.AsyncClient
    ) -> None:
        team = team_of(peers, agent)
        h = harness(team, http)
        slow = peers.executor[agent]
        started_before = list(slow.started)  # type: ignore[attr-defined]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "Go")
            with trio.fail_after(30):
                await wait_for(
                    h,
                    lambda f: (
                        isinstance(f.action, ChatResponsePartAction)
                        and (remote_task_of(f.action.part) or {}).get("remoteTaskId", "") != ""
                    ),
                )
            h.runtime.stop()
        chat = chat_of(h, agent)
        remote_id = states_and_ids(h, chat)[-1][1]
        assert remote_id not in slow.cancelled  # type: ignore[attr-defined]
        state = TeamState.fold(h.runtime.session, h.facts)
        resumed = TeamRuntime(
            team,
            backends=backend_factory(team, client=http, environ=ENV),  # a new process's view
            factlog=h.log,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            state=state,
        )
        with trio.fail_after(30):
            outcome = await resumed.resume()
        assert outcome.status == "completed", outcome
        assert "[" + agent + ", completed] (task: hello " + agent + ") slow done" in outcome.result
        assert "[artifact slow.txt]\nslow work" in outcome.result
        # Sent once: the peer started one task for this run, the one taken up.
        assert [t for t in slow.started if t not in started_before] == [remote_id]  # type: ignore[attr-defined]
        ids = {i for _, i in states_and_ids(h, chat) if i}
        assert ids == {remote_id}
        assert states_and_ids(h, chat)[-1] == ("completed", remote_id)
        h.runtime = resumed
        h.finished()


def states_and_ids(h: Harness, chat: str) -> list[tuple[str, str]]:
    return [
        (m["state"], m["remoteTaskId"])
        for p in parts_of(h, chat)
        if (m := remote_task_of(p)) is not None
    ]


# Kept imported: the facts these tests read.
_ = (ChatDeltaAction, ChatTurnCompleteAction, SystemNotificationResponsePart)


class TestAgentUi:
    """The runs above, projected: the remote_teammate topology's envelopes pass the checker."""

    async def test_a_streamed_run_projects_external_tasks_and_artifacts(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "chunks", "ask", local=True), http)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.runtime.run, "Go")
            with trio.fail_after(30):
                asked = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(asked.action, ChatInputRequestedAction)
            await h.runtime.answer_input(asked.channel, asked.action.request.id, "red")
        envelopes = project_facts(h.runtime.session, h.facts)
        external = check_remote_teammate(envelopes)
        by_agent: dict[str, list[str]] = {}
        for e in external:
            if e.type == "task.changed":
                by_agent.setdefault((e.payload or {})["agentName"], []).append(
                    (e.payload or {})["runtimeStatus"]
                )
        assert by_agent == {
            "chunks": ["submitted", "working", "completed"],
            "ask": ["submitted", "working", "input_required", "working", "completed"],
        }
        artifacts = [e for e in external if e.type == "artifact.changed"]
        assert [(e.artifact_id, (e.payload or {})["lastChunk"]) for e in artifacts] == [
            ("report-1", False),
            ("report-1", False),
            ("report-1", True),
        ]
        # The question of the remote agent is an action.required naming the remote teammate.
        required = [e for e in envelopes if e.type == "action.required"]
        assert [(e.payload or {})["runtimeEntity"] for e in required] == ["external_task"]
        assert [(e.payload or {})["needs"] for e in required] == ["input"]
        assert [e.agent_id for e in required] == [
            next(e.agent_id for e in external if (e.payload or {})["agentName"] == "ask")
        ]
        # The local helper stays a subagent turn.
        helper = [
            e
            for e in envelopes
            if e.type == "agent.spawned" and (e.payload or {}).get("agentName") == "helper"
        ]
        assert [(e.payload or {})["runtimeEntity"] for e in helper] == ["subagent_turn"]

    async def test_a_failed_remote_task_is_projected_failed(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        h = harness(team_of(peers, "failing"), http)
        with trio.fail_after(30):
            await h.runtime.run("Go")
        external = check_remote_teammate(project_facts(h.runtime.session, h.facts))
        statuses = [
            (e.payload or {})["runtimeStatus"] for e in external if e.type == "task.changed"
        ]
        assert statuses == ["submitted", "working", "failed"]
        assert [e.phase for e in external if e.type == "task.changed"][-1] == "failed"


class TestShippedExample:
    """teams/remote.toml against the A2A agent shipped beside it (teams/servers/
    glossary_agent.py), started as its README says, on a free port."""

    async def test_the_glossary_agent_defines_and_asks(
        self, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        agent = PROJECT_ROOT / "teams" / "servers" / "glossary_agent.py"
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                partial(
                    trio.run_process,
                    [sys.executable, str(agent), "--port", "0"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )
            )
            try:
                assert process.stdout is not None
                with trio.fail_after(30):
                    first = b""
                    while not first.endswith(b"\n"):
                        first += await process.stdout.receive_some(1)
                url = first.decode().strip()
                text = (PROJECT_ROOT / "teams" / "remote.toml").read_text()
                team = parse_team(text.replace("http://127.0.0.1:8765/", url), file="remote.toml")
                h = harness(team, http)
                with trio.fail_after(30):
                    outcome = await h.runtime.run("Explain the release terms")
                assert outcome.status == "completed"
                assert "Defined 3 terms: changelog, release candidate, semver." in outcome.result
                assert "- **semver**: Versions as MAJOR.MINOR.PATCH" in outcome.result
                assert "[writer, completed]" in outcome.result
                chat = chat_of(h, "glossary")
                chunks = [a for p in parts_of(h, chat) if (a := artifact_of(p)) is not None]
                assert [(c["name"], c["append"], c["lastChunk"]) for c in chunks] == [
                    ("definitions.md", False, False),
                    ("definitions.md", True, False),
                    ("definitions.md", True, True),
                ]
                assert {c["mediaType"] for c in chunks} == {"text/markdown"}
                # A task that names no term it knows: it asks, and the answer goes back.
                ask = parse_team(
                    text.replace("http://127.0.0.1:8765/", url).replace(
                        "Define changelog, semver and release candidate", "Define the jargon"
                    ),
                    file="remote.toml",
                )
                h2 = harness(ask, http)
                async with trio.open_nursery() as inner:
                    results: list[Any] = []

                    async def run() -> None:
                        results.append(await h2.runtime.run("Go"))

                    inner.start_soon(run)
                    with trio.fail_after(30):
                        asked = await wait_for(
                            h2, lambda f: isinstance(f.action, ChatInputRequestedAction)
                        )
                    assert isinstance(asked.action, ChatInputRequestedAction)
                    assert str(asked.action.request.message).startswith("Which term should I")
                    await h2.runtime.answer_input(asked.channel, asked.action.request.id, "hotfix")
                assert "- **hotfix**: A patch release" in results[0].result
            finally:
                process.terminate()


class TestTimeoutAndHandoff:
    async def test_a_remote_teammate_past_its_timeout_is_stopped_and_its_task_cancelled(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        """The agent's timeout applies as to a local worker: its delegation fails, the
        remote task is cancelled at the peer, and the team goes on."""
        url = peers.url["hanging"]
        text = remote({"hanging": url}, local=True).replace(
            f'a2a = "{url}"', f'a2a = "{url}"\ntimeout = 1'
        )
        h = harness(parse_team(text, file="remote.toml"), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        chat = chat_of(h, "hanging")
        finished = finished_of(h, chat)
        assert finished.status is TaskStatus.FAILED
        assert "timed out" in finished.summary
        remote_id = states_and_ids(h, chat)[-1][1]
        assert remote_id in peers.executor["hanging"].cancelled  # type: ignore[attr-defined]
        assert "[helper, completed]" in outcome.result

    async def test_a_handoff_reaches_a_remote_teammate_and_comes_back(
        self, peers: A2APeers, http: httpx.AsyncClient, every_scenario_is_checked: None
    ) -> None:
        text = f"""
[team]
name = "desk"
coordinator = "triage"
[agents.triage]
role = "coordinator"
tools = ["handoff"]
delegates_to = ["echo"]
[[agents.triage.turns]]
steps = [
  {{ handoff = "echo", reason = "the echo desk answers this", resume = "triage" }},
  {{ say = "back from echo: {{outcomes}}" }},
]
[agents.echo]
role = "a remote echo desk"
a2a = "{peers.url["echo"]}"
"""
        h = harness(parse_team(text, file="desk.toml"), http)
        with trio.fail_after(30):
            outcome = await h.runtime.run("Where is my parcel?")
        assert outcome.status == "completed", outcome
        assert "back from echo:" in outcome.result
        assert "echo: " in outcome.result
        to_echo, back = h.actions(HandoffRecorded)
        assert (to_echo.to_agent, back.to_agent) == ("echo", "triage")
        assert states_of(h, to_echo.to_chat)[-1] == "completed"


class TestTraceContext:
    async def test_the_peer_gets_the_traceparent_of_the_workers_round(self) -> None:
        """The run's shared HTTP client (backends.http_client) carries the current span's
        traceparent on the a2a-sdk client's requests too: every request a streaming and a
        polled peer get names the worker's round span (under its invoke_agent span, under
        the coordinator's delegate call), in the run's trace."""
        exporter = InMemorySpanExporter()
        tracing = Tracing(TracingSettings(enabled=True), processor=SimpleSpanProcessor(exporter))
        seen: dict[str, list[str | None]] = {"echo": [], "echo_polled": []}
        urls: dict[str, str] = {}
        with contextlib.ExitStack() as stack:
            for name, streams in (("echo", True), ("echo_polled", False)):
                app = a2a_app(
                    EchoAgent(), name=name, description="Echo.", streaming=streams, skills=[name]
                )
                app.add_middleware(_NoteTraceparent, seen=seen[name])
                urls[name] = stack.enter_context(serve_a2a_app_in_thread(app))
            team = parse_team(remote(urls, local=False), file="remote.toml")
            before = install_tracing(tracing)
            try:
                async with http_client() as http:
                    h = harness(team, http)
                    with trio.fail_after(30):
                        outcome = await h.runtime.run("Go")
            finally:
                install_tracing(before)
        assert outcome.status == "completed", outcome
        spans = exporter.get_finished_spans()
        name_of = {s.context.span_id: s.name for s in spans}
        parent_of = {s.context.span_id: 0 if s.parent is None else s.parent.span_id for s in spans}
        agent_of = {s.context.span_id: (s.attributes or {}).get("gen_ai.agent.id") for s in spans}
        (trace,) = {s.context.trace_id for s in spans}
        for name in urls:
            chat = chat_of(h, name)
            assert seen[name], f"{name}: no JSON-RPC request came"
            assert None not in seen[name], f"{name}: a request without traceparent"
            rounds = {
                span
                for span, span_name in name_of.items()
                if span_name.startswith("chat ") and agent_of[parent_of[span]] == chat
            }
            for header in seen[name]:
                sent = parse_traceparent(header)
                assert sent is not None
                assert sent.trace_id == trace
                assert sent.span_id in rounds
                worker = parent_of[sent.span_id]
                assert name_of[worker] == f"invoke_agent {name}"
                assert name_of[parent_of[worker]] == "execute_tool delegate"


class _NoteTraceparent:
    """ASGI middleware: the traceparent of each JSON-RPC request (a POST) the peer gets."""

    def __init__(self, app: Any, seen: list[str | None]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            value = headers.get(b"traceparent")
            self.seen.append(None if value is None else value.decode())
        await self.app(scope, receive, send)
