"""Traces end to end: real ``orchestrator`` processes export over OTLP/HTTP to a receiver on
loopback that decodes the protobuf with the official ``opentelemetry-proto`` package.

For the delivery team (teams/delivery.toml), run by the CLI, by the daemon (``/ws``, its
``[tracing]`` table) and killed with -9 and resumed: the span tree equals the delegation tree
the facts record (every worker's span under its delegate call), the names and required
attributes are the GenAI conventions', no content goes out unless opted in, and a traced
caller's trace (``TRACEPARENT``, a ``traceparent`` header) is continued.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import trio
from trio_websocket import open_websocket_url

from orchestrator.ahp.actions import ChatTurnStartedAction
from orchestrator.core import task_started
from orchestrator.journal import JournalReader
from tests.support.cli import ROOT, TEAM, acknowledged
from tests.support.otlp import (
    OtlpReceiver,
    ReceivedSpan,
    draw,
    otel_environment,
    otlp_receiver,
)
from tests.support.traces import delegation_tree, span_delegations

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

PARENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"
# What a delivery run exports: its root, the lead's turn, 3 delegate calls and 3 researchers'
# turns, their 4 tool calls and the approval's wait (13), and one chat span per model round
# (the lead's 2, the researchers' 2, 2 and 3).
DELIVERY_SPANS = 22


def run_cli(
    tmp_path: Path, receiver: OtlpReceiver, *extra: str, **environ: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            str(TEAM),
            "Ship the release notes",
            "--approve",
            "auto",
            "--plain",
            "--db",
            str(tmp_path / "journal.db"),
            "--facts",
            str(tmp_path / "run.facts.jsonl"),
            *extra,
        ],
        env={**os.environ, **otel_environment(receiver), **environ},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def check_conventions(spans: list[ReceivedSpan]) -> None:
    """The names and required attributes the GenAI conventions ask for, on every span."""
    for span in spans:
        operation = span.attributes.get("gen_ai.operation.name")
        kind, _, subject = span.name.partition(" ")
        if kind == "await_approval":
            assert span.attributes["orchestrator.approval.decision"] == "approved"
            continue
        assert operation == kind, span
        if kind == "invoke_workflow":
            assert span.attributes["gen_ai.workflow.name"] == subject == "delivery"
        elif kind == "invoke_agent":
            assert span.attributes["gen_ai.agent.name"] == subject
            assert span.attributes["gen_ai.agent.id"].startswith("ahp-chat:/")
            assert span.attributes["orchestrator.team"] == "delivery"
        elif kind == "execute_tool":
            assert span.attributes["gen_ai.tool.name"] == subject
            assert span.attributes["gen_ai.tool.call.id"]
            assert span.attributes["gen_ai.tool.type"] == "function"
        else:
            assert kind == "chat"
            assert span.kind == 3  # SPAN_KIND_CLIENT: a request to a model server
            assert span.attributes["gen_ai.request.model"] == subject == "scripted"
            assert span.attributes["gen_ai.provider.name"] == "scripted"
            assert span.attributes["gen_ai.response.finish_reasons"]
        assert span.scope == "orchestrator"


CONTENT = {"gen_ai.input.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}


class TestTheCommandLine:
    def test_a_delivery_run_exports_its_delegation_tree(self, tmp_path: Path) -> None:
        with otlp_receiver() as receiver:
            done = run_cli(tmp_path, receiver)
            assert done.returncode == 0, done.stderr
            spans = receiver.wait_for(DELIVERY_SPANS)
        facts = acknowledged(tmp_path / "run.facts.jsonl")
        assert len(spans) == DELIVERY_SPANS, draw(spans)
        assert span_delegations(spans) == delegation_tree(facts)
        assert len(delegation_tree(facts)) == 3
        assert len({span.trace_id for span in spans}) == 1
        assert [s.name for s in spans if not s.parent_id] == ["invoke_workflow delivery"]
        assert {s.service for s in spans} == {"orchestrator-under-test"}
        check_conventions(spans)
        assert not any(CONTENT & set(span.attributes) for span in spans)
        assert "Ship the release notes" not in repr(spans)
        print(draw(spans))  # the picture in docs/guides/traces.md

    def test_content_when_opted_in_and_a_callers_trace_continued(self, tmp_path: Path) -> None:
        with otlp_receiver() as receiver:
            done = run_cli(
                tmp_path,
                receiver,
                OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
                TRACEPARENT=TRACEPARENT,
            )
            assert done.returncode == 0, done.stderr
            spans = receiver.wait_for(DELIVERY_SPANS)
        assert {span.trace_id for span in spans} == {PARENT_TRACE}
        (root,) = [s for s in spans if s.name == "invoke_workflow delivery"]
        assert root.parent_id == PARENT_SPAN
        prompt = json.loads(root.attributes["gen_ai.input.messages"])
        assert prompt[0]["parts"][0]["content"] == "Ship the release notes"
        assert any("gen_ai.tool.call.result" in s.attributes for s in spans)

    def test_a_run_killed_with_9_and_resumed_continues_its_trace(self, tmp_path: Path) -> None:
        """The first process exports what ended before the kill; the resumed one the rest,
        in the same trace, under the same parents: still the delegation tree."""
        mirror = tmp_path / "run.facts.jsonl"
        db = tmp_path / "journal.db"
        with otlp_receiver() as receiver:
            environ = {**os.environ, **otel_environment(receiver, OTEL_BSP_SCHEDULE_DELAY="1")}
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "orchestrator",
                    "run",
                    str(TEAM),
                    "Ship the release notes",
                    "--plain",
                    "--approve",
                    "ask",
                    "--db",
                    str(db),
                    "--facts",
                    str(mirror),
                ],
                env=environ,
                stdin=subprocess.PIPE,  # open, and silent: the question waits for an answer
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            # The run asks at its prompt for the publish approval, and waits: kill it there.
            deadline = time.monotonic() + 60
            while not any(f.type == "team/approvalRequested" for f in acknowledged(mirror)):
                assert process.poll() is None
                assert time.monotonic() < deadline
                time.sleep(0.01)
            # The spans that ended before the kill, exported: what a crash loses from the
            # exporter's queue is not what this test is about (the guide says so).
            facts = acknowledged(mirror)
            workers = {s.chat for f in facts if (s := task_started(f.action)) is not None}
            finished = sum(f.type == "chat/turnComplete" and f.channel in workers for f in facts)
            deadline = time.monotonic() + 30
            while sum(s.name == "invoke_agent researcher" for s in receiver.received()) < finished:
                assert time.monotonic() < deadline, draw(receiver.received())
                time.sleep(0.01)
            process.send_signal(signal.SIGKILL)
            process.communicate()
            before = receiver.received()
            session = acknowledged(mirror)[0].session
            resumed = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "orchestrator",
                    "resume",
                    session,
                    "--db",
                    str(db),
                    "--plain",
                    "--approve",
                    "auto",
                ],
                env=environ,
                capture_output=True,
                text=True,
                timeout=120,
                cwd=ROOT,
                check=False,
            )
            assert resumed.returncode == 0, resumed.stderr
            receiver.wait_for(len(before) + 4)
            time.sleep(0.2)
            spans = receiver.received()
        after = spans[len(before) :]
        assert before
        assert after
        assert len({span.trace_id for span in spans}) == 1, draw(spans)
        assert [s.name for s in after if not s.parent_id] == ["invoke_workflow delivery"]
        facts = list(JournalReader(db).facts(session))
        assert span_delegations(spans) == delegation_tree(facts)
        ids = {span.span_id for span in spans}
        assert all(s.parent_id in ids for s in spans if s.parent_id), draw(spans)


class TestTheDaemon:
    async def test_a_ws_prompt_in_a_traced_app_continues_its_trace(self, tmp_path: Path) -> None:
        """``orchestrator serve`` with daemon.toml's [tracing]: a /ws client whose handshake
        carries a traceparent gets the team's spans in its trace, the delegation tree."""
        log = tmp_path / "daemon.log"
        with otlp_receiver() as receiver:
            (tmp_path / "daemon.toml").write_text(
                "[tracing]\n"
                "enabled = true\n"
                f'endpoint = "{receiver.endpoint}"\n'
                'service_name = "orchestrator-daemon"\n'
                'trace_url = "http://jaeger.test/trace/{trace_id}#{span_id}"\n'
            )
            environ = {
                key: value for key, value in os.environ.items() if not key.startswith("OTEL_")
            }
            with log.open("w") as err:
                daemon = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "orchestrator",
                        "serve",
                        "--config",
                        str(tmp_path / "daemon.toml"),
                        "--teams",
                        str(ROOT / "teams"),
                        "--db",
                        str(tmp_path / "journal.db"),
                        "--port",
                        "0",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    text=True,
                    env={**environ, "PYTHONUNBUFFERED": "1", "OTEL_BSP_SCHEDULE_DELAY": "50"},
                )
            try:
                url = await _listening(daemon, log)
                session = await _prompt_and_approve(url.replace("http", "ws", 1))
                linked = await _linked_spans(url, tmp_path / "journal.db", session)
            finally:
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(timeout=30)
            spans = receiver.wait_for(DELIVERY_SPANS)
        assert {span.trace_id for span in spans} == {PARENT_TRACE}, draw(spans)
        assert {span.service for span in spans} == {"orchestrator-daemon"}
        (root,) = [s for s in spans if s.name == "invoke_workflow delivery"]
        assert root.parent_id == PARENT_SPAN
        facts = list(JournalReader(tmp_path / "journal.db").facts(f"ahp-session:/{session}"))
        assert span_delegations(spans) == delegation_tree(facts)
        assert len(delegation_tree(facts)) == 3
        check_conventions(spans)
        assert not any(CONTENT & set(span.attributes) for span in spans)
        # The web view's ids (GET .../transcript's traces) are the exported spans' ids.
        agents = [s for s in spans if s.name.startswith("invoke_agent ")]
        chat_of = {s.span_id: str(s.attributes["gen_ai.agent.id"]) for s in agents}
        exported = {
            (chat_of[s.span_id], "turn", str(s.attributes["orchestrator.turn"])): (
                s.trace_id,
                s.span_id,
            )
            for s in agents
        } | {
            (chat_of[s.parent_id], "call", str(s.attributes["gen_ai.tool.call.id"])): (
                s.trace_id,
                s.span_id,
            )
            for s in spans
            if s.name.startswith("execute_tool ")
        }
        assert len(exported) == 4 + 7  # the lead's turn and 3 researchers', 7 tool calls
        assert {key: (t, sp) for key, (t, sp, _) in linked.items()} == exported
        for trace, span, link in linked.values():
            assert link == f"http://jaeger.test/trace/{trace}#{span}"


