"""The per-fact path's parts, timed inside a streaming run: where a fact's cost goes.

Runs ``bench/streaming.py``'s workload (K workers streaming T tokens at R/s, the SQLite
journal with durability ``power``, one ``TeamRun.updates()`` reader) with each part of the
path a fact takes wrapped in a timer:

- ``stream``: the round reading a chunk (``StreamWriter.text``), per token;
- ``validate + reduce``: ``TeamState.prepare`` (the validator and the pure reducers, against
  an overlay of the state);
- ``record``: the rest of ``Recorder.submit`` (the facts' objects, the overlay pushed);
- ``encode``: the journal's rows of a batch (each fact's JSON and checksum), on the trio
  thread;
- ``queue``: the rest of the journal's ``submit`` (the batch handed to the writer);
- ``write (CPU)``: the writer thread's CPU for a group commit (SQLite's statements and
  COMMIT; its wait for the disk is not CPU), per fact;
- ``commit``: ``TeamState.commit`` (the overlay made the state);
- ``publish``: ``FactBus.publish_nowait`` (the bus's observers and subscribers' queues);
- ``reader``: the reader's Agent UI projection of each update (``AgentUiProjector.feed``).

Each part is its thread's CPU time in it (``time.thread_time_ns``: not the wall time, which
counts the waits for the GIL the writer thread holds) over the facts recorded (µs per fact),
and its share of the process's CPU; what is left is trio's scheduling, the flusher, the
model's own sleeps, and the timers. A timer costs about 1 µs a call. A small run first
leaves out what the first facts of each kind cost once (the converters' hooks made on
first use, say): the figures are a warm process's, as a daemon's are. One fresh process:

    .venv/bin/python bench/fact_path.py                  # 50x400@200
    .venv/bin/python bench/fact_path.py 200x200@50 --window 0
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import streaming  # bench/streaming.py: the workload

#: Part name → time (ns) spent in it, and how many calls.
TOTALS: dict[str, list[int]] = {}


def _timed(
    name: str, function: Callable[..., Any], clock: Callable[[], int] = time.thread_time_ns
) -> Callable[..., Any]:
    total = TOTALS.setdefault(name, [0, 0])

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return function(*args, **kwargs)
        finally:
            total[0] += clock() - start
            total[1] += 1

    return wrapper


def _timed_async(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """The synchronous part of an async method that seldom waits (``StreamWriter.text``)."""
    total = TOTALS.setdefault(name, [0, 0])

    @functools.wraps(function)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return await function(*args, **kwargs)
        finally:
            total[0] += time.thread_time_ns() - start
            total[1] += 1

    return wrapper


def _instrument() -> None:
    from orchestrator.core import TeamState
    from orchestrator.journal import SqliteJournal
    from orchestrator.protocols import AgentUiProjector
    from orchestrator.runtime import FactBus, Recorder, StreamWriter

    group_commit = importlib.import_module("orchestrator.journal._group_commit")
    TeamState.prepare = _timed("validate + reduce", TeamState.prepare)  # type: ignore[method-assign]
    TeamState.commit = _timed("commit", TeamState.commit)  # type: ignore[method-assign]
    Recorder.submit = _timed("submit (all)", Recorder.submit)  # type: ignore[method-assign]
    setattr(group_commit, "_batch", _timed("encode", group_commit._batch))  # noqa: B010
    SqliteJournal.submit = _timed("journal submit (all)", SqliteJournal.submit)  # type: ignore[method-assign]
    SqliteJournal._write_together = _timed("write (CPU)", SqliteJournal._write_together)  # type: ignore[method-assign]
    FactBus.publish_nowait = _timed("publish", FactBus.publish_nowait)  # type: ignore[method-assign]
    AgentUiProjector.feed = _timed("reader", AgentUiProjector.feed)  # type: ignore[method-assign]
    StreamWriter.text = _timed_async("stream", StreamWriter.text)  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", nargs="?", default="50x400@200", help="K x T @ R")
    parser.add_argument("--window", type=float, default=-1, help="delta window in ms")
    args = parser.parse_args()
    k, t, rate = streaming._parse(args.workload)
    window = args.window / 1000 if args.window >= 0 else -1.0

    from orchestrator.runtime import configure_logging, tune_gc

    configure_logging(level=logging.WARNING)
    tune_gc()
    import orchestrator
    from orchestrator.ahp import actions
    from orchestrator.journal import SqliteJournal

    loaded = (orchestrator.open_run, actions.ChatDeltaAction, SqliteJournal)
    del loaded
    _instrument()
    with tempfile.TemporaryDirectory() as tmp:
        # A small run first: what the first facts of each kind cost once (the converters'
        # hooks and the evolvers made on first use, say) is left out of the table.
        trio.run(
            streaming._ours, 2, 20, 1000.0, streaming._Pace(), Path(tmp) / "warm.db", True, window
        )
    for total in TOTALS.values():
        total[:] = [0, 0]
    pace = streaming._Pace()
    with tempfile.TemporaryDirectory() as tmp:
        journal = Path(tmp) / "bench.db"
        cpu0 = time.process_time()
        trio.run(streaming._ours, k, t, rate, pace, journal, True, window)
        cpu = time.process_time() - cpu0
    submits = TOTALS["submit (all)"]
    facts = TOTALS["reader"][1]  # every fact the reader was given
    batches = submits[1]
    parts = {name: total[0] for name, total in TOTALS.items()}
    parts["record"] = parts.pop("submit (all)") - parts["validate + reduce"]
    parts["record"] -= parts["journal submit (all)"]
    parts["queue"] = parts.pop("journal submit (all)") - parts["encode"]
    order = (
        "stream",
        "validate + reduce",
        "record",
        "encode",
        "queue",
        "write (CPU)",
        "commit",
        "publish",
        "reader",
    )
    tokens = k * t
    print(
        f"{args.workload}, journal (power) + reader: {facts} facts in {batches} batches, "
        f"{tokens} tokens, {cpu * 1e6 / tokens:.0f} µs CPU per token (a warm process)\n"
    )
    print("| part | µs per fact | µs per token | share of CPU |\n|---|---:|---:|---:|")
    accounted = 0.0
    for name in order:
        ns = parts[name]
        accounted += ns
        print(
            f"| {name} | {ns / 1e3 / facts:.1f} | {ns / 1e3 / tokens:.1f} | {ns / 1e9 / cpu:.0%} |"
        )
    rest = cpu * 1e9 - accounted
    print(
        f"| the rest | {rest / 1e3 / facts:.1f} | {rest / 1e3 / tokens:.1f} "
        f"| {rest / 1e9 / cpu:.0%} |"
    )


if __name__ == "__main__":
    main()
