"""The AG-UI projection: facts in, AG-UI events out (JSON-ready dicts, camelCase keys).

Theory of operation
-------------------
An AG-UI *run* (``RUN_STARTED`` … ``RUN_FINISHED`` / ``RUN_ERROR``) here is one turn of the
coordinator chat: the turn that answers the RunAgentInput's user message. The daemon keeps one
team session per AG-UI thread, so a thread's runs are the coordinator chat's turns, one by one.
:class:`AguiProjector` follows one such turn. Like the Agent UI projector it owns a
:class:`~orchestrator.core._team_state.TeamState` and folds every fact itself before projecting it,
so what it emits is a function of the facts (and of when :meth:`~AguiProjector.start` and
:meth:`~AguiProjector.resume` were called) and nothing else.

The life of a projector:

1. ``AguiProjector(session, thread_id=..., run_id=...)``, optionally with the state the session
   has now (``state=``, a copy is taken) and the chat and turn to follow. Facts fed before
   :meth:`start` are folded silently (catching up on a log).
2. :meth:`start` opens the AG-UI run: ``RUN_STARTED``, then ``STATE_SNAPSHOT``. Facts fed from
   now on are projected. Without ``turn_id`` the projector follows the next turn that starts
   in the coordinator chat.
3. The run ends when the turn does: ``chat/turnComplete`` → ``RUN_FINISHED`` whose ``result`` is
   the turn's answer; ``chat/error`` → ``RUN_ERROR`` (the error's message, its type as ``code``);
   ``chat/turnCancelled`` → ``RUN_ERROR`` with code ``cancelled``.
4. Or it ends *interrupted*: an approval routed to the user (``team/approvalRequested`` with
   ``routedTo == "user"``) asked by the followed chat or by one of its subagents ends the run
   with ``RUN_FINISHED`` whose outcome is ``{"type": "interrupt", "interrupts": [...]}`` (one
   interrupt per pending approval; see
   :func:`~orchestrator.protocols._agui_run_input.approval_interrupt`). The team goes on meanwhile
   (other workers keep streaming). The projector keeps folding and *buffers* what it would have
   emitted. :meth:`resume` opens the continuation run (a new ``runId``) on the same turn:
   ``RUN_STARTED``, a fresh ``STATE_SNAPSHOT``, the buffered events, then the subagents still at
   work. Approvals still pending that the resuming input does not answer interrupt it again at
   once. State deltas are never buffered: the snapshot of the continuation supersedes them.

Within a run
------------
* Text parts (``markdown``) of an attributed chat are ``TEXT_MESSAGE_START`` / ``_CONTENT`` /
  ``_END`` with ``messageId`` = the part id (stable, unique in the session). Reasoning parts are
  ``REASONING_START`` + ``REASONING_MESSAGE_START`` / ``_CONTENT`` / ``REASONING_MESSAGE_END`` +
  ``REASONING_END`` (the 1.0 protocol's reasoning events; ``THINKING_*`` left it). A chat's
  message ends when its next part, a tool call, or its turn's end begins.
* A tool call is these events:

  - ``TOOL_CALL_START`` at ``chat/toolCallStart``;
  - ``TOOL_CALL_ARGS`` per streamed input fragment (or the whole input at
    ``chat/toolCallReady`` when nothing streamed);
  - ``TOOL_CALL_END`` at ``chat/toolCallReady``;
  - ``TOOL_CALL_RESULT`` (``messageId`` = ``"result:" + toolCallId``) at
    ``chat/toolCallComplete``, or at a denial, or, "cancelled", at the end of a turn that left
    it without a result.

  So a run never ends with a call the client would take for a frontend tool waiting for its answer.
  ``parentMessageId`` is the text message that preceded the call in its model round, when there was
  one.
* Tool call ids: the coordinator's are its chat's ``toolCallId`` as they are. A subagent's are
  ``"<toolCallId>@<chat URI>"``, because tool call ids are unique per chat only and AG-UI
  scopes them to the thread.
* Each worker or specialist spawned by a tool call of the followed turn (or, nested, of one of
  its subagents) is a subagent. It starts with ``SUBAGENT_STARTED`` at its
  ``team/memberJoined``, with ``subagentRunId`` = its chat URI, ``name`` = its agent,
  ``description`` = its task, ``parentToolCallId`` = the spawning call, ``parentSubagentRunId`` for
  nested ones and ``metadata.task``. Everything it streams carries its ``subagentRunId``. It ends
  with ``SUBAGENT_FINISHED`` (``result`` = its summary) or ``SUBAGENT_ERROR`` (its summary, ``code``
  = ``failed`` / ``killed``) at ``team/taskFinished`` (a delegation) or at the handoff back (a
  specialist). At an interrupt every open subagent ends its *segment* with ``SUBAGENT_FINISHED``
  ``{"outcome": {"type": "suspended", "interruptIds": [...]}}`` (the ids it raised itself). One
  still at work is announced again, same ``subagentRunId``, in the continuation run.
* Anything that continues a stream not open in the current run (a message or tool call cut by an
  interrupt, or begun before a projector joined a turn) opens it again first with its ``*_START``
  and the same id. The AG-UI client appends to the message or call it already has.
* State: ``STATE_SNAPSHOT`` at each run's start holds
  :func:`~orchestrator.protocols._agui_state.team_view`. After a fact that changes the view,
  ``STATE_DELTA`` carries that fact's changes (RFC 6902). A
  :class:`~orchestrator.protocols._agui_state.TeamView` built at the snapshot computes them from
  the fact and the entries it touched: the same whatever the team's size.

Beside this module:

- :mod:`orchestrator.protocols._agui_events`: what each event looks like, and the records of
  subagents and tool calls it is built from;
- :mod:`orchestrator.protocols._agui_state`: the view and its patches;
- :mod:`orchestrator.protocols._agui_run_input`: the interrupts, and
  :func:`~orchestrator.protocols._agui_run_input.parse_run_input`, which reads a RunAgentInput
  body (threadId, runId, the last user message and the ``resume`` answers to approvals).

The module is pure: no trio, no IO.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection
from typing import Any, Final

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import (
    MarkdownResponsePart,
    ReasoningResponsePart,
    ToolChatOrigin,
    TurnState,
)
from orchestrator.base import IllegalTransitionError, RunError
from orchestrator.core import (
    USER,
    ApprovalRecord,
    ApprovalRequested,
    Fact,
    HandoffRecorded,
    MemberJoined,
    MemberStatus,
    ReviewCompleted,
    ReviewRecord,
    ReviewRequested,
    Reviews,
    ReviewStarted,
    TaskFinished,
    TaskStatus,
    TeamState,
    artifact_of,
    member_name,
    remote_task_of,
    tool_call_of,
    turn_text,
)

from ._agui_events import (
    Subagent,
    ToolCall,
    attributed,
    result_text,
    run_ended,
    subagent_ended,
    subagent_started,
    subagent_suspended,
    text_of,
)
from ._agui_run_input import Event, approval_interrupt
from ._agui_state import TeamView, review_entry, review_ops, team_view

__all__ = ["ARTIFACT_EVENT", "REMOTE_TASK_EVENT", "AguiProjector", "AguiRunStatus"]

_TERMINAL_MEMBER: Final = frozenset(
    {MemberStatus.COMPLETED, MemberStatus.FAILED, MemberStatus.KILLED}
)

#: The CUSTOM events a remote teammate's parts become (its task's state; an artifact chunk).
REMOTE_TASK_EVENT: Final = "a2a.remoteTask"
ARTIFACT_EVENT: Final = "a2a.artifact"


class AguiRunStatus(enum.StrEnum):
    """Where a projector's current AG-UI run stands."""

    NOT_STARTED = "not_started"  # folding facts; start() opens the run
    RUNNING = "running"
    INTERRUPTED = "interrupted"  # ended on approvals; resume() opens the continuation
    FINISHED = "finished"  # RUN_FINISHED sent: the turn completed
    FAILED = "failed"  # RUN_ERROR sent: the turn failed or was cancelled


