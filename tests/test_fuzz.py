"""A seeded fuzz of every endpoint of a real ``orchestrator serve`` process, bounded.

One daemon process (tokens configured, JSON logs captured from its stderr) takes hostile
frames and bodies from :class:`tests.fuzz.Fuzzer` on ``/ws``, ``/ahp``, ``/teammates``,
``/callback`` and ``/agui``, and a model that streams hostile chunks, while a bystander
session runs turn after turn. Each input is answered (a frame the pure parser refuses gets
the error that parser names, and a probe after it is answered on the same connection; an
HTTP request gets a 4xx JSON answer, never a 5xx); the bystander's turns all complete;
``/healthz`` stays ok; the daemon's memory stays bounded; no token appears in its logs, no
traceback carries frame locals and no log line is huge; and SIGTERM still stops it within
10 s with exit status 0.

``FUZZ_SEED`` and ``FUZZ_FRAMES`` (per endpoint) replay or lengthen a run; the soak in
``bench/soak.py`` runs the same fuzz far longer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio

from orchestrator._agent_channel import parse_client_message
from orchestrator._ahp_rpc import parse_call
from orchestrator._errors import PeerProtocolError, RpcError
from orchestrator._teammate_channel import parse_request

from .ahp_client import ROOT
from .daemon import ECHO, websocket
from .fake_openai import Answer, FakeOpenAI, Stream, fake_openai
from .fuzz import Fuzzer

SEED: Final = int(os.environ.get("FUZZ_SEED", "20261126"))
FRAMES: Final = int(os.environ.get("FUZZ_FRAMES", "150"))
MAX_FRAME_BYTES: Final = 65_536

OPERATOR: Final = "fuzz-operator-secret-0123456789"
VIEWER: Final = "fuzz-viewer-secret-0123456789ab"
TOOL: Final = "fuzz-tool-secret-0123456789abcd"
SECRETS: Final = (OPERATOR, VIEWER, TOOL)

CONFIG: Final = f"""
[tokens.ops]
role = "operator"
token = "{OPERATOR}"
[tokens.watcher]
role = "viewer"
token = "{VIEWER}"
[tokens.sandbox]
role = "tool"
token = "{TOOL}"
[limits]
max_frame_bytes = {MAX_FRAME_BYTES}
messages_per_second = 1000000.0
burst = 1000000
shutdown_grace = 0.5
"""

MODEL_TEAM: Final = """
[team]
name = "model"
coordinator = "lead"
[openai]
model = "fuzz-model"
base_url = "{url}"
api_key_env = "FUZZ_MODEL_KEY"
max_retries = 0
read_timeout = 5
[agents.lead]
role = "coordinator"
backend = "openai"
"""

#: Requests each endpoint takes, as the fuzzer's templates.
AGENT_TEMPLATES: Final[list[dict[str, Any]]] = [
    {"channel": "agent", "type": "prompt", "prompt": "hello", "taskId": "t-1"},
    {"channel": "agent", "type": "abort", "taskId": "t-1"},
    {"channel": "agent", "type": "tool_response", "toolCallId": "c-1", "response": "yes"},
    {"channel": "agent", "type": "approve", "requestId": "a-1"},
    {"channel": "agent", "type": "reject", "requestId": "a-1", "reason": "no"},
    {"channel": "agent", "type": "settings", "settings": {"model": "m"}},
    {"channel": "team", "type": "subscribe", "fromSequence": 0},
]
TEAMMATE_TEMPLATES: Final = [
    {"type": t, "name": "nobody", "id": "r-1"}
    for t in ("list", "history", "pause", "resume", "trigger", "stop", "subscribe")
]
SESSION: Final = "ahp-session:/0b5e7c4a-3f5e-4c1b-9a53-7d2f4c1e9a10"
CHAT: Final = "ahp-chat:/7c0e2f1d-1d4b-4a8e-8f6b-5a0c9e3b2d11"
AHP_TEMPLATES: Final[list[dict[str, Any]]] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "channel": ROOT,
            "protocolVersions": ["0.7.0"],
            "clientId": "fuzz",
            "clientInfo": {"name": "fuzz", "version": "1"},
            "initialSubscriptions": [],
        },
    },
    {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"channel": ROOT}},
    {"jsonrpc": "2.0", "id": 3, "method": "listSessions", "params": {"channel": ROOT, "limit": 5}},
    {"jsonrpc": "2.0", "id": 4, "method": "subscribe", "params": {"channel": SESSION}},
    {"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": SESSION}},
    {
        "jsonrpc": "2.0",
        "method": "dispatchAction",
        "params": {
            "channel": CHAT,
            "clientSeq": 1,
            "action": {
                "type": "chat/turnStarted",
                "turnId": "turn-1",
                "userMessage": {"text": "hi", "origin": {"kind": "user"}},
            },
        },
    },
    {"jsonrpc": "2.0", "id": 5, "method": "reconnect", "params": {"channel": ROOT}},
]


def view_update(group_id: str) -> dict[str, Any]:
    return {
        "type": "view_update",
        "group_id": group_id,
        "view_type": "table",
        "content": {"rows": [[1, "a"], [2, "b"]], "title": "t"},
    }


def run_input(thread: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": "run-" + thread,
        "messages": [{"id": "m1", "role": "user", "content": "hello"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


CHUNK: Final = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
}


@attrs.define
class DaemonProcess:
    process: trio.Process
    url: str
    log: bytearray

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    def http(self, token: str | None = OPERATOR) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def lines(self) -> list[str]:
        return bytes(self.log).decode("utf-8", "replace").splitlines()


@asynccontextmanager
async def daemon_process(tmp_path: Path, model_url: str) -> AsyncIterator[DaemonProcess]:
    """``orchestrator -v serve`` on port 0, its stderr read (and kept) as it writes it."""
    teams = tmp_path / "teams"
    teams.mkdir()
    (teams / "echo.toml").write_text(ECHO)
    (teams / "model.toml").write_text(MODEL_TEAM.format(url=model_url))
    (tmp_path / "daemon.toml").write_text(CONFIG)
    command = [sys.executable, "-m", "orchestrator", "-v", "serve", "--config"]
    command += [str(tmp_path / "daemon.toml"), "--teams", str(teams)]
    command += ["--db", str(tmp_path / "journal.db"), "--port", "0", "--host", "127.0.0.1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "FUZZ_MODEL_KEY": "sk-fuzz-model-key-0123"}
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    log = bytearray()
    listening = trio.Event()
    url: list[str] = []

    async def read_log() -> None:
        assert process.stderr is not None
        async for data in process.stderr:
            log.extend(data)
            if not listening.is_set():
                for line in bytes(log).splitlines():
                    if b'"daemon listening"' in line:
                        url.append(json.loads(line)["url"])
                        listening.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_log)
            with trio.fail_after(30):
                await listening.wait()
            yield DaemonProcess(process=process, url=url[0], log=log)
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(10):
                assert await process.wait() == 0, bytes(log[-4000:]).decode(errors="replace")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# ─── each endpoint ───────────────────────────────────────────────────────────


async def fuzz_agent_channel(daemon: DaemonProcess, fuzzer: Fuzzer) -> int:
    """Hostile frames on one /ws session; returns how many the parser refused."""
    refused = 0
    async with websocket(f"{daemon.ws_url}/ws?team=echo", token=OPERATOR) as connection:
        for index in range(FRAMES):
            frame = fuzzer.frame(fuzzer.random.choice(AGENT_TEMPLATES))
            expected = None
            try:
                parse_client_message(frame, max_bytes=MAX_FRAME_BYTES)
            except PeerProtocolError as exc:
                expected = f"{exc.path}: {exc.message}"
                refused += 1
            await connection.send_message(frame)
            probe = f"probe-{index}"
            await connection.send_message(
                json.dumps({"channel": "agent", "type": "abort", "taskId": probe})
            )
            seen = await _until(
                connection,
                lambda e, p=probe: e.get("code") == "refused" and p in e.get("message", ""),
            )
            if expected is not None:
                errors = [e for e in seen if e.get("code") == "bad_request"]
                assert [e["message"] for e in errors] == [expected], (frame, seen)
    return refused


async def fuzz_teammates(daemon: DaemonProcess, fuzzer: Fuzzer) -> int:
    refused = 0
    async with websocket(f"{daemon.ws_url}/teammates", token=OPERATOR) as connection:
        for index in range(FRAMES):
            frame = fuzzer.frame(fuzzer.random.choice(TEAMMATE_TEMPLATES))
            expected = None
            try:
                parse_request(frame, max_bytes=MAX_FRAME_BYTES)
            except PeerProtocolError as exc:
                expected = f"{exc.path}: {exc.message}"
                refused += 1
            await connection.send_message(frame)
            probe = f"probe-{index}"
            await connection.send_message(json.dumps({"type": "list", "id": probe}))
            seen = await _until(connection, lambda e, p=probe: e.get("id") == p)
            if expected is not None:
                errors = [e for e in seen if e.get("code") == "bad_request"]
                assert [e["message"] for e in errors] == [expected], (frame, seen)
    return refused


async def fuzz_ahp(daemon: DaemonProcess, fuzzer: Fuzzer) -> int:
    refused = 0
    async with websocket(f"{daemon.ws_url}/ahp", token=OPERATOR) as connection:
        for index in range(FRAMES):
            frame = fuzzer.frame(fuzzer.random.choice(AHP_TEMPLATES))
            expected = None
            try:
                parse_call(frame, max_bytes=MAX_FRAME_BYTES)
            except RpcError as exc:
                expected = int(exc.code)
                refused += 1
            await connection.send_message(frame)
            probe = f"probe-{index}"
            ping = {"jsonrpc": "2.0", "id": probe, "method": "ping", "params": {"channel": ROOT}}
            await connection.send_message(json.dumps(ping))
            seen = await _until(connection, lambda e, p=probe: e.get("id") == p)
            if expected is not None:
                codes = [e["error"]["code"] for e in seen if "error" in e]
                assert expected in codes, (frame, seen)
    return refused


async def fuzz_callback(daemon: DaemonProcess, fuzzer: Fuzzer, group_id: str) -> int:
    refused = 0
    async with daemon.http(TOOL) as http:
        for _ in range(FRAMES):
            body = fuzzer.frame(view_update(group_id))
            answer = await http.post(
                "/callback", content=body if isinstance(body, bytes) else body.encode()
            )
            assert answer.status_code in (200, 400, 404, 409, 413), (body, answer.text)
            assert isinstance(answer.json(), dict), answer.text
            refused += answer.status_code != 200
    return refused


async def fuzz_agui(daemon: DaemonProcess, fuzzer: Fuzzer) -> int:
    refused = 0
    async with daemon.http(OPERATOR) as http:
        for index in range(FRAMES):
            body = fuzzer.frame(run_input(f"fuzz-thread-{fuzzer.seed}-{index}"))
            content = body if isinstance(body, bytes) else body.encode()
            async with http.stream("POST", "/agui?team=echo", content=content) as answer:
                data = await answer.aread()  # a run's stream ends with its run
            assert answer.status_code in (200, 400, 404, 409, 413, 429), (body, data)
            if answer.status_code != 200:
                refused += 1
                assert answer.headers["content-type"] == "application/json", data
                assert "error" in json.loads(data)
    return refused


async def fuzz_model_stream(daemon: DaemonProcess, fuzzer: Fuzzer, model: FakeOpenAI) -> int:
    """Turns against a model whose chunks are hostile: each turn ends (done), whatever the
    model sent, with its text or an error."""
    turns = max(FRAMES // 10, 5)
    async with websocket(f"{daemon.ws_url}/ws?team=model", token=OPERATOR) as connection:
        await _until(connection, lambda e: e.get("type") == "init")
        for index in range(turns):
            await connection.send_message(
                json.dumps({"channel": "agent", "type": "prompt", "prompt": f"turn {index}"})
            )
            await _until(connection, lambda e: e.get("type") == "done")
    assert len(model.requests) >= turns
    return turns


def hostile_stream(fuzzer: Fuzzer) -> Answer:
    chunks: list[dict[str, Any] | str | bytes] = [
        fuzzer.frame(CHUNK) for _ in range(fuzzer.random.randint(1, 4))
    ]
    if fuzzer.random.random() < 0.5:
        chunks.append({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return Stream(chunks, done=fuzzer.random.random() < 0.7)


async def _until(connection: Any, predicate: Any) -> list[dict[str, Any]]:
    """Messages received until one satisfies ``predicate`` (that one included)."""
    seen: list[dict[str, Any]] = []
    with trio.fail_after(30):
        while True:
            message = json.loads(await connection.get_message())
            seen.append(message)
            if predicate(message):
                return seen


# ─── the run ─────────────────────────────────────────────────────────────────


async def test_every_endpoint_takes_hostile_input_and_the_daemon_serves_on(
    tmp_path: Path,
) -> None:
    streams = Fuzzer(SEED + 5)
    async with (
        fake_openai(lambda request: hostile_stream(streams)) as model,
        daemon_process(tmp_path, model.url) as daemon,
    ):
        bystander_turns = 0
        stop = trio.Event()

        async def bystander(task_status: trio.TaskStatus[str]) -> None:
            """Another session of the daemon: its turns all complete meanwhile."""
            nonlocal bystander_turns
            async with websocket(f"{daemon.ws_url}/ws?team=echo", token=OPERATOR) as client:
                init = await _until(client, lambda e: e.get("type") == "init")
                task_status.started(init[-1]["sessionId"])
                while not stop.is_set():
                    await client.send_message(
                        json.dumps({"channel": "agent", "type": "prompt", "prompt": "tick"})
                    )
                    await _until(client, lambda e: e.get("type") == "done")
                    bystander_turns += 1

        with trio.fail_after(240):
            async with trio.open_nursery() as nursery:
                group_id = await nursery.start(bystander)
                rss_before = daemon.rss_kib()
                refused = {
                    "/ws": await fuzz_agent_channel(daemon, Fuzzer(SEED)),
                    "/teammates": await fuzz_teammates(daemon, Fuzzer(SEED + 1)),
                    "/ahp": await fuzz_ahp(daemon, Fuzzer(SEED + 2)),
                    "/callback": await fuzz_callback(daemon, Fuzzer(SEED + 3), group_id),
                    "/agui": await fuzz_agui(daemon, Fuzzer(SEED + 4)),
                    "model": await fuzz_model_stream(daemon, Fuzzer(SEED + 5), model),
                }
                rss_after = daemon.rss_kib()
                async with daemon.http(VIEWER) as http:
                    health = (await http.get("/healthz")).json()
                stop.set()
        assert health["status"] == "ok", health
        assert bystander_turns >= 3
        # The fuzz exercised refusals on every endpoint, not only valid requests.
        assert all(count > FRAMES // 3 for name, count in refused.items() if name != "model")
        # Memory: what the fuzz costs is bounded (sessions it opened, caches), not leaked
        # per frame.
        assert rss_after - rss_before < 150 * 1024, (rss_before, rss_after)
    lines = daemon.lines()
    for secret in SECRETS:
        assert not [line for line in lines if secret in line], secret
    assert not [line for line in lines if '"locals"' in line]
    assert max(map(len, lines)) < 64 * 1024
