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
- ``langgraph``, ``langgraph-memory``: LangGraph (from ``bench/peers/.venv``: see
  ``bench/peers/requirements.txt``), one ``Send`` per task to a worker node whose
  ``BaseChatModel._astream`` sleeps the same way, read with ``astream(stream_mode="messages")``;
  ``-memory`` with the in-memory checkpointer (``InMemorySaver``).

Each (system, workload) runs in a fresh process. ``--window MS`` sets the delta window the
runtime merges a chat's deltas in (``delta_window``; 0 = one fact per delta).

    .venv/bin/python bench/streaming.py                  # both workloads, every system
    .venv/bin/python bench/streaming.py 50x400@200       # K x T @ R
    .venv/bin/python bench/streaming.py --only journal --window 0
"""

from __future__ import annotations

import argparse
import json
import logging
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
SYSTEMS = ("trio", "langgraph", "langgraph-memory", "memory", "journal", "journal-noreader")
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


def measure(system: str, workload: str, window: float) -> dict[str, Any]:
    k, t, rate = _parse(workload)
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
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    window = args.window / 1000 if args.window >= 0 else -1.0
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1], window)))
        return
    print(
        "| workload | system | CPU µs per token | wall s (model pace) | p99 chunk→reader ms "
        "| text facts per worker |\n|---|---|---:|---:|---:|---:|"
    )
    for workload in args.workloads:
        floor_wall = None
        for system in args.only or SYSTEMS:
            python = sys.executable
            if system.startswith("langgraph"):
                if not PEERS_PYTHON.exists():
                    print(
                        f"| {workload} | {system} | not installed (bench/peers/requirements.txt) |"
                    )
                    continue
                python = str(PEERS_PYTHON)
            command = [python, __file__, "--measure", system, workload]
            command += ["--window", str(args.window)]
            out = subprocess.run(command, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"| {workload} | {system} | failed: {out.stderr.strip()[-300:]} |")
                continue
            row = json.loads(out.stdout)
            if system == "trio":
                floor_wall = row["wall_s"]
            multiple = f" = {row['wall_s'] / floor_wall:.2f}x trio" if floor_wall else ""
            print(
                f"| {workload} | {system} | {row['cpu_us_per_token']:.0f} "
                f"| {row['wall_s']:.2f} ({row['pace_s']:.1f}){multiple} | {row['p99_ms']:.1f} "
                f"| {row['text_facts_per_worker']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
