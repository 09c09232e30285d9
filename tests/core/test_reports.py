"""The batches a run appends to report back: a tool call's result, a finished delegation (the
task's end, the worker notification, the delegate call's result), a steering message taken
into the turn; and the short texts they are made of."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatPendingMessageRemovedAction,
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
)
from orchestrator.ahp.state import (
    PendingMessageKind,
    SystemNotificationResponsePart,
    ToolResultSubagentContent,
    ToolResultTextContent,
)
from orchestrator.core import (
    STEERING_META,
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequested,
    TaskFinished,
    TaskStatus,
    delegation_output,
    delegation_report,
    denied_calls,
    first_line,
    steering_injected,
    tool_result_actions,
)
from tests.support.examples import examples

SESSION = "ahp-session:/s"
LEAD = "ahp-chat:/lead"
WORKER = "ahp-chat:/writer"


def finished(status: TaskStatus = TaskStatus.COMPLETED, summary: str = "Drafted") -> TaskFinished:
    return TaskFinished(task="task-1", status=status, summary=summary, duration_ms=5, chat=WORKER)


class TestFirstLine:
    @pytest.mark.parametrize(
        ("text", "limit", "line"),
        [
            ("  Drafted the notes\nthen more", 120, "Drafted the notes"),
            ("", 120, ""),
            ("\n\n", 120, ""),
            ("abcdef", 6, "abcdef"),
            ("abcdefg", 6, "abcde…"),
        ],
    )
    def test_examples(self, text: str, limit: int, line: str) -> None:
        assert first_line(text, limit) == line

    @settings(max_examples=examples(100))
    @given(st.text(max_size=60), st.integers(min_value=1, max_value=30))
    def test_one_line_within_the_limit_from_the_start(self, text: str, limit: int) -> None:
        line = first_line(text, limit)
        assert len(line) <= limit
        assert "\n" not in line
        assert text.strip().startswith(line.removesuffix("…"))


class TestDelegationOutput:
    def test_the_worker_and_the_status_before_the_summary(self) -> None:
        assert delegation_output("writer", finished()) == "[writer, completed] Drafted"

    def test_the_task_s_title_tells_delegations_apart(self) -> None:
        output = delegation_output("writer", finished(), task_title="Publish the notes\nsoon")
        assert output == "[writer, completed] (task: Publish the notes) Drafted"
        assert delegation_output("writer", finished(), task_title="  ") == (
            "[writer, completed] Drafted"
        )

    @pytest.mark.parametrize(("denied", "said"), [(1, "1 call denied"), (3, "3 calls denied")])
    def test_denied_calls_are_counted(self, denied: int, said: str) -> None:
        output = delegation_output("writer", finished(), denied=denied)
        assert output == f"[writer, completed, {said}] Drafted"


def approval(number: int, chat: str, decision: ApprovalDecision | None) -> ApprovalRecord:
    request = ApprovalRequested(
        approval=f"approval-{number}",
        chat=chat,
        turn_id="turn-1",
        tool_call_id=f"call-{number}",
        tool_name="shell",
        requested_by="writer",
        routed_to="user",
        policy_scope="shell",
        summary="ls",
    )
    return ApprovalRecord(request=request, decision=decision)


def test_denied_calls_counts_the_chat_s_denials_only() -> None:
    records = [
        approval(1, WORKER, ApprovalDecision.DENIED),
        approval(2, WORKER, ApprovalDecision.APPROVED),
        approval(3, WORKER, None),
        approval(4, LEAD, ApprovalDecision.DENIED),
        approval(5, WORKER, ApprovalDecision.DENIED),
    ]
    approvals = {record.request.approval: record for record in records}
    assert denied_calls(approvals, WORKER) == 2
    assert denied_calls(approvals, "ahp-chat:/nobody") == 0


class TestToolResult:
    def test_the_completion_comes_last_with_the_output_as_text(self) -> None:
        extra = [(SESSION, finished())]
        [first, (chat, complete)] = tool_result_actions(
            LEAD, "turn-1", "call-1", "shell", success=False, output="exit 1", extra=extra
        )
        assert first == extra[0]
        assert chat == LEAD
        assert isinstance(complete, ChatToolCallCompleteAction)
        assert (complete.turn_id, complete.tool_call_id) == ("turn-1", "call-1")
        assert complete.result.success is False
        assert complete.result.past_tense_message == "Failed shell"
        assert complete.result.content == (ToolResultTextContent(text="exit 1"),)


class TestDelegationReport:
    SUBAGENT = ToolResultSubagentContent(resource=WORKER, title="writer", agent_name="writer")

    def report(self, status: TaskStatus) -> list[tuple[str, object]]:
        return list(
            delegation_report(
                SESSION,
                LEAD,
                "turn-1",
                "call-1",
                finished(status, summary="Drafted\nand more"),
                worker="writer",
                subagent=self.SUBAGENT,
                task_title="Notes",
            )
        )

    def test_the_task_s_end_then_the_notification_then_the_result(self) -> None:
        [(session, task), (chat, notified), (last, complete)] = self.report(TaskStatus.COMPLETED)
        assert (session, task) == (SESSION, finished(summary="Drafted\nand more"))
        assert chat == last == LEAD
        assert isinstance(notified, ChatResponsePartAction)
        part = notified.part
        assert isinstance(part, SystemNotificationResponsePart)
        assert part.content == "writer completed: Drafted"
        assert part.meta == {
            "workerNotification": {"task": "task-1", "chat": WORKER, "status": "completed"}
        }
        assert isinstance(complete, ChatToolCallCompleteAction)
        assert complete.result.success is True
        assert complete.result.content == (
            self.SUBAGENT,
            ToolResultTextContent(text="[writer, completed] (task: Notes) Drafted\nand more"),
        )

    @pytest.mark.parametrize("status", [TaskStatus.FAILED, TaskStatus.KILLED])
    def test_a_task_that_did_not_complete_fails_the_call(self, status: TaskStatus) -> None:
        complete = self.report(status)[-1][1]
        assert isinstance(complete, ChatToolCallCompleteAction)
        assert complete.result.success is False

    def test_a_worker_that_never_started_has_no_chat_in_the_notification(self) -> None:
        never = TaskFinished(task="task-1", status=TaskStatus.KILLED, summary="", duration_ms=0)
        batch = delegation_report(
            SESSION, LEAD, "turn-1", "call-1", never, worker="writer", subagent=None
        )
        notified = batch[1][1]
        assert isinstance(notified, ChatResponsePartAction)
        assert isinstance(notified.part, SystemNotificationResponsePart)
        assert notified.part.meta == {"workerNotification": {"task": "task-1", "status": "killed"}}
        complete = batch[-1][1]
        assert isinstance(complete, ChatToolCallCompleteAction)
        assert complete.result.content == (ToolResultTextContent(text="[writer, killed] "),)


def test_a_steering_message_leaves_the_pending_slot_for_the_turn() -> None:
    [(chat, removed), (same, added)] = steering_injected(LEAD, "turn-1", "m-1", "focus on X")
    assert chat == same == LEAD
    assert removed == ChatPendingMessageRemovedAction(kind=PendingMessageKind.STEERING, id="m-1")
    assert added == ChatResponsePartAction(
        turn_id="turn-1",
        part=SystemNotificationResponsePart(content="focus on X", meta={STEERING_META: "m-1"}),
    )