# ── the projector ─────────────────────────────────────────────────────────────


class AguiProjector:
    """Projects the facts of one coordinator turn to AG-UI runs (see the module docstring).

    ``chat`` is the coordinator chat (default: the session's coordinator); ``turn_id`` the turn
    to follow (default: the next turn that starts in that chat). ``state`` is the session's
    state to begin from, when the projector joins a session that has facts already.
    """

    def __init__(
        self,
        session: str,
        *,
        thread_id: str,
        run_id: str,
        chat: str | None = None,
        turn_id: str | None = None,
        state: TeamState | None = None,
    ) -> None:
        self.session = session
        self.thread_id = thread_id
        self.run_id = run_id
        self.state = state.copy() if state is not None else TeamState(session)
        self._chat = chat
        self._turn = turn_id
        self._status = AguiRunStatus.NOT_STARTED
        self._terminal_buffered: AguiRunStatus | None = None
        self._out: list[Event] = []
        self._buffer: list[Event] = []  # what an interrupted run would have said, for resume()
        self._view: TeamView | None = None  # the state the client has, while a run is on
        # The review lane (the state's ``reviews``): the state's reviews when the run starts
        # mid-session, then those of the facts fed.
        self._reviews = Reviews(self.state.run.reviews if self.state.run is not None else None)
        self._interrupts: tuple[str, ...] = ()
        # Streams open in the current run.
        # Invariant: set(self._chat_stream.values()) == set(self._open_text) | set(
        #     self._open_reasoning)
        self._chat_stream: dict[str, str] = {}  # chat -> its open text / reasoning message
        self._open_text: dict[str, str] = {}  # message id -> chat
        self._open_reasoning: dict[str, str] = {}  # message id -> chat
        self._open_calls: dict[str, str] = {}  # wire tool call id -> chat
        self._round_message: dict[str, str] = {}  # chat -> text message of its current round
        # chat -> toolCallId -> call: a chat's own, so that its turn's end looks at them alone.
        self._calls: dict[str, dict[str, ToolCall]] = {}
        self._subagents: dict[str, Subagent] = {}  # chat -> subagent, in join order
        # The subagents by what spawned them, in join order: the ends of a call or of a
        # subagent look up theirs instead of going through the whole team.
        self._spawned_by: dict[str, list[str]] = {}  # wire tool call id -> subagent chats
        self._children: dict[str, list[str]] = {}  # subagent chat -> its subagents' chats

    # ── public ─────────────────────────────────────────────────────────────

    @property
    def status(self) -> AguiRunStatus:
        return self._status

    @property
    def interrupts(self) -> tuple[str, ...]:
        """The approval ids the last run was interrupted on (empty unless interrupted)."""
        return self._interrupts if self._status is AguiRunStatus.INTERRUPTED else ()

    @property
    def chat(self) -> str | None:
        """The coordinator chat followed (``None`` until the session has one)."""
        return self._chat if self._chat is not None else self.state.coordinator_chat()

    @property
    def turn_id(self) -> str | None:
        """The turn followed, once known."""
        return self._turn

    def view(self) -> dict[str, Any]:
        """The state a client holds: :func:`team_view` of the state folded, and the review
        lane (``reviews``: each review of the facts fed, in the order requested)."""
        snapshot = team_view(self.state)
        snapshot["reviews"] = [review_entry(r) for r in self._reviews.records.values()]
        return snapshot

    def start(self, *, answering: Collection[str] = ()) -> list[Event]:
        """Open the AG-UI run: ``RUN_STARTED``, ``STATE_SNAPSHOT``, then, if the followed turn
        is under way, its subagents at work, and an interrupt at once for any approval of its
        own still pending that ``answering`` (approval ids being decided now) leaves out."""
        if self._status is not AguiRunStatus.NOT_STARTED:
            raise RunError(f"the AG-UI run {self.run_id} has already started")
        self._status = AguiRunStatus.RUNNING
        self._open_run()
        if self._turn_active():
            self._adopt_subagents()
            self._reopen_subagents()
            self._interrupt_if_waiting(answering)
        return self._flush()

    def resume(self, run_id: str, *, answering: Collection[str] = ()) -> list[Event]:
        """Open the run that continues an interrupted one (``run_id`` is the new run's): its
        start, what happened meanwhile, then the subagents still at work; interrupted again at
        once if approvals are pending that ``answering`` leaves out."""
        if self._status is not AguiRunStatus.INTERRUPTED:
            raise RunError(f"the AG-UI run {self.run_id} is {self._status}, not interrupted")
        self.run_id = run_id
        self._status = AguiRunStatus.RUNNING
        self._interrupts = ()
        self._open_run()
        for event in self._buffer:
            if event["type"] == "RUN_FINISHED":  # the turn ended meanwhile: in this run
                event["runId"] = run_id
        self._out += self._buffer
        self._buffer = []
        if self._terminal_buffered is not None:
            self._status, self._terminal_buffered = self._terminal_buffered, None
            return self._flush()
        self._reopen_subagents()
        self._interrupt_if_waiting(answering)
        return self._flush()

    def feed(self, fact: Fact) -> list[Event]:
        """Fold ``fact``; its events (none before :meth:`start`, after the run's end, or while
        interrupted: those are kept for :meth:`resume`)."""
        if fact.sequence <= self.state.last_sequence:
            return []
        self.state.apply(fact)
        reviewed = None
        if isinstance(fact.action, ReviewRequested | ReviewStarted | ReviewCompleted):
            try:
                reviewed = self._reviews.apply(fact)
            except IllegalTransitionError:
                reviewed = None  # a log the fold refuses: the lane shows none of it
        if self._status in (AguiRunStatus.NOT_STARTED, AguiRunStatus.FINISHED):
            return []
        if self._status is AguiRunStatus.FAILED or self._terminal_buffered is not None:
            return []
        ending = self._project(fact)
        self._state_delta(fact, reviewed)
        if ending is not None:
            ending()
        return self._flush()

    # ── emitting ───────────────────────────────────────────────────────────

    def _emit(self, event: Event) -> None:
        if self._status is AguiRunStatus.INTERRUPTED:
            self._buffer.append(event)
        else:
            self._out.append(event)

    def _flush(self) -> list[Event]:
        out, self._out = self._out, []
        return out

    def _open_run(self) -> None:
        self._out.append({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id})
        self._view = TeamView(self.state)
        self._out.append({"type": "STATE_SNAPSHOT", "snapshot": self.view()})

    def _state_delta(self, fact: Fact, reviewed: ReviewRecord | None = None) -> None:
        if self._status is not AguiRunStatus.RUNNING or self._view is None:
            # An interrupted run's client gets a snapshot when it resumes; the view, which
            # misses this fact, is built again then.
            self._view = None
            return
        delta = self._view.update(self.state, fact)
        if reviewed is not None:
            delta = [*delta, *review_ops(self._reviews, reviewed)]
        if delta:
            self._emit({"type": "STATE_DELTA", "delta": delta})

    # ── which chats belong to the run ──────────────────────────────────────

    def _turn_active(self) -> bool:
        chat = self.chat
        if chat is None or self._turn is None:
            return False
        chat_state = self.state.chats.get(chat)
        active = chat_state.active_turn if chat_state is not None else None
        return active is not None and active.id == self._turn

    def _attribution(self, chat: str, turn_id: str | None) -> tuple[bool, str | None]:
        """Whether ``chat``'s fact (of turn ``turn_id``) belongs to the run, and the
        ``subagentRunId`` to attribute it to."""
        if chat == self.chat:
            followed = self._turn is not None and (turn_id is None or turn_id == self._turn)
            return followed, None
        subagent = self._subagents.get(chat)
        if subagent is not None and not subagent.ended:
            return True, chat
        return False, None

    def _wire_call_id(self, chat: str, tool_call_id: str) -> str:
        return tool_call_id if chat == self.chat else f"{tool_call_id}@{chat}"

    # ── projecting one fact ────────────────────────────────────────────────

    def _project(self, fact: Fact) -> Callable[[], None] | None:
        """Emit the events of ``fact``; return what ends the run after the state delta."""
        action = fact.action
        match action:
            case ChatTurnStartedAction() if fact.channel == self.chat and self._turn is None:
                self._turn = action.turn_id
                return None
            case MemberJoined():
                self._member_joined(action)
                return None
            case TaskFinished():
                task = self.state.tasks.get(action.task)
                chat = task.chat if task is not None else None
                if chat is not None and chat in self._subagents:
                    ok = action.status is TaskStatus.COMPLETED
                    self._end_subagent(chat, ok, action.summary, action.status.value)
                return None
            case HandoffRecorded() if action.from_chat in self._subagents:
                self._handed_back(action.from_chat)
                return None
            case ApprovalRequested():
                return self._approval_requested(action)
        turn_id = getattr(action, "turn_id", None)
        in_run, subagent = self._attribution(fact.channel, turn_id)
        if not in_run:
            return None
        chat = fact.channel
        match action:
            case ChatResponsePartAction():
                self._response_part(chat, subagent, action)
            case ChatDeltaAction():
                self._text(chat, subagent, action.part_id, action.content, reasoning=False)
            case ChatReasoningAction():
                self._text(chat, subagent, action.part_id, action.content, reasoning=True)
            case ChatToolCallStartAction():
                self._close_stream(chat)
                self._call_started(chat, subagent, action.tool_call_id, action.tool_name)
            case ChatToolCallDeltaAction() if action.content:
                call = self._open_call(chat, subagent, action.tool_call_id)
                if call is not None:
                    self._emit(
                        attributed(
                            subagent,
                            type="TOOL_CALL_ARGS",
                            toolCallId=call.wire_id,
                            delta=action.content,
                        )
                    )
                    call.args_sent = True
            case ChatToolCallReadyAction():
                self._close_stream(chat)
                tool_input = action.tool_input if isinstance(action.tool_input, str) else None
                self._end_call_input(chat, subagent, action.tool_call_id, tool_input)
            case ChatToolCallCompleteAction():
                self._call_result(chat, subagent, action.tool_call_id, result_text(action.result))
                self._round_message.pop(chat, None)  # a new model round follows
            case ChatToolCallDeniedAction():
                reason = text_of(action.reason_message) or "denied"
                self._call_result(chat, subagent, action.tool_call_id, reason)
            case ChatTurnCompleteAction() | ChatErrorAction() | ChatTurnCancelledAction():
                self._turn_ended(chat, subagent)
                if chat == self.chat:
                    return lambda: self._finish(action)
        return None

    # ── text and reasoning ─────────────────────────────────────────────────

    def _response_part(
        self, chat: str, subagent: str | None, action: ChatResponsePartAction
    ) -> None:
        part = action.part
        self._close_stream(chat)
        if isinstance(part, MarkdownResponsePart):
            self._text(chat, subagent, part.id, part.content, reasoning=False)
        elif isinstance(part, ReasoningResponsePart):
            self._text(chat, subagent, part.id, part.content, reasoning=True)
        else:
            # A remote teammate's task state and artifacts have no AG-UI event of their own:
            # the closest is CUSTOM, named for what it carries, its value the remote truth.
            remote = remote_task_of(part)
            artifact = artifact_of(part) if remote is None else None
            if remote is not None or artifact is not None:
                self._open_subagent(subagent)
                name, value = (
                    (REMOTE_TASK_EVENT, remote)
                    if remote is not None
                    else (ARTIFACT_EVENT, artifact)
                )
                self._emit(attributed(subagent, type="CUSTOM", name=name, value=dict(value or {})))
        # Worker notifications and steering are system parts: SUBAGENT_* and the user's own
        # input already say them.

    def _text(
        self, chat: str, subagent: str | None, message_id: str, content: str, *, reasoning: bool
    ) -> None:
        if self._chat_stream.get(chat) != message_id:
            self._close_stream(chat)
            self._open_subagent(subagent)
            if reasoning:
                self._emit(attributed(subagent, type="REASONING_START", messageId=message_id))
                self._emit(
                    attributed(
                        subagent,
                        type="REASONING_MESSAGE_START",
                        messageId=message_id,
                        role="reasoning",
                    )
                )
                self._open_reasoning[message_id] = chat
            else:
                self._emit(
                    attributed(
                        subagent, type="TEXT_MESSAGE_START", messageId=message_id, role="assistant"
                    )
                )
                self._open_text[message_id] = chat
                self._round_message[chat] = message_id
            self._chat_stream[chat] = message_id
        if content:
            kind = "REASONING_MESSAGE_CONTENT" if reasoning else "TEXT_MESSAGE_CONTENT"
            self._emit(attributed(subagent, type=kind, messageId=message_id, delta=content))

    def _close_stream(self, chat: str) -> None:
        message_id = self._chat_stream.pop(chat, None)
        if message_id is None:
            return
        subagent = self._subagent_of(chat)
        if self._open_text.pop(message_id, None) is not None:
            self._emit(attributed(subagent, type="TEXT_MESSAGE_END", messageId=message_id))
        elif self._open_reasoning.pop(message_id, None) is not None:
            self._emit(attributed(subagent, type="REASONING_MESSAGE_END", messageId=message_id))
            self._emit(attributed(subagent, type="REASONING_END", messageId=message_id))

    def _subagent_of(self, chat: str) -> str | None:
        return chat if chat in self._subagents else None

    # ── tool calls ─────────────────────────────────────────────────────────

    def _call_started(
        self, chat: str, subagent: str | None, tool_call_id: str, tool_name: str
    ) -> ToolCall:
        call = ToolCall(
            wire_id=self._wire_call_id(chat, tool_call_id),
            name=tool_name,
            parent_message_id=self._round_message.get(chat),
        )
        self._calls.setdefault(chat, {})[tool_call_id] = call
        self._start_call(call, chat, subagent)
        return call

    def _start_call(self, call: ToolCall, chat: str, subagent: str | None) -> None:
        self._open_subagent(subagent)
        event = attributed(
            subagent, type="TOOL_CALL_START", toolCallId=call.wire_id, toolCallName=call.name
        )
        if call.parent_message_id is not None:
            event["parentMessageId"] = call.parent_message_id
        self._emit(event)
        self._open_calls[call.wire_id] = chat

    def _open_call(self, chat: str, subagent: str | None, tool_call_id: str) -> ToolCall | None:
        """The call, open in this run (started again if it was cut, or begun before this
        projector joined); ``None`` for a call the state does not know."""
        call = self._calls.get(chat, {}).get(tool_call_id)
        if call is None:
            known = tool_call_of(self.state, chat, tool_call_id)
            if known is None:
                return None
            call = ToolCall(
                wire_id=self._wire_call_id(chat, tool_call_id),
                name=known.tool_name,
                parent_message_id=None,
            )
            self._calls.setdefault(chat, {})[tool_call_id] = call
        if call.wire_id not in self._open_calls and not call.ended:
            self._start_call(call, chat, subagent)
        return call

    def _end_call_input(
        self, chat: str, subagent: str | None, tool_call_id: str, tool_input: str | None
    ) -> ToolCall | None:
        call = self._open_call(chat, subagent, tool_call_id)
        if call is None or call.ended:
            return call  # None, or a running call asking to be confirmed again
        if not call.args_sent and tool_input:
            self._emit(
                attributed(
                    subagent, type="TOOL_CALL_ARGS", toolCallId=call.wire_id, delta=tool_input
                )
            )
            call.args_sent = True
        self._emit(attributed(subagent, type="TOOL_CALL_END", toolCallId=call.wire_id))
        self._open_calls.pop(call.wire_id, None)
        call.ended = True
        return call

    def _call_result(self, chat: str, subagent: str | None, tool_call_id: str, text: str) -> None:
        call = self._end_call_input(chat, subagent, tool_call_id, None)
        if call is None or call.result_sent:
            return
        # A subagent the call spawned has reported by now; end it if no fact did.
        for spawned in list(self._spawned_by.get(call.wire_id, ())):
            if not self._subagents[spawned].ended:
                self._end_subagent(spawned, True, text, None)
        self._open_subagent(subagent)
        self._emit(
            attributed(
                subagent,
                type="TOOL_CALL_RESULT",
                messageId=f"result:{call.wire_id}",
                toolCallId=call.wire_id,
                content=text,
                role="tool",
            )
        )
        call.result_sent = True

    def _turn_ended(self, chat: str, subagent: str | None) -> None:
        """Close what ``chat``'s turn left open: its message, and its calls with no result (the
        turn's end cancels them)."""
        self._close_stream(chat)
        self._round_message.pop(chat, None)
        for tool_call_id, call in list(self._calls.get(chat, {}).items()):
            if not call.result_sent:
                self._call_result(chat, subagent, tool_call_id, "cancelled")

    # ── subagents ──────────────────────────────────────────────────────────

    def _member_joined(self, action: MemberJoined) -> None:
        subagent = self._spawned(action.chat, action.agent, action.task)
        if subagent is not None and self._status is not AguiRunStatus.NOT_STARTED:
            self._open_subagent(subagent.chat)

    def _spawned(self, chat: str, agent: str, task: str) -> Subagent | None:
        """Register ``chat`` as a subagent if a tool call of the run spawned it."""
        chat_state = self.state.chats.get(chat)
        origin = chat_state.origin if chat_state is not None else None
        if chat_state is None or not isinstance(origin, ToolChatOrigin) or chat in self._subagents:
            return None
        parent: str | None
        if origin.chat == self.chat and self._turn_active():
            parent = None
        elif origin.chat in self._subagents and not self._subagents[origin.chat].ended:
            parent = origin.chat
        else:
            return None
        call = self._calls.get(origin.chat, {}).get(origin.tool_call_id)
        record = self.state.tasks.get(task)
        delegated = record is not None and record.tool_call_id == origin.tool_call_id
        subagent = Subagent(
            chat=chat,
            name=agent,
            # A worker's task; a specialist's chat title (it works on its caller's task).
            description=record.title if record is not None and delegated else chat_state.title,
            parent=parent,
            parent_tool_call_id=self._wire_call_id(origin.chat, origin.tool_call_id),
            parent_message_id=call.parent_message_id if call is not None else None,
            task=task,
        )
        self._subagents[chat] = subagent
        self._spawned_by.setdefault(subagent.parent_tool_call_id, []).append(chat)
        if parent is not None:
            self._children.setdefault(parent, []).append(chat)
        return subagent

    def _adopt_subagents(self) -> None:
        """Joining a turn under way: its subagents still at work, from the state."""
        for chat, member in self.state.members.items():
            if self.state.member_status(chat) not in _TERMINAL_MEMBER:
                self._spawned(chat, member.agent, member.task)

    def _open_subagent(self, chat: str | None) -> None:
        """Announce subagent ``chat`` (and its parents) in this run, if not yet."""
        if chat is None:
            return
        subagent = self._subagents[chat]
        if subagent.open:
            return
        self._open_subagent(subagent.parent)
        self._emit(subagent_started(subagent))
        subagent.open = True

    def _reopen_subagents(self) -> None:
        for subagent in self._subagents.values():
            if not subagent.ended:
                self._open_subagent(subagent.chat)

    def _end_subagent(self, chat: str, ok: bool, summary: str, code: str | None) -> None:
        subagent = self._subagents[chat]
        if subagent.ended:
            return
        for child in list(self._children.get(chat, ())):
            if not self._subagents[child].ended:
                self._end_subagent(child, False, "ended with its parent", "killed")
        self._turn_ended(chat, chat)
        self._open_subagent(chat)
        self._emit(subagent_ended(chat, ok=ok, summary=summary, code=code))
        subagent.open = False
        subagent.ended = True

    def _handed_back(self, chat: str) -> None:
        """A specialist's handoff back: it is done, as its last turn says."""
        chat_state = self.state.chats.get(chat)
        last = chat_state.turns[-1] if chat_state is not None and chat_state.turns else None
        if last is None or last.state is TurnState.COMPLETE:
            self._end_subagent(chat, True, turn_text(last) if last is not None else "", None)
        else:
            failed = last.state is TurnState.ERROR
            message = last.error.message if last.error is not None else str(last.state)
            self._end_subagent(chat, False, message, "failed" if failed else "killed")

    # ── approvals and the run's end ────────────────────────────────────────

    def _asks_in_run(self, request: ApprovalRequested) -> bool:
        if request.routed_to != USER:
            return False
        if request.chat == self.chat:
            return request.turn_id == self._turn and self._turn_active()
        subagent = self._subagents.get(request.chat)
        return subagent is not None and not subagent.ended

    def _approval_requested(self, action: ApprovalRequested) -> Callable[[], None] | None:
        if self._status is not AguiRunStatus.RUNNING or not self._asks_in_run(action):
            return None  # interrupted: resume() asks again for what is still pending
        return lambda: self._interrupt_if_waiting(())

    def _waiting(self, answering: Collection[str]) -> list[ApprovalRecord]:
        return [
            record
            for record in self.state.pending_approvals()
            if record.request.approval not in answering and self._asks_in_run(record.request)
        ]

    def _interrupt_if_waiting(self, answering: Collection[str]) -> None:
        waiting = self._waiting(answering)
        if waiting:
            self._interrupt(waiting)

    def _close_all(self) -> None:
        for chat in list(self._chat_stream):
            self._close_stream(chat)
        for wire_id, chat in list(self._open_calls.items()):
            self._emit(
                attributed(self._subagent_of(chat), type="TOOL_CALL_END", toolCallId=wire_id)
            )
        self._open_calls.clear()

    def _interrupt(self, waiting: list[ApprovalRecord]) -> None:
        self._close_all()
        raised: dict[str, list[str]] = {}
        for record in waiting:
            raised.setdefault(record.request.chat, []).append(record.request.approval)
        for subagent in reversed(self._subagents.values()):  # children before parents
            if subagent.open:
                self._emit(subagent_suspended(subagent.chat, raised.get(subagent.chat)))
                subagent.open = False
        interrupts = [
            approval_interrupt(
                record,
                tool_call_id=self._wire_call_id(record.request.chat, record.request.tool_call_id),
                subagent=self._subagent_of(record.request.chat),
                asker=member_name(self.state, record.request.chat),
            )
            for record in waiting
        ]
        self._emit(
            {
                "type": "RUN_FINISHED",
                "threadId": self.thread_id,
                "runId": self.run_id,
                "outcome": {"type": "interrupt", "interrupts": interrupts},
            }
        )
        self._status = AguiRunStatus.INTERRUPTED
        self._interrupts = tuple(record.request.approval for record in waiting)
        self._chat_stream.clear()
        self._round_message.clear()

    def _finish(
        self, action: ChatTurnCompleteAction | ChatErrorAction | ChatTurnCancelledAction
    ) -> None:
        self._close_all()
        for subagent in reversed(self._subagents.values()):
            if not subagent.ended:
                self._end_subagent(subagent.chat, False, "ended with the turn", "killed")
        result = ""
        status = AguiRunStatus.FAILED
        if isinstance(action, ChatTurnCompleteAction):
            chat_state = self.state.chats.get(self.chat or "")
            turns = chat_state.turns if chat_state is not None else ()
            result = turn_text(turns[-1]) if turns and turns[-1].id == action.turn_id else ""
            status = AguiRunStatus.FINISHED
        self._emit(run_ended(action, thread_id=self.thread_id, run_id=self.run_id, result=result))
        if self._status is AguiRunStatus.INTERRUPTED:
            self._terminal_buffered = status
        else:
            self._status = status
