"""The Agent UI projection: which envelopes each fact gives, with which ids and taxonomy.

Fact logs are built by hand with :class:`Log`, whose methods record the same batches, in the
same order, as the runtime does (``orchestrator/runtime/``: ``_team_runtime.py``,
``_turns.py``, ``_delegation.py``, ``_approvals.py``): a run's start, a turn, a tool call up to
``running`` or ``pending-confirmation``, a delegation (queued or at once), a worker's report, an
approval, a handoff and back.
"""

from __future__ import annotations

import itertools
import subprocess
import sys

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp.state import UserChatOrigin
from orchestrator.core import (
    Action,
    Fact,
    HandoffRecorded,
    MemberJoined,
    RunStarted,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    fact_from_json,
    fact_to_json,
)
from orchestrator.protocols import (
    AgentUiProjector,
    Control,
    Owner,
    Persistence,
    Phase,
    Scope,
    Surface,
    Topology,
    envelope_from_json_line,
    envelope_to_json_line,
    project_facts,
    structure_envelope,
    unstructure_envelope,
)
from orchestrator.spec import parse_team
from tests.support.agentui import (
    agent_id,
    check_remote_teammate,
    check_review_team,
    described,
    feed_all,
    only,
    run,
    types,
)
from tests.support.remote_replay import replayed_backends
from tests.support.runtime import Harness
from tests.support.scenarios import (
    LEAD,
    ROOT_TASK,
    RUN,
    SCENARIOS,
    SESSION,
    SPECIALIST,
    TEAM,
    W1,
    W2,
    Log,
    failed_worker,
    handoff_and_back,
    killed_while_queued,
    queued_task,
    scenarios,
    two_workers_with_approval,
)
from tests.support.teams import remote, review_team

W3 = "ahp-chat:/w3"


# ── scenarios ──────────────────────────────────────────────────────────────


# ── tests ──────────────────────────────────────────────────────────────────


class TestRunLifecycle:
    def test_run_started_gives_run_started_then_a_forming_team(self) -> None:
        """team/runStarted is run.started (runtime, run, accepted) then team.changed."""
        log = Log()
        log.run_started(budget=3)
        started, team = project_facts(SESSION, log.facts[:1])
        assert started.type == "run.started"
        assert (started.owner, started.scope, started.phase, started.surface) == (
            Owner.RUNTIME,
            Scope.RUN,
            Phase.ACCEPTED,
            Surface.RUNTIME_STATUS,
        )
        assert started.payload == {
            "team": TEAM,
            "coordinator": "lead",
            "prompt": "Write the launch report",
            "parallelBudget": 3,
            "runtimeEntity": "agent_turn",
        }
        assert (started.run_id, started.session_id, started.task_id) == (RUN, SESSION, ROOT_TASK)
        assert team.type == "team.changed"
        assert (team.owner, team.scope, team.phase, team.surface) == (
            Owner.AGENT,
            Scope.TEAM,
            Phase.ROUTING,
            Surface.TEAM_ROSTER,
        )
        assert team.payload == {
            "teamName": TEAM,
            "teamPhase": "forming",
            "teamParallelBudget": 3,
            "teamActiveCount": 0,
            "teamQueuedCount": 0,
        }

    def test_a_chosen_model_is_in_run_started(self) -> None:
        """A session opened with a model of its own says which in run.started's payload;
        without one (test above) the key is absent."""
        log = Log()
        log.run_started()
        fact = log.facts[0]
        assert isinstance(fact.action, RunStarted)
        chosen = attrs.evolve(fact, action=attrs.evolve(fact.action, model="chosen-model:7b"))
        started, _ = project_facts(SESSION, [chosen])
        assert (started.payload or {}).get("model") == "chosen-model:7b"

    def test_sequence_timestamp_and_source_come_from_the_facts(self) -> None:
        """sequence counts envelopes from 1; timestamp is the fact's ``at``; rawEventRef
        names the fact."""
        log = two_workers_with_approval()
        envelopes, by_fact = feed_all(log)
        assert [e.sequence for e in envelopes] == list(range(1, len(envelopes) + 1))
        for fact in log.facts:
            for e in by_fact[fact.sequence]:
                assert e.timestamp == fact.at
                assert e.raw_event_ref == f"fact:{fact.sequence}"

    @pytest.mark.parametrize("scenario", sorted(SCENARIOS))
    def test_every_envelope_carries_the_session_run_and_topology(self, scenario: str) -> None:
        """sessionId, runId and the team's topology are on every envelope of a run."""
        log = SCENARIOS[scenario]()
        topology = Topology(log.facts[0].action.topology)  # type: ignore[union-attr]
        for e in project_facts(SESSION, log.facts):
            assert (e.session_id, e.run_id, e.topology) == (SESSION, RUN, topology)

    def test_a_topology_outside_the_spec_is_left_out(self) -> None:
        """An unknown topology string is omitted, not guessed."""
        log = Log()
        log.run_started(topology="hive_mind")
        assert all(e.topology is None for e in project_facts(SESSION, log.facts))

    def test_a_completed_run_ends_with_a_done_team_then_run_finished(self) -> None:
        """team/runFinished (completed): team.changed(done), then run.finished, last."""
        *_, team, finished = project_facts(SESSION, two_workers_with_approval().facts)
        assert described([team, finished]) == ["team.changed:done", "run.finished:completed"]
        assert team.phase is Phase.COMPLETED
        assert (finished.owner, finished.scope, finished.phase) == (
            Owner.RUNTIME,
            Scope.RUN,
            Phase.COMPLETED,
        )
        assert finished.payload == {"status": "completed", "result": "the report"}

    def test_a_cancelled_run_is_run_finished_cancelled(self) -> None:
        *_, team, finished = project_facts(SESSION, killed_while_queued().facts)
        assert described([team, finished]) == ["team.changed:done", "run.finished:cancelled"]
        assert team.phase is finished.phase is Phase.CANCELLED
        assert finished.payload == {"status": "cancelled", "error": "the run cancelled"}

    def test_a_failed_run_is_run_failed(self) -> None:
        *_, finished = project_facts(SESSION, failed_worker().facts)
        assert finished.type == "run.failed"
        assert finished.phase is Phase.FAILED
        assert finished.payload == {"status": "failed", "error": "the run failed"}


