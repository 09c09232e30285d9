"""Journal benchmarks: append throughput, and the time to open a stored session.

Append: facts of a streaming chat (text deltas) appended to a fresh SQLite journal,
each durable before the next figure counts it:

* ``one at a time``: submit one fact, wait until it is durable, submit the next (a
  single writer with nothing else in flight: one transaction per fact);
* ``pipelined``: one fact per batch, many batches in flight (what a team with many
  chats does: the writer commits whatever is queued in one transaction);
* ``batches of 100``: 100 facts per batch, batches in flight.

Shutdown: a session whose team file is 5 MB (and one whose is small), its facts appended one
at a time (a batch's cost when the session row holds, or does not hold, the team file), then
a backlog of one-fact batches queued at once and the journal cancelled: how long until
``serve`` returns, and how much of the backlog was written (the rest fails, never
acknowledged).

Open: a session of N facts (one long conversation: turns of a prompt, a text part and
eight deltas) is written with snapshots as the journal takes them, then opened with
``JournalReader.open`` (latest snapshot + the facts after it), cold process with the GC
thresholds the CLI sets (``tune_gc``), best of 3.

    .venv/bin/python bench/journal.py                 # append + open 10k, 100k, 1M
    .venv/bin/python bench/journal.py append
    .venv/bin/python bench/journal.py open 10000 100000
    .venv/bin/python bench/journal.py shutdown [BACKLOG]
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.ahp import (
    ChatDeltaAction,
    ChatResponsePartAction,
    ChatSummary,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    SessionChatAddedAction,
    SessionStatus,
    UserChatOrigin,
)
from orchestrator.core import Action, Fact, MemberJoined, RunStarted, TeamState
from orchestrator.journal import Durability, JournalReader, SqliteJournal
from orchestrator.runtime import configure_logging, tune_gc

SESSION = "ahp-session:/bench"
CHAT = "ahp-chat:/bench-lead"
NOW = "2026-11-23T00:00:00.000Z"
OPEN_SIZES = (10_000, 100_000, 1_000_000)


def actions() -> Iterator[tuple[str, Action]]:
    """A run whose coordinator talks on and on: 11 facts per turn."""
    yield (
        SESSION,
        RunStarted(
            run="run-1",
            team="bench",
            topology="coordinator_team",
            parallel_budget=1,
            coordinator="lead",
            prompt="talk",
            task="task-1",
        ),
    )
    summary = ChatSummary(
        resource=CHAT,
        title="lead",
        status=SessionStatus.IDLE,
        modified_at=NOW,
        origin=UserChatOrigin(),
    )
    yield SESSION, SessionChatAddedAction(summary=summary)
    yield SESSION, MemberJoined(chat=CHAT, agent="lead", role="coordinator", task="task-1")
    turn = 0
    while True:
        turn += 1
        turn_id, part = f"turn-{turn}", f"part-{turn}"
        message = Message(text=f"question {turn}", origin=MessageOrigin(kind=MessageKind.USER))
        yield CHAT, ChatTurnStartedAction(turn_id=turn_id, started_at=NOW, message=message)
        first = MarkdownResponsePart(id=part, content="The answer is ")
        yield CHAT, ChatResponsePartAction(turn_id=turn_id, part=first)
        for word in ("that", "the", "journal", "keeps", "every", "fact", "on", "disk."):
            yield CHAT, ChatDeltaAction(turn_id=turn_id, part_id=part, content=f" {word}")
        yield CHAT, ChatTurnCompleteAction(turn_id=turn_id, duration=1)


def facts(count: int) -> Iterator[Fact]:
    for sequence, (channel, action) in enumerate(actions(), start=1):
        if sequence > count:
            return
        yield Fact(sequence=sequence, session=SESSION, channel=channel, at=NOW, action=action)


# ── append ─────────────────────────────────────────────────────────────────


async def _append(path: Path, durability: Durability, mode: str, count: int) -> float:
    journal = SqliteJournal(path, durability=durability)
    all_facts = list(facts(count))
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        started = time.perf_counter()
        if mode == "one at a time":
            for fact in all_facts:
                await journal.submit([fact]).wait()
        else:
            size = 100 if mode == "batches of 100" else 1
            tickets = [
                journal.submit(all_facts[i : i + size]) for i in range(0, len(all_facts), size)
            ]
            for ticket in tickets:
                await ticket.wait()
        elapsed = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    return count / elapsed


def bench_append() -> None:
    print(f"{'append mode':<16} {'durability':<10} {'facts':>8} {'facts/s':>10}")
    print("-" * 47)
    for durability in (Durability.POWER, Durability.PROCESS):
        for mode, count in (
            ("one at a time", 2_000),
            ("pipelined", 50_000),
            ("batches of 100", 200_000),
        ):
            with tempfile.TemporaryDirectory() as tmp:
                rate = trio.run(_append, Path(tmp) / "j.db", durability, mode, count)
            print(f"{mode:<16} {durability.value:<10} {count:>8} {rate:>10,.0f}", flush=True)


# ── shutdown ───────────────────────────────────────────────────────────────


async def _shutdown(path: Path, team_bytes: int, backlog: int) -> tuple[float, float, int]:
    """(ms per one-fact batch one at a time, seconds to stop, backlog facts written)."""
    journal = SqliteJournal(path, durability=Durability.POWER)
    all_facts = list(facts(200 + backlog))
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        await journal.submit(all_facts[:1]).wait()
        journal.describe(SESSION, team_file="big.toml", team_toml="#" * team_bytes + "\n")
        started = time.perf_counter()
        for fact in all_facts[1:200]:
            await journal.submit([fact]).wait()
        per_batch = (time.perf_counter() - started) / 199 * 1000
        before = journal.statistics().facts
        for fact in all_facts[200:]:
            journal.submit([fact])
        nursery.cancel_scope.cancel()
        stopping = time.perf_counter()
    stopped = time.perf_counter() - stopping
    return per_batch, stopped, journal.statistics().facts - before


def bench_shutdown(backlog: int) -> None:
    print(f"{'team file':>9} {'ms/batch':>9} {'backlog':>8} {'written':>8} {'stop (s)':>9}")
    print("-" * 47)
    for team_bytes in (1_000, 5 * 2**20):
        with tempfile.TemporaryDirectory() as tmp:
            per_batch, stopped, written = trio.run(
                _shutdown, Path(tmp) / "j.db", team_bytes, backlog
            )
        print(
            f"{team_bytes / 2**20:>7.1f}MB {per_batch:>9.2f} {backlog:>8} {written:>8} "
            f"{stopped:>9.2f}",
            flush=True,
        )


# ── open ───────────────────────────────────────────────────────────────────


async def _write_session(path: Path, count: int) -> None:
    """Write ``count`` facts as a live run would, snapshots included."""
    journal = SqliteJournal(path, durability=Durability.PROCESS)
    state = TeamState(SESSION)
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        batch: list[Fact] = []
        for fact in facts(count):
            batch.append(fact)
            if len(batch) == 1_000:
                await journal.submit(batch).wait()
                for written in batch:
                    state.apply(written)
                journal.committed(state)
                batch = []
        if batch:
            await journal.submit(batch).wait()
        nursery.cancel_scope.cancel()


def _open_once(path: str) -> None:
    tune_gc()  # as the CLI does at start, for every command
    started = time.perf_counter()
    state = JournalReader(path).open(SESSION)
    elapsed = time.perf_counter() - started
    turns = len(state.chats[CHAT].turns)
    print(json.dumps({"seconds": elapsed, "facts": state.last_sequence, "turns": turns}))


def bench_open(sizes: list[int]) -> None:
    print(f"{'facts':>9} {'turns':>7} {'DB (MB)':>8} {'write (s)':>9} {'open (ms)':>9}")
    print("-" * 46)
    for count in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "j.db"
            started = time.perf_counter()
            trio.run(_write_session, path, count)
            written = time.perf_counter() - started
            runs = [
                json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--open-once", str(path)],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                )
                for _ in range(3)
            ]
            best = min(r["seconds"] for r in runs)
            assert runs[0]["facts"] == count, runs[0]
            size_mb = path.stat().st_size / 2**20
            print(
                f"{count:>9} {runs[0]['turns']:>7} {size_mb:>8.1f} {written:>9.1f} "
                f"{best * 1000:>9.1f}",
                flush=True,
            )


def main(argv: list[str]) -> None:
    configure_logging(level=logging.WARNING)
    if argv[:1] == ["--open-once"]:
        _open_once(argv[1])
        return
    what = argv[:1] or ["all"]
    if what[0] == "shutdown":
        bench_shutdown(int(argv[1]) if len(argv) > 1 else 200_000)
        return
    sizes = [int(a) for a in argv[1:]] or list(OPEN_SIZES)
    if what[0] in ("append", "all"):
        bench_append()
        print()
    if what[0] in ("open", "all"):
        bench_open(sizes)


if __name__ == "__main__":
    main(sys.argv[1:])
