"""The turn loop: a chat's turns and their model rounds.

Theory of operation
-------------------
A chat runs a turn for its first message, then one per queued message, in order
(:meth:`Turns.run_chat`). A conversation's coordinator waits, idle, for the next one until
the run is closed (:meth:`Turns.converse`). A turn is a loop of model rounds (see
:mod:`orchestrator.core._model_round`). Each round's stream becomes facts as it comes
(:meth:`Turns._stream_round`). Its tool calls then run in parallel in a nursery owned by the
turn. What happens to a tool call, from its request to its result, is
:class:`~orchestrator.runtime._tool_calls.ToolCalls`': checked against its schema as it is
recorded, gated, delegated or run. ``delegate`` and ``handoff`` run another agent's chat
(:mod:`orchestrator.runtime._delegation`). That chat's turns run through this loop again.

An agent with an ``output_schema`` ends its turn only with an answer that fits it
(:func:`~orchestrator.spec.check_answer`): the first that does not is kept as it streamed, and
the model is asked again in the next round of the same turn, told where and what was wrong (a
system-notification part the model reads as a user message). A second that does not fit fails
the turn with :class:`~orchestrator.base.OutputSchemaError`. The parsed value goes with the
turn's result: into the task's ``team/taskFinished`` and the run's ``team/runFinished``.

``trio.Cancelled`` is never swallowed: the facts that say a turn was cancelled are written
in a shielded scope (:meth:`RunContext.record_cancelled`), then the cancellation goes on. A
turn that fails records ``chat/error`` and raises :class:`TurnFailedError`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Final

import structlog
import trio

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatPendingMessageSetAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    ChatUsageAction,
)
from orchestrator.ahp.state import (
    ErrorInfo,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessageKind,
    SystemNotificationResponsePart,
    TurnState,
    UsageInfo,
)
from orchestrator.base import RunError
from orchestrator.core import (
    INTERRUPTED_SUMMARY,
    PRINCIPAL_META,
    Action,
    Backend,
    Conversation,
    Conversations,
    Notice,
    ReasoningDelta,
    RemoteBackend,
    ResumePoint,
    RoundContext,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolOutcome,
    UsageReport,
    is_interrupted,
    output_retry,
    prompt_title,
    resume_point,
    steering_injected,
    turn_text,
)
from orchestrator.spec import AgentSpec, Answer, RestartPolicy, check_answer, retry_prompt

from ._approvals import Approvals
from ._context import (
    CANCELLED,
    ChatContext,
    RunContext,
    TurnFailedError,
    TurnResult,
    is_cancellation,
)
from ._delegation import Delegation
from ._recorder import PendingBatch
from ._stream_writer import open_stream_writer
from ._tool_calls import ToolCalls
from ._tracing import in_span
from .tools import ResolvedPythonTool

__all__ = [
    "BackendFactory",
]

log = structlog.get_logger("orchestrator.runtime")

BackendFactory = Callable[[AgentSpec], Backend]


class Turns:
    """The turn loop of one run's chats; their tool calls are :attr:`tool_calls`'."""

    def __init__(
        self,
        run: RunContext,
        approvals: Approvals,
        backends: BackendFactory,
        *,
        python_tools: Mapping[str, ResolvedPythonTool] | None = None,
    ) -> None:
        self.run = run
        # A worker's chat runs its turns through this loop too: delegation recurses here.
        self.delegation = Delegation(run, run_chat=self.run_chat)
        self.tool_calls = ToolCalls(run, approvals, self.delegation, python_tools=python_tools)
        self._backends = backends
        self._backend_cache: dict[str, Backend] = {}
        # Chats that take steering and queued messages: from their first turn until they
        # decide, with the recorder held, that no queued message is left (see run_chat).
        self._open_chats: set[str] = set()
        # Each running chat's conversation, extended turn by turn (not made again from every
        # turn at each round); let go of when the chat's turns are done.
        self._conversations = Conversations()
        self._closing = False
        self._prompted = trio.Event()  # a conversation's idle coordinator waits on it
        self._turn_scopes: dict[str, trio.CancelScope] = {}  # a conversation's current turn
        # The traceparent each queued prompt came with, by message id, until its turn records
        # it on the prompt's root task (see TeamRuntime.queue).
        self.trace_parents: dict[str, str] = {}
        # A side chat's context: its source's conversation, read by its model before its own
        # turns (see _chat_forks), by chat.
        self.side_contexts: dict[str, tuple[tuple[str, str], ...]] = {}

    # ── controls ─────────────────────────────────────────────────────────────

    def close(self) -> None:
        """End a conversation (see :meth:`TeamRuntime.close`)."""
        self._closing = True
        self._prompted.set()

    def cancel_turn(self, chat: str) -> None:
        """Cancel the running turn of a conversation's coordinator, or of a forked chat or
        side chat; the run goes on."""
        scope = self._turn_scopes.get(chat)
        if scope is None:
            raise RunError(f"no running turn in {chat}")
        scope.cancel()

    async def set_pending(
        self,
        chat: str,
        text: str,
        kind: PendingMessageKind,
        *,
        message_id: str | None = None,
        principal: str | None = None,
    ) -> str:
        """Give a running chat a steering or queued message (see :meth:`TeamRuntime.steer`,
        :meth:`TeamRuntime.queue`); return the message's id (``message_id``, or a new one).
        ``principal``, who sent it when known, is kept in the message's ``_meta``."""
        state = self.run.state.chats.get(chat)
        if state is None:
            raise RunError(f"no chat {chat} in session {self.run.session}")

        def still_open() -> None:
            # Checked in the same atomic step as the batch's submission: a chat that is
            # closing either sees this message (and runs it) or has closed, never neither.
            if chat not in self._open_chats:
                raise RunError(f"chat {chat} is not running: it cannot take a {kind} message")

        message = Message(
            text=text,
            origin=MessageOrigin(kind=MessageKind.USER),
            meta=None if principal is None else {PRINCIPAL_META: principal},
        )
        message_id = message_id or self.run.ids.numbered("message")
        await self.run.recorder.record(
            [(chat, ChatPendingMessageSetAction(kind=kind, id=message_id, message=message))],
            guard=still_open,
        )
        if kind is PendingMessageKind.QUEUED:
            self._prompted.set()  # an idle conversation takes it up now
        return message_id

    def is_open(self, chat: str) -> bool:
        """Whether ``chat``'s turns run (it takes steering and queued messages)."""
        return chat in self._open_chats

    def mark_open(self, chat: str) -> None:
        """``chat`` takes queued messages from now, before its :meth:`run_chat` starts."""
        self._open_chats.add(chat)

    async def set_queued(self, chat: str, text: str) -> str:
        """Queue ``text`` to a running chat (:meth:`set_pending`, queued)."""
        return await self.set_pending(chat, text, PendingMessageKind.QUEUED)

    def _history(self, chat: str) -> Conversation:
        """What ``chat``'s model reads of its conversation: a side chat's context first."""
        own = self._conversations.of(self.run.state.chats[chat])
        context = self.side_contexts.get(chat)
        if not context:
            return own
        pairs = [*context, *own]
        return Conversation(
            pairs,
            len(pairs),
            (),
            users=own.users + sum(1 for role, _ in context if role == "user"),
            characters=own.characters + sum(len(text) for _, text in context),
            interrupted=own.interrupted,
        )

    def _backend(self, agent: AgentSpec) -> Backend:
        backend = self._backend_cache.get(agent.name)
        if backend is None:
            backend = self._backends(agent)
            self._backend_cache[agent.name] = backend
        return backend

    async def run_chat(
        self,
        ctx: ChatContext,
        message: Message | None,
        *,
        resume: bool = False,
        begun: Sequence[tuple[str, Action]] = (),
        own_turns: bool = False,
    ) -> TurnResult:
        """Run a turn for ``message``, then one per queued message, in order.

        Args:
            ctx: The chat, its agent and task.
            message: The first turn's message (None: only the queued messages' turns).
            resume: The chat exists from before a restart; take it up where it stood
                (:meth:`_resume_turn`) instead of starting with ``message``.
            begun: Facts recorded with the first turn's start (a review round's request:
                see ``_reviewing``).
            own_turns: Each turn may be cancelled alone (:meth:`cancel_turn`), and a turn
                that fails or is cancelled ends itself only: the next queued message runs
                (a forked chat's or side chat's turns, see ``_chat_forks``).
        """
        self._open_chats.add(ctx.chat)
        result = TurnResult(text="", input_tokens=0, output_tokens=0)
        first = True
        try:
            while True:
                if first and message is None:
                    first = False  # no first turn: the queued messages' turns
                    continue
                if first:
                    assert message is not None
                    first = False
                    if resume:
                        turn = self._resume_turn(ctx, message)
                    else:
                        turn = self._run_turn(ctx, message, queued_id=None, begun=begun)
                else:
                    # No await between this check and closing: a queued message submitted
                    # before it is seen here (in flight or durable) and run; one submitted
                    # after finds the chat closed (see set_pending's guard).
                    latest = self.run.state.latest_chat(ctx.chat)
                    queued = latest.queued_messages if latest is not None else None
                    if not queued:
                        self._open_chats.discard(ctx.chat)
                        return result
                    turn = self._run_turn(ctx, queued[0].message, queued_id=queued[0].id)
                if not own_turns:
                    result = await turn
                    continue
                with trio.CancelScope() as scope:
                    self._turn_scopes[ctx.chat] = scope
                    try:
                        result = await turn
                    except TurnFailedError as exc:
                        log.info("turn failed", chat=ctx.chat, error=str(exc))
                    finally:
                        del self._turn_scopes[ctx.chat]
        finally:
            self._open_chats.discard(ctx.chat)
            self._conversations.forget(ctx.chat)

    async def converse(
        self, ctx: ChatContext, message: Message, *, resume: bool = False
    ) -> TurnResult:
        """A conversation's coordinator: a turn for ``message``, then one per queued
        message, waiting for the next while idle, until :meth:`close`.

        A turn that fails or is cancelled by :meth:`cancel_turn` ends itself only (its facts
        say how); the answer of the run is that of its last completed turn.
        """
        self._open_chats.add(ctx.chat)
        result = TurnResult(text="", input_tokens=0, output_tokens=0)
        first = True
        try:
            while True:
                resumed = False
                if first:
                    first = False
                    resumed = resume
                    turn = (
                        self._resume_turn(ctx, message, prompt_task=ctx.task)
                        if resume
                        else self._run_turn(ctx, message, queued_id=None, prompt_task=ctx.task)
                    )
                else:
                    # As in run_chat: no await between this check and closing.
                    latest = self.run.state.latest_chat(ctx.chat)
                    queued = latest.queued_messages if latest is not None else None
                    if not queued:
                        if self._closing:
                            return result
                        self._prompted = trio.Event()
                        await self._prompted.wait()
                        continue
                    # Each prompt is its own root task, begun with its turn (one batch).
                    ctx.task = self.run.ids.numbered("task")
                    begun: list[tuple[str, Action]] = [
                        (
                            self.run.session,
                            TaskCreated(
                                task=ctx.task,
                                title=prompt_title(queued[0].message.text),
                                agent=ctx.agent.name,
                                status=TaskStatus.RUNNING,
                                trace_parent=self.trace_parents.pop(queued[0].id, None),
                            ),
                        ),
                        (self.run.session, TaskStarted(task=ctx.task, chat=ctx.chat)),
                    ]
                    turn = self._run_turn(
                        ctx,
                        queued[0].message,
                        queued_id=queued[0].id,
                        begun=begun,
                        prompt_task=ctx.task,
                    )
                with trio.CancelScope() as scope:
                    self._turn_scopes[ctx.chat] = scope
                    try:
                        result = await turn
                    except TurnFailedError as exc:
                        log.info("conversation turn failed", chat=ctx.chat, error=str(exc))
                    finally:
                        del self._turn_scopes[ctx.chat]
                if resumed:
                    await self._end_answered_prompt(ctx)
        finally:
            self._open_chats.discard(ctx.chat)
            self._conversations.forget(ctx.chat)

    async def _end_answered_prompt(self, ctx: ChatContext) -> None:
        """End the root task of a prompt whose turn ended before this process took the
        conversation up, if no fact ended it.

        A session recorded before each prompt was its own root task has such tasks. Its
        coordinator is idle from here on, as the turn's end says."""
        task = self.run.state.tasks.get(ctx.task)
        chat = self.run.state.chats.get(ctx.chat)
        if task is None or task.status is not TaskStatus.RUNNING or chat is None:
            return
        if chat.active_turn is not None or not chat.turns:
            return
        last = chat.turns[-1]
        status, summary = _PROMPT_END.get(last.state, TaskStatus.FAILED), ""
        value = None
        if last.state is TurnState.COMPLETE:
            summary = turn_text(last)
            value = _value_of(ctx.agent, summary)
        elif last.error is not None:
            summary = last.error.message
        await self.run.recorder.record(
            [
                (
                    self.run.session,
                    TaskFinished(
                        task=ctx.task,
                        status=status,
                        summary=summary,
                        duration_ms=0,
                        chat=ctx.chat,
                        value=value,
                    ),
                )
            ]
        )

    def _prompt_end(
        self,
        ctx: ChatContext,
        prompt_task: str | None,
        status: TaskStatus,
        summary: str,
        *,
        started: float,
        input_tokens: int,
        output_tokens: int,
        value: Any = None,
    ) -> list[tuple[str, Action]]:
        """The end of a conversation's prompt, recorded with its turn's end: its root task
        ends as the turn did (none for a turn that answers no prompt of a conversation).

        Just before the turn's end, in its batch: a projection that stops at the turn's end
        (an AG-UI run) has then shown the coordinator idle.

        Args:
            ctx: the coordinator's chat.
            prompt_task: the prompt's root task (None: no conversation's prompt).
            status: how the turn ended, as a task status.
            summary: the answer, or why it failed.
            started: when the turn started (trio time).
            input_tokens: the turn's input tokens.
            output_tokens: the turn's output tokens.
            value: the answer's parsed value (an agent with an output_schema).
        """
        if prompt_task is None:
            return []
        return [
            (
                self.run.session,
                TaskFinished(
                    task=prompt_task,
                    status=status,
                    summary=summary,
                    duration_ms=round(_ms(started)),
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    chat=ctx.chat,
                    value=value,
                ),
            )
        ]

    async def _resume_turn(
        self, ctx: ChatContext, message: Message, *, prompt_task: str | None = None
    ) -> TurnResult:
        """Take a chat up after a restart: its parked turn goes on; a turn the stop cut off
        runs again (or fails, as ``on_restart`` says); a finished turn is its result.

        ``message`` starts a chat that had not begun its first turn. ``prompt_task``: as
        :meth:`_run_turn`'s, for the turn that goes on or runs again.
        """
        chat = self.run.state.chats[ctx.chat]
        if chat.active_turn is not None:
            point = resume_point(self.run.state, ctx.chat)
            # plan_recovery ended every active turn that cannot go on.
            assert point is not None, f"{ctx.chat}: an active turn recovery did not end"
            return await self._run_turn(
                ctx,
                chat.active_turn.message,
                queued_id=None,
                resume=point,
                prompt_task=prompt_task,
            )
        last = chat.turns[-1] if chat.turns else None
        if last is None:
            return await self._run_turn(ctx, message, queued_id=None, prompt_task=prompt_task)
        if is_interrupted(last):
            if self.run.team.on_restart is RestartPolicy.FAIL:
                raise TurnFailedError(f"{ctx.agent.name}: {INTERRUPTED_SUMMARY}")
            return await self._run_turn(ctx, last.message, queued_id=None, prompt_task=prompt_task)
        if last.state is TurnState.COMPLETE:
            usage = last.usage
            text = turn_text(last)
            return TurnResult(
                text=text,
                input_tokens=(usage.input_tokens or 0) if usage else 0,
                output_tokens=(usage.output_tokens or 0) if usage else 0,
                value=_value_of(ctx.agent, text),
            )
        reason = last.error.message if last.error is not None else str(last.state)
        raise TurnFailedError(f"{ctx.agent.name}: {reason}")

    async def _run_turn(
        self,
        ctx: ChatContext,
        message: Message,
        *,
        queued_id: str | None,
        resume: ResumePoint | None = None,
        begun: Sequence[tuple[str, Action]] = (),
        prompt_task: str | None = None,
    ) -> TurnResult:
        """Run one turn (or, with ``resume``, go on with a parked one) to its end.

        ``begun``: facts recorded with the turn's start (a conversation's next prompt's root
        task). ``prompt_task``: the root task of the conversation's prompt this turn answers,
        ended with the turn's end, in the same batch (see :meth:`_prompt_end`).
        """
        chat = ctx.chat
        started = trio.current_time()
        round_index = 0
        if resume is None:
            turn_id = self.run.ids.numbered("turn")
            await self.run.recorder.record(
                [
                    *begun,
                    (
                        chat,
                        ChatTurnStartedAction(
                            turn_id=turn_id,
                            started_at=self.run.recorder.clock(),
                            message=message,
                            queued_message_id=queued_id,
                        ),
                    ),
                ]
            )
        else:
            turn_id = resume.turn_id
            round_index = resume.round_index
        ctx.turn_id = turn_id
        with in_span(self.run.spans, chat, "turn", chat, turn_id):
            return await self._turn(
                ctx,
                message,
                started=started,
                round_index=round_index,
                resume=resume,
                prompt_task=prompt_task,
            )

    async def _turn(
        self,
        ctx: ChatContext,
        message: Message,
        *,
        started: float,
        round_index: int,
        resume: ResumePoint | None,
        prompt_task: str | None,
    ) -> TurnResult:
        """The turn :meth:`_run_turn` started (or took up), in its span, to its end."""
        chat, turn_id = ctx.chat, ctx.turn_id
        outcomes: tuple[ToolOutcome, ...] = ()
        input_tokens = output_tokens = 0
        text = ""
        value: Any = None  # the answer's parsed value (an agent with an output_schema)
        asked_again: str | None = None  # the next round answers again, told this
        retried = False  # an answer that does not fit is asked for again once
        ctx.steering = []
        unrecorded: list[tuple[str, Action]] = []  # the last round's, left to the turn's end
        attempt = self._conversations.of(self.run.state.chats[chat]).interrupted
        backend: Backend | None = None
        try:
            backend = self._backend(ctx.agent)  # inside: a backend that cannot start fails the turn
            if resume is not None:
                ctx.round_index = round_index
                outcomes = await self.tool_calls.run_round(ctx, resume.requests, resumed=resume)
                round_index += 1
            while True:
                ctx.round_index = round_index
                await self._consume_steering(ctx)
                context = RoundContext(
                    chat=chat,
                    agent=ctx.agent.name,
                    task=message.text,
                    round_index=round_index,
                    history=self._history(chat),
                    outcomes=outcomes,
                    steering=tuple(ctx.steering),
                    attempt=attempt,
                    chat_state=self.run.state.chats[chat],
                    tools=self.tool_calls.offered(ctx.agent),
                    output_retry=asked_again,
                )
                asked_again = None
                with in_span(self.run.spans, chat, "round", chat, turn_id, str(round_index)):
                    requests, round_text, usage, unrecorded = await self._stream_round(
                        ctx, backend, context
                    )
                text = round_text or text
                if usage is not None:
                    input_tokens += usage.input_tokens
                    output_tokens += usage.output_tokens
                if requests:
                    outcomes = await self.tool_calls.run_round(ctx, requests)
                    round_index += 1
                    continue
                schema = ctx.agent.output_schema
                if schema is None:
                    break
                checked = check_answer(schema, text)
                if isinstance(checked, Answer):
                    value = checked.value
                    break
                if retried:
                    raise checked.error(ctx.agent.name)
                # The answer stays recorded as it streamed; the model is told what was wrong
                # and answers again in the next round of the same turn.
                retried = True
                asked_again = retry_prompt(checked, schema)
                log.info(
                    "answer does not fit the output schema: asked again",
                    chat=chat,
                    agent=ctx.agent.name,
                    problem=str(checked),
                )
                await self.run.recorder.record(
                    [
                        *unrecorded,
                        output_retry(
                            chat,
                            turn_id,
                            asked_again,
                            path=checked.path,
                            problem=checked.message,
                        ),
                    ]
                )
                unrecorded = []
                outcomes = ()
                round_index += 1
        except Exception as exc:
            if self.run.recorder.failed is not None:
                raise  # nothing can be recorded: the run is going down (see TeamRuntime.run)
            # Recorded below as the turn's error, which every client (and the CLI's console)
            # shows: for the daemon's own record it is information, not a warning.
            log.info("turn failed", chat=chat, agent=ctx.agent.name, error=str(exc))
            await _stop_remote(backend, chat)
            await self.run.recorder.record(
                [
                    *unrecorded,  # the last round's usage, when its answer failed the schema
                    *self._prompt_end(
                        ctx,
                        prompt_task,
                        TaskStatus.FAILED,
                        str(exc),
                        started=started,
                        input_tokens=input_tokens,
                        output_tokens=output_tokens,
                    ),
                    (
                        chat,
                        ChatErrorAction(
                            turn_id=turn_id,
                            duration=_ms(started),
                            error=ErrorInfo(error_type=type(exc).__name__, message=str(exc)),
                        ),
                    ),
                ]
            )
            raise TurnFailedError(f"{ctx.agent.name}: {exc}") from exc
        except BaseException as exc:
            # Cancelled, possibly grouped by the tool calls' nursery: say so, then go on.
            if is_cancellation(exc) and not self.run.stopping:
                # A stop (the process going down) leaves the remote work to the next start,
                # which takes it up by its id; a cancel ends it.
                await _stop_remote(backend, chat)
                await self.run.record_cancelled(
                    [
                        *self._prompt_end(
                            ctx,
                            prompt_task,
                            TaskStatus.KILLED,
                            CANCELLED,
                            started=started,
                            input_tokens=input_tokens,
                            output_tokens=output_tokens,
                        ),
                        (chat, ChatTurnCancelledAction(turn_id=turn_id, duration=_ms(started))),
                    ]
                )
            raise
        # With the last round's usage, if _stream_round left it to this batch.
        await self.run.recorder.record(
            [
                *unrecorded,
                *self._prompt_end(
                    ctx,
                    prompt_task,
                    TaskStatus.COMPLETED,
                    text,
                    started=started,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    value=value,
                ),
                (chat, ChatTurnCompleteAction(turn_id=turn_id, duration=_ms(started))),
            ]
        )
        return TurnResult(
            text=text, input_tokens=input_tokens, output_tokens=output_tokens, value=value
        )

    async def _consume_steering(self, ctx: ChatContext) -> None:
        steering = self.run.state.chats[ctx.chat].steering_message
        if steering is not None:
            await self.run.recorder.record(
                steering_injected(
                    ctx.chat,
                    ctx.turn_id,
                    steering.id,
                    steering.message.text,
                    principal=_principal(steering.message.meta),
                )
            )
            ctx.steering.append(steering.message.text)

    async def _stream_round(
        self, ctx: ChatContext, backend: Backend, context: RoundContext
    ) -> tuple[list[ToolCallRequest], str, UsageReport | None, list[tuple[str, Action]]]:
        """Turn one model round into facts; return its tool calls, text and usage, and the
        facts left to the turn's end.

        A round that asks for no tool call ends its turn. Its ``chat/usage`` is then left to
        the caller. The caller records it in one batch with the ``chat/turnComplete`` that follows
        it at once. Those are the same facts in the same order, with one durable write less per
        turn. Nothing runs between the two. ``chat/usage`` is refused only off the active turn, as
        ``chat/turnComplete`` is. A round that asks for tools records it before they run.
        """
        chat, turn_id = ctx.chat, ctx.turn_id
        requests: list[ToolCallRequest] = []
        usage: UsageReport | None = None
        streaming: set[str] = set()  # tool calls started whose input is still streaming
        text_parts: list[str] = []
        # The latest requested tool call's batch, submitted but not waited for: a round's
        # requests come together (at the end of an OpenAI stream, say), so they are written
        # together, and waited for once before the round's tools may run. Every record
        # below waits for them too, as batches become durable in order.
        requested: PendingBatch | None = None
        run = self.run
        round_started = run.recorder.clock()
        first_token: str | None = None
        # The stream is read as fast as it comes; its text is written in as few facts as
        # the journal's pace asks (see StreamWriter). Closed when the round ends however it
        # ends, so a backend's stream (an HTTP response, say) is never left to the garbage
        # collector.
        async with (
            open_stream_writer(run.text_flusher, run.ids, chat, turn_id) as writer,
            aclosing(backend.stream_round(context)) as stream,
        ):
            async for event in stream:
                if first_token is None and not isinstance(event, UsageReport):
                    first_token = run.recorder.clock()
                match event:
                    case TextDelta(text=chunk):
                        text_parts.append(chunk)
                        await writer.text("markdown", chunk)
                    case ReasoningDelta(text=chunk):
                        await writer.text("reasoning", chunk)
                    case Notice(text=text, meta=meta):
                        # After what gathered, as anything else the round records.
                        writer.close_part()
                        notice = SystemNotificationResponsePart(content=text, meta=dict(meta))
                        action = ChatResponsePartAction(turn_id=turn_id, part=notice)
                        await run.recorder.record([(chat, action)])
                    case ToolCallStarted(tool_call_id=tool_call_id, tool_name=tool_name):
                        writer.close_part()
                        streaming.add(tool_call_id)
                        await run.recorder.record(
                            [(chat, self.tool_calls.start_action(ctx, tool_call_id, tool_name))]
                        )
                    case ToolCallInputDelta(tool_call_id=tool_call_id, text=chunk):
                        if tool_call_id not in streaming:
                            raise RunError(f"tool call {tool_call_id} was not started")
                        await writer.tool_input(tool_call_id, chunk)
                    case ToolCallRequest():
                        # Each call's batch is submitted without waiting for the one before
                        # (they join one write); a round of N calls holds a bounded number in
                        # flight (see Recorder.wait_for_room).
                        writer.close_part()
                        await run.recorder.wait_for_room()
                        started = event.tool_call_id in streaming
                        streaming.discard(event.tool_call_id)
                        request = self.tool_calls.checked(ctx, event)
                        requested = self.tool_calls.submit_ready(ctx, request, started=started)
                        requests.append(request)
                    case UsageReport():
                        usage = event
        if requested is not None:
            await requested.wait()
        unrecorded: list[tuple[str, Action]] = []
        if usage is None and self.run.spans is not None:
            # Traced: every round gets its chat/usage (its span), tokens or not.
            usage = UsageReport(input_tokens=0, output_tokens=0)
            tokens_known = False
        else:
            tokens_known = True
        if usage is not None:
            info = UsageInfo(
                input_tokens=usage.input_tokens if tokens_known else None,
                output_tokens=usage.output_tokens if tokens_known else None,
                model=_request_model(ctx.agent),
                meta=_round_meta(
                    ctx,
                    usage,
                    started_at=round_started,
                    first_token_at=first_token,
                    tool_calls=bool(requests),
                ),
            )
            used: list[tuple[str, Action]] = [(chat, ChatUsageAction(turn_id=turn_id, usage=info))]
            if requests:
                await self.run.recorder.record(used)
            else:
                unrecorded = used
        return requests, "".join(text_parts), usage, unrecorded


