"""How the runtime reports what a tool call came to, as facts: one definition for the live
run and for recovery (which finishes what a crash left open).

* :func:`tool_result_actions`: a tool call's ``chat/toolCallComplete``, after any facts that
  go in the same batch.
* :func:`delegation_report`: a finished delegation: the ``team/taskFinished`` fact, the
  worker notification (a system-notification part in the delegating chat's turn, never a
  user message) and the delegate call's result naming the worker as subagent content.

Pure: facts in, facts out; no trio, no IO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.ahp.actions import (
    ChatPendingMessageRemovedAction,
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
)
from orchestrator.ahp.state import (
    PendingMessageKind,
    SystemNotificationResponsePart,
    ToolCallResult,
    ToolResultSubagentContent,
    ToolResultTextContent,
)
from orchestrator.base import compact_dumps

from ._facts import Action
from ._team_actions import ApprovalDecision, TaskFinished, TaskStatus
from ._team_records import ApprovalRecord

__all__ = [
    "OUTPUT_RETRY_META",
    "PRINCIPAL_META",
    "STEERING_META",
    "delegation_output",
    "delegation_report",
    "denied_calls",
    "first_line",
    "output_retry",
    "steering_injected",
    "tool_result_actions",
]

#: The ``_meta`` key of the system-notification part that carries an injected steering
#: message (its value: the pending message's id).
STEERING_META = "steering"
#: The ``_meta`` key naming the principal who sent a steering or queued message (the
#: signed-in token's holder); absent when no principal is known (old journals, the CLI).
PRINCIPAL_META = "principal"
#: The ``_meta`` key of the system-notification part that asks a model again because its
#: answer did not fit the agent's output_schema (its value: where and what was wrong).
OUTPUT_RETRY_META = "outputRetry"


def output_retry(
    chat: str, turn_id: str, prompt: str, *, path: str, problem: str
) -> tuple[str, Action]:
    """The part that asks the model of ``chat`` again within its turn: ``prompt`` tells it
    where its answer did not fit (``path``) and what was wrong (``problem``).

    The conversation a model reads has it as a user message where it was recorded (as a
    steering message), so a restart or a later turn sees the same history."""
    part = SystemNotificationResponsePart(
        content=prompt, meta={OUTPUT_RETRY_META: {"path": path, "problem": problem}}
    )
    return (chat, ChatResponsePartAction(turn_id=turn_id, part=part))


def steering_injected(
    chat: str, turn_id: str, message_id: str, text: str, *, principal: str | None = None
) -> list[tuple[str, Action]]:
    """A steering message taken into the running turn.

    It is removed from the pending slot and kept in the turn, where it was injected. So the
    conversation a model reads later (this turn's next rounds, and later turns) has it in its
    place. ``principal``, who sent it when known, is kept beside it for transcripts."""
    meta: dict[str, str] = {STEERING_META: message_id}
    if principal is not None:
        meta[PRINCIPAL_META] = principal
    part = SystemNotificationResponsePart(content=text, meta=meta)
    return [
        (
            chat,
            ChatPendingMessageRemovedAction(kind=PendingMessageKind.STEERING, id=message_id),
        ),
        (chat, ChatResponsePartAction(turn_id=turn_id, part=part)),
    ]


def tool_result_actions(
    chat: str,
    turn_id: str,
    tool_call_id: str,
    tool_name: str,
    *,
    success: bool,
    output: str,
    extra: Sequence[tuple[str, Action]] = (),
    content_before: Sequence[ToolResultSubagentContent] = (),
) -> list[tuple[str, Action]]:
    """``extra`` then the tool call's completion, whose text content is ``output``."""
    result = ToolCallResult(
        success=success,
        past_tense_message=f"{'Ran' if success else 'Failed'} {tool_name}",
        content=(*content_before, ToolResultTextContent(text=output)),
    )
    complete = ChatToolCallCompleteAction(turn_id=turn_id, tool_call_id=tool_call_id, result=result)
    return [*extra, (chat, complete)]


def denied_calls(approvals: Mapping[str, ApprovalRecord], chat: str) -> int:
    """How many of ``chat``'s tool calls were denied (a task that completed all the same
    did not do all it set out to)."""
    return sum(
        record.request.chat == chat and record.decision is ApprovalDecision.DENIED
        for record in approvals.values()
    )


def delegation_output(
    worker: str, finished: TaskFinished, *, task_title: str = "", denied: int = 0
) -> str:
    """What the delegating model (and a script's ``{outcomes}``) reads of a finished task:
    ``[writer, completed, 1 call denied] (task: Publish the notes) Drafted, then ...`` (the
    answer's parsed value as compact JSON when the worker has an output_schema). The
    task's title tells the outcomes of several delegations apart; ``denied`` calls are
    counted, so a task that completed without them does not read as done in full."""
    status = str(finished.status)
    if denied:
        status += f", {denied} call{'' if denied == 1 else 's'} denied"
    task = f"(task: {first_line(task_title, 80)}) " if task_title.strip() else ""
    # A worker with an output_schema answered a value that fit it: the delegating model reads
    # it as compact JSON, whatever fence or spacing the worker's text had.
    answer = finished.summary if finished.value is None else compact_dumps(finished.value)
    return f"[{worker}, {status}] {task}{answer}"


def delegation_report(
    session: str,
    chat: str,
    turn_id: str,
    tool_call_id: str,
    finished: TaskFinished,
    *,
    worker: str,
    subagent: ToolResultSubagentContent | None,
    task_title: str = "",
    denied: int = 0,
    output: str | None = None,
    also: Sequence[ToolResultSubagentContent] = (),
) -> list[tuple[str, Action]]:
    """The batch that reports ``finished`` back to the delegating ``chat`` (``task_title``
    and ``denied``: see :func:`delegation_output`). ``output``: the call's result text, when
    it says more than :func:`delegation_output` (a review's verdict); ``also``: other chats the
    call spawned (its reviewer), kept in its content after the worker."""
    notification = SystemNotificationResponsePart(
        content=f"{worker} {finished.status}: {first_line(finished.summary)}",
        meta={
            "workerNotification": _compact(
                task=finished.task, chat=finished.chat, status=str(finished.status)
            )
        },
    )
    return tool_result_actions(
        chat,
        turn_id,
        tool_call_id,
        "delegate",
        success=finished.status is TaskStatus.COMPLETED,
        output=output
        if output is not None
        else delegation_output(worker, finished, task_title=task_title, denied=denied),
        content_before=(*(() if subagent is None else (subagent,)), *also),
        extra=[
            (session, finished),
            (chat, ChatResponsePartAction(turn_id=turn_id, part=notification)),
        ],
    )


def first_line(text: str, limit: int = 120) -> str:
    """The first line of ``text``, shortened to ``limit`` characters."""
    stripped = text.strip()
    line = stripped.splitlines()[0] if stripped else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _compact(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
