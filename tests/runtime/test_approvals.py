"""Approvals and questions: the tool calls that wait for someone's decision."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
)
from orchestrator.ahp.state import (
    ChatInputAnswered,
    ChatInputBooleanAnswerValue,
    ChatInputBooleanQuestion,
    ChatInputMultiSelectQuestion,
    ChatInputNumberAnswerValue,
    ChatInputNumberQuestion,
    ChatInputOption,
    ChatInputSelectedManyAnswerValue,
    ToolCallCancelledState,
    ToolCallResponsePart,
)
from orchestrator.base import RunError, TeamFileError
from orchestrator.core import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    RunStatus,
    TaskFinished,
    TaskStatus,
)
from orchestrator.runtime import (
    RunOutcome,
    answer_text,
    parse_answer,
)
from orchestrator.spec import parse_team
from tests.support.runtime import Harness, fanout, run_to_end, wait_for
from tests.support.teams import ASK, approvals

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


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
