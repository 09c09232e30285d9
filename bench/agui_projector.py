"""AG-UI projector benchmark: the cost per worker of projecting a fan-out run to one AG-UI client.

A coordinator delegates N one-line tasks in one round (the scripted fan-out of
``bench/fanout.py``); the run's facts are recorded once, outside the clock. Then the clock
runs while the facts are fed, one by one, to an :class:`~orchestrator.protocols.AguiProjector`
started before the first fact (so every fact is projected: subagents, streams, state deltas),
and, for comparison, to an :class:`~orchestrator.protocols.AgentUiProjector`. Each projector
folds the facts into its own state, as the daemon's clients do today, so the fold is in both
figures. The figure is the projector's CPU time per worker (the best of ``--repeat`` feeds);
flat in N is the goal: a projector whose per-fact work grows with the team costs O(N²) in all.

    .venv/bin/python bench/agui_projector.py                  # N = 100, 300, 1000, 3000
    .venv/bin/python bench/agui_projector.py 100 1000         # chosen sizes
    .venv/bin/python bench/agui_projector.py --repeat 1 3000  # one feed per size

The run's facts are checked outside the clock: the projector's last event is RUN_FINISHED and
the state its client holds (the snapshot with every delta applied) is the team's final view.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (100, 300, 1000, 3000)


async def _record(n: int) -> list[Any]:
    """The facts of an N-worker fan-out, in the order a reader sees them."""
    from fanout import _team

    from orchestrator.runtime import TeamRuntime
    from orchestrator.runtime.backends import ScriptedBackend

    runtime = TeamRuntime(_team(n), backends=ScriptedBackend)  # type: ignore[arg-type]
    subscription = runtime.bus.subscribe("bench", buffer_size=float("inf"))
    facts: list[Any] = []

    async def read() -> None:
        facts.extend([fact async for fact in subscription])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await runtime.run("fan out")
        runtime.bus.close()
    return facts


def _feed_agui(facts: list[Any]) -> float:
    from orchestrator.protocols import AguiProjector

    session = facts[0].session
    gc.collect()
    started = time.process_time()
    projector = AguiProjector(session, thread_id="thread", run_id="run")
    events = projector.start()
    for fact in facts:
        events += projector.feed(fact)
    return time.process_time() - started


def _feed_agentui(facts: list[Any]) -> float:
    from orchestrator.protocols import AgentUiProjector

    gc.collect()
    started = time.process_time()
    projector = AgentUiProjector(facts[0].session)
    for fact in facts:
        projector.feed(fact)
    return time.process_time() - started


def _apply(state: Any, delta: list[dict[str, Any]]) -> Any:
    import jsonpatch

    return jsonpatch.apply_patch(state, delta)


def _check(n: int, facts: list[Any]) -> tuple[int, int]:
    """Fed again, untimed: the run finishes, every worker is a subagent, and the state the
    client holds when the run finishes is the team's view then (the run's own end comes
    after the coordinator's turn, so after the AG-UI run)."""
    from orchestrator.protocols import AguiProjector, AguiRunStatus

    projector = AguiProjector(facts[0].session, thread_id="thread", run_id="run")
    events = projector.start()
    for fact in facts:
        events += projector.feed(fact)
        if projector.status is not AguiRunStatus.RUNNING:
            break
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    started = sum(1 for e in events if e["type"] == "SUBAGENT_STARTED")
    assert started == n, started
    state: Any = None
    deltas = ops = 0
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            state = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            deltas += 1
            ops += len(event["delta"])
            state = _apply(state, event["delta"])
    # The team's view and the review lane (issue 39), as the projector's view() has them.
    assert state == projector.view(), "the client's state is not the team's"
    return deltas, ops


def main(argv: list[str]) -> None:
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return
    repeat = 3
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    try:
        sizes = [int(a) for a in argv] or list(SIZES)
    except ValueError:
        sys.exit(f"usage: bench/agui_projector.py [--repeat K] [N ...], not {argv!r}")
    from orchestrator.runtime import configure_logging, tune_gc

    configure_logging(level=logging.WARNING)  # the run's own log lines are not the table
    tune_gc()  # as the daemon does at start
    header = (
        f"{'N':>6} {'facts':>7} {'AG-UI µs/worker':>16} {'Agent UI µs/worker':>19} "
        f"{'deltas':>7} {'ops/delta':>10}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        facts = trio.run(_record, n)
        agui = min(_feed_agui(facts) for _ in range(repeat))
        agentui = min(_feed_agentui(facts) for _ in range(repeat))
        deltas, ops = _check(n, facts)
        print(
            f"{n:>6} {len(facts):>7} {agui / n * 1e6:>16,.0f} {agentui / n * 1e6:>19,.0f} "
            f"{deltas:>7} {ops / max(deltas, 1):>10.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
