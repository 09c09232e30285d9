"""What every Agent UI envelope of a session carries: its number, the fact it came from, the
session's and the run's ids and topology; ``agent.*`` envelopes show a roster status as the
spec's teammate status, with what the teammate waits for and which kind of turn it runs.

The builder's own methods are tried on a state folded from hand-built facts; the roster view
through :class:`AgentUiProjector`, the builder's subclass, which says when to announce."""

from __future__ import annotations

import attrs
import pytest

from orchestrator.core import MemberStatus, RunStarted, TeamState
from orchestrator.protocols import (
    AgentUiProjector,
    Envelope,
    EventType,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    Topology,
)
from orchestrator.protocols._agentui_envelopes import EnvelopeBuilder, compact
from tests.support.scenarios import (
    LEAD,
    RUN,
    SCENARIOS,
    SESSION,
    SPECIALIST,
    W1,
    Log,
    handoff_and_back,
    two_workers_with_approval,
)

#: Each roster status as the wire shows it: (status, waitingFor).
WIRE_STATUS = {
    MemberStatus.SPAWNING: ("spawning", None),
    MemberStatus.RUNNING: ("running", None),
    MemberStatus.WAITING: ("waiting", "teammate"),
    MemberStatus.NEEDS_APPROVAL: ("needs_input", "approval"),
    MemberStatus.NEEDS_INPUT: ("needs_input", "answer"),
    MemberStatus.IDLE: ("idle", "message"),
    MemberStatus.COMPLETED: ("completed", None),
    MemberStatus.FAILED: ("failed", None),
    MemberStatus.KILLED: ("killed", None),
}


def folded(log: Log) -> TeamState:
    state = TeamState(SESSION)
    for fact in log.facts:
        state.apply(fact)
    return state


def envelope(builder: EnvelopeBuilder, log: Log, index: int = -1) -> Envelope:
    return builder._envelope(
        log.facts[index],
        EventType.RUN_STATUS,
        owner=Owner.RUNTIME,
        scope=Scope.RUN,
        phase=Phase.ACTING,
        surface=Surface.RUNTIME_STATUS,
        persistence=Persistence.SNAPSHOT,
    )


class TestCompact:
    def test_absent_fields_are_left_out_falsy_ones_kept(self) -> None:
        assert compact(a=None, b=0, c="", d=[], e=False, f={}) == {
            "b": 0,
            "c": "",
            "d": [],
            "e": False,
            "f": {},
        }

    def test_the_order_of_the_fields_is_kept(self) -> None:
        assert list(compact(z=1, a=None, m=2, b=3)) == ["z", "m", "b"]


class TestEnvelope:
    def test_envelopes_are_numbered_from_one_and_name_their_fact(self) -> None:
        log = Log()
        log.run_started()
        builder = EnvelopeBuilder(SESSION, folded(log))
        first, second = envelope(builder, log, 0), envelope(builder, log, -1)
        assert (first.sequence, second.sequence) == (1, 2)
        assert (first.raw_event_ref, second.raw_event_ref) == (
            f"fact:{log.facts[0].sequence}",
            f"fact:{log.facts[-1].sequence}",
        )
        assert first.timestamp == log.facts[0].at

    def test_each_carries_the_session_the_run_and_its_topology(self) -> None:
        log = Log()
        log.run_started(topology="parallel_workers")
        made = envelope(EnvelopeBuilder(SESSION, folded(log)), log)
        assert (made.session_id, made.run_id, made.topology) == (
            SESSION,
            RUN,
            Topology.PARALLEL_WORKERS,
        )

    def test_a_topology_the_spec_does_not_name_is_left_out(self) -> None:
        """Saying nothing rather than guessing: the team file's topology is free text."""
        log = Log()
        log.run_started(topology="mesh")
        made = envelope(EnvelopeBuilder(SESSION, folded(log)), log)
        assert (made.run_id, made.topology) == (RUN, None)

    def test_before_the_run_there_is_no_run_to_name(self) -> None:
        log = Log()
        log.run_started()
        made = envelope(EnvelopeBuilder(SESSION, TeamState(SESSION)), log)
        assert (made.run_id, made.topology) == (None, None)

    def test_a_new_run_record_is_read_again(self) -> None:
        """The run's ids are worked out once per run record, not once per builder."""
        log = Log()
        log.run_started(topology="parallel_workers")
        state = folded(log)
        builder = EnvelopeBuilder(SESSION, state)
        assert envelope(builder, log).topology is Topology.PARALLEL_WORKERS
        assert state.run is not None
        state.run = attrs.evolve(state.run, topology="review_team")
        assert envelope(builder, log).topology is Topology.REVIEW_TEAM

    def test_a_builder_given_a_state_follows_it_one_without_folds_its_own(self) -> None:
        state = TeamState(SESSION)
        assert EnvelopeBuilder(SESSION, state).follows is True
        assert EnvelopeBuilder(SESSION, state).state is state
        own = EnvelopeBuilder(SESSION)
        assert own.follows is False
        assert own.state is not EnvelopeBuilder(SESSION).state


