"""Where a fan-out worker's time goes: issue 17's workload, one part added at a time.

``bench/peers/run.py``'s model-path fan-out (a coordinator whose fake model asks for N
``delegate`` calls in one response; N worker chats answering in one round each; the
coordinator's second round reading the N outcomes), each row in fresh processes, one part
more than the row above it:

- ``trio``: plain trio, the floor every multiple is of;
- ``runtime``: this project's runtime in memory, no reader;
- ``+ bus``: a bus subscriber that takes each fact off the bus, keeping its own view of the
  team state up to date (what a projection reads: the recorder notes what each fact wrote,
  the view follows it), and does nothing else with it;
- ``+ graph``: that subscriber folds the delegation graph;
- ``+ Agent UI``: and projects the Agent UI envelopes (the "one reader" of every table);
- ``+ journal``: the same with the SQLite journal (durability ``power``).

The table shows each row's CPU per worker (every thread's: the journal's writer too), the
part's own cost (this row minus the one above it) and the multiple of plain trio; below it,
the journal's cost split between the trio thread (encoding the rows, the tickets, the extra
parking and waking of tasks) and its other threads (the writer: SQLite, the agent channel's
history rows, snapshots; and the file's opening, once per run). Read it with
``bench/fact_floor.py``: a worker's 13 facts (16 before issue 35) cost about 4.5 times plain
trio before any validation, reducer, journal, graph or projection.

``--profile`` adds the CPU of the in-memory runtime with one reader split by layer:
cProfile's own CPU time per function (the thread's CPU clock: waiting is not counted),
grouped by the layer its module belongs to (time in C functions and generated code, such as
``dict.get`` or an attrs ``__init__``, goes to the layer of the function that called it),
and scaled to the unprofiled run's CPU. Shares, not exact figures: the profiler's cost per
call weighs on small functions called often. A layer is where code lives; a part's own cost
in the first table also counts the core, AHP and trio code the part calls. Not for the
journal's row, whose cost is mostly in another thread and in C (compare threads with
callgrind's instruction counts: ``valgrind --tool=callgrind --separate-threads=yes``).

    .venv/bin/python bench/fanout_parts.py                  # N = 1,000, 3 repeats
    .venv/bin/python bench/fanout_parts.py 1000 --repeat 5 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "peers"))
sys.path.insert(0, str(BENCH.parent))

import run as peers

#: name → (label, prepare(n) → runner, the row it adds a part to).
PARTS: dict[str, tuple[str, Callable[[int], Callable[[], object]], str | None]] = {
    "trio": ("plain trio (nursery + channel)", peers.prepare_trio, None),
    "runtime": (
        "the runtime, in memory, no reader",
        lambda n: peers.prepare_ours(n, journal=False, reader=False),
        "trio",
    ),
    "bus": (
        "+ a subscriber taking each fact off the bus (and following the state)",
        lambda n: peers.prepare_ours(n, journal=False, reader=True, reader_does="drain"),
        "runtime",
    ),
    "graph": (
        "+ the delegation graph folded",
        lambda n: peers.prepare_ours(n, journal=False, reader=True, reader_does="graph"),
        "bus",
    ),
    "agentui": (
        "+ Agent UI envelopes projected (one reader)",
        lambda n: peers.prepare_ours(n, journal=False, reader=True),
        "graph",
    ),
    "journal": (
        "+ the SQLite journal (durability power)",
        lambda n: peers.prepare_ours(n, journal=True, reader=True),
        "agentui",
    ),
}

#: Module path fragments → the layer they belong to, first match wins.
LAYERS: tuple[tuple[str, str], ...] = (
    ("/orchestrator/core/_graph", "delegation graph (+ networkx)"),
    ("/networkx/", "delegation graph (+ networkx)"),
    ("/orchestrator/protocols/", "Agent UI projection"),
    ("/orchestrator/journal/", "journal, trio thread (encoding, tickets)"),
    ("/orchestrator/ahp/", "AHP validation and chat/session reducers"),
    ("/orchestrator/core/", "team state, team reducers, facts"),
    ("/orchestrator/spec/", "team state, team reducers, facts"),
    ("/orchestrator/base/", "frozen values (evolve, keyed vectors)"),
    ("<evolve ", "frozen values (evolve, keyed vectors)"),
    ("<slot_init ", "frozen values (evolve, keyed vectors)"),
    ("/immutables/", "frozen values (evolve, keyed vectors)"),
    ("/orchestrator/runtime/_bus", "bus (publish, subscriptions)"),
    ("/orchestrator/runtime/_recorder", "recorder (batches, tickets, commit)"),
    ("/orchestrator/runtime/", "runtime (turns, delegation, supervision)"),
    ("/sortedcontainers/", "frozen values (evolve, keyed vectors)"),
    ("/trio/", "trio (scheduler, tasks, channels, cancel scopes)"),
    ("/outcome/", "trio (scheduler, tasks, channels, cancel scopes)"),
    ("/bench/", "the benchmark's model and reader loop"),
)
#: What is attributed to its caller's layer: C functions and generated code.
BY_CALLER = (
    "~",
    "<attrs generated",
    "<cattrs generated",
    "<ahp encoder",
    "<string>",
    "<frozen ",
    "<class ",
)


def layer_of(filename: str) -> str | None:
    """The layer of a profiled function's file; None for code charged to its caller."""
    if filename.startswith(BY_CALLER):
        return None
    for fragment, layer in LAYERS:
        if fragment in filename:
            return layer
    return "other Python (standard library, logging)"


