"""Harness for background-teammate tests: a daemon on a simulated wall clock.

The wall clock is ``START`` plus trio's clock, so with a mock clock the scheduler sleeps
through days in milliseconds. The journal writes and reads on threads, though, and an
autojump clock jumps whenever every task waits, also for a thread: a write in flight would
let hours pass with nothing happening, and a run "take" that long. So the clock is held
(no autojump) while any journal write or thread call is in flight (:class:`HeldClock`), and
jumps after ``AUTOJUMP`` seconds of real quiet otherwise.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio
import trio.testing

from orchestrator.ahp.state import Turn
from orchestrator.base import FactLogError, timestamp
from orchestrator.core import Fact, teammate_uri
from orchestrator.journal import Durability, Journal, open_journal, open_reader
from orchestrator.runtime import EventTicket, Ticket
from orchestrator.server import assemble
from orchestrator.sessions import Daemon, Scheduler, Teammate
from orchestrator.spec import TeamSpec, parse_team
from tests.support.paths import TEAMS

AUTOJUMP = 0.0

#: A Friday before the clocks go forward in Europe (Sunday 2026-03-29, 02:00 → 03:00).
START = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)


def wall_clock(start: dt.datetime = START) -> dt.datetime:
    return start + dt.timedelta(seconds=trio.current_time())


def instant(text: str) -> str:
    """An ISO instant as the facts write it."""
    return timestamp(dt.datetime.fromisoformat(text))


@attrs.define
class RunningScheduler:
    daemon: Daemon
    scheduler: Scheduler
    db: Path | str

    def teammate(self, name: str) -> Teammate:
        return self.scheduler.find(name)

    def stream(self, team: str, name: str) -> list[Fact]:
        return open_reader(self.db).facts(teammate_uri(team, name))


class HeldClock:
    """Holds a mock clock's autojump while work is in flight on other threads."""

    def __init__(self, clock: trio.testing.MockClock) -> None:
        self.clock = clock
        self.threshold = clock.autojump_threshold
        self.in_flight = 0

    def hold(self) -> None:
        self.in_flight += 1
        self.clock.autojump_threshold = math.inf

    def release(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.clock.autojump_threshold = self.threshold

    @contextmanager
    def holding_threads(self) -> Iterator[None]:
        """While in the block, ``trio.to_thread.run_sync`` holds the clock."""
        run_sync = trio.to_thread.run_sync

        async def held(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            self.hold()
            try:
                return await run_sync(function, *args, **kwargs)
            finally:
                self.release()

        trio.to_thread.run_sync = held  # type: ignore[assignment]
        try:
            yield
        finally:
            trio.to_thread.run_sync = run_sync

    def journal(self, db: Path | str, **options: Any) -> Journal:
        """The journal ``db`` names (a file or postgresql://...), holding the clock while
        each batch it was given is in flight; ``options`` go to :func:`open_journal`."""
        held = self
        journal = open_journal(db, durability=Durability.PROCESS, **options)
        submit = journal.submit

        def held_submit(
            facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
        ) -> Ticket:
            ticket = submit(facts, ended_turns=ended_turns)
            if isinstance(ticket, EventTicket) and not ticket.done():
                held.hold()
                complete = ticket.complete

                def completed(error: FactLogError | None = None) -> None:
                    complete(error)
                    held.release()

                ticket.complete = completed  # type: ignore[method-assign]
            return ticket

        journal.submit = held_submit  # type: ignore[method-assign]
        return journal


@asynccontextmanager
async def scheduler_daemon(
    tmp_path: Path, teams: Mapping[str, str], *, db: Path | str | None = None
) -> AsyncIterator[RunningScheduler]:
    """A daemon (no HTTP server) serving ``teams`` (name → TOML) on ``db``, its teammates
    scheduled on :func:`wall_clock`; stopped as SIGTERM stops it when the block ends.

    The test's clock must be a :class:`trio.testing.MockClock` (see :class:`HeldClock`).
    """
    db = db or tmp_path / "journal.db"
    specs = {name: parse_team(text, file=f"{name}.toml") for name, text in teams.items()}
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "use a MockClock fixture"
    held = HeldClock(clock)
    journal = held.journal(db)
    with held.holding_threads():
        async with _daemon(journal, specs, db) as running:
            yield running


@asynccontextmanager
async def _daemon(
    journal: Journal, specs: Mapping[str, TeamSpec], db: Path | str
) -> AsyncIterator[RunningScheduler]:
    async with trio.open_nursery() as services, httpx.AsyncClient() as http:
        await services.start(journal.serve)
        async with trio.open_nursery() as nursery:
            daemon = Daemon(teams=specs, journal=journal, http=http, shutdown_grace=0.5)
            scheduler = assemble(daemon, wall_clock=wall_clock).scheduler
            # The wall clock is trio's: no need to read it again every minute, and each
            # wait for real quiet (AUTOJUMP) costs real time.
            scheduler.poll = 6 * 3_600.0
            await nursery.start(daemon.serve)
            try:
                yield RunningScheduler(daemon=daemon, scheduler=scheduler, db=db)
            finally:
                with trio.CancelScope(shield=True):
                    await daemon.stop()
                nursery.cancel_scope.cancel()
        services.cancel_scope.cancel()


def nightly(**background: str) -> str:
    """The shipped nightly team, with its [[background]] keys replaced by ``background``."""
    text = (TEAMS / "nightly.toml").read_text(encoding="utf-8")
    if not background:
        return text
    head, rest = text.split("[[background]]\n", 1)
    entry, tail = rest.split("\n\n", 1)
    keys = dict(line.split(" = ", 1) for line in entry.splitlines())
    keys.update({k: v if v.isdigit() else f'"{v}"' for k, v in background.items()})
    for key in [k for k, v in keys.items() if v == '""']:
        del keys[key]
    lines = "\n".join(f"{k} = {v}" for k, v in keys.items())
    return f"{head}[[background]]\n{lines}\n\n{tail}"


def slow_team(*, minutes: int, background: str) -> str:
    """A team whose teammate ``poller`` takes ``minutes`` per run; ``background``: the
    rest of its [[background]] entry (TOML lines)."""
    return f"""
[team]
name = "slow"
topology = "background_teammate"
coordinator = "lead"

[[background]]
name = "poller"
prompt = "Poll the queue"
{background}

[agents.lead]
role = "coordinator"
backend = "scripted"
instructions = "You poll."

[[agents.lead.turns]]
steps = [{{ sleep = {minutes * 60} }}, {{ usage = [120, 30] }}, {{ say = "Polled." }}]
"""
