"""Approvals and questions: the tool calls that wait for someone's decision.

Theory of operation
-------------------
A gated tool call (its agent ``needs_approval`` for it) records ``team/approvalRequested``.
It is routed to the user or, when the team file says so, to the coordinator. The coordinator's
policy decides at once: it approves the tools it lists under ``approves``. An ``ask`` call
records ``chat/inputRequested``. Either way the call's task parks on a :class:`_Decision`'s
event until :meth:`Approvals.resolve` / :meth:`Approvals.answer` is called. The CLI prompt, a
client, or the coordinator's policy calls it. The decision is then recorded by the waiting
task. That task sets ``applied`` so that the decider learns how it came out. A requester that stops
first records its approval ``withdrawn``: no approval stays pending for a call that can no
longer run.

After a restart, every approval and question that survived the stop gets its decision
back (:meth:`Approvals.reopen_surviving`) before the turns that wait on them go on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs
import trio

from orchestrator.ahp.actions import (
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatToolCallApprovedAction,
    ChatToolCallDeniedAction,
)
from orchestrator.ahp.state import (
    ChatInputAnswered,
    ChatInputAnswerValue,
    ChatInputBooleanAnswerValue,
    ChatInputBooleanQuestion,
    ChatInputMultiSelectQuestion,
    ChatInputNumberAnswerValue,
    ChatInputNumberQuestion,
    ChatInputOption,
    ChatInputQuestion,
    ChatInputRequest,
    ChatInputResponseKind,
    ChatInputSelectedAnswerValue,
    ChatInputSelectedManyAnswerValue,
    ChatInputSingleSelectQuestion,
    ChatInputTextAnswerValue,
    ChatInputTextQuestion,
    KnownChatInputQuestion,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
)
from orchestrator.base import RunError
from orchestrator.core import (
    USER,
    Action,
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequested,
    ApprovalResolved,
    ToolCallRequest,
    ToolOutcome,
    answer_text,
    has_open_input,
    input_request_id,
    open_questions,
)

from ._context import ChatContext, RunContext, is_cancellation

__all__ = [
    "answer_text",
    "parse_answer",
]

#: Longest tool input shown in an approval request's summary.
SUMMARY_LIMIT = 160


@attrs.define
class _Decision:
    """A parked approval or input request: ``event`` is set when its answer arrives,
    ``applied`` once the runtime recorded what came of it (the decision, or a withdrawal)."""

    event: trio.Event = attrs.field(factory=trio.Event)
    applied: trio.Event = attrs.field(factory=trio.Event)
    approved: bool = False
    decided_by: str = USER
    principal: str | None = None  # the identity behind a user's decision (a client's token)
    question: ChatInputQuestion | None = None  # what an input request asks
    answer: str = ""
    value: ChatInputAnswerValue | None = None  # the answer, read as the question asks
    response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT


class Approvals:
    """The approvals and questions of one run that wait for a decision (see module docstring)."""

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self._approvals: dict[str, _Decision] = {}
        self._inputs: dict[tuple[str, str], _Decision] = {}

    # ── deciding (from the CLI, clients, tests) ─────────────────────────────

    async def resolve(
        self, approval: str, *, approved: bool, by: str = USER, principal: str | None = None
    ) -> None:
        """Decide a pending approval (see :meth:`TeamRuntime.resolve_approval`)."""
        decision = self._approvals.get(approval)
        record = self.run.state.approvals.get(approval)
        if decision is None or record is None or record.decision is not None:
            raise RunError(f"no pending approval {approval!r}")
        if decision.event.is_set():
            raise RunError(f"approval {approval!r} has already been decided")
        if by != record.request.routed_to:
            raise RunError(
                f"approval {approval!r} is routed to {record.request.routed_to}, not to {by}"
            )
        decision.approved = approved
        decision.decided_by = by
        decision.principal = principal
        decision.event.set()
        await decision.applied.wait()
        applied = self.run.state.approvals[approval]
        if applied.decision is ApprovalDecision.WITHDRAWN:
            raise RunError(
                f"approval {approval!r} was withdrawn: {applied.request.requested_by} stopped "
                "before the decision could be applied"
            )

    async def answer(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None:
        """Answer an open input request (see :meth:`TeamRuntime.answer_input`)."""
        decision = self._inputs.get((chat, request_id))
        if decision is None or decision.event.is_set():
            raise RunError(f"no open input request {request_id!r} in {chat}")
        if response is ChatInputResponseKind.ACCEPT:
            assert decision.question is not None
            try:
                decision.value = parse_answer(decision.question, answer)
            except ValueError as exc:
                raise RunError(f"{request_id}: {exc}") from None
        decision.answer = answer
        decision.response = response
        decision.event.set()

    def reopen_surviving(self) -> None:
        """Open a decision for every approval and question that survived the stop, so they
        can be answered as soon as a resumed run reports it started, before the turns that
        wait on them have been taken up again."""
        for record in self.run.state.pending_approvals():
            self._approvals[record.request.approval] = _Decision()
        for chat, request in open_questions(self.run.state):
            question = (request.questions or (None,))[0]
            self._inputs[(chat, request.id)] = _Decision(question=question)

    def waiting_for_user(
        self,
    ) -> tuple[list[ApprovalRequested], list[tuple[str, ChatInputRequest]]]:
        """The approvals routed to the user and the open questions, as the state has them."""
        approvals = [
            record.request
            for record in self.run.state.pending_approvals()
            if record.request.routed_to == USER
        ]
        return approvals, open_questions(self.run.state)

    # ── waiting (from a chat's tool calls) ──────────────────────────────────

    async def await_approval(
        self, ctx: ChatContext, request: ToolCallRequest, *, pending: ApprovalRecord | None
    ) -> tuple[bool, str]:
        """Route the approval, wait for the decision, apply it; return (approved, reason).

        If the requesting chat stops first (cancelled, timed out), the approval is recorded
        ``withdrawn``: no approval is left pending for a tool call that can no longer run.
        ``pending``: the approval was requested before a restart; wait for it again.
        """
        run = self.run
        if pending is not None:
            approval, routed_to = pending.request.approval, pending.request.routed_to
        else:
            approval = run.ids.numbered("approval")
            coordinator_chat = run.state.coordinator_chat()
            if ctx.agent.approved_by == "coordinator" and coordinator_chat not in (None, ctx.chat):
                routed_to = coordinator_chat
            else:
                routed_to = USER
        assert routed_to is not None
        decision = self._approvals.get(approval) or _Decision()
        self._approvals[approval] = decision
        resolved = False
        try:
            requested = (
                []
                if pending is not None
                else [
                    (
                        run.session,
                        ApprovalRequested(
                            approval=approval,
                            chat=ctx.chat,
                            turn_id=ctx.turn_id,
                            tool_call_id=request.tool_call_id,
                            tool_name=request.tool_name,
                            requested_by=ctx.agent.name,
                            routed_to=routed_to,
                            policy_scope=f"{ctx.agent.name}.needs_approval",
                            summary=summary(request),
                        ),
                    )
                ]
            )
            if requested:
                await run.recorder.record(requested)
            if routed_to != USER:
                # The team policy gives the coordinator this decision: it approves the tools
                # its team file lists under ``approves`` and denies the rest.
                coordinator = run.team.coordinator_agent
                decision.approved = coordinator.approves_tool(request.tool_name)
                decision.decided_by = routed_to
                decision.event.set()
            await decision.event.wait()
            if decision.approved:
                confirm: Action = ChatToolCallApprovedAction(
                    turn_id=ctx.turn_id,
                    tool_call_id=request.tool_call_id,
                    confirmed=ToolCallConfirmationReason.USER_ACTION,
                )
            else:
                confirm = ChatToolCallDeniedAction(
                    turn_id=ctx.turn_id,
                    tool_call_id=request.tool_call_id,
                    reason=ToolCallCancellationReason.DENIED,
                    reason_message=f"denied by {decision.decided_by}",
                )
            outcome = ApprovalDecision.APPROVED if decision.approved else ApprovalDecision.DENIED
            await run.recorder.record(
                [
                    (ctx.chat, confirm),
                    (
                        run.session,
                        ApprovalResolved(
                            approval=approval,
                            decision=outcome,
                            resolved_by=decision.decided_by,
                            principal=decision.principal,
                        ),
                    ),
                ]
            )
            resolved = True
        except BaseException as exc:
            if not resolved and approval in run.state.approvals and is_cancellation(exc):
                await run.record_cancelled(
                    [
                        (
                            run.session,
                            ApprovalResolved(
                                approval=approval,
                                decision=ApprovalDecision.WITHDRAWN,
                                resolved_by=ctx.chat,
                            ),
                        )
                    ]
                )
            raise
        finally:
            decision.applied.set()
            self._approvals.pop(approval, None)
        return decision.approved, f"{request.tool_name} was denied by {decision.decided_by}"

    async def ask(
        self, ctx: ChatContext, request: ToolCallRequest, *, resumed: bool = False
    ) -> ToolOutcome:
        """Put the call's question to the user and wait for the answer.

        ``resumed``: the call was recorded before a restart; a question it had put is
        still open and is waited for again, not put twice.
        """
        question = str(request.arguments.get("question", "")).strip() or "Please answer"
        kind = str(request.arguments.get("kind", "text"))
        options = [str(o) for o in request.arguments.get("options", ())]
        request_id = input_request_id(request.tool_call_id)
        asked = _question(kind, question, options)
        decision = self._inputs.get((ctx.chat, request_id)) or _Decision(question=asked)
        self._inputs[(ctx.chat, request_id)] = decision
        input_request = ChatInputRequest(id=request_id, message=question, questions=(asked,))
        turn = self.run.state.chats[ctx.chat].active_turn
        already_open = resumed and turn is not None and has_open_input(turn, request_id)
        try:
            if not already_open:
                await self.run.recorder.record(
                    [(ctx.chat, ChatInputRequestedAction(request=input_request))]
                )
            await decision.event.wait()
        finally:
            self._inputs.pop((ctx.chat, request_id), None)
        answers = None
        accepted = decision.response is ChatInputResponseKind.ACCEPT
        if accepted:
            assert decision.value is not None
            answers = {asked.id: ChatInputAnswered(state="submitted", value=decision.value)}
        completed = ChatInputCompletedAction(
            request_id=request_id, response=decision.response, answers=answers
        )
        output = (
            answer_text(decision.value)
            if accepted and decision.value is not None
            else f"the user chose to {decision.response}"
        )
        return await self.run.complete_tool_call(
            ctx, request, success=accepted, output=output, extra=[(ctx.chat, completed)]
        )


# ── questions and answers ────────────────────────────────────────────────────


def parse_answer(question: ChatInputQuestion, text: str) -> ChatInputAnswerValue:
    """``text`` (typed at a prompt, sent by a client) as an answer to ``question``.

    Raises :class:`ValueError` saying what the question expects. Options are matched by
    id or label, ignoring case; a multi-select answer lists them separated by commas.
    """
    stripped = text.strip()
    match question:
        case ChatInputBooleanQuestion():
            lowered = stripped.lower()
            if lowered in _YES or lowered in _NO:
                return ChatInputBooleanAnswerValue(value=lowered in _YES)
            raise ValueError(f"answer yes or no, not {stripped!r}")
        case ChatInputNumberQuestion():
            try:
                number = float(stripped)
            except ValueError:
                raise ValueError(f"answer a number, not {stripped!r}") from None
            if question.kind == "integer" and not number.is_integer():
                raise ValueError(f"answer a whole number, not {stripped!r}")
            return ChatInputNumberAnswerValue(value=int(number) if number.is_integer() else number)
        case ChatInputSingleSelectQuestion():
            return ChatInputSelectedAnswerValue(value=_option(question, stripped))
        case ChatInputMultiSelectQuestion():
            chosen = [part.strip() for part in stripped.split(",") if part.strip()]
            return ChatInputSelectedManyAnswerValue(
                value=tuple(_option(question, part) for part in chosen)
            )
        case _:
            return ChatInputTextAnswerValue(value=text.strip())


_YES: Final = frozenset({"y", "yes", "true", "1"})
_NO: Final = frozenset({"n", "no", "false", "0"})


def _option(
    question: ChatInputSingleSelectQuestion | ChatInputMultiSelectQuestion, text: str
) -> str:
    for option in question.options:
        if text.lower() in (option.id.lower(), option.label.lower()):
            return option.id
    if question.allow_freeform_input:
        return text
    offered = ", ".join(option.id for option in question.options)
    raise ValueError(f"choose from {offered}, not {text!r}")


def _question(kind: str, message: str, options: Sequence[str]) -> KnownChatInputQuestion:
    choices = tuple(ChatInputOption(id=o, label=o) for o in options)
    if kind == "boolean":
        return ChatInputBooleanQuestion(id="answer", message=message)
    if kind in ("number", "integer"):
        return ChatInputNumberQuestion(
            id="answer", message=message, kind="integer" if kind == "integer" else "number"
        )
    if kind == "single-select":
        return ChatInputSingleSelectQuestion(id="answer", message=message, options=choices)
    if kind == "multi-select":
        return ChatInputMultiSelectQuestion(id="answer", message=message, options=choices)
    return ChatInputTextQuestion(id="answer", message=message)


# ── what an approval request shows ───────────────────────────────────────────


def summary(request: ToolCallRequest) -> str:
    """A safe, short rendering of a tool input: no value longer than needed."""
    parts = [f"{k}={_short(v)}" for k, v in sorted(request.arguments.items())]
    text = ", ".join(parts)
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
