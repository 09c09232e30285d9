"""The team runtime: every flow, asserted through the facts it recorded.

Each scenario runs a real team (scripted backend) on trio's autojump clock,
then checks the fact log: order, ids, the spawn batch, notifications, and the
delegation graph's consistency check (run on every scenario by ``finished``).
"""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputAnswered,
    ChatInputBooleanAnswerValue,
    ChatInputBooleanQuestion,
    ChatInputCompletedAction,
    ChatInputMultiSelectQuestion,
    ChatInputNumberAnswerValue,
    ChatInputNumberQuestion,
    ChatInputOption,
    ChatInputRequestedAction,
    ChatInputSelectedManyAnswerValue,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    MessageKind,
    SessionChatAddedAction,
    SessionChatUpdatedAction,
    SystemNotificationResponsePart,
    ToolCallCancelledState,
    ToolCallResponsePart,
    ToolChatOrigin,
    ToolResultSubagentContent,
    Turn,
    UserChatOrigin,
)
from orchestrator.base import FactLogError, RunError, TeamFileError
from orchestrator.core import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    Backend,
    Fact,
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
    TeamState,
    TextDelta,
    ToolCallRequest,
    UsageReport,
    build_graph,
)
from orchestrator.runtime import (
    DoneTicket,
    EventTicket,
    Ids,
    MemoryFactLog,
    RunOutcome,
    TeamRuntime,
    Ticket,
    answer_text,
    parse_answer,
)
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, parse_team
from tests.support.runtime import HARNESSES, Harness, fanout, run_to_end, wait_for
from tests.support.teams import ASK, approvals


@pytest.fixture(autouse=True)
def every_scenario_is_checked() -> Iterator[None]:
    """After every test, each run it made passes :meth:`Harness.finished`: no sequence gaps,
    the delegation graph's consistency rules, live state equal to a fold of the log."""
    HARNESSES.clear()
    yield
    for harness in HARNESSES:
        harness.finished()


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
            await wait_for(h, lambda f: isinstance(f.action, TaskStarted))
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