def roster(log: Log) -> list[tuple[str, str, str | None]]:
    """Each ``agent.*`` envelope's (chat, status, waitingFor), in order."""
    projector = AgentUiProjector(SESSION)
    shown = []
    for fact in log.facts:
        for made in projector.feed(fact):
            if made.type.startswith("agent.") and made.type != EventType.AGENT_HANDOFF:
                assert made.thread_id is not None
                assert made.payload is not None
                status, waiting_for = made.payload["status"], made.payload.get("waitingFor")
                shown.append((made.thread_id, status, waiting_for))
    return shown


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_roster_status_is_shown_as_a_row_of_the_table(scenario: str) -> None:
    allowed = set(WIRE_STATUS.values())
    assert {(status, waiting) for _, status, waiting in roster(SCENARIOS[scenario]())} <= allowed


def test_what_a_teammate_waits_for_is_said() -> None:
    """The lead waits for its teammates; the researcher needs input, an approval."""
    shown = roster(two_workers_with_approval())
    assert [(status, waiting) for chat, status, waiting in shown if chat == LEAD] == [
        ("spawning", None),
        ("running", None),
        ("waiting", "teammate"),
        ("running", None),
        ("completed", None),
    ]
    assert [(status, waiting) for chat, status, waiting in shown if chat == W1] == [
        ("spawning", None),
        ("running", None),
        ("needs_input", "approval"),
        ("running", None),
        ("completed", None),
    ]


def test_a_specialist_done_with_its_part_waits_for_a_message() -> None:
    assert (SPECIALIST, "idle", "message") in roster(handoff_and_back())


def test_the_coordinator_runs_agent_turns_the_others_subagent_turns() -> None:
    log = Log()
    log.run_started()
    log.turn(LEAD)
    call, task = log.delegate(LEAD, "researcher")
    log.start_worker(LEAD, call, task, W1, "researcher")
    projector = AgentUiProjector(SESSION)
    entities = {
        made.thread_id: (made.payload or {}).get("runtimeEntity")
        for fact in log.facts
        for made in projector.feed(fact)
        if made.type == EventType.AGENT_SPAWNED
    }
    assert entities == {LEAD: "agent_turn", W1: "subagent_turn"}


def test_a_background_teammate_s_coordinator_runs_an_automation_job() -> None:
    log = Log()
    log.run_started()
    started = log.facts[0]
    assert isinstance(started.action, RunStarted)
    log.facts[0] = attrs.evolve(started, action=attrs.evolve(started.action, background="audit"))
    projector = AgentUiProjector(SESSION)
    [spawned] = [
        made
        for fact in log.facts
        for made in projector.feed(fact)
        if made.type == EventType.AGENT_SPAWNED
    ]
    assert spawned.payload is not None
    assert spawned.payload["runtimeEntity"] == "automation_job"
