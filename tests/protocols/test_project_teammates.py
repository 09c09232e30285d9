"""A background teammate's Agent UI envelopes: ``task.changed`` then ``agent.changed`` for
each change, their ids, sequence numbers, phase and control, and what the payload says of
the teammate's schedule, wake and runs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import (
    Fact,
    TeammateAction,
    TeammatePaused,
    TeammateRunFinished,
    TeammateRunOutcome,
    TeammateRunStarted,
    TeammateSlept,
    TeammateState,
    TeammateWoke,
    WakeDecision,
    WakeReason,
    fold_teammate,
    teammate_uri,
)
from orchestrator.protocols import (
    Control,
    Envelope,
    EventType,
    Owner,
    Phase,
    Scope,
    Surface,
    Topology,
    structure_envelope,
    teammate_envelopes,
    unstructure_envelope,
)
from tests.support.examples import examples

TEAM, NAME = "nightly", "audit"
URI = teammate_uri(TEAM, NAME)
AT = "2026-03-28T05:00:00.000Z"
SLEPT = TeammateSlept(
    name=NAME, team=TEAM, schedule="0 3 * * * UTC", next_wake="2026-03-29T03:00:00.000Z"
)
WOKE = TeammateWoke(
    name=NAME,
    reason=WakeReason.SCHEDULE,
    decision=WakeDecision.START,
    scheduled_for="2026-03-28T03:00:00.000Z",
)
STARTED = TeammateRunStarted(
    name=NAME,
    session="ahp-session:/run-1",
    reason=WakeReason.SCHEDULE,
    scheduled_for="2026-03-28T03:00:00.000Z",
)
FINISHED = TeammateRunFinished(
    name=NAME, session="ahp-session:/run-1", outcome=TeammateRunOutcome.COMPLETED, summary="ok"
)


def state_after(*actions: TeammateAction) -> TeammateState:
    facts = [
        Fact(sequence=n, session=URI, channel=URI, at=AT, action=action)
        for n, action in enumerate(actions, start=1)
    ]
    return fold_teammate(TEAM, NAME, facts)


def envelopes(
    state: TeammateState,
    *,
    sequence: int = 7,
    next_wake: str | None = None,
    blocked: bool = False,
) -> list[Envelope]:
    return teammate_envelopes(
        state, sequence=sequence, at=AT, agent="auditor", next_wake=next_wake, blocked=blocked
    )


class TestEnvelopes:
    def test_task_first_then_agent_numbered_from_twice_the_fact(self) -> None:
        task, agent = envelopes(state_after(SLEPT), sequence=7)
        assert (task.type, task.owner, task.scope) == (
            EventType.TASK_CHANGED,
            Owner.TASK,
            Scope.TASK,
        )
        assert (agent.type, agent.owner, agent.scope) == (
            EventType.AGENT_CHANGED,
            Owner.AGENT,
            Scope.AGENT,
        )
        assert (task.sequence, agent.sequence) == (14, 15)
        assert task.raw_event_ref == agent.raw_event_ref == "fact:7"

    def test_the_ids_name_the_teammate_across_its_runs(self) -> None:
        for envelope in envelopes(state_after(SLEPT, WOKE, STARTED)):
            assert envelope.task_id == "teammate:nightly/audit"
            assert envelope.agent_id == "audit@nightly"
            assert envelope.surface is Surface.BACKGROUND_TEAMMATE
            assert envelope.topology is Topology.BACKGROUND_TEAMMATE
            assert envelope.timestamp == AT

    def test_a_sleeping_teammate_waits_with_no_run_and_no_control(self) -> None:
        task, _ = envelopes(state_after(SLEPT), next_wake="2026-03-29T03:00:00.000Z")
        assert (task.phase, task.control, task.session_id, task.refs) == (
            Phase.WAITING,
            None,
            None,
            None,
        )
        assert task.payload == {
            "runtimeEntity": "automation_job",
            "runtimeStatus": "scheduled",
            "status": "scheduled",
            "title": NAME,
            "teamName": TEAM,
            "agentName": "auditor",
            "schedule": "0 3 * * * UTC",
            "nextWake": "2026-03-29T03:00:00.000Z",
            "paused": False,
        }

    def test_a_running_teammate_acts_can_be_stopped_and_refers_to_its_run(self) -> None:
        task, agent = envelopes(state_after(SLEPT, WOKE, STARTED))
        assert (task.phase, task.control) == (Phase.ACTING, Control.STOP)
        assert task.session_id == "ahp-session:/run-1"
        assert task.refs == {"session": "ahp-session:/run-1"}
        assert task.payload is not None
        assert task.payload["currentRun"]["session"] == "ahp-session:/run-1"
        assert (task.payload["wakeReason"], task.payload["wakeDecision"]) == ("schedule", "start")
        assert task.payload["scheduledFor"] == "2026-03-28T03:00:00.000Z"
        assert agent.payload == task.payload

    def test_a_run_that_waits_for_a_person_is_blocked(self) -> None:
        task, _ = envelopes(state_after(SLEPT, WOKE, STARTED), blocked=True)
        assert task.phase is Phase.WAITING
        assert task.payload is not None
        assert task.payload["status"] == "blocked"

    def test_after_a_run_the_last_run_is_said_and_the_teammate_sleeps(self) -> None:
        task, _ = envelopes(state_after(SLEPT, WOKE, STARTED, FINISHED))
        assert task.payload is not None
        assert task.payload["status"] == "sleeping"
        assert task.payload["lastRun"]["outcome"] == "completed"
        assert "currentRun" not in task.payload
        assert task.control is None

    def test_a_paused_teammate_says_by_whom_and_has_no_next_wake(self) -> None:
        state = state_after(SLEPT, TeammatePaused(name=NAME, by="alice"))
        task, _ = envelopes(state, next_wake="2026-03-29T03:00:00.000Z")
        assert task.payload is not None
        assert (task.payload["status"], task.payload["pausedBy"]) == ("paused", "alice")
        assert task.payload["nextWake"] is None

    def test_wakes_waiting_behind_a_run_are_counted(self) -> None:
        queued = TeammateWoke(name=NAME, reason=WakeReason.TRIGGER, decision=WakeDecision.QUEUE)
        task, _ = envelopes(state_after(SLEPT, WOKE, STARTED, queued, queued))
        assert task.payload is not None
        assert task.payload["queuedCount"] == 2
        assert "scheduledFor" not in task.payload  # the last wake was a trigger


@pytest.mark.parametrize("blocked", [False, True])
@settings(max_examples=examples(50))
@given(
    steps=st.lists(
        st.sampled_from(
            [
                SLEPT,
                WOKE,
                STARTED,
                FINISHED,
                TeammatePaused(name=NAME, by="bob"),
                TeammateWoke(name=NAME, reason=WakeReason.TRIGGER, decision=WakeDecision.QUEUE),
            ]
        ),
        max_size=8,
    ),
    sequence=st.integers(1, 10**6),
)
def test_any_state_gives_two_valid_envelopes_that_agree(
    steps: list[TeammateAction], sequence: int, blocked: bool
) -> None:
    """Whatever happened, the pair is valid on the wire, shares its payload and phase, and
    can be stopped exactly when a run goes."""
    state = state_after(*steps)
    task, agent = envelopes(state, sequence=sequence, blocked=blocked)
    for envelope in (task, agent):
        assert structure_envelope(unstructure_envelope(envelope)) == envelope
    assert (task.payload, task.phase, task.control) == (agent.payload, agent.phase, agent.control)
    assert (task.control is Control.STOP) == (state.running is not None)
    assert (task.sequence, agent.sequence) == (2 * sequence, 2 * sequence + 1)
