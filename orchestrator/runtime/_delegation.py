"""Delegation and handoff: the tool calls that run another agent's chat.

Theory of operation
-------------------
A ``delegate`` call creates a task and spawns a worker chat for it, inside the call's own
trio task: the tree of trio tasks *is* the delegation tree. The worker's chat runs the same
turn loop as the coordinator's (``run_chat``, given by :mod:`orchestrator.runtime._turns`),
under a cancel scope kept per chat (:attr:`RunContext.scopes`), so cancelling a worker
cancels its subtree. Every worker runs behind an error barrier
(:meth:`Delegation._supervise_worker`): an exception in it is recorded (the worker's turn
ends in error, its task is reported ``failed``) and never reaches its siblings; a timeout
fails it; a cancellation kills it. When it ends, one batch reports back: the task fact, a
worker notification in the delegating chat's turn, and the delegate call's result.

Delegations over the team's parallel budget wait on its :class:`trio.CapacityLimiter` as
``queued`` tasks (:class:`~orchestrator.runtime._context.Slot`); the delegations of one
model round submit their first batch in request order (:class:`Turnstile`), so ids and logs
are reproducible. A ``handoff`` call hands the delegating chat's task to a specialist chat
until it is done, then takes it back. After a restart both go on where they stood.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Protocol

import structlog
import trio

from orchestrator.ahp.actions import ChatResponsePartAction, ChatToolCallContentChangedAction
from orchestrator.ahp.state import (
    Message,
    MessageKind,
    MessageOrigin,
    ToolChatOrigin,
    ToolResultSubagentContent,
)
from orchestrator.base import RunError, evolve
from orchestrator.core import (
    INTERRUPTED_SUMMARY,
    Action,
    HandoffRecorded,
    MemberJoined,
    ReviewCompleted,
    TaskCreated,
    TaskFinished,
    TaskRecord,
    TaskStatus,
    ToolCallRequest,
    ToolOutcome,
    cut_off,
    delegation_output,
    delegation_report,
    denied_calls,
    is_interrupted,
    subagent_of,
    tool_artifact_part,
    tool_call_of,
)
from orchestrator.spec import AgentSpec

from ._context import (
    ENDED_FROM_ABOVE,
    STOPPED_ON_REQUEST,
    ChatContext,
    RunContext,
    Slot,
    TurnFailedError,
    TurnResult,
    chat_added,
    is_cancellation,
)
from ._logging import bound_log_context
from ._reviewing import (
    ReviewEnd,
    Reviewing,
    WorkerRun,
    review_id,
    review_line,
    reviewer_chat,
    turn_count,
)

__all__: list[str] = []

log = structlog.get_logger("orchestrator.runtime")


class RunChat(Protocol):
    """Runs a chat's turns to the end (the turn loop's ``run_chat``)."""

    async def __call__(
        self,
        ctx: ChatContext,
        message: Message,
        *,
        resume: bool = False,
        begun: Sequence[tuple[str, Action]] = (),
    ) -> TurnResult: ...


class Turnstile:
    """Lets the delegations of one model round submit their first batch in request order,
    whatever order trio runs their tasks in, so that ids and logs are reproducible. A
    delegation passes once its batch is submitted, not durable: the next one's batch can
    join it in the log's next write."""

    def __init__(self, count: int) -> None:
        self._passed = [trio.Event() for _ in range(count)]

    async def wait(self, index: int) -> None:
        if index > 0:
            await self._passed[index - 1].wait()

    def passed(self, index: int) -> None:
        self._passed[index].set()