class TestTwoWorkersWithApproval:
    """A delegate of two parallel workers, one of whom needs an approval."""

    def test_envelopes_in_order(self) -> None:
        """The whole run, envelope by envelope (text deltas give nothing)."""
        assert described(project_facts(SESSION, two_workers_with_approval().facts)) == [
            "run.started",
            "team.changed:forming",
            "agent.spawned:spawning",  # lead
            "agent.changed:running",  # lead's turn
            "agent.changed:waiting",  # lead's delegate call runs
            "task.changed:running",  # task-1 created
            "team.changed:active",
            "agent.spawned:spawning",  # researcher
            "task.changed:running",  # task-1 started
            "task.changed:running",  # task-2 created
            "team.changed:active",  # two active
            "agent.spawned:spawning",  # writer
            "task.changed:running",  # task-2 started
            "agent.changed:running",  # researcher's turn
            "agent.changed:running",  # writer's turn
            "action.required",
            "agent.changed:needs_input",  # waiting for the approval
            "team.changed:waiting",
            "action.resolved",
            "agent.changed:running",
            "team.changed:active",
            "worker.notification:completed",
            "agent.completed:completed",
            "task.changed:completed",
            "team.changed:active",  # one active
            "worker.notification:completed",
            "agent.completed:completed",
            "task.changed:completed",
            "team.changed:merging",
            "agent.changed:running",  # lead's delegate calls are done
            "agent.changed:completed",  # the run, the lead's task, is done
            "team.changed:done",
            "run.finished:completed",
        ]

    def test_agent_spawned_names_the_worker_and_its_lineage(self) -> None:
        """agent.spawned: ids from the chat's ToolChatOrigin, taxonomy from the spec."""
        envelopes = project_facts(SESSION, two_workers_with_approval().facts)
        lead, researcher, writer = only(envelopes, "agent.spawned")
        log = two_workers_with_approval()
        call1 = log.at("team/taskCreated", 1).action.tool_call_id  # type: ignore[union-attr]
        call2 = log.at("team/taskCreated", 2).action.tool_call_id  # type: ignore[union-attr]
        assert (researcher.agent_id, writer.agent_id) == (
            agent_id("researcher"),
            agent_id("writer"),
        )
        assert (researcher.thread_id, researcher.task_id) == (W1, "task-1")
        assert (researcher.parent_session_id, researcher.parent_thread_id) == (SESSION, LEAD)
        assert (researcher.tool_call_id, writer.tool_call_id) == (call1, call2)
        assert (
            researcher.owner,
            researcher.scope,
            researcher.phase,
            researcher.surface,
            researcher.persistence,
        ) == (Owner.AGENT, Scope.AGENT, Phase.ACTING, Surface.TEAM_ROSTER, Persistence.SNAPSHOT)
        assert researcher.payload == {
            "agentName": "researcher",
            "teamName": TEAM,
            "role": "worker",
            "status": "spawning",
            "chat": W1,
            "runtimeEntity": "subagent_turn",
            "interactivity": "read-only",
        }
        assert lead.agent_id == agent_id("lead")
        assert lead.payload is not None
        assert lead.payload["runtimeEntity"] == "agent_turn"

    def test_the_coordinator_has_no_parent(self) -> None:
        """The root member's envelopes carry no parent ids: it was not delegated."""
        envelopes = project_facts(SESSION, two_workers_with_approval().facts)
        for e in envelopes:
            if e.agent_id == agent_id("lead"):
                assert e.parent_session_id is e.parent_thread_id is e.tool_call_id is None

    def test_task_changed_carries_the_delegation_and_counts(self) -> None:
        """task.changed: the task capsule with its worker, delegation and team counts."""
        log = two_workers_with_approval()
        envelopes = project_facts(SESSION, log.facts)
        created1, started1, created2, *_ = only(envelopes, "task.changed")
        call1 = log.at("team/taskCreated").action.tool_call_id  # type: ignore[union-attr]
        assert (created1.owner, created1.scope, created1.phase, created1.surface) == (
            Owner.TASK,
            Scope.TASK,
            Phase.ACTING,
            Surface.TASK_CAPSULE,
        )
        assert created1.payload == {
            "status": "running",
            "title": "researcher work",
            "agentName": "researcher",
            "runtimeEntity": "subagent_turn",
            "parentTaskId": ROOT_TASK,
            "teamQueuedCount": 0,
            "teamActiveCount": 1,
            "teamParallelBudget": 2,
        }
        # Before the worker starts the task has no thread or agent of its own.
        assert (created1.thread_id, created1.agent_id, created1.control) == (None, None, None)
        assert (created1.parent_thread_id, created1.tool_call_id) == (LEAD, call1)
        assert (started1.thread_id, started1.agent_id) == (W1, agent_id("researcher"))
        assert started1.control is Control.STOP
        assert created2.payload is not None
        assert created2.payload["teamActiveCount"] == 2

    def test_worker_notification_reports_result_usage_and_duration(self) -> None:
        """worker.notification: archived, in worker_notifications, with a result ref."""
        log = two_workers_with_approval()
        envelopes = project_facts(SESSION, log.facts)
        note = only(envelopes, "worker.notification")[0]
        assert (note.owner, note.scope, note.phase, note.surface, note.persistence) == (
            Owner.AGENT,
            Scope.TASK,
            Phase.ARCHIVED,
            Surface.WORKER_NOTIFICATIONS,
            Persistence.ARCHIVE,
        )
        assert (note.task_id, note.agent_id, note.thread_id) == (
            "task-1",
            agent_id("researcher"),
            W1,
        )
        w1_turn = log.at("chat/turnStarted", 2).action.turn_id  # type: ignore[union-attr]
        assert note.payload == {
            "status": "completed",
            "agentName": "researcher",
            "title": "researcher work",
            "summary": "completed: findings",
            "resultRef": {"chat": W1, "turnId": w1_turn},
            "durationMs": 1200,
            "usage": {"inputTokens": 300, "outputTokens": 40},
        }
        assert note.refs == {"transcript": W1}

    def test_agent_completed_follows_the_notification(self) -> None:
        envelopes = project_facts(SESSION, two_workers_with_approval().facts)
        done = only(envelopes, "agent.completed")[0]
        assert (done.agent_id, done.phase, done.task_id) == (
            agent_id("researcher"),
            Phase.COMPLETED,
            "task-1",
        )
        assert done.payload is not None
        assert done.payload["runtimeStatus"] == "completed"
        assert done.payload["latestTurnStatus"] == "complete"


