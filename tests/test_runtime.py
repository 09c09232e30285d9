"""The team runtime: every flow, asserted through the facts it recorded.

Each scenario runs a real team (scripted backend) on trio's autojump clock,
then checks the fact log: order, ids, the spawn batch, notifications, and the
delegation graph's consistency check (run on every scenario by ``finished``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import attrs
import pytest
import trio
import trio.testing

from orchestrator._ahp_actions import (
    ChatDeltaAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeniedAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
    SessionChatUpdatedAction,
)
from orchestrator._ahp_state import (
    MessageKind,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallResponsePart,
    ToolChatOrigin,
    ToolResultSubagentContent,
    UserChatOrigin,
)
from orchestrator._backend_scripted import ScriptedBackend
from orchestrator._errors import RunError
from orchestrator._factlog import MemoryFactLog
from orchestrator._facts import Fact
from orchestrator._graph import build_graph
from orchestrator._runtime import Ids, RunOutcome, TeamRuntime
from orchestrator._session_reducer import summary_of
from orchestrator._team_actions import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
)
from orchestrator._team_state import TeamState
from orchestrator._teamfile import TeamSpec, parse_team

FANOUT = """
[team]
name = "fanout"
parallel_budget = {budget}
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]

[[agents.lead.turns]]
steps = [
  {{ delegate = [ {{ agent = "worker", task = "alpha" }}, {{ agent = "worker", task = "beta" }},
                 {{ agent = "worker", task = "gamma" }} ] }},
  {{ say = "All done:\\n{{outcomes}}" }},
]

[agents.worker]
role = "researcher"
{worker_extra}

[[agents.worker.turns]]
steps = [ {worker_steps} ]
"""


def fanout(
    *, budget: int = 3, worker_steps: str = '{ say = "did {task}" }', worker_extra: str = ""
) -> TeamSpec:
    return parse_team(
        FANOUT.format(budget=budget, worker_steps=worker_steps, worker_extra=worker_extra),
        file="fanout.toml",
    )


A = TypeVar("A")


@attrs.frozen
class Recorded(Generic[A]):
    """A recorded fact whose action is known to be an ``A``."""

    sequence: int
    channel: str
    action: A


_HARNESSES: list[Harness] = []


@pytest.fixture(autouse=True)
def every_scenario_is_checked() -> Iterator[None]:
    """After every test, each run it made passes :meth:`Harness.finished`: no sequence gaps,
    the delegation graph's consistency rules, live state equal to a fold of the log."""
    _HARNESSES.clear()
    yield
    for harness in _HARNESSES:
        harness.finished()


class Harness:
    """A runtime on a memory log, with helpers to read back what it recorded."""

    def __init__(self, team: TeamSpec) -> None:
        _HARNESSES.append(self)
        self.log = MemoryFactLog()
        self.runtime = TeamRuntime(
            team,
            backends=ScriptedBackend,
            factlog=self.log,
            ids=Ids(deterministic=True),
            clock=lambda: "2026-11-22T00:00:00.000Z",
        )

    @property
    def facts(self) -> list[Fact]:
        return self.log.facts

    def actions(self, cls: type[A]) -> list[A]:
        return [f.action for f in self.facts if isinstance(f.action, cls)]

    def facts_of(self, cls: type[A]) -> list[Recorded[A]]:
        return [
            Recorded(f.sequence, f.channel, f.action)
            for f in self.facts
            if isinstance(f.action, cls)
        ]

    def worker_chats(self) -> list[str]:
        return [a.chat for a in self.actions(TaskStarted)]

    def finished(self) -> TeamState:
        """Checks that hold after every scenario; returns a fresh fold of the log."""
        sequences = [f.sequence for f in self.facts]
        assert sequences == list(range(1, len(sequences) + 1)), "sequence must have no gaps"
        violations = build_graph(self.facts).check()
        assert violations == [], violations
        folded = TeamState.fold(self.runtime.session, self.facts)
        assert folded.chats == self.runtime.state.chats, "live state must equal a fold of the log"
        if not self.facts:
            return folded  # the run was refused before it recorded anything
        assert folded.session is not None
        for chat, state in folded.chats.items():
            entry = next(c for c in folded.session.chats if c.resource == chat)
            assert entry == summary_of(state), f"summary of {chat} drifted from its state"
        return folded


