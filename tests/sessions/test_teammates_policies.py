"""Overlap, max_runtime and the controls of a background teammate, over simulated hours."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.base import RunError
from orchestrator.core import TeammateRunOutcome, TeammateWoke, WakeDecision, WakeReason
from tests.support.teammates import AUTOJUMP, RunningScheduler, instant, scheduler_daemon, slow_team
from tests.support.teams import GATED_DEPLOYER

HOUR = 3_600.0
MINUTE = 60.0

# START is 12:00Z, so an hourly teammate wakes at 13:00Z, 14:00Z...


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=AUTOJUMP)


def decisions(running: RunningScheduler, team: str = "slow", name: str = "poller") -> list[str]:
    """Each wake of the teammate's stream: "HH:MM decision"."""
    wakes = [f.action for f in running.stream(team, name) if isinstance(f.action, TeammateWoke)]
    return [f"{(w.scheduled_for or '')[11:16]} {w.decision}" for w in wakes]


async def test_overlap_skip_drops_a_wake_while_a_run_goes_on(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    team = slow_team(minutes=90, background='every = "1h"\noverlap = "skip"')
    async with scheduler_daemon(tmp_path, {"slow": team}) as running:
        poller = running.teammate("poller")
        await trio.sleep(4 * HOUR + 45 * MINUTE)  # until 16:45
        assert decisions(running) == ["13:00 start", "14:00 skip", "15:00 start", "16:00 skip"]
        assert [r.scheduled_for for r in poller.state.runs] == [
            instant("2026-03-27T13:00:00+00:00"),
            instant("2026-03-27T15:00:00+00:00"),
        ]
        assert poller.state.running is None
        run = poller.state.runs[0]
        assert (run.outcome, run.summary, run.usage) == (
            TeammateRunOutcome.COMPLETED,
            "Polled.",
            {"inputTokens": 120, "outputTokens": 30},
        )


async def test_overlap_queue_runs_one_waiting_wake_after_the_run(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    team = slow_team(minutes=150, background='every = "1h"\noverlap = "queue"')
    async with scheduler_daemon(tmp_path, {"slow": team}) as running:
        poller = running.teammate("poller")
        await trio.sleep(3 * HOUR + 45 * MINUTE)  # until 15:45
        # 14:00 waits for the 13:00 run; 15:00 finds a wake waiting already.
        assert decisions(running) == ["13:00 start", "14:00 queue", "15:00 skip"]
        (first,) = poller.state.runs
        assert first.scheduled_for == instant("2026-03-27T13:00:00+00:00")
        assert poller.state.running is not None
        assert poller.state.running.scheduled_for == instant("2026-03-27T14:00:00+00:00")
        assert poller.state.running.started_at[11:16] == "15:30"  # when the first ended
        assert poller.to_json()["state"] == "running"


async def test_overlap_replace_stops_the_run_and_starts_anew(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    team = slow_team(minutes=90, background='every = "1h"\noverlap = "replace"')
    async with scheduler_daemon(tmp_path, {"slow": team}) as running:
        poller = running.teammate("poller")
        await trio.sleep(2 * HOUR + 5 * MINUTE)  # until 14:05
        assert decisions(running) == ["13:00 start", "14:00 replace"]
        (replaced,) = poller.state.runs
        assert replaced.outcome is TeammateRunOutcome.REPLACED
        assert replaced.ended_at is not None
        assert replaced.ended_at[11:16] == "14:00"
        assert poller.state.running is not None
        assert poller.state.running.scheduled_for == instant("2026-03-27T14:00:00+00:00")


async def test_max_runtime_stops_a_run_that_goes_on_too_long(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    team = slow_team(minutes=150, background='every = "2h"\nmax_runtime = "1h"')
    async with scheduler_daemon(tmp_path, {"slow": team}) as running:
        poller = running.teammate("poller")
        await trio.sleep(3 * HOUR + 30 * MINUTE)  # until 15:30
        (run,) = poller.state.runs
        assert run.scheduled_for == instant("2026-03-27T14:00:00+00:00")
        assert run.outcome is TeammateRunOutcome.TIMED_OUT
        assert run.ended_at is not None
        assert run.ended_at[11:16] == "15:00"
        assert running.daemon.reader.session(run.session).status == "cancelled"


async def test_trigger_stop_pause_and_resume(tmp_path: Path, clock: trio.testing.MockClock) -> None:
    team = slow_team(minutes=30, background='every = "1h"')
    async with scheduler_daemon(tmp_path, {"slow": team}) as running:
        poller = running.teammate("poller")
        await trio.sleep(10 * MINUTE)  # 12:10
        assert await poller.trigger("alice") is WakeDecision.START
        await trio.sleep(MINUTE)
        assert poller.to_json()["state"] == "running"
        assert poller.stop("alice") is True
        await poller.wait_idle()
        (stopped,) = poller.state.runs
        assert (stopped.reason, stopped.outcome, stopped.by) == (
            WakeReason.TRIGGER,
            TeammateRunOutcome.STOPPED,
            "alice",
        )
        assert poller.stop("alice") is False  # nothing runs

        assert await poller.pause("bob") is True
        assert await poller.pause("bob") is False
        await trio.sleep(3 * HOUR)  # 15:11: no wake while paused
        assert len(poller.state.runs) == 1
        assert poller.to_json()["state"] == "paused"
        assert poller.to_json()["nextWake"] is None
        # A trigger still runs when paused.
        assert await poller.trigger("bob") is WakeDecision.START
        await poller.wait_idle()
        assert await poller.resume("bob") is True
        # The wakes that came due while paused do not run; the next one does.
        assert poller.next_wake == instant("2026-03-27T16:00:00+00:00")
        await trio.sleep(HOUR)
        await poller.wait_idle()
        reasons = [(r.reason, r.scheduled_for) for r in poller.state.runs]
        assert reasons == [
            (WakeReason.TRIGGER, None),
            (WakeReason.TRIGGER, None),
            (WakeReason.SCHEDULE, instant("2026-03-27T16:00:00+00:00")),
        ]


async def test_names_resolve_or_say_which_exist(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    team = slow_team(minutes=1, background='every = "1h"')
    async with scheduler_daemon(tmp_path, {"slow": team, "other": team}) as running:
        with pytest.raises(RunError, match="2 teams have a teammate 'poller'"):
            running.teammate("poller")
        assert running.teammate("other/poller").team == "other"
        with pytest.raises(RunError, match="did you mean 'other/poller'"):
            running.teammate("other/poler")


async def test_a_run_waiting_for_an_approval_is_blocked_until_someone_decides(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    async with scheduler_daemon(tmp_path, {"gated": GATED_DEPLOYER}) as running:
        deployer = running.teammate("deployer")
        seen: list[str] = []
        running.scheduler.watch(
            lambda _, envelopes: seen.append(envelopes[0].payload["runtimeStatus"])  # type: ignore[index]
        )
        await deployer.trigger("alice")
        await trio.sleep(MINUTE)
        assert deployer.to_json()["state"] == "blocked"
        assert deployer.state.running is not None
        live = running.daemon.live(deployer.state.running.session)
        assert live is not None
        (approval,) = live.state.pending_approvals()
        await live.decide(approval.request.approval, approved=True, principal="bob")
        await deployer.wait_idle()
        (run,) = deployer.state.runs
        assert (run.outcome, run.summary) == (TeammateRunOutcome.COMPLETED, "Deployed.")
        assert seen[seen.index("running") :] == ["running", "blocked", "running", "sleeping"]