class TestApprovals:
    async def _run_with_decision(self, approved: bool) -> Harness:
        h = Harness(parse_team(approvals(approver="user"), file="a.toml"))
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

    async def test_the_call_put_to_a_person_says_who_asks_and_for_what_task(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """AHP: the gated call's ``chat/toolCallReady`` carries in its ``_meta`` (where the
        schema allows extra data) the asking agent's name and number and its task, beside
        the model round; a call that needs nobody carries the round alone."""
        h = await self._run_with_decision(approved=True)
        (request,) = h.actions(ApprovalRequested)
        readies = {
            f.channel: f.action for f in h.facts_of(ChatToolCallReadyAction)
        }  # one call per chat: the lead's delegate, the worker's publish
        assert readies[request.chat].meta == {
            "round": 0,
            "askedBy": {
                "agent": "worker",
                "number": 1,
                "name": "worker #1",
                "task": "task-2",
                "taskTitle": "publish it",
            },
        }
        others = [a for chat, a in readies.items() if chat != request.chat]
        assert [a.meta for a in others] == [None]  # the delegate call: its start's _meta
        h.finished()

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

    @pytest.mark.parametrize(
        ("approves", "decision"), [('["publish"]', "approved"), ("[]", "denied")]
    )
    async def test_the_coordinator_decides_by_its_approves_list(
        self, autojump_clock: trio.testing.MockClock, approves: str, decision: str
    ) -> None:
        """approved_by = coordinator routes the request to the coordinator chat, which
        approves the tools its ``approves`` list names and denies the others."""
        team = approvals(approver="coordinator", lead_extra=f"approves = {approves}")
        h = Harness(parse_team(team, file="a.toml"))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        request = h.actions(ApprovalRequested)[0]
        coordinator = h.runtime.state.coordinator_chat()
        assert request.routed_to == coordinator
        (resolved,) = h.actions(ApprovalResolved)
        assert resolved.resolved_by == coordinator
        assert resolved.decision == decision

    def test_routing_to_a_coordinator_without_a_policy_is_a_team_file_error(self) -> None:
        with pytest.raises(TeamFileError, match=r"agents\.worker\.approved_by: routes its"):
            parse_team(approvals(approver="coordinator"), file="a.toml")

    async def test_an_approval_is_withdrawn_when_its_worker_stops(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A worker that times out while its tool call waits for a decision withdraws the
        request: nothing stays pending, and a late answer is refused with the reason."""
        team = approvals(approver="user").replace(
            'approved_by = "user"', 'approved_by = "user"\ntimeout = 30'
        )
        h = Harness(parse_team(team, file="a.toml"))
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        (request,) = h.actions(ApprovalRequested)
        (resolved,) = h.actions(ApprovalResolved)
        assert resolved.decision == "withdrawn"
        assert resolved.resolved_by == request.chat
        assert not h.runtime.state.has_pending_approval()
        assert h.actions(TaskFinished)[0].status is TaskStatus.FAILED
        with pytest.raises(RunError, match="no pending approval"):
            await h.runtime.resolve_approval(request.approval, approved=True)

    async def test_a_second_decision_is_refused(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Two answers at once (two clients, say): one is applied, the other is told it came
        too late, never both told that theirs was applied."""
        h = Harness(parse_team(approvals(approver="user"), file="a.toml"))
        errors: list[str] = []
        applied: list[bool] = []

        async def decide(approved: bool, approval: str) -> None:
            try:
                await h.runtime.resolve_approval(approval, approved=approved)
            except RunError as exc:
                errors.append(str(exc))
            else:
                applied.append(approved)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            fact = await wait_for(h, lambda f: isinstance(f.action, ApprovalRequested))
            assert isinstance(fact.action, ApprovalRequested)
            nursery.start_soon(decide, True, fact.action.approval)
            nursery.start_soon(decide, False, fact.action.approval)
        assert errors == [f"approval {fact.action.approval!r} has already been decided"]
        (resolved,) = h.actions(ApprovalResolved)
        assert applied == [resolved.decision == "approved"]

    async def test_resolving_an_unknown_approval_is_refused(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        with pytest.raises(RunError, match="no pending approval 'approval-9'"):
            await h.runtime.resolve_approval("approval-9", approved=True)


class TestAnswers:
    """parse_answer reads what a person typed as the question asks."""

    YES_NO = ChatInputBooleanQuestion(id="answer", message="Go?")
    CHOICE = ChatInputMultiSelectQuestion(
        id="answer",
        message="Which?",
        options=(ChatInputOption(id="eu", label="Europe"), ChatInputOption(id="us", label="US")),
    )

    @pytest.mark.parametrize(("text", "value"), [("y", True), (" YES ", True), ("no", False)])
    def test_yes_and_no(self, text: str, value: bool) -> None:
        assert parse_answer(self.YES_NO, text) == ChatInputBooleanAnswerValue(value=value)

    def test_options_by_id_or_label(self) -> None:
        assert parse_answer(self.CHOICE, "europe, us") == ChatInputSelectedManyAnswerValue(
            value=("eu", "us")
        )

    @given(st.text())
    def test_anything_else_is_refused_with_what_is_expected(self, text: str) -> None:
        if text.strip().lower() in {"y", "yes", "true", "1", "n", "no", "false", "0"}:
            return
        with pytest.raises(ValueError, match="answer yes or no"):
            parse_answer(self.YES_NO, text)

    @given(st.integers(-(10**6), 10**6))
    def test_numbers_round_trip(self, number: int) -> None:
        question = ChatInputNumberQuestion(id="answer", message="How many?", kind="integer")
        value = parse_answer(question, str(number))
        assert value == ChatInputNumberAnswerValue(value=number)
        assert answer_text(value) == str(number)


class TestAsk:
    async def test_the_ask_call_says_who_asks_and_for_what_task(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """AHP: the ``ask`` call that holds the input request names the asking agent, its
        number and its task in its ``_meta``; its round stays there too."""
        h = Harness(parse_team(ASK, file="ask.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h, "Release 2.0")
            fact = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(fact.action, ChatInputRequestedAction)
            await h.runtime.answer_input(fact.channel, fact.action.request.id, "2.0")
        (ready,) = h.actions(ChatToolCallReadyAction)
        assert ready.meta == {
            "round": 0,
            "askedBy": {
                "agent": "lead",
                "number": 1,
                "name": "lead #1",
                "task": "task-1",
                "taskTitle": "Release 2.0",
            },
        }
        h.finished()

    async def test_a_yes_no_question_takes_yes_or_no(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """An answer the question cannot take is refused and the request stays open; a good
        one is recorded as a boolean and the model reads "yes"."""
        team = ASK.replace('{ ask = "Which version?" }', '{ ask = "Ship now?", kind = "boolean" }')
        h = Harness(parse_team(team, file="ask.toml"))
        result: list[RunOutcome] = []

        async def run() -> None:
            result.append(await run_to_end(h))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            fact = await wait_for(h, lambda f: isinstance(f.action, ChatInputRequestedAction))
            assert isinstance(fact.action, ChatInputRequestedAction)
            request_id = fact.action.request.id
            with pytest.raises(RunError, match=f"{request_id}: answer yes or no, not 'maybe'"):
                await h.runtime.answer_input(fact.channel, request_id, "maybe")
            await h.runtime.answer_input(fact.channel, request_id, "y")
        assert result[0].result == "Releasing yes"
        (completed,) = h.actions(ChatInputCompletedAction)
        assert completed.answers is not None
        assert completed.answers["answer"] == ChatInputAnswered(
            state="submitted", value=ChatInputBooleanAnswerValue(value=True)
        )

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
        # Why, in words that do not repeat the status ("killed: cancelled").
        assert {f.summary for f in h.actions(TaskFinished)} == {
            "the run, or the task that delegated it, ended first"
        }
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
        assert finished["manager"].summary == "stopped at a client's request"
        workers = [f.summary for f in h.actions(TaskFinished) if f.chat != manager]
        assert workers == ["the run, or the task that delegated it, ended first"] * 2
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

    async def test_steering_text_reaches_the_model(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The model's next round sees the steering message (not just its removal)."""
        seen: list[tuple[str, ...]] = []

        class Listening:
            async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
                seen.append(tuple(context.steering))
                if context.round_index == 0:
                    await trio.sleep(5)
                    yield ToolCallRequest(tool_call_id="c1", tool_name="lookup", arguments={})
                else:
                    yield TextDelta(text="done")

        team = parse_team(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[agents.lead]\nrole = "coordinator"\ntools = ["lookup"]\n'
            '[[agents.lead.turns]]\nsteps = [ { say = "x" } ]\n',
            file="t.toml",
        )
        h = Harness(team, backends=lambda agent: Listening())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnStartedAction))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.steer(coordinator, "use the staging data")
        assert seen == [(), ("use the staging data",)]

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


FAILS_FIRST = """
[team]
name = "fails-first"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { fail = "model unavailable" } ]
[[agents.lead.turns]]
steps = [ { say = "back again" } ]
"""


def coordinator_turn_ends(h: Harness) -> list[type]:
    chat = h.runtime.state.coordinator_chat()
    ends = (ChatTurnCompleteAction, ChatTurnCancelledAction, ChatErrorAction)
    return [type(f.action) for f in h.facts if f.channel == chat and isinstance(f.action, ends)]


class TestConversation:
    """The daemon's sessions: one run, a coordinator turn per prompt, until closed."""

    async def test_each_queued_prompt_is_a_turn_and_close_ends_the_run(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW, file="slow.toml"), conversation=True)
        outcome: list[RunOutcome] = []
        async with trio.open_nursery() as nursery:

            async def converse() -> None:
                outcome.append(await run_to_end(h))

            nursery.start_soon(converse)
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnCompleteAction))
            await trio.sleep(200)  # idle: the run does not end with the turn
            assert h.runtime.state.run is not None
            assert h.runtime.state.run.status is None
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            message_id = await h.runtime.queue(coordinator, "and then?")
            await wait_for(h, lambda f: len(h.actions(ChatTurnCompleteAction)) == 4)
            h.runtime.close()
        turns = [f.action for f in h.facts_of(ChatTurnStartedAction) if f.channel == coordinator]
        assert [t.message.text for t in turns] == ["Ship it", "and then?"]
        assert turns[1].queued_message_id == message_id
        assert outcome == [
            RunOutcome(session=h.runtime.session, status=RunStatus.COMPLETED, result="second turn")
        ]
        assert isinstance(h.facts[-1].action, RunFinished)
        h.finished()

    async def test_a_failed_turn_ends_only_itself(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(FAILS_FIRST, file="f.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, ChatErrorAction))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.queue(coordinator, "try again")
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnCompleteAction))
            h.runtime.close()
        assert coordinator_turn_ends(h) == [ChatErrorAction, ChatTurnCompleteAction]
        assert h.runtime.state.run is not None
        assert (h.runtime.state.run.status, h.runtime.state.run.result) == (
            RunStatus.COMPLETED,
            "back again",
        )
        h.finished()

    async def test_cancel_turn_cancels_the_turn_and_its_workers_not_the_run(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW, file="slow.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, TaskStarted))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            h.runtime.cancel_turn(coordinator)
            await wait_for(
                h,
                lambda f: (
                    isinstance(f.action, ChatTurnCancelledAction) and f.channel == coordinator
                ),
            )
            with pytest.raises(RunError, match="no running turn"):
                h.runtime.cancel_turn(coordinator)
            await h.runtime.queue(coordinator, "again, smaller")
            await wait_for(
                h,
                lambda f: isinstance(f.action, ChatTurnCompleteAction) and f.channel == coordinator,
            )
            h.runtime.close()
        assert coordinator_turn_ends(h) == [ChatTurnCancelledAction, ChatTurnCompleteAction]
        tasks = h.runtime.state.tasks
        delegated = {task for task, record in tasks.items() if record.requested_by is not None}
        assert {a.status for a in h.actions(TaskFinished) if a.task in delegated} == {
            TaskStatus.KILLED
        }
        # Each prompt is a root task: the cancelled turn's killed, the next one's completed.
        assert [a.status for a in h.actions(TaskFinished) if a.task not in delegated] == [
            TaskStatus.KILLED,
            TaskStatus.COMPLETED,
        ]
        assert h.runtime.state.run is not None
        assert h.runtime.state.run.status is RunStatus.COMPLETED
        h.finished()

    async def test_stop_records_nothing_and_leaves_the_run_to_resume(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A stop leaves what a crash would: turns active, no cancel facts, run unfinished;
        a new runtime resumes it (cut-off turns run again) and the conversation goes on."""
        h = Harness(parse_team(SLOW, file="slow.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: len(h.actions(TaskStarted)) == 2)
            before = len(h.facts)
            h.runtime.stop()
        assert len(h.facts) == before, "a stop records nothing"
        state = TeamState.fold(h.runtime.session, h.facts)
        assert state.run is not None
        assert state.run.status is None
        coordinator = state.coordinator_chat()
        assert coordinator is not None
        assert state.chats[coordinator].active_turn is not None
        resumed = TeamRuntime(
            parse_team(SLOW, file="slow.toml"),
            backends=ScriptedBackend,
            factlog=h.log,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            state=state,
            conversation=True,
        )
        h.runtime = resumed  # the scenario check compares the live state: the resumed one's
        async with trio.open_nursery() as nursery:
            nursery.start_soon(resumed.resume)
            await wait_for(
                h,
                lambda f: isinstance(f.action, ChatTurnCompleteAction) and f.channel == coordinator,
            )
            resumed.close()
        assert resumed.state.run is not None
        assert resumed.state.run.status is RunStatus.COMPLETED
        assert "finished one" in resumed.state.run.result
        h.finished()

    async def test_an_approval_records_who_decided(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(approvals(approver="user"), file="a.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            fact = await wait_for(h, lambda f: isinstance(f.action, ApprovalRequested))
            assert isinstance(fact.action, ApprovalRequested)
            await h.runtime.resolve_approval(fact.action.approval, approved=True, principal="ops")
        resolved = h.actions(ApprovalResolved)[0]
        assert (resolved.resolved_by, resolved.principal) == (USER, "ops")
        h.finished()


class FullDisk(MemoryFactLog):
    """A fact log that takes ``room`` batches and then fails, like a disk that fills up."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.facts: list[Fact] = []
        self.broken: FactLogError | None = None

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self.broken is not None:
            raise self.broken
        if self.room == 0:
            self.broken = FactLogError("database or disk is full", source="journal.db")
            return DoneTicket(self.broken)
        self.room -= 1
        self.facts.extend(facts)
        return DoneTicket()


#: A coordinator whose one round delegates ``calls`` (a list of delegate calls).
BURST = """
[team]
name = "burst"
parallel_budget = 7
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]

[[agents.lead.turns]]
steps = [ {{ delegate = [ {calls} ] }}, {{ say = "All done" }} ]

[agents.worker]
role = "researcher"

[[agents.worker.turns]]
steps = [ {{ say = "did {{task}}" }} ]
"""


class SlowDisk(MemoryFactLog):
    """A fact log that makes batches durable later, in order, a few at a time: many batches
    are in flight at once, as with the SQLite journal's group commits."""

    def __init__(self, seed: int) -> None:
        self.facts: list[Fact] = []
        self.queue: list[tuple[list[Fact], EventTicket]] = []
        self.random = random.Random(seed)
        self.most_in_flight = 0

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        ticket = EventTicket()
        self.queue.append((list(facts), ticket))
        self.most_in_flight = max(self.most_in_flight, len(self.queue))
        return ticket

    async def write(self) -> None:
        while True:
            await trio.sleep(self.random.choice([0.001, 0.01, 0.1]))
            size = self.random.randint(1, 8)  # the rest waits for the next commit
            group, self.queue = self.queue[:size], self.queue[size:]
            for facts, ticket in group:
                self.facts.extend(facts)
                ticket.complete()


class TestPipelining:
    @pytest.mark.parametrize("seed", range(4))
    async def test_batches_in_flight_commit_in_order(
        self, autojump_clock: trio.testing.MockClock, seed: int
    ) -> None:
        """With batches made durable later and in groups, facts are still numbered without
        gaps, published in order, and the live state equals a fold of what was written."""
        disk = SlowDisk(seed)
        runtime = TeamRuntime(fanout(budget=3), backends=ScriptedBackend, factlog=disk)
        published: list[int] = []
        subscription = runtime.bus.subscribe("test")

        async def read() -> None:
            async for fact in subscription:
                published.append(fact.sequence)  # noqa: PERF401 (observed as it arrives)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(disk.write)
            nursery.start_soon(read)
            outcome = await runtime.run("Ship it")
            runtime.bus.close()
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        assert outcome.status is RunStatus.COMPLETED
        assert disk.most_in_flight > 1
        sequences = [f.sequence for f in disk.facts]
        assert sequences == list(range(1, len(sequences) + 1))
        assert published == sequences
        folded = TeamState.fold(runtime.session, disk.facts)
        assert folded.chats == runtime.state.chats
        assert folded.tasks == runtime.state.tasks
        assert build_graph(disk.facts).check() == []


class HeldLog(MemoryFactLog):
    """A fact log whose batches become durable only when the test says so, in order, and
    which keeps the contract on failure: a failed batch fails every later one, and later
    submissions are refused."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []  # the durable ones
        self.submitted: list[Fact] = []
        self.pending: list[tuple[list[Fact], EventTicket]] = []
        self.broken: FactLogError | None = None

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self.broken is not None:
            raise self.broken
        self.submitted.extend(facts)
        ticket = EventTicket()
        self.pending.append((list(facts), ticket))
        return ticket

    def held(self, cls: type) -> list[list[Fact]]:
        """The pending batches with an action of type ``cls``."""
        return [b for b, _ in self.pending if any(isinstance(f.action, cls) for f in b)]

    def complete(self, count: int | None = None) -> None:
        """Make the first ``count`` pending batches (default: all) durable."""
        count = len(self.pending) if count is None else count
        done, self.pending = self.pending[:count], self.pending[count:]
        for facts, ticket in done:
            self.facts.extend(facts)
            ticket.complete()

    def fail_next(self) -> None:
        """Fail the first pending batch, and with it every later one."""
        self.broken = FactLogError("disk I/O error", source="held.db")
        for _, ticket in self.pending:
            ticket.complete(self.broken)
        self.pending = []


async def complete_until(log: HeldLog, cls: type) -> None:
    """Make batches durable as they come until one holding a ``cls`` action is pending."""
    while not log.held(cls):
        log.complete()
        await trio.testing.wait_all_tasks_blocked()


@asynccontextmanager
async def held_run(runtime: TeamRuntime, log: HeldLog) -> AsyncIterator[list[RunOutcome]]:
    """Run the team in the background while the block steps ``log``; the list holds the
    outcome once the block is over."""
    outcome: list[RunOutcome] = []

    async def run() -> None:
        outcome.append(await runtime.run("Ship it"))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            try:
                yield outcome
            except BaseException:
                # A check failed: fail what is pending, or the run's shielded waits for
                # durability would keep the nursery open for ever.
                log.fail_next()
                raise


class TestPipelinedSubmission:
    """A delegate step's batches are written together: each waits only for its own."""

    async def test_a_rounds_tool_calls_and_spawns_are_submitted_before_any_is_durable(
        self,
    ) -> None:
        """The round's three tool calls are submitted at once, then the three spawns; nothing
        of a batch is applied or published before it is durable, and each worker starts
        only once its own spawn is durable."""
        log = HeldLog()
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=log)
        published: list[Fact] = []
        runtime.bus.observe(published.extend)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, ChatToolCallReadyAction)
            assert len(log.held(ChatToolCallReadyAction)) == 3
            assert not any(isinstance(f.action, ChatToolCallReadyAction) for f in published)

            log.complete()
            await trio.testing.wait_all_tasks_blocked()
            spawns = log.held(TaskStarted)
            assert len(spawns) == 3, "all three spawns wait to be durable together"
            workers = [
                f.action.summary.resource
                for b in spawns
                for f in b
                if f.channel == runtime.session and isinstance(f.action, SessionChatAddedAction)
            ]
            assert not set(workers) & set(runtime.state.chats), "nothing applied yet"
            assert not any(
                isinstance(f.action, SessionChatAddedAction)
                and f.action.summary.resource in workers
                for f in published
            )
            assert not log.held(ChatTurnStartedAction), "no worker starts before its spawn"

            log.complete(1)  # the first spawn only
            await trio.testing.wait_all_tasks_blocked()
            assert workers[0] in runtime.state.chats
            assert not set(workers[1:]) & set(runtime.state.chats)
            started = [b[0].channel for b in log.held(ChatTurnStartedAction)]
            assert started == [workers[0]]

            while log.pending:
                log.complete()
                await trio.testing.wait_all_tasks_blocked()
        assert outcome[0].status is RunStatus.COMPLETED
        assert [f.sequence for f in published] == [f.sequence for f in log.facts]

    async def test_a_burst_of_tool_calls_and_spawns_holds_at_most_the_bound_in_flight(
        self,
    ) -> None:
        """A round of seven delegate calls with room for two batches in flight: while
        nothing becomes durable, two tool calls are pending, then two spawns, never more
        (Recorder.wait_for_room); as batches become durable one at a time the rest follow,
        and the run ends with every fact written once, in order, as the state folds it."""
        calls = ", ".join(f'{{ agent = "worker", task = "t{index}" }}' for index in range(7))
        team = parse_team(BURST.format(calls=calls), file="burst.toml")
        log = HeldLog()
        runtime = TeamRuntime(team, backends=ScriptedBackend, factlog=log)
        runtime.recorder.max_in_flight = 2
        published: list[Fact] = []
        runtime.bus.observe(published.extend)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, ChatToolCallReadyAction)
            assert len(log.pending) == 2
            for _ in range(5):  # the next call's batch takes each place made
                log.complete(1)
                await trio.testing.wait_all_tasks_blocked()
                assert len(log.pending) == 2
                assert len(log.held(ChatToolCallReadyAction)) == 2
            await complete_until(log, TaskStarted)
            assert len(log.pending) == len(log.held(TaskStarted)) == 2
            while log.pending:
                log.complete(1)
                await trio.testing.wait_all_tasks_blocked()
        assert outcome[0].status is RunStatus.COMPLETED
        delegated = [t for t in runtime.state.tasks.values() if t.agent == "worker"]
        assert sorted(t.title for t in delegated) == [f"t{index}" for index in range(7)]
        assert all(t.status is TaskStatus.COMPLETED for t in delegated)
        sequences = [f.sequence for f in log.facts]
        assert sequences == list(range(1, len(sequences) + 1))
        assert published == log.facts
        assert TeamState.fold(runtime.session, log.facts).chats == runtime.state.chats
        assert build_graph(log.facts).check() == []

    async def test_a_failed_spawn_fails_the_spawns_behind_it_and_none_is_applied(
        self,
    ) -> None:
        """When the first of the round's spawns fails, the two submitted behind it fail with
        it: no worker chat is applied or published, no worker starts, and the run stops
        with the facts durable before the failure."""
        log = HeldLog()
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=log)
        published: list[Fact] = []
        runtime.bus.observe(published.extend)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, TaskStarted)
            assert len(log.held(TaskStarted)) == 3
            durable = len(log.facts)
            log.fail_next()
        assert outcome[0].status is RunStatus.FAILED
        assert "disk I/O error" in outcome[0].error
        assert runtime.state.last_sequence == durable == len(published)
        assert runtime.state.in_flight() == 0
        assert list(runtime.state.chats) == [runtime.state.coordinator_chat()]
        workers = {f.action.chat for f in log.submitted if isinstance(f.action, TaskStarted)}
        assert len(workers) == 3
        assert not any(
            f.channel in workers
            for f in log.submitted
            if isinstance(f.action, ChatTurnStartedAction)
        )
        assert TeamState.fold(runtime.session, log.facts).chats == runtime.state.chats

    async def test_a_failed_tool_call_fails_the_rest_of_the_round_and_none_runs(
        self,
    ) -> None:
        """When the first of the round's tool calls fails to become durable, the calls
        submitted behind it fail with it and none of them runs: no task is created."""
        log = HeldLog()
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=log)
        async with held_run(runtime, log) as outcome:
            await complete_until(log, ChatToolCallReadyAction)
            assert len(log.held(ChatToolCallReadyAction)) == 3
            durable = len(log.facts)
            log.fail_next()
        assert outcome[0].status is RunStatus.FAILED
        assert runtime.state.last_sequence == durable
        assert not any(isinstance(f.action, TaskCreated) for f in log.submitted)
        coordinator = runtime.state.coordinator_chat()
        assert coordinator is not None
        turn = runtime.state.chats[coordinator].active_turn
        assert turn is not None
        assert turn.response_parts == (), "no tool call of the round was applied"

    async def test_queued_delegations_take_their_places_in_the_order_they_were_made(
        self,
    ) -> None:
        """Budget 1: the second and third delegations of the round queue. Each enters the
        budget's queue before the next is submitted, so they start in order even when
        the log makes their batches durable together (trio wakes tasks woken together in
        either order): task ids and worker chats are reproducible."""
        for _ in range(12):
            log = HeldLog()
            runtime = TeamRuntime(fanout(budget=1), backends=ScriptedBackend, factlog=log)
            async with held_run(runtime, log) as outcome:
                while log.pending or not outcome:
                    log.complete()
                    await trio.testing.wait_all_tasks_blocked()
            assert outcome[0].status is RunStatus.COMPLETED
            started = [f.action.task for f in log.facts if isinstance(f.action, TaskStarted)]
            created = [f.action.task for f in log.facts if isinstance(f.action, TaskCreated)]
            assert started == created, (started, created)