# ── helpers ──────────────────────────────────────────────────────────────────


#: How a conversation's prompt ended, by how its turn ended (see _end_answered_prompt).
_PROMPT_END: Final = {
    TurnState.COMPLETE: TaskStatus.COMPLETED,
    TurnState.ERROR: TaskStatus.FAILED,
    TurnState.CANCELLED: TaskStatus.KILLED,
}


def _request_model(agent: AgentSpec) -> str:
    """The model a round of ``agent`` asks for (a scripted agent's is its backend's name)."""
    return agent.openai.model if agent.openai is not None else agent.backend


def _round_meta(
    ctx: ChatContext,
    usage: UsageReport,
    *,
    started_at: str,
    first_token_at: str | None,
    tool_calls: bool,
) -> dict[str, Any]:
    """What a round's ``chat/usage`` records beside its tokens, for its ``chat`` span (see
    :mod:`orchestrator.core._spans`): which round, when it was asked and first answered, who
    answered, and why it stopped.

    Args:
        ctx: The chat whose round it was.
        usage: What the backend reported.
        started_at: When the round was asked (a fact timestamp).
        first_token_at: When its first event came; None if none came.
        tool_calls: Whether it asked for tools (the finish reason, when the server gave none).
    """
    meta: dict[str, Any] = {
        "round": ctx.round_index,
        "provider": ctx.agent.backend,
        "startedAt": started_at,
        "finishReasons": list(usage.finish_reasons) or ["tool_calls" if tool_calls else "stop"],
    }
    if first_token_at is not None:
        meta["firstTokenAt"] = first_token_at
    if usage.model is not None:
        meta["responseModel"] = usage.model
    if usage.server is not None:
        url = urllib.parse.urlsplit(usage.server)
        if url.hostname:
            meta["serverAddress"] = url.hostname
            meta["serverPort"] = url.port or (443 if url.scheme == "https" else 80)
    return meta