class TestQueuedTask:
    def test_envelopes_in_order(self) -> None:
        assert described(project_facts(SESSION, queued_task().facts)) == [
            "run.started",
            "team.changed:forming",
            "agent.spawned:spawning",
            "agent.changed:running",
            "agent.changed:waiting",
            "task.changed:running",
            "team.changed:active",
            "agent.spawned:spawning",
            "task.changed:running",
            "task.changed:queued",  # task-2 over budget
            "team.changed:active",  # one queued
            "agent.changed:running",
            "worker.notification:completed",
            "agent.completed:completed",
            "task.changed:completed",
            "team.changed:active",  # none active, one queued
            "agent.spawned:spawning",
            "task.changed:running",  # task-2 leaves the queue
            "team.changed:active",
            "agent.changed:running",
            "worker.notification:completed",
            "agent.completed:completed",
            "task.changed:completed",
            "team.changed:merging",
            "agent.changed:running",
            "agent.changed:completed",
            "team.changed:done",
            "run.finished:completed",
        ]

    def test_a_queued_task_says_why_and_is_counted(self) -> None:
        """task.changed(queued) waits with a queue reason; team.changed counts it."""
        log = queued_task()
        _, by_fact = feed_all(log)
        queued, team = by_fact[log.at("team/taskCreated", 2).sequence]
        assert queued.phase is Phase.WAITING
        assert queued.payload is not None
        assert queued.payload["status"] == "queued"
        assert queued.payload["queueReason"] == "parallel budget of 1 in use"
        assert (queued.payload["teamQueuedCount"], queued.payload["teamActiveCount"]) == (1, 1)
        assert team.payload is not None
        assert (team.payload["teamQueuedCount"], team.payload["teamActiveCount"]) == (1, 1)

    def test_starting_a_queued_task_moves_it_from_queued_to_active(self) -> None:
        log = queued_task()
        _, by_fact = feed_all(log)
        started, team = by_fact[log.at("team/taskStarted", 2).sequence]
        assert started.payload is not None
        assert "queueReason" not in started.payload
        assert (started.thread_id, started.agent_id) == (W2, agent_id("writer"))
        assert team.payload is not None
        assert (team.payload["teamQueuedCount"], team.payload["teamActiveCount"]) == (0, 1)

    def test_a_task_started_at_once_does_not_repeat_the_team(self) -> None:
        """team.changed is edge-triggered: a task created running is already counted."""
        log = queued_task()
        _, by_fact = feed_all(log)
        assert types(by_fact[log.at("team/taskStarted", 1).sequence]) == ["task.changed"]


