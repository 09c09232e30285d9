"""Soak: hostile input on every endpoint for a long time, and kill -9 under load.

Two parts, each against ``orchestrator serve`` as its own process (tokens configured, JSON
logs kept), with the harness and the seeded fuzzer of ``tests/support/fuzz.py``:

* **frames**: ``--frames`` hostile frames or bodies per endpoint (``/ws``, ``/teammates``,
  ``/ahp``, ``/callback``, ``/agui``) and hostile model chunks, while a bystander session runs
  turn after turn. WebSocket frames go in windows of :data:`WINDOW`, each closed by a probe
  the daemon must answer on the same connection. Counted: frames, the refusals the pure
  parsers predict against the ``bad_request`` / error answers received, unanswered requests
  and 5xx answers (both must be 0), frames/s, the daemon's RSS, the bystander's turns, and
  what the log holds (lines, the longest, any token, any frame locals).
* **memory**: for ``--duration`` seconds (an hour by default), cycles of ``--sessions``
  conversations of ``--turns`` prompts each with a delegating team; after each cycle the
  sessions idle with no client until the daemon puts them away (``--idle``, its
  ``idle_session``) and collects what they held. Printed: the daemon's RSS at start, after
  each cycle ran and after it was put away, against the live sessions and the prompts
  answered; and how far the last put-away is from the start and from the first cycle's.
* **kill**: ``--points`` times: start the daemon on one journal, let three clients run a
  delegating team with the team channel subscribed, kill -9 the daemon at a seeded moment,
  then check that every Agent UI envelope a client received is in the journal, equal
  (a client only sees what is durable); the next start takes the sessions up again.

    .venv/bin/python bench/soak.py                       # both, 100,000 frames, 100 kills
    .venv/bin/python bench/soak.py frames --frames 10000
    .venv/bin/python bench/soak.py kill --points 20 --seed 7
    .venv/bin/python bench/soak.py memory --duration 300 --turns 30
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.journal import JournalReader
from orchestrator.protocols import project_facts, unstructure_envelope
from tests.support.daemon import websocket
from tests.support.fake_openai import Answer, Stream, fake_openai
from tests.support.fuzz import (
    CHANNELS,
    CHUNK,
    OPERATOR,
    SECRETS,
    TOOL,
    Channel,
    DaemonProcess,
    Fuzzer,
    daemon_process,
    run_input,
    view_update,
)
from tests.support.teams import fan_team

#: WebSocket frames sent before a probe waits for the daemon to have answered them all.
WINDOW: Final = 200
#: Frames sent on one connection before the next one opens.
PER_CONNECTION: Final = 5_000
#: Concurrent HTTP clients of /callback and /agui.
HTTP_CLIENTS: Final = 8
#: Seconds between two turns of the bystander session.
BYSTANDER_PAUSE: Final = 1.0
#: Seconds the memory part waits for the daemon to collect what sessions put away held
#: (it collects 1 s after they leave, and at most every 30 s).
COLLECT_WAIT: Final = 35.0
#: AG-UI thread ids the fuzz reuses (a valid body runs a turn of one of them).
AGUI_THREADS: Final = 16

FAN: Final = fan_team(200)


# ─── frames ──────────────────────────────────────────────────────────────────


class Tally:
    """One endpoint's counts."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = 0
        self.expected = 0  # refusals the pure parser predicts
        self.refused = 0  # refusals received
        self.failures = 0  # unanswered requests, 5xx answers, broken connections
        self.seconds = 0.0

    def row(self) -> str:
        rate = self.sent / self.seconds if self.seconds else 0.0
        return (
            f"| {self.name} | {self.sent:,} | {self.expected:,} | {self.refused:,} | "
            f"{self.failures} | {rate:,.0f} |"
        )