async def run_to_end(harness: Harness, prompt: str = "Ship it") -> RunOutcome:
    with trio.fail_after(600):
        return await harness.runtime.run(prompt)


async def wait_for(harness: Harness, predicate: Callable[[Fact], bool]) -> Fact:
    """Wait until a recorded fact satisfies ``predicate`` (polling at checkpoints)."""
    with trio.fail_after(600):
        while True:
            for fact in harness.facts:
                if predicate(fact):
                    return fact
            await trio.sleep(0.01)


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
            # The spawn batch: chatAdded, memberJoined, subagent content, taskStarted — consecutive.
            batch = h.facts[added.sequence - 1 : added.sequence + 3]
            assert [type(f.action) for f in batch] == [
                SessionChatAddedAction,
                MemberJoined,
                ChatToolCallContentChangedAction,
                TaskStarted,
            ]
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
        h = Harness(team)
        runtime = h.runtime
        # Bypass the file's validation: the model asks for an agent it may not use.
        request_target = "b"

        original = runtime._delegate

        async def tampered(ctx: Any, request: Any) -> Any:
            import attrs

            return await original(
                ctx, attrs.evolve(request, arguments={"agent": request_target, "task": "x"})
            )

        runtime._delegate = tampered  # type: ignore[method-assign]
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        assert "may not delegate to 'b'" in outcome.result
        assert h.actions(TaskStarted) == []
        h.finished()


APPROVAL = """
[team]
name = "approvals"
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]

[[agents.lead.turns]]
steps = [
  {{ delegate = [ {{ agent = "worker", task = "publish it" }} ] }},
  {{ say = "{{outcomes}}" }},
]

[agents.worker]
role = "publisher"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "{approver}"

[agents.worker.tool_results]
publish = "published"

[[agents.worker.turns]]
steps = [ {{ tool = "publish", input = {{ target = "site" }} }}, {{ say = "after: {{outcomes}}" }} ]
"""


class TestApprovals:
    async def _run_with_decision(self, approved: bool) -> Harness:
        h = Harness(parse_team(APPROVAL.format(approver="user"), file="a.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            fact = await wait_for(h, lambda f: isinstance(f.action, ApprovalRequested))
            request = fact.action
            assert isinstance(request, ApprovalRequested)
            assert request.routed_to == USER
            assert request.requested_by == "worker"
            assert request.tool_name == "publish"
            assert request.summary == "target=site"
            assert h.runtime.state.member_status(request.chat) == "needs_approval"
            await h.runtime.resolve_approval(request.approval, approved=approved)
            # resolve_approval returns only after the decision was applied.
            assert any(isinstance(f.action, ApprovalResolved) for f in h.facts)
        return h

    async def test_an_approved_tool_call_runs_after_the_decision_is_applied(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """pending-confirmation → approved → running → completed; resolved after applied."""
        h = await self._run_with_decision(approved=True)
        confirm = h.facts_of(ChatToolCallApprovedAction)[0]
        resolved = h.facts_of(ApprovalResolved)[0]
        assert resolved.sequence == confirm.sequence + 1, "resolution recorded right after applying"
        assert resolved.action.resolved_by == USER
        completes = [
            a
            for a in h.actions(ChatToolCallCompleteAction)
            if a.tool_call_id == confirm.action.tool_call_id
        ]
        assert completes[0].result.success is True
        assert "after: published" in h.runtime.state.run.result  # type: ignore[union-attr]
        h.finished()

    async def test_a_denied_tool_call_is_cancelled_and_the_worker_continues(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Denied → the tool call ends cancelled (denied); the worker still finishes its turn."""
        h = await self._run_with_decision(approved=False)
        denied = h.actions(ChatToolCallDeniedAction)[0]
        state = h.finished()
        worker = h.worker_chats()[0]
        parts = state.chats[worker].turns[0].response_parts
        call = next(
            p.tool_call
            for p in parts
            if isinstance(p, ToolCallResponsePart)
            and p.tool_call.tool_call_id == denied.tool_call_id
        )
        assert isinstance(call, ToolCallCancelledState)
        assert call.reason == "denied"
        assert h.actions(TaskFinished)[0].status is TaskStatus.COMPLETED
        assert "was denied by user" in h.actions(TaskFinished)[0].summary

    async def test_the_coordinator_decides_where_the_policy_grants_it(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """approved_by = coordinator routes the request to the coordinator chat, which decides."""
        h = Harness(parse_team(APPROVAL.format(approver="coordinator"), file="a.toml"))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        request = h.actions(ApprovalRequested)[0]
        coordinator = h.runtime.state.coordinator_chat()
        assert request.routed_to == coordinator
        assert h.actions(ApprovalResolved)[0].resolved_by == coordinator
        h.finished()

    async def test_resolving_an_unknown_approval_is_refused(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        with pytest.raises(RunError, match="no pending approval 'approval-9'"):
            await h.runtime.resolve_approval("approval-9", approved=True)


ASK = """
[team]
name = "asking"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask"]
[[agents.lead.turns]]
steps = [ { ask = "Which version?" }, { say = "Releasing {outcomes}" } ]
"""


class TestAsk:
    async def test_ask_blocks_until_answered(self, autojump_clock: trio.testing.MockClock) -> None:
        """An input request blocks the chat; the answer completes it and the turn goes on."""
        h = Harness(parse_team(ASK, file="ask.toml"))
        result: list[RunOutcome] = []

        async def run() -> None:
            result.append(await run_to_end(h))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            fact = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            await trio.sleep(30)
            assert not result, "the chat waits for the answer"
            assert h.runtime.state.member_status(fact.channel) == "needs_input"
            request = fact.action
            assert isinstance(request, ChatInputRequestedAction)
            await h.runtime.answer_input(fact.channel, request.request.id, "2.0")
        assert result[0].result == "Releasing 2.0"
        completed = h.facts_of(ChatInputCompletedAction)
        assert completed
        assert completed[0].sequence > fact.sequence
        h.finished()


HANDOFF = """
[team]
name = "desk"
topology = "specialist_handoff"
coordinator = "triage"
[agents.triage]
role = "coordinator"
tools = ["handoff"]
delegates_to = ["billing"]
[[agents.triage.turns]]
steps = [ { handoff = "billing", reason = "a billing question", resume = "triage" },
          { say = "Billing said: {outcomes}" } ]
[agents.billing]
role = "specialist"
[[agents.billing.turns]]
steps = [ { say = "refund issued" } ]
"""


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


SLOW = """
[team]
name = "slow"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "one" }, { agent = "worker", task = "two" } ] },
          { say = "{outcomes}" } ]
