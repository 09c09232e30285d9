"""The least a worker's 13 facts can cost in CPython, beside plain trio: what issue 17's
multiples of plain trio leave for everything else.

A worker of the fan-out makes 13 facts (its chat's turn, its spawn, the coordinator's tool
call and notification). Until issue 35 it made 16: the session summary's upkeep (2) is now
derived, and a spawn's task start is its member's joining. This benchmark runs the fan-out
with everything taken out but what any implementation of those facts must do, in the
project's own types:

- ``trio``: plain trio, N tasks each sending one reply on a memory channel the coordinator
  drains (``bench/peers/run.py``'s baseline, the floor every multiple is of);
- ``facts``: the same N tasks, each making 13 facts: an AHP action (``chat/usage``, a small
  frozen value holding another) wrapped in a :class:`~orchestrator.core.Fact`, the state
  written (one frozen record evolved with the reducers' own ``evolve``, one dict entry),
  handed to one reader over a memory channel (read a batch at a time, as the bus's
  readers do), which writes one dict entry per fact: no
  validation, reducer, journal, graph or projection;
- ``facts-alone``: the 13 facts' objects only (action, fact, evolve, dict writes), no
  channel, no reader.

Each (system, N) runs ``--repeat`` times in this process, alternating; the table shows the
median CPU time per worker and its multiple of plain trio's. A fact's objects cost about what
the target allows a whole worker (4 times plain trio): read the rows as the floor under the
runtime's figures in ``bench/peers/run.py``, not as a goal.

    .venv/bin/python bench/fact_floor.py            # N = 1,000 and 10,000, 5 repeats
    .venv/bin/python bench/fact_floor.py 1000 --repeat 9
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.ahp.actions import ChatUsageAction
from orchestrator.ahp.state import UsageInfo
from orchestrator.base import evolve
from orchestrator.core import Fact

FACTS_PER_WORKER = 13


@attrs.frozen
class _Record:
    """A state record a reducer rebuilds for a fact (a chat's summary, a task)."""

    status: int
    count: int
    last: str


async def plain_trio(n: int) -> None:
    send, receive = trio.open_memory_channel[str](n)

    async def worker(index: int) -> None:
        await send.send(f"done: task {index}")

    async with trio.open_nursery() as nursery:
        for index in range(n):
            nursery.start_soon(worker, index)
    send.close()
    replies = [reply async for reply in receive]
    assert len(replies) == n


def _facts_of(index: int, state: dict[str, _Record], sequence: list[int]) -> list[Fact]:
    """A worker's 13 facts, the state written for each."""
    usage = UsageInfo(input_tokens=index, output_tokens=4)
    channel = f"ahp-chat:/{index}"
    made = []
    for _ in range(FACTS_PER_WORKER):
        sequence[0] += 1
        action = ChatUsageAction(turn_id=f"turn-{index}", usage=usage)
        fact = Fact(
            sequence=sequence[0], session="ahp-session:/s", channel=channel, at="t", action=action
        )
        record = state.get(channel) or _Record(0, 0, "")
        state[channel] = evolve(record, count=record.count + 1, last=fact.at)
        made.append(fact)
    return made


async def facts(n: int) -> None:
    send, receive = trio.open_memory_channel[Fact](float("inf"))
    state: dict[str, _Record] = {}
    seen: dict[str, int] = {}
    sequence = [0]

    async def worker(index: int) -> None:
        await trio.lowlevel.checkpoint()  # the model round's suspension
        for fact in _facts_of(index, state, sequence):
            send.send_nowait(fact)

    async def reader() -> None:
        # As the bus's readers do: one trip through the scheduler per batch, not per fact.
        async for first in receive:
            seen[first.channel] = first.sequence
            while True:
                try:
                    fact = receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                seen[fact.channel] = fact.sequence

    async with trio.open_nursery() as outer:
        outer.start_soon(reader)
        async with trio.open_nursery() as nursery:
            for index in range(n):
                nursery.start_soon(worker, index)
        send.close()
    assert len(seen) == n


async def facts_alone(n: int) -> None:
    state: dict[str, _Record] = {}
    sequence = [0]
    for index in range(n):
        _facts_of(index, state, sequence)
    assert sequence[0] == n * FACTS_PER_WORKER


SYSTEMS: dict[str, Callable[[int], Awaitable[None]]] = {
    "trio": plain_trio,
    "facts": facts,
    "facts-alone": facts_alone,
}


def cpu_per_worker(system: Callable[[int], Awaitable[None]], n: int) -> float:
    gc.collect()
    started = time.process_time()
    trio.run(system, n)
    return (time.process_time() - started) / n * 1e6


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    print(f"CPU µs per worker, median of {args.repeat} (load average {load:.1f} at start)")
    print(f"{'N':>7}  {'system':<12} {'µs/worker':>10} {'x trio':>7}")
    for n in args.sizes:
        times: dict[str, list[float]] = {name: [] for name in SYSTEMS}
        for _ in range(args.repeat):
            for name, system in SYSTEMS.items():
                times[name].append(cpu_per_worker(system, n))
        floor = statistics.median(times["trio"])
        for name in SYSTEMS:
            median = statistics.median(times[name])
            print(f"{n:>7,}  {name:<12} {median:>10,.1f} {median / floor:>7.1f}")
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main(sys.argv[1:])
