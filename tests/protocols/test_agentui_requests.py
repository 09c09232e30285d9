"""The Agent UI envelopes of what a person is asked to act on: an approval's or a question's
``action.required`` card, and the ``action.resolved`` that closes it, with who asks, who
decides, and the asker's lineage. Hand-built fact logs first, then real runs."""

from __future__ import annotations

import trio
import trio.testing

from orchestrator.ahp.actions import (
    ChatInputRequestedAction,
    ChatToolCallApprovedAction,
    ChatToolCallReadyAction,
)
from orchestrator.core import USER, ApprovalDecision, ApprovalRequested, ApprovalResolved
from orchestrator.protocols import (
    Control,
    EventType,
    Owner,
    Phase,
    Scope,
    Surface,
    project_facts,
)
from orchestrator.runtime import TeamRuntime
from tests.support import teams
from tests.support.agentui import agent_id, described, feed_all, first, of_type, only, run, types
from tests.support.scenarios import LEAD, SESSION, W1, W2, Log, two_workers_with_approval

_NAMES = ("requestedByName", "taskTitle", "routedToName", "routedToAgentId")


class TestApprovals:
    def test_action_required_names_the_requesting_worker(self) -> None:
        """action.required: policy-owned, hitl, approve; a worker's request is delegated."""
        log = two_workers_with_approval()
        envelopes = project_facts(SESSION, log.facts)
        (required,) = only(envelopes, "action.required")
        request = log.at("team/approvalRequested").action
        assert isinstance(request, ApprovalRequested)
        assert (
            required.owner,
            required.scope,
            required.phase,
            required.surface,
            required.control,
        ) == (Owner.POLICY, Scope.ACTION_REQUEST, Phase.WAITING, Surface.HITL, Control.APPROVE)
        assert (required.action_id, required.agent_id, required.tool_call_id) == (
            request.approval,
            agent_id("researcher"),
            request.tool_call_id,
        )
        assert (required.thread_id, required.turn_id, required.task_id) == (
            W1,
            request.turn_id,
            "task-1",
        )
        assert required.payload == {
            "actionType": "delegated_permission",
            "requestedBy": "researcher",
            "requestedByAgentId": agent_id("researcher"),
            "requestedByName": "researcher #1",
            "taskTitle": "researcher work",
            "routedTo": USER,
            "routedToName": "user",
            "policyScope": "researcher.needs_approval",
            "toolName": "web_search",
            "inputSummary": 'query="launch"',
        }

    def test_the_coordinators_own_request_is_a_tool_approval(self) -> None:
        log = Log()
        log.run_started()
        log.turn(LEAD)
        log.approval(LEAD, "deploy")
        (required,) = only(project_facts(SESSION, log.facts), "action.required")
        assert required.payload is not None
        assert required.payload["actionType"] == "tool_approval"
        assert required.parent_thread_id is None

    def test_an_approval_routed_to_the_coordinator_names_it(self) -> None:
        log = Log()
        log.run_started()
        log.turn(LEAD)
        call, task = log.delegate(LEAD, "researcher")
        log.start_worker(LEAD, call, task, W1, "researcher")
        log.turn(W1)
        log.approval(W1, "web_search", routed_to=LEAD)
        envelopes = project_facts(SESSION, log.facts)
        (required,) = only(envelopes, "action.required")
        (resolved,) = only(envelopes, "action.resolved")
        assert required.payload is not None
        assert (required.payload["routedTo"], required.payload["routedToAgent"]) == (LEAD, "lead")
        assert resolved.payload is not None
        assert resolved.payload["resolvedBy"] == LEAD

    def test_who_asks_and_who_decides_are_named_by_name_and_number(self) -> None:
        """Two researchers and a coordinator: the second researcher's approval, routed to
        the coordinator, names ``researcher #2`` and its task, and ``lead #1`` as routed
        to and decider (never a chat URI); a user's decision names its principal."""
        log = Log()
        log.run_started()
        log.turn(LEAD)
        first_call, first_task = log.delegate(LEAD, "researcher", "look at the north")
        log.start_worker(LEAD, first_call, first_task, W1, "researcher")
        second_call, second_task = log.delegate(LEAD, "researcher", "look at the south")
        log.start_worker(LEAD, second_call, second_task, W2, "researcher")
        log.turn(W2)
        log.approval(W2, "web_search", routed_to=LEAD)
        log.turn(W1)
        log.approval(W1, "web_search", principal="alice")
        envelopes = project_facts(SESSION, log.facts)
        routed, by_user = only(envelopes, "action.required")
        decided, user_decided = only(envelopes, "action.resolved")
        assert routed.payload is not None
        assert decided.payload is not None
        assert {k: routed.payload[k] for k in _NAMES} == {
            "requestedByName": "researcher #2",
            "taskTitle": "look at the south",
            "routedToName": "lead #1",
            "routedToAgentId": agent_id("lead"),
        }
        assert (decided.payload["resolvedByName"], decided.payload["resolvedByAgentId"]) == (
            "lead #1",
            agent_id("lead"),
        )
        assert by_user.payload is not None
        assert user_decided.payload is not None
        assert by_user.payload["requestedByName"] == "researcher #1"
        assert by_user.payload["taskTitle"] == "look at the north"
        assert user_decided.payload["resolvedByName"] == "alice"
        assert "resolvedByAgentId" not in user_decided.payload

    def test_action_resolved_comes_from_the_approval_resolved_fact(self) -> None:
        """The action is resolved only once the runtime recorded the decision, never
        earlier: not on the chat's confirmation, which the runtime records first."""
        log = two_workers_with_approval()
        _, by_fact = feed_all(log)
        resolved_fact = log.at("team/approvalResolved")
        for fact in log.facts:
            if fact.sequence != resolved_fact.sequence:
                assert "action.resolved" not in types(by_fact[fact.sequence])
        resolved = by_fact[resolved_fact.sequence]
        assert described(resolved) == [
            "action.resolved",
            "agent.changed:running",
            "team.changed:active",
        ]
        assert resolved[0].payload == {
            "decision": "approved",
            "resolvedBy": USER,
            "resolvedByName": "user",
            "toolName": "web_search",
            "requestedBy": "researcher",
            "requestedByName": "researcher #1",
        }
        assert (resolved[0].phase, resolved[0].control) == (Phase.ACTING, Control.APPROVE)

    def test_needs_approval_spans_exactly_request_to_resolution(self) -> None:
        """The worker is announced needs_approval after action.required and leaves it after
        action.resolved; the pending confirmation alone announces nothing."""
        log = two_workers_with_approval()
        _, by_fact = feed_all(log)
        ready = next(
            f
            for f in log.facts
            if f.channel == W1
            and isinstance(f.action, ChatToolCallReadyAction)
            and f.action.confirmed is None
        )
        confirmed = next(f for f in log.facts if isinstance(f.action, ChatToolCallApprovedAction))
        assert by_fact[ready.sequence] == []
        assert by_fact[confirmed.sequence] == []
        requested = by_fact[log.at("team/approvalRequested").sequence]
        assert described(requested) == [
            "action.required",
            "agent.changed:needs_input",  # waiting for the approval
            "team.changed:waiting",
        ]
        assert requested[1].phase is Phase.WAITING

    def test_a_denied_approval_is_rejected_and_cancelled(self) -> None:
        log = Log()
        log.run_started()
        log.turn(LEAD)
        log.approval(LEAD, "deploy", approved=False)
        (resolved,) = only(project_facts(SESSION, log.facts), "action.resolved")
        assert resolved.payload is not None
        assert resolved.payload["decision"] == "denied"
        assert (resolved.phase, resolved.control) == (Phase.CANCELLED, Control.REJECT)

    def test_resolving_an_unknown_approval_gives_no_action_resolved(self) -> None:
        """The fold ignores a decision nothing waited for; so does the projection."""
        log = Log()
        log.run_started()
        log.add(
            SESSION,
            ApprovalResolved(
                approval="approval-9", decision=ApprovalDecision.APPROVED, resolved_by=USER
            ),
        )
        assert "action.resolved" not in types(project_facts(SESSION, log.facts))


