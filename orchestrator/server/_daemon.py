"""The daemon's sessions: every team session a nursery task, reachable by id.

Theory of operation
-------------------
:class:`Daemon` owns the journal, the teams (one per ``*.toml`` of its teams directory,
addressed by file stem), one HTTP client for the model backends, and a nursery in which
every live session runs. A session is a :class:`~orchestrator.runtime._team_runtime.TeamRuntime` in
*conversation* mode: it exists (with its URI) as soon as a client opens it, its run starts
with the first prompt, and each later prompt is queued to the coordinator as its next turn.

Clients never touch the runtime directly: :class:`LiveSession` turns each client request
(prompt, abort, answer, approve/reject, view update) into a runtime call and reports a
refusal as :class:`~orchestrator.base._errors.RunError` with a message for the client. Clients
read by subscribing to the session's fact bus (bounded: a client that cannot keep up is
dropped, see :mod:`orchestrator.runtime._bus`), after a consistent snapshot: the facts up to
:attr:`TeamState.last_sequence` at the moment of subscribing are history, the bus delivers
the rest, so a client sees no gap and no duplicate.

At start the daemon takes up every unfinished session of its journal (``resume``, with the
team file the session recorded): a session is a conversation that outlives a restart. On
SIGTERM it stops each runtime without recording (:meth:`TeamRuntime.stop`), after running
turns had ``shutdown_grace`` seconds to end: the journal then holds what a crash would, and
the next start applies each team's ``on_restart``.

Identity: a session's URI (and a chat's, over AHP) names it for good. Every new session goes
through :meth:`Daemon.open_session`, which refuses a URI that is live, being opened, or in
the journal (ended or not) before anything is written, so no client can make a second
session write ``team/runStarted`` at sequence 1 again under a URI the journal holds. The
URI is reserved before the journal is asked (an await), so two clients opening the same
one at once cannot both get it.

Bounds: a session opened but never prompted holds memory and nothing else; it is forgotten
``unprompted_session`` seconds after it was opened or its last client left (at most
``idle_session`` with a client on it), and each principal may hold
``max_unprompted_per_token`` of them; no more than ``max_sessions`` sessions are opened.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import attrs
import httpx
import structlog
import trio

from orchestrator.ahp._actions import ChatTurnStartedAction
from orchestrator.base._clock import utc_now
from orchestrator.base._errors import (
    ConfigError,
    FactLogError,
    OrchestratorError,
    RunError,
    SessionExistsError,
    SessionLimitError,
    TeamFileError,
)
from orchestrator.core._facts import Fact
from orchestrator.core._queries import input_request_id, open_questions
from orchestrator.core._team_actions import (
    USER,
    ApprovalRequested,
    ApprovalResolved,
    RunFinished,
    ViewUpdated,
)
from orchestrator.core._team_state import TeamState
from orchestrator.journal._journal import SqliteJournal
from orchestrator.protocols._agent_channel import AgentChannelProjector
from orchestrator.protocols._agent_messages import TURN_ENDS
from orchestrator.protocols._project_agui import AguiProjector
from orchestrator.runtime._bus import Subscription
from orchestrator.runtime._command_tool import ToolCallback
from orchestrator.runtime._ids import Ids
from orchestrator.runtime._team_runtime import RunOutcome, TeamRuntime
from orchestrator.runtime._turns import BackendFactory
from orchestrator.runtime.backends._factory import backend_factory
from orchestrator.spec._schedule import BackgroundSpec
from orchestrator.spec._teamfile import TeamSpec, load_team, parse_team

from ._config import Limits
from ._metrics import DaemonMetrics
from ._scheduler import Scheduler

__all__ = ["Daemon", "LiveSession", "load_teams", "session_uri"]

log = structlog.get_logger("orchestrator.daemon")

SESSION_PREFIX = "ahp-session:/"


def session_uri(session: str) -> str:
    """A session URI from a client's id or URI (``/ws?session=``, a view update's group_id)."""
    return session if session.startswith(SESSION_PREFIX) else SESSION_PREFIX + session


def session_id(uri: str) -> str:
    return uri.removeprefix(SESSION_PREFIX)


def load_teams(directory: Path) -> dict[str, TeamSpec]:
    """Every team file of ``directory`` by stem; :class:`ConfigError` listing every one
    that cannot be used (a daemon with a broken team file does not start half-configured)."""
    if not directory.is_dir():
        raise ConfigError("not a directory of team files", file=str(directory), key_path="teams")
    teams: dict[str, TeamSpec] = {}
    problems: list[str] = []
    for path in sorted(directory.glob("*.toml")):
        try:
            teams[path.stem] = load_team(path)
        except TeamFileError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError(
            "team files that cannot be used:\n" + "\n".join(problems),
            file=str(directory),
            key_path="teams",
        )
    if not teams:
        raise ConfigError("no team files (*.toml) here", file=str(directory), key_path="teams")
    return teams


#: Seconds stopped sessions get to be done after ``shutdown_grace``: a command tool's process
#: group gets SIGKILL 2 s after SIGTERM, and the journal drains for its ``drain_limit`` (2 s)
#: within it. With hypercorn's 1.5 s after it, SIGTERM exits within ``shutdown_grace`` + 4 s:
#: 9 s with the default grace, under the 10 s a service manager commonly allows.
STOP_AFTER_GRACE: Final = 2.5


class Sink(Protocol):
    """A client the session pushes its facts to as they are published (see attach)."""

    def deliver(self, fact: Fact, frames: tuple[str, ...]) -> None:
        """``fact`` and its agent-channel events as JSON texts; must be quick, never wait."""

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
    """One session the daemon runs; what clients may ask of it."""

    def __init__(
        self,
        daemon: Daemon,
        team_name: str,
        runtime: TeamRuntime,
        *,
        owner: str | None = None,
    ) -> None:
        self.daemon = daemon
        self.team_name = team_name
        self.runtime = runtime
        # The principal that opened it (None: the daemon's own, or taken up): its sessions
        # not yet prompted are counted against max_unprompted_per_token.
        self.owner = owner
        self.opened_at = trio.current_time()
        self.uri = runtime.session
        self.id = session_id(self.uri)
        self._tasks: list[_Task] = []
        self._start_lock = trio.Lock()
        self.started = runtime.state.run is not None
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
        self.put_away = False  # stopped for being idle (see Daemon.evict_idle)
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
        runtime.bus.observe(self._observe_batch)

    @property
    def state(self) -> TeamState:
        return self.runtime.state

    def task_of(self, queued_message: str | None) -> str | None:
        """The client's ``taskId`` for the turn answering ``queued_message``."""
        for task in self._tasks:
            if task.message == queued_message:
                return task.task_id
        return None

    # ── requests ───────────────────────────────────────────────────────────

    async def prompt(self, text: str, *, task_id: str | None) -> None:
        """Start the run with ``text``, or queue it as the coordinator's next turn."""
        async with self._start_lock:
            if self.finished.is_set() or (self.state.run and self.state.run.status):
                raise RunError(f"session {self.id} has ended: open a new one")
            if not self.started:
                if task_id is not None:
                    self._tasks.append(_Task(task_id, None))
                await self.daemon.start_run(self, text)
                self.started = True
                return
        chat = self.state.coordinator_chat()
        assert chat is not None
        message = await self.runtime.queue(chat, text)
        if task_id is not None:
            self._tasks.append(_Task(task_id, message))

    def abort(self, task_id: str) -> None:
        """Cancel the coordinator's turn for ``task_id`` (and its workers)."""
        task = next((t for t in self._tasks if t.task_id == task_id), None)
        if task is None:
            raise RunError(f"no task {task_id!r} in session {self.id}")
        if self._running != (task.message,):
            raise RunError(f"task {task_id!r} is not running")
        chat = self.state.coordinator_chat()
        assert chat is not None
        self.runtime.cancel_turn(chat)

    async def answer(self, tool_call_id: str, text: str) -> None:
        """Answer the question the ``ask`` call ``tool_call_id`` put, in whichever chat."""
        request_id = input_request_id(tool_call_id)
        for chat, request in open_questions(self.state):
            if request.id == request_id:
                await self.runtime.answer_input(chat, request_id, text)
                return
        raise RunError(f"no open question for tool call {tool_call_id!r}")

    async def decide(self, approval: str, *, approved: bool, principal: str) -> None:
        await self.runtime.resolve_approval(
            approval, approved=approved, by=USER, principal=principal
        )

    async def update_view(self, view_type: str, content: Mapping[str, Any]) -> None:
        """Keep ``content`` as the latest of ``view_type`` (a fact) and broadcast it."""
        await self.runtime.recorder.record(
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

    async def wait_alone(self) -> None:
        """Wait until no client is connected."""
        await self._alone.wait()

    @property
    def unprompted(self) -> bool:
        """Open, and no run started or starting in it (see Daemon.forget_unprompted)."""
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
        return self.state

    def detach(self, sink: Sink) -> None:
        if sink in self._sinks:
            self._sinks.remove(sink)

    @property
    def sinks(self) -> int:
        return len(self._sinks)

    def end_sinks(self, reason: str | None = None) -> None:
        """The session ended: no fact follows. Tell every sink (and why, see Sink.ended);
        a sink attached later is told the same."""
        self.ended_because = reason
        sinks, self._sinks = self._sinks, []
        for sink in sinks:
            sink.ended(reason)

    @property
    def end_reason(self) -> str | None:
        """Why the session ended, when the journal stopped it: what clients are told."""
        failed = self.runtime.recorder.failed
        return None if failed is None else failed.message

    def subscribe(self, name: str) -> tuple[Subscription, TeamState]:
        """A bus subscription and the state it starts after (see the module docstring)."""
        subscription = self.runtime.bus.subscribe(name, buffer_size=self.daemon.subscriber_buffer)
        return subscription, self.state

    # ── the session's own bookkeeping ──────────────────────────────────────

    def _observe_batch(self, facts: Sequence[Fact]) -> None:
        """Follow the session's facts as they are published (a bus observer): the running
        turn (for requests), approval wait times (metrics), idleness, and each fact's
        agent-channel events, projected once and serialized once for every client."""
        for fact in facts:
            try:
                events = self._observe(fact)
            except Exception:
                # Bookkeeping must never take the recorder down; the fact is recorded.
                log.exception("session bookkeeping failed", session=self.uri, fact=fact.sequence)
                continue
            if not self._sinks:
                continue
            frames = tuple(json.dumps(e, ensure_ascii=False) for e in events)
            for sink in list(self._sinks):
                try:
                    sink.deliver(fact, frames)
                except Exception:
                    log.exception("a client's feed failed", session=self.uri)
                    self.detach(sink)

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
                self.daemon.metrics.approval_waited(trio.current_time() - asked)
        elif isinstance(action, RunFinished):
            self.idle.set()
        return events


class Daemon:
    """The sessions of one daemon process; start it with ``await nursery.start(d.serve)``."""

    def __init__(
        self,
        *,
        teams: Mapping[str, TeamSpec],
        journal: SqliteJournal,
        http: httpx.AsyncClient,
        default_team: str | None = None,
        subscriber_buffer: int = 2_000,
        shutdown_grace: float = 5.0,
        environ: Mapping[str, str] | None = None,
        wall_clock: Callable[[], dt.datetime] = utc_now,
        callback: ToolCallback | None = None,
        limits: Limits | None = None,
    ) -> None:
        """``wall_clock``: what time it is, for the background teammates' schedules (tests
        pass one made from trio's clock). ``limits``: the sessions' bounds (unprompted
        sessions, per token and in all); the other limits are the server's."""
        if default_team is not None and default_team not in teams:
            raise ConfigError(
                f"no team {default_team!r} (teams: {', '.join(sorted(teams))})",
                file="<config>",
                key_path="default_team",
            )
        self.teams = dict(teams)
        self.default_team = default_team or (next(iter(teams)) if len(teams) == 1 else None)
        self.journal = journal
        self.reader = journal.reader  # checked as the journal opened: not again
        self.limits = limits or Limits()
        self.subscriber_buffer = subscriber_buffer
        self.shutdown_grace = shutdown_grace
        # Made now, so a team that cannot run (an unset API key for a hosted model) is
        # known at start: it is logged, and opening a session of it says why it cannot.
        self._backends: dict[str, BackendFactory] = {}
        self.unavailable: dict[str, str] = {}
        for name, team in teams.items():
            try:
                self._backends[name] = backend_factory(team, client=http, environ=environ)
            except RunError as exc:
                self.unavailable[name] = str(exc)
                log.warning("team unavailable", team=name, error=str(exc))
        self._http = http
        self._environ = environ
        self.sessions: dict[str, LiveSession] = {}
        # URIs being opened (asked of the journal) → the principal opening them; and the
        # chat URIs being claimed (see claim_chat). Reserved before the await, so a second
        # client naming the same URI meanwhile is refused.
        self._opening: dict[str, str | None] = {}
        self._claimed_chats: set[str] = set()
        self._finding = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self.metrics = DaemonMetrics(self)
        self.accepting = False
        self.stopped = trio.Event()  # set once stop() has stopped every session
        self.scheduler = Scheduler(self, clock=wall_clock)
        # Given to every session's command tools; the server sets its URL once it listens.
        self.callback = callback or ToolCallback()

    # ── the service ────────────────────────────────────────────────────────

    async def serve(
        self, *, task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the sessions until cancelled; take up the journal's unfinished ones first."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._end_sessions_if_the_journal_fails)
            await self._take_up_unfinished()
            self.accepting = True
            # After the take-up: a teammate's run that was going is followed where it is.
            await nursery.start(self.scheduler.serve)
            task_status.started(self)
            await trio.sleep_forever()

    async def _take_up_unfinished(self) -> None:
        """Take up the unfinished sessions that were doing something (a turn running, an
        approval or a question waiting, a prompt queued); idle ones are taken up when a
        client asks for them (:meth:`find`), so a restart costs what is busy, not all."""
        infos = await trio.to_thread.run_sync(self.reader.sessions)
        for info in infos:
            if info.status != "running":
                continue
            try:
                state = await trio.to_thread.run_sync(self.reader.open, info.session)
                if _needs_running(state):
                    await self._take_up(info.session, state)
            except (OrchestratorError, OSError) as exc:
                log.error("session not taken up", session=info.session, error=str(exc))

    async def _end_sessions_if_the_journal_fails(self) -> None:
        """Once the journal can take nothing more (a full disk, a damaged file), every live
        session ends at once, its clients told why; not only those that try to record."""
        error = await self.journal.wait_failed()
        for live in list(self.sessions.values()):
            if live.started:
                live.runtime.recorder.fail(error)  # its runtime ends: see TeamRuntime._lost
            else:
                self._drop_unprompted(live, error.message)

    async def find(self, session: str) -> LiveSession | None:
        """The live session ``session`` (an id or URI), taking an unfinished one up from the
        journal if it is not in memory; None if there is no such unfinished session."""
        uri = session_uri(session)
        live = self.sessions.get(uri)
        if live is not None and not live.put_away:
            return live
        async with self._finding:  # two clients asking at once take it up once
            live = self.sessions.get(uri)
            if live is not None and live.put_away:
                await live.finished.wait()  # being put away: take it up again after
                live = None
            if live is not None:
                return live
            try:
                info = await trio.to_thread.run_sync(self.reader.session, uri)
            except FactLogError:
                return None
            if info.status != "running":
                return None
            state = await trio.to_thread.run_sync(self.reader.open, uri)
            return await self._take_up(uri, state)

    async def _take_up(self, uri: str, state: TeamState) -> LiveSession:
        team_file, team_toml = await trio.to_thread.run_sync(self.reader.team_toml, uri)
        if not team_toml:
            raise RunError(f"{uri} did not record its team file: it cannot be taken up")
        team = parse_team(team_toml, file=team_file or "<journal>")
        name = Path(team_file).stem if team_file else team.name
        run = state.run
        if run is not None and run.coordinator != team.coordinator:
            # A background teammate's run: its agent was the run's coordinator.
            team = attrs.evolve(team, coordinator=run.coordinator)
        runtime = self._runtime(
            name, team, state=state, background=None if run is None else run.background
        )
        live = LiveSession(self, name, runtime)
        await self._launch(live, runtime.resume)
        log.info("session taken up", session=uri, team=name)
        return live

    async def evict_idle(self, after: float) -> None:
        """Every so often, stop the sessions that have been idle with no client for ``after``
        seconds (recording nothing: :meth:`find` takes them up again when asked), so the
        daemon's memory holds the sessions in use, not every session it ever ran."""
        while True:
            await trio.sleep(max(after / 4, 0.05))
            now = trio.current_time()
            for live in list(self.sessions.values()):
                if not live.started:
                    continue  # never prompted: forget_unprompted's own timer ends it
                if live.clients == 0 and live.idle.is_set() and now - live.idle_since >= after:
                    log.info("idle session put away", session=live.uri)
                    live.put_away = True
                    live.runtime.stop()

    async def stop(self) -> None:
        """SIGTERM: give running turns ``shutdown_grace`` to end, then stop every session
        without recording (see :meth:`TeamRuntime.stop`), waiting :data:`STOP_AFTER_GRACE`
        seconds at most for them to be done."""
        self.accepting = False
        self.scheduler.stopping.set()
        with trio.move_on_after(self.shutdown_grace):
            for live in list(self.sessions.values()):
                await live.idle.wait()
        stopping = list(self.sessions.values())
        for live in stopping:
            if live.started:
                live.runtime.stop()
            else:
                self._drop_unprompted(live, "the daemon is stopping")
        deadline = trio.current_time() + STOP_AFTER_GRACE
        # A stopped session may still wait for batches it submitted: a backlog the journal
        # cannot write in its drain limit fails (never acknowledged), so nothing waits on it.
        with trio.move_on_at(min(deadline, trio.current_time() + self.journal.drain_limit)):
            for live in stopping:
                await live.finished.wait()
        if not all(live.finished.is_set() for live in stopping):
            self.journal.stop_writing()
        # Each session's clients are told it ended once its tasks are done (no facts follow).
        with trio.move_on_at(deadline):
            for live in stopping:
                await live.finished.wait()
        self.stopped.set()  # connections not tied to a session (AHP) close now

    # ── sessions ───────────────────────────────────────────────────────────

    def team_of(self, name: str | None) -> tuple[str, TeamSpec]:
        wanted = name or self.default_team
        if wanted is None:
            raise RunError(f"name a team with ?team= (teams: {', '.join(sorted(self.teams))})")
        team = self.teams.get(wanted)
        if team is None:
            raise RunError(f"no team {wanted!r} (teams: {', '.join(sorted(self.teams))})")
        return wanted, team

    async def open_session(
        self,
        team_name: str | None,
        *,
        session: str | None = None,
        ids: Ids | None = None,
        background: BackgroundSpec | None = None,
        principal: str | None = None,
    ) -> LiveSession:
        """A new session of a team (its run starts with the first prompt); ``session``: its
        id, when the client names its thread (AG-UI's threadId); ``ids``: the ids it makes,
        its URI first (AHP's ``createSession`` lets the client choose them). ``background``:
        the session is one run of that background teammate: its agent is the run's
        coordinator, and the run ends with that agent's turn (clients attach to it like to
        any). ``principal``: who opens it, for the per-token limit (None: the daemon).

        Refused, before anything is written: a URI that is live, being opened or in the
        journal (:class:`SessionExistsError`), a session beyond ``max_sessions`` or the
        principal's ``max_unprompted_per_token`` (:class:`SessionLimitError`), and any
        session while the journal cannot be read (:class:`FactLogError`).
        """
        name, team = self.team_of(team_name)
        if name in self.unavailable:
            raise RunError(f"team {name!r} cannot run: {self.unavailable[name]}")
        if background is not None and background.agent != team.coordinator:
            team = attrs.evolve(team, coordinator=background.agent)
        ids = ids or Ids()
        uri = session_uri(session) if session is not None else ids.session()
        if uri in self.sessions or uri in self._opening:
            raise SessionExistsError(f"session {uri} exists already", uri=uri, ended=False)
        self._check_limits(principal)
        self._opening[uri] = principal  # from here on, a second open of ``uri`` is refused
        try:
            # FactLogError if the journal cannot be read: then nobody can tell whether the
            # URI is taken, and a session must not be made on a guess.
            if await trio.to_thread.run_sync(self.reader.has_session, uri):
                raise SessionExistsError(
                    f"session {uri} is in the journal (it ended, or waits there to be taken "
                    "up): its id cannot be used for a new session",
                    uri=uri,
                    ended=True,
                )
            runtime = self._runtime(
                name,
                team,
                session=uri,
                ids=ids,
                background=None if background is None else background.name,
            )
            live = LiveSession(self, name, runtime, owner=principal)
            self.sessions[live.uri] = live
        finally:
            del self._opening[uri]
        if self._nursery is not None:
            self._nursery.start_soon(self.forget_unprompted, live)
        return live

    def _check_limits(self, principal: str | None) -> None:
        """:class:`SessionLimitError` if one more session would pass ``max_sessions``, or
        ``principal``'s sessions not yet prompted would pass ``max_unprompted_per_token``."""
        limits = self.limits
        if len(self.sessions) + len(self._opening) >= limits.max_sessions:
            raise SessionLimitError(
                f"the daemon holds {limits.max_sessions} sessions, its limit (max_sessions): "
                "try again later",
                limit="max_sessions",
                per_principal=False,
            )
        if principal is None:
            return
        unprompted = sum(
            1 for live in self.sessions.values() if live.owner == principal and live.unprompted
        ) + sum(1 for opener in self._opening.values() if opener == principal)
        if unprompted >= limits.max_unprompted_per_token:
            raise SessionLimitError(
                f"{principal} holds {unprompted} sessions with no prompt yet, the limit "
                "(max_unprompted_per_token): prompt or close one first, or wait "
                f"{limits.unprompted_session:g} s for an unused one to expire",
                limit="max_unprompted_per_token",
                per_principal=True,
            )

    async def forget_unprompted(self, live: LiveSession) -> None:
        """Forget ``live`` if it is never prompted: ``unprompted_session`` seconds after it
        was opened or its last client left, and ``idle_session`` after it was opened even
        with a client on it (who is told the session ended). Nothing of it was recorded."""
        wait = self.limits.unprompted_session
        cap = live.opened_at + max(self.limits.idle_session, wait)
        while True:
            if not live.unprompted:
                return  # prompted, disposed or stopped: not ours any more
            now = trio.current_time()
            expires = max(live.opened_at, live.alone_since) + wait
            if now >= cap or (not live.clients and now >= expires):
                if not live._start_lock.locked():
                    break
                async with live._start_lock:  # a first prompt is starting: see how it ends
                    pass
            elif live.clients:
                with trio.move_on_at(cap):
                    await live.wait_alone()
            else:
                await trio.sleep_until(min(expires, cap))
        log.info("session never prompted forgotten", session=live.uri, after=now - live.opened_at)
        self._drop_unprompted(
            live, f"no prompt within {now - live.opened_at:g} s of opening: open a new session"
        )

    def _drop_unprompted(self, live: LiveSession, why: str) -> None:
        """Forget a session with no run (nothing of it was recorded); its clients are told."""
        live.put_away = True
        self.sessions.pop(live.uri, None)
        live.runtime.bus.close()
        live.finished.set()
        live.end_sinks(why)

    async def journal_knows(self, session: str) -> bool:
        """Whether the journal has a session ``session`` (an id or URI), ended or not; False
        also when the journal cannot be read (:meth:`open_session` refuses then)."""
        try:
            await trio.to_thread.run_sync(self.reader.session, session_uri(session))
        except FactLogError:
            return False
        return True

    async def claim_chat(self, chat: str) -> None:
        """Claim the chat URI ``chat`` that a client chose for a new chat, until
        :meth:`release_chat`; :class:`SessionExistsError` if any session has, had or is
        claiming a chat of that URI (chat URIs name one chat across every session)."""
        live = next((s for s in self.sessions.values() if chat in s.state.chats), None)
        if live is not None or chat in self._claimed_chats:
            where = f" in {live.uri}" if live is not None else ""
            raise SessionExistsError(f"chat {chat} exists{where}", uri=chat, ended=False)
        self._claimed_chats.add(chat)
        try:
            past = await trio.to_thread.run_sync(self.reader.session_of_chat, chat)
        except BaseException:
            self._claimed_chats.discard(chat)
            raise
        if past is not None:
            self._claimed_chats.discard(chat)
            raise SessionExistsError(
                f"chat {chat} was a chat of {past}: its URI cannot be used again",
                uri=chat,
                ended=True,
            )

    def release_chat(self, chat: str) -> None:
        """The claim of :meth:`claim_chat` is over (the chat is live, or was not made)."""
        self._claimed_chats.discard(chat)

    def live(self, session: str) -> LiveSession | None:
        return self.sessions.get(session_uri(session))

    def _runtime(
        self,
        name: str,
        team: TeamSpec,
        *,
        state: TeamState | None = None,
        session: str | None = None,
        ids: Ids | None = None,
        background: str | None = None,
    ) -> TeamRuntime:
        """A runtime of ``team``: a conversation (each prompt a coordinator turn), unless it
        runs a ``background`` teammate's wake, which ends with that one turn."""
        factory = self._backends.get(name)
        if factory is None or state is not None:
            # A session taken up after a restart runs the team file it recorded.
            factory = backend_factory(team, client=self._http, environ=self._environ)
        restart = 0 if state is None or state.run is None else state.run.restarts + 1
        return TeamRuntime(
            team,
            backends=factory,
            factlog=self.journal,
            ids=ids or Ids(restart=restart),
            state=state,
            conversation=background is None,
            session=session,
            background=background,
            callback=self.callback,
        )

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        """Start ``live``'s run on ``prompt``; returns once its first facts are recorded."""

        async def run(
            *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
        ) -> RunOutcome:
            return await live.runtime.run(prompt, task_status=task_status)

        await self._launch(live, run)

    async def _launch(self, live: LiveSession, start: _Start) -> None:
        """Run ``start`` (the session's run or resume) in the daemon's nursery, behind an
        error barrier: a session that fails is logged and never takes the daemon down.

        Returns once ``start`` reported its first facts recorded; :class:`RunError` if it
        failed before that (nothing was recorded, or the journal failed).
        """
        assert self._nursery is not None, "the daemon is not serving"
        self.sessions[live.uri] = live
        errors: list[str] = []

        async def supervised(
            *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
        ) -> None:
            reported = _Reported(task_status)
            # Every log line of the session's tasks (its chats inherit the context) says
            # which session and team it is about.
            structlog.contextvars.bind_contextvars(session=live.uri, team=live.team_name)
            try:
                try:
                    outcome = await start(task_status=reported)
                    log.info("session ended", session=live.uri, status=str(outcome.status))
                finally:
                    live.runtime.bus.close()  # clients' streams end
                    live.end_sinks(live.end_reason)
            except Exception as exc:
                errors.append(_message(exc))
                log.error("session failed", session=live.uri, error=errors[-1], exc_info=exc)
            finally:
                live.finished.set()
                self.sessions.pop(live.uri, None)
                if not reported.done:
                    reported.started()

        await self._nursery.start(supervised)
        if errors:
            raise RunError(f"session {live.id} could not start: {errors[0]}")

    # ── for the AHP host (clients choose the URIs) ─────────────────────────

    async def dispose(self, live: LiveSession) -> None:
        """End ``live`` for good (AHP ``disposeSession``): its turns are cancelled and its
        run recorded ``cancelled``; a session never prompted is dropped. Returns once it
        has left :attr:`sessions`."""
        async with live._start_lock:
            if not live.started:
                self._drop_unprompted(live, "the session was disposed")
                return
        live.runtime.cancel()
        await live.finished.wait()


_Start = Callable[..., Awaitable[RunOutcome]]


@attrs.define
class _Reported:
    """A task status that remembers whether it was reported."""

    status: trio.TaskStatus[None]
    done: bool = False

    def started(self, value: object = None) -> None:
        self.done = True
        self.status.started()


def _message(exc: BaseException) -> str:
    """The message of ``exc``, or of the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _busy(state: TeamState) -> bool:
    """A turn is running (approvals and questions wait inside one)."""
    return any(chat.active_turn is not None for chat in state.chats.values())


def _needs_running(state: TeamState) -> bool:
    """An unfinished session that was doing something when the process stopped."""
    coordinator = state.coordinator_chat()
    chat = state.chats.get(coordinator) if coordinator is not None else None
    return _busy(state) or bool(chat is not None and chat.queued_messages)
