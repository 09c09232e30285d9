"""The team runtime: a session is a trio nursery, every chat a task in it.

Theory of operation
-------------------
Everything the runtime does becomes facts through one door,
:meth:`~orchestrator.runtime._recorder.Recorder.record`. A batch of ``(channel, action)``
pairs is validated and reduced against the current :class:`TeamState`. It is made durable,
committed, and only then published on the bus. It is all or nothing (see
:mod:`orchestrator.runtime._recorder`).

A turn of a chat is a loop of model rounds (see :mod:`orchestrator.core._model_round`).
Each round's tool calls run in parallel in a nursery owned by the turn. So the
tree of trio tasks *is* the delegation tree. A ``delegate`` call runs its
worker chat inside its own task, under a cancel scope kept per chat. Cancelling
a worker cancels its subtree; cancelling the session cancels everything. Every
worker runs behind an error barrier. An exception in it is recorded: the
worker's turn ends in error, and its task is reported ``failed``. It never reaches
its siblings. ``trio.Cancelled`` is never swallowed. The facts that say a turn
was cancelled are written in a shielded scope, then the cancellation goes on.

Delegations over the team's parallel budget wait on a :class:`trio.CapacityLimiter`
as ``queued`` tasks. Approvals and input requests park the tool call's task on
an event until :meth:`TeamRuntime.resolve_approval` / :meth:`TeamRuntime.answer_input`
is called (by the CLI prompt, a client, or the coordinator's policy).

The parts
---------
:class:`TeamRuntime` is the entry point: it starts, resumes and ends the run, and takes
the controls (cancel, stop, steer, queue, approve, answer). The work is done by
collaborators sharing one :class:`~orchestrator.runtime._context.RunContext` (the team,
the session, its ids, recorder and state, the chats' cancel scopes, the parallel budget):

* :class:`~orchestrator.runtime._turns.Turns`: the turn loop and its model rounds
  (:mod:`orchestrator.runtime._turns`);
* :class:`~orchestrator.runtime._tool_calls.ToolCalls`: the rounds' tool calls, from their
  request to their result (:mod:`orchestrator.runtime._tool_calls`);
* :class:`~orchestrator.runtime._approvals.Approvals`: approvals and questions, parked
  until decided (:mod:`orchestrator.runtime._approvals`);
* :class:`~orchestrator.runtime._delegation.Delegation`: delegate and handoff, the parallel
  budget's queue, the workers' error barriers (:mod:`orchestrator.runtime._delegation`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Collection
from typing import Any

import attrs
import structlog
import trio

from orchestrator.ahp.actions import ChatPendingMessageSetAction
from orchestrator.ahp.state import (
    ChatInputRequest,
    ChatInputResponseKind,
    Message,
    MessageKind,
    MessageOrigin,
    PendingMessageKind,
    SideChatSelection,
)
from orchestrator.base import FactLogError, RunError, now_timestamp
from orchestrator.core import (
    INTERRUPTED_SUMMARY,
    USER,
    ApprovalRequested,
    MemberJoined,
    RunFinished,
    RunStarted,
    RunStatus,
    TeamState,
    cancel_removed,
    parse_traceparent,
    plan_recovery,
)
from orchestrator.spec import RestartPolicy, TeamSpec

from ._approvals import Approvals
from ._board import BoardKeeper, board_created
from ._bus import FactBus
from ._chat_forks import ChatForks
from ._context import (
    CANCELLED,
    STOPPED,
    ChatContext,
    RunContext,
    TurnFailedError,
    chat_added,
    is_cancellation,
)
from ._factlog import FactLog, MemoryFactLog
from ._ids import Ids
from ._recorder import Recorder
from ._stream_writer import DEFAULT_DELTA_WINDOW
from ._tracing import installed_tracing, prompt_traceparent
from ._turns import BackendFactory, Turns
from .tools import McpServers, ToolCallback, resolve_python_tools

__all__ = ["RunOutcome", "TeamRuntime", "require_prompt"]

log = structlog.get_logger("orchestrator.runtime")


def require_prompt(prompt: str) -> None:
    """Refuse a prompt that gives the coordinator nothing to do (:class:`RunError`)."""
    if not prompt.strip():
        raise RunError("the prompt is empty: tell the coordinator what to do")


@attrs.frozen(kw_only=True)
class RunOutcome:
    """How a run ended: its status, the coordinator's final answer or the error."""

    session: str
    status: RunStatus
    result: str = ""
    error: str = ""
    # The final answer's parsed JSON value when the coordinator has an output_schema.
    result_value: Any = None


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
        tool_servers: McpServers | None = None,
        delta_window: float = DEFAULT_DELTA_WINDOW,
    ) -> None:
        """Make the runtime of one session of ``team``.

        Args:
            team: The team to run.
            backends: Makes each agent's backend.
            factlog: Where the facts are recorded (default: in memory, a
                :class:`~orchestrator.runtime.MemoryFactLog`).
            bus: Where the facts are published (default: a new one).
            ids: Makes the run's ids (default: ids of the run's next restart).
            clock: The timestamp each batch of facts is stamped with.
            state: An unfinished run's state, folded from its log, to :meth:`resume`. ``ids``
                should then be made with the ``restart`` that resume will record.
            conversation: The run does not end with the coordinator's turn (see below).
            session: The new session's URI (default: a fresh one), for a client that names its
                thread.
            background: The ``[[background]]`` teammate whose wake this run is (recorded on
                ``team/runStarted``).
            callback: Where the team's command tools post view updates (the daemon's ``POST
                /callback``). None outside a daemon (see
                :mod:`orchestrator.runtime.tools._command_tool`).
            tool_servers: The team's MCP servers, run by the caller; a daemon shares them
                between its sessions of a team. None: the runtime runs its own for the length
                of the run, if the team declares any.
            delta_window: Seconds a chat's streamed chunks are gathered for at most before
                they are written as one fact (see
                :mod:`orchestrator.runtime._stream_writer`); 0 writes each chunk alone.

        In a ``conversation``, the coordinator chat stays open. Each message queued to it
        (:meth:`queue`) is its next turn. A turn that fails or is cancelled
        (:meth:`cancel_turn`) ends only itself. The run ends when :meth:`close` is called (or
        the team is cancelled). The daemon runs its sessions this way: one session, many
        prompts.

        The team's Python tools are imported here: :class:`~orchestrator.base.TeamFileError`
        naming ``tools.<name>.python`` if one does not resolve, before anything is recorded.
        """
        python_tools = resolve_python_tools(team)
        ids = ids or Ids(
            restart=0 if state is None or state.run is None else state.run.restarts + 1
        )
        if state is not None:
            session = state.session_uri
        elif session is None:
            session = ids.session()
        state = state if state is not None else TeamState(session)
        if not 0 <= delta_window < math.inf:
            raise ValueError(f"delta_window: seconds, 0 or more, not {delta_window!r}")
        bus = bus or FactBus()
        recorder = Recorder(state, factlog or MemoryFactLog(), bus, clock=clock)
        recorder.on_failed = self._log_failed
        self._context = RunContext(
            team=team,
            ids=ids,
            session=session,
            state=state,
            bus=bus,
            recorder=recorder,
            callback=callback,
            limiter=trio.CapacityLimiter(team.parallel_budget),
            delta_window=delta_window,
        )
        # The MCP servers this runtime runs itself (see _tool_servers_running).
        self._own_servers: McpServers | None = None
        if tool_servers is None and team.mcp_servers:
            tool_servers = self._own_servers = McpServers(team.mcp_servers)
        self._context.tool_servers = tool_servers
        tracing = installed_tracing()
        if tracing is not None:
            self._context.spans = tracing.observe(bus, team, session, state)
        self._approvals = Approvals(self._context)
        self._turns = Turns(self._context, self._approvals, backends, python_tools=python_tools)
        self._delegation = self._turns.delegation
        # The team's board (None when its file declares none): agents' board tools, people's
        # requests, and the agents started on its items (see _board.py).
        self.board: BoardKeeper | None = None
        if team.board is not None:
            self.board = BoardKeeper(self._context, self._delegation)
            self._turns.tool_calls.board = self.board
        self._chat_forks = ChatForks(self._context, self._turns)
        self._session_scope: trio.CancelScope | None = None
        self.conversation = conversation
        self.background = background

    # ── the run's context, for its callers ─────────────────────────────────

    @property
    def team(self) -> TeamSpec:
        return self._context.team

    @property
    def ids(self) -> Ids:
        return self._context.ids

    @property
    def session(self) -> str:
        return self._context.session

    @property
    def state(self) -> TeamState:
        """The session's state: read it; it changes only through :attr:`recorder`."""
        return self._context.state

    @property
    def bus(self) -> FactBus:
        return self._context.bus

    @property
    def recorder(self) -> Recorder:
        return self._context.recorder

    @property
    def callback(self) -> ToolCallback | None:
        return self._context.callback

    # ── the run ────────────────────────────────────────────────────────────

    async def run(
        self,
        prompt: str,
        *,
        traceparent: str | None = None,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> RunOutcome:
        """Run the team on ``prompt`` until the coordinator's turn ends.

        ``task_status.started`` reports the session URI once the run's first
        facts are recorded, so ``await nursery.start(runtime.run, prompt)``
        returns when the session exists. ``traceparent``: the W3C trace context the prompt
        came with (recorded with the run, whose trace then continues that one).
        """
        # W3C trace context: a malformed header is ignored; a good one is kept in its
        # version-00 form, whatever else a client sent with it.
        parent = parse_traceparent(traceparent or prompt_traceparent())
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
                        trace_parent=None if parent is None else parent.header,
                        model=self.team.model,
                    ),
                ),
                (self.session, chat_added(chat, coordinator, prompt, None, now)),
                (
                    self.session,
                    MemberJoined(
                        chat=chat, agent=coordinator.name, role=coordinator.role, task=root_task
                    ),
                ),
                # The team file's board items, on the board from the run's start.
                *((self.session, created) for created in board_created(self.team)),
            ]
        )
        self.recorder.factlog.describe(
            self.session, team_file=self.team.file, team_toml=self.team.source
        )
        task_status.started(self.session)
        log.info("run started", session=self.session, team=self.team.name, chat=chat)
        message = Message(text=prompt, origin=MessageOrigin(kind=MessageKind.USER))
        return await self._drive(run_id, ChatContext(chat, coordinator, root_task), message)

    async def resume(
        self,
        *,
        prompt: str | None = None,
        cancel_removed_work: bool = False,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> RunOutcome:
        """Take up the unfinished run this runtime was given the state of, after a stop.

        One atomic batch (see :func:`~orchestrator.core._recovery.plan_recovery`) ends what the
        stop cut off; then parked turns go on and cut-off ones run again or are reported
        failed, as the team's ``on_restart`` says. Raises :class:`RunError` if the run has
        finished (or never started).

        Args:
            prompt: The coordinator's next message, queued once the run is taken up (a fork
                that runs on with another prompt).
            cancel_removed_work: Open work of agents this team file lacks is cancelled, each
                task reported killed with the reason (a fork with another team file); without
                it, such a team file is refused.
            task_status: Started with the session URI once the recovery batch is recorded.
        """
        run = self.state.run
        chat = self.state.coordinator_chat()
        if run is None or chat is None:
            raise RunError(f"{self.session} has no run to resume")
        if run.status is not None:
            raise RunError(f"the run of {self.session} has already {run.status}")
        if prompt is not None:
            require_prompt(prompt)
        # Before the first fact: a team that does not fit writes none.
        self._check_team_fits(open_only=cancel_removed_work)
        try:
            plan = plan_recovery(self.state, self.team.on_restart, now=self.recorder.clock())
        except ValueError as exc:
            raise RunError(str(exc)) from None
        await self.recorder.record(list(plan.actions))
        if cancel_removed_work:
            agents = frozenset(self.team.agent_names)
            removed = cancel_removed(self.state, agents, now=self.recorder.clock())
            if removed:
                await self.recorder.record(removed)
        if prompt is not None:
            message = Message(text=prompt, origin=MessageOrigin(kind=MessageKind.USER))
            queued = ChatPendingMessageSetAction(
                kind=PendingMessageKind.QUEUED, id=self.ids.numbered("message"), message=message
            )
            await self.recorder.record([(chat, queued)])
        self._approvals.reopen_surviving()
        if self.board is not None:
            await self.board.take_up()
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
            run.run,
            ChatContext(chat, coordinator, run.task),
            message,
            resume=True,
            interrupted=plan.interrupted,
        )

    def _check_team_fits(self, *, open_only: bool = False) -> None:
        """:class:`RunError` if the team file lacks what the stopped run used: an agent one
        of its chats or tasks runs (``open_only``: only its coordinator), or its coordinator."""
        if open_only:
            used: set[str] = set()
        else:
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

    def waiting_for_user(
        self,
    ) -> tuple[list[ApprovalRequested], list[tuple[str, ChatInputRequest]]]:
        """The approvals routed to the user and the open questions, as the state has them
        (for a console that joins a resumed run: they were asked before it started)."""
        return self._approvals.waiting_for_user()

    async def _drive(
        self,
        run_id: str,
        ctx: ChatContext,
        message: Message,
        *,
        resume: bool = False,
        interrupted: Collection[str] = (),
    ) -> RunOutcome:
        """Run the coordinator's chat to the end of the run, and record how it ended
        (``resume``: after a restart, whose recovery cut off the turns of ``interrupted``)."""
        async with self._tool_servers_running(), trio.open_nursery() as forked_chats:
            if self._context.delta_window > 0:
                # Not started with an await: a cancel() right after the run's first facts
                # must find the session's scope set (in _drive_coordinator, without a
                # checkpoint before it).
                self._context.text_flusher.start_soon_in(forked_chats)
            self._chat_forks.running_in(forked_chats)
            if resume:
                self._chat_forks.take_up(interrupted)
            try:
                return await self._drive_coordinator(run_id, ctx, message, resume=resume)
            finally:
                # The turns of forked chats and side chats end with the run, and so does
                # the flusher of the chats' streamed text.
                self._chat_forks.running_in(None)
                forked_chats.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def _tool_servers_running(self) -> AsyncIterator[None]:
        """The team's MCP servers are listed before the coordinator's first round (so a
        model is offered their tools) and, if this runtime runs them, stopped after its
        last."""
        servers = self._context.tool_servers
        if servers is None:
            yield
        elif self._own_servers is None:
            await servers.wait_started()
            yield
        else:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._own_servers.run)
                try:
                    yield
                finally:
                    nursery.cancel_scope.cancel()

    async def _drive_coordinator(
        self, run_id: str, ctx: ChatContext, message: Message, *, resume: bool
    ) -> RunOutcome:
        chat = ctx.chat
        try:
            with trio.CancelScope() as scope:
                self._session_scope = scope
                self._context.scopes[chat] = scope
                try:
                    result = await self._coordinate(ctx, message, resume=resume)
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
                    if is_cancellation(exc) and not self._context.stopping:
                        with trio.CancelScope(shield=True):
                            await self._finish(run_id, RunStatus.CANCELLED, error=CANCELLED)
                    raise
                finally:
                    self._context.scopes.pop(chat, None)
                return await self._finish(
                    run_id, RunStatus.COMPLETED, result=result.text, value=result.value
                )
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
            error=STOPPED if self._context.stopping else CANCELLED,
        )

    async def _coordinate(self, ctx: ChatContext, message: Message, *, resume: bool) -> Any:
        """The coordinator's chat to its end; with a board, its dispatcher beside it (and a
        run that ends with the coordinator's turn waits for the agents at work on items)."""
        if self.conversation:
            turns = self._turns.converse(ctx, message, resume=resume)
        else:
            turns = self._turns.run_chat(ctx, message, resume=resume)
        board = self.board
        if board is None:
            return await turns
        result: Any = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(board.dispatch)
                result = await turns
                if not self.conversation:
                    await board.wait_settled()
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # One error, the coordinator's (the dispatcher only ever ends cancelled): raised
            # as it is, as it would be without a board.
            errors = [e for e in group.exceptions if not isinstance(e, trio.Cancelled)]
            if len(errors) == 1:
                raise errors[0] from None
            raise
        return result

    def _log_failed(self, error: FactLogError) -> None:
        """The fact log failed this session: every task of it ends, recording nothing (as
        :meth:`stop`), wherever it was, an idle conversation included; the run ends
        :meth:`_lost`."""
        self._context.stopping = True
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
        self,
        run_id: str,
        status: RunStatus,
        *,
        result: str = "",
        error: str = "",
        value: Any = None,
    ) -> RunOutcome:
        finished = RunFinished(run=run_id, status=status, result=result, error=error, value=value)
        try:
            await self.recorder.record([(self.session, finished)])
        except FactLogError as exc:
            return self._lost(exc)
        log.info("run finished", session=self.session, status=str(status))
        return RunOutcome(
            session=self.session, status=status, result=result, error=error, result_value=value
        )

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
        self._context.stopping = True
        if self._session_scope is not None:
            self._session_scope.cancel()

    def close(self) -> None:
        """End a conversation: once its queued prompts are done the run finishes
        ``completed`` with the last turn's answer. No effect on a run that is not one."""
        self._turns.close()

    def end_conversation(self) -> None:
        """End a conversation.

        A client asks for this (AHP dispose, ``end`` on ``/ws``, the web view, ``orchestrator
        end``), or the daemon's idle expiry does.

        - A conversation that waits for its next message finishes ``completed`` with its last
          answer.
        - One still at work has it cancelled, and finishes ``cancelled``.
        - A run that is not a conversation is cancelled.
        """
        if self.conversation and not self._at_work():
            self.close()
        else:
            self.cancel()

    def _at_work(self) -> bool:
        """Whether a turn runs or a prompt waits its turn (a conversation that is not idle)."""
        state = self.state
        if any(chat.active_turn is not None for chat in state.chats.values()):
            return True
        coordinator = state.chats.get(state.coordinator_chat() or "")
        return coordinator is not None and bool(coordinator.queued_messages)

    async def fork_chat(
        self,
        chat: str,
        *,
        source: str,
        turn_id: str,
        side: bool = False,
        selection: SideChatSelection | None = None,
    ) -> None:
        """Open ``chat``, a fork (or ``side`` chat) of chat ``source`` at turn ``turn_id``.

        Args:
            chat: The new chat's URI.
            source: A chat of this session.
            turn_id: A completed turn of ``source`` (a side chat may name its running one).
            side: A side chat: the source's conversation is its model's context, not its history.
            selection: The text a side chat is about.

        See :mod:`orchestrator.runtime._chat_forks`; :class:`RunError` names what is missing.
        """
        await self._chat_forks.open(
            chat, source=source, turn_id=turn_id, side=side, selection=selection
        )

    async def prompt_chat(self, chat: str, text: str) -> None:
        """Send ``text`` to a forked chat or a side chat; its agent answers in a turn there."""
        await self._chat_forks.prompt(chat, text)

    def cancel_turn(self, chat: str) -> None:
        """Cancel the running turn of a conversation's coordinator, or of a forked chat or
        side chat (its next queued message runs next); the run goes on."""
        self._turns.cancel_turn(chat)

    async def dispose_chat(self, chat: str) -> None:
        """Dispose of a forked chat or side chat: its queued messages are withdrawn and its
        running turn cancelled; the coordinator and the rest of the session go on."""
        await self._chat_forks.dispose(chat)

    def cancel_worker(self, chat: str) -> None:
        """Cancel one worker and its subtree; its task is reported ``killed``."""
        self._delegation.cancel_worker(chat)

    def cancel_task(self, task: str) -> None:
        """Cancel a delegated task, queued or running; it is reported ``killed``."""
        self._delegation.cancel_task(task)

    async def resolve_approval(
        self, approval: str, *, approved: bool, by: str = USER, principal: str | None = None
    ) -> None:
        """Decide a pending approval; returns once the decision has been applied.

        Args:
            approval: The approval's id.
            approved: Approve, or deny.
            by: Who decides (default: the user).
            principal: Who decided, behind ``by`` (a client's identity), recorded with it.

        Raises :class:`RunError` for an approval that is not pending, has been decided
        already, is routed to someone else, or was withdrawn because its requester stopped
        before the decision could be applied.
        """
        await self._approvals.resolve(approval, approved=approved, by=by, principal=principal)

    async def answer_input(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None:
        """Answer (or decline/cancel) an open input request of ``chat``.

        Args:
            chat: The chat whose request it is.
            request_id: The input request's id.
            answer: Read as its question asks
                (:func:`~orchestrator.runtime._approvals.parse_answer`): a number, yes or no,
                option ids...
            response: Accept (the default), decline or cancel.

        A :class:`RunError` says what was expected, and the request stays open.
        """
        await self._approvals.answer(chat, request_id, answer, response=response)

    async def steer(self, chat: str, text: str, *, principal: str | None = None) -> str:
        """Inject a steering message into a running chat (read at its next model round);
        returns the message's id. ``principal``: who sent it, when known (transcripts name
        them)."""
        return await self._turns.set_pending(
            chat, text, PendingMessageKind.STEERING, principal=principal
        )

    async def queue(
        self,
        chat: str,
        text: str,
        *,
        message_id: str | None = None,
        traceparent: str | None = None,
    ) -> str:
        """Queue a message that starts a new turn once the chat's current turn finishes.

        For a conversation's idle coordinator, the turn starts at once. Returns the message's
        id. The turn it starts records it as its ``queuedMessageId``.

        Args:
            chat: The chat to queue it to.
            text: The message.
            message_id: The caller's choice of id, unique in the session; else one is made.
                Another node, for example, must know the id before the message's facts
                reach it.
            traceparent: The W3C trace context the prompt came with (default: the one
                :func:`~orchestrator.runtime.prompted_from` set): the turn's prompt then
                continues that trace.
        """
        message_id = message_id or self.ids.numbered("message")
        parent = parse_traceparent(traceparent or prompt_traceparent())
        if parent is not None:
            self._turns.trace_parents[message_id] = parent.header
        return await self._turns.set_pending(
            chat, text, PendingMessageKind.QUEUED, message_id=message_id
        )
