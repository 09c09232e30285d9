"""Journal benchmarks: append throughput, and the time to open a stored session.

Each figure is on SQLite, on PostgreSQL, or on both side by side (``--db``; PostgreSQL's
is a throwaway cluster started as the tests start one, ``tests/support/postgres.py``, with
``fsync=on`` unless ``--pg-fsync off``), the median of ``--repeat`` runs (3) alternating
between the databases, with the load average around it (the machine is shared).

Append: facts of a streaming chat (text deltas) appended to a fresh journal,
each durable before the next figure counts it:

* ``one at a time``: submit one fact, wait until it is durable, submit the next (a
  single writer with nothing else in flight: one transaction per fact);
* ``pipelined``: one fact per batch, many batches in flight (what a team with many
  chats does: the writer commits whatever is queued in one transaction);
* ``batches of 100``: 100 facts per batch, batches in flight (on PostgreSQL, a group's
  facts go in with one ``COPY``).

Shutdown: a session whose team file is 5 MB (and one whose is small), its facts appended one
at a time (a batch's cost when the session row holds, or does not hold, the team file), then
a backlog of one-fact batches queued at once and the journal cancelled: how long until
``serve`` returns, and how much of the backlog was written (the rest fails, never
acknowledged).

Notify (PostgreSQL): what following a session from other nodes would add to the primary
(LISTEN/NOTIFY, one NOTIFY per committed group): commits that each send one notification,
from 1 and 4 connections, and the rate one listener receives them.

Open: a session of N facts (one long conversation: turns of a prompt, a text part and
eight deltas) is written with snapshots as the journal takes them, then opened with
``JournalReader.open`` (latest snapshot + the facts after it; on PostgreSQL connecting
too, as a command does), cold process with the GC thresholds the CLI sets (``tune_gc``),
median (and best) of ``--repeat``.

    .venv/bin/python bench/journal.py                 # append + open 10k, 100k, 1M (SQLite)
    .venv/bin/python bench/journal.py append --db both
    .venv/bin/python bench/journal.py open 100000 --db both
    .venv/bin/python bench/journal.py shutdown [BACKLOG]      # SQLite
    .venv/bin/python bench/journal.py notify --db postgresql  # commits with a NOTIFY each
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatResponsePartAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatSummary,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    SessionStatus,
    UserChatOrigin,
)
from orchestrator.core import Action, Fact, MemberJoined, RunStarted, TeamState
from orchestrator.journal import (
    Db,
    Durability,
    SqliteJournal,
    is_postgres_url,
    open_journal,
    open_reader,
)
from orchestrator.runtime import configure_logging, tune_gc
from tests.support.postgres import find_postgres_binaries, start_postgres

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


# ── the databases ──────────────────────────────────────────────────────────


@attrs.define
class Target:
    """One database kind: makes a new empty journal location (a file, or a database on
    the throwaway cluster) and forgets it afterwards."""

    name: str
    server: Any = None  # tests.support.postgres.PostgresServer, for "postgresql"
    _tmp: list[tempfile.TemporaryDirectory[str]] = attrs.field(factory=list)

    def make(self) -> Db:
        if self.server is None:
            tmp = tempfile.TemporaryDirectory(prefix="bench-journal-")
            self._tmp.append(tmp)
            return Path(tmp.name) / "j.db"
        url: str = self.server.create_database()
        return url

    def size_mb(self, db: Db) -> float:
        if isinstance(db, Path):
            return db.stat().st_size / 2**20
        import psycopg

        name = str(db).rsplit("/", 1)[1]
        with psycopg.connect(str(db)) as connection:
            row = connection.execute("SELECT pg_database_size(%s)", (name,)).fetchone()
        return float(row[0] if row else 0) / 2**20

    def forget(self, db: Db) -> None:
        """Remove ``db`` (a benchmark's 1M-fact session is hundreds of MB)."""
        if self.server is None:
            for tmp in self._tmp:
                tmp.cleanup()
            self._tmp.clear()
            return
        import psycopg

        name = str(db).rsplit("/", 1)[1]
        with psycopg.connect(self.server.url(), autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def load() -> float:
    """The 1-minute load average now (the machine is shared: each figure carries it)."""
    return os.getloadavg()[0]


# ── append ─────────────────────────────────────────────────────────────────


async def _append(db: Db, durability: Durability, mode: str, count: int) -> float:
    journal = open_journal(db, durability=durability)
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
                assert ticket.error is None, ticket.error
        elapsed = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    return count / elapsed


APPEND_MODES = (("one at a time", 2_000), ("pipelined", 50_000), ("batches of 100", 200_000))


def bench_append(targets: list[Target], repeat: int) -> None:
    """facts/s for each mode and durability, median of ``repeat`` fresh journals on each
    database (runs alternate between the databases), and PostgreSQL's as a multiple of
    SQLite's."""
    columns = "".join(f" {t.name + ' f/s':>15}" for t in targets)
    ratio = " pg/sqlite" if len(targets) == 2 else ""
    print(f"{'append mode':<16} {'durability':<10} {'facts':>8}{columns}{ratio} {'load':>10}")
    print("-" * (36 + 16 * len(targets) + len(ratio) + 11))
    for durability in (Durability.POWER, Durability.PROCESS):
        for mode, count in APPEND_MODES:
            rates: dict[str, list[float]] = {t.name: [] for t in targets}
            loads = [load()]
            for _ in range(repeat):
                for target in targets:
                    db = target.make()
                    rates[target.name].append(trio.run(_append, db, durability, mode, count))
                    target.forget(db)
            loads.append(load())
            medians = [statistics.median(rates[t.name]) for t in targets]
            cells = "".join(f" {m:>15,.0f}" for m in medians)
            if ratio:
                cells += f" {medians[1] / medians[0]:>9.2f}"
            print(
                f"{mode:<16} {durability.value:<10} {count:>8}{cells} "
                f"{min(loads):>4.1f}-{max(loads):<4.1f}",
                flush=True,
            )


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


async def _write_session(db: Db, count: int) -> None:
    """Write ``count`` facts as a live run would, snapshots included."""
    journal = open_journal(db, durability=Durability.PROCESS)
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


def _open_once(db: str) -> None:
    tune_gc()  # as the CLI does at start, for every command
    started = time.perf_counter()
    reader = open_reader(Path(db) if not is_postgres_url(db) else db)
    state = reader.open(SESSION)  # PostgreSQL: connecting is part of it, as for a CLI
    elapsed = time.perf_counter() - started
    turns = len(state.chats[CHAT].turns)
    print(json.dumps({"seconds": elapsed, "facts": state.last_sequence, "turns": turns}))


def bench_open(targets: list[Target], sizes: list[int], repeat: int) -> None:
    """Open a session of N facts in a cold process, ``repeat`` times: median (and best)."""
    header = f"{'database':<11} {'facts':>9} {'turns':>7} {'DB (MB)':>8} {'write (s)':>9}"
    print(f"{header} {'open ms (median)':>16} {'best':>7} {'load':>10}")
    print("-" * 84)
    for count in sizes:
        medians: list[float] = []
        for target in targets:
            db = target.make()
            loads = [load()]
            started = time.perf_counter()
            trio.run(_write_session, db, count)
            written = time.perf_counter() - started
            runs = [
                json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--open-once", str(db)],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                )
                for _ in range(repeat)
            ]
            loads.append(load())
            seconds = [r["seconds"] for r in runs]
            assert runs[0]["facts"] == count, runs[0]
            medians.append(statistics.median(seconds))
            print(
                f"{target.name:<11} {count:>9} {runs[0]['turns']:>7} "
                f"{target.size_mb(db):>8.1f} {written:>9.1f} "
                f"{statistics.median(seconds) * 1000:>16.1f} {min(seconds) * 1000:>7.1f} "
                f"{min(loads):>4.1f}-{max(loads):<4.1f}",
                flush=True,
            )
            target.forget(db)
        if len(medians) == 2:
            print(
                f"{'pg/sqlite':<11} {count:>9} {'':>7} {'':>8} {'':>9} "
                f"{medians[1] / medians[0]:>16.2f}"
            )


# ── NOTIFY ─────────────────────────────────────────────────────────────────


def _notifier(url: str, count: int, writers: int, index: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        for n in range(index, count, writers):
            # One transaction per NOTIFY, as a commit of one group would send one.
            connection.execute("SELECT pg_notify('facts', %s)", (f"ahp-session:/s{n % 300} {n}",))


def bench_notify(server: Any, repeat: int) -> None:
    """What following (issue 21: LISTEN/NOTIFY woken nodes) would cost the primary: commits
    that each send one NOTIFY (a session and a sequence as payload), from 1 and 4
    connections, with one listener receiving them all; median of ``repeat``."""
    import threading

    import psycopg

    print(f"{'writers':>7} {'notifies':>9} {'commits/s':>10} {'received/s':>11} {'load':>10}")
    print("-" * 51)
    for writers in (1, 4):
        rates: list[tuple[float, float]] = []
        loads = [load()]
        for _ in range(repeat):
            url = server.create_database()
            count = 20_000
            with psycopg.connect(url, autocommit=True) as listener:
                listener.execute("LISTEN facts")
                threads = [
                    threading.Thread(target=_notifier, args=(url, count, writers, i))
                    for i in range(writers)
                ]
                began = time.perf_counter()
                for thread in threads:
                    thread.start()
                received = 0
                for _notify in listener.notifies(timeout=60, stop_after=count):
                    received += 1
                took = time.perf_counter() - began
                for thread in threads:
                    thread.join()
                sent = time.perf_counter() - began
            rates.append((count / sent, received / took))
        loads.append(load())
        commits = statistics.median(r[0] for r in rates)
        got = statistics.median(r[1] for r in rates)
        print(
            f"{writers:>7} {count:>9} {commits:>10,.0f} {got:>11,.0f} "
            f"{min(loads):>4.1f}-{max(loads):<4.1f}",
            flush=True,
        )


def main(argv: list[str]) -> None:
    configure_logging(level=logging.WARNING)
    if argv[:1] == ["--open-once"]:
        _open_once(argv[1])
        return
    parser = argparse.ArgumentParser(description="Journal benchmarks (see the docstring).")
    parser.add_argument(
        "what", nargs="?", default="all", choices=["all", "append", "open", "shutdown", "notify"]
    )
    parser.add_argument("numbers", nargs="*", type=int, help="open: sizes; shutdown: backlog")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="sqlite")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--pg-fsync",
        choices=["on", "off"],
        default="on",
        help="the throwaway server's fsync (on: it flushes its WAL at COMMIT, as SQLite's "
        "power durability fsyncs; off: as the tests run it)",
    )
    args = parser.parse_args(argv)
    if args.what == "shutdown":
        bench_shutdown(args.numbers[0] if args.numbers else 200_000)
        return
    server = None
    targets: list[Target] = []
    if args.db in ("sqlite", "both"):
        targets.append(Target("sqlite"))
    if args.db in ("postgresql", "both"):
        binaries = find_postgres_binaries()
        if binaries is None:
            sys.exit("no PostgreSQL binaries (apt-get install postgresql)")
        server = start_postgres(binaries, fsync=args.pg_fsync == "on")
        targets.append(Target("postgresql", server))
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; "
        f"load {load():.2f}; PostgreSQL fsync {args.pg_fsync if server else '-'}; "
        f"median of {args.repeat}",
        flush=True,
    )
    try:
        if args.what == "notify":
            if server is None:
                sys.exit("notify measures PostgreSQL: --db postgresql")
            bench_notify(server, args.repeat)
            return
        if args.what in ("append", "all"):
            bench_append(targets, args.repeat)
            print()
        if args.what in ("open", "all"):
            bench_open(targets, args.numbers or list(OPEN_SIZES), args.repeat)
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.directory, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
