"""A seeded fuzz of every endpoint of a real ``orchestrator serve`` process, bounded.

One daemon process (tokens configured, JSON logs captured from its stderr) takes hostile
frames and bodies from :class:`tests.support.fuzz.Fuzzer` on ``/ws``, ``/ahp``,
``/teammates``, ``/callback``, ``/agui`` and ``/a2a/TEAM/``, and a model that streams hostile
chunks, while a bystander session runs turn after turn. Each input is answered (a frame the
pure parser refuses gets the error that parser names, and a probe after it is answered on the
same connection; an HTTP request gets a 4xx JSON answer or a JSON-RPC error, never a 5xx); the
bystander's turns all complete;
``/healthz`` stays ok; the daemon's memory stays bounded; no token appears in its logs, no
traceback carries frame locals and no log line is huge; and SIGTERM still stops it within
10 s with exit status 0.

``FUZZ_SEED`` and ``FUZZ_FRAMES`` (per endpoint) replay or lengthen a run; the soak in
``bench/soak.py`` runs the same fuzz far longer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from tests.support.daemon import websocket
from tests.support.fake_openai import Answer, FakeOpenAI, Stream, fake_openai
from tests.support.fuzz import (
    CHANNELS,
    CHUNK,
    OPERATOR,
    SECRETS,
    TOOL,
    VIEWER,
    Channel,
    DaemonProcess,
    Fuzzer,
    daemon_process,
    run_input,
    view_update,
)

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

SEED: Final = int(os.environ.get("FUZZ_SEED", "20261126"))
FRAMES: Final = int(os.environ.get("FUZZ_FRAMES", "150"))

# ─── each endpoint ───────────────────────────────────────────────────────────


async def fuzz_channel(daemon: DaemonProcess, fuzzer: Fuzzer, channel: Channel) -> int:
    """Hostile frames on one connection, each followed by a probe: a frame the endpoint's
    pure parser refuses gets that refusal before the probe's answer. How many were refused."""
    refused = 0
    async with websocket(f"{daemon.ws_url}{channel.path}", token=OPERATOR) as connection:
        for index in range(FRAMES):
            frame = fuzzer.frame(fuzzer.random.choice(channel.templates))
            expected = channel.predict(frame)
            refused += expected is not None
            await connection.send_message(frame)
            probe = f"probe-{index}"
            await connection.send_message(json.dumps(channel.probe(probe)))
            seen = await _until(connection, lambda e, p=probe: channel.answers_probe(e, p))
            if expected is not None:
                answers = [channel.refusal(e) for e in seen[:-1]]
                answers = [a for a in answers if a is not None]
                if channel.exact:
                    assert answers == [expected], (frame, seen)
                else:
                    assert expected in answers, (frame, seen)
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


def a2a_message(index: int) -> dict[str, Any]:
    """A valid A2A request (JSON-RPC): a SendStreamingMessage in its own context; every third
    a GetTask, and every third a SubscribeToTask, of the task the one before it sent (read
    back from the journal: its id names its context); every fifth a ListTasks of a page of
    that context's tasks."""
    if index % 5 == 4:
        params = {"contextId": f"fuzz-a2a-{index - index % 3}", "pageSize": 2, "pageToken": ""}
        return {"jsonrpc": "2.0", "id": index, "method": "ListTasks", "params": params}
    if index % 3:
        method = "GetTask" if index % 3 == 1 else "SubscribeToTask"
        task = f"fuzz-a2a-{index - index % 3}~start"
        return {"jsonrpc": "2.0", "id": index, "method": method, "params": {"id": task}}
    return {
        "jsonrpc": "2.0",
        "id": index,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": f"m-{index}",
                "contextId": f"fuzz-a2a-{index}",
                "role": "ROLE_USER",
                "parts": [{"text": "hello"}],
            }
        },
    }


async def fuzz_a2a(daemon: DaemonProcess, fuzzer: Fuzzer) -> int:
    """``POST /a2a/echo/``: a refusal is a 4xx JSON answer or a JSON-RPC error, never a 5xx."""
    refused = 0
    async with daemon.http(OPERATOR) as http:
        for index in range(FRAMES):
            body = fuzzer.frame(a2a_message(fuzzer.seed * 1000 + index))
            content = body if isinstance(body, bytes) else body.encode()
            async with http.stream("POST", "/a2a/echo/", content=content) as answer:
                data = await answer.aread()  # a task's stream ends with its turn
            assert answer.status_code in (200, 400, 413, 429), (body, data)
            if answer.headers["content-type"].startswith("application/json"):
                refused += 1
                assert "error" in json.loads(data), data
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
                    channel.name: await fuzz_channel(daemon, Fuzzer(SEED + offset), channel)
                    for offset, channel in enumerate(CHANNELS)
                } | {
                    "/callback": await fuzz_callback(daemon, Fuzzer(SEED + 3), group_id),
                    "/agui": await fuzz_agui(daemon, Fuzzer(SEED + 4)),
                    "/a2a": await fuzz_a2a(daemon, Fuzzer(SEED + 6)),
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