def _value_of(agent: AgentSpec, answer: str) -> Any:
    """The parsed value of a completed turn's ``answer`` read again from the facts (after a
    restart): a turn of an agent with an output_schema completes only with one that fits."""
    schema = agent.output_schema
    checked = check_answer(schema, answer) if schema is not None else None
    return checked.value if isinstance(checked, Answer) else None


#: How long a cancelled or failed turn waits for its remote work to be stopped.
_STOP_REMOTE_TIMEOUT: Final = 10.0


async def _stop_remote(backend: Backend | None, chat: str) -> None:
    """Ask a remote teammate's backend to stop what ``chat``'s turn started elsewhere.

    Shielded, so a cancelled turn still reaches the peer; bounded, so a peer that does not
    answer cannot hold the cancellation up. Its failure is logged: the turn's end is
    recorded either way."""
    if not isinstance(backend, RemoteBackend):
        return
    with trio.move_on_after(_STOP_REMOTE_TIMEOUT, shield=True):
        try:
            await backend.stop_chat(chat)
        except Exception as exc:
            log.warning("remote work not stopped", chat=chat, error=str(exc))


def _ms(started: float) -> float:
    return round((trio.current_time() - started) * 1000, 3)


def _principal(meta: Mapping[str, Any] | None) -> str | None:
    """Who sent a message, as its ``_meta`` says (a peer may have put anything there)."""
    principal = (meta or {}).get(PRINCIPAL_META)
    return principal if isinstance(principal, str) else None
