"""The team runtime: a session is a trio nursery, every chat a task in it.

Theory of operation
-------------------
Everything the runtime does becomes facts through one door,
:meth:`Recorder.record`: a batch of ``(channel, action)`` pairs is validated and
reduced against the current :class:`TeamState` (nothing changes yet), appended
to the fact log, committed to the state, and only then published on the bus.
A batch is all or nothing; it is how a spawn records the worker's ChatOrigin
and the parent tool call's subagent content together.

A turn of a chat is a loop of model rounds (see :mod:`orchestrator.core._model_round`).
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

import collections
import itertools
import json
import math
import os
import uuid
from collections.abc import Callable, Sequence
from contextlib import aclosing, nullcontext
from typing import Any, Final

import attrs
import structlog
import trio

from orchestrator.ahp._actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatInputCompletedAction,
    ChatInputRequestedAction,
    ChatPendingMessageSetAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    ChatUsageAction,
    SessionChatAddedAction,
)
from orchestrator.ahp._state import (
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
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
    ToolCallPendingConfirmationState,
    ToolCallRunningState,
    ToolChatOrigin,
    ToolResultSubagentContent,
    TurnState,
    UsageInfo,
    UserChatOrigin,
)
from orchestrator.base._clock import now_timestamp
from orchestrator.base._errors import FactLogError, RunError
from orchestrator.core._facts import Action, Fact
from orchestrator.core._model_round import (
    Backend,
    ReasoningDelta,
    RoundContext,
    TextDelta,
    ToolCallInputDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolOutcome,
    UsageReport,
)
from orchestrator.core._queries import (
    ROUND_META,
    has_open_input,
    input_request_id,
    interrupted_turns,
    is_interrupted,
    open_questions,
    pending_approval_of,
    subagent_of,
    task_of_call,
    tool_call_of,
    turn_text,
)
from orchestrator.core._recovery import (
    INTERRUPTED_SUMMARY,
    ResumePoint,
    cut_off,
    plan_recovery,
    resume_point,
)
from orchestrator.core._reports import (
    delegation_output,
    delegation_report,
    first_line,
    steering_injected,
    tool_result_actions,
)
from orchestrator.core._team_actions import (
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
from orchestrator.core._team_records import ApprovalRecord, TaskRecord, Transition
from orchestrator.core._team_state import TeamState
from orchestrator.spec._teamfile import AgentSpec, RestartPolicy, TeamSpec
from orchestrator.spec._tools import ToolDefinition, tool_definitions

from ._bus import FactBus
from ._command_tool import ToolCallback, command_environment, run_command
from ._factlog import FactLog, MemoryFactLog, Ticket

__all__ = [
    "Ids",
    "PendingBatch",
    "Recorder",
    "RunOutcome",
    "TeamRuntime",
    "answer_text",
    "parse_answer",
    "require_prompt",
]

log = structlog.get_logger("orchestrator.runtime")

#: Tools the runtime itself implements; every other tool name is a plain tool.
TEAM_TOOLS = frozenset({"delegate", "handoff", "ask"})

#: Longest tool input shown in an approval request's summary.
SUMMARY_LIMIT = 160


def require_prompt(prompt: str) -> None:
    """Refuse a prompt that gives the coordinator nothing to do (:class:`RunError`)."""
    if not prompt.strip():
        raise RunError("the prompt is empty: tell the coordinator what to do")


class Ids:
    """Makes the ids of one run; ``deterministic=True`` numbers them (tests, examples).

    ``restart`` is the number of the process taking an unfinished run up again (0 for the
    first): its numbered ids (``task-r1-1``) and deterministic UUIDs cannot meet the ones
    the earlier processes made.
    """

    def __init__(self, *, deterministic: bool = False, restart: int = 0) -> None:
        self._deterministic = deterministic
        self._restart = restart
        self._counters: dict[str, itertools.count[int]] = {}

    def _next(self, kind: str) -> int:
        return next(self._counters.setdefault(kind, itertools.count(1)))

    def _uuid(self, kind: str) -> str:
        if self._deterministic:
            return str(uuid.UUID(int=(self._restart << 64) | self._next(kind)))
        return str(uuid.uuid4())

    def session(self) -> str:
        return f"ahp-session:/{self._uuid('session')}"

    def chat(self) -> str:
        return f"ahp-chat:/{self._uuid('chat')}"

    def run(self) -> str:
        return f"run-{self._uuid('run')}"

    def numbered(self, kind: str) -> str:
        """``task-1``, ``turn-3``, ``approval-2``...: unique within the run."""
        if self._restart:
            return f"{kind}-r{self._restart}-{self._next(kind)}"
        return f"{kind}-{self._next(kind)}"


class Recorder:
    """The single door through which facts enter the world (see module docstring).

    Theory of operation: :meth:`submit` prepares a batch against the state as the batches in
    flight will leave it, numbers its facts and submits them to the fact log, all without
    an await: trio runs one task at a time, so batches are ordered without a lock. Waiting
    on the returned :class:`PendingBatch` (shielded: a submitted batch is never abandoned)
    returns once it is durable, after committing every batch that is, oldest first, and
    publishing their facts; :meth:`record` is the two in one. A log that writes in the
    background can thus make many batches durable in one transaction, and a task may submit
    several batches before it waits (the spawns of one delegate step do): whoever waits
    settles everything durable ahead of it. If the log fails, that batch and every later
    one fail with it; the recorder then refuses all else, and tells ``on_failed`` (the
    runtime ends the session: a task waiting on something else would never find out).
    """

    def __init__(
        self,
        state: TeamState,
        factlog: FactLog,
        bus: FactBus,
        *,
        clock: Callable[[], str] = now_timestamp,
    ) -> None:
        self.state = state
        self.factlog = factlog
        self.bus = bus
        self.clock = clock
        self._last_sequence = state.last_sequence  # of the last fact submitted
        self._in_flight: collections.deque[PendingBatch] = collections.deque()
        self.failed: FactLogError | None = None
        # Told once the log fails (the runtime ends its session: nothing can be recorded).
        self.on_failed: Callable[[FactLogError], None] | None = None

    async def record(
        self, actions: Sequence[tuple[str, Action]], *, guard: Callable[[], None] | None = None
    ) -> list[Fact]:
        """Validate, append, apply and publish ``actions`` as one batch.

        Raises :class:`IllegalTransitionError` (nothing recorded) for an action the state
        refuses, and :class:`FactLogError` when the log cannot make the batch durable.
        ``guard`` runs first, in the same atomic step as the preparation, and refuses the
        batch by raising: a check of runtime bookkeeping that must not change between the
        check and the append. Once submitted, the batch is recorded whole even if the caller
        is cancelled meanwhile (the cancellation arrives at the caller's next checkpoint).
        """
        return await self.submit(actions, guard=guard).wait()

    def submit(
        self, actions: Sequence[tuple[str, Action]], *, guard: Callable[[], None] | None = None
    ) -> PendingBatch:
        """Validate ``actions`` and hand them to the log as one batch; nothing is applied yet.

        As :meth:`record` without the wait: the batch is committed and published once it is
        durable and someone waits (on it or on any later batch). The caller must not act on
        it (start a worker, run a tool) before :meth:`PendingBatch.wait` returns. Raises as
        :meth:`record` does, except for the log's failure to make the batch durable, which
        :meth:`PendingBatch.wait` raises.
        """
        if self.failed is not None:
            raise self.failed
        if guard is not None:
            guard()
        now = self.clock()
        transition = self.state.prepare(actions, now=now)
        first = self._last_sequence + 1
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
        try:
            # With the turns the batch ends, as reduced here: the journal writes their
            # history rows from them instead of folding their facts again.
            ticket = self.factlog.submit(facts, ended_turns=transition.ended_turns)
        except FactLogError as exc:
            # The log failed a batch before this one. Batches ahead of that one are durable
            # (their tickets say so) though perhaps not waited for yet: commit them first.
            self._settle()
            self._fail(exc)
            raise
        self._last_sequence = facts[-1].sequence
        self.state.push(transition)
        entry = PendingBatch(self, transition, facts, ticket)
        self._in_flight.append(entry)
        return entry

    def _settle(self) -> None:
        """Commit and publish every durable batch at the front of the queue, in order."""
        while self._in_flight and self._in_flight[0].ticket.done():
            entry = self._in_flight.popleft()
            error = entry.ticket.error
            if error is not None:
                entry.error = error
                self._fail(error)
                return
            self.state.commit(entry.transition, entry.facts[-1].sequence)
            self.bus.publish_nowait(entry.facts)
            self.factlog.committed(self.state)

    def fail(self, error: FactLogError) -> None:
        """The log can take nothing more (its owner knows before a batch is refused):
        commit what is durable, fail the rest, refuse all else."""
        self._settle()
        self._fail(error)

    def _fail(self, error: FactLogError) -> None:
        # Every batch in flight was prepared on top of facts that never became durable.
        for entry in self._in_flight:
            entry.error = error
        self._in_flight.clear()
        self.state.discard_pending()
        if self.failed is None:
            self.failed = error
            log.error("fact log failed: nothing more can be recorded", error=str(error))
            if self.on_failed is not None:
                self.on_failed(error)


@attrs.define(eq=False)
class PendingBatch:
    """A submitted batch: its prepared transition, its facts, the log's ticket for them."""

    recorder: Recorder
    transition: Transition
    facts: list[Fact]
    ticket: Ticket
    error: FactLogError | None = None

    async def wait(self) -> list[Fact]:
        """Return the batch's facts once they are durable, committed and published; raise
        :class:`FactLogError` if the log failed it (or a batch before it)."""
        # Shielded: a cancelled waiter would leave its batch durable but never committed
        # if no one waited after it. A done ticket's wait is no checkpoint, so the scope is
        # skipped then: entering and closing one costs more than the rest of a small batch.
        if not self.ticket.done():
            with trio.CancelScope(shield=True):
                await self.ticket.wait()
        self.recorder._settle()
        if self.error is not None:
            raise self.error
        return self.facts


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


@attrs.define(eq=False)
class _Slot:
    """A worker's place in the team's parallel budget (the limiter's borrower).

    A worker that delegates hands its place back while it waits for its own workers (a
    tree deeper than the budget would otherwise wait on itself forever) and takes one again
    before its next model round.
    """

    held: bool = False


class _Turnstile:
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


@attrs.define
class _ChatContext:
    """What a running chat's tool calls need to know about it."""

    chat: str
    agent: AgentSpec
    task: str
    turn_id: str = ""
    round_index: int = 0  # the model round of the turn running now (recorded on tool calls)
    slot: _Slot | None = None  # a delegated worker's place in the parallel budget
    steering: list[str] = attrs.field(factory=list)  # injected into the current turn


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
        clock: Callable[[], str] = now_timestamp,
        state: TeamState | None = None,
        conversation: bool = False,
        session: str | None = None,
        background: str | None = None,
        callback: ToolCallback | None = None,
    ) -> None:
        """``state``: an unfinished run's state, folded from its log, to :meth:`resume`
        (``ids`` should then be made with the ``restart`` that resume will record).

        ``conversation``: the run does not end with the coordinator's turn. The coordinator
        chat stays open and each message queued to it (:meth:`queue`) is its next turn; a
        turn that fails or is cancelled (:meth:`cancel_turn`) ends only itself. The run
        ends when :meth:`close` is called (or the team is cancelled). The daemon runs its
        sessions this way: one session, many prompts. ``session``: the new session's URI
        (default: a fresh one), for a client that names its thread. ``background``: the
        ``[[background]]`` teammate whose wake this run is (recorded on ``team/runStarted``).
        ``callback``: where the team's command tools post view updates (the daemon's
        ``POST /callback``); None outside a daemon (see :mod:`orchestrator.runtime._command_tool`).
        """
        self.team = team
        self.ids = ids or Ids(
            restart=0 if state is None or state.run is None else state.run.restarts + 1
        )
        if state is not None:
            self.session = state.session_uri
        else:
            self.session = session if session is not None else self.ids.session()
        self.state = state if state is not None else TeamState(self.session)
        self.bus = bus or FactBus()
        self.recorder = Recorder(self.state, factlog or MemoryFactLog(), self.bus, clock=clock)
        self.recorder.on_failed = self._log_failed
        self._backends = backends
        self._backend_cache: dict[str, Backend] = {}
        self._tool_cache: dict[str, tuple[ToolDefinition, ...]] = {}
        self._limiter = trio.CapacityLimiter(team.parallel_budget)
        self._scopes: dict[str, trio.CancelScope] = {}
        self._approvals: dict[str, _Decision] = {}
        self._inputs: dict[tuple[str, str], _Decision] = {}
        self._session_scope: trio.CancelScope | None = None
        # Chats that take steering and queued messages: from their first turn until they
        # decide, with the recorder held, that no queued message is left (see _run_chat).
        self._open_chats: set[str] = set()
        # Delegations waiting for a place in the budget, by task id (see cancel_task).
        self._waiting: dict[str, trio.CancelScope] = {}
        self.conversation = conversation
        self.background = background
        self.callback = callback
        self._closing = False
        self._prompted = trio.Event()  # a conversation's idle coordinator waits on it
        self._turn_scopes: dict[str, trio.CancelScope] = {}  # a conversation's current turn
        # stop(): cancellations record nothing, so the journal holds what a crash would.
        self._stopping = False

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
                        background=self.background,
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
        self.recorder.factlog.describe(
            self.session, team_file=self.team.file, team_toml=self.team.source
        )
        task_status.started(self.session)
        log.info("run started", session=self.session, team=self.team.name, chat=chat)
        message = Message(text=prompt, origin=MessageOrigin(kind=MessageKind.USER))
        return await self._drive(run_id, _ChatContext(chat, coordinator, root_task), message)

    async def resume(
        self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED
    ) -> RunOutcome:
        """Take up the unfinished run this runtime was given the state of, after a stop.

        One atomic batch (see :func:`~orchestrator.core._recovery.plan_recovery`) ends what the
        stop cut off; then parked turns go on and cut-off ones run again or are reported
        failed, as the team's ``on_restart`` says. Raises :class:`RunError` if the run has
        finished (or never started).
        """
        run = self.state.run
        chat = self.state.coordinator_chat()
        if run is None or chat is None:
            raise RunError(f"{self.session} has no run to resume")
        if run.status is not None:
            raise RunError(f"the run of {self.session} has already {run.status}")
        self._check_team_fits()  # before the first fact: a team that does not fit writes none
        try:
            plan = plan_recovery(self.state, self.team.on_restart, now=self.recorder.clock())
        except ValueError as exc:
            raise RunError(str(exc)) from None
        await self.recorder.record(list(plan.actions))
        self._await_surviving_decisions()
        task_status.started(self.session)
        log.info(
            "run resumed",
            session=self.session,
            restart=self.state.run.restarts if self.state.run else 0,
            policy=str(self.team.on_restart),
            interrupted=len(plan.interrupted),
        )
        if plan.coordinator_cut_off and self.team.on_restart is RestartPolicy.FAIL:
            return await self._finish(run.run, RunStatus.FAILED, error=INTERRUPTED_SUMMARY)
        coordinator = self.team.agent(self.team.coordinator)
        message = Message(text=run.prompt, origin=MessageOrigin(kind=MessageKind.USER))
        return await self._drive(
            run.run, _ChatContext(chat, coordinator, run.task), message, resume=True
        )

    def _check_team_fits(self) -> None:
        """:class:`RunError` if the team file lacks what the stopped run used: an agent one
        of its chats or tasks runs, or its coordinator."""
        used = {m.agent for m in self.state.members.values()}
        used |= {t.agent for t in self.state.tasks.values()}
        missing = sorted(used - set(self.team.agent_names))
        coordinator_chat = self.state.coordinator_chat()
        member = self.state.members.get(coordinator_chat or "")
        problems = []
        if missing:
            problems.append(f"it has no agent {', '.join(repr(a) for a in missing)}")
        if member is not None and member.agent != self.team.coordinator:
            problems.append(
                f"its coordinator is {self.team.coordinator!r}, the run's was {member.agent!r}"
            )
        if problems:
            raise RunError(
                f"{self.session} cannot be resumed with {self.team.file}: "
                f"{'; '.join(problems)} (resume with the team file the run started with: "
                "leave out --team)"
            )

    def _await_surviving_decisions(self) -> None:
        """Open a decision for every approval and question that survived the stop, so they
        can be answered as soon as :meth:`resume` reports the run started, before the turns
        that wait on them have been taken up again."""
        for record in self.state.pending_approvals():
            self._approvals[record.request.approval] = _Decision()
        for chat, request in open_questions(self.state):
            question = (request.questions or (None,))[0]
            self._inputs[(chat, request.id)] = _Decision(question=question)

    def waiting_for_user(
        self,
    ) -> tuple[list[ApprovalRequested], list[tuple[str, ChatInputRequest]]]:
        """The approvals routed to the user and the open questions, as the state has them
        (for a console that joins a resumed run: they were asked before it started)."""
        approvals = [
            record.request
            for record in self.state.pending_approvals()
            if record.request.routed_to == USER
        ]
        return approvals, open_questions(self.state)

    async def _drive(
        self, run_id: str, ctx: _ChatContext, message: Message, *, resume: bool = False
    ) -> RunOutcome:
        """Run the coordinator's chat to the end of the run, and record how it ended."""
        chat = ctx.chat
        try:
            with trio.CancelScope() as scope:
                self._session_scope = scope
                self._scopes[chat] = scope
                try:
                    if self.conversation:
                        result = await self._converse(ctx, message, resume=resume)
                    else:
                        result = await self._run_chat(ctx, message, resume=resume)
                except TurnFailedError as exc:
                    return await self._finish(run_id, RunStatus.FAILED, error=str(exc))
                except Exception as exc:
                    if self.recorder.failed is not None:
                        return self._lost(self.recorder.failed)
                    log.exception("coordinator crashed", session=self.session, chat=chat)
                    return await self._finish(
                        run_id, RunStatus.FAILED, error=f"internal error: {exc!r}"
                    )
                except BaseException as exc:
                    if is_cancellation(exc) and not self._stopping:
                        with trio.CancelScope(shield=True):
                            await self._finish(run_id, RunStatus.CANCELLED, error=CANCELLED)
                    raise
                finally:
                    self._scopes.pop(chat, None)
                return await self._finish(run_id, RunStatus.COMPLETED, result=result.text)
        except* FactLogError:
            # The log failed and _log_failed cancelled the session: the tasks' errors come
            # grouped with their cancellations, which the session scope took.
            if self.recorder.failed is None:
                raise
        # Only reached when cancel() or stop() cancelled the session scope, which absorbed
        # the cancellation after the run was recorded cancelled (or, stopping, not at all),
        # or the fact log failed while no turn of the coordinator was recording.
        if self.recorder.failed is not None:
            return self._lost(self.recorder.failed)
        return RunOutcome(
            session=self.session,
            status=RunStatus.CANCELLED,
            error=STOPPED if self._stopping else CANCELLED,
        )

    def _log_failed(self, error: FactLogError) -> None:
        """The fact log failed this session: every task of it ends, recording nothing (as
        :meth:`stop`), wherever it was, an idle conversation included; the run ends
        :meth:`_lost`."""
        self._stopping = True
        if self._session_scope is not None:
            self._session_scope.cancel()

    def _lost(self, error: FactLogError) -> RunOutcome:
        """The run stops where its fact log failed: nothing more can be recorded (not even
        that it failed), and what was recorded up to there is all that is durable."""
        log.error(
            "run stopped: the fact log failed",
            session=self.session,
            durable_through=self.state.last_sequence,
            error=str(error),
        )
        return RunOutcome(
            session=self.session,
            status=RunStatus.FAILED,
            error=(
                f"the fact log failed, so the run stopped: {error} (facts 1 to "
                f"{self.state.last_sequence} of {self.session} are durable)"
            ),
        )

    async def _finish(
        self, run_id: str, status: RunStatus, *, result: str = "", error: str = ""
    ) -> RunOutcome:
        try:
            await self.recorder.record(
                [(self.session, RunFinished(run=run_id, status=status, result=result, error=error))]
            )
        except FactLogError as exc:
            return self._lost(exc)
        log.info("run finished", session=self.session, status=str(status))
        return RunOutcome(session=self.session, status=status, result=result, error=error)

    # ── controls (from the CLI, clients, tests) ─────────────────────────────

    def cancel(self) -> None:
        """Cancel the whole team: every running turn ends cancelled, the run ``cancelled``."""
        if self._session_scope is not None:
            self._session_scope.cancel()

    def stop(self) -> None:
        """Stop with the process: every task ends, and nothing more is recorded.

        The journal is left as a crash would leave it, but whole: the run stays unfinished,
        its cut-off turns, running tool calls and waiting tasks are ended at the next start
        by recovery, as the team's ``on_restart`` says (see :meth:`resume`).
        """
        self._stopping = True
        if self._session_scope is not None:
            self._session_scope.cancel()

    def close(self) -> None:
        """End a conversation: once its queued prompts are done the run finishes
        ``completed`` with the last turn's answer. No effect on a run that is not one."""
        self._closing = True
        self._prompted.set()

    def cancel_turn(self, chat: str) -> None:
        """Cancel the running turn of a conversation's coordinator; the run goes on."""
        scope = self._turn_scopes.get(chat)
        if scope is None:
            raise RunError(f"no running turn in {chat}")
        scope.cancel()

    def cancel_worker(self, chat: str) -> None:
        """Cancel one worker and its subtree; its task is reported ``killed``."""
        scope = self._scopes.get(chat)
        if scope is None or chat == self.state.coordinator_chat():
            raise RunError(f"no running worker chat {chat}")
        scope.cancel()

    def cancel_task(self, task: str) -> None:
        """Cancel a delegated task, queued or running; it is reported ``killed``."""
        record = self.state.tasks.get(task)
        if record is None or record.requested_by is None:
            raise RunError(f"no delegated task {task!r}")
        waiting = self._waiting.get(task)
        if waiting is not None:
            waiting.cancel()
        elif record.chat is not None and record.chat in self._scopes:
            self.cancel_worker(record.chat)
        else:
            raise RunError(f"task {task!r} is {record.status}: there is nothing to cancel")

    async def resolve_approval(
        self, approval: str, *, approved: bool, by: str = USER, principal: str | None = None
    ) -> None:
        """Decide a pending approval; returns once the decision has been applied.

        ``principal``: who decided, behind ``by`` (a client's identity), recorded with it.

        Raises :class:`RunError` for an approval that is not pending, has been decided
        already, is routed to someone else, or was withdrawn because its requester stopped
        before the decision could be applied.
        """
        decision = self._approvals.get(approval)
        record = self.state.approvals.get(approval)
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
        applied = self.state.approvals[approval]
        if applied.decision is ApprovalDecision.WITHDRAWN:
            raise RunError(
                f"approval {approval!r} was withdrawn: {applied.request.requested_by} stopped "
                "before the decision could be applied"
            )

    async def answer_input(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None:
        """Answer (or decline/cancel) an open input request of ``chat``.

        ``answer`` is read as its question asks (:func:`parse_answer`): a number, yes or no,
        option ids... :class:`RunError` says what was expected, and the request stays open.
        """
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

    async def steer(self, chat: str, text: str) -> str:
        """Inject a steering message into a running chat (read at its next model round);
        returns the message's id."""
        return await self._set_pending(chat, text, PendingMessageKind.STEERING)

    async def queue(self, chat: str, text: str) -> str:
        """Queue a message that starts a new turn once the chat's current turn finishes
        (at once, for a conversation's idle coordinator); returns the message's id, which
        the turn it starts records as its ``queuedMessageId``."""
        return await self._set_pending(chat, text, PendingMessageKind.QUEUED)

    async def _set_pending(self, chat: str, text: str, kind: PendingMessageKind) -> str:
        state = self.state.chats.get(chat)
        if state is None:
            raise RunError(f"no chat {chat} in session {self.session}")

        def still_open() -> None:
            # Checked in the same atomic step as the batch's submission: a chat that is
            # closing either sees this message (and runs it) or has closed, never neither.
            if chat not in self._open_chats:
                raise RunError(f"chat {chat} is not running: it cannot take a {kind} message")

        message = Message(text=text, origin=MessageOrigin(kind=MessageKind.USER))
        message_id = self.ids.numbered("message")
        await self.recorder.record(
            [(chat, ChatPendingMessageSetAction(kind=kind, id=message_id, message=message))],
            guard=still_open,
        )
        if kind is PendingMessageKind.QUEUED:
            self._prompted.set()  # an idle conversation takes it up now
        return message_id

    async def _record_cancelled(self, actions: Sequence[tuple[str, Action]]) -> None:
        """Record what a cancellation ended, shielded (the batch must land while the
        cancellation is on its way), unless the runtime is stopping (see :meth:`stop`)."""
        if self._stopping:
            return
        with trio.CancelScope(shield=True):
            await self.recorder.record(actions)

    # ── chats and turns ──────────────────────────────────────────────────────

    def _backend(self, agent: AgentSpec) -> Backend:
        backend = self._backend_cache.get(agent.name)
        if backend is None:
            backend = self._backends(agent)
            self._backend_cache[agent.name] = backend
        return backend

    def _tools(self, agent: AgentSpec) -> tuple[ToolDefinition, ...]:
        tools = self._tool_cache.get(agent.name)
        if tools is None:
            tools = self._tool_cache[agent.name] = tool_definitions(self.team, agent)
        return tools

    async def _run_chat(
        self, ctx: _ChatContext, message: Message, *, resume: bool = False
    ) -> _TurnResult:
        """Run a turn for ``message``, then one per queued message, in order.

        ``resume``: the chat exists from before a restart; take it up where it stood
        (:meth:`_resume_turn`) instead of starting with ``message``.
        """
        self._open_chats.add(ctx.chat)
        try:
            if resume:
                result = await self._resume_turn(ctx, message)
            else:
                result = await self._run_turn(ctx, message, queued_id=None)
            while True:
                # No await between this check and closing: a queued message submitted
                # before it is seen here (in flight or durable) and run; one submitted
                # after finds the chat closed (see _set_pending's guard).
                latest = self.state.latest_chat(ctx.chat)
                queued = latest.queued_messages if latest is not None else None
                if not queued:
                    self._open_chats.discard(ctx.chat)
                    return result
                result = await self._run_turn(ctx, queued[0].message, queued_id=queued[0].id)
        finally:
            self._open_chats.discard(ctx.chat)

    async def _converse(
        self, ctx: _ChatContext, message: Message, *, resume: bool = False
    ) -> _TurnResult:
        """A conversation's coordinator: a turn for ``message``, then one per queued
        message, waiting for the next while idle, until :meth:`close`.

        A turn that fails or is cancelled by :meth:`cancel_turn` ends itself only (its facts
        say how); the answer of the run is that of its last completed turn.
        """
        self._open_chats.add(ctx.chat)
        result = _TurnResult(text="", input_tokens=0, output_tokens=0)
        first = True
        try:
            while True:
                if first:
                    first = False
                    turn = (
                        self._resume_turn(ctx, message)
                        if resume
                        else self._run_turn(ctx, message, queued_id=None)
                    )
                else:
                    # As in _run_chat: no await between this check and closing.
                    latest = self.state.latest_chat(ctx.chat)
                    queued = latest.queued_messages if latest is not None else None
                    if not queued:
                        if self._closing:
                            return result
                        self._prompted = trio.Event()
                        await self._prompted.wait()
                        continue
                    turn = self._run_turn(ctx, queued[0].message, queued_id=queued[0].id)
                with trio.CancelScope() as scope:
                    self._turn_scopes[ctx.chat] = scope
                    try:
                        result = await turn
                    except TurnFailedError as exc:
                        log.info("conversation turn failed", chat=ctx.chat, error=str(exc))
                    finally:
                        del self._turn_scopes[ctx.chat]
        finally:
            self._open_chats.discard(ctx.chat)

    async def _resume_turn(self, ctx: _ChatContext, message: Message) -> _TurnResult:
        """Take a chat up after a restart: its parked turn goes on; a turn the stop cut off
        runs again (or fails, as ``on_restart`` says); a finished turn is its result.

        ``message`` starts a chat that had not begun its first turn.
        """
        chat = self.state.chats[ctx.chat]
        if chat.active_turn is not None:
            point = resume_point(self.state, ctx.chat)
            # plan_recovery ended every active turn that cannot go on.
            assert point is not None, f"{ctx.chat}: an active turn recovery did not end"
            return await self._run_turn(ctx, chat.active_turn.message, queued_id=None, resume=point)
        last = chat.turns[-1] if chat.turns else None
        if last is None:
            return await self._run_turn(ctx, message, queued_id=None)
        if is_interrupted(last):
            if self.team.on_restart is RestartPolicy.FAIL:
                raise TurnFailedError(f"{ctx.agent.name}: {INTERRUPTED_SUMMARY}")
            return await self._run_turn(ctx, last.message, queued_id=None)
        if last.state is TurnState.COMPLETE:
            usage = last.usage
            return _TurnResult(
                text=turn_text(last),
                input_tokens=(usage.input_tokens or 0) if usage else 0,
                output_tokens=(usage.output_tokens or 0) if usage else 0,
            )
        reason = last.error.message if last.error is not None else str(last.state)
        raise TurnFailedError(f"{ctx.agent.name}: {reason}")

    async def _run_turn(
        self,
        ctx: _ChatContext,
        message: Message,
        *,
        queued_id: str | None,
        resume: ResumePoint | None = None,
    ) -> _TurnResult:
        """Run one turn (or, with ``resume``, go on with a parked one) to its end."""
        chat = ctx.chat
        started = trio.current_time()
        round_index = 0
        if resume is None:
            turn_id = self.ids.numbered("turn")
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
        else:
            turn_id = resume.turn_id
            round_index = resume.round_index
        ctx.turn_id = turn_id
        outcomes: tuple[ToolOutcome, ...] = ()
        input_tokens = output_tokens = 0
        text = ""
        ctx.steering = []
        attempt = interrupted_turns(self.state.chats[chat])
        try:
            backend = self._backend(ctx.agent)  # inside: a backend that cannot start fails the turn
            if resume is not None:
                ctx.round_index = round_index
                outcomes = await self._run_tools(ctx, resume.requests, resumed=resume)
                round_index += 1
            while True:
                ctx.round_index = round_index
                await self._consume_steering(ctx)
                context = RoundContext(
                    chat=chat,
                    agent=ctx.agent.name,
                    task=message.text,
                    round_index=round_index,
                    history=conversation(self.state.chats[chat]),
                    outcomes=outcomes,
                    steering=tuple(ctx.steering),
                    attempt=attempt,
                    chat_state=self.state.chats[chat],
                    tools=self._tools(ctx.agent),
                )
                requests, round_text, usage = await self._stream_round(ctx, backend, context)
                text = round_text or text
                if usage is not None:
                    input_tokens += usage.input_tokens
                    output_tokens += usage.output_tokens
                if not requests:
                    break
                outcomes = await self._run_tools(ctx, requests)
                round_index += 1
        except Exception as exc:
            if self.recorder.failed is not None:
                raise  # nothing can be recorded any more: the run is going down (see run)
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
                await self._record_cancelled(
                    [(chat, ChatTurnCancelledAction(turn_id=turn_id, duration=_ms(started)))]
                )
            raise
        await self.recorder.record(
            [(chat, ChatTurnCompleteAction(turn_id=turn_id, duration=_ms(started)))]
        )
        return _TurnResult(text=text, input_tokens=input_tokens, output_tokens=output_tokens)

    async def _run_tools(
        self,
        ctx: _ChatContext,
        requests: Sequence[ToolCallRequest],
        *,
        resumed: ResumePoint | None = None,
    ) -> tuple[ToolOutcome, ...]:
        """Run one round's tool calls in parallel; their outcomes in request order.

        ``resumed``: the round was parked when the process stopped; the calls it had done
        keep their outcomes, the others are taken up where they stood.
        """
        done = resumed.done if resumed is not None else {}
        requests = [r for r in requests if r.tool_call_id not in done] if done else requests
        delegations = sum(1 for r in requests if r.tool_name == "delegate")
        turnstile = _Turnstile(delegations)
        results: list[ToolOutcome | None] = [None] * len(requests)
        # While its own workers run, a delegated worker waits: its place in the budget is
        # theirs to use (see _Slot).
        lending = ctx.slot is not None and ctx.slot.held and delegations > 0
        if lending:
            self._release_slot(ctx.slot)
        async with trio.open_nursery() as nursery:
            order = itertools.count()
            for index, request in enumerate(requests):
                position = next(order) if request.tool_name == "delegate" else None
                nursery.start_soon(
                    self._run_tool,
                    ctx,
                    request,
                    results,
                    index,
                    turnstile,
                    position,
                    resumed is not None,
                )
        if lending:
            await self._take_slot(ctx.slot)
        if resumed is not None:
            outcomes = {r.tool_call_id: r for r in results if r is not None} | dict(done)
            return tuple(
                outcomes[r.tool_call_id] for r in resumed.requests if r.tool_call_id in outcomes
            )
        return tuple(r for r in results if r is not None)

    async def _take_slot(self, slot: _Slot | None) -> None:
        assert slot is not None
        assert not slot.held
        await self._limiter.acquire_on_behalf_of(slot)
        slot.held = True

    def _release_slot(self, slot: _Slot | None) -> None:
        if slot is not None and slot.held:
            self._limiter.release_on_behalf_of(slot)
            slot.held = False

    async def _consume_steering(self, ctx: _ChatContext) -> None:
        steering = self.state.chats[ctx.chat].steering_message
        if steering is not None:
            await self.recorder.record(
                steering_injected(ctx.chat, ctx.turn_id, steering.id, steering.message.text)
            )
            ctx.steering.append(steering.message.text)

    async def _stream_round(
        self, ctx: _ChatContext, backend: Backend, context: RoundContext
    ) -> tuple[list[ToolCallRequest], str, UsageReport | None]:
        """Turn one model round into facts; return its tool calls, text and usage."""
        chat, turn_id = ctx.chat, ctx.turn_id
        requests: list[ToolCallRequest] = []
        usage: UsageReport | None = None
        open_part: tuple[str, str] | None = None  # (kind, part id) being appended to
        streaming: set[str] = set()  # tool calls started whose input is still streaming
        text_parts: list[str] = []
        # The latest requested tool call's batch, submitted but not waited for: a round's
        # requests come together (at the end of an OpenAI stream, say), so they are written
        # together, and waited for once before the round's tools may run. Every record
        # below waits for them too, as batches become durable in order.
        requested: PendingBatch | None = None
        # Closed when the round ends however it ends, so a backend's stream (an HTTP
        # response, say) is never left to the garbage collector.
        async with aclosing(backend.stream_round(context)) as stream:
            async for event in stream:
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
                    case ToolCallStarted(tool_call_id=tool_call_id, tool_name=tool_name):
                        open_part = None
                        streaming.add(tool_call_id)
                        await self.recorder.record(
                            [(chat, self._tool_call_start(ctx, tool_call_id, tool_name))]
                        )
                    case ToolCallInputDelta(tool_call_id=tool_call_id, text=chunk):
                        if tool_call_id not in streaming:
                            raise RunError(f"tool call {tool_call_id} was not started")
                        delta = ChatToolCallDeltaAction(
                            turn_id=turn_id, tool_call_id=tool_call_id, content=chunk
                        )
                        await self.recorder.record([(chat, delta)])
                    case ToolCallRequest():
                        open_part = None
                        started = event.tool_call_id in streaming
                        streaming.discard(event.tool_call_id)
                        requested = self._tool_call_ready(ctx, event, started=started)
                        requests.append(event)
                    case UsageReport():
                        usage = event
        if requested is not None:
            await requested.wait()
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

    def _tool_call_start(
        self,
        ctx: _ChatContext,
        tool_call_id: str,
        tool_name: str,
        request: ToolCallRequest | None = None,
    ) -> ChatToolCallStartAction:
        return ChatToolCallStartAction(
            turn_id=ctx.turn_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            display_name=_display_name(tool_name, request),
            # Which model round asked for it: a turn resumed after a restart goes on from
            # the round after its last one.
            meta={ROUND_META: ctx.round_index},
        )

    def _tool_call_ready(
        self, ctx: _ChatContext, request: ToolCallRequest, *, started: bool
    ) -> PendingBatch:
        """Submit a requested tool call up to ``running`` or ``pending-confirmation``.

        ``started``: the backend streamed the call's input (``chat/toolCallStart`` and its
        deltas are recorded); otherwise the start goes in the same batch as the ready.
        A call whose input cannot run needs no approval: it will not run.
        """
        if request.input_error is not None:
            tool_input = request.raw_input or "{}"
            needs_approval = False
        else:
            tool_input = json.dumps(request.arguments, sort_keys=True, ensure_ascii=False)
            needs_approval = ctx.agent.needs_approval_for(request.tool_name)
        ready = ChatToolCallReadyAction(
            turn_id=ctx.turn_id,
            tool_call_id=request.tool_call_id,
            invocation_message=_invocation(request),
            tool_input=tool_input,
            confirmation_title=f"Run {request.tool_name}" if needs_approval else None,
            confirmed=None if needs_approval else ToolCallConfirmationReason.NOT_NEEDED,
        )
        batch: list[tuple[str, Action]] = [(ctx.chat, ready)]
        if not started:
            start = self._tool_call_start(ctx, request.tool_call_id, request.tool_name, request)
            batch.insert(0, (ctx.chat, start))
        return self.recorder.submit(batch)

    # ── tools ────────────────────────────────────────────────────────────────

    async def _run_tool(
        self,
        ctx: _ChatContext,
        request: ToolCallRequest,
        results: list[ToolOutcome | None],
        index: int,
        turnstile: _Turnstile,
        position: int | None,
        resumed: bool = False,
    ) -> None:
        """Run one tool call to completion, recording its result; never raises but Cancelled.

        ``position`` is the call's place among the round's delegations (None for other tools).
        ``resumed``: the call was recorded before a restart; it goes on from where it stood.
        """
        tool = request.tool_name
        if request.input_error is not None:
            results[index] = await self._complete(
                ctx, request, success=False, output=request.input_error
            )
            if position is not None:
                turnstile.passed(position)
            return
        gated = ctx.agent.needs_approval_for(tool)
        was_running = False
        call = tool_call_of(self.state, ctx.chat, request.tool_call_id) if resumed else None
        if resumed:
            gated = isinstance(call, ToolCallPendingConfirmationState)
            was_running = isinstance(call, ToolCallRunningState)
        try:
            if tool not in ctx.agent.tools:
                raise RunError(f"agent {ctx.agent.name!r} has no tool {tool!r}")
            if gated:
                if position is not None:
                    turnstile.passed(position)  # a gated delegation keeps no one waiting
                pending = (
                    pending_approval_of(self.state, ctx.chat, request.tool_call_id)
                    if resumed
                    else None
                )
                approved, reason = await self._await_approval(ctx, request, pending=pending)
                if not approved:
                    results[index] = ToolOutcome(
                        tool_call_id=request.tool_call_id,
                        tool_name=tool,
                        success=False,
                        output=reason,
                    )
                    return
            if tool == "delegate":
                assert position is not None
                task = task_of_call(self.state, ctx.chat, request.tool_call_id) if resumed else None
                outcome = await self._delegate(ctx, request, turnstile, position, task=task)
            elif tool == "handoff":
                specialist = subagent_of(call) if call is not None else None
                outcome = await self._handoff(ctx, request, specialist=specialist)
            elif tool == "ask":
                outcome = await self._ask(ctx, request, resumed=resumed)
            elif was_running:
                # It may or may not have run before the stop: never run a tool twice.
                outcome = await self._complete(
                    ctx, request, success=False, output=f"{tool} was {INTERRUPTED_SUMMARY}"
                )
            else:
                outcome = await self._plain_tool(ctx, request)
        except RunError as exc:
            # A refused call (unknown agent, tool not allowed...) ends as a failed tool call.
            outcome = await self._complete(ctx, request, success=False, output=str(exc))
        finally:
            if position is not None:
                turnstile.passed(position)
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
        await self.recorder.record(
            tool_result_actions(
                ctx.chat,
                ctx.turn_id,
                request.tool_call_id,
                request.tool_name,
                success=success,
                output=output,
                extra=extra,
                content_before=content_before,
            )
        )
        return ToolOutcome(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            success=success,
            output=output,
        )

    async def _plain_tool(self, ctx: _ChatContext, request: ToolCallRequest) -> ToolOutcome:
        """A command tool runs its program; any other plain tool answers its scripted result."""
        command = self.team.command_tool(request.tool_name)
        if command is None:
            await trio.lowlevel.checkpoint()
            return await self._complete(
                ctx, request, success=True, output=ctx.agent.tool_result(request.tool_name)
            )
        env = command_environment(
            os.environ,
            command,
            session=self.session,
            tool_call_id=request.tool_call_id,
            callback=self.callback,
        )
        with structlog.contextvars.bound_contextvars(tool_call=request.tool_call_id):
            result = await run_command(command, request.arguments, env)
        return await self._complete(ctx, request, success=result.success, output=result.output)

    async def _await_approval(
        self, ctx: _ChatContext, request: ToolCallRequest, *, pending: ApprovalRecord | None
    ) -> tuple[bool, str]:
        """Route the approval, wait for the decision, apply it; return (approved, reason).

        If the requesting chat stops first (cancelled, timed out), the approval is recorded
        ``withdrawn``: no approval is left pending for a tool call that can no longer run.
        ``pending``: the approval was requested before a restart; wait for it again.
        """
        if pending is not None:
            approval, routed_to = pending.request.approval, pending.request.routed_to
        else:
            approval = self.ids.numbered("approval")
            coordinator_chat = self.state.coordinator_chat()
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
            if requested:
                await self.recorder.record(requested)
            if routed_to != USER:
                # The team policy gives the coordinator this decision: it approves the tools
                # its team file lists under ``approves`` and denies the rest.
                coordinator = self.team.coordinator_agent
                decision.approved = request.tool_name in (coordinator.approves or ())
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
            await self.recorder.record(
                [
                    (ctx.chat, confirm),
                    (
                        self.session,
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
            if not resolved and approval in self.state.approvals and is_cancellation(exc):
                await self._record_cancelled(
                    [
                        (
                            self.session,
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

    async def _ask(
        self, ctx: _ChatContext, request: ToolCallRequest, *, resumed: bool = False
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
        turn = self.state.chats[ctx.chat].active_turn
        already_open = resumed and turn is not None and has_open_input(turn, request_id)
        try:
            if not already_open:
                await self.recorder.record(
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
        return await self._complete(
            ctx, request, success=accepted, output=output, extra=[(ctx.chat, completed)]
        )

    async def _delegate(
        self,
        ctx: _ChatContext,
        request: ToolCallRequest,
        turnstile: _Turnstile,
        position: int,
        *,
        task: TaskRecord | None = None,
    ) -> ToolOutcome:
        """Delegate the call's task to a worker and wait for its report.

        ``task``: the call had created it before a restart; it goes on from there.
        """
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
        worker = self.team.agent(target)
        await turnstile.wait(position)
        task_id = self.ids.numbered("task")
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
        slot = _Slot()
        try:
            self._limiter.acquire_on_behalf_of_nowait(slot)
            slot.held = True
        except trio.WouldBlock:
            await self.recorder.record([(self.session, created)])
            # Only once durable (no checkpoint until this task is in the budget's queue): a
            # later delegation must neither take a place freed meanwhile nor queue ahead.
            turnstile.passed(position)
            log.info(
                "delegation queued",
                task=task_id,
                agent=worker.name,
                budget=self.team.parallel_budget,
            )
            if not await self._wait_for_slot(task_id, slot, started):
                return await self._queued_task_killed(ctx, request, task_id, worker, started)
        return await self._start_worker(
            ctx, request, worker, created, slot, lambda: turnstile.passed(position)
        )

    async def _queued_task_killed(
        self,
        ctx: _ChatContext,
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
        ctx: _ChatContext,
        request: ToolCallRequest,
        worker: AgentSpec,
        created: TaskCreated,
        slot: _Slot,
        spawned: Callable[[], None],
    ) -> ToolOutcome:
        """Spawn the worker of a task (holding ``slot``), supervise it and report back.

        ``spawned`` runs once the spawn is submitted (it lets the next delegation of the
        round submit its own behind it, so that the round's spawns are written together
        rather than one durable write after another); the worker starts once its spawn is
        durable. ``created`` is recorded with the spawn unless the task was queued.
        """
        task, task_text = created.task, created.title
        try:
            worker_chat = self.ids.chat()
            subagent = ToolResultSubagentContent(
                resource=worker_chat, title=task_text, agent_name=worker.name
            )
            spawn: list[tuple[str, Action]] = []
            if task not in self.state.tasks:  # it did not wait: created and started at once
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
            pending = self.recorder.submit(spawn)
            spawned()
            await pending.wait()
            status, summary, usage, duration = await self._supervise_worker(
                _ChatContext(worker_chat, worker, task, slot=slot), task_text, own_task=True
            )
        finally:
            self._release_slot(slot)
        finished = TaskFinished(
            task=task,
            status=status,
            summary=summary,
            duration_ms=duration,
            input_tokens=usage[0],
            output_tokens=usage[1],
            chat=worker_chat,
        )
        return await self._delegation_ended(ctx, request, finished, worker, subagent=subagent)

    async def _resume_delegation(
        self, ctx: _ChatContext, request: ToolCallRequest, record: TaskRecord
    ) -> ToolOutcome:
        """Take up a task the call created before a restart: queued, it waits for its place
        again; running, its worker chat goes on (see :meth:`_resume_turn`)."""
        worker = self.team.agent(record.agent)
        started = trio.current_time()
        slot = _Slot()
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
        call = tool_call_of(self.state, ctx.chat, request.tool_call_id)
        subagent = (subagent_of(call) if call is not None else None) or ToolResultSubagentContent(
            resource=record.chat, title=record.title, agent_name=worker.name
        )
        worker_ctx = _ChatContext(record.chat, worker, record.task, slot=slot)
        try:
            try:
                await self._take_slot(slot)  # it held one when the process stopped
            except BaseException as exc:
                if is_cancellation(exc):
                    # Cancelled before the worker could go on: end its subtree as the stop
                    # left it, and its task killed.
                    await self._record_cancelled(
                        [
                            *cut_off(self.state, record.chat, now=self.recorder.clock()),
                            (self.session, self._killed(worker_ctx, started)),
                        ]
                    )
                raise
            status, summary, usage, duration = await self._supervise_worker(
                worker_ctx, record.title, own_task=True, resume=True
            )
        finally:
            self._release_slot(slot)
        finished = TaskFinished(
            task=record.task,
            status=status,
            summary=summary,
            duration_ms=duration,
            input_tokens=usage[0],
            output_tokens=usage[1],
            chat=record.chat,
        )
        return await self._delegation_ended(ctx, request, finished, worker, subagent=subagent)

    async def _wait_for_slot(self, task: str, slot: _Slot, started: float) -> bool:
        """Wait in the queue for a place in the budget; False if the task was cancelled there.

        A cancellation from above (the team, or the delegating chat, going down) records the
        queued task ``killed`` before it propagates.
        """
        try:
            with trio.CancelScope() as waiting:
                self._waiting[task] = waiting
                await self._take_slot(slot)
        except BaseException as exc:
            if is_cancellation(exc):
                killed = TaskFinished(
                    task=task,
                    status=TaskStatus.KILLED,
                    summary=CANCELLED,
                    duration_ms=_elapsed_ms(started),
                )
                await self._record_cancelled([(self.session, killed)])
            raise
        finally:
            self._waiting.pop(task, None)
        return not waiting.cancelled_caught

    async def _delegation_ended(
        self,
        ctx: _ChatContext,
        request: ToolCallRequest,
        finished: TaskFinished,
        worker: AgentSpec,
        *,
        subagent: ToolResultSubagentContent | None,
    ) -> ToolOutcome:
        """Report a finished task back: the task fact, a worker notification in the delegating
        chat's turn and the delegate call's result, in one batch."""
        await self.recorder.record(
            delegation_report(
                self.session,
                ctx.chat,
                ctx.turn_id,
                request.tool_call_id,
                finished,
                worker=worker.name,
                subagent=subagent,
            )
        )
        return ToolOutcome(
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            success=finished.status is TaskStatus.COMPLETED,
            output=delegation_output(worker.name, finished),
        )

    async def _supervise_worker(
        self, ctx: _ChatContext, task_text: str, *, own_task: bool, resume: bool = False
    ) -> tuple[TaskStatus, str, tuple[int, int], int]:
        """Run a worker chat behind its error barrier, timeout and cancel scope.

        ``own_task``: the worker owns ``ctx.task`` (a delegation), so a
        cancellation from above (the whole team) records that task ``killed``.
        ``resume``: the chat exists from before a restart and goes on where it stood.
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
                        result = await self._run_chat(ctx, message, resume=resume)
                        summary = result.text
                        usage = (result.input_tokens, result.output_tokens)
                    if timer is not None and timer.cancelled_caught:
                        status = TaskStatus.FAILED
                        summary = f"timed out after {_seconds(timeout)}"
                except TurnFailedError as exc:
                    status, summary = TaskStatus.FAILED, str(exc.__cause__ or exc)
                except Exception as exc:  # the error barrier of one worker
                    if self.recorder.failed is not None:
                        raise  # the fact log failed: not this worker's failure (see run)
                    log.exception("worker crashed", chat=ctx.chat)
                    status, summary = TaskStatus.FAILED, f"internal error: {exc!r}"
                except BaseException as exc:
                    if own_task and is_cancellation(exc) and not scope.cancel_called:
                        # Cancelled from above: the team is going down; report the task.
                        self._scopes.pop(ctx.chat, None)
                        await self._record_cancelled([(self.session, self._killed(ctx, started))])
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

    async def _handoff(
        self,
        ctx: _ChatContext,
        request: ToolCallRequest,
        *,
        specialist: ToolResultSubagentContent | None = None,
    ) -> ToolOutcome:
        """Hand the task to a specialist chat until it is done, then take it back.

        ``specialist``: the chat the call handed off to before a restart; it goes on.
        """
        if specialist is not None:
            chosen = self.team.agent(specialist.agent_name or "")
            return await self._handed_off(ctx, request, chosen, specialist, resume=True)
        target = str(request.arguments.get("agent", ""))
        reason = str(request.arguments.get("reason", "")).strip() or "handoff"
        resume = str(request.arguments.get("resume", "")).strip() or ctx.agent.name
        if target not in ctx.agent.delegates_to:
            allowed = ", ".join(ctx.agent.delegates_to) or "nobody"
            raise RunError(f"{ctx.agent.name} may not hand off to {target!r} (allowed: {allowed})")
        agent = self.team.agent(target)
        specialist_chat = self.ids.chat()
        subagent = ToolResultSubagentContent(
            resource=specialist_chat, title=reason, agent_name=agent.name
        )
        task_title = self.state.tasks[ctx.task].title
        await self.recorder.record(
            [
                (
                    self.session,
                    _chat_added(
                        specialist_chat,
                        agent,
                        task_title,
                        ToolChatOrigin(chat=ctx.chat, tool_call_id=request.tool_call_id),
                        self.recorder.clock(),
                    ),
                ),
                (
                    self.session,
                    MemberJoined(
                        chat=specialist_chat,
                        agent=agent.name,
                        role=agent.role,
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
        ctx: _ChatContext,
        request: ToolCallRequest,
        specialist: AgentSpec,
        subagent: ToolResultSubagentContent,
        *,
        resume: bool,
    ) -> ToolOutcome:
        """Supervise the specialist a handoff spawned; then the task comes back."""
        reason = str(request.arguments.get("reason", "")).strip() or "handoff"
        resume_target = str(request.arguments.get("resume", "")).strip() or ctx.agent.name
        task_title = self.state.tasks[ctx.task].title
        status, summary, _usage, _duration = await self._supervise_worker(
            _ChatContext(subagent.resource, specialist, ctx.task),
            f"{task_title}\n\n({reason})",
            own_task=False,
            resume=resume,
        )
        back = (
            self.session,
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
STOPPED = "stopped with the process: the run resumes at the next start"


def is_cancellation(exc: BaseException) -> bool:
    """True for ``trio.Cancelled``, or a group (from a nursery) holding only cancellations."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(is_cancellation(inner) for inner in exc.exceptions)
    return False


def conversation(chat: ChatState) -> tuple[tuple[str, str], ...]:
    """The chat's conversation as (role, text) pairs, derived from its state.

    A turn a restart interrupted is left out: it runs again (or was reported failed), and
    the model should see the conversation as if the attempt had not happened.
    """
    history: list[tuple[str, str]] = []
    turns = [turn for turn in chat.turns if not is_interrupted(turn)]
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
            title=f"{agent.name}: {first_line(title)}",
            status=SessionStatus.IDLE,
            modified_at=now,
            origin=origin or UserChatOrigin(),
            interactivity=ChatInteractivity(agent.interactivity),
        )
    )


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


def answer_text(value: ChatInputAnswerValue) -> str:
    """An answer as the asking model reads it."""
    if isinstance(value, ChatInputBooleanAnswerValue):
        return "yes" if value.value else "no"
    if isinstance(value, ChatInputSelectedManyAnswerValue):
        return ", ".join(value.value)
    return str(value.value)


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


def _question(kind: str, message: str, options: Sequence[str]) -> ChatInputQuestion:
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


def _display_name(tool_name: str, request: ToolCallRequest | None) -> str:
    """How a UI names a call; ``request`` is None while the call's input is streaming."""
    if tool_name == "delegate":
        return f"Delegate to {request.arguments.get('agent', '?')}" if request else "Delegate"
    if tool_name == "handoff":
        return f"Hand off to {request.arguments.get('agent', '?')}" if request else "Hand off"
    if tool_name == "ask":
        return "Ask the user"
    return tool_name.replace("_", " ").capitalize()


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


def _ms(started: float) -> float:
    return round((trio.current_time() - started) * 1000, 3)


def _elapsed_ms(started: float) -> int:
    return int((trio.current_time() - started) * 1000)


def _seconds(value: float | None) -> str:
    if value is None or math.isinf(value):
        return "no limit"
    return f"{value:g}s"
