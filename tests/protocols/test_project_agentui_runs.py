"""The Agent UI projection of real runs: questions, queues, withdrawn approvals, lineage.

Where ``test_project_agentui.py`` builds fact logs by hand, these run real teams (scripted
backend, autojump clock) and project what they recorded, as a client of the daemon would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio
import trio.testing

from orchestrator.ahp.actions import ChatInputRequestedAction
from orchestrator.core import ApprovalRequested
from orchestrator.protocols import (
    Control,
    Envelope,
    EventType,
    Owner,
    Phase,
    Scope,
    Surface,
    TeammateStatus,
    project_facts,
)
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team
from tests.support import teams
from tests.support.paths import PROJECT_ROOT


async def run(
    team_text: str, during: Callable[[TeamRuntime], Awaitable[None]] | None = None
) -> list[Envelope]:
    """Run a team to its end (``during`` acts on it meanwhile); its envelopes, projected."""
    log = MemoryFactLog()
    runtime = TeamRuntime(
        parse_team(team_text, file="t.toml"),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True),
    )
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "Ship it")
            if during is not None:
                await during(runtime)
    return project_facts(runtime.session, log.facts)


def of_type(envelopes: list[Envelope], event: EventType) -> list[Envelope]:
    return [e for e in envelopes if e.type == event]


A = TypeVar("A")


async def first(runtime: TeamRuntime, wanted: type[A]) -> tuple[str, A]:
    """The channel and action of the first fact recorded from now on with a ``wanted`` action."""
    subscription = runtime.bus.subscribe("test")
    async for fact in subscription:
        if isinstance(fact.action, wanted):
            runtime.bus.unsubscribe(subscription)
            return fact.channel, fact.action
    raise AssertionError(f"the run ended without a {wanted.__name__}")


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


class TestQueues:
    async def test_steering_and_queued_messages_are_queue_changes(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A queued message: queued, then started as the next turn; the count follows."""

        async def queue_one(runtime: TeamRuntime) -> None:
            chat, asked = await first(runtime, ChatInputRequestedAction)
            await runtime.queue(chat, "and then?")
            await runtime.answer_input(chat, asked.request.id, "2.0")

        envelopes = await run(teams.ASK, queue_one)
        queue = of_type(envelopes, EventType.QUEUE_CHANGED)
        assert [(e.payload or {}).get("status") for e in queue] == ["queued", "started"]
        assert [(e.payload or {}).get("queuedTurnCount") for e in queue] == [1, 0]
        assert all(e.control is Control.QUEUE for e in queue)


class TestApprovals:
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


class TestRosterStatuses:
    async def test_every_roster_status_is_a_teammate_status_of_the_spec(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        allowed = {status.value for status in TeammateStatus}
        team = (PROJECT_ROOT / "teams" / "delivery.toml").read_text()

        async def approve(runtime: TeamRuntime) -> None:
            _, request = await first(runtime, ApprovalRequested)
            await runtime.resolve_approval(request.approval, approved=True)

        for text, during in ((team, approve), (teams.APPROVAL_TIMES_OUT, None)):
            envelopes = await run(text, during)
            statuses = {
                (e.payload or {}).get("status")
                for e in envelopes
                if e.type in (EventType.AGENT_SPAWNED, EventType.AGENT_CHANGED)
            }
            assert statuses <= allowed, statuses - allowed
