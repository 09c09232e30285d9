"""Where a daemon's memory goes while sessions run, and what comes back once they are put away.

The memory soak (``bench/soak.py memory``) shows the daemon's RSS after each cycle's
sessions were put away: flat after the first cycle, but above the start. This benchmark
says why, in process (a :class:`~orchestrator.sessions.Daemon` without HTTP, its journal
on a SQLite file, the delegating fan team, real time):

1. cycles of ``--sessions`` sessions of ``--prompts`` prompts each, side by side; after
   each, the sessions are put away (``idle_session``) and collected. A row for the start,
   each cycle with its sessions live and idle, and each cycle put away: RSS, the bytes in
   Python's allocated blocks, and pymalloc's arenas (1 MiB each) from
   :func:`sys._debugmallocstats`. Blocks that come back while arenas do not are
   fragmentation: CPython frees an arena only once every block in it is free.
2. one more session of ``--prompts`` prompts, live and idle, its Python objects by the
   file that allocated them (``tracemalloc``): what a live session holds, part by part,
   and what of it is left once it is put away.

    .venv/bin/python bench/memory_peak.py
    .venv/bin/python bench/memory_peak.py --sessions 8 --prompts 100 --cycles 4
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import tempfile
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import httpx
import structlog
import trio
from idle_session import IDLE, answered, put_away  # bench/ is this script's path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.journal import Durability, open_journal
from orchestrator.server import assemble
from orchestrator.sessions import Daemon, Limits
from orchestrator.spec import parse_team
from tests.support.teams import fan_team

#: Rows of the per-file table.
FILES_SHOWN: Final = 15


def allocator() -> tuple[float, float, int]:
    """RSS (MB), bytes in Python's allocated blocks (MB), and pymalloc's arenas now."""
    read, write = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(write, 2)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write)
    with os.fdopen(read) as stats:
        text = stats.read()

    def stat(name: str) -> int:
        found = re.search(re.escape(name) + r"\s*=\s*([\d,]+)", text)
        assert found is not None, f"no {name!r} in sys._debugmallocstats()"
        return int(found.group(1).replace(",", ""))

    with open("/proc/self/statm") as statm:
        rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    blocks = stat("# bytes in allocated blocks")
    return rss / 2**20, blocks / 2**20, stat("# arenas allocated current")


@asynccontextmanager
async def serving(prompts: int, sessions: int) -> AsyncIterator[Daemon]:
    """A daemon of the fan team (enough scripted turns for ``prompts`` prompts)."""
    with tempfile.TemporaryDirectory(prefix="memory-peak-") as directory:
        journal = open_journal(Path(directory) / "journal.db", durability=Durability.PROCESS)
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            daemon = Daemon(
                teams={"fan": parse_team(fan_team(prompts + 1), file="fan.toml")},
                journal=journal,
                http=http,
                limits=Limits(idle_session=IDLE, max_sessions=sessions + 10),
            )
            assemble(daemon)
            await services.start(daemon.serve)
            yield daemon
            await daemon.stop()
            services.cancel_scope.cancel()


async def converse(daemon: Daemon, index: int, prompts: int) -> None:
    live = await daemon.open_session("fan")
    for prompt in range(prompts):
        await live.prompt(f"session {index}, prompt {prompt}", task_id=None)
        await answered(live, prompt + 1)


def by_file(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> list[str]:
    rows = []
    for change in after.compare_to(before, "filename")[:FILES_SHOWN]:
        name = change.traceback[0].filename
        shown = name.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
        rows.append(f"| {shown} | {change.size_diff / 1024:,.0f} KB | {change.count_diff:,} |")
    return rows


async def main(sessions: int, prompts: int, cycles: int) -> None:
    print(
        f"\nmemory: {cycles} cycles of {sessions} fan-team sessions x {prompts} prompts "
        "(three workers a prompt), in process\n"
    )
    print("| phase | RSS | Python's blocks | pymalloc arenas | most queued for the writer |")
    print("|---|---:|---:|---:|---:|")
    most_queued = [0]

    def row(phase: str) -> None:
        gc.collect()
        rss, blocks, arenas = allocator()
        queued, most_queued[0] = most_queued[0], 0
        print(f"| {phase} | {rss:.1f} MB | {blocks:.1f} MB | {arenas} | {queued:,} |", flush=True)

    async def sample_queue(daemon: Daemon) -> None:
        """The journal's backlog is a peak the sessions' facts reach while they run."""
        while True:
            most_queued[0] = max(most_queued[0], daemon.journal.statistics().queued)
            await trio.sleep(0.01)

    async with serving(prompts, sessions) as daemon:
        # The sampler stops with its nursery, before the snapshots below: cancelled in the
        # same block, it would cancel them too.
        async with trio.open_nursery() as sampling:
            sampling.start_soon(sample_queue, daemon)
            row("start")
            for cycle in range(1, cycles + 1):
                async with trio.open_nursery() as nursery:
                    for index in range(sessions):
                        nursery.start_soon(converse, daemon, index, prompts)
                row(f"cycle {cycle}: {sessions} sessions live, idle")
                await put_away(daemon)
                row(f"cycle {cycle}: put away")
            sampling.cancel_scope.cancel()

        tracemalloc.start()
        gc.collect()
        before = tracemalloc.take_snapshot()
        await converse(daemon, 0, prompts)
        gc.collect()
        live = tracemalloc.take_snapshot()
        await put_away(daemon)
        gc.collect()
        left = tracemalloc.take_snapshot()
        tracemalloc.stop()
    held = sum(change.size_diff for change in live.compare_to(before, "filename"))
    kept = sum(change.size_diff for change in left.compare_to(before, "filename"))
    print(f"\none live, idle session of {prompts} prompts holds {held / 1024:,.0f} KB:\n")
    print("| allocated in | held | objects |")
    print("|---|---:|---:|")
    print("\n".join(by_file(before, live)))
    print(f"\nonce put away and collected, {kept / 1024:,.0f} KB of it is left:\n")
    print("| allocated in | left | objects |")
    print("|---|---:|---:|")
    print("\n".join(by_file(before, left)[:5]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=4)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    trio.run(main, args.sessions, args.prompts, args.cycles)