class TestFactLogFailure:
    @pytest.mark.parametrize("room", [3, 12, 25])
    async def test_the_run_stops_with_the_reason_and_the_durable_prefix(
        self, autojump_clock: trio.testing.MockClock, room: int
    ) -> None:
        """Wherever the log fails, the run ends failed at once, says why and how far the
        facts are durable, and the state holds exactly the durable facts."""
        disk = FullDisk(room)
        runtime = TeamRuntime(fanout(), backends=ScriptedBackend, factlog=disk)
        with trio.fail_after(60):
            outcome = await runtime.run("Ship it")
        assert outcome.status is RunStatus.FAILED
        assert "database or disk is full" in outcome.error
        assert f"facts 1 to {len(disk.facts)} of {runtime.session} are durable" in outcome.error
        assert runtime.state.last_sequence == len(disk.facts)
        assert runtime.state.in_flight() == 0
        folded = TeamState.fold(runtime.session, disk.facts)
        assert folded.chats == runtime.state.chats
        assert folded.tasks == runtime.state.tasks
        with pytest.raises(FactLogError, match="disk is full"):
            await runtime.recorder.record([])


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


@given(st.binary(min_size=16, max_size=16))
def test_uuid4_text_is_the_text_of_a_version_4_uuid(random: bytes) -> None:
    """The ids of sessions, chats and runs: the text uuid.UUID makes of the same bytes."""
    import uuid

    from orchestrator.runtime._ids import uuid4_text

    assert uuid4_text(random) == str(uuid.UUID(bytes=random, version=4))
    assert uuid.UUID(uuid4_text(random)).version == 4


