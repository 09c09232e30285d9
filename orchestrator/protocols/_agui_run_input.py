"""What an AG-UI client sends: a RunAgentInput, and the answers to the interrupts it was sent.

A run the projector ends on pending approvals (:mod:`orchestrator.protocols._project_agui`)
carries one interrupt per approval (:func:`approval_interrupt`); the client answers them in the
``resume`` entries of its next RunAgentInput, in the shape :data:`APPROVAL_RESPONSE_SCHEMA`
announces. The question and the reader of its answer live here side by side, so that they
agree.

:func:`parse_run_input` reads a RunAgentInput body (threadId, runId, the last user message and
the ``resume`` answers to approvals) with errors that name the bad field's path.

The module is pure: no trio, no IO.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from orchestrator.base import RunInputError
from orchestrator.core import ApprovalRecord, MemberName

__all__ = [
    "Event",
    "ResumeDecision",
    "RunRequest",
    "parse_run_input",
]

#: One AG-UI event as it goes on the wire (``json.dumps`` it as one SSE ``data:`` line).
Event = dict[str, Any]

#: The ``reason`` of an interrupt that asks for a tool call's approval.
TOOL_APPROVAL: Final = "tool_approval"

#: The answer an approval interrupt expects in its resume entry's ``payload``.
APPROVAL_RESPONSE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


def approval_interrupt(
    record: ApprovalRecord,
    *,
    tool_call_id: str,
    subagent: str | None,
    asker: MemberName | None = None,
) -> Event:
    """The interrupt of a pending approval routed to the user.

    - ``id`` is the approval id (what the resume entry answers).
    - ``reason`` is ``tool_approval``.
    - ``toolCallId`` is the wire id of the gated call.
    - ``subagentRunId`` is the worker that asked (absent when the coordinator itself did).
    - ``metadata`` names the approval, the tool, the agent that asked and the summary of the
      call's input.

    ``asker``: who asked, by name and number, and its task. The message and ``metadata`` then
    say so (the schema keeps extra data to ``metadata``).
    """
    request = record.request
    who = request.requested_by
    metadata: Event = {
        "approval": request.approval,
        "toolName": request.tool_name,
        "agent": request.requested_by,
        "chat": request.chat,
        "summary": request.summary,
    }
    if asker is not None:
        who = asker.label + (f" (task: {asker.task_title})" if asker.task_title else "")
        metadata |= {"agentName": asker.label, "agentNumber": asker.number, "task": asker.task}
        if asker.task_title is not None:
            metadata["taskTitle"] = asker.task_title
    interrupt: Event = {
        "id": request.approval,
        "reason": TOOL_APPROVAL,
        "message": f"{who} asks to run {request.tool_name}: {request.summary}",
        "toolCallId": tool_call_id,
        "responseSchema": APPROVAL_RESPONSE_SCHEMA,
        "metadata": metadata,
    }
    if subagent is not None:
        interrupt["subagentRunId"] = subagent
    return interrupt


@attrs.frozen(kw_only=True)
class ResumeDecision:
    """The answer to one approval interrupt: ``approved``, with an optional ``reason``."""

    approval: str  # the interrupt id: an approval id
    approved: bool
    reason: str | None = None


@attrs.frozen(kw_only=True)
class RunRequest:
    """What the daemon needs of a RunAgentInput.

    ``user_message`` is the text of the last message whose role is ``user`` (``None`` if there
    is none) and ``user_message_id`` its id. A client sends the whole conversation each time. So
    on a run that resumes an interrupt (``resume`` non-empty) that message is the one of the
    interrupted run, not a new one. ``new_user_message`` says whether the conversation *ends*
    with a user message (something the agent has not answered yet).
    """

    thread_id: str
    run_id: str
    parent_run_id: str | None = None
    user_message: str | None = None
    user_message_id: str | None = None
    new_user_message: bool = False
    resume: tuple[ResumeDecision, ...] = ()
    #: The role of the conversation's last message (None: no message), for saying why an
    #: input that ends with another role's message starts nothing.
    last_role: str | None = None


def parse_run_input(body: object) -> RunRequest:
    """Read an AG-UI ``RunAgentInput`` (already decoded from JSON).

    Raises :class:`~orchestrator.base._errors.RunInputError` (a ``ValueError``) naming the path of
    the first bad field (``$.messages[1].content``). Fields the daemon does not use (``tools``,
    ``context``, ``state``, ``forwardedProps``), keys it does not know and messages of roles it
    does not know (a newer client's) are not checked beyond being there.
    """
    data = _object(body, "$")
    thread_id = _string(data, "threadId", "$")
    run_id = _string(data, "runId", "$")
    parent_run_id = _optional_string(data, "parentRunId", "$")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise RunInputError(
            f"expected an array of messages, got {_kind(messages)}", path="$.messages"
        )
    user_message = user_message_id = None
    last_role: str | None = None
    for index, item in enumerate(messages):
        path = f"$.messages[{index}]"
        message = _object(item, path)
        message_id = _string(message, "id", path)
        # A role this version does not know (a newer client's) is a message the daemon has
        # no use for, like a tool or system message: skipped, never refused.
        last_role = _string(message, "role", path)
        if last_role == "user":
            user_message = _user_text(message.get("content"), f"{path}.content")
            user_message_id = message_id
    return RunRequest(
        thread_id=thread_id,
        run_id=run_id,
        parent_run_id=parent_run_id,
        user_message=user_message,
        user_message_id=user_message_id,
        new_user_message=last_role == "user",
        resume=_resume(data.get("resume")),
        last_role=last_role,
    )


def _object(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RunInputError(f"expected an object, got {_kind(value)}", path=path)
    return value


def _string(data: dict[str, Any], key: str, path: str, *, empty: bool = False) -> str:
    """``data[key]``, a string (non-empty unless ``empty``)."""
    if key not in data:
        raise RunInputError("missing", path=f"{path}.{key}")
    value = data[key]
    if not isinstance(value, str):
        raise RunInputError(f"expected a string, got {_kind(value)}", path=f"{path}.{key}")
    if not value and not empty:
        raise RunInputError("must not be empty", path=f"{path}.{key}")
    return value


def _optional_string(data: dict[str, Any], key: str, path: str) -> str | None:
    return _string(data, key, path, empty=True) if key in data else None


def _user_text(content: object, path: str) -> str:
    """A user message's text: its string content, or its text parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RunInputError(
            f"expected a string or an array of content parts, got {_kind(content)}", path=path
        )
    texts = []
    for index, item in enumerate(content):
        part = _object(item, f"{path}[{index}]")
        kind = _string(part, "type", f"{path}[{index}]")
        if kind == "text":
            texts.append(_string(part, "text", f"{path}[{index}]", empty=True))
    return "\n".join(texts)