async def _linked_spans(
    url: str, db: Path, session: str
) -> dict[tuple[str, str, str], tuple[str, str, str]]:
    """What the web view's API links each chat's turns and tool calls to: (chat, "turn" or
    "call", id) -> (trace id, span id, url)."""
    uri = f"ahp-session:/{session}"
    facts = await trio.to_thread.run_sync(lambda: JournalReader(db).facts(uri))
    chats = sorted({f.channel for f in facts if isinstance(f.action, ChatTurnStartedAction)})
    linked: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    async with httpx.AsyncClient(base_url=url) as client:
        for chat in chats:
            answer = await client.get(
                f"/api/sessions/{session}/transcript", params={"thread": chat}
            )
            assert answer.status_code == 200, answer.text
            traces = answer.json()["traces"]
            last = traces["turns"][answer.json()["turns"][-1]["id"]]
            assert traces["agent"] == last
            for kind, entries in (("turn", traces["turns"]), ("call", traces["toolCalls"])):
                for key, entry in entries.items():
                    linked[(chat, kind, key)] = (entry["traceId"], entry["spanId"], entry["url"])
    assert len(chats) == 4
    return linked


async def _listening(daemon: subprocess.Popen[str], log: Path) -> str:
    with trio.fail_after(30):
        while True:
            for line in log.read_text().splitlines():
                record = json.loads(line)
                if record.get("event") == "daemon listening":
                    return str(record["url"])
            assert daemon.poll() is None, log.read_text()
            await trio.sleep(0.05)


async def _prompt_and_approve(ws_url: str) -> str:
    """Prompt the delivery team over /ws from a traced app; approve its request; return the
    session's id once the result came."""
    headers = [(b"traceparent", TRACEPARENT.encode())]
    with trio.fail_after(60):
        async with open_websocket_url(f"{ws_url}/ws?team=delivery", extra_headers=headers) as ws:

            async def until(kind: str) -> dict[str, object]:
                while True:
                    event: dict[str, object] = json.loads(await ws.get_message())
                    if event.get("type") == kind and event.get("channel") == "agent":
                        return event

            init = await until("init")
            await ws.send_message(
                json.dumps({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0"})
            )
            request = await until("permission_request")
            await ws.send_message(
                json.dumps(
                    {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
                )
            )
            await until("result")
    return str(init["sessionId"])
