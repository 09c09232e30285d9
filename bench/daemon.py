"""Daemon fan-out benchmark: one session, N WebSocket subscribers on loopback.

The daemon (``orchestrator serve``: hypercorn, Starlette, the journal with durability
"power") runs in this process. A coordinator streams ``--events`` text chunks, one every
``--interval`` ms (each a fact, durable before it is published); N clients attached with
``/ws?session=`` receive each as an agent-channel ``text`` event.

* **latency**: from the moment the fact is published on the session's bus (stamped in
  this process, after it is durable) to the moment a client's socket read returns the
  event (stamped in the client process; both ``time.perf_counter``, which is
  CLOCK_MONOTONIC on Linux: one clock for both processes);
* **events/s**: events delivered to all clients together, over the time from the first
  publication to the last delivery.

The clients run in a subprocess, so the daemon has a core of its own (on 2 cores the
clients have the other): thin wsproto clients, one trio task each, that read, parse and
stamp, so the client side costs as little as it can.

    .venv/bin/python bench/daemon.py                 # 1, 10, 100, 1000 subscribers
    .venv/bin/python bench/daemon.py --quick         # 1, 10, 100, fewer events
    .venv/bin/python bench/daemon.py 100 --events 500 --interval 2
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (1, 10, 100, 1000)
QUICK_SIZES = (1, 10, 100)
#: How many clients connect at once (the listen backlog is hypercorn's default, 100).
CONNECT_BATCH = 50


def _raise_fd_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _chunk(index: int) -> str:
    return f"{index:06d}|"


def _team(events: int, interval: float) -> str:
    steps = []
    for index in range(events):
        steps.append(f'{{ say = "{_chunk(index)}", chunks = 1 }}')
        steps.append(f"{{ sleep = {interval} }}")
    return (
        '[team]\nname = "bench"\ncoordinator = "lead"\n'
        '[agents.lead]\nrole = "coordinator"\n'
        "[[agents.lead.turns]]\nsteps = [\n  " + ",\n  ".join(steps) + "\n]\n"
    )


# ── the clients (a subprocess) ──────────────────────────────────────────────


async def _client(
    host: str, port: int, target: str, received: list[tuple[int, float]], ready: trio.Event
) -> None:
    """One subscriber: (chunk index, receive time) of every text event, until done."""
    stream = await trio.open_tcp_stream(host, port)
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(ws.send(Request(host=f"{host}:{port}", target=target)))
    pieces: list[str] = []
    async with stream:
        while True:
            data = await stream.receive_some(65_536)
            now = time.perf_counter()
            if not data:
                return
            ws.receive_data(data)
            for event in ws.events():
                if isinstance(event, TextMessage):
                    pieces.append(event.data)
                    if not event.message_finished:
                        continue
                    message = json.loads("".join(pieces))
                    pieces.clear()
                    kind = message.get("type")
                    if kind == "text":
                        received.append((int(message["content"][:6]), now))
                    elif kind == "history":
                        ready.set()
                    elif kind == "done":
                        await stream.send_all(ws.send(CloseConnection(code=1000)))
                        return
                elif isinstance(event, Ping):
                    await stream.send_all(ws.send(event.response()))
                elif isinstance(event, CloseConnection | RejectConnection):
                    raise RuntimeError(f"the daemon closed a client: {event}")


async def _clients(url: str, session: str, count: int) -> None:
    host, port = url.removeprefix("http://").split(":")
    target = f"/ws?session={session}"
    received: list[list[tuple[int, float]]] = [[] for _ in range(count)]
    async with trio.open_nursery() as nursery:
        for start in range(0, count, CONNECT_BATCH):
            batch = [trio.Event() for _ in range(start, min(start + CONNECT_BATCH, count))]
            for offset, ready in enumerate(batch):
                nursery.start_soon(
                    _client, host, int(port), target, received[start + offset], ready
                )
            for ready in batch:
                await ready.wait()
        print("ready", flush=True)
    # Per chunk index, every client's receive time.
    by_index: dict[int, list[float]] = {}
    for events in received:
        for index, at in events:
            by_index.setdefault(index, []).append(at)
    print(json.dumps(by_index), flush=True)


# ── the daemon and the measurement (this process) ───────────────────────────


def _stamp_publications(stamps: dict[int, float]) -> None:
    """Note when each text chunk's fact is published on a session's bus."""
    from orchestrator.ahp import ChatDeltaAction, ChatResponsePartAction, MarkdownResponsePart
    from orchestrator.runtime import FactBus

    publish = FactBus.publish_nowait

    def stamped(bus: FactBus, facts: Sequence[Any]) -> None:
        now = time.perf_counter()
        for fact in facts:
            action = fact.action
            content = None
            if isinstance(action, ChatDeltaAction):
                content = action.content
            elif isinstance(action, ChatResponsePartAction) and isinstance(
                action.part, MarkdownResponsePart
            ):
                content = action.part.content
            if content and content.endswith("|"):
                stamps[int(content[:6])] = now
        publish(bus, facts)

    FactBus.publish_nowait = stamped  # type: ignore[method-assign, assignment]


async def _measure(subscribers: int, events: int, interval: float) -> dict[str, float]:
    from trio_websocket import open_websocket_url

    from orchestrator.server import Limits, ServeConfig, serve

    stamps: dict[int, float] = {}
    _stamp_publications(stamps)
    with tempfile.TemporaryDirectory() as tmp:
        teams = Path(tmp) / "teams"
        teams.mkdir()
        (teams / "bench.toml").write_text(_team(events, interval / 1000), encoding="utf-8")
        # Room for every subscriber and the operator (the default max_connections is 512;
        # this process raises its open-file limit for them, see main).
        limits = Limits(
            subscriber_buffer=10_000, shutdown_grace=0.1, max_connections=subscribers + 16
        )
        config = ServeConfig(port=0, teams=teams, limits=limits)
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            url: str = await nursery.start(
                lambda task_status: serve(
                    config,
                    db=Path(tmp) / "journal.db",
                    task_status=task_status,
                    handle_signals=False,
                    stop=stop,
                )
            )
            ws_url = url.replace("http://", "ws://", 1) + "/ws?team=bench"
            async with open_websocket_url(ws_url) as operator:
                session = json.loads(await operator.get_message())["sessionId"]
                process = await trio.lowlevel.open_process(
                    [sys.executable, __file__, "--clients", url, session, str(subscribers)],
                    stdout=subprocess.PIPE,
                )
                assert process.stdout is not None
                lines = _lines(process.stdout)
                assert await lines.__anext__() == "ready"
                prompt = {"channel": "agent", "type": "prompt", "prompt": "go"}
                await operator.send_message(json.dumps(prompt))
                while json.loads(await operator.get_message()).get("type") != "done":
                    pass
                by_index = {int(k): v for k, v in json.loads(await lines.__anext__()).items()}
                await process.wait()
            stop.set()
    latencies = sorted(
        (at - stamps[index]) * 1000 for index, times in by_index.items() for at in times
    )
    delivered = len(latencies)
    expected = subscribers * events
    if delivered != expected:
        raise RuntimeError(f"{delivered} events delivered, {expected} expected")
    first = min(stamps.values())
    last = max(at for times in by_index.values() for at in times)
    return {
        "events_per_s": delivered / (last - first),
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[min(delivered - 1, int(delivered * 0.99))],
        "max_ms": latencies[-1],
    }


async def _lines(stream: trio.abc.ReceiveStream) -> AsyncIterator[str]:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()


def _one(subscribers: int, events: int, interval: float) -> dict[str, float]:
    from orchestrator.runtime import configure_logging, tune_gc

    configure_logging(level=logging.WARNING)  # as `orchestrator serve` does, quieter
    tune_gc()
    return trio.run(_measure, subscribers, events, interval)


def main(argv: list[str]) -> None:
    _raise_fd_limit()
    if argv[:1] == ["--clients"]:
        trio.run(_clients, argv[1], argv[2], int(argv[3]))
        return
    if argv[:1] == ["--one"]:
        print(json.dumps(_one(int(argv[1]), int(argv[2]), float(argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, help="subscriber counts")
    parser.add_argument("--events", type=int, default=200, help="text chunks streamed")
    parser.add_argument("--interval", type=float, default=10.0, help="ms between chunks")
    parser.add_argument("--quick", action="store_true", help="1, 10, 100 and 50 events")
    args = parser.parse_args(argv)
    sizes = args.sizes or list(QUICK_SIZES if args.quick else SIZES)
    events = 50 if args.quick else args.events
    print(f"{events} text events, one every {args.interval:g} ms; latency: publish → client")
    header = (
        f"{'subscribers':>11} {'events/s delivered':>19} {'p50 (ms)':>9} {'p99 (ms)':>9} "
        f"{'max (ms)':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        # A fresh process per size: nothing of one measurement warms the next.
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(n), str(events), str(args.interval)],
            check=True,
            capture_output=True,
            text=True,
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{n:>11} {row['events_per_s']:>19,.0f} {row['p50_ms']:>9.2f} "
            f"{row['p99_ms']:>9.2f} {row['max_ms']:>9.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