class TestQuestions:
    async def test_a_question_is_an_action_for_the_user(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """``ask`` opens an action.required card (a clarification, answered), closed by
        action.resolved once the answer is recorded; the member needs input meanwhile."""

        async def answer(runtime: TeamRuntime) -> None:
            chat, asked = await first(runtime, ChatInputRequestedAction)
            await runtime.answer_input(chat, asked.request.id, "2.0")

        envelopes = await run(teams.ASK, answer)
        (required,) = of_type(envelopes, EventType.ACTION_REQUIRED)
        (resolved,) = of_type(envelopes, EventType.ACTION_RESOLVED)
        assert required.action_id == resolved.action_id == "input-00000000-t0-r0-c0"
        assert (required.owner, required.scope, required.surface, required.control) == (
            Owner.ACTION,
            Scope.ACTION_REQUEST,
            Surface.HITL,
            Control.ANSWER,
        )
        assert required.payload is not None
        assert required.payload["actionType"] == "clarification"
        assert required.payload["questions"] == [
            {"id": "answer", "kind": "text", "message": "Which version?"}
        ]
        assert required.payload["requestedByName"] == "lead #1"
        assert required.payload["taskTitle"] == "Ship it"
        assert required.tool_call_id == "00000000-t0-r0-c0", "what an answer names"
        assert resolved.payload == {
            "response": "accept",
            "requestedBy": "lead",
            "requestedByName": "lead #1",
            "answer": "2.0",
        }
        assert resolved.phase is Phase.ACTING
        waiting = [
            e
            for e in of_type(envelopes, EventType.AGENT_CHANGED)
            if e.payload is not None and e.payload.get("waitingFor") == "answer"
        ]
        assert len(waiting) == 1
        assert waiting[0].sequence is not None
        assert required.sequence is not None
        assert waiting[0].sequence > required.sequence


class TestApprovalsOfRealRuns:
    async def test_a_withdrawn_approval_closes_its_card(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The worker times out before anyone answers: action.resolved (withdrawn, no
        control), and the team is not left waiting."""
        envelopes = await run(teams.APPROVAL_TIMES_OUT)
        (required,) = of_type(envelopes, EventType.ACTION_REQUIRED)
        (resolved,) = of_type(envelopes, EventType.ACTION_RESOLVED)
        assert resolved.action_id == required.action_id
        assert resolved.payload is not None
        assert resolved.payload["decision"] == "withdrawn"
        assert (resolved.phase, resolved.control) == (Phase.CANCELLED, None)
        phases = [
            (e.payload or {}).get("teamPhase") for e in of_type(envelopes, EventType.TEAM_CHANGED)
        ]
        assert phases[-2:] == ["merging", "done"]

    async def test_a_delegated_approval_names_its_lineage(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        async def approve(runtime: TeamRuntime) -> None:
            _, request = await first(runtime, ApprovalRequested)
            await runtime.resolve_approval(request.approval, approved=True)

        envelopes = await run(teams.APPROVAL_TIMES_OUT, approve)
        (required,) = of_type(envelopes, EventType.ACTION_REQUIRED)
        (lead, worker) = of_type(envelopes, EventType.AGENT_SPAWNED)
        assert required.payload is not None
        assert required.payload["actionType"] == "delegated_permission"
        assert required.agent_id == worker.agent_id
        assert required.parent_session_id == required.session_id
        assert required.parent_thread_id == lead.thread_id
