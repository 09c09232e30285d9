"""The team runtime: a session is a trio nursery, every chat a task in it.

Theory of operation
-------------------
Everything the runtime does becomes facts through one door,
:meth:`Recorder.record`: a batch of ``(channel, action)`` pairs is validated and
reduced against the current :class:`TeamState` (nothing changes yet), appended
to the fact log, committed to the state, and only then published on the bus.
A batch is all or nothing; it is how a spawn records the worker's ChatOrigin
and the parent tool call's subagent content together.

A turn of a chat is a loop of model rounds (see :mod:`orchestrator._backend`).
Each round's tool calls run in parallel in a nursery owned by the turn, so the
tree of trio tasks *is* the delegation tree: a ``delegate`` call runs its
worker chat inside its own task, under a cancel scope kept per chat. Cancelling
a worker cancels its subtree; cancelling the session cancels everything. Every
worker runs behind an error barrier: an exception in it is recorded (the
worker's turn ends in error, its task is reported ``failed``) and never reaches
its siblings. ``trio.Cancelled`` is never swallowed: the facts that say a turn
was cancelled are written in a shielded scope, then the cancellation goes on.

Delegations over the team's parallel budget wait on a :class:`trio.CapacityLimiter`
as ``queued`` tasks. Approvals and input requests park the tool call's task on
an event until :meth:`TeamRuntime.resolve_approval` / :meth:`TeamRuntime.answer_input`
is called (by the CLI prompt, a client, or the coordinator's policy).
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import attrs
import structlog
import trio

from ._ahp_actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    ChatUsageAction,
    SessionChatAddedAction,
)
from ._ahp_state import (
    ChatInputAnswered,
    ChatInputBooleanQuestion,
    ChatInputMultiSelectQuestion,
    ChatInputNumberQuestion,
    ChatInputOption,
    ChatInputQuestion,
    ChatInputRequest,
    ChatInputResponseKind,
    ChatInputSingleSelectQuestion,
    ChatInputTextAnswerValue,
    ChatInputTextQuestion,
    ChatInteractivity,
    ChatState,
    ChatSummary,
    ErrorInfo,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessageKind,
    ReasoningResponsePart,
    SessionStatus,
    SystemNotificationResponsePart,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
    ToolCallResult,
    ToolChatOrigin,
    ToolResultSubagentContent,
    ToolResultTextContent,
    UsageInfo,
    UserChatOrigin,
)
from ._backend import (
    Backend,
    ReasoningDelta,
    RoundContext,
    TextDelta,
    ToolCallRequest,
    ToolOutcome,
    UsageReport,
)
from ._bus import FactBus
from ._errors import RunError
from ._factlog import FactLog, MemoryFactLog
from ._facts import Action, Fact
from ._team_actions import (
    USER,
    ApprovalDecision,
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
from ._team_state import TeamState
from ._teamfile import AgentSpec, TeamSpec

__all__ = ["Ids", "Recorder", "RunOutcome", "TeamRuntime", "require_prompt", "utc_now"]

log = structlog.get_logger("orchestrator.runtime")

#: Tools the runtime itself implements; every other tool name is a plain tool.
TEAM_TOOLS = frozenset({"delegate", "handoff", "ask"})

#: Longest tool input shown in an approval request's summary.
SUMMARY_LIMIT = 160


def utc_now() -> str:
    """Now, as an ISO 8601 UTC timestamp with milliseconds (the AHP timestamp form)."""
    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def require_prompt(prompt: str) -> None:
    """Refuse a prompt that gives the coordinator nothing to do (:class:`RunError`)."""
    if not prompt.strip():
        raise RunError("the prompt is empty: tell the coordinator what to do")


class Ids:
    """Makes the ids of one run; ``deterministic=True`` numbers them (tests, examples)."""

    def __init__(self, *, deterministic: bool = False) -> None:
        self._deterministic = deterministic
        self._counters: dict[str, itertools.count[int]] = {}

    def _next(self, kind: str) -> int:
        return next(self._counters.setdefault(kind, itertools.count(1)))

    def _uuid(self, kind: str) -> str:
        if self._deterministic:
            return str(uuid.UUID(int=self._next(kind)))
        return str(uuid.uuid4())

    def session(self) -> str:
        return f"ahp-session:/{self._uuid('session')}"

    def chat(self) -> str:
        return f"ahp-chat:/{self._uuid('chat')}"

    def run(self) -> str:
        return f"run-{self._uuid('run')}"

    def numbered(self, kind: str) -> str:
        """``task-1``, ``turn-3``, ``approval-2``...: unique within the run."""
        return f"{kind}-{self._next(kind)}"


class Recorder:
    """The single door through which facts enter the world (see module docstring)."""

    def __init__(
        self,
        state: TeamState,
        factlog: FactLog,
        bus: FactBus,
        *,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self.state = state
        self.factlog = factlog
        self.bus = bus
        self.clock = clock
        self._lock = trio.Lock()

    async def record(self, actions: Sequence[tuple[str, Action]]) -> list[Fact]:
        """Validate, append, apply and publish ``actions`` as one batch.

        Raises :class:`IllegalTransitionError` (nothing recorded) for an action
        the current state refuses.
        """
        # Batches are prepared and appended one at a time, in order. Uncontended (the common
        # case: appends that do not block) the lock is taken without a trip through the
        # scheduler, which would cost more than the rest of recording a fact.
        try:
            self._lock.acquire_nowait()
        except trio.WouldBlock:
            await self._lock.acquire()
        try:
            now = self.clock()
            transition = self.state.prepare(actions, now=now)
            first = self.state.last_sequence + 1
            facts = [
                Fact(
                    sequence=first + offset,
                    session=self.state.session_uri,
                    channel=channel,
                    at=now,
                    action=action,
                )
                for offset, (channel, action) in enumerate(transition.actions)
            ]
            await self.factlog.append(facts)
            self.state.commit(transition, facts[-1].sequence)
            self.bus.publish_nowait(facts)
            return facts
        finally:
            self._lock.release()


@attrs.frozen(kw_only=True)
class RunOutcome:
    """How a run ended: its status, the coordinator's final answer or the error."""

    session: str
    status: RunStatus
    result: str = ""
    error: str = ""


