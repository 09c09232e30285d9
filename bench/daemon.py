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
  publication to the last delivery;
* **CPU µs/fact**: the daemon process's CPU time (every thread: the journal's too) from the
  prompt to the turn's end, per fact the turn recorded (issue 17's target: with 100 clients
  of every kind, at most twice what it is with one).

``--mix``: the clients take turns at each kind a UI uses: an agent-channel client (``/ws``),
a team-channel client (``/ws`` subscribed to the team channel as well: Agent UI envelopes),
and an AHP client (``/ahp``, subscribed to the session's and the coordinator chat's
channels: ``chat/delta`` actions). The stream is the session's second turn, so an AHP client
can subscribe to the chat the first one made. (AG-UI is left out: a client there is one
``POST /agui`` run, not a subscriber of someone else's.)

The clients run in a subprocess, so the daemon has a core of its own (on 2 cores the
clients have the other): thin wsproto clients, one trio task each, that read, parse and
stamp, so the client side costs as little as it can.

    .venv/bin/python bench/daemon.py                 # 1, 10, 100, 1000 subscribers
    .venv/bin/python bench/daemon.py --quick         # 1, 10, 100, fewer events
    .venv/bin/python bench/daemon.py 100 --events 500 --interval 2
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
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
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

#: The project measured (``BENCH_ROOT``: another checkout's, to compare with this script).
ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parent.parent)
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


def _indices(text: str) -> list[int]:
    """The chunk indices ``text`` holds: chunks that came within the daemon's delta window
    are written (and sent) as one fact."""
    return [int(piece) for piece in text.split("|")[:-1] if len(piece) == 6 and piece.isdigit()]


def _team(events: int, interval: float) -> str:
    """A first turn that answers at once (it makes the coordinator's chat), then the
    streamed one."""
    steps = []
    for index in range(events):
        steps.append(f'{{ say = "{_chunk(index)}", chunks = 1 }}')
        steps.append(f"{{ sleep = {interval} }}")
    return (
        '[team]\nname = "bench"\ncoordinator = "lead"\n'
        '[agents.lead]\nrole = "coordinator"\n'
        '[[agents.lead.turns]]\nsteps = [{ say = "warm" }]\n'
        "[[agents.lead.turns]]\nsteps = [\n  " + ",\n  ".join(steps) + "\n]\n"
    )


# ── the clients (a subprocess) ──────────────────────────────────────────────


#: The kinds of client ``--mix`` takes turns at.
KINDS = ("agent", "team", "ahp")


async def _client(
    host: str,
    port: int,
    kind: str,
    target: str,
    subscriptions: list[str],
    received: list[tuple[int, float]],
    ready: trio.Event,
) -> None:
    """One subscriber: (chunk index, receive time) of every text it is sent, until the
    turn's end."""
    stream = await trio.open_tcp_stream(host, port)
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(ws.send(Request(host=f"{host}:{port}", target=target)))
    pieces: list[str] = []
    first: dict[str, Any] | None = None  # what the client sends once accepted
    if kind == "team":
        first = {"channel": "team", "type": "subscribe", "fromSequence": 1_000_000}
    elif kind == "ahp":
        first = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "channel": "ahp-root://",
                "protocolVersions": ["0.7.0"],
                "clientId": f"bench-{id(received)}",
                "clientInfo": {"name": "bench", "version": "1"},
                "initialSubscriptions": subscriptions,
            },
        }
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
                    if _read(kind, message, received, now, ready):
                        await stream.send_all(ws.send(CloseConnection(code=1000)))
                        return
                elif isinstance(event, AcceptConnection) and first is not None:
                    await stream.send_all(ws.send(TextMessage(data=json.dumps(first))))
                elif isinstance(event, Ping):
                    await stream.send_all(ws.send(event.response()))
                elif isinstance(event, CloseConnection | RejectConnection):
                    raise RuntimeError(f"the daemon closed a client: {event}")


def _read(
    kind: str,
    message: dict[str, Any],
    received: list[tuple[int, float]],
    now: float,
    ready: trio.Event,
) -> bool:
    """Note what ``message`` says; whether the client is done."""
    if kind == "ahp":
        if message.get("id") == 1:
            ready.set()
        if message.get("method") != "action":
            return False
        action = message["params"]["action"]
        text = action.get("content") if action["type"] == "chat/delta" else None
        if action["type"] == "chat/responsePart":
            text = action["part"].get("content")
        if isinstance(text, str):
            received.extend((index, now) for index in _indices(text))
        return bool(action["type"] == "chat/turnComplete" and received)
    kind_of = message.get("type")
    if kind_of == "text":
        received.extend((index, now) for index in _indices(message["content"]))
    elif kind_of == "history":
        ready.set()
    return bool(kind_of == "done")


