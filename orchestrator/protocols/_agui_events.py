"""The AG-UI events of a projected run, and the records of its subagents and tool calls they
are built from.

:class:`~orchestrator.protocols._project_agui.AguiProjector` decides *when* an event is due (a
fact, the run's start, an interrupt, the followed turn's end). The functions here say *what*
it looks like on the wire: its ``type``, its camelCase keys, and which keys an event leaves
out when it has nothing to say. An event of a subagent's stream carries the subagent's
``subagentRunId`` (:func:`attributed`); the coordinator's own carry none. The event catalogue is
the "Within a run" section of :mod:`orchestrator.protocols._project_agui`.

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from typing import Any

import attrs

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
)
from orchestrator.ahp.state import StringOrMarkdown, ToolCallResult, ToolResultTextContent

from ._agui_run_input import Event

__all__: list[str] = []


@attrs.define
class Subagent:
    """A worker or specialist of the followed turn (AG-UI: one subagent invocation)."""

    chat: str
    name: str
    description: str
    parent: str | None  # the subagent that spawned it; None: the followed turn did
    parent_tool_call_id: str  # wire id
    parent_message_id: str | None
    task: str
    open: bool = False  # announced in the current run and not finished there
    ended: bool = False


@attrs.define
class ToolCall:
    """A tool call of the run, as far as the client has been told of it."""

    wire_id: str
    name: str
    parent_message_id: str | None
    args_sent: bool = False
    ended: bool = False  # its input is complete (TOOL_CALL_END sent)
    result_sent: bool = False


def attributed(subagent: str | None, **fields: Any) -> Event:
    """An event of a chat's stream: attributed to ``subagent`` unless the coordinator's."""
    if subagent is not None:
        fields["subagentRunId"] = subagent
    return fields


def subagent_started(subagent: Subagent) -> Event:
    """``SUBAGENT_STARTED``: the subagent announced in the current run."""
    event: Event = {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": subagent.chat,
        "name": subagent.name,
        "parentToolCallId": subagent.parent_tool_call_id,
        "metadata": {"task": subagent.task},
    }
    if subagent.description:
        event["description"] = subagent.description
    if subagent.parent is not None:
        event["parentSubagentRunId"] = subagent.parent
    if subagent.parent_message_id is not None:
        event["parentMessageId"] = subagent.parent_message_id
    return event


def subagent_ended(chat: str, *, ok: bool, summary: str, code: str | None) -> Event:
    """``SUBAGENT_FINISHED`` with its ``result``, or ``SUBAGENT_ERROR`` with its ``code``."""
    if ok:
        event: Event = {"type": "SUBAGENT_FINISHED", "subagentRunId": chat}
        if summary:
            event["result"] = summary
        return event
    event = {"type": "SUBAGENT_ERROR", "subagentRunId": chat, "message": summary or "failed"}
    if code is not None:
        event["code"] = code
    return event


def subagent_suspended(chat: str, interrupt_ids: list[str] | None) -> Event:
    """The end of a subagent's segment at an interrupt, with the approvals it raised."""
    outcome: Event = {"type": "suspended"}
    if interrupt_ids:
        outcome["interruptIds"] = interrupt_ids
    return {"type": "SUBAGENT_FINISHED", "subagentRunId": chat, "outcome": outcome}


def run_ended(
    action: ChatTurnCompleteAction | ChatErrorAction | ChatTurnCancelledAction,
    *,
    thread_id: str,
    run_id: str,
    result: str,
) -> Event:
    """The followed turn's end: ``RUN_FINISHED`` with the turn's answer (``result``), or
    ``RUN_ERROR`` for a turn that failed or was cancelled."""
    if isinstance(action, ChatTurnCompleteAction):
        return {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "result": result}
    if isinstance(action, ChatErrorAction):
        return {
            "type": "RUN_ERROR",
            "message": action.error.message,
            "code": action.error.error_type,
        }
    return {
        "type": "RUN_ERROR",
        "message": "the coordinator's turn was cancelled before it answered",
        "code": "cancelled",
    }


def text_of(value: StringOrMarkdown | None) -> str:
    """A StringOrMarkdown as plain text (the markdown source); absent: empty."""
    if value is None or isinstance(value, str):
        return value or ""
    return value.markdown


def result_text(result: ToolCallResult) -> str:
    """What a tool call's result says: its text contents, else its past-tense message."""
    texts = [c.text for c in result.content or () if isinstance(c, ToolResultTextContent)]
    return "\n".join(texts) if texts else text_of(result.past_tense_message)