class TurnFailedError(RunError):
    """A chat's turn ended in error (recorded as ``chat/error``)."""


@attrs.frozen
class _TurnResult:
    text: str
    input_tokens: int
    output_tokens: int


@attrs.define
class _Decision:
    """A parked approval or input request, woken when its answer arrives."""

    event: trio.Event = attrs.field(factory=trio.Event)
    approved: bool = False
    decided_by: str = USER
    answer: str = ""
    response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT


@attrs.define
class _ChatContext:
    """What a running chat's tool calls need to know about it."""

    chat: str
    agent: AgentSpec
    task: str
    turn_id: str = ""


BackendFactory = Callable[[AgentSpec], Backend]


class TeamRuntime:
    """Runs one team session: the coordinator, its workers, approvals and questions."""

    def __init__(
        self,
        team: TeamSpec,
        *,
        backends: BackendFactory,
        factlog: FactLog | None = None,
        bus: FactBus | None = None,
        ids: Ids | None = None,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self.team = team
        self.ids = ids or Ids()
        self.session = self.ids.session()
        self.state = TeamState(self.session)
        self.bus = bus or FactBus()
        self.recorder = Recorder(self.state, factlog or MemoryFactLog(), self.bus, clock=clock)
        self._backends = backends
        self._backend_cache: dict[str, Backend] = {}
        self._limiter = trio.CapacityLimiter(team.parallel_budget)
        self._scopes: dict[str, trio.CancelScope] = {}
        self._approvals: dict[str, _Decision] = {}
        self._inputs: dict[tuple[str, str], _Decision] = {}
        self._session_scope: trio.CancelScope | None = None
        self._wakeups: dict[str, trio.Event] = {}

    # ── the run ────────────────────────────────────────────────────────────

    async def run(
        self, prompt: str, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED
    ) -> RunOutcome:
        """Run the team on ``prompt`` until the coordinator's turn ends.

        ``task_status.started`` reports the session URI once the run's first
        facts are recorded, so ``await nursery.start(runtime.run, prompt)``
        returns when the session exists.
        """
        require_prompt(prompt)
        coordinator = self.team.agent(self.team.coordinator)
        chat = self.ids.chat()
        root_task = self.ids.numbered("task")
        run_id = self.ids.run()
        now = self.recorder.clock()
        await self.recorder.record(
            [
                (
                    self.session,
                    RunStarted(
                        run=run_id,
                        team=self.team.name,
                        topology=self.team.topology,
                        parallel_budget=self.team.parallel_budget,
                        coordinator=coordinator.name,
                        prompt=prompt,
                        task=root_task,
                    ),
                ),
                (self.session, _chat_added(chat, coordinator, prompt, None, now)),
                (
                    self.session,
                    MemberJoined(
                        chat=chat, agent=coordinator.name, role=coordinator.role, task=root_task
                    ),
                ),
            ]
        )
        task_status.started(self.session)
        log.info("run started", session=self.session, team=self.team.name, chat=chat)
        message = Message(text=prompt, origin=MessageOrigin(kind=MessageKind.USER))
        with trio.CancelScope() as scope:
            self._session_scope = scope
            self._scopes[chat] = scope
            try:
                result = await self._run_chat(_ChatContext(chat, coordinator, root_task), message)
            except TurnFailedError as exc:
                return await self._finish(run_id, RunStatus.FAILED, error=str(exc))
            except Exception as exc:
                log.exception("coordinator crashed", session=self.session, chat=chat)
                return await self._finish(
                    run_id, RunStatus.FAILED, error=f"internal error: {exc!r}"
                )
            except BaseException as exc:
                if is_cancellation(exc):
                    with trio.CancelScope(shield=True):
                        await self._finish(run_id, RunStatus.CANCELLED, error=CANCELLED)
                raise
            finally:
                self._scopes.pop(chat, None)
            return await self._finish(run_id, RunStatus.COMPLETED, result=result.text)
        # Only reached when cancel() cancelled the session scope, which absorbed the
        # cancellation after the run was recorded cancelled (above).
        return RunOutcome(session=self.session, status=RunStatus.CANCELLED, error=CANCELLED)

    async def _finish(
        self, run_id: str, status: RunStatus, *, result: str = "", error: str = ""
    ) -> RunOutcome:
        await self.recorder.record(
            [(self.session, RunFinished(run=run_id, status=status, result=result, error=error))]
        )
        log.info("run finished", session=self.session, status=str(status))
        return RunOutcome(session=self.session, status=status, result=result, error=error)

    # ── controls (from the CLI, clients, tests) ─────────────────────────────

    def cancel(self) -> None:
        """Cancel the whole team: every running turn ends cancelled, the run ``cancelled``."""
        if self._session_scope is not None:
            self._session_scope.cancel()

    def cancel_worker(self, chat: str) -> None:
        """Cancel one worker and its subtree; its task is reported ``killed``."""
        scope = self._scopes.get(chat)
        if scope is None or chat == self.state.coordinator_chat():
            raise RunError(f"no running worker chat {chat}")
        scope.cancel()

    async def resolve_approval(self, approval: str, *, approved: bool, by: str = USER) -> None:
        """Decide a pending approval; returns once the decision has been applied."""
        decision = self._approvals.get(approval)
        record = self.state.approvals.get(approval)
        if decision is None or record is None or record.decision is not None:
            raise RunError(f"no pending approval {approval!r}")
        if by != record.request.routed_to:
            raise RunError(
                f"approval {approval!r} is routed to {record.request.routed_to}, not to {by}"
            )
        decision.approved = approved
        decision.decided_by = by
        decision.event.set()
        await self._wait_resolved(approval)

    async def _wait_resolved(self, approval: str) -> None:
        event = self._wakeups.setdefault(f"approval:{approval}", trio.Event())
        await event.wait()

    async def answer_input(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None:
        """Answer (or decline/cancel) an open input request of ``chat``."""
        decision = self._inputs.get((chat, request_id))
        if decision is None or decision.event.is_set():
            raise RunError(f"no open input request {request_id!r} in {chat}")
        decision.answer = answer
        decision.response = response
        decision.event.set()

    async def steer(self, chat: str, text: str) -> None:
        """Inject a steering message into a running chat (read at its next model round)."""
        await self._set_pending(chat, text, PendingMessageKind.STEERING)

    async def queue(self, chat: str, text: str) -> None:
        """Queue a message that starts a new turn once the chat's current turn finishes."""
        await self._set_pending(chat, text, PendingMessageKind.QUEUED)

    async def _set_pending(self, chat: str, text: str, kind: PendingMessageKind) -> None:
        state = self.state.chats.get(chat)
        if state is None:
            raise RunError(f"no chat {chat} in session {self.session}")
        if chat not in self._scopes:
            raise RunError(f"chat {chat} is not running: it cannot take a {kind} message")
        message = Message(text=text, origin=MessageOrigin(kind=MessageKind.USER))
        await self.recorder.record(
            [
                (
                    chat,
                    ChatPendingMessageSetAction(
                        kind=kind, id=self.ids.numbered("message"), message=message
                    ),
                )
            ]
        )

    # ── chats and turns ──────────────────────────────────────────────────────

    def _backend(self, agent: AgentSpec) -> Backend:
        backend = self._backend_cache.get(agent.name)
        if backend is None:
            backend = self._backends(agent)
            self._backend_cache[agent.name] = backend
        return backend

    async def _run_chat(self, ctx: _ChatContext, message: Message) -> _TurnResult:
        """Run a turn for ``message``, then one per queued message, in order."""
        result = await self._run_turn(ctx, message, queued_id=None)
        while True:
            state = self.state.chats[ctx.chat]
            if not state.queued_messages:
                return result
            pending = state.queued_messages[0]
            result = await self._run_turn(ctx, pending.message, queued_id=pending.id)

    async def _run_turn(
        self, ctx: _ChatContext, message: Message, *, queued_id: str | None
    ) -> _TurnResult:
        turn_id = self.ids.numbered("turn")
        ctx.turn_id = turn_id
        chat = ctx.chat
        started = trio.current_time()
        await self.recorder.record(
            [
                (
                    chat,
                    ChatTurnStartedAction(
                        turn_id=turn_id,
                        started_at=self.recorder.clock(),
                        message=message,
                        queued_message_id=queued_id,
                    ),
                )
            ]
        )
        backend = self._backend(ctx.agent)
        round_index = 0
        outcomes: tuple[ToolOutcome, ...] = ()
        input_tokens = output_tokens = 0
        text = ""
        try:
            while True:
                await self._consume_steering(chat)
                context = RoundContext(
                    chat=chat,
                    agent=ctx.agent.name,
                    task=message.text,
                    round_index=round_index,
                    history=conversation(self.state.chats[chat]),
                    outcomes=outcomes,
                )
                requests, round_text, usage = await self._stream_round(ctx, backend, context)
                text = round_text or text
                if usage is not None:
                    input_tokens += usage.input_tokens
                    output_tokens += usage.output_tokens
                if not requests:
                    break
                results: list[ToolOutcome | None] = [None] * len(requests)
                async with trio.open_nursery() as nursery:
                    for index, request in enumerate(requests):
                        nursery.start_soon(self._run_tool, ctx, request, results, index)
                outcomes = tuple(r for r in results if r is not None)
                round_index += 1
        except Exception as exc:
            if is_cancellation(exc):  # pragma: no cover - Cancelled is not an Exception
                raise
            log.warning("turn failed", chat=chat, agent=ctx.agent.name, error=str(exc))
            await self.recorder.record(
                [
                    (
                        chat,
                        ChatErrorAction(
                            turn_id=turn_id,
                            duration=_ms(started),
                            error=ErrorInfo(error_type=type(exc).__name__, message=str(exc)),
                        ),
                    )
                ]
            )
            raise TurnFailedError(f"{ctx.agent.name}: {exc}") from exc
        except BaseException as exc:
            # Cancelled, possibly grouped by the tool calls' nursery: say so, then go on.
            if is_cancellation(exc):
                with trio.CancelScope(shield=True):
                    await self.recorder.record(
                        [(chat, ChatTurnCancelledAction(turn_id=turn_id, duration=_ms(started)))]
                    )
            raise
        await self.recorder.record(
            [(chat, ChatTurnCompleteAction(turn_id=turn_id, duration=_ms(started)))]
        )
        return _TurnResult(text=text, input_tokens=input_tokens, output_tokens=output_tokens)

    async def _consume_steering(self, chat: str) -> None:
        steering = self.state.chats[chat].steering_message
        if steering is not None:
            await self.recorder.record(
                [
                    (
                        chat,
                        ChatPendingMessageRemovedAction(
                            kind=PendingMessageKind.STEERING, id=steering.id
                        ),
                    )
                ]
            )

    async def _stream_round(
        self, ctx: _ChatContext, backend: Backend, context: RoundContext
    ) -> tuple[list[ToolCallRequest], str, UsageReport | None]:
        """Turn one model round into facts; return its tool calls, text and usage."""
        chat, turn_id = ctx.chat, ctx.turn_id
        requests: list[ToolCallRequest] = []
        usage: UsageReport | None = None
        open_part: tuple[str, str] | None = None  # (kind, part id) being appended to
        text_parts: list[str] = []
        async for event in backend.stream_round(context):
            match event:
                # A new part carries its first chunk; later chunks append to it.
                case TextDelta(text=chunk):
                    text_parts.append(chunk)
                    action: Action
                    if open_part is None or open_part[0] != "markdown":
                        open_part = ("markdown", self.ids.numbered("part"))
                        part = MarkdownResponsePart(id=open_part[1], content=chunk)
                        action = ChatResponsePartAction(turn_id=turn_id, part=part)
                    else:
                        action = ChatDeltaAction(
                            turn_id=turn_id, part_id=open_part[1], content=chunk
                        )
                    await self.recorder.record([(chat, action)])
                case ReasoningDelta(text=chunk):
                    if open_part is None or open_part[0] != "reasoning":
                        open_part = ("reasoning", self.ids.numbered("part"))
                        reasoning = ReasoningResponsePart(id=open_part[1], content=chunk)
                        action = ChatResponsePartAction(turn_id=turn_id, part=reasoning)
                    else:
                        action = ChatReasoningAction(
                            turn_id=turn_id, part_id=open_part[1], content=chunk
                        )
                    await self.recorder.record([(chat, action)])
                case ToolCallRequest():
                    open_part = None
                    await self._start_tool_call(ctx, event)
                    requests.append(event)
                case UsageReport():
                    usage = event
        if usage is not None:
            await self.recorder.record(
                [
                    (
                        chat,
                        ChatUsageAction(
                            turn_id=turn_id,
                            usage=UsageInfo(
                                input_tokens=usage.input_tokens, output_tokens=usage.output_tokens
                            ),
                        ),
                    )
                ]
            )
        return requests, "".join(text_parts), usage

    async def _start_tool_call(self, ctx: _ChatContext, request: ToolCallRequest) -> None:
        """Record a requested tool call up to ``running`` or ``pending-confirmation``.

        The input is complete when a backend hands the call over, so it goes straight into
        ``chat/toolCallReady`` (``chat/toolCallDelta`` is for input that streams in).
        """
        arguments = json.dumps(request.arguments, sort_keys=True, ensure_ascii=False)
        needs_approval = ctx.agent.needs_approval_for(request.tool_name)
        await self.recorder.record(
            [
                (
                    ctx.chat,
                    ChatToolCallStartAction(
                        turn_id=ctx.turn_id,
                        tool_call_id=request.tool_call_id,
                        tool_name=request.tool_name,
                        display_name=_display_name(request),
                    ),
                ),
                (
                    ctx.chat,
                    ChatToolCallReadyAction(
                        turn_id=ctx.turn_id,
                        tool_call_id=request.tool_call_id,
                        invocation_message=_invocation(request),
                        tool_input=arguments,
                        confirmation_title=f"Run {request.tool_name}" if needs_approval else None,
                        confirmed=None if needs_approval else ToolCallConfirmationReason.NOT_NEEDED,
                    ),
                ),
            ]
        )

    # ── tools ────────────────────────────────────────────────────────────────

    async def _run_tool(
        self,
        ctx: _ChatContext,
        request: ToolCallRequest,
        results: list[ToolOutcome | None],
        index: int,
    ) -> None:
        """Run one tool call to completion, recording its result; never raises but Cancelled."""
        tool = request.tool_name
        try:
            if ctx.agent.needs_approval_for(tool):
                approved, reason = await self._await_approval(ctx, request)
                if not approved:
                    results[index] = ToolOutcome(
                        tool_call_id=request.tool_call_id,
                        tool_name=tool,
                        success=False,
                        output=reason,
                    )
                    return
            if tool == "delegate":
                outcome = await self._delegate(ctx, request)
            elif tool == "handoff":
                outcome = await self._handoff(ctx, request)
            elif tool == "ask":
                outcome = await self._ask(ctx, request)
            else:
                outcome = await self._plain_tool(ctx, request)
        except RunError as exc:
            # A refused call (unknown agent, tool not allowed...) ends as a failed tool call.
            outcome = await self._complete(ctx, request, success=False, output=str(exc))
        results[index] = outcome

    async def _complete(
        self,
        ctx: _ChatContext,
        request: ToolCallRequest,
        *,
        success: bool,
        output: str,
        extra: Sequence[tuple[str, Action]] = (),
        content_before: Sequence[ToolResultSubagentContent] = (),
    ) -> ToolOutcome:
        result = ToolCallResult(
            success=success,
            past_tense_message=f"{'Ran' if success else 'Failed'} {request.tool_name}",
            content=(*content_before, ToolResultTextContent(text=output)),
        )
        await self.recorder.record(
            [
                *extra,
                (
                    ctx.chat,
                    ChatToolCallCompleteAction(
                        turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, result=result
                    ),
                ),
            ]
        )
        return ToolOutcome(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            success=success,
            output=output,
        )

    async def _plain_tool(self, ctx: _ChatContext, request: ToolCallRequest) -> ToolOutcome:
        if request.tool_name not in ctx.agent.tools:
            raise RunError(f"agent {ctx.agent.name!r} has no tool {request.tool_name!r}")
        await trio.lowlevel.checkpoint()
        return await self._complete(
            ctx, request, success=True, output=ctx.agent.tool_result(request.tool_name)
        )

    async def _await_approval(
        self, ctx: _ChatContext, request: ToolCallRequest
    ) -> tuple[bool, str]:
        """Route the approval, wait for the decision, apply it; return (approved, reason)."""
        approval = self.ids.numbered("approval")
        coordinator_chat = self.state.coordinator_chat()
        if ctx.agent.approved_by == "coordinator" and coordinator_chat not in (None, ctx.chat):
            routed_to = coordinator_chat
        else:
            routed_to = USER
        assert routed_to is not None
        decision = _Decision()
        self._approvals[approval] = decision
        await self.recorder.record(
            [
                (
                    self.session,
                    ApprovalRequested(
                        approval=approval,
                        chat=ctx.chat,
                        turn_id=ctx.turn_id,
                        tool_call_id=request.tool_call_id,
                        tool_name=request.tool_name,
                        requested_by=ctx.agent.name,
                        routed_to=routed_to,
                        policy_scope=f"{ctx.agent.name}.needs_approval",
                        summary=_summary(request),
                    ),
                )
            ]
        )
        if routed_to != USER:
            # The team policy grants the coordinator this decision: it approves
            # the tools its own team file declared, recorded as its decision.
            decision.approved = True
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
        await self.recorder.record(
            [
                (ctx.chat, confirm),
                (
                    self.session,
                    ApprovalResolved(
                        approval=approval,
                        decision=ApprovalDecision.APPROVED
                        if decision.approved
                        else ApprovalDecision.DENIED,
                        resolved_by=decision.decided_by,
                    ),
                ),
            ]
        )
        self._wakeups.setdefault(f"approval:{approval}", trio.Event()).set()
        return decision.approved, f"{request.tool_name} was denied by {decision.decided_by}"

    async def _ask(self, ctx: _ChatContext, request: ToolCallRequest) -> ToolOutcome:
        question = str(request.arguments.get("question", "")).strip() or "Please answer"
        kind = str(request.arguments.get("kind", "text"))
        options = [str(o) for o in request.arguments.get("options", ())]
        request_id = self.ids.numbered("input")
        decision = _Decision()
        self._inputs[(ctx.chat, request_id)] = decision
        input_request = ChatInputRequest(
            id=request_id,
            message=question,
            questions=(_question(kind, question, options),),
        )
        await self.recorder.record([(ctx.chat, ChatInputRequestedAction(request=input_request))])
        await decision.event.wait()
        answers = None
        if decision.response is ChatInputResponseKind.ACCEPT:
            answers = {
                "answer": ChatInputAnswered(
                    state="submitted", value=ChatInputTextAnswerValue(value=decision.answer)
                )
            }
        completed = ChatInputCompletedAction(
            request_id=request_id, response=decision.response, answers=answers
        )
        accepted = decision.response is ChatInputResponseKind.ACCEPT
        output = decision.answer if accepted else f"the user chose to {decision.response}"
        return await self._complete(
            ctx, request, success=accepted, output=output, extra=[(ctx.chat, completed)]
        )

    async def _delegate(self, ctx: _ChatContext, request: ToolCallRequest) -> ToolOutcome:
        target = str(request.arguments.get("agent", ""))
        task_text = str(request.arguments.get("task", "")).strip()
        if target not in ctx.agent.delegates_to:
            allowed = ", ".join(ctx.agent.delegates_to) or "nobody"
            raise RunError(f"{ctx.agent.name} may not delegate to {target!r} (allowed: {allowed})")
        if not task_text:
            raise RunError("delegate needs a non-empty task")
        worker = self.team.agent(target)
        task = self.ids.numbered("task")
        created = TaskCreated(
            task=task,
            title=task_text,
            agent=worker.name,
            requested_by=ctx.chat,
            tool_call_id=request.tool_call_id,
            parent_task=ctx.task,
            status=TaskStatus.QUEUED,
        )
        queued = self._limiter.available_tokens == 0
        if queued:
            await self.recorder.record([(self.session, created)])
            log.info(
                "delegation queued", task=task, agent=worker.name, budget=self.team.parallel_budget
            )
        async with self._limiter:
            worker_chat = self.ids.chat()
            subagent = ToolResultSubagentContent(
                resource=worker_chat, title=task_text, agent_name=worker.name
            )
            spawn: list[tuple[str, Action]] = []
            if not queued:
                spawn.append((self.session, attrs.evolve(created, status=TaskStatus.RUNNING)))
            spawn += [
                (
                    self.session,
                    _chat_added(
                        worker_chat,
                        worker,
                        task_text,
                        ToolChatOrigin(chat=ctx.chat, tool_call_id=request.tool_call_id),
                        self.recorder.clock(),
                    ),
                ),
                (
                    self.session,
                    MemberJoined(chat=worker_chat, agent=worker.name, role=worker.role, task=task),
                ),
                (
                    ctx.chat,
                    ChatToolCallContentChangedAction(
                        turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, content=(subagent,)
                    ),
                ),
                (self.session, TaskStarted(task=task, chat=worker_chat)),
            ]
            await self.recorder.record(spawn)
            status, summary, usage, duration = await self._supervise_worker(
                _ChatContext(worker_chat, worker, task), task_text, own_task=True
            )
        finished = TaskFinished(
            task=task,
            status=status,
            summary=summary,
            duration_ms=duration,
            input_tokens=usage[0],
            output_tokens=usage[1],
            chat=worker_chat,
        )
        notification = SystemNotificationResponsePart(
            content=f"{worker.name} {status}: {_first_line(summary)}",
            meta={"workerNotification": {"task": task, "chat": worker_chat, "status": str(status)}},
        )
        return await self._complete(
            ctx,
            request,
            success=status is TaskStatus.COMPLETED,
            output=f"[{worker.name}, {status}] {summary}",
            content_before=(subagent,),
            extra=[
                (self.session, finished),
                (ctx.chat, ChatResponsePartAction(turn_id=ctx.turn_id, part=notification)),
            ],
        )

    async def _supervise_worker(
        self, ctx: _ChatContext, task_text: str, *, own_task: bool
    ) -> tuple[TaskStatus, str, tuple[int, int], int]:
        """Run a worker chat behind its error barrier, timeout and cancel scope.

        ``own_task``: the worker owns ``ctx.task`` (a delegation), so a
        cancellation from above (the whole team) records that task ``killed``.
        """
        started = trio.current_time()
        status = TaskStatus.COMPLETED
        summary = ""
        usage = (0, 0)
        message = Message(text=task_text, origin=MessageOrigin(kind=MessageKind.TOOL))
        timeout = ctx.agent.timeout
        with trio.CancelScope() as scope:
            self._scopes[ctx.chat] = scope
            deadline = trio.move_on_after(timeout) if timeout is not None else nullcontext()
            with structlog.contextvars.bound_contextvars(chat=ctx.chat, agent=ctx.agent.name):
                try:
                    with deadline as timer:
                        result = await self._run_chat(ctx, message)
                        summary = result.text
                        usage = (result.input_tokens, result.output_tokens)
                    if timer is not None and timer.cancelled_caught:
                        status = TaskStatus.FAILED
                        summary = f"timed out after {_seconds(timeout)}"
                except TurnFailedError as exc:
                    status, summary = TaskStatus.FAILED, str(exc.__cause__ or exc)
                except Exception as exc:  # the error barrier of one worker
                    log.exception("worker crashed", chat=ctx.chat)
                    status, summary = TaskStatus.FAILED, f"internal error: {exc!r}"
                except BaseException as exc:
                    if own_task and is_cancellation(exc) and not scope.cancel_called:
                        # Cancelled from above: the team is going down; report the task.
                        self._scopes.pop(ctx.chat, None)
                        with trio.CancelScope(shield=True):
                            await self.recorder.record([(self.session, self._killed(ctx, started))])
                    raise
        self._scopes.pop(ctx.chat, None)
        if scope.cancelled_caught:
            status, summary = TaskStatus.KILLED, CANCELLED
        return status, summary, usage, int((trio.current_time() - started) * 1000)

    def _killed(self, ctx: _ChatContext, started: float) -> TaskFinished:
        return TaskFinished(
            task=ctx.task,
            status=TaskStatus.KILLED,
            summary=CANCELLED,
            duration_ms=int((trio.current_time() - started) * 1000),
            chat=ctx.chat,
        )

    async def _handoff(self, ctx: _ChatContext, request: ToolCallRequest) -> ToolOutcome:
        target = str(request.arguments.get("agent", ""))
        reason = str(request.arguments.get("reason", "")).strip() or "handoff"
        resume = str(request.arguments.get("resume", "")).strip() or ctx.agent.name
        if target not in ctx.agent.delegates_to:
            allowed = ", ".join(ctx.agent.delegates_to) or "nobody"
            raise RunError(f"{ctx.agent.name} may not hand off to {target!r} (allowed: {allowed})")
        specialist = self.team.agent(target)
        specialist_chat = self.ids.chat()
        subagent = ToolResultSubagentContent(
            resource=specialist_chat, title=reason, agent_name=specialist.name
        )
        task_title = self.state.tasks[ctx.task].title
        await self.recorder.record(
            [
                (
                    self.session,
                    _chat_added(
                        specialist_chat,
                        specialist,
                        task_title,
                        ToolChatOrigin(chat=ctx.chat, tool_call_id=request.tool_call_id),
                        self.recorder.clock(),
                    ),
                ),
                (
                    self.session,
                    MemberJoined(
                        chat=specialist_chat,
                        agent=specialist.name,
                        role=specialist.role,
                        task=ctx.task,
                    ),
                ),
                (
                    ctx.chat,
                    ChatToolCallContentChangedAction(
                        turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, content=(subagent,)
                    ),
                ),
                (
                    self.session,
                    HandoffRecorded(
                        task=ctx.task,
                        from_chat=ctx.chat,
                        to_chat=specialist_chat,
                        to_agent=specialist.name,
                        reason=reason,
                        resume_target=resume,
                        tool_call_id=request.tool_call_id,
                    ),
                ),
            ]
        )
        status, summary, _usage, _duration = await self._supervise_worker(
            _ChatContext(specialist_chat, specialist, ctx.task),
            f"{task_title}\n\n({reason})",
            own_task=False,
        )
        back = (
            self.session,
            HandoffRecorded(
                task=ctx.task,
                from_chat=specialist_chat,
                to_chat=ctx.chat,
                to_agent=ctx.agent.name,
                reason=f"{specialist.name} {status}",
                resume_target=resume,
                tool_call_id=request.tool_call_id,
            ),
        )
        return await self._complete(
            ctx,
            request,
            success=status is TaskStatus.COMPLETED,
            output=f"[{specialist.name}, {status}] {summary}",
            content_before=(subagent,),
            extra=[back],
        )


# ── helpers ──────────────────────────────────────────────────────────────────

CANCELLED = "cancelled"


def is_cancellation(exc: BaseException) -> bool:
    """True for ``trio.Cancelled``, or a group (from a nursery) holding only cancellations."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(is_cancellation(inner) for inner in exc.exceptions)
    return False


def conversation(chat: ChatState) -> tuple[tuple[str, str], ...]:
    """The chat's conversation as (role, text) pairs, derived from its state."""
    history: list[tuple[str, str]] = []
    turns = list(chat.turns)
    for turn in turns:
        history.append(("user", turn.message.text))
        text = "".join(
            p.content for p in turn.response_parts if isinstance(p, MarkdownResponsePart)
        )
        if text:
            history.append(("assistant", text))
    if chat.active_turn is not None:
        history.append(("user", chat.active_turn.message.text))
    return tuple(history)


def _chat_added(
    chat: str, agent: AgentSpec, title: str, origin: ToolChatOrigin | None, now: str
) -> SessionChatAddedAction:
    return SessionChatAddedAction(
        summary=ChatSummary(
            resource=chat,
            title=f"{agent.name}: {_first_line(title)}",
            status=SessionStatus.IDLE,
            modified_at=now,
            origin=origin or UserChatOrigin(),
            interactivity=ChatInteractivity(agent.interactivity),
        )
    )


def _question(kind: str, message: str, options: Sequence[str]) -> ChatInputQuestion:
    choices = tuple(ChatInputOption(id=o, label=o) for o in options)
    if kind == "boolean":
        return ChatInputBooleanQuestion(id="answer", message=message)
    if kind in ("number", "integer"):
        return ChatInputNumberQuestion(id="answer", message=message, kind=kind)  # type: ignore[arg-type]
    if kind == "single-select":
        return ChatInputSingleSelectQuestion(id="answer", message=message, options=choices)
    if kind == "multi-select":
        return ChatInputMultiSelectQuestion(id="answer", message=message, options=choices)
    return ChatInputTextQuestion(id="answer", message=message)


def _display_name(request: ToolCallRequest) -> str:
    if request.tool_name == "delegate":
        return f"Delegate to {request.arguments.get('agent', '?')}"
    if request.tool_name == "handoff":
        return f"Hand off to {request.arguments.get('agent', '?')}"
    if request.tool_name == "ask":
        return "Ask the user"
    return request.tool_name.replace("_", " ").capitalize()


def _invocation(request: ToolCallRequest) -> str:
    if request.tool_name == "delegate":
        return f"{request.arguments.get('agent', '?')}: {request.arguments.get('task', '')}"
    if request.tool_name == "ask":
        return str(request.arguments.get("question", ""))
    return f"{request.tool_name}({_summary(request)})"


def _summary(request: ToolCallRequest) -> str:
    """A safe, short rendering of a tool input: no value longer than needed."""
    parts = [f"{k}={_short(v)}" for k, v in sorted(request.arguments.items())]
    text = ", ".join(parts)
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: str, limit: int = 120) -> str:
    stripped = text.strip()
    line = stripped.splitlines()[0] if stripped else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _ms(started: float) -> float:
    return round((trio.current_time() - started) * 1000, 3)


def _seconds(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "no limit"
    return f"{value:g}s"
