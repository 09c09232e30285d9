"""A running session's one door: :class:`LiveSession`, what clients may ask of a session.

Clients never touch the runtime directly: :class:`LiveSession` is the only door to a
running session. It turns each client request into a runtime call. The requests are prompt,
abort, answer, approve/reject and view update. An AHP client also has chat-level ones: queue,
steer, answer an input request, cancel a turn or a worker. A refusal is reported as
:class:`~orchestrator.base._errors.RunError` with a message for the client. Clients read by
subscribing to the session's fact bus, after a consistent snapshot. The bus is bounded: a
client that cannot keep up is dropped (see :mod:`orchestrator.runtime._bus`). The facts up to
:attr:`TeamState.last_sequence` at the moment of subscribing are history; the bus delivers the
rest. So a client sees no gap and no duplicate.

Behind it is a :class:`SessionRuntime`. That is the :class:`~orchestrator.runtime.TeamRuntime`
that runs the session on this node. When another node of a PostgreSQL journal runs it, it is a
:class:`~orchestrator.sessions._followed.FollowedRuntime` instead. That one reads its facts from
the journal and forwards what would change it to the owner. Clients cannot tell them apart: the same
requests, the same refusals, the same facts with the same sequence numbers. A forwarded
cancel is awaited (its answer comes through the database), hence the async cancels.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs
import structlog
import trio

from orchestrator.ahp.actions import ActionEnvelope, ActionOrigin, ChatTurnStartedAction
from orchestrator.ahp.state import ChatInputResponseKind, ChatInteractivity, SideChatSelection
from orchestrator.base import FactLogError, RunError, now_timestamp
from orchestrator.core import (
    USER,
    Action,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    FactChange,
    RunFinished,
    SummaryUpdate,
    TaskStatus,
    TeamState,
    ViewUpdated,
    input_request_id,
    open_questions,
)
from orchestrator.protocols import (
    TURN_ENDS,
    AgentChannelProjector,
    AguiProjector,
    channel_envelopes,
    notification_frame,
)
from orchestrator.runtime import (
    BoardKeeper,
    BusStatistics,
    FactBus,
    Ids,
    RunOutcome,
    Subscription,
    TeamRuntime,
)

from ._session_folds import EnvelopeFold
from ._shared_text import SharedText
from ._team_log import ReadFacts, TeamLog, team_frame

__all__ = [
    "CHAT_PREFIX",
    "SESSION_PREFIX",
    "LiveSession",
    "SessionRecorder",
    "SessionRuntime",
    "ahp_envelopes",
    "session_id",
    "session_uri",
]

log = structlog.get_logger("orchestrator.daemon")

#: AHP action frames kept for clients still to deliver them: a client further behind than
#: this (its bus subscription holds fewer facts) makes its own.
ACTION_FRAMES_KEPT: Final = 8192
#: The URI schemes of a session and of a chat (AHP resources; a /ws session id is the rest).
SESSION_PREFIX: Final = "ahp-session:/"
CHAT_PREFIX: Final = "ahp-chat:/"


def session_uri(session: str) -> str:
    """A session URI from a client's id or URI (``/ws?session=``, a view update's group_id)."""
    return session if session.startswith(SESSION_PREFIX) else SESSION_PREFIX + session


def session_id(uri: str) -> str:
    return uri.removeprefix(SESSION_PREFIX)


class SessionObserver(Protocol):
    """Who keeps count of what the sessions do (the metrics): the sessions tell it as they
    follow their facts. The app assembly sets :attr:`Daemon.observer`."""

    def approval_waited(self, seconds: float) -> None:
        """An approval was decided ``seconds`` after it was requested."""


class SessionHost(Protocol):
    """What a session asks of the daemon that runs it (so a session needs no daemon type)."""

    @property
    def subscriber_buffer(self) -> int:
        """How many facts a client's bus subscription may hold unread."""

    @property
    def observer(self) -> SessionObserver:
        """Who the session reports to as it follows its facts (the metrics)."""

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        """Start ``live``'s run on ``prompt``; returns once its first facts are recorded."""