class TestFailures:
    def test_a_failed_worker(self) -> None:
        """The worker runs until its failure is reported: then the notification and
        agent.completed say it failed (once, not before the task was recorded failed)."""
        assert described(project_facts(SESSION, failed_worker().facts)) == [
            "run.started",
            "team.changed:forming",
            "agent.spawned:spawning",
            "agent.changed:running",
            "agent.changed:waiting",
            "task.changed:running",
            "team.changed:active",
            "agent.spawned:spawning",
            "task.changed:running",
            "agent.changed:running",
            "worker.notification:failed",
            "agent.completed:failed",
            "task.changed:failed",
            "team.changed:merging",
            "agent.changed:running",
            "agent.changed:failed",
            "team.changed:done",
            "run.failed:failed",
        ]

    def test_failure_phases(self) -> None:
        envelopes = project_facts(SESSION, failed_worker().facts)
        (note,) = only(envelopes, "worker.notification")
        (done,) = only(envelopes, "agent.completed")
        (_, _, failed_task) = only(envelopes, "task.changed")
        assert note.payload is not None
        assert note.payload["summary"] == "failed: findings"
        assert done.phase is failed_task.phase is Phase.FAILED
        assert done.payload is not None
        assert done.payload["latestTurnStatus"] == "error"

    def test_a_task_killed_in_the_queue_has_no_agent(self) -> None:
        """A task that never started reports with no worker: no agentId, no result ref."""
        log = killed_while_queued()
        _, by_fact = feed_all(log)
        envelopes = by_fact[log.at("team/taskFinished", 1).sequence]
        assert described(envelopes) == [
            "worker.notification:killed",
            "task.changed:killed",
            "team.changed:active",
        ]
        note, task, _ = envelopes
        assert (note.agent_id, note.thread_id, note.refs, note.control) == (None, None, None, None)
        assert note.payload is not None
        assert "resultRef" not in note.payload
        assert task.phase is Phase.CANCELLED

    def test_a_killed_worker_completes_cancelled(self) -> None:
        log = killed_while_queued()
        _, by_fact = feed_all(log)
        envelopes = by_fact[log.at("team/taskFinished", 2).sequence]
        assert described(envelopes) == [
            "worker.notification:killed",
            "agent.completed:killed",
            "task.changed:killed",
            "team.changed:merging",
        ]
        assert envelopes[1].phase is Phase.CANCELLED