[[agents.lead.turns]]
steps = [ { say = "second turn" } ]
[agents.worker]
role = "r"
[[agents.worker.turns]]
steps = [ { sleep = 100 }, { say = "finished {task}" } ]
"""


NESTED = """
[team]
name = "nested"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["manager"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "manager", task = "organise" } ] }, { say = "{outcomes}" } ]
[agents.manager]
role = "manager"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.manager.turns]]
steps = [ { delegate = [ { agent = "worker", task = "a" }, { agent = "worker", task = "b" } ] },
          { say = "{outcomes}" } ]
[agents.worker]
role = "r"
[[agents.worker.turns]]
steps = [ { sleep = 100 }, { say = "finished {task}" } ]
"""


class TestCancellation:
    async def test_cancelling_one_worker_kills_it_and_spares_its_sibling(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(
                h, lambda f: len([x for x in h.facts if isinstance(x.action, TaskStarted)]) == 2
            )
            victim = h.worker_chats()[0]
            await trio.sleep(10)
            h.runtime.cancel_worker(victim)
        finished = {f.chat: f for f in h.actions(TaskFinished)}
        assert finished[victim].status is TaskStatus.KILLED
        other = h.worker_chats()[1]
        assert finished[other].status is TaskStatus.COMPLETED
        cancelled = h.facts_of(ChatTurnCancelledAction)
        assert [f.channel for f in cancelled] == [victim]
        assert h.runtime.state.run.status is RunStatus.COMPLETED  # type: ignore[union-attr]
        h.finished()

    async def test_cancelling_the_team_cancels_every_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW, file="slow.toml"))
        outcomes: list[RunOutcome] = []

        async def run() -> None:
            outcomes.append(await run_to_end(h))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await wait_for(
                h, lambda f: len([x for x in h.facts if isinstance(x.action, TaskStarted)]) == 2
            )
            h.runtime.cancel()
        assert outcomes[0].status is RunStatus.CANCELLED
        assert len(h.actions(ChatTurnCancelledAction)) == 3  # coordinator + two workers
        assert sorted(f.status for f in h.actions(TaskFinished)) == [TaskStatus.KILLED] * 2
        assert isinstance(h.facts[-1].action, RunFinished)
        assert h.facts[-1].action.status is RunStatus.CANCELLED
        h.finished()

    async def test_cancelling_a_worker_cancels_its_subtree(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A worker that delegated is cancelled with its own workers; the coordinator goes on
        and reports the cancelled task as killed."""
        h = Harness(parse_team(NESTED, file="nested.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(
                h, lambda f: len([x for x in h.facts if isinstance(x.action, TaskStarted)]) == 3
            )
            manager = next(a.chat for a in h.actions(MemberJoined) if a.agent == "manager")
            h.runtime.cancel_worker(manager)
        finished = {h.runtime.state.members[str(f.chat)].agent: f for f in h.actions(TaskFinished)}
        statuses = sorted(
            (h.runtime.state.members[str(f.chat)].agent, f.status) for f in h.actions(TaskFinished)
        )
        assert statuses == [
            ("manager", TaskStatus.KILLED),
            ("worker", TaskStatus.KILLED),
            ("worker", TaskStatus.KILLED),
        ]
        assert finished["manager"].summary == "cancelled"
        cancelled = {f.channel for f in h.facts_of(ChatTurnCancelledAction)}
        assert manager in cancelled
        assert len(cancelled) == 3  # the manager and both of its workers
        assert h.runtime.state.run is not None
        assert h.runtime.state.run.status is RunStatus.COMPLETED
        assert "manager, killed" in h.runtime.state.run.result

    async def test_a_cancelled_worker_cannot_be_cancelled_twice(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        await run_to_end(h)
        with pytest.raises(RunError, match="no running worker"):
            h.runtime.cancel_worker(h.worker_chats()[0])


class TestSteeringAndQueue:
    async def test_steering_is_consumed_at_the_next_round(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A steering message is recorded, then removed when the chat's next round starts."""
        h = Harness(parse_team(SLOW, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, TaskStarted))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.steer(coordinator, "focus on security")
        set_fact = h.facts_of(ChatPendingMessageSetAction)[0]
        removed = h.facts_of(ChatPendingMessageRemovedAction)[0]
        assert removed.action.id == set_fact.action.id
        assert removed.sequence > set_fact.sequence
        h.finished()

    async def test_a_queued_message_starts_the_next_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, TaskStarted))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.queue(coordinator, "and then?")
        turns = h.facts_of(ChatTurnStartedAction)
        coordinator_turns = [f.action for f in turns if f.channel == coordinator]
        assert len(coordinator_turns) == 2
        queued_id = h.actions(ChatPendingMessageSetAction)[0].id
        assert coordinator_turns[1].queued_message_id == queued_id
        assert coordinator_turns[1].message.text == "and then?"
        assert h.runtime.state.run.result == "second turn"  # type: ignore[union-attr]
        h.finished()

    async def test_steering_a_finished_chat_is_refused(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        await run_to_end(h)
        with pytest.raises(RunError, match="is not running"):
            await h.runtime.steer(h.worker_chats()[0], "late")


class TestRecording:
    async def test_the_coordinator_chat_and_text_stream(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The run opens with runStarted + the coordinator's chat; text streams as deltas."""
        h = Harness(fanout())
        await run_to_end(h)
        opening = [type(f.action) for f in h.facts[:3]]
        assert opening == [RunStarted, SessionChatAddedAction, MemberJoined]
        added = h.facts[1].action
        assert isinstance(added, SessionChatAddedAction)
        assert added.summary.origin == UserChatOrigin()
        deltas = h.actions(ChatDeltaAction)
        assert deltas, "text is streamed in chunks"
        parts = h.actions(ChatResponsePartAction)
        assert all(
            any(p.part.id == d.part_id for p in parts if hasattr(p.part, "id")) for d in deltas
        )
        assert h.actions(SessionChatUpdatedAction), "summaries follow chat state changes"
        assert h.actions(ChatTurnCompleteAction)

    async def test_an_empty_prompt_is_refused(self) -> None:
        h = Harness(fanout())
        with pytest.raises(RunError, match="prompt is empty"):
            await h.runtime.run("   ")
        assert h.facts == []