class SessionRecorder(Protocol):
    """What a session asks of its runtime's recorder (see :class:`SessionRuntime`)."""

    @property
    def failed(self) -> FactLogError | None: ...

    async def record(self, actions: Sequence[tuple[str, Action]]) -> list[Fact]: ...

    def expect_origin(
        self, channel: str, matches: Callable[[Action], bool], origin: ActionOrigin
    ) -> None: ...

    def forget_origin(self, origin: ActionOrigin) -> None: ...

    def fail(self, error: FactLogError) -> None: ...


class SessionRuntime(Protocol):
    """What a :class:`LiveSession` asks of the runtime behind it: a
    :class:`~orchestrator.runtime.TeamRuntime` (this node runs the session), or a
    :class:`~orchestrator.sessions._followed.FollowedRuntime` (another node does: its facts
    are read from the journal, its commands forwarded to the owner). A cancel returns None
    when done at once (a runtime's), or what to wait for (a forwarded one's answer)."""

    @property
    def session(self) -> str: ...

    @property
    def state(self) -> TeamState: ...

    @property
    def ids(self) -> Ids: ...

    @property
    def bus(self) -> FactBus: ...

    @property
    def recorder(self) -> SessionRecorder: ...

    async def queue(self, chat: str, text: str, *, message_id: str | None = None) -> str: ...

    async def steer(self, chat: str, text: str, *, principal: str | None = None) -> str: ...

    async def answer_input(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None: ...

    async def resolve_approval(
        self, approval: str, *, approved: bool, by: str = USER, principal: str | None = None
    ) -> None: ...

    def cancel_turn(self, chat: str) -> Awaitable[None] | None: ...

    def cancel_worker(self, chat: str) -> Awaitable[None] | None: ...

    async def fork_chat(
        self,
        chat: str,
        *,
        source: str,
        turn_id: str,
        side: bool = False,
        selection: SideChatSelection | None = None,
    ) -> None: ...

    async def prompt_chat(self, chat: str, text: str) -> None: ...

    async def dispose_chat(self, chat: str) -> None: ...

    def cancel(self) -> Awaitable[None] | None: ...

    def end_conversation(self) -> Awaitable[None] | None: ...

    async def run(
        self, prompt: str, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
    ) -> RunOutcome: ...

    def stop(self) -> None: ...


async def _done(pending: Awaitable[None] | None) -> None:
    """Wait for what a runtime's cancel returned, if anything (see SessionRuntime)."""
    if pending is not None:
        await pending


class Sink(Protocol):
    """A client the session pushes its facts to as they are published (see attach)."""

    #: Whether the sink is given every fact (an AHP client projects each itself), or only
    #: those that make an agent-channel event or a team-channel frame: a worker's streamed
    #: text makes neither, and a daemon with many clients would call each for nothing.
    every_fact: bool

    def deliver(self, fact: Fact, frames: tuple[str, ...], team: Sequence[str]) -> None:
        """``fact``, its agent-channel events as JSON texts, and its Agent UI envelopes'
        team-channel frames (none while no one reads the team log); must be quick, never
        wait. What it sends may wait for :meth:`published`."""

    def published(self) -> None:
        """Every fact published since the last call was delivered: send what they make now
        (one write for them all: the session calls this once the task that published them
        yields, so the batches of one group commit go together); must be quick, never wait."""

    def failed(self) -> None:
        """:meth:`deliver` or :meth:`published` raised: the session logged it and feeds this
        client no more. Tell the client (close its connection), rather than leave it
        subscribed to a session that says nothing more; must be quick, never wait."""

    def ended(self, reason: str | None = None) -> None:
        """The session ended: nothing more comes. ``reason``: why, when it did not end as
        sessions do (it could record nothing more)."""


@attrs.define(eq=False)
class _Task:
    """A client's prompt: ``taskId`` and the queued message that carries it (None: the
    prompt that started the run)."""

    task_id: str
    message: str | None


class LiveSession:
    """One session the daemon runs; what clients may ask of it.

    Sockets, endpoints and the scheduler call these methods; the runtime itself is private.
    The daemon, which made the runtime, uses the few methods under "the daemon's hand"
    (run, stop, fail, close_streams) to start and end it.
    """

    def __init__(
        self,
        daemon: SessionHost,
        team_name: str,
        runtime: SessionRuntime,
        *,
        owner: str | None = None,
    ) -> None:
        self.daemon = daemon
        self.team_name = team_name
        self._runtime = runtime
        # The principal that opened it (None: the daemon's own, or taken up): its sessions
        # not yet prompted are counted against max_unprompted_per_token.
        self.owner = owner
        self.opened_at = trio.current_time()
        # When, on the wall clock: what a session with nothing recorded yet (not prompted)
        # says it started at, until its run's first fact says so.
        self.opened_on = now_timestamp()
        self.uri = runtime.session
        self.id = session_id(self.uri)
        self._tasks: list[_Task] = []
        # Held while a first prompt starts the run; the daemon takes it to see how a start
        # that is under way ends before it puts the session away or stops it.
        self.start_lock = trio.Lock()
        self.started = runtime.state.run is not None
        # Set once the run starts: the timer that forgets a session never prompted stops
        # waiting then, and so lets go of the session (see IdleSessions.forget_unprompted).
        self.prompted = trio.Event()
        if self.started:
            self.prompted.set()
        # Set once a session taken up from the journal has reopened what it waits for
        # (approvals, questions): a client that finds it meanwhile waits for this, or its
        # answer to a surviving approval would be refused. None: nothing to wait for.
        self.resuming: trio.Event | None = None
        self.finished = trio.Event()
        # The coordinator's running turn: the queued message it answers (None: the first).
        self._running: tuple[str | None] | None = None
        self._approval_asked: dict[str, float] = {}
        self._coordinator: str | None = runtime.state.coordinator_chat()
        self.idle = trio.Event()  # set while no chat of the session has a turn running
        self.idle_since = trio.current_time()
        if not _busy(self.state):
            self.idle.set()
        self._clients = 0  # connected clients (see attached)
        self.alone_since = self.opened_at  # when the last client left
        self._alone = trio.Event()  # set while no client is connected
        self._alone.set()
        self.put_away = False  # stopped for being idle (see IdleSessions.evict_idle)
        self.ended_because: str | None = None  # why it ended, when clients must be told
        # The AG-UI projector of the session's thread, kept across an interrupt: what the team
        # does while the client decides goes into the run that resumes it (see _agui_endpoint).
        self.agui: AguiProjector | None = None
        self.agui_streaming = False
        # The agent channel's events of each recent fact, projected and serialized once for
        # every client (at publication, before any client can read the fact).
        self._channel = AgentChannelProjector(task_of=self.task_of)
        self._channel.prime(self.state)
        self._sinks: list[Sink] = []
        # Those of them given every fact (Sink.every_fact), in the same order.
        self._every_fact_sinks: list[Sink] = []
        # Recent facts' AHP action frames per channel (see action_frames), oldest first.
        self._action_frames: OrderedDict[tuple[int, str], tuple[tuple[int, str], ...]] = (
            OrderedDict()
        )
        # The session's Agent UI envelopes, once a reader asks for them (see team_log).
        self._team_log: TeamLog | None = None
        # The sinks delivered to since they were last told to send (see _observe_batch).
        self._unsent: dict[Sink, None] = {}
        # What each fact wrote is asked for only while a team log follows the state.
        runtime.bus.observe_changes(self._observe_batch, wanted=lambda: self._team_log is not None)

    @property
    def state(self) -> TeamState:
        return self._runtime.state

    def task_of(self, queued_message: str | None) -> str | None:
        """The client's ``taskId`` for the turn answering ``queued_message``."""
        for task in self._tasks:
            if task.message == queued_message:
                return task.task_id
        return None

    # ── requests ───────────────────────────────────────────────────────────

    async def prompt(
        self, text: str, *, task_id: str | None, message_id: str | None = None
    ) -> None:
        """Start the run with ``text``, or queue it as the coordinator's next turn.

        ``message_id``: the queued message's id, chosen by the caller (unique in the session;
        the turn that answers it records it as its ``queuedMessageId``), so that the turn can
        be found in the journal by it; unused when ``text`` starts the run."""
        async with self.start_lock:
            if self.finished.is_set() or (self.state.run and self.state.run.status):
                raise RunError(f"session {self.id} has ended: open a new one")
            if not self.started:
                if task_id is not None:
                    self._tasks.append(_Task(task_id, None))
                await self.daemon.start_run(self, text)
                self.started = True
                self.prompted.set()
                return
        chat = self.state.coordinator_chat()
        assert chat is not None
        if task_id is None or isinstance(self._runtime, TeamRuntime):
            message = await self._runtime.queue(chat, text, message_id=message_id)
            if task_id is not None:
                self._tasks.append(_Task(task_id, message))
            return
        # Another node runs the session: the facts of the turn may be read here before its
        # answer is, so the task is bound to an id chosen here, before the facts can come.
        task = _Task(task_id, message_id or f"message-{uuid.uuid4()}")
        self._tasks.append(task)
        try:
            await self._runtime.queue(chat, text, message_id=task.message)
        except BaseException:
            self._tasks.remove(task)
            raise

    async def abort(self, task_id: str) -> None:
        """Cancel the coordinator's turn for ``task_id`` (and its workers).

        ``task_id`` is the client's id of a prompt it sent, or the id of a task the session
        recorded (what the Agent UI envelopes call ``taskId``): a prompt's root task cancels
        the coordinator's turn, a delegated one its worker and the worker's subtree.
        """
        task = next((t for t in self._tasks if t.task_id == task_id), None)
        if task is None:
            await self._abort_recorded(task_id)
            return
        if self._running != (task.message,):
            raise RunError(f"task {task_id!r} is not running")
        chat = self.state.coordinator_chat()
        assert chat is not None
        await _done(self._runtime.cancel_turn(chat))

    async def _abort_recorded(self, task_id: str) -> None:
        record = self.state.tasks.get(task_id)
        if record is None:
            raise RunError(f"no task {task_id!r} in session {self.id}")
        if record.status is not TaskStatus.RUNNING:
            raise RunError(f"task {task_id!r} is {record.status}: there is nothing to cancel")
        if record.requested_by is None:  # a prompt's: the coordinator's turn answers it
            chat = self.state.coordinator_chat()
            assert chat is not None
            await _done(self._runtime.cancel_turn(chat))
        elif record.chat is None:
            raise RunError(f"task {task_id!r} has not started: there is nothing to cancel")
        else:
            await _done(self._runtime.cancel_worker(record.chat))

    async def answer(self, tool_call_id: str, text: str) -> None:
        """Answer the question the ``ask`` call ``tool_call_id`` put, in whichever chat."""
        request_id = input_request_id(tool_call_id)
        for chat, request in open_questions(self.state):
            if request.id == request_id:
                await self._runtime.answer_input(chat, request_id, text)
                return
        raise RunError(f"no open question for tool call {tool_call_id!r}")

    async def decide(self, approval: str, *, approved: bool, principal: str) -> None:
        await self._runtime.resolve_approval(
            approval, approved=approved, by=USER, principal=principal
        )

    @property
    def board(self) -> BoardKeeper | None:
        """The board of the team this node runs the session of (None: no board, or another
        node runs it)."""
        board = getattr(self._runtime, "board", None)
        return board if isinstance(board, BoardKeeper) else None

    async def board_request(
        self, op: str, item: str, fields: Mapping[str, Any], *, principal: str
    ) -> None:
        """A person's board request, attributed to ``principal``; :class:`RunError` (a
        :class:`~orchestrator.runtime.BoardRefusedError` when the board refuses it)."""
        board = self.board
        if board is not None:
            await board.request(op, item, fields, by=principal)
            return
        forward = getattr(self._runtime, "board_request", None)  # a followed session's
        if forward is None or self.state.run is None or not self.state.run.board.items:
            raise RunError(f"session {self.id} has no board: its team declares none")
        await forward(op, item, fields, by=principal)

    async def update_view(self, view_type: str, content: Mapping[str, Any]) -> None:
        """Keep ``content`` as the latest of ``view_type`` (a fact) and broadcast it."""
        await self._runtime.recorder.record(
            [(self.uri, ViewUpdated(view_type=view_type, content=content))]
        )

    @property
    def clients(self) -> int:
        """Connected clients (a /ws connection, an AHP client following the session)."""
        return self._clients

    @clients.setter
    def clients(self, count: int) -> None:
        self._clients = count
        if count == 0 and not self._alone.is_set():
            self.alone_since = trio.current_time()
            self._alone.set()
        elif count and self._alone.is_set():
            self._alone = trio.Event()

    async def wait_alone_or_prompted(self) -> None:
        """Wait until no client is connected, or the run has started."""
        async with trio.open_nursery() as nursery:

            async def first(event: trio.Event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(first, self._alone)
            nursery.start_soon(first, self.prompted)

    @property
    def unprompted(self) -> bool:
        """Open, and no run started or starting in it (see IdleSessions.forget_unprompted)."""
        return not self.started and not self.finished.is_set()

    @contextlib.contextmanager
    def attached(self) -> Iterator[None]:
        """Count a client as connected while in the block (an idle session with clients
        is never put away)."""
        self.clients += 1
        try:
            yield
        finally:
            self.clients -= 1

    def attach(self, sink: Sink) -> TeamState:
        """Push every fact published from now on to ``sink`` (with its agent-channel
        events); returns the state those facts follow. A sink of a session that has ended
        is told at once."""
        if self.finished.is_set():
            sink.ended(self.ended_because)
        else:
            self._sinks.append(sink)
            if sink.every_fact:
                self._every_fact_sinks.append(sink)
        return self.state

    def detach(self, sink: Sink) -> None:
        if sink in self._sinks:
            self._sinks.remove(sink)
        if sink in self._every_fact_sinks:
            self._every_fact_sinks.remove(sink)

    @property
    def sinks(self) -> int:
        return len(self._sinks)

    def end_sinks(self, reason: str | None = None) -> None:
        """The session ended: no fact follows. Tell every sink (and why, see Sink.ended);
        a sink attached later is told the same."""
        self.ended_because = reason
        sinks, self._sinks, self._every_fact_sinks = self._sinks, [], []
        for sink in sinks:
            sink.ended(reason)

    @property
    def end_reason(self) -> str | None:
        """Why the session ended, when the journal stopped it: what clients are told."""
        failed = self._runtime.recorder.failed
        return None if failed is None else failed.message

    def subscribe(self, name: str) -> tuple[Subscription, TeamState]:
        """A bus subscription and the state it starts after (see the module docstring)."""
        subscription = self._runtime.bus.subscribe(name, buffer_size=self.daemon.subscriber_buffer)
        return subscription, self.state

    def unsubscribe(self, subscription: Subscription) -> None:
        """End a subscription of :meth:`subscribe` (its client went, or stopped following)."""
        self._runtime.bus.unsubscribe(subscription)

    def observe(self, observer: Callable[[Sequence[Fact]], None]) -> None:
        """Call ``observer`` with each batch of facts as it is published, before any
        subscriber reads it (see :meth:`~orchestrator.runtime._bus.FactBus.observe`)."""
        self._runtime.bus.observe(observer)

    def bus_statistics(self) -> BusStatistics:
        """The session's fact bus in numbers (its subscribers, for the metrics)."""
        return self._runtime.bus.statistics()

    # ── chat-level requests (AHP clients name the chat) ────────────────────

    @property
    def ids(self) -> Ids:
        """What makes the session's ids (AHP clients choose theirs: see ``ClientIds``)."""
        return self._runtime.ids

    def expect_origin(
        self, chat: str, matches: Callable[[Action], bool], origin: ActionOrigin
    ) -> None:
        """The next fact on ``chat`` whose action passes ``matches`` carries a client's
        action: it is recorded with the client's ``origin`` (see ``Recorder.expect_origin``)."""
        self._runtime.recorder.expect_origin(chat, matches, origin)

    def forget_origin(self, origin: ActionOrigin) -> None:
        """The client's action with ``origin`` was refused: no fact will carry it."""
        self._runtime.recorder.forget_origin(origin)

    async def queue(self, chat: str, text: str, *, message_id: str | None = None) -> str:
        """Queue ``text`` as ``chat``'s next turn; the queued message's id (``message_id``:
        chosen by a follower, see :meth:`prompt`)."""
        return await self._runtime.queue(chat, text, message_id=message_id)

    async def steer(self, chat: str, text: str, *, principal: str | None = None) -> str:
        """Steer ``chat``'s running turn with ``text``; the steering message's id
        (``principal``: who sent it, when known)."""
        return await self._runtime.steer(chat, text, principal=principal)

    async def fork_chat(
        self,
        chat: str,
        *,
        source: str,
        turn_id: str,
        side: bool = False,
        selection: SideChatSelection | None = None,
    ) -> None:
        """Open ``chat``, a fork or side chat of ``source`` at ``turn_id`` (see
        :meth:`TeamRuntime.fork_chat`); on a session another node runs, that node does.

        Args:
            chat: The new chat's URI.
            source: A chat of this session.
            turn_id: The source's turn it starts from.
            side: A side chat, not a fork.
            selection: The text a side chat is about.
        """
        await self._runtime.fork_chat(
            chat, source=source, turn_id=turn_id, side=side, selection=selection
        )

    async def prompt_chat(self, chat: str, text: str) -> None:
        """Send ``text`` to a forked chat or side chat (see :meth:`TeamRuntime.prompt_chat`)."""
        await self._runtime.prompt_chat(chat, text)

    async def dispose_chat(self, chat: str) -> None:
        """Dispose of a forked chat or side chat (see :meth:`TeamRuntime.dispose_chat`)."""
        await self._runtime.dispose_chat(chat)

    async def answer_input(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None:
        """Answer (or decline, cancel) the open input request ``request_id`` of ``chat``;
        :class:`RunError` if the answer is not what the question asks."""
        await self._runtime.answer_input(chat, request_id, answer, response=response)

    async def cancel_turn(self, chat: str) -> None:
        """Cancel the running turn in ``chat``, the coordinator's or a forked chat's or side
        chat's; the run goes on."""
        await _done(self._runtime.cancel_turn(chat))

    async def cancel_worker(self, chat: str) -> None:
        """Cancel the worker ``chat`` and its subtree (its task is reported killed)."""
        await _done(self._runtime.cancel_worker(chat))

    async def cancel(self) -> None:
        """Cancel the whole session: its turns end cancelled, its run ``cancelled``."""
        await _done(self._runtime.cancel())

    async def end(self) -> None:
        """End the conversation (see :meth:`TeamRuntime.end_conversation`): an idle one is recorded
        ``completed``, one at work ``cancelled``; a session never prompted is only
        forgotten, by the daemon (:meth:`SessionRuns.dispose`). Returns once asked: the session's
        end follows (:attr:`finished`)."""
        if self.finished.is_set() or (self.state.run is not None and self.state.run.status):
            raise RunError(f"session {self.id} has ended already")
        await _done(self._runtime.end_conversation())

    def cancel_nowait(self) -> None:
        """:meth:`cancel` a session this node runs, without waiting (a background
        teammate's run, which its scheduler started here); :class:`RunError` for a session
        another node runs, whose cancel goes through the database (await :meth:`cancel`)."""
        if self._runtime.cancel() is not None:
            raise RunError(f"session {self.id} runs on another node: its cancel is forwarded")

    # ── the daemon's hand: starting and ending the run ─────────────────────

    async def run(
        self, prompt: str, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
    ) -> RunOutcome:
        """Run the team on ``prompt`` (see :meth:`TeamRuntime.run`)."""
        return await self._runtime.run(prompt, task_status=task_status)

    def stop(self) -> None:
        """End the run without recording its end, to be taken up again later (put away when
        idle, or SIGTERM; see :meth:`TeamRuntime.stop`)."""
        self._runtime.stop()

    def fail(self, error: FactLogError) -> None:
        """The journal can record nothing more for this session: its runtime ends with
        ``error`` (see :meth:`Recorder.fail`)."""
        self._runtime.recorder.fail(error)

    async def team_log(
        self,
        read: ReadFacts,
        kept: Callable[[str], Awaitable[EnvelopeFold | None]] | None = None,
    ) -> TeamLog:
        """The session's Agent UI envelopes, every one so far, ready.

        The log is made on the first call, from the journal by ``read``. It goes on from the
        fold ``kept`` hands over, if it has one. From then on it is fed each fact as it is
        published. Between this returning and the next checkpoint, its lines end exactly where
        the facts pushed to sinks so far end."""
        if self._team_log is None:
            start = await kept(self.uri) if kept is not None else None
            if self._team_log is None:  # else another reader made it meanwhile
                self._team_log = TeamLog(self.uri, read, start)
        team_log = self._team_log
        await team_log.ready()
        return team_log

    def release_team_log(self) -> None:
        """Let go of the session's log: it is no longer live here."""
        self._team_log = None

    def action_frames(self, fact: Fact, channel: str) -> tuple[tuple[int, str], ...]:
        """``fact``'s AHP ``action`` notifications on ``channel``, each with its
        ``serverSeq``: made and encoded by the first client that delivers the fact, and the
        same frames for every other (issue 17: one projection per protocol per session)."""
        key = (fact.sequence, channel)
        frames = self._action_frames.get(key)
        if frames is None:
            frames = tuple(
                (envelope.server_seq, SharedText(notification_frame("action", envelope)))
                for envelope in ahp_envelopes(self.state, fact, channel)
            )
            self._action_frames[key] = frames
            if len(self._action_frames) > ACTION_FRAMES_KEPT:
                self._action_frames.popitem(last=False)
        return frames

    def close_streams(self) -> None:
        """End every bus subscription: the clients' streams of facts end."""
        self._runtime.bus.close()

    # ── the session's own bookkeeping ──────────────────────────────────────

    def _observe_batch(self, facts: Sequence[Fact], changes: Sequence[FactChange | None]) -> None:
        """Follow the session's facts as they are published (a bus observer): the running
        turn (for requests), approval wait times (metrics), idleness, and each fact's
        agent-channel events, projected once and serialized once for every client."""
        for fact, change in zip(facts, changes, strict=True):
            try:
                events = self._observe(fact)
            except Exception:
                # Bookkeeping must never take the recorder down; the fact is recorded.
                log.exception("session bookkeeping failed", session=self.uri, fact=fact.sequence)
                continue
            team: Sequence[str] = ()
            if self._team_log is not None:
                try:
                    team = [
                        SharedText(team_frame(line))
                        for line in self._team_log.feed((fact,), (change,))[0]
                    ]
                except Exception:
                    log.exception("the team log failed", session=self.uri, fact=fact.sequence)
                    self._team_log = None  # the next reader starts one afresh
            if not self._sinks:
                continue
            # Made once for every client, and framed once for those that frame alike.
            try:
                frames = tuple(SharedText(json.dumps(e, ensure_ascii=False)) for e in events)
            except Exception:
                # A projection bug: the other protocols' clients still get the fact.
                log.exception(
                    "a fact's agent-channel events failed", session=self.uri, fact=fact.sequence
                )
                frames = ()
            for sink in list(self._sinks if frames or team else self._every_fact_sinks):
                try:
                    sink.deliver(fact, frames, team)
                except Exception:
                    self._feed_failed(sink)
        if not self._sinks:
            return
        # Each client is sent what was published at once, once the batches settled together
        # are all delivered: a group commit completes many batches (one per chat that
        # streamed), and the recorder publishes them one after another. Told per batch, each
        # client would be written once per batch; told once the publishing task yields, it is
        # written once for them all, within the same pass of trio's scheduler.
        if not self._unsent:
            trio.lowlevel.current_trio_token().run_sync_soon(self._send_published)
        self._unsent.update(dict.fromkeys(self._sinks))

    def _send_published(self) -> None:
        """Tell every sink delivered to since the last time to send what it was given."""
        sinks, self._unsent = self._unsent, {}
        for sink in sinks:
            try:
                sink.published()
            except Exception:
                self._feed_failed(sink)

    def _feed_failed(self, sink: Sink) -> None:
        """A client's feed raised (a bug: feeds do not raise): log it, feed it no more and
        tell it so; the session and its other clients go on."""
        log.exception("a client's feed failed", session=self.uri)
        self.detach(sink)
        try:
            sink.failed()
        except Exception:
            log.exception("a client whose feed failed could not be told", session=self.uri)

    def _observe(self, fact: Fact) -> list[dict[str, Any]]:
        """Note what ``fact`` changes; its agent-channel events."""
        events = self._channel.feed(fact, self.state)
        action = fact.action
        if self._coordinator is None:
            self._coordinator = self.state.coordinator_chat()
        if isinstance(action, (ChatTurnStartedAction, *TURN_ENDS)):
            if fact.channel == self._coordinator:
                self._running = (
                    (action.queued_message_id,)
                    if isinstance(action, ChatTurnStartedAction)
                    else None
                )
            # Only a turn's start or end changes whether a turn is running.
            busy = _busy(self.state)
            if busy and self.idle.is_set():
                self.idle = trio.Event()
            elif not busy and not self.idle.is_set():
                self.idle.set()
                self.idle_since = trio.current_time()
        elif isinstance(action, ApprovalRequested):
            self._approval_asked[action.approval] = trio.current_time()
        elif isinstance(action, ApprovalResolved):
            asked = self._approval_asked.pop(action.approval, None)
            if asked is not None:
                self.daemon.observer.approval_waited(trio.current_time() - asked)
        elif isinstance(action, RunFinished):
            self.idle.set()
        return events


def ahp_envelopes(
    state: TeamState,
    fact: Fact,
    channel: str,
    summaries: Mapping[int, SummaryUpdate] | None = None,
) -> list[ActionEnvelope]:
    """The AHP ``action`` envelopes ``fact`` makes on ``channel`` (none if it is not one of
    its facts, or the catalog update it derived on its session's channel), named as
    ``state`` names the session and its hidden chats.

    The catalog updates are ``summaries`` (by sequence) when given, else what ``state`` kept
    of those it derived (:meth:`TeamState.summary_update`: the facts delivered live).
    """
    session = state.session
    title = session.title if session is not None else ""

    def hidden(chat: str) -> bool:
        found = state.chats.get(chat)
        return found is not None and found.interactivity is ChatInteractivity.HIDDEN

    summary = None
    if channel == fact.session and fact.channel != channel:
        sequence = fact.sequence
        summary = (
            summaries.get(sequence) if summaries is not None else state.summary_update(sequence)
        )
    return channel_envelopes(fact, channel, session_title=title, is_hidden=hidden, summary=summary)


def _busy(state: TeamState) -> bool:
    """A turn is running (approvals and questions wait inside one)."""
    return any(chat.active_turn is not None for chat in state.chats.values())