class TestHandoff:
    def test_envelopes_in_order(self) -> None:
        assert described(project_facts(SESSION, handoff_and_back().facts)) == [
            "run.started",
            "team.changed:forming",
            "agent.spawned:spawning",  # lead
            "agent.changed:running",
            "agent.changed:waiting",  # the handoff call runs
            "agent.spawned:spawning",  # legal
            "agent.handoff:accepted",
            "agent.changed:running",
            "agent.changed:idle",  # the specialist answered and owns no task of its own
            "agent.handoff:returned",
            "agent.changed:running",
            "agent.changed:completed",  # the run, the lead's task, is done
            "team.changed:done",
            "run.finished:completed",
        ]

    def test_agent_handoff_names_both_sides(self) -> None:
        """agent.handoff: the new owner is the envelope's agent; both sides in the payload."""
        log = handoff_and_back()
        envelopes = project_facts(SESSION, log.facts)
        to_legal, back = only(envelopes, "agent.handoff")
        call = log.at("team/handoff").action.tool_call_id  # type: ignore[union-attr]
        assert (to_legal.owner, to_legal.scope, to_legal.surface) == (
            Owner.AGENT,
            Scope.AGENT,
            Surface.HANDOFF_LANE,
        )
        assert (to_legal.agent_id, to_legal.thread_id, to_legal.task_id) == (
            agent_id("legal"),
            SPECIALIST,
            ROOT_TASK,
        )
        assert to_legal.tool_call_id == call
        assert to_legal.topology is Topology.SPECIALIST_HANDOFF
        assert to_legal.payload == {
            "fromAgent": "lead",
            "fromAgentId": agent_id("lead"),
            "fromChat": LEAD,
            "toAgent": "legal",
            "toAgentId": agent_id("legal"),
            "toChat": SPECIALIST,
            "reason": "needs a legal review",
            "resumeTarget": "lead",
            "status": "accepted",
        }
        assert back.agent_id == agent_id("lead")
        assert back.payload is not None
        assert back.payload["status"] == "returned"

    def test_the_specialist_is_spawned_by_the_handoff_call(self) -> None:
        log = handoff_and_back()
        spawned = only(project_facts(SESSION, log.facts), "agent.spawned")[1]
        call = log.at("team/handoff").action.tool_call_id  # type: ignore[union-attr]
        assert (spawned.parent_thread_id, spawned.tool_call_id, spawned.task_id) == (
            LEAD,
            call,
            ROOT_TASK,
        )


