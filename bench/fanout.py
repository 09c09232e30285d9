"""Fan-out benchmark: one coordinator delegates to N scripted workers that answer at once.

Each worker is its own chat with its own history, one turn, a short reply; the
coordinator collects all N. The orchestrator keeps everything it keeps in
production: every fact in the log, the chat and session state, the delegation
graph and the Agent UI envelopes (both folded by bus subscribers). The
baseline is plain trio: a nursery of N tasks each sending one reply on a memory
channel that the coordinator drains.

Every (implementation, N) runs in a fresh subprocess so peak RSS is its own.

    .venv/bin/python bench/fanout.py            # N = 10, 100, 1000, 10000
    .venv/bin/python bench/fanout.py 10 1000    # chosen sizes

``journal`` is the orchestrator with the SQLite journal on (durability "power"): every
fact durable before it is applied, as `orchestrator run` does. ``journal-alone`` is the
journal's own share of that: the batches the runtime submits in the N-worker run (recorded
by an in-memory run before the clock starts), each with the turns it ends, submitted to a
fresh journal and waited for; no runtime, no fold, no snapshot, no reader.
"""

from __future__ import annotations

import gc
import json
import logging
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (10, 100, 1000, 10000)


def _rss_kb() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() // 1024


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _plain_trio(n: int) -> int:
    send, receive = trio.open_memory_channel[str](n)

    async def worker(index: int) -> None:
        await send.send(f"worker {index} done")

    async with trio.open_nursery() as nursery:
        for index in range(n):
            nursery.start_soon(worker, index)
    send.close()
    return len([reply async for reply in receive])


def _team(n: int) -> object:
    from orchestrator.spec import (
        AgentSpec,
        DelegateStep,
        Delegation,
        SayStep,
        ScriptedTurn,
        TeamSpec,
    )

    delegations = tuple(Delegation(agent="worker", task=f"task {i}") for i in range(n))
    lead = AgentSpec(
        name="lead",
        role="coordinator",
        interactivity="full",
        tools=("delegate",),
        delegates_to=("worker",),
        turns=(
            ScriptedTurn(
                steps=(DelegateStep(delegations=delegations), SayStep(text="collected", chunks=1))
            ),
        ),
    )
    worker = AgentSpec(
        name="worker",
        role="worker",
        turns=(ScriptedTurn(steps=(SayStep(text="done: {task}", chunks=1),)),),
    )
    return TeamSpec(
        name="bench", parallel_budget=n, coordinator="lead", agents=(lead, worker), file="bench"
    )


async def _orchestrator(n: int, journal_path: Path | None = None) -> tuple[Any, Any, int]:
    """Run the fan-out with a reader folding the graph and the envelopes, as a client would;
    with ``journal_path``, every fact is durable (SQLite, power-loss safe) before it counts."""
    if journal_path is None:
        return await _run_fanout(n, None)
    from orchestrator.journal import SqliteJournal

    journal = SqliteJournal(journal_path)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        kept = await _run_fanout(n, journal)
        services.cancel_scope.cancel()
    return kept


async def _run_fanout(n: int, factlog: Any) -> tuple[Any, Any, int]:
    from orchestrator.core import DelegationGraph
    from orchestrator.protocols import AgentUiProjector
    from orchestrator.runtime import TeamRuntime
    from orchestrator.runtime.backends import ScriptedBackend

    team = _team(n)
    runtime = TeamRuntime(team, backends=ScriptedBackend, factlog=factlog)  # type: ignore[arg-type]
    graph = DelegationGraph()
    # Subscribed before the run starts, as every reader must be to see the first fact; it
    # follows the runtime's state (one fold per session), which the projector reads.
    subscription = runtime.bus.subscribe("bench", buffer_size=float("inf"), state=runtime.state)
    projector = AgentUiProjector(runtime.session, subscription.state)
    envelopes = 0

    async def fold_graph_and_envelopes() -> None:
        nonlocal envelopes
        async for fact in subscription:
            graph.apply(fact)
            envelopes += len(projector.feed(fact))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fold_graph_and_envelopes)
        await runtime.run("fan out")
        runtime.bus.close()  # the reader drains what it was sent, then stops
    return runtime, graph, envelopes


