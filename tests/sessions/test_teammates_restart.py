"""Background teammates across restarts: missed wakes, runs cut off, pause, exactly once;
on SQLite and on PostgreSQL (``journal_db``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.core import (
    Fact,
    TeammateRunOutcome,
    TeammateRunStarted,
    TeammateWoke,
    WakeDecision,
    WakeReason,
    teammate_uri,
)
from orchestrator.journal import Durability, Journal, open_journal
from tests.support.teammates import AUTOJUMP, instant, nightly, scheduler_daemon, slow_team

DAY = 86_400.0
HOUR = 3_600.0
MINUTE = 60.0


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=AUTOJUMP)


@pytest.mark.parametrize(
    ("catch_up", "expected"),
    [
        ("none", []),
        ("latest", ["2026-03-31T01:00:00+00:00"]),
        (
            "all",
            [
                "2026-03-29T01:00:00+00:00",
                "2026-03-30T01:00:00+00:00",
                "2026-03-31T01:00:00+00:00",
            ],
        ),
    ],
)
async def test_missed_wakes_follow_the_catch_up_policy(
    tmp_path: Path,
    journal_db: Path | str,
    clock: trio.testing.MockClock,
    catch_up: str,
    expected: list[str],
) -> None:
    team = {"nightly": nightly(catch_up=catch_up)}
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        await trio.sleep(DAY)  # the first night runs: Saturday 02:00Z
        await running.teammate("dependency-audit").wait_idle()
    await trio.sleep(3 * DAY)  # down Sunday, Monday and Tuesday nights
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        audit = running.teammate("dependency-audit")
        await trio.sleep(HOUR)
        while audit.state.running is not None or audit.state.backlog:
            await audit.wait_idle()
            await trio.sleep(MINUTE)
        caught_up = [r for r in audit.state.runs if r.reason is WakeReason.CATCH_UP]
        assert [r.scheduled_for for r in caught_up] == [instant(e) for e in expected]
        assert {r.outcome for r in caught_up} <= {TeammateRunOutcome.COMPLETED}
        assert len(audit.state.runs) == 1 + len(expected)
        # Then it sleeps until Wednesday night.
        assert audit.next_wake == instant("2026-04-01T01:00:00+00:00")


async def test_a_run_cut_off_by_a_restart_is_taken_up_not_run_twice(
    tmp_path: Path, journal_db: Path | str, clock: trio.testing.MockClock
) -> None:
    team = {"slow": slow_team(minutes=90, background='every = "1d"')}
    # START is 12:00Z: the daily wake is at 00:00Z, 12 hours on.
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        await trio.sleep(12 * HOUR + 30 * MINUTE)  # 00:30Z: half an hour into the run
        poller = running.teammate("poller")
        assert poller.state.running is not None
        session = poller.state.running.session
    await trio.sleep(15 * MINUTE)  # down from 00:30 to 00:45
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        poller = running.teammate("poller")
        await trio.sleep(3 * HOUR)
        await poller.wait_idle()
        (run,) = poller.state.runs
        assert (run.session, run.outcome) == (session, TeammateRunOutcome.COMPLETED)
        assert run.scheduled_for == instant("2026-03-28T00:00:00+00:00")
        starts = [f for f in running.stream("slow", "poller") if f.type.endswith("RunStarted")]
        assert len(starts) == 1
        # The run's own session was taken up once (team/runResumed), by the new process.
        resumed = [f for f in running.daemon.reader.facts(session) if f.type == "team/runResumed"]
        assert len(resumed) == 1


async def test_a_run_recorded_but_never_started_starts_under_its_session(
    tmp_path: Path, journal_db: Path | str, clock: trio.testing.MockClock
) -> None:
    # A crash between recording a wake's run and the run's first fact leaves this stream.
    team = {"slow": slow_team(minutes=1, background='every = "1d"')}
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        await trio.sleep(MINUTE)
        last = running.teammate("poller").state.last_sequence
    uri = teammate_uri("slow", "poller")
    session = f"ahp-session:/{uuid.uuid4()}"
    facts = [
        Fact(
            sequence=last + 1,
            session=uri,
            channel=uri,
            at="2026-03-27T12:02:00.000Z",
            action=TeammateWoke(
                name="poller", reason=WakeReason.TRIGGER, decision=WakeDecision.START, by="alice"
            ),
        ),
        Fact(
            sequence=last + 2,
            session=uri,
            channel=uri,
            at="2026-03-27T12:02:00.000Z",
            action=TeammateRunStarted(
                name="poller", session=session, reason=WakeReason.TRIGGER, by="alice"
            ),
        ),
    ]
    journal: Journal = open_journal(journal_db, durability=Durability.PROCESS)
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        ticket = journal.submit(facts)
        await ticket.wait()
        assert ticket.error is None
        nursery.cancel_scope.cancel()
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        poller = running.teammate("poller")
        await trio.sleep(5 * MINUTE)
        await poller.wait_idle()
        (run,) = poller.state.runs
        assert (run.session, run.outcome, run.by) == (
            session,
            TeammateRunOutcome.COMPLETED,
            "alice",
        )
        assert running.daemon.reader.session(session).status == "completed"


async def test_a_paused_teammate_stays_paused_across_a_restart(
    tmp_path: Path, journal_db: Path | str, clock: trio.testing.MockClock
) -> None:
    team = {"slow": slow_team(minutes=1, background='every = "1h"\ncatch_up = "all"')}
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        await running.teammate("poller").pause("alice")
    await trio.sleep(3 * HOUR)
    async with scheduler_daemon(tmp_path, team, db=journal_db) as running:
        poller = running.teammate("poller")
        await trio.sleep(3 * HOUR)  # 18:00: six hourly wakes came and went
        assert not poller.state.runs
        assert (poller.state.paused, poller.state.paused_by) == (True, "alice")
        assert await poller.resume("bob")
        await trio.sleep(HOUR + MINUTE)
        await poller.wait_idle()
        # None of the wakes while paused ran, not even as a catch-up.
        assert [r.scheduled_for for r in poller.state.runs] == [
            instant("2026-03-27T19:00:00+00:00")
        ]


async def test_a_changed_schedule_starts_afresh(
    tmp_path: Path, journal_db: Path | str, clock: trio.testing.MockClock
) -> None:
    async with scheduler_daemon(
        tmp_path,
        {"slow": slow_team(minutes=1, background='every = "1h"\ncatch_up = "all"')},
        db=journal_db,
    ):
        await trio.sleep(MINUTE)
    await trio.sleep(5 * HOUR)
    changed = {"slow": slow_team(minutes=1, background='every = "2h"\ncatch_up = "all"')}
    async with scheduler_daemon(tmp_path, changed, db=journal_db) as running:
        poller = running.teammate("poller")
        await trio.sleep(MINUTE)
        # The old schedule's missed wakes are moot; the new one starts from now (17:01).
        assert not poller.state.runs
        assert poller.state.schedule == "every 2h"
        assert poller.next_wake == instant("2026-03-27T18:00:00+00:00")