class TestAgentIds:
    def test_each_chat_of_an_agent_gets_the_next_number(self) -> None:
        """Two chats running the same agent are researcher#1 and researcher#2."""
        log = Log()
        log.run_started(budget=3)
        log.turn(LEAD)
        for worker in (W1, W2, W3):
            agent = "writer" if worker == W2 else "researcher"
            call, task = log.delegate(LEAD, agent)
            log.start_worker(LEAD, call, task, worker, agent)
        ids = [e.agent_id for e in only(project_facts(SESSION, log.facts), "agent.spawned")]
        assert ids == [
            agent_id("lead"),
            agent_id("researcher", 1),
            agent_id("writer", 1),
            agent_id("researcher", 2),
        ]

    def test_ids_are_stable_and_unique_per_chat(self) -> None:
        """Every envelope about a chat names the same agent, and no two chats share one."""
        envelopes = project_facts(SESSION, two_workers_with_approval().facts)
        chats: dict[str, str] = {}
        for e in envelopes:
            if e.type.startswith("agent.") and e.type != "agent.handoff":
                assert e.thread_id is not None
                assert e.agent_id is not None
                assert chats.setdefault(e.thread_id, e.agent_id) == e.agent_id
        assert len(set(chats.values())) == len(chats) == 3

    def test_a_member_without_a_chat_takes_its_lineage_from_its_task(self) -> None:
        """With no chat state to read the origin from, the task's delegation is the lineage."""
        log = Log()
        log.run_started()
        log.turn(LEAD)
        call, task = log.delegate(LEAD, "researcher")
        log.add(SESSION, MemberJoined(chat=W1, agent="researcher", role="worker", task=task))
        spawned = only(project_facts(SESSION, log.facts), "agent.spawned")[-1]
        assert (spawned.parent_session_id, spawned.parent_thread_id, spawned.tool_call_id) == (
            SESSION,
            LEAD,
            call,
        )
        assert spawned.payload is not None
        assert spawned.payload["interactivity"] == "full"

    def test_before_the_run_started_there_is_no_team_to_name(self) -> None:
        """A member recorded before team/runStarted: no team in its id, no run, no team
        envelope (the projection reports what the log says, and guesses nothing)."""
        log = Log()
        log.add(SESSION, MemberJoined(chat=LEAD, agent="lead", role="coordinator", task=ROOT_TASK))
        (spawned,) = project_facts(SESSION, log.facts)
        assert spawned.type == "agent.spawned"
        assert (spawned.agent_id, spawned.run_id, spawned.topology) == ("lead#1", None, None)
        assert spawned.payload is not None
        assert "teamName" not in spawned.payload

    def test_a_rejoining_chat_is_not_spawned_twice(self) -> None:
        log = Log()
        log.run_started()
        log.add(SESSION, MemberJoined(chat=LEAD, agent="lead", role="coordinator", task=ROOT_TASK))
        assert types(project_facts(SESSION, log.facts)).count("agent.spawned") == 1


class TestChatFacts:
    def test_text_streams_give_no_envelopes(self) -> None:
        """Deltas and response parts leave the roster as it is: nothing to say."""
        log = Log()
        log.run_started()
        log.turn(LEAD)
        before = len(log.facts)
        log.say(LEAD, "a long answer in many words")
        _, by_fact = feed_all(log)
        assert all(by_fact[f.sequence] == [] for f in log.facts[before:])

    def test_agent_changed_only_on_a_status_change(self) -> None:
        """Consecutive agent.changed for one agent never repeat a status."""
        for make in SCENARIOS.values():
            last: dict[str | None, object] = {}
            for e in project_facts(SESSION, make().facts):
                if e.type == "agent.changed":
                    assert e.payload is not None
                    assert last.get(e.agent_id) != e.payload["status"]
                if e.type in {"agent.spawned", "agent.changed", "agent.completed"}:
                    assert e.payload is not None
                    last[e.agent_id] = e.payload["status"]

    def test_agent_changed_carries_the_roster_view(self) -> None:
        log = two_workers_with_approval()
        _, by_fact = feed_all(log)
        (running,) = by_fact[log.at("chat/turnStarted", 2).sequence]
        assert (running.owner, running.scope, running.phase, running.surface) == (
            Owner.AGENT,
            Scope.AGENT,
            Phase.ACTING,
            Surface.TEAM_ROSTER,
        )
        assert (running.agent_id, running.thread_id, running.parent_thread_id) == (
            agent_id("researcher"),
            W1,
            LEAD,
        )
        assert running.payload == {
            "agentName": "researcher",
            "teamName": TEAM,
            "role": "worker",
            "status": "running",
            "chat": W1,
            "runtimeEntity": "subagent_turn",
            "runtimeStatus": "running",
            "latestTurnStatus": "running",
        }

    def test_a_chat_that_is_not_a_member_is_not_projected(self) -> None:
        log = Log()
        log.run_started()
        log._chat_added(W1, "stray", UserChatOrigin())
        log.turn(W1)
        assert "agent.changed" not in types(project_facts(SESSION, log.facts)[3:])

    @pytest.mark.parametrize(
        "action",
        [
            TaskStarted(task="task-9", chat=W1),
            TaskFinished(task="task-9", status=TaskStatus.COMPLETED, summary="", duration_ms=0),
            HandoffRecorded(
                task="task-9",
                from_chat=LEAD,
                to_chat=W1,
                to_agent="legal",
                reason="r",
                resume_target="lead",
                tool_call_id="call-9",
            ),
        ],
    )
    def test_a_fact_about_an_unknown_task_gives_nothing(self, action: Action) -> None:
        """The fold ignores it, and the projection says nothing about it either."""
        log = Log()
        log.run_started()
        fact = log.add(SESSION, action)
        _, by_fact = feed_all(log)
        assert by_fact[fact.sequence] == []

    def test_a_fact_fed_twice_gives_nothing_the_second_time(self) -> None:
        """Replay overlapping a live feed: facts at or below the last sequence are skipped."""
        log = two_workers_with_approval()
        projector = AgentUiProjector(SESSION)
        first = [e for fact in log.facts[:20] for e in projector.feed(fact)]
        assert all(projector.feed(fact) == [] for fact in log.facts[:20])
        rest = [e for fact in log.facts[20:] for e in projector.feed(fact)]
        assert first + rest == project_facts(SESSION, log.facts)


