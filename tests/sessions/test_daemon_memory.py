"""What a session leaves behind once it is put away: nothing.

Sessions of a delegating team run to their end and are put away by the daemon's idle expiry,
in process, on a mock clock (the journal's thread calls hold it, see
:class:`tests.support.teammates.HeldClock`); then the daemon's per-session structures are
empty, each
session's objects are freed, and the memory Python holds does not grow with the number of
sessions that came and went. The cyclic collector is off while a test runs: a session's
objects are in reference cycles, and what frees them must be the daemon's own doing (as in
the daemon process, whose collector thresholds leave the old generation alone for long), not
a collection that happens to come.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
import trio.testing

from orchestrator.server import assemble
from orchestrator.sessions import Daemon, DaemonStatistics, Limits, ReclaimStatistics
from orchestrator.spec import parse_team
from tests.support.teammates import HeldClock
from tests.support.teams import fan_team

#: A coordinator that hands three tasks to workers every turn, then sums them up.
FAN = fan_team(3)
IDLE: float = 60.0
LIMITS = Limits(unprompted_session=30.0, idle_session=IDLE)
#: Prompts per session.
TURNS = 3
#: Facts between two snapshots of a session: small, so that every session is snapshotted
#: (what the journal keeps of a snapshot is what must be let go of).
SNAPSHOT_EVERY = 20


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@asynccontextmanager
async def serving(tmp_path: Path, limits: Limits = LIMITS) -> AsyncIterator[Daemon]:
    """A daemon (no HTTP server) of the fan team that puts idle sessions away, on the test's
    mock clock; stopped as SIGTERM stops it when the block ends."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "use the autojump_clock fixture"
    held = HeldClock(clock)
    journal = held.journal(tmp_path / "journal.db", snapshot_every=SNAPSHOT_EVERY)
    teams = {"fan": parse_team(FAN, file="fan.toml")}
    with held.holding_threads():
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            async with trio.open_nursery() as nursery:
                daemon = Daemon(
                    teams=teams, journal=journal, http=http, shutdown_grace=0.5, limits=limits
                )
                assemble(daemon)
                await nursery.start(daemon.serve)
                nursery.start_soon(daemon.evict_idle, IDLE)
                try:
                    yield daemon
                finally:
                    with trio.CancelScope(shield=True):
                        await daemon.stop()
                    nursery.cancel_scope.cancel()
            services.cancel_scope.cancel()


async def run_sessions(daemon: Daemon, count: int) -> list[weakref.ref[object]]:
    """Run ``count`` sessions of :data:`TURNS` prompts each, side by side, until each is
    idle; return a weak reference to each."""
    sessions: list[weakref.ref[object]] = []

    async def converse(index: int) -> None:
        live = await daemon.open_session("fan")
        sessions.append(weakref.ref(live))
        for turn in range(TURNS):
            await live.prompt(f"session {index}, prompt {turn}", task_id=None)
            # Answered: the coordinator idle again, its three new workers made.
            while not (live.idle.is_set() and len(live.state.chats) == 1 + 3 * (turn + 1)):  # noqa: ASYNC110 (no event for it)
                await trio.sleep(0.1)
        assert live.state.last_sequence > SNAPSHOT_EVERY, "snapshotted"

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(converse, index)
    return sessions


def retained() -> int:
    """Bytes Python holds, but the log records the test's log capture keeps."""
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [
            tracemalloc.Filter(False, "*/logging/*"),
            tracemalloc.Filter(False, "*/structlog/*"),
        ]
    )
    return sum(statistic.size for statistic in snapshot.statistics("filename"))


async def put_away(daemon: Daemon) -> DaemonStatistics:
    """Wait until every session is put away and what they held is collected."""
    with trio.fail_after(10 * IDLE):
        while (statistics := daemon.statistics()).sessions or statistics.reclaim.waiting:  # noqa: ASYNC110 (counts)
            await trio.sleep(1.0)
        await trio.sleep(1.0)  # the reclaimer's malloc trim, in its thread
    # The journal's writer lets go of each session in its own thread, in real time (the
    # mock clock stands while this waits there).
    settled = 0
    for _ in range(1_000):
        settled = (
            0
            if daemon.statistics().journal_sessions or daemon.journal.statistics().queued
            else settled + 1
        )
        if settled == 5:
            break
        await trio.to_thread.run_sync(time.sleep, 0.01)
    return daemon.statistics()


class TestSessionsPutAway:
    async def test_leave_no_per_session_structure_and_no_object(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock, no_collector: None
    ) -> None:
        """Eight sessions run three prompts each (nine workers), go idle, and are put away
        ``idle_session`` seconds later: then no structure of the daemon counts a session
        (the journal's cache of each one's last snapshot included), and every session's
        objects are freed, with no collection but the daemon's."""
        async with serving(tmp_path) as daemon:
            sessions = await run_sessions(daemon, 8)
            ended_at = trio.current_time()
            statistics = await put_away(daemon)
            assert trio.current_time() - ended_at < 2 * IDLE
            assert statistics == DaemonStatistics(
                sessions=0,
                opening=0,
                claimed_chats=0,
                session_locks=0,
                root_sessions=0,
                journal_sessions=0,
                reclaim=ReclaimStatistics(
                    collections=1,
                    sessions=8,
                    waiting=0,
                    objects=statistics.reclaim.objects,
                ),
            )
            assert statistics.reclaim.objects > 0
            assert [session() for session in sessions] == [None] * 8

    async def test_a_session_prompted_at_once_is_freed_before_unprompted_session_passes(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock, no_collector: None
    ) -> None:
        """The timer that forgets a session never prompted lets go of it at its first prompt:
        with ``unprompted_session`` far longer than ``idle_session``, sessions prompted as
        they open are freed once put away, not ``unprompted_session`` after their opening
        (they outlived it into the soak's next cycle, whose peak then took more memory)."""
        limits = Limits(unprompted_session=10 * IDLE, idle_session=IDLE)
        async with serving(tmp_path, limits) as daemon:
            opened_at = trio.current_time()
            sessions = await run_sessions(daemon, 2)
            await put_away(daemon)
            assert trio.current_time() - opened_at < limits.unprompted_session
            assert [session() for session in sessions] == [None, None]

    async def test_retained_memory_does_not_grow_with_the_sessions_that_left(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock, no_collector: None
    ) -> None:
        """What Python holds after 20 sessions came and went is what it held after 5, within
        12 KB a session: the dicts and sets that trio and the journal's statement cache grow
        now and then (one session's state here is some 45 KB: a leak of it shows)."""
        tracemalloc.start()
        try:
            async with serving(tmp_path) as daemon:
                await run_sessions(daemon, 5)
                await put_away(daemon)
                after_5 = retained()
                await run_sessions(daemon, 15)
                await put_away(daemon)
                after_20 = retained()
        finally:
            tracemalloc.stop()
        per_session = (after_20 - after_5) / 15
        assert per_session < 12_288, f"{per_session:.0f} B retained a session"