def layer_shares(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time per layer; a C function's or generated function's own time goes
    to its callers' layers, in proportion to the time each call edge spent in it."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    resolved: dict[Any, dict[str, float]] = {}

    def shares_of(function: Any, depth: int = 0) -> dict[str, float]:
        """The layers ``function``'s own time goes to, as fractions summing to 1."""
        if function in resolved:
            return resolved[function]
        layer = layer_of(function[0])
        found: dict[str, float] = defaultdict(float)
        if layer is not None:
            found[layer] = 1.0
        else:
            callers = table[function][4]
            total = sum(edge[2] for edge in callers.values())
            if total <= 0 or depth > 20:
                found["C functions and generated code, caller unknown"] = 1.0
            else:
                for caller, edge in callers.items():
                    for name, part in shares_of(caller, depth + 1).items():
                        found[name] += part * edge[2] / total
        resolved[function] = found
        return found

    seconds: dict[str, float] = defaultdict(float)
    for function, (_, _, own, _, _) in table.items():
        for name, part in shares_of(function).items():
            seconds[name] += own * part
    return seconds


def measure(name: str, n: int, profile: bool) -> dict[str, Any]:
    """One run of ``name`` at ``n`` in this process, its answer checked (``peers.measure``);
    with ``profile``, a second run under cProfile and its layers."""
    system = _as_system(name)
    figures: dict[str, Any] = dict(peers.measure(system, n))
    if profile:
        run = PARTS[name][1](n)
        # The thread's CPU clock, not the wall clock: time the trio thread spends waiting
        # (for I/O, or for the GIL while the journal's writer holds it) is not its cost.
        profiler = cProfile.Profile(time.thread_time_ns, 1e-9)
        profiler.enable()
        kept = run()
        profiler.disable()
        said = peers.SYSTEMS[system][2](kept)
        if said != f"collected {n} replies":
            raise SystemExit(f"{name} at N = {n}, profiled: the coordinator answered {said!r}")
        seconds = layer_shares(pstats.Stats(profiler))
        total = sum(seconds.values())
        figures["layers"] = {layer: value / total for layer, value in seconds.items()}
    return figures


def _as_system(name: str) -> str:
    """Registers the part as a system of ``peers`` (its measure takes names)."""
    label, prepare, _ = PARTS[name]
    key = f"parts-{name}"
    answer = peers.answer_trio if name == "trio" else peers.answer_ours
    peers.SYSTEMS[key] = (label, prepare, answer)
    return key


def run_one(name: str, n: int, profile: bool) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--one", name, str(n), *(["--profile"] if profile else [])],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} at N = {n} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(argv[1], int(argv[2]), profile="--profile" in argv)))
        return
    parser = argparse.ArgumentParser(description="A fan-out worker's cost, part by part.")
    parser.add_argument("n", type=int, nargs="?", default=1000, help="workers (default 1,000)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="fresh processes per row (3 or more: medians)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="split the one-reader row's CPU by layer"
    )
    args = parser.parse_args(argv)
    n = args.n
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in PARTS}
    for repetition in range(args.repeat):
        for name in PARTS:
            print(f"{name} N={n} run {repetition + 1}/{args.repeat}", file=sys.stderr, flush=True)
            runs[name].append(run_one(name, n, False))
    layers: dict[str, list[dict[str, Any]]] = {}
    if args.profile:
        print(f"agentui N={n} under cProfile", file=sys.stderr, flush=True)
        layers["agentui"] = [run_one("agentui", n, True)]

    def median(name: str, key: str) -> float:
        return float(statistics.median(figures[key] for figures in runs[name]))

    print(
        f"date: {started:%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}; "
        f"CPU: {peers.cpu_model()}, {os.cpu_count()} cores; load average {load_before:.2f} "
        f"at start, {os.getloadavg()[0]:.2f} at end; N = {n:,}; median of {args.repeat} "
        "fresh processes"
    )
    print()
    floor = median("trio", "cpu_per_worker_us")
    # The spread beside each median: a part's own cost is a difference of two medians, and
    # one smaller than the spread of its rows is noise.
    print("| part | CPU µs/worker | min-max | the part's own µs | x trio | wall µs/worker |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (label, _, adds_to) in PARTS.items():
        cpu = median(name, "cpu_per_worker_us")
        cpus = [figures["cpu_per_worker_us"] for figures in runs[name]]
        own = "" if adds_to is None else f"{cpu - median(adds_to, 'cpu_per_worker_us'):,.0f}"
        wall = median(name, "per_worker_us")
        print(
            f"| {label} | {cpu:,.0f} | {min(cpus):,.0f}-{max(cpus):,.0f} | {own} "
            f"| {cpu / floor:,.1f} | {wall:,.0f} |"
        )
    own_trio = median("journal", "main_cpu_per_worker_us") - median(
        "agentui", "main_cpu_per_worker_us"
    )
    writer = statistics.median(
        run["cpu_per_worker_us"] - run["main_cpu_per_worker_us"] for run in runs["journal"]
    )
    print()
    print(
        f"the journal's own: {own_trio:,.0f} µs/worker on the trio thread, "
        f"{writer:,.0f} on its other threads (the writer; the file's opening)"
    )
    for name, (figures,) in layers.items():
        main_cpu = median(name, "main_cpu_per_worker_us")
        print()
        print(f"{PARTS[name][0]}: the trio thread's {main_cpu:,.0f} µs/worker by layer")
        print()
        print("| layer | share | µs/worker |")
        print("|---|---:|---:|")
        for layer, share in sorted(figures["layers"].items(), key=lambda item: -item[1]):
            print(f"| {layer} | {share:.1%} | {share * main_cpu:,.0f} |")


if __name__ == "__main__":
    started_at = time.perf_counter()
    main(sys.argv[1:])
    print(f"\n({time.perf_counter() - started_at:,.0f} s)", file=sys.stderr)