class TestWire:
    @pytest.mark.parametrize("scenario", sorted(SCENARIOS))
    def test_every_envelope_round_trips(self, scenario: str) -> None:
        """Each envelope survives the Agent UI converter, as data and as a JSON line."""
        for e in project_facts(SESSION, SCENARIOS[scenario]().facts):
            assert structure_envelope(unstructure_envelope(e)) == e
            assert envelope_from_json_line(envelope_to_json_line(e)) == e

    def test_payloads_hold_no_nulls(self) -> None:
        """Absent facts are left out of payloads, not sent as null."""
        for make in SCENARIOS.values():
            for e in project_facts(SESSION, make().facts):
                assert None not in (e.payload or {}).values()


@pytest.mark.daemon
class TestPurity:
    def test_the_projection_does_not_import_trio(self) -> None:
        """A pure projection: importing it pulls in no trio."""
        code = (
            "import sys, orchestrator.protocols._project_agentui; "
            "assert 'trio' not in sys.modules, 'trio imported'"
        )
        subprocess.run([sys.executable, "-c", code], check=True)


# ── replay properties ──────────────────────────────────────────────────────


class TestReplay:
    @given(scenarios())
    def test_live_feed_equals_projecting_the_log(self, facts: list[Fact]) -> None:
        """Feeding facts one by one gives exactly the envelopes of project_facts."""
        projector = AgentUiProjector(SESSION)
        live = [e for fact in facts for e in projector.feed(fact)]
        assert live == project_facts(SESSION, facts)

    @given(scenarios())
    def test_replay_from_the_serialized_log_is_identical(self, facts: list[Fact]) -> None:
        """A client hydrating from the journal sees what a live client saw."""
        replayed = [fact_from_json(fact_to_json(fact)) for fact in facts]
        assert project_facts(SESSION, replayed) == project_facts(SESSION, facts)

    @given(scenarios(), st.data())
    def test_a_prefix_projects_to_a_prefix(self, facts: list[Fact], data: st.DataObject) -> None:
        """Later facts never change earlier envelopes: projection is append-only."""
        cut = data.draw(st.integers(0, len(facts)))
        whole = project_facts(SESSION, facts)
        part = project_facts(SESSION, facts[:cut])
        assert whole[: len(part)] == part

    @given(scenarios())
    def test_envelopes_are_numbered_and_valid(self, facts: list[Fact]) -> None:
        """Sequences 1..n without gaps; every envelope round-trips; team.changed never
        repeats itself."""
        envelopes = project_facts(SESSION, facts)
        assert [e.sequence for e in envelopes] == list(range(1, len(envelopes) + 1))
        teams = [e.payload for e in envelopes if e.type == "team.changed"]
        assert all(a != b for a, b in itertools.pairwise(teams))
        for e in envelopes:
            assert envelope_from_json_line(envelope_to_json_line(e)) == e