class Delegation:
    """The workers and specialists of one run (see module docstring)."""

    def __init__(self, run: RunContext, *, run_chat: RunChat) -> None:
        self.run = run
        self._run_chat = run_chat
        # Delegations waiting for a place in the budget, by task id (see cancel_task).
        self._waiting: dict[str, trio.CancelScope] = {}
        self.reviewing = Reviewing(run, self._supervise_turn)
        # Tasks cancelled while under review (cancel_task): they end killed.
        self._cancelled: set[str] = set()

    async def _supervise_turn(
        self,
        ctx: ChatContext,
        text: str,
        resume: bool,
        begun: Sequence[tuple[str, Action]],
    ) -> WorkerRun:
        """One more turn of a chat behind its error barrier (a review round, a worker's fixes)."""
        status, summary, usage, duration, value = await self._supervise_worker(
            ctx, text, own_task=False, resume=resume, begun=begun
        )
        return WorkerRun(
            status=status, summary=summary, usage=usage, duration=duration, value=value
        )

    def _reviewed(self, request: ToolCallRequest, worker: AgentSpec) -> bool:
        """Whether the delegation is reviewed before it ends (``review = "always"``)."""
        if self.run.team.reviewer_of(worker.name) is None:
            return False
        mode = request.arguments.get("review") or self.run.team.review_mode
        return mode == "always"

    async def _review(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        worker_ctx: ChatContext,
        worker_run: WorkerRun,
        *,
        resume: bool,
    ) -> ReviewEnd:
        """The review rounds of a finished worker's delegation (see ``_reviewing``). After a
        restart, the round is the worker's turn count (round k reviews its turn k)."""
        reviewer = self.run.team.reviewer_of(worker_ctx.agent.name)
        assert reviewer is not None
        first = turn_count(self.run, worker_ctx.chat) if resume else 1
        try:
            return await self.reviewing.rounds(
                ctx,
                request,
                worker_ctx,
                worker_run,
                first_round=max(first, 1),
                last_round=reviewer.max_review_rounds,
                resume=resume,
            )
        except BaseException as exc:
            if is_cancellation(exc):
                # Cancelled from above while reviewed: the task is killed, as a worker's is.
                await self.run.record_cancelled(
                    [(self.run.session, _killed(worker_ctx, trio.current_time()))]
                )
            raise

    # ── controls ─────────────────────────────────────────────────────────────

    def cancel_worker(self, chat: str) -> None:
        """Cancel one worker and its subtree (see :meth:`TeamRuntime.cancel_worker`)."""
        scope = self.run.scopes.get(chat)
        if scope is None or chat == self.run.state.coordinator_chat():
            raise RunError(f"no running worker chat {chat}")
        scope.cancel()

    def cancel_task(self, task: str) -> None:
        """Cancel a delegated task, queued or running (see :meth:`TeamRuntime.cancel_task`)."""
        record = self.run.state.tasks.get(task)
        if record is None or record.requested_by is None:
            raise RunError(f"no delegated task {task!r}")
        waiting = self._waiting.get(task)
        if waiting is not None:
            waiting.cancel()
        elif record.chat is not None and record.chat in self.run.scopes:
            self.cancel_worker(record.chat)
        elif (reviewing := self._reviewing_chat(record)) is not None:
            # Under review: its reviewer stops, and the task ends killed (see _reviewed_end).
            self._cancelled.add(task)
            self.run.scopes[reviewing].cancel()
        else:
            raise RunError(f"task {task!r} is {record.status}: there is nothing to cancel")

    def _reviewing_chat(self, record: TaskRecord) -> str | None:
        """The reviewer chat whose round of ``record`` runs now, if one does."""
        reviewer = self.run.team.reviewer_of(record.agent)
        if reviewer is None or record.status is not TaskStatus.RUNNING:
            return None
        chat = reviewer_chat(self.run, record.task, reviewer.name)
        return chat if chat is not None and chat in self.run.scopes else None

    # ── delegate ─────────────────────────────────────────────────────────────

    async def delegate(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        turnstile: Turnstile,
        position: int,
        *,
        task: TaskRecord | None = None,
    ) -> ToolOutcome:
        """Delegate the call's task to a worker and wait for its report.

        ``task``: the call had created it before a restart; it goes on from there.
        """
        run = self.run
        if task is not None:
            turnstile.passed(position)
            return await self._resume_delegation(ctx, request, task)
        target = str(request.arguments.get("agent", ""))
        task_text = str(request.arguments.get("task", "")).strip()
        if target not in ctx.agent.delegates_to:
            allowed = ", ".join(ctx.agent.delegates_to) or "nobody"
            raise RunError(f"{ctx.agent.name} may not delegate to {target!r} (allowed: {allowed})")
        if not task_text:
            raise RunError("delegate needs a non-empty task")
        worker = run.team.agent(target)
        await turnstile.wait(position)
        # Behind the turnstile, so that the round's spawns stay in request order; a burst of
        # them holds a bounded number in flight (see Recorder.wait_for_room).
        await run.recorder.wait_for_room()
        task_id = run.ids.numbered("task")
        started = trio.current_time()
        created = TaskCreated(
            task=task_id,
            title=task_text,
            agent=worker.name,
            requested_by=ctx.chat,
            tool_call_id=request.tool_call_id,
            parent_task=ctx.task,
            status=TaskStatus.QUEUED,
        )
        slot = Slot()
        try:
            run.limiter.acquire_on_behalf_of_nowait(slot)
            slot.held = True
        except trio.WouldBlock:
            await run.recorder.record([(run.session, created)])
            # Only once durable (no checkpoint until this task is in the budget's queue): a
            # later delegation must neither take a place freed meanwhile nor queue ahead.
            turnstile.passed(position)
            log.info(
                "delegation queued",
                task=task_id,
                agent=worker.name,
                budget=run.team.parallel_budget,
            )
            if not await self._wait_for_slot(task_id, slot, started):
                return await self._queued_task_killed(ctx, request, task_id, worker, started)
        return await self._start_worker(
            ctx, request, worker, created, slot, lambda: turnstile.passed(position)
        )

    async def _queued_task_killed(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        task: str,
        worker: AgentSpec,
        started: float,
    ) -> ToolOutcome:
        return await self._delegation_ended(
            ctx,
            request,
            TaskFinished(
                task=task,
                status=TaskStatus.KILLED,
                summary="cancelled while it waited for a place in the parallel budget",
                duration_ms=_elapsed_ms(started),
            ),
            worker,
            subagent=None,
        )

    async def _start_worker(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        worker: AgentSpec,
        created: TaskCreated,
        slot: Slot,
        spawned: Callable[[], None],
    ) -> ToolOutcome:
        """Spawn the worker of a task (holding ``slot``), supervise it and report back.

        ``spawned`` runs once the spawn is submitted. It lets the next delegation of the round
        submit its own behind it. So the round's spawns are written together rather than one durable
        write after another. The worker starts once its spawn is durable. ``created`` is recorded
        with the spawn unless the task was queued.
        """
        run = self.run
        task, task_text = created.task, created.title
        started = trio.current_time()
        try:
            worker_chat = run.ids.chat()
            subagent = ToolResultSubagentContent(
                resource=worker_chat, title=task_text, agent_name=worker.name
            )
            spawn: list[tuple[str, Action]] = []
            if task not in run.state.tasks:  # it did not wait: created and started at once
                spawn.append((run.session, evolve(created, status=TaskStatus.RUNNING)))
            spawn += [
                (
                    run.session,
                    chat_added(
                        worker_chat,
                        worker,
                        task_text,
                        ToolChatOrigin(chat=ctx.chat, tool_call_id=request.tool_call_id),
                        run.recorder.clock(),
                    ),
                ),
                (
                    run.session,
                    # It joins and takes up its task: one fact (issue 35).
                    MemberJoined(
                        chat=worker_chat,
                        agent=worker.name,
                        role=worker.role,
                        task=task,
                        remote=worker.a2a.url if worker.a2a is not None else None,
                        starts=True,
                    ),
                ),
                (
                    ctx.chat,
                    ChatToolCallContentChangedAction(
                        turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, content=(subagent,)
                    ),
                ),
            ]
            pending = run.recorder.submit(spawn)
            spawned()
            await pending.wait()
            worker_ctx = ChatContext(worker_chat, worker, task, slot=slot)
            status, summary, usage, duration, value = await self._supervise_worker(
                worker_ctx, task_text, own_task=True
            )
            status, summary, usage, duration, value, reviewed = await self._reviewed_run(
                ctx,
                request,
                worker,
                worker_ctx,
                WorkerRun(
                    status=status, summary=summary, usage=usage, duration=duration, value=value
                ),
                started=started,
                resume=False,
            )
        finally:
            run.release_slot(slot)
        finished = TaskFinished(
            task=task,
            status=status,
            summary=summary,
            duration_ms=duration,
            input_tokens=usage[0],
            output_tokens=usage[1],
            chat=worker_chat,
            value=value,
        )
        return await self._delegation_ended(
            ctx, request, finished, worker, subagent=subagent, reviewed=reviewed
        )

    async def _reviewed_run(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        worker: AgentSpec,
        worker_ctx: ChatContext,
        run: WorkerRun,
        *,
        started: float,
        resume: bool,
    ) -> tuple[TaskStatus, str, tuple[int, int], int, Any, ReviewEnd | None]:
        """The worker's run as its delegation reports it: as it ended, or, when its reviewer
        checks it (a completed run of a reviewed worker), after the review rounds (timed from
        ``started``; killed if the task was cancelled meanwhile), with how they ended."""
        if run.status is not TaskStatus.COMPLETED or not self._reviewed(request, worker):
            return run.status, run.summary, run.usage, run.duration, run.value, None
        reviewed = await self._review(ctx, request, worker_ctx, run, resume=resume)
        last = reviewed.worker
        status, summary, value = last.status, last.summary, last.value
        if worker_ctx.task in self._cancelled:
            self._cancelled.discard(worker_ctx.task)
            status, summary, value = TaskStatus.KILLED, STOPPED_ON_REQUEST, None
        return status, summary, last.usage, _elapsed_ms(started), value, reviewed

    async def _resume_delegation(
        self, ctx: ChatContext, request: ToolCallRequest, record: TaskRecord
    ) -> ToolOutcome:
        """Take up a task the call created before a restart: queued, it waits for its place
        again; running, its worker chat goes on (see the turn loop's ``resume_turn``)."""
        run = self.run
        worker = run.team.agent(record.agent)
        started = trio.current_time()
        slot = Slot()
        if record.chat is None:
            if not await self._wait_for_slot(record.task, slot, started):
                return await self._queued_task_killed(ctx, request, record.task, worker, started)
            created = TaskCreated(
                task=record.task,
                title=record.title,
                agent=record.agent,
                requested_by=ctx.chat,
                tool_call_id=request.tool_call_id,
                parent_task=ctx.task,
                status=TaskStatus.QUEUED,
            )
            return await self._start_worker(ctx, request, worker, created, slot, lambda: None)
        call = tool_call_of(run.state, ctx.chat, request.tool_call_id)
        subagent = (subagent_of(call) if call is not None else None) or ToolResultSubagentContent(
            resource=record.chat, title=record.title, agent_name=worker.name
        )
        worker_ctx = ChatContext(record.chat, worker, record.task, slot=slot)
        try:
            try:
                await run.take_slot(slot)  # it held one when the process stopped
            except BaseException as exc:
                if is_cancellation(exc):
                    # Cancelled before the worker could go on: end its subtree as the stop
                    # left it, and its task killed.
                    await run.record_cancelled(
                        [
                            *cut_off(run.state, record.chat, now=run.recorder.clock()),
                            (run.session, _killed(worker_ctx, started)),
                        ]
                    )
                raise
            status, summary, usage, duration, value = await self._supervise_worker(
                worker_ctx, record.title, own_task=True, resume=True
            )
            status, summary, usage, duration, value, reviewed = await self._reviewed_run(
                ctx,
                request,
                worker,
                worker_ctx,
                WorkerRun(
                    status=status, summary=summary, usage=usage, duration=duration, value=value
                ),
                started=started,
                resume=True,
            )
        finally:
            run.release_slot(slot)
        finished = TaskFinished(
            task=record.task,
            status=status,
            summary=summary,
            duration_ms=duration,
            input_tokens=usage[0],
            output_tokens=usage[1],
            chat=record.chat,
            value=value,
        )
        return await self._delegation_ended(
            ctx, request, finished, worker, subagent=subagent, reviewed=reviewed
        )

    async def _wait_for_slot(self, task: str, slot: Slot, started: float) -> bool:
        """Wait in the queue for a place in the budget; False if the task was cancelled there.

        A cancellation from above (the team, or the delegating chat, going down) records the
        queued task ``killed`` before it propagates.
        """
        try:
            with trio.CancelScope() as waiting:
                self._waiting[task] = waiting
                await self.run.take_slot(slot)
        except BaseException as exc:
            if is_cancellation(exc):
                killed = TaskFinished(
                    task=task,
                    status=TaskStatus.KILLED,
                    summary=ENDED_FROM_ABOVE,
                    duration_ms=_elapsed_ms(started),
                )
                await self.run.record_cancelled([(self.run.session, killed)])
            raise
        finally:
            self._waiting.pop(task, None)
        return not waiting.cancelled_caught

    async def _delegation_ended(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        finished: TaskFinished,
        worker: AgentSpec,
        *,
        subagent: ToolResultSubagentContent | None,
        reviewed: ReviewEnd | None = None,
    ) -> ToolOutcome:
        """Report a finished task back: the task fact, a worker notification in the delegating
        chat's turn and the delegate call's result, in one batch; with ``reviewed``, the last
        verdict too, and the call's result says it."""
        state = self.run.state
        task = state.tasks.get(finished.task)
        title = task.title if task is not None else ""
        denied = denied_calls(state.approvals, finished.chat) if finished.chat else 0
        output = delegation_output(worker.name, finished, task_title=title, denied=denied)
        also: list[ToolResultSubagentContent] = []
        verdict: list[tuple[str, Action]] = []
        if reviewed is not None:
            reviewer = self.run.team.reviewer_of(worker.name)
            assert reviewer is not None
            also += self._reviewer_content(ctx, request, reviewed, reviewer.name)
            if reviewed.verdict is not None:
                verdict.append((self.run.session, reviewed.verdict))
                output += "\n" + review_line(
                    reviewed.verdict,
                    reviewer=reviewer.name,
                    rounds=reviewed.rounds,
                    limit=reviewer.max_review_rounds,
                )
        report = delegation_report(
            self.run.session,
            ctx.chat,
            ctx.turn_id,
            request.tool_call_id,
            finished,
            worker=worker.name,
            subagent=subagent,
            task_title=title,
            denied=denied,
            output=output,
            also=tuple(also),
        )
        if finished.status is TaskStatus.COMPLETED and ctx.agent.records_artifact("delegate"):
            # The worker's report is a declared output of the delegating agent: an artifact
            # (its parsed value as data, when the worker has an output_schema).
            part = tool_artifact_part(
                request.tool_call_id, f"{worker.name} report", output, structured=finished.value
            )
            artifact = (ctx.chat, ChatResponsePartAction(turn_id=ctx.turn_id, part=part))
            report = [*report[:-1], artifact, report[-1]]
        await self.run.recorder.record([*verdict, *report])
        return ToolOutcome(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            success=finished.status is TaskStatus.COMPLETED,
            output=output,
        )

    def _reviewer_content(
        self, ctx: ChatContext, request: ToolCallRequest, reviewed: ReviewEnd, reviewer: str
    ) -> list[ToolResultSubagentContent]:
        """The reviewer's chat as the call's content (it spawned it), for its result."""
        if reviewed.reviewer is not None:
            return [reviewed.reviewer]
        call = tool_call_of(self.run.state, ctx.chat, request.tool_call_id)
        chat = reviewer_chat(self.run, self._task_of(ctx, request), reviewer)
        return [
            c
            for c in (getattr(call, "content", None) or ())
            if isinstance(c, ToolResultSubagentContent) and c.resource == chat
        ]

    def _task_of(self, ctx: ChatContext, request: ToolCallRequest) -> str:
        return next(
            (
                t.task
                for t in self.run.state.tasks.values()
                if t.requested_by == ctx.chat and t.tool_call_id == request.tool_call_id
            ),
            "",
        )

    # ── review (on request) ──────────────────────────────────────────────────

    async def review(
        self, ctx: ChatContext, request: ToolCallRequest, *, resumed: bool = False
    ) -> ToolOutcome:
        """The coordinator's ``review`` call: its finished delegation's reviewer checks the
        worker's outcome now, for up to ``max_review_rounds`` more rounds; the result is the
        last verdict and the worker's last outcome.

        ``resumed``: the call was running when the process stopped. Its rounds are not taken
        up (a reviewed delegation's are, see :meth:`_review`): the call fails, saying so, and
        the coordinator may call review again.
        """
        run = self.run
        if resumed:
            return await run.complete_tool_call(
                ctx,
                request,
                success=False,
                output=f"review was {INTERRUPTED_SUMMARY}; call review again",
                extra=self._cut_off_review(request),
            )
        task_id = str(request.arguments.get("task", "")).strip()
        record = run.state.tasks.get(task_id)
        if record is None or record.requested_by != ctx.chat or record.chat is None:
            raise RunError(f"{task_id!r} is not a task {ctx.agent.name} delegated")
        if record.status is not TaskStatus.COMPLETED:
            raise RunError(f"{task_id} is {record.status}: only completed work is reviewed")
        worker = run.team.agent(record.agent)
        reviewer = run.team.reviewer_of(worker.name)
        if reviewer is None:
            raise RunError(f"nobody reviews {worker.name}'s work (no agent's reviews names it)")
        done = turn_count(run, reviewer_chat(run, task_id, reviewer.name))
        worker_ctx = ChatContext(record.chat, worker, task_id)
        ended = await self.reviewing.rounds(
            ctx,
            request,
            worker_ctx,
            WorkerRun(
                status=TaskStatus.COMPLETED,
                summary=record.summary,
                usage=(0, 0),
                duration=0,
            ),
            first_round=done + 1,
            last_round=done + reviewer.max_review_rounds,
            resume=False,
        )
        verdict = ended.verdict
        lines = [f"[{worker.name}, {ended.worker.status}] {ended.worker.outcome()}"]
        if verdict is not None:
            lines.append(
                review_line(
                    verdict,
                    reviewer=reviewer.name,
                    rounds=ended.rounds,
                    limit=done + reviewer.max_review_rounds,
                )
            )
        return await run.complete_tool_call(
            ctx,
            request,
            success=verdict is not None and verdict.verdict == "passed",
            output="\n".join(lines),
            extra=[(run.session, verdict)] if verdict is not None else [],
            content_before=(ended.reviewer,) if ended.reviewer is not None else (),
        )

    def _cut_off_review(self, request: ToolCallRequest) -> list[tuple[str, Action]]:
        """The round a stop cut off in a review call's reviewer (its last turn interrupted),
        ended failed: it never gave its verdict."""
        run = self.run
        task_id = str(request.arguments.get("task", "")).strip()
        record = run.state.tasks.get(task_id)
        reviewer = run.team.reviewer_of(record.agent) if record is not None else None
        chat = reviewer_chat(run, task_id, reviewer.name) if reviewer is not None else None
        state = run.state.chats.get(chat) if chat is not None else None
        if state is None or not state.turns or not is_interrupted(state.turns[-1]):
            return []
        failed = ReviewCompleted(
            review=review_id(task_id, turn_count(run, chat)),
            verdict="failed",
            error=f"the review was {INTERRUPTED_SUMMARY}",
        )
        return [(run.session, failed)]

    # ── a worker's lifecycle ─────────────────────────────────────────────────

    async def _supervise_worker(
        self,
        ctx: ChatContext,
        task_text: str,
        *,
        own_task: bool,
        resume: bool = False,
        begun: Sequence[tuple[str, Action]] = (),
    ) -> tuple[TaskStatus, str, tuple[int, int], int, Any]:
        """Run a worker chat behind its error barrier, timeout and cancel scope; how it
        ended, its answer (or error), usage, duration and its answer's parsed value.

        ``own_task``: the worker owns ``ctx.task`` (a delegation), so a
        cancellation from above (the whole team) records that task ``killed``.
        ``resume``: the chat exists from before a restart and goes on where it stood.
        ``begun``: facts recorded with the turn's start.
        """
        run = self.run
        started = trio.current_time()
        status = TaskStatus.COMPLETED
        summary = ""
        usage = (0, 0)
        value: Any = None
        message = Message(text=task_text, origin=MessageOrigin(kind=MessageKind.TOOL))
        timeout = ctx.agent.timeout
        with trio.CancelScope() as scope:
            run.scopes[ctx.chat] = scope
            deadline = trio.move_on_after(timeout) if timeout is not None else nullcontext()
            with bound_log_context(chat=ctx.chat, agent=ctx.agent.name):
                try:
                    with deadline as timer:
                        result = await self._run_chat(ctx, message, resume=resume, begun=begun)
                        summary = result.text
                        usage = (result.input_tokens, result.output_tokens)
                        value = result.value
                    if timer is not None and timer.cancelled_caught:
                        status = TaskStatus.FAILED
                        summary = f"timed out after {_seconds(timeout)}"
                except TurnFailedError as exc:
                    status, summary = TaskStatus.FAILED, str(exc.__cause__ or exc)
                except Exception as exc:  # the error barrier of one worker
                    if run.recorder.failed is not None:
                        raise  # the fact log failed, not this worker (see TeamRuntime.run)
                    log.exception("worker crashed", chat=ctx.chat)
                    status, summary = TaskStatus.FAILED, f"internal error: {exc!r}"
                except BaseException as exc:
                    if own_task and is_cancellation(exc) and not scope.cancel_called:
                        # Cancelled from above: the team is going down; report the task.
                        run.scopes.pop(ctx.chat, None)
                        await run.record_cancelled([(run.session, _killed(ctx, started))])
                    raise
        run.scopes.pop(ctx.chat, None)
        if scope.cancelled_caught:
            status, summary, value = TaskStatus.KILLED, STOPPED_ON_REQUEST, None
        elif status is not TaskStatus.COMPLETED:
            value = None
        return status, summary, usage, int((trio.current_time() - started) * 1000), value

    # ── handoff ──────────────────────────────────────────────────────────────

    async def handoff(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        *,
        specialist: ToolResultSubagentContent | None = None,
    ) -> ToolOutcome:
        """Hand the task to a specialist chat until it is done, then take it back.

        ``specialist``: the chat the call handed off to before a restart; it goes on.
        """
        run = self.run
        if specialist is not None:
            chosen = run.team.agent(specialist.agent_name or "")
            return await self._handed_off(ctx, request, chosen, specialist, resume=True)
        target = str(request.arguments.get("agent", ""))
        reason = str(request.arguments.get("reason", "")).strip() or "handoff"
        resume = str(request.arguments.get("resume", "")).strip() or ctx.agent.name
        if target not in ctx.agent.delegates_to:
            allowed = ", ".join(ctx.agent.delegates_to) or "nobody"
            raise RunError(f"{ctx.agent.name} may not hand off to {target!r} (allowed: {allowed})")
        agent = run.team.agent(target)
        specialist_chat = run.ids.chat()
        subagent = ToolResultSubagentContent(
            resource=specialist_chat, title=reason, agent_name=agent.name
        )
        task_title = run.state.tasks[ctx.task].title
        await run.recorder.record(
            [
                (
                    run.session,
                    chat_added(
                        specialist_chat,
                        agent,
                        task_title,
                        ToolChatOrigin(chat=ctx.chat, tool_call_id=request.tool_call_id),
                        run.recorder.clock(),
                    ),
                ),
                (
                    run.session,
                    MemberJoined(
                        chat=specialist_chat,
                        agent=agent.name,
                        role=agent.role,
                        task=ctx.task,
                        remote=agent.a2a.url if agent.a2a is not None else None,
                    ),
                ),
                (
                    ctx.chat,
                    ChatToolCallContentChangedAction(
                        turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, content=(subagent,)
                    ),
                ),
                (
                    run.session,
                    HandoffRecorded(
                        task=ctx.task,
                        from_chat=ctx.chat,
                        to_chat=specialist_chat,
                        to_agent=agent.name,
                        reason=reason,
                        resume_target=resume,
                        tool_call_id=request.tool_call_id,
                    ),
                ),
            ]
        )
        return await self._handed_off(ctx, request, agent, subagent, resume=False)

    async def _handed_off(
        self,
        ctx: ChatContext,
        request: ToolCallRequest,
        specialist: AgentSpec,
        subagent: ToolResultSubagentContent,
        *,
        resume: bool,
    ) -> ToolOutcome:
        """Supervise the specialist a handoff spawned; then the task comes back."""
        reason = str(request.arguments.get("reason", "")).strip() or "handoff"
        resume_target = str(request.arguments.get("resume", "")).strip() or ctx.agent.name
        task_title = self.run.state.tasks[ctx.task].title
        status, summary, _usage, _duration, _value = await self._supervise_worker(
            ChatContext(subagent.resource, specialist, ctx.task),
            f"{task_title}\n\n({reason})",
            own_task=False,
            resume=resume,
        )
        back = (
            self.run.session,
            HandoffRecorded(
                task=ctx.task,
                from_chat=subagent.resource,
                to_chat=ctx.chat,
                to_agent=ctx.agent.name,
                reason=f"{specialist.name} {status}",
                resume_target=resume_target,
                tool_call_id=request.tool_call_id,
            ),
        )
        return await self.run.complete_tool_call(
            ctx,
            request,
            success=status is TaskStatus.COMPLETED,
            output=f"[{specialist.name}, {status}] {summary}",
            content_before=(subagent,),
            extra=[back],
        )


def _killed(ctx: ChatContext, started: float) -> TaskFinished:
    return TaskFinished(
        task=ctx.task,
        status=TaskStatus.KILLED,
        summary=ENDED_FROM_ABOVE,
        duration_ms=int((trio.current_time() - started) * 1000),
        chat=ctx.chat,
    )


def _elapsed_ms(started: float) -> int:
    return int((trio.current_time() - started) * 1000)


def _seconds(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "no limit"
    return f"{value:g}s"