async def _clients(url: str, session: str, chat: str, count: int, mix: bool) -> None:
    host, port = url.removeprefix("http://").split(":")
    received: list[list[tuple[int, float]]] = [[] for _ in range(count)]
    async with trio.open_nursery() as nursery:
        for start in range(0, count, CONNECT_BATCH):
            batch = [trio.Event() for _ in range(start, min(start + CONNECT_BATCH, count))]
            for offset, ready in enumerate(batch):
                index = start + offset
                kind = KINDS[index % len(KINDS)] if mix else "agent"
                target = "/ahp" if kind == "ahp" else f"/ws?session={session}"
                subscriptions = [f"ahp-session:/{session}", chat]
                nursery.start_soon(
                    _client,
                    host,
                    int(port),
                    kind,
                    target,
                    subscriptions,
                    received[index],
                    ready,
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
    from orchestrator.ahp.actions import ChatDeltaAction, ChatResponsePartAction
    from orchestrator.ahp.state import MarkdownResponsePart
    from orchestrator.runtime import FactBus

    publish = FactBus.publish_nowait

    def stamped(bus: FactBus, facts: Sequence[Any], *rest: Any) -> None:
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
            for index in _indices(content or ""):
                stamps[index] = now
        publish(bus, facts, *rest)

    FactBus.publish_nowait = stamped  # type: ignore[method-assign, assignment]


async def _turn(operator: Any, prompt: str) -> None:
    await operator.send_message(
        json.dumps({"channel": "agent", "type": "prompt", "prompt": prompt})
    )
    while json.loads(await operator.get_message()).get("type") != "done":
        pass


async def _measure(
    subscribers: int, events: int, interval: float, *, mix: bool
) -> dict[str, float]:
    from trio_websocket import open_websocket_url

    from orchestrator.journal import JournalReader
    from orchestrator.server import ServeConfig, serve
    from orchestrator.sessions import Limits

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
                await _turn(operator, "warm")  # makes the coordinator's chat
                reader = JournalReader(Path(tmp) / "journal.db")
                state = reader.open(f"ahp-session:/{session}")
                chat = state.coordinator_chat()
                assert chat is not None
                process = await trio.lowlevel.open_process(
                    [
                        *(sys.executable, __file__, "--clients", url, session, chat),
                        *(str(subscribers), "mix" if mix else "agent"),
                    ],
                    stdout=subprocess.PIPE,
                )
                assert process.stdout is not None
                lines = _lines(process.stdout)
                assert await lines.__anext__() == "ready"
                cpu = time.process_time()
                await _turn(operator, "go")
                cpu = time.process_time() - cpu
                by_index = {int(k): v for k, v in json.loads(await lines.__anext__()).items()}
                await process.wait()
                facts = reader.session(f"ahp-session:/{session}").last_sequence
                facts -= state.last_sequence
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
        "cpu_us_per_fact": cpu / facts * 1e6,
    }


async def _lines(stream: trio.abc.ReceiveStream) -> AsyncIterator[str]:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()


def _one(subscribers: int, events: int, interval: float, *, mix: bool) -> dict[str, float]:
    from orchestrator.runtime import configure_logging, tune_gc

    configure_logging(level=logging.WARNING)  # as `orchestrator serve` does, quieter
    tune_gc()
    return trio.run(functools.partial(_measure, subscribers, events, interval, mix=mix))


def main(argv: list[str]) -> None:
    _raise_fd_limit()
    if argv[:1] == ["--clients"]:
        trio.run(_clients, argv[1], argv[2], argv[3], int(argv[4]), argv[5] == "mix")
        return
    if argv[:1] == ["--one"]:
        row = _one(int(argv[1]), int(argv[2]), float(argv[3]), mix=argv[4] == "mix")
        print(json.dumps(row))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, help="subscriber counts")
    parser.add_argument("--events", type=int, default=200, help="text chunks streamed")
    parser.add_argument("--interval", type=float, default=10.0, help="ms between chunks")
    parser.add_argument("--quick", action="store_true", help="1, 10, 100 and 50 events")
    parser.add_argument(
        "--mix", action="store_true", help="agent-channel, team-channel and AHP clients in turn"
    )
    args = parser.parse_args(argv)
    sizes = args.sizes or list(QUICK_SIZES if args.quick else SIZES)
    events = 50 if args.quick else args.events
    clients = "agent, team and AHP clients in turn" if args.mix else "agent-channel clients"
    print(
        f"{events} text events, one every {args.interval:g} ms, to {clients}; "
        "latency: publish → client"
    )
    header = (
        f"{'subscribers':>11} {'events/s delivered':>19} {'p50 (ms)':>9} {'p99 (ms)':>9} "
        f"{'max (ms)':>9} {'CPU µs/fact':>12}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        # A fresh process per size: nothing of one measurement warms the next.
        done = subprocess.run(
            [
                *(sys.executable, __file__, "--one", str(n), str(events), str(args.interval)),
                "mix" if args.mix else "agent",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{n:>11} {row['events_per_s']:>19,.0f} {row['p50_ms']:>9.2f} "
            f"{row['p99_ms']:>9.2f} {row['max_ms']:>9.2f} {row['cpu_us_per_fact']:>12,.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