class TestRemoteTeammate:
    """A remote teammate's recorded task states and artifacts: the remote_teammate topology's
    envelopes (runtimeEntity external_task), which pass the Agent UI checker."""

    async def test_states_and_artifacts_become_external_task_envelopes(self) -> None:
        team = parse_team(remote({"far": "http://127.0.0.1:9/a2a/"}), file="remote.toml")
        h = Harness(team, backends=replayed_backends)
        with trio.fail_after(60):
            outcome = await h.runtime.run("Go")
        assert outcome.status == "completed"
        envelopes = project_facts(h.runtime.session, h.facts)
        external = check_remote_teammate(envelopes)
        assert [
            (e.type, (e.payload or {}).get("status") or (e.payload or {}).get("runtimeStatus"))
            for e in external
        ] == [
            ("agent.spawned", "spawning"),
            ("agent.changed", "running"),
            ("task.changed", "submitted"),
            ("task.changed", "working"),
            ("artifact.changed", None),
            ("artifact.changed", None),
            ("task.changed", "completed"),
            ("agent.completed", "completed"),
        ]
        changed = [e for e in external if e.type == "task.changed"]
        first = changed[0]
        assert first.agent_id == "far@remote#1"
        assert first.payload == {
            "runtimeEntity": "external_task",
            "agentName": "far",
            "remoteTaskId": "rt-1",
            "contextId": "ctx-1",
            "runtimeStatus": "submitted",
            "rawStatus": "TASK_STATE_SUBMITTED",
            "cardRef": "http://127.0.0.1:9/a2a/.well-known/agent-card.json",
            "cardName": "far agent",
            "cardVersion": "2.0",
            "skills": ["paint"],
        }
        assert [e.phase for e in changed] == ["submitted", "acting", "completed"]
        assert [e.control for e in changed] == ["stop", "stop", None]
        artifacts = [e for e in external if e.type == "artifact.changed"]
        assert [e.artifact_id for e in artifacts] == ["art-1", "art-1"]
        assert [e.phase for e in artifacts] == ["producing", "completed"]
        assert artifacts[1].payload == {
            "runtimeEntity": "external_task",
            "agentName": "far",
            "remoteTaskId": "rt-1",
            "name": "out.md",
            "mediaType": "text/markdown",
            "append": True,
            "lastChunk": True,
            "parts": [{"text": "beta"}],
        }
        # Lineage: the remote task's envelopes name the delegating chat.
        coordinator = h.runtime.state.coordinator_chat()
        assert {e.parent_thread_id for e in changed} == {coordinator}

    async def test_a_local_worker_is_not_an_external_task(self) -> None:
        team = parse_team(remote({"far": "http://127.0.0.1:9/"}, local=True), file="remote.toml")
        h = Harness(team, backends=replayed_backends)
        with trio.fail_after(60):
            await h.runtime.run("Go")
        envelopes = project_facts(h.runtime.session, h.facts)
        entities = {
            (e.payload or {})["agentName"]: (e.payload or {})["runtimeEntity"]
            for e in envelopes
            if e.type == "agent.spawned"
        }
        assert entities == {"lead": "agent_turn", "far": "external_task", "helper": "subagent_turn"}


class TestReviewTeam:
    """A reviewed delegation's reviews: the review_team topology's envelopes, which pass the
    Agent UI checker (tests/support/agentui.py)."""

    async def test_one_fix_then_pass_in_the_review_lane(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        envelopes = await run(review_team(["changes_requested", "passed"]))
        reviews = check_review_team(envelopes)
        assert [(e.type, (e.payload or {})["status"]) for e in reviews] == [
            ("review.requested", "requested"),
            ("evidence.changed", "changes_requested"),
            ("review.completed", "changes_requested"),
            ("review.requested", "requested"),
            ("evidence.changed", "passed"),
            ("review.completed", "passed"),
        ]
        first = reviews[2]
        assert first.evidence_id == "task-2-review-1"
        assert first.agent_id == "checker@review#1"
        payload = first.payload or {}
        assert payload["fixes"] == ["name the breaking change"]
        assert payload["evidence"] == [{"kind": "quote", "text": "it is faster"}]
        assert (payload["target"], payload["targetAgentId"]) == ("writer", "writer@review#1")
        reviewing = [e for e in envelopes if (e.payload or {}).get("reviewStatus") == "reviewing"]
        assert [e.agent_id for e in reviewing] == ["checker@review#1"] * 2
        checker = [e for e in envelopes if e.agent_id == "checker@review#1"]
        assert (checker[-1].payload or {})["status"] == "completed"  # done with its task
        passed = reviews[-1]
        refs = passed.refs
        assert isinstance(refs, dict)
        assert refs["evidence"] == ["task-1"]

    async def test_a_reviewer_crash_is_a_failed_review(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        reviews = check_review_team(await run(review_team(["crash"])))
        completed = reviews[-1]
        assert (completed.payload or {})["verdict"] == "failed"
        assert "the reviewer fell over" in (completed.payload or {})["error"]
