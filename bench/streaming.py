"""Streaming benchmark: K workers at once, each model streaming T one-word deltas at R tokens/s.

A coordinator delegates K tasks in one round; each worker's model (a :class:`Backend` of the
public API) streams T words, sleeping 1/R s before each, as a real model's stream arrives.
The figures are the process's CPU per token (every thread: the journal writes in one) and
the wall time against the model's own pace (T/R s: no system can be faster). A reader reads
every update (``TeamRun.updates()``) as a client would; its p99 is the time from the model
yielding a chunk to the reader holding a fact that contains it.

Systems:

- ``trio``: plain trio doing the same sleeps, each worker sending its words on a memory
  channel one reader drains. The floor.
- ``memory``: this project, facts in memory, ``open_run`` with a reader.
- ``journal``: the same with the SQLite journal (durability ``power``: every batch fsynced
  before anyone sees it).
- ``journal-noreader``: the journal without a reader (``run_team``).
- ``serve``: the same team under ``orchestrator serve``, a daemon process on loopback (SQLite
  journal, durability ``power``), the workers' model a backend plugin (``backend =
  "module:attr"``). One row per ``--clients`` count (1 and 100 by default): the first client is
  an AG-UI client that posts the run and reads its SSE stream (every worker's text is a
  subagent's ``TEXT_MESSAGE_CONTENT``); the others attach before the run and take turns at an
  AHP WebSocket client (``/ahp``, subscribed to the session and to each worker chat as it is
  added), an agent-channel client (``/ws?session=``) and a team-channel client (``/ws``
  subscribed to the Agent UI envelopes), in a process of their own, so that their work does
  not hold the AG-UI client back. The CPU is the daemon process's (from ``/proc``),
  from the run's POST to its ``RUN_FINISHED``; the wall is that span; the p99 is from the
  model yielding a chunk (its time is in the token, ``perf_counter`` is one clock for both
  processes) to a client reading a frame that holds it, over every client that is sent worker
  text (the AG-UI and AHP ones).
- ``langgraph``, ``langgraph-memory``: LangGraph (from ``bench/peers/.venv``: see
  ``bench/peers/requirements.txt``), one ``Send`` per task to a worker node whose
  ``BaseChatModel._astream`` sleeps the same way, read with ``astream(stream_mode="messages")``;
  ``-memory`` with the in-memory checkpointer (``InMemorySaver``).

Each (system, workload) runs in a fresh process. ``--window MS`` sets the delta window the
runtime merges a chat's deltas in (``delta_window``; 0 = one fact per delta).

    .venv/bin/python bench/streaming.py                  # both workloads, every system
    .venv/bin/python bench/streaming.py 50x400@200       # K x T @ R
    .venv/bin/python bench/streaming.py --only journal --window 0
    .venv/bin/python bench/streaming.py 20x100@50 --only serve       # a quick look (1, 100)
    .venv/bin/python bench/streaming.py 50x400@200 --only serve --clients 1 --clients 100
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORKLOADS = ("50x400@200", "200x200@50")
SYSTEMS = (
    "trio",
    "langgraph",
    "langgraph-memory",
    "memory",
    "journal",
    "journal-noreader",
    "serve",
)
#: The ``serve`` rows' client counts, unless ``--clients`` says.
CLIENTS = (1, 100)
#: The peers' own venv (bench/peers/requirements.txt): never the project's dependencies.
PEERS_PYTHON = ROOT / "bench" / "peers" / ".venv" / "bin" / "python"


def _parse(workload: str) -> tuple[int, int, float]:
    shape, _, rate = workload.partition("@")
    k, _, t = shape.partition("x")
    return int(k), int(t), float(rate)


class _Pace:
    """When each token was sent, and how long until a reader held it. A token is
    ``K:I `` (worker K's I-th word), so a reader finds it in any fact or chunk that holds it,
    however tokens were merged."""

    def __init__(self) -> None:
        self.sent: dict[str, float] = {}
        self.latencies: list[float] = []

    def token(self, worker: int, index: int) -> str:
        word = f"{worker}:{index}"
        self.sent[word] = time.perf_counter()
        return word + " "

    def saw(self, text: str) -> None:
        now = time.perf_counter()
        for word in text.split():
            sent = self.sent.pop(word, None)
            if sent is not None:
                self.latencies.append(now - sent)

    def p99_ms(self) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


async def _plain_trio(k: int, t: int, rate: float, pace: _Pace) -> int:
    send, receive = trio.open_memory_channel[tuple[str, str]](0)

    async def worker(index: int) -> None:
        async with send.clone() as out:
            for word in range(t):
                await trio.sleep(1 / rate)
                await out.send((f"w{index}", pace.token(index, word)))

    async def reader() -> int:
        words = 0
        async for _chat, chunk in receive:
            pace.saw(chunk)
            words += 1
        return words

    counted = 0

    async def read() -> None:
        nonlocal counted
        counted = await reader()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        async with send, trio.open_nursery() as workers:
            for index in range(k):
                workers.start_soon(worker, index)
    return counted


def _team(k: int) -> Any:
    from orchestrator.spec import (
        AgentSpec,
        DelegateStep,
        Delegation,
        SayStep,
        ScriptedTurn,
        TeamSpec,
    )

    lead = AgentSpec(
        name="lead",
        role="coordinator",
        interactivity="full",
        tools=("delegate",),
        delegates_to=("worker",),
        turns=(
            ScriptedTurn(
                steps=(
                    DelegateStep(
                        delegations=tuple(
                            Delegation(agent="worker", task=f"task {i}") for i in range(k)
                        )
                    ),
                    SayStep(text="collected", chunks=1),
                )
            ),
        ),
    )
    worker = AgentSpec(name="worker", role="worker")
    return TeamSpec(
        name="bench", parallel_budget=k, coordinator="lead", agents=(lead, worker), file="bench"
    )


def _backends(t: int, rate: float, pace: _Pace) -> Any:
    from orchestrator.core import RoundContext, TextDelta, UsageReport
    from orchestrator.runtime.backends import ScriptedBackend

    class StreamingModel:
        """The worker's model: T one-word deltas, 1/R s apart."""

        async def stream_round(self, context: RoundContext) -> AsyncGenerator[Any, None]:
            worker = int(context.task.rsplit(" ", 1)[1])  # "task K"
            for word in range(t):
                await trio.sleep(1 / rate)
                yield TextDelta(text=pace.token(worker, word))
            yield UsageReport(input_tokens=10, output_tokens=t)

    def backend(agent: Any) -> Any:
        return StreamingModel() if agent.name == "worker" else ScriptedBackend(agent)

    return backend


async def _ours(
    k: int, t: int, rate: float, pace: _Pace, journal: Path | None, reader: bool, window: float
) -> int:
    import orchestrator
    from orchestrator.ahp.actions import ChatDeltaAction, ChatResponsePartAction

    team = _team(k)
    backends = _backends(t, rate, pace)
    options: dict[str, Any] = {"backends": backends, "journal": journal}
    if window >= 0:
        options["delta_window"] = window
    if not reader:
        outcome = await orchestrator.run_team(team, "go", **options)
        assert str(outcome.status) == "completed", outcome
        return k * t
    chunks = 0
    async with orchestrator.open_run(team, "go", **options) as run:
        async for update in run.updates():
            action = update.fact.action
            if isinstance(action, ChatDeltaAction):
                pace.saw(action.content)
                chunks += 1
            elif isinstance(action, ChatResponsePartAction):
                content = getattr(action.part, "content", "")
                if isinstance(content, str) and content:
                    pace.saw(content)
                    chunks += 1
        outcome = await run.outcome()
    assert str(outcome.status) == "completed", outcome
    return chunks


def _langgraph(
    k: int, t: int, rate: float, pace: _Pace, *, checkpointer: bool
) -> Callable[[], int]:
    """LangGraph in its documented idiom: a ``Send`` per task to a worker node whose chat
    model streams (``_astream``), the graph read with ``astream(stream_mode="messages")``."""
    import asyncio
    import operator
    from typing import Annotated, TypedDict

    from langchain_core.language_models.chat_models import (  # type: ignore[import-not-found]
        BaseChatModel,
    )
    from langchain_core.messages import (  # type: ignore[import-not-found]
        AIMessageChunk,
        AnyMessage,
        HumanMessage,
    )
    from langchain_core.outputs import (  # type: ignore[import-not-found]
        ChatGenerationChunk,
    )
    from langgraph.checkpoint.memory import InMemorySaver  # type: ignore[import-not-found]
    from langgraph.graph import START, StateGraph  # type: ignore[import-not-found]
    from langgraph.types import Send  # type: ignore[import-not-found]

    class StreamingModel(BaseChatModel):  # type: ignore[misc]
        """T one-word chunks, 1/R s apart."""

        @property
        def _llm_type(self) -> str:
            return "bench-streaming"

        def _generate(self, messages: list[Any], stop: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark streams")

        async def _astream(
            self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            worker = int(messages[-1].content.rsplit(" ", 1)[1])  # "task K"
            for word in range(t):
                await asyncio.sleep(1 / rate)
                chunk = ChatGenerationChunk(
                    message=AIMessageChunk(content=pace.token(worker, word))
                )
                if run_manager is not None:
                    await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    # The functional form: this module's annotations are strings (``from __future__``), and
    # LangGraph would evaluate them where the names imported here are not.
    Team = TypedDict("Team", {"messages": Annotated[list[AnyMessage], operator.add]})  # noqa: UP013

    model = StreamingModel()

    def fan_out(state: Any) -> list[Any]:
        return [Send("worker", {"messages": [HumanMessage(content=f"task {i}")]}) for i in range(k)]

    async def worker(state: Any) -> dict[str, list[Any]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(Team)
    builder.add_node("worker", worker)
    builder.add_conditional_edges(START, fan_out, ["worker"])
    graph = builder.compile(checkpointer=InMemorySaver() if checkpointer else None)

    async def main() -> int:
        chunks = 0
        config = {"configurable": {"thread_id": "bench"}}
        async for message, _meta in graph.astream({"messages": []}, config, stream_mode="messages"):
            if message.content:
                pace.saw(message.content)
                chunks += 1
        return chunks

    return lambda: asyncio.run(main())


# ── under ``orchestrator serve`` ────────────────────────────────────────────

#: The workers' model, as a backend plugin the daemon imports (``benchstream:make``). Each
#: token says when the model yielded it (``perf_counter_ns``: CLOCK_MONOTONIC, one clock for
#: the daemon and the clients).
_PLUGIN = """
import time

import trio

from orchestrator.core import TextDelta, UsageReport


class StreamingModel:
    def __init__(self, tokens, rate):
        self.tokens, self.rate = tokens, rate

    async def stream_round(self, context):
        worker = int(context.task.rsplit(" ", 1)[1])  # "task K"
        for word in range(self.tokens):
            await trio.sleep(1 / self.rate)
            yield TextDelta(text=f"{worker}:{word}:{time.perf_counter_ns()} ")
        yield UsageReport(input_tokens=10, output_tokens=self.tokens)


def make(setup):
    return StreamingModel(int(setup.settings["tokens"]), float(setup.settings["rate"]))
"""

#: What a client counts: a worker's token, with the time the model yielded it.
_TOKEN = re.compile(r"(\d+:\d+):(\d+) ")

#: The kinds of attached client the ``serve`` rows take turns at (the first is AG-UI).
_KINDS = ("ahp", "agent", "team")


def _serve_team(k: int, t: int, rate: float) -> str:
    delegations = ", ".join(f'{{ agent = "worker", task = "task {i}" }}' for i in range(k))
    return (
        f'[team]\nname = "bench"\ncoordinator = "lead"\nparallel_budget = {k}\n'
        '[agents.lead]\nrole = "coordinator"\ntools = ["delegate"]\ndelegates_to = ["worker"]\n'
        '[[agents.lead.turns]]\nsteps = [{ say = "warm" }]\n'
        f"[[agents.lead.turns]]\nsteps = [{{ delegate = [{delegations}] }}, "
        '{ say = "collected" }]\n'
        '[agents.worker]\nrole = "worker"\nbackend = "benchstream:make"\n'
        f"[agents.worker.settings]\ntokens = {t}\nrate = {rate}\n"
    )


class _Seen:
    """One client's first sight of each token: the latency from the model to the frame."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.words: set[str] = set()
        self.latencies: list[float] = []
        self.every_token = trio.Event()

    def frame(self, text: str, now_ns: int) -> None:
        for word, sent in _TOKEN.findall(text):
            if word not in self.words:
                self.words.add(word)
                self.latencies.append((now_ns - int(sent)) / 1e9)
        if len(self.words) == self.tokens:
            self.every_token.set()


def _daemon_cpu(pid: int) -> float:
    """The daemon process's CPU seconds so far (user + system, every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _ws_client(
    url: str, kind: str, session: str, seen: _Seen, ready: trio.Event, done: trio.Event
) -> None:
    """An attached client on a thin wsproto connection (the client side costs as little as
    it can): it notes every frame until ``done``."""
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, Ping, Request, TextMessage

    host, port = url.removeprefix("http://").split(":")
    target = "/ahp" if kind == "ahp" else f"/ws?session={session}"
    stream = await trio.open_tcp_stream(host, int(port))
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(ws.send(Request(host=f"{host}:{port}", target=target)))
    first: dict[str, Any] | None = None
    if kind == "team":
        first = {"channel": "team", "type": "subscribe", "fromSequence": 0}
    elif kind == "ahp":
        first = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "channel": "ahp-root://",
                "protocolVersions": ["0.7.0"],
                "clientId": f"bench-{id(seen)}",
                "clientInfo": {"name": "bench", "version": "1"},
                "initialSubscriptions": [f"ahp-session:/{session}"],
            },
        }
    requests = 1
    pieces: list[str] = []
    async with stream:
        with trio.CancelScope() as scope:

            async def stop() -> None:
                await done.wait()
                scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(stop)
                while True:
                    data = await stream.receive_some(1 << 16)
                    now = time.perf_counter_ns()
                    if not data:
                        raise RuntimeError(f"the daemon closed a {kind} client")
                    ws.receive_data(data)
                    for event in ws.events():
                        if isinstance(event, AcceptConnection):
                            if first is not None:
                                await stream.send_all(ws.send(TextMessage(data=json.dumps(first))))
                            if kind != "ahp":
                                ready.set()
                        elif isinstance(event, Ping):
                            await stream.send_all(ws.send(event.response()))
                        elif isinstance(event, TextMessage):
                            pieces.append(event.data)
                            if not event.message_finished:
                                continue
                            text = "".join(pieces)
                            pieces.clear()
                            seen.frame(text, now)
                            if kind != "ahp" or (
                                ready.is_set() and '"session/chatAdded"' not in text
                            ):
                                continue
                            message = json.loads(text)
                            if message.get("id") == 1:
                                ready.set()
                            action = message.get("params", {}).get("action", {})
                            if action.get("type") == "session/chatAdded":
                                # Each worker's chat, as a team-wide AHP view follows it.
                                requests += 1
                                subscribe = {
                                    "jsonrpc": "2.0",
                                    "id": requests,
                                    "method": "subscribe",
                                    "params": {"channel": action["summary"]["resource"]},
                                }
                                frame = ws.send(TextMessage(data=json.dumps(subscribe)))
                                await stream.send_all(frame)


async def _agui_run(
    client: Any, url: str, thread: str, messages: list[dict[str, Any]], seen: _Seen | None
) -> None:
    """One AG-UI run over SSE, read to its end."""
    body = {
        "threadId": thread,
        "runId": f"run-{len(messages)}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    async with client.stream("POST", f"{url}/agui?team=bench", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if seen is not None and line.startswith("data:"):
                seen.frame(line, time.perf_counter_ns())
            if '"RUN_ERROR"' in line:
                raise RuntimeError(line)


async def _serve_clients(url: str, pid: int, k: int, t: int, clients: int) -> dict[str, Any]:
    """The AG-UI client, here; the attached clients in a process of their own
    (:func:`_attached`), so that their work does not hold the AG-UI client back."""
    import httpx

    warm = {"id": "m1", "role": "user", "content": "warm"}
    go = {"id": "m2", "role": "user", "content": "go"}
    # The attached clients' stderr: said if they fail.
    with tempfile.TemporaryFile("w+") as errors:
        async with httpx.AsyncClient(timeout=None) as client:
            await _agui_run(client, url, _THREAD, [warm], None)  # opens the session
            seen = _Seen(k * t)
            attached = None
            if clients > 1:
                others = str(clients - 1)
                command = [sys.executable, __file__, "--attached", url, str(k * t), others]
                attached = subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True
                )
                assert attached.stdin is not None
                assert attached.stdout is not None
                line = await trio.to_thread.run_sync(attached.stdout.readline)
                if line.strip() != "ready":
                    raise RuntimeError(f"the attached clients did not start: {line!r}")
            cpu0, wall0 = _daemon_cpu(pid), time.perf_counter()
            await _agui_run(client, url, _THREAD, [warm, go], seen)
            wall = time.perf_counter() - wall0
            cpu = _daemon_cpu(pid) - cpu0
        latencies = list(seen.latencies)
        # The AG-UI client's own p99: the daemon's latency to one client, apart from the
        # attached clients' process (which, on a small machine, the 99 others can saturate).
        first = sorted(latencies)
        first_p99 = first[min(len(first) - 1, int(len(first) * 0.99))] * 1000 if first else 0.0
        clients_cpu = 0.0
        if attached is not None:
            assert attached.stdin is not None
            assert attached.stdout is not None
            attached.stdin.write("done\n")
            attached.stdin.flush()
            line = await trio.to_thread.run_sync(attached.stdout.readline)
            attached.wait(30)
            if not line:
                errors.seek(0)
                raise RuntimeError(f"the attached clients failed:\n{errors.read()[-3000:]}")
            theirs = json.loads(line)
            latencies += theirs["latencies"]
            clients_cpu = theirs["cpu"]
    if len(seen.words) != k * t:
        raise RuntimeError("the AG-UI client did not see every token")
    latencies.sort()
    return {
        "cpu": cpu,
        "clients_cpu": clients_cpu,
        "wall": wall,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "agui_p99_ms": first_p99,
    }


#: The AG-UI thread (and so the session) the ``serve`` rows run.
_THREAD = "bench-thread"


async def _attached(url: str, tokens: int, count: int) -> None:
    """The attached clients (a process of their own): ``ready`` once all are attached;
    once told ``done`` (the run finished), their latencies and this process's CPU."""
    seen = [_Seen(tokens) for _ in range(count)]
    done = trio.Event()
    async with trio.open_nursery() as nursery:
        readies = []
        for index in range(count):
            ready = trio.Event()
            readies.append(ready)
            kind = _KINDS[index % len(_KINDS)]
            nursery.start_soon(_ws_client, url, kind, _THREAD, seen[index], ready, done)
        for ready in readies:
            await ready.wait()
        cpu0 = time.process_time()
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        # What the clients have yet to read is in flight: give it a moment.
        texts = [s for index, s in enumerate(seen) if _KINDS[index % len(_KINDS)] == "ahp"]
        with trio.move_on_after(10):
            for sees in texts:
                await sees.every_token.wait()
        done.set()
    missing = sum(len(s.words) != tokens for s in texts)
    if missing:
        raise RuntimeError(f"{missing} AHP clients did not see every token")
    latencies = [x for s in texts for x in s.latencies]
    print(json.dumps({"latencies": latencies, "cpu": time.process_time() - cpu0}), flush=True)


def _serve(k: int, t: int, rate: float, clients: int, window: float) -> dict[str, Any]:
    """One ``serve`` row: a daemon process, ``clients`` clients in this one."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "teams").mkdir()
        (root / "teams" / "bench.toml").write_text(_serve_team(k, t, rate), encoding="utf-8")
        (root / "benchstream.py").write_text(_PLUGIN, encoding="utf-8")
        config = (
            f"[limits]\nshutdown_grace = 0.2\nmax_connections = {clients + 64}\n"
            "subscriber_buffer = 100000\n"
            # An AHP client subscribes to each worker's chat as it is added: K requests at
            # once, over the default limit's bursts of 40 (the excess would be dropped).
            f"messages_per_second = 20.0\nburst = {k + 40}\n"
        )
        if window >= 0:
            config = f"delta_window = {window}\n" + config
        (root / "daemon.toml").write_text(config, encoding="utf-8")
        log = root / "serve.log"
        environ = {**os.environ, "PYTHONPATH": f"{tmp}:{ROOT}", "PYTHONUNBUFFERED": "1"}
        with log.open("w") as err:
            # BENCH_PROFILE=FILE: the daemon runs under cProfile, its stats written to FILE.
            profile = os.environ.get("BENCH_PROFILE")
            profiler = ("-m", "cProfile", "-o", profile) if profile else ()
            process = subprocess.Popen(
                [
                    *(sys.executable, *profiler, "-m", "orchestrator", "serve"),
                    *("--config", str(root / "daemon.toml"), "--teams", str(root / "teams")),
                    *("--db", str(root / "journal.db"), "--port", "0", "--log-format", "json"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=environ,
                cwd=tmp,
            )
        try:
            url = _listening(process, log)
            row = trio.run(_serve_clients, url, process.pid, k, t, clients)
        finally:
            process.terminate()
            process.wait(30)
    return row


def _listening(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("{") and '"daemon listening"' in line:
                return str(json.loads(line)["url"])
        if process.poll() is not None:
            raise RuntimeError(f"the daemon ended:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    raise RuntimeError(f"the daemon did not say where it listens:\n{log.read_text()[-2000:]}")


def measure(system: str, workload: str, window: float, clients: int = 1) -> dict[str, Any]:
    k, t, rate = _parse(workload)
    if system == "serve":
        row = _serve(k, t, rate, clients, window)
        return {
            "system": f"serve, {clients} client{'s' if clients > 1 else ''}",
            "workload": workload,
            "cpu_us_per_token": row["cpu"] / (k * t) * 1e6,
            "wall_s": row["wall"],
            "pace_s": t / rate,
            "p99_ms": row["p99_ms"],
            "text_facts_per_worker": float("nan"),
            "note": (
                f"AG-UI client's p99 {row['agui_p99_ms']:.1f} ms; attached clients' process: "
                f"{row['clients_cpu']:.1f} s CPU"
            ),
        }
    if system != "trio" and not system.startswith("langgraph"):
        from orchestrator.runtime import configure_logging, tune_gc

        configure_logging(level=logging.WARNING)
        tune_gc()
    pace = _Pace()
    with tempfile.TemporaryDirectory() as tmp:
        journal = Path(tmp) / "bench.db" if system.startswith("journal") else None
        if system.startswith("langgraph"):
            # Imported and built before the clock starts, as the project's code is.
            langgraph = _langgraph(k, t, rate, pace, checkpointer=system == "langgraph-memory")
        elif system != "trio":
            import orchestrator
            from orchestrator.ahp import actions

            # The facades load their modules on first use: use them now.
            loaded = (orchestrator.open_run, orchestrator.run_team, actions.ChatDeltaAction)
            del loaded
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if system == "trio":
            facts = trio.run(_plain_trio, k, t, rate, pace)
        elif system.startswith("langgraph"):
            facts = langgraph()
        else:
            reader = system != "journal-noreader"
            facts = trio.run(_ours, k, t, rate, pace, journal, reader, window)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
    tokens = k * t
    if system != "journal-noreader":
        assert len(pace.latencies) == tokens, (len(pace.latencies), tokens)  # every token seen
    return {
        "system": system,
        "workload": workload,
        "cpu_us_per_token": cpu / tokens * 1e6,
        "wall_s": wall,
        "pace_s": t / rate,
        "p99_ms": pace.p99_ms(),
        "text_facts_per_worker": facts / k if system != "journal-noreader" else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS), help="K x T @ R")
    parser.add_argument("--only", action="append", choices=SYSTEMS, help="systems to run")
    parser.add_argument(
        "--window", type=float, default=-1, help="delta window in ms (default: the runtime's)"
    )
    parser.add_argument(
        "--clients",
        type=int,
        action="append",
        help=f"the serve rows' client counts (default: {', '.join(map(str, CLIENTS))})",
    )
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--attached", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    window = args.window / 1000 if args.window >= 0 else -1.0
    if args.attached:
        url, tokens, count = args.attached
        trio.run(_attached, url, int(tokens), int(count))
        return
    if args.measure:
        system, workload, clients = args.measure
        print(json.dumps(measure(system, workload, window, int(clients))))
        return
    print(
        "| workload | system | CPU µs per token | wall s (model pace) | p99 chunk→reader ms "
        "| text facts per worker |\n|---|---|---:|---:|---:|---:|"
    )
    for workload in args.workloads:
        floor_wall = None
        runs = [
            (system, count)
            for system in args.only or SYSTEMS
            for count in ((args.clients or CLIENTS) if system == "serve" else (1,))
        ]
        for system, clients in runs:
            python = sys.executable
            if system.startswith("langgraph"):
                if not PEERS_PYTHON.exists():
                    print(
                        f"| {workload} | {system} | not installed (bench/peers/requirements.txt) |"
                    )
                    continue
                python = str(PEERS_PYTHON)
            command = [python, __file__, "--measure", system, workload, str(clients)]
            command += ["--window", str(args.window)]
            out = subprocess.run(command, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"| {workload} | {system} | failed: {out.stderr.strip()[-600:]} |")
                continue
            row = json.loads(out.stdout)
            if system == "trio":
                floor_wall = row["wall_s"]
            multiple = f" = {row['wall_s'] / floor_wall:.2f}x trio" if floor_wall else ""
            print(
                f"| {workload} | {row['system']} | {row['cpu_us_per_token']:.0f} "
                f"| {row['wall_s']:.2f} ({row['pace_s']:.1f}){multiple} | {row['p99_ms']:.1f} "
                f"| {row.get('note') or format(row['text_facts_per_worker'], '.0f')} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