async def soak_channel(
    daemon: DaemonProcess, fuzzer: Fuzzer, frames: int, channel: Channel
) -> Tally:
    """``frames`` hostile frames, in windows each closed by a probe, on a new connection
    every :data:`PER_CONNECTION` frames (on /ws a new session: one session's history that
    grows with every valid prompt would make the soak about that session's size)."""
    tally = Tally(channel.name)
    start = time.perf_counter()
    window = 0
    while tally.sent < frames:
        url = f"{daemon.ws_url}{channel.path}"
        async with websocket(url, token=OPERATOR) as connection:
            until = min(frames, tally.sent + PER_CONNECTION)
            while tally.sent < until:
                count = min(WINDOW, until - tally.sent)
                for _ in range(count):
                    frame = fuzzer.frame(fuzzer.random.choice(channel.templates))
                    tally.expected += channel.predict(frame) is not None
                    await connection.send_message(frame)
                tally.sent += count
                probe = f"probe-{window}"
                await connection.send_message(json.dumps(channel.probe(probe)))
                with trio.fail_after(60):
                    while not channel.answers_probe(
                        message := json.loads(await connection.get_message()), probe
                    ):
                        tally.refused += channel.refusal(message) is not None
                window += 1
    tally.seconds = time.perf_counter() - start
    if not channel.exact:
        # A request the parser took may be refused later (an unknown session): more
        # refusals than predicted are fine, fewer are not.
        tally.refused = min(tally.refused, tally.expected)
    return tally


async def soak_http(
    daemon: DaemonProcess,
    fuzzer: Fuzzer,
    frames: int,
    name: str,
    path: str,
    token: str,
    make: Callable[[int], dict[str, Any]],
) -> Tally:
    tally = Tally(name)
    start = time.perf_counter()
    sent = 0

    async def client() -> None:
        nonlocal sent
        async with daemon.http(token) as http:
            while sent < frames:
                index = sent
                sent += 1
                body = fuzzer.frame(make(index))
                content = body if isinstance(body, bytes) else body.encode()
                try:
                    async with http.stream("POST", path, content=content) as answer:
                        data = await answer.aread()
                except Exception as exc:  # a broken connection is a failure to count
                    print(f"  {name}: {exc!r}", file=sys.stderr)
                    tally.failures += 1
                    continue
                tally.sent += 1
                if answer.status_code >= 500:
                    tally.failures += 1
                    print(f"  {name}: {answer.status_code} {data[:200]!r}", file=sys.stderr)
                elif answer.status_code != 200:
                    tally.refused += 1
                    if "error" not in json.loads(data):
                        tally.failures += 1

    async with trio.open_nursery() as nursery:
        for _ in range(HTTP_CLIENTS):
            nursery.start_soon(client)
    tally.expected = tally.refused  # HTTP: each refusal was answered, as a 4xx
    tally.seconds = time.perf_counter() - start
    return tally