def _resume(value: object) -> tuple[ResumeDecision, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RunInputError(
            f"expected an array of resume entries, got {_kind(value)}", path="$.resume"
        )
    decisions: list[ResumeDecision] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        path = f"$.resume[{index}]"
        entry = _object(item, path)
        interrupt = _string(entry, "interruptId", path)
        if interrupt in seen:
            raise RunInputError(
                f"interrupt {interrupt!r} is answered twice", path=f"{path}.interruptId"
            )
        seen.add(interrupt)
        status = entry.get("status")
        if status == "cancelled":
            decisions.append(
                ResumeDecision(approval=interrupt, approved=False, reason="cancelled by the user")
            )
        elif status == "resolved":
            approved, reason = _approval_payload(
                entry.get("payload"), f"{path}.payload", present="payload" in entry
            )
            decisions.append(ResumeDecision(approval=interrupt, approved=approved, reason=reason))
        else:
            raise RunInputError(
                f'expected "resolved" or "cancelled", got {_kind(status)}',
                path=f"{path}.status",
            )
    return tuple(decisions)


def _approval_payload(payload: object, path: str, *, present: bool) -> tuple[bool, str | None]:
    """``true`` / ``false``, or ``{"approved": bool, "reason"?: str}``."""
    if isinstance(payload, bool):
        return payload, None
    if not isinstance(payload, dict):
        raise RunInputError(
            'missing: a resolved approval needs {"approved": true or false}'
            if not present
            else f'expected true, false or {{"approved": ...}}, got {_kind(payload)}',
            path=path,
        )
    approved = payload.get("approved")
    if not isinstance(approved, bool):
        raise RunInputError(
            "missing"
            if "approved" not in payload
            else f"expected true or false, got {_kind(approved)}",
            path=f"{path}.approved",
        )
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise RunInputError(f"expected a string, got {_kind(reason)}", path=f"{path}.reason")
    return approved, reason


def _kind(value: object) -> str:
    """How a JSON value is named in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
