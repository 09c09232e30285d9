"""Forking and replaying: a fork of a large session at its last fact, and a replay of a
large fan-out against the original's wall time.

1. A session of about F facts is recorded into a SQLite journal (a fan-out of scripted
   workers whose answers stream in many chunks). ``fork_session`` then forks it at its last
   fact: the source's stored facts read, renamed in their text, and written as the new
   session with its agent-channel history, in one transaction, durable (``--durability
   power``). The table splits the time into the read (``fact_rows``), the copy
   (``fork_rows``) and the durable write (``submit_fork``: the facts, the history copied
   inside the database, the commit), then times two whole ``fork_session`` calls, 2 s
   apart (a fork's WAL checkpoint follows its acknowledgement: not the next one's). Each
   with the process's CPU time (every thread's; SQLite's I/O waits are not in it).
   Issue 40's target: under 1 s for 100,000 facts.
2. A run of N workers is recorded (the scripted backend: a zero-latency model), then replayed
   with ``orchestrator replay``'s backend, into the same journal. The table gives both wall
   times and their ratio.

    .venv/bin/python bench/fork.py                       # F = 100,000 facts, N = 1,000
    .venv/bin/python bench/fork.py --facts 20000 --workers 200
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import trio

import orchestrator
from orchestrator.core import ReplayScript, diff_sessions, fork_rows, recorded_rounds
from orchestrator.journal import open_journal, open_reader
from orchestrator.runtime import Ids
from orchestrator.runtime.backends import ReplayBackend
from orchestrator.sessions import fork_session


def team(workers: int, chunks: int) -> orchestrator.TeamSpec:
    delegations = ", ".join(f'{{ agent = "worker", task = "task {i}" }}' for i in range(workers))
    words = " ".join(f"word{i}" for i in range(chunks))
    return orchestrator.parse_team(
        f"""
[team]
name = "bench"
coordinator = "lead"
parallel_budget = {workers}
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [{{ delegate = [{delegations}] }}, {{ say = "collected" }}]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [{{ say = "{words} {{task}}", chunks = {chunks} }}]
""",
        file="bench.toml",
    )


async def record(db: Path, workers: int, chunks: int) -> tuple[str, float]:
    started = time.perf_counter()
    outcome = await orchestrator.run_team(team(workers, chunks), "go", journal=db)
    return outcome.session, time.perf_counter() - started


async def fork_at_end(db: Path, session: str) -> dict[str, tuple[float, float]]:
    """Each part's wall time and the process's CPU time in it (all threads: steadier than
    the wall on a shared machine)."""
    journal = open_journal(db)
    times: dict[str, tuple[float, float]] = {}
    clock = (time.perf_counter, time.process_time)
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        started = [c() for c in clock]
        rows = await trio.to_thread.run_sync(journal.reader.fact_rows, session)
        times["read"] = _since(started)
        ids = Ids()
        started = [c() for c in clock]
        fork = fork_rows(
            rows,
            source=session,
            session=ids.session(),
            new_chat=ids.chat,
            now="2026-12-07T13:00:00.000Z",
        )
        times["copy"] = _since(started)
        started = [c() for c in clock]
        await trio.to_thread.run_sync(journal.ownership.claim, fork.session)
        ticket = journal.submit_fork(fork, team=None)
        await ticket.wait()
        assert ticket.error is None, ticket.error
        times["write"] = _since(started)
        for part in ("fork_session", "fork_session, again"):
            # Apart: the previous fork's checkpoint, which follows its acknowledgement, is
            # not this one's.
            await trio.sleep(2)
            started = [c() for c in clock]
            await fork_session(journal, session)
            times[part] = _since(started)
        nursery.cancel_scope.cancel()
    return times


def _since(started: list[float]) -> tuple[float, float]:
    return time.perf_counter() - started[0], time.process_time() - started[1]


async def replay(db: Path, session: str, workers: int, chunks: int) -> tuple[float, bool]:
    facts = open_reader(db).facts(session)
    script = ReplayScript(recorded_rounds(facts))
    started = time.perf_counter()
    outcome = await orchestrator.run_team(
        team(workers, chunks), "go", journal=db, backends=ReplayBackend(script)
    )
    wall = time.perf_counter() - started
    found = diff_sessions(facts, open_reader(db).facts(outcome.session))
    return wall, not found.chats


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        db = Path(directory) / "bench.db"
        chunks = 40
        # About 13 facts a worker (16 before issue 35's fewer facts): its stream's chunks
        # are written as one fact, or few.
        workers = max(1, args.facts // 13)
        session, _ = await record(db, workers, chunks)
        count = open_reader(db).session(session).last_sequence
        times = await fork_at_end(db, session)
        print(f"fork of a {count:,}-fact session ({workers} workers) at its last fact")
        print(f"  {'part':<22}{'seconds':>10}{'CPU s':>10}")
        for part, (seconds, cpu) in times.items():
            print(f"  {part:<22}{seconds:>10.3f}{cpu:>10.3f}")
        small = Path(directory) / "replay.db"
        session, original = await record(small, args.workers, 3)
        replayed, same = await replay(small, session, args.workers, 3)
        print(f"\nreplay of a {args.workers:,}-worker run (scripted: a zero-latency model)")
        print(f"  {'run':<16}{'seconds':>10}")
        print(f"  {'original':<16}{original:>10.3f}")
        print(f"  {'replay':<16}{replayed:>10.3f}")
        print(f"  {'ratio':<16}{original / replayed:>10.2f}x   every chat the same: {same}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=1_000)
    trio.run(main, parser.parse_args())
