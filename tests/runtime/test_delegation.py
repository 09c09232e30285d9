"""Delegation and handoff: the tool calls that run another agent's chat."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import (
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatTurnCancelledAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    MessageKind,
    SystemNotificationResponsePart,
    ToolChatOrigin,
    ToolResultSubagentContent,
)
from orchestrator.base import RunError
from orchestrator.core import (
    Backend,
    HandoffRecorded,
    MemberJoined,
    ModelEvent,
    RoundContext,
    RunFinished,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TextDelta,
    ToolCallRequest,
    task_started,
)
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, parse_team
from tests.support.runtime import Harness, fanout, run_to_end, wait_for
from tests.support.teams import HANDOFF, NESTED

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


class OffScript:
    """A model that asks to delegate to an agent its team file does not allow (a real model
    can ask for anything), then reports what came back."""

    def __init__(self, target: str) -> None:
        self.target = target

    @classmethod
    def factory(cls, agent: str, target: str) -> Callable[[AgentSpec], Backend]:
        def backends(spec: AgentSpec) -> Backend:
            return cls(target) if spec.name == agent else ScriptedBackend(spec)

        return backends

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        await trio.lowlevel.checkpoint()
        if context.round_index == 0:
            yield ToolCallRequest(
                tool_call_id="call-1",
                tool_name="delegate",
                arguments={"agent": self.target, "task": "x"},
            )
        else:
            yield TextDelta(text="\n".join(o.output for o in context.outcomes))


class TestDelegation:
    async def test_parallel_fanout_records_spawn_batches_and_notifications(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Three delegate calls run three workers; each spawn is one contiguous batch."""
        h = Harness(fanout())
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "did alpha" in outcome.result
        assert "did gamma" in outcome.result

        first = h.facts[0].action
        assert isinstance(first, RunStarted)
        assert first.parallel_budget == 3
        assert h.facts[-1].action == RunFinished(
            run=first.run, status=RunStatus.COMPLETED, result=outcome.result
        )

        workers = h.worker_chats()
        assert len(workers) == 3
        for worker in workers:
            added = next(
                f for f in h.facts_of(SessionChatAddedAction) if f.action.summary.resource == worker
            )
            origin = added.action.summary.origin
            assert isinstance(origin, ToolChatOrigin)
            # The spawn batch: chatAdded, memberJoined (which starts the task: issue 35),
            # subagent content — consecutive.
            batch = h.facts[added.sequence - 1 : added.sequence + 2]
            assert [type(f.action) for f in batch] == [
                SessionChatAddedAction,
                MemberJoined,
                ChatToolCallContentChangedAction,
            ]
            joined = batch[1].action
            assert isinstance(joined, MemberJoined)
            assert joined.starts
            content = batch[2].action
            assert isinstance(content, ChatToolCallContentChangedAction)
            assert batch[2].channel == origin.chat
            assert content.tool_call_id == origin.tool_call_id
            task = next(a for a in h.actions(TaskStarted) if a.chat == worker).task
            title = next(a.title for a in h.actions(TaskCreated) if a.task == task)
            assert content.content == (
                ToolResultSubagentContent(resource=worker, title=title, agent_name="worker"),
            )
        state = h.finished()
        coordinator = state.coordinator_chat()
        assert coordinator is not None
        # Workers report back as system notifications, never as user messages.
        turn = state.chats[coordinator].turns[0]
        notes = [p for p in turn.response_parts if isinstance(p, SystemNotificationResponsePart)]
        assert len(notes) == 3
        assert all("completed" in str(n.content) for n in notes)
        assert [t.message.origin.kind for t in state.chats[coordinator].turns] == [MessageKind.USER]
        for worker in workers:
            assert state.chats[worker].turns[0].message.origin.kind is MessageKind.TOOL
        finished = h.actions(TaskFinished)
        assert sorted(f.status for f in finished) == [TaskStatus.COMPLETED] * 3

    async def test_calls_over_the_parallel_budget_wait_queued(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """With a budget of 2, the third delegation is recorded queued and starts later."""
        h = Harness(fanout(budget=2, worker_steps='{ sleep = 10 }, { say = "did {task}" }'))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        created = h.actions(TaskCreated)
        assert sorted(c.status for c in created) == [
            TaskStatus.QUEUED,
            TaskStatus.RUNNING,
            TaskStatus.RUNNING,
        ]
        queued = next(c for c in created if c.status is TaskStatus.QUEUED)
        started = next(f for f in h.facts_of(TaskStarted) if f.action.task == queued.task)
        first_finish = h.facts_of(TaskFinished)[0]
        assert started.sequence > first_finish.sequence, "queued work starts when a slot frees"
        # Two workers ran at once, then the third: 20 s of sleeping in all.
        assert trio.current_time() == pytest.approx(20)
        h.finished()

    async def test_a_tree_deeper_than_the_budget_does_not_wait_on_itself(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """With a budget of one, a manager that delegates lends its place to its workers
        while it waits for them, and takes it back after: the run completes."""
        h = Harness(
            parse_team(
                NESTED.replace('name = "nested"', 'name = "nested"\nparallel_budget = 1'),
                file="n.toml",
            )
        )
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "finished a" in outcome.result
        assert "finished b" in outcome.result
        # One at a time: the two workers' 100 s sleeps follow each other.
        assert trio.current_time() == pytest.approx(200)
        assert sorted(f.status for f in h.actions(TaskFinished)) == [TaskStatus.COMPLETED] * 3

    async def test_parallel_delegations_spawn_in_request_order(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Whatever order trio runs them in, the round's delegations are recorded in the order
        the model asked for them: task ids, chats and agent ids are reproducible."""
        h = Harness(fanout())
        await run_to_end(h)
        titles = [a.title for a in h.actions(TaskCreated)]
        assert titles == ["alpha", "beta", "gamma"]
        tasks = [a.task for a in h.actions(TaskCreated)]
        assert [a.task for a in h.actions(TaskStarted)] == tasks

    async def test_a_queued_task_can_be_cancelled_before_it_starts(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """cancel_task on a task waiting for a place in the budget: it ends killed, never
        started, and the coordinator is told like for any other worker."""
        h = Harness(fanout(budget=2, worker_steps='{ sleep = 10 }, { say = "did {task}" }'))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            queued = await wait_for(
                h,
                lambda f: (
                    isinstance(f.action, TaskCreated) and f.action.status is TaskStatus.QUEUED
                ),
            )
            assert isinstance(queued.action, TaskCreated)
            h.runtime.cancel_task(queued.action.task)
        finished = {f.task: f for f in h.actions(TaskFinished)}
        killed = finished[queued.action.task]
        assert killed.status is TaskStatus.KILLED
        assert killed.chat is None
        assert "waited for a place" in killed.summary
        assert queued.action.task not in {a.task for a in h.actions(TaskStarted)}
        assert h.runtime.state.queued_count() == 0
        run = h.runtime.state.run
        assert run is not None
        assert "[worker, killed]" in run.result

    async def test_cancelling_the_team_finishes_queued_tasks_too(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout(budget=1, worker_steps='{ sleep = 10 }, { say = "did {task}" }'))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: task_started(f.action) is not None)
            await trio.testing.wait_all_tasks_blocked()
            h.runtime.cancel()
        assert sorted(f.status for f in h.actions(TaskFinished)) == [TaskStatus.KILLED] * 3
        assert h.runtime.state.queued_count() == 0
        assert h.runtime.state.active_count() == 0

    async def test_a_backend_that_cannot_start_fails_the_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A backend factory that raises (say, a missing API key) ends the worker's turn in
        error instead of leaving it open; the worker is reported failed."""

        def backends(agent: AgentSpec) -> Backend:
            if agent.name == "worker":
                raise RunError("no API key for the worker's model")
            return ScriptedBackend(agent)

        h = Harness(fanout(), backends=backends)
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert [f.status for f in h.actions(TaskFinished)] == [TaskStatus.FAILED] * 3
        for worker in h.worker_chats():
            chat = h.runtime.state.chats[worker]
            assert chat.active_turn is None
            assert chat.turns[-1].state == "error"

    async def test_a_failing_worker_is_reported_and_siblings_finish(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A worker that raises ends failed; the others and the coordinator go on."""
        h = Harness(
            fanout(
                worker_steps='{ fail = "no access", when_task_contains = "beta" }, '
                '{ say = "did {task}" }'
            )
        )
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        statuses = sorted(f.status for f in h.actions(TaskFinished))
        assert statuses == [TaskStatus.COMPLETED, TaskStatus.COMPLETED, TaskStatus.FAILED]
        failed = next(f for f in h.actions(TaskFinished) if f.status is TaskStatus.FAILED)
        assert "no access" in failed.summary
        complete = next(
            a
            for a in h.actions(ChatToolCallCompleteAction)
            if ToolResultSubagentContent(
                resource=str(failed.chat), title="beta", agent_name="worker"
            )
            in (a.result.content or ())
        )
        assert complete.result.success is False
        h.finished()

    async def test_a_worker_over_its_timeout_is_stopped(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The team file's per-worker timeout ends a slow worker as failed, on time."""
        h = Harness(fanout(worker_steps="{ sleep = 50 }", worker_extra="timeout = 5"))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert trio.current_time() == pytest.approx(5)
        for finished in h.actions(TaskFinished):
            assert finished.status is TaskStatus.FAILED
            assert finished.summary == "timed out after 5s"
        assert len(h.actions(ChatTurnCancelledAction)) == 3
        h.finished()

    async def test_delegating_to_an_agent_not_allowed_fails_the_tool_call(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A delegate call naming an agent outside delegates_to fails cleanly, nothing spawns."""
        team = parse_team(
            """
            [team]
            name = "t"
            coordinator = "lead"
            [agents.lead]
            role = "coordinator"
            tools = ["delegate"]
            delegates_to = ["a"]
            [[agents.lead.turns]]
            steps = [ { delegate = [ { agent = "a", task = "x" } ] }, { say = "{outcomes}" } ]
            [agents.a]
            role = "r"
            """,
            file="t.toml",
        )
        h = Harness(team, backends=OffScript.factory("lead", "b"))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "may not delegate to 'b'" in outcome.result
        assert h.actions(TaskStarted) == []
        h.finished()


class TestHandoff:
    async def test_handoff_moves_the_task_owner_and_back(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The task's owner goes to the specialist, then back to the resume target."""
        h = Harness(parse_team(HANDOFF, file="h.toml"))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "refund issued" in outcome.result
        there, back = h.actions(HandoffRecorded)
        state = h.finished()
        coordinator = state.coordinator_chat()
        assert there.from_chat == coordinator
        assert there.to_agent == "billing"
        assert there.reason == "a billing question"
        assert there.resume_target == "triage"
        assert back.from_chat == there.to_chat
        assert back.to_chat == coordinator
        root = state.tasks[there.task]
        assert root.owner == coordinator
        # Authorship of past messages is untouched: the coordinator's turn is still its own.
        assert coordinator is not None
        assert state.chats[there.to_chat].origin == ToolChatOrigin(
            chat=coordinator, tool_call_id=there.tool_call_id
        )