async def _record_batches(n: int) -> list[tuple[Any, Any]]:
    """The batches the runtime submits in the N-worker run, with the turns each ends."""
    from orchestrator.runtime import MemoryFactLog, TeamRuntime
    from orchestrator.runtime.backends import ScriptedBackend

    class KeepsBatches(MemoryFactLog):
        def __init__(self) -> None:
            super().__init__()
            self.batches: list[tuple[Any, Any]] = []

        def submit(self, facts: Any, *, ended_turns: Any = None) -> Any:
            self.batches.append((list(facts), ended_turns))
            return super().submit(facts, ended_turns=ended_turns)

    log = KeepsBatches()
    runtime = TeamRuntime(_team(n), backends=ScriptedBackend, factlog=log)  # type: ignore[arg-type]
    await runtime.run("fan out")
    return log.batches


async def _journal_alone(batches: list[tuple[Any, Any]], journal_path: Path) -> Path:
    """Submit ``batches`` to a fresh journal as the runtime does (all in flight at once),
    and wait until every one is durable."""
    from orchestrator.journal import SqliteJournal

    journal = SqliteJournal(journal_path)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        tickets = [journal.submit(facts, ended_turns=ended) for facts, ended in batches]
        for ticket in tickets:
            await ticket.wait()
        services.cancel_scope.cancel()
    return journal_path


def _verify(n: int, runtime: Any, graph: Any, envelopes: int) -> None:
    """Outside the timed region: the run did what it should, and the graph is consistent."""
    from orchestrator.core import RunStatus

    run = runtime.state.run
    assert run is not None
    assert run.status is RunStatus.COMPLETED, run
    assert len(graph.workers_of(runtime.state.coordinator_chat() or "")) == n
    violations = graph.check()
    assert not violations, violations[:3]
    assert envelopes >= 9 * n, envelopes  # about ten per worker: the projection ran


def measure(impl: str, n: int) -> dict[str, float]:
    """Run one measurement in this process; returns its figures."""
    batches: list[tuple[Any, Any]] = []
    if impl in ("orchestrator", "journal", "journal-alone"):
        # Import everything before the baseline RSS and the clock, so only the run counts.
        from orchestrator.runtime import configure_logging, tune_gc

        # As the CLI does at start: logs to stderr (stdout is for the figures), GC tuned.
        configure_logging(level=logging.WARNING)
        tune_gc()
    if impl == "journal-alone":
        batches = trio.run(_record_batches, n)  # before the clock: only the journal counts
    gc.collect()
    before = _rss_kb()
    started = time.perf_counter()
    tmp = tempfile.TemporaryDirectory()
    if impl == "trio":
        kept: Any = trio.run(_plain_trio, n)
    elif impl == "journal":
        kept = trio.run(_orchestrator, n, Path(tmp.name) / "journal.db")
    elif impl == "journal-alone":
        kept = trio.run(_journal_alone, batches, Path(tmp.name) / "journal.db")
    else:
        kept = trio.run(_orchestrator, n)
    wall = time.perf_counter() - started
    gc.collect()
    after = _rss_kb()  # with the run's state, graph and envelopes count still alive
    if impl == "journal-alone":
        from orchestrator.journal import JournalReader

        session = batches[0][0][0].session
        written = len(JournalReader(kept).facts(session))
        assert written == sum(len(facts) for facts, _ in batches), written
    elif impl != "trio":
        _verify(n, *kept)
    tmp.cleanup()
    return {
        "wall_s": wall,
        "per_worker_us": wall / n * 1e6,
        "peak_rss_mb": _peak_kb() / 1024,
        "rss_growth_kb_per_worker": max(after - before, 0) / n,
    }


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[0] == "--one":
        print(json.dumps(measure(argv[1], int(argv[2]))))
        return
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return
    try:
        sizes = [int(a) for a in argv] or list(SIZES)
    except ValueError:
        sys.exit(f"usage: bench/fanout.py [N ...]: each N a number of workers, not {argv!r}")
    header = (
        f"{'implementation':<14} {'N':>6} {'wall (s)':>9} {'µs/worker':>10} "
        f"{'peak RSS (MB)':>14} {'RSS growth (KB/worker)':>23}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        for impl in ("trio", "orchestrator", "journal", "journal-alone"):
            done = subprocess.run(
                [sys.executable, __file__, "--one", impl, str(n)],
                check=True,
                capture_output=True,
                text=True,
            )
            row = json.loads(done.stdout)
            print(
                f"{impl:<14} {n:>6} {row['wall_s']:>9.3f} {row['per_worker_us']:>10.1f} "
                f"{row['peak_rss_mb']:>14.1f} {row['rss_growth_kb_per_worker']:>23.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