class _Answers:
    """A worker's model: its rounds' usage as given; each round but the last asks for a tool
    the worker does not have (the call fails, the next round goes on), the last answers."""

    def __init__(self, *usage: tuple[int, int]) -> None:
        self.usage = usage

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        await trio.lowlevel.checkpoint()
        if context.round_index < len(self.usage) - 1:
            yield ToolCallRequest(
                tool_call_id=f"c{context.round_index}", tool_name="nope", arguments={}
            )
        else:
            yield TextDelta(text="done")
        used = self.usage[context.round_index]
        yield UsageReport(input_tokens=used[0], output_tokens=used[1])


def _workers_answer(*usage: tuple[int, int]) -> Callable[[AgentSpec], Backend]:
    def backends(spec: AgentSpec) -> Backend:
        return _Answers(*usage) if spec.name == "worker" else ScriptedBackend(spec)

    return backends


class TestLastRoundUsage:
    async def test_the_last_rounds_usage_is_written_with_the_turns_end(self) -> None:
        """A round that asks for no tool ends its turn: its chat/usage and the
        chat/turnComplete that follows are one batch; the facts are as they were."""
        h = Harness(fanout(), backends=_workers_answer((3, 4)))
        batches: list[list[tuple[str, str]]] = []
        h.runtime.bus.observe(lambda facts: batches.append([(f.channel, f.type) for f in facts]))
        await run_to_end(h)
        for chat in h.worker_chats():
            assert [f.type for f in h.facts if f.channel == chat] == [
                "chat/turnStarted",
                "chat/responsePart",
                "chat/usage",
                "chat/turnComplete",
            ]
            ended = [b for b in batches if (chat, "chat/turnComplete") in b]
            assert [t for _, t in ended[0]] == [
                "chat/usage",
                "chat/turnComplete",
                "session/chatUpdated",
            ]

    async def test_a_round_that_asks_for_tools_writes_its_usage_before_they_run(self) -> None:
        """The first round's usage is a batch of its own, before the tool call completes;
        the last round's (the same totals: chat/usage is idempotent) goes with the turn's
        end, and the turn completes."""
        h = Harness(fanout(), backends=_workers_answer((3, 4), (3, 4)))
        batches: list[list[tuple[str, str]]] = []
        h.runtime.bus.observe(lambda facts: batches.append([(f.channel, f.type) for f in facts]))
        await run_to_end(h)
        for chat in h.worker_chats():
            mine = [[t for c, t in b if c == chat] for b in batches]
            mine = [b for b in mine if b]
            assert mine[-4:] == [
                ["chat/usage"],
                ["chat/toolCallComplete"],
                ["chat/responsePart"],
                ["chat/usage", "chat/turnComplete"],
            ]
        finished = h.actions(TaskFinished)
        assert [t.status for t in finished] == [TaskStatus.COMPLETED] * 3
