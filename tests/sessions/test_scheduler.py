"""Background teammates in the daemon over simulated days: wakes, runs, records, sleeps."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.core import (
    TeammateRunFinished,
    TeammateRunOutcome,
    TeammateRunStarted,
    TeammateSlept,
    TeammateWoke,
    WakeDecision,
    WakeReason,
    build_graph,
)
from orchestrator.journal import JournalReader
from orchestrator.protocols import project_facts
from tests.support.teammates import AUTOJUMP, instant, nightly, scheduler_daemon

DAY = 86_400.0
HOUR = 3_600.0


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=AUTOJUMP)


async def test_nightly_wakes_at_three_in_berlin_through_the_clock_change(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    # From Friday 2026-03-27 12:00Z for four days: the clocks go forward on Sunday night,
    # so 03:00 Berlin is 02:00Z before and 01:00Z after.
    async with scheduler_daemon(tmp_path, {"nightly": nightly()}) as running:
        teammate = running.teammate("dependency-audit")
        await trio.sleep(4 * DAY)
        await teammate.wait_idle()
        runs = teammate.state.runs
    assert [r.scheduled_for for r in runs] == [
        instant("2026-03-28T02:00:00+00:00"),
        instant("2026-03-29T01:00:00+00:00"),
        instant("2026-03-30T01:00:00+00:00"),
        instant("2026-03-31T01:00:00+00:00"),
    ]
    assert {r.outcome for r in runs} == {TeammateRunOutcome.COMPLETED}
    assert all(r.reason is WakeReason.SCHEDULE for r in runs)
    assert all(r.summary.startswith("Nightly dependency audit") for r in runs)
    assert len({r.session for r in runs}) == 4

    facts = running.stream("nightly", "dependency-audit")
    assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
    # First the sleep until the first wake; then per night: the wake, its run and the
    # sleep until the next (one append), and later the run's end.
    assert isinstance(facts[0].action, TeammateSlept)
    assert facts[0].action.next_wake == instant("2026-03-28T02:00:00+00:00")
    woke = [f.action for f in facts if isinstance(f.action, TeammateWoke)]
    assert [w.decision for w in woke] == [WakeDecision.START] * 4
    started = [f.action for f in facts if isinstance(f.action, TeammateRunStarted)]
    finished = [f.action for f in facts if isinstance(f.action, TeammateRunFinished)]
    sessions = [r.session for r in runs]
    assert [s.session for s in started] == [f.session for f in finished] == sessions


async def test_each_run_is_a_session_whose_teammate_delegates_like_a_coordinator(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    async with scheduler_daemon(tmp_path, {"nightly": nightly()}) as running:
        teammate = running.teammate("dependency-audit")
        await trio.sleep(DAY)
        await teammate.wait_idle()
        (run,) = teammate.state.runs
    reader = JournalReader(running.db)
    info = reader.session(run.session)
    assert (info.team, info.status) == ("nightly", "completed")
    state = reader.open(run.session)
    assert state.run is not None
    assert state.run.background == "dependency-audit"
    assert state.run.coordinator == "lead"
    assert [m.agent for m in state.members.values()] == ["lead", "auditor"]
    # The worker's spawn: its ChatOrigin and the parent's subagent content agree.
    graph = build_graph(reader.facts(run.session))
    assert graph.check() == []
    edges = graph.statistics().edges_by_kind
    assert (edges["spawned"], edges["subagent"]) == (1, 1)
    # The run's envelopes name it an automation job, and its teammate as the coordinator.
    envelopes = project_facts(run.session, reader.facts(run.session))
    started = next(e for e in envelopes if e.type == "run.started")
    assert started.payload is not None
    assert (started.payload["runtimeEntity"], started.payload["background"]) == (
        "automation_job",
        "dependency-audit",
    )
    lead = next(e for e in envelopes if e.type == "agent.spawned")
    assert lead.payload is not None
    assert lead.payload["runtimeEntity"] == "automation_job"