class HostileModel:
    """The fake server's answers: hostile chunk streams, counted."""

    def __init__(self, fuzzer: Fuzzer) -> None:
        self.fuzzer = fuzzer
        self.chunks = 0

    def __call__(self, request: dict[str, Any]) -> Answer:
        r = self.fuzzer.random
        chunks: list[dict[str, Any] | str | bytes] = [
            self.fuzzer.frame(CHUNK) for _ in range(r.randint(1, 40))
        ]
        if r.random() < 0.5:
            chunks.append(
                {**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            )
        self.chunks += len(chunks)
        return Stream(chunks, done=r.random() < 0.7)


async def soak_model(daemon: DaemonProcess, chunks: int, model: HostileModel) -> Tally:
    tally = Tally("model stream (chunks)")
    start = time.perf_counter()
    async with websocket(f"{daemon.ws_url}/ws?team=model", token=OPERATOR) as connection:
        while json.loads(await connection.get_message()).get("type") != "init":
            pass
        turn = 0
        while tally.sent < chunks:
            await connection.send_message(
                json.dumps({"channel": "agent", "type": "prompt", "prompt": f"turn {turn}"})
            )
            turn += 1
            with trio.fail_after(60):
                while True:
                    event = json.loads(await connection.get_message())
                    if event.get("type") == "error":
                        tally.refused += 1
                    if event.get("type") == "done":
                        break
            tally.sent = model.chunks
    tally.expected = turn  # turns, each ended (done)
    tally.seconds = time.perf_counter() - start
    return tally


async def frames_part(frames: int, seed: int) -> None:
    model_fuzzer = Fuzzer(seed + 5)
    hostile = HostileModel(model_fuzzer)
    with tempfile.TemporaryDirectory(prefix="soak-") as directory:
        async with (
            fake_openai(hostile) as model,
            daemon_process(Path(directory), model.url) as daemon,
        ):
            turns = 0
            stop = trio.Event()
            rss = [daemon.rss_kib()]

            async def bystander(task_status: trio.TaskStatus[str]) -> None:
                nonlocal turns
                async with websocket(f"{daemon.ws_url}/ws?team=echo", token=OPERATOR) as c:
                    while (init := json.loads(await c.get_message())).get("type") != "init":
                        pass
                    task_status.started(init["sessionId"])
                    while not stop.is_set():
                        prompt = {"channel": "agent", "type": "prompt", "prompt": "tick"}
                        await c.send_message(json.dumps(prompt))
                        with trio.fail_after(60):
                            while json.loads(await c.get_message()).get("type") != "done":
                                pass
                        turns += 1
                        rss.append(daemon.rss_kib())
                        # A turn a second: a conversation of tens of thousands of turns is
                        # another benchmark (the scripted backend reads the whole history
                        # every turn).
                        await trio.sleep(BYSTANDER_PAUSE)

            async with trio.open_nursery() as nursery:
                group = await nursery.start(bystander)
                tallies = [
                    *[
                        await soak_channel(daemon, Fuzzer(seed + offset), frames, channel)
                        for offset, channel in enumerate(CHANNELS)
                    ],
                    await soak_http(
                        daemon,
                        Fuzzer(seed + 3),
                        frames,
                        "/callback",
                        "/callback",
                        TOOL,
                        lambda i: view_update(group),
                    ),
                    await soak_http(
                        daemon,
                        Fuzzer(seed + 4),
                        frames,
                        "/agui",
                        "/agui?team=echo",
                        OPERATOR,
                        lambda i: run_input(f"soak-{i % AGUI_THREADS}"),
                    ),
                    await soak_model(daemon, frames, hostile),
                ]
                async with daemon.http(OPERATOR) as http:
                    health = (await http.get("/healthz")).json()
                rss.append(daemon.rss_kib())
                stop.set()
        lines = daemon.lines()
    print(f"\nframes: seed {seed}, {frames:,} per endpoint, windows of {WINDOW}\n")
    print("| endpoint | frames | refusals predicted | refusals answered | failures | frames/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for tally in tallies:
        print(tally.row())
    print(
        f"\nhealth at the end: {health['status']}; bystander turns: {turns:,}; daemon RSS "
        f"{rss[0] / 1024:.0f} MB at start, {max(rss) / 1024:.0f} MB peak, "
        f"{rss[-1] / 1024:.0f} MB at the end"
    )
    leaked = [s for s in SECRETS if any(s in line for line in lines)]
    with_locals = sum('"locals"' in line for line in lines)
    print(
        f"log: {len(lines):,} lines, longest {max(map(len, lines)):,} characters; tokens "
        f"found: {len(leaked)}; lines with frame locals: {with_locals}"
    )


# ─── memory ──────────────────────────────────────────────────────────────────


class MemoryRow:
    """One phase: what ran, and the daemon's RSS after it."""

    def __init__(self, phase: str, live: int, turns: int, rss_kib: int, seconds: float) -> None:
        self.phase, self.live, self.turns = phase, live, turns
        self.rss_kib, self.seconds = rss_kib, seconds

    def row(self, start_kib: int) -> str:
        change = 100 * (self.rss_kib - start_kib) / start_kib
        return (
            f"| {self.phase} | {self.seconds:,.0f} s | {self.live} | {self.turns:,} | "
            f"{self.rss_kib / 1024:.1f} MB | {change:+.0f}% |"
        )


async def live_sessions(daemon: DaemonProcess) -> int:
    async with daemon.http(OPERATOR) as http:
        text = (await http.get("/metrics")).text
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("orchestrator_sessions{")
    )


def collected_sessions(daemon: DaemonProcess) -> int:
    """Sessions whose memory the daemon collected after they left (its log says)."""
    return sum(
        json.loads(line).get("sessions", 0)
        for line in daemon.lines()
        if '"memory of sessions that left collected"' in line
    )


async def _until_put_away(daemon: DaemonProcess, sessions: int) -> None:
    """Until no session is live and the daemon collected ``sessions`` sessions' memory (or
    :data:`COLLECT_WAIT` seconds passed: a daemon from before it collected)."""
    while await live_sessions(daemon):  # noqa: ASYNC110 (polls over HTTP)
        await trio.sleep(0.5)
    with trio.move_on_after(COLLECT_WAIT):
        while collected_sessions(daemon) < sessions:  # noqa: ASYNC110 (reads its log)
            await trio.sleep(0.5)


async def _converse(daemon: DaemonProcess, turns: int, done: list[int]) -> None:
    """One client: a session of the fan team, ``turns`` prompts, each answered; then it
    leaves (the session stays until the daemon's idle expiry puts it away)."""
    async with websocket(f"{daemon.ws_url}/ws?team=fan", token=OPERATOR) as connection:
        while json.loads(await connection.get_message()).get("type") != "init":
            pass
        for turn in range(turns):
            prompt = {"channel": "agent", "type": "prompt", "prompt": f"prompt {turn}"}
            await connection.send_message(json.dumps(prompt))
            with trio.fail_after(120):
                while json.loads(await connection.get_message()).get("type") != "done":
                    pass
            done[0] += 1


async def memory_part(duration: float, sessions: int, turns: int, idle: float) -> None:
    """Cycles of ``sessions`` conversations of ``turns`` prompts each, side by side, for
    ``duration`` seconds; after each, every session goes idle with no client, the daemon
    puts it away ``idle`` seconds later and collects what it held. The daemon's RSS is
    read at start, after each cycle's sessions ran and after they were put away."""
    rows: list[MemoryRow] = []
    done = [0]
    with tempfile.TemporaryDirectory(prefix="soak-memory-") as directory:
        async with daemon_process(
            Path(directory), teams={"fan": FAN}, limits={"idle_session": idle}
        ) as daemon:
            began = time.perf_counter()

            async def phase(name: str) -> None:
                live = await live_sessions(daemon)
                seconds = time.perf_counter() - began
                rows.append(MemoryRow(name, live, done[0], daemon.rss_kib(), seconds))
                print(f"  {rows[-1].row(rows[0].rss_kib)}", file=sys.stderr)

            await phase("start")
            cycle = 0
            while cycle == 0 or time.perf_counter() - began < duration:
                cycle += 1
                async with trio.open_nursery() as nursery:
                    for _ in range(sessions):
                        nursery.start_soon(_converse, daemon, turns, done)
                await phase(f"cycle {cycle}: {sessions} sessions answered")
                with trio.fail_after(idle * 4 + 120):
                    await _until_put_away(daemon, cycle * sessions)
                await phase(f"cycle {cycle}: put away, collected")
    start = rows[0].rss_kib
    print(
        f"\nmemory: {cycle} cycles of {sessions} sessions x {turns} prompts (a delegating "
        f"team, three workers a prompt), idle_session {idle:g} s, {duration:,.0f} s asked\n"
    )
    print("| phase | at | live sessions | prompts answered | daemon RSS | vs start |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(row.row(start))
    put_away = [row.rss_kib for row in rows if row.phase.endswith("collected")]
    first, last = put_away[0], put_away[-1]
    half = put_away[len(put_away) // 2]
    print(
        f"\nafter the last sessions were put away: {last / 1024:.1f} MB, "
        f"{100 * (last - start) / start:+.0f}% of the start ({start / 1024:.1f} MB), "
        f"{100 * (last - first) / first:+.0f}% of the first cycle's; a cycle: "
        f"{_per_cycle(put_away):+.2f} MB after the first, "
        f"{_per_cycle(put_away[len(put_away) // 2 :]):+.2f} MB over the last half "
        f"(from {half / 1024:.1f} MB)"
    )


def _per_cycle(rss_kib: list[int]) -> float:
    """MB of RSS a cycle, from the first of ``rss_kib`` to the last."""
    return (rss_kib[-1] - rss_kib[0]) / 1024 / max(1, len(rss_kib) - 1)


# ─── kill -9 ─────────────────────────────────────────────────────────────────


async def _fan_client(
    daemon: DaemonProcess, index: int, received: dict[str, list[dict[str, Any]]]
) -> None:
    """Prompt the fan team turn after turn, keeping every team envelope received."""
    url = f"{daemon.ws_url}/ws?team=fan"
    try:
        async with websocket(url, token=OPERATOR) as connection:
            await connection.send_message(json.dumps({"channel": "team", "type": "subscribe"}))
            session = ""
            prompts = 0
            while True:
                message = json.loads(await connection.get_message())
                if message.get("type") == "init":
                    session = "ahp-session:/" + message["sessionId"]
                    received[session] = []
                if message.get("type") in ("init", "done"):
                    prompts += 1
                    prompt = {
                        "channel": "agent",
                        "type": "prompt",
                        "prompt": f"client {index} prompt {prompts}",
                    }
                    await connection.send_message(json.dumps(prompt))
                if message.get("channel") == "team":
                    received[session].append(message["event"])
    except Exception:  # the daemon was killed under it
        return


async def kill_part(points: int, seed: int) -> None:
    rng = random.Random(seed)
    checked = lost = sessions_seen = 0
    started: list[float] = []
    with tempfile.TemporaryDirectory(prefix="soak-kill-") as directory:
        db = Path(directory) / "journal.db"
        for point in range(points):
            delay = rng.uniform(0.05, 1.5)
            received: dict[str, list[dict[str, Any]]] = {}
            t0 = time.perf_counter()
            async with daemon_process(Path(directory), teams={"fan": FAN}) as daemon:
                started.append(time.perf_counter() - t0)

                async with trio.open_nursery() as nursery:
                    for index in range(3):
                        nursery.start_soon(_fan_client, daemon, index, received)
                    await trio.sleep(delay)
                    daemon.process.send_signal(signal.SIGKILL)
                    await daemon.process.wait()
            reader = JournalReader(db)
            for session, envelopes in received.items():
                if not envelopes:
                    continue
                sessions_seen += 1
                stored = [
                    unstructure_envelope(e) for e in project_facts(session, reader.facts(session))
                ]
                by_sequence = {e["sequence"]: e for e in stored}
                for envelope in envelopes:
                    checked += 1
                    if by_sequence.get(envelope["sequence"]) != envelope:
                        lost += 1
            print(
                f"  kill {point + 1}/{points} after {delay * 1000:.0f} ms: "
                f"{sum(map(len, received.values()))} envelopes received",
                file=sys.stderr,
            )
        facts = sum(info.last_sequence for info in JournalReader(db).sessions())
    print(f"\nkill -9: seed {seed}, {points} points, three clients of a delegating team\n")
    print("| kills | sessions | envelopes acknowledged | lost | facts in the journal | start |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {points} | {sessions_seen} | {checked:,} | {lost} | {facts:,} | "
        f"{sorted(started)[len(started) // 2]:.2f} s median |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "part", nargs="?", choices=["frames", "kill", "memory", "both"], default="both"
    )
    parser.add_argument("--frames", type=int, default=100_000, help="per endpoint")
    parser.add_argument("--points", type=int, default=100, help="kill -9 points")
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument(
        "--duration", type=float, default=3600.0, help="memory: seconds of cycles (1 hour)"
    )
    parser.add_argument("--sessions", type=int, default=8, help="memory: sessions a cycle")
    parser.add_argument("--turns", type=int, default=100, help="memory: prompts a session")
    parser.add_argument(
        "--idle", type=float, default=10.0, help="memory: the daemon's idle_session, seconds"
    )
    args = parser.parse_args()
    if args.part == "memory":
        trio.run(memory_part, args.duration, args.sessions, args.turns, args.idle)
    if args.part in ("frames", "both"):
        trio.run(frames_part, args.frames, args.seed)
    if args.part in ("kill", "both"):
        trio.run(kill_part, args.points, args.seed)


if __name__ == "__main__":
    main()
