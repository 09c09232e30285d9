"""One client on ``/ws``: the agent channel, the team channel and views, on one WebSocket.

Theory of operation
-------------------
The session pushes its facts to the connection as they are published. The connection is a
:class:`~orchestrator.sessions._live_session.Sink`. Each fact's agent-channel events come already
projected and serialized, once for all clients. They go into the connection's one bounded outbox
(:mod:`orchestrator.server._outbox`) without waiting. Two tasks per connection:

- the **reader** takes frames, applies the rate limit, parses them
  (:func:`~orchestrator.protocols._agent_channel.parse_client_message`) and carries out requests; a
  bad frame or a refused request is answered with an ``error`` event naming the problem,
  and the connection stays usable. A team channel subscription is served from the journal
  up to the last fact pushed, then from the pushes (projected for this client);
- the **sender** writes the outbox to the socket.

A client that lets the outbox fill up is closed with 1008 ("fell behind") and the session
stops pushing to it: nobody else waits for it.

On connect the client gets ``init``. When reattaching (``?session=``), it then gets, all as of
one state:

- ``history``: the finished turns, from the journal's ``agent_messages`` rows of the
  coordinator chat;
- the running turn so far;
- what waits for the user (approvals, questions);
- the active views.

The facts after that state come live, with no gap and no duplicate.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any, Protocol

import attrs
import structlog
import trio
from starlette.websockets import WebSocket

from orchestrator.base import (
    JSON_LIMITS,
    FactLogError,
    IllegalTransitionError,
    JsonLimits,
    PeerProtocolError,
    RunError,
)
from orchestrator.core import Fact, TeamState
from orchestrator.journal import JournalReader
from orchestrator.protocols import (
    Abort,
    Approve,
    ClientMessage,
    ClientMessageError,
    End,
    Prompt,
    Reject,
    Settings,
    TeamSubscribe,
    ToolResponse,
    agent_event,
    channel_of,
    parse_client_message,
    replay,
)
from orchestrator.runtime import prompted_from
from orchestrator.sessions import LiveSession, TeamLog, team_frame

from ._auth import Permission, Principal
from ._client_frames import client_frames
from ._metrics import DaemonMetrics
from ._outbox import CLOSE_FELL_BEHIND, CLOSE_GOING_AWAY, CLOSE_INTERNAL_ERROR, Outbox
from ._rate_limit import TokenBucket

__all__: list[str] = []

log = structlog.get_logger("orchestrator.ws")


class AgentSocketHost(Protocol):
    """What an agent-channel socket asks of the daemon."""

    @property
    def reader(self) -> JournalReader: ...

    async def team_log(self, live: LiveSession) -> TeamLog: ...

    async def dispose(self, live: LiveSession) -> None: ...


class AgentSocket:
    #: A session gives it only the facts that make its events (see Sink.every_fact).
    every_fact = False

    def __init__(
        self,
        websocket: WebSocket,
        daemon: AgentSocketHost,
        live: LiveSession,
        principal: Principal,
        *,
        metrics: DaemonMetrics,
        reattached: bool,
        max_frame_bytes: int,
        rate: float,
        burst: int,
        outbox_size: int,
        json_limits: JsonLimits = JSON_LIMITS,
    ) -> None:
        self.websocket = websocket
        self.daemon = daemon
        self.metrics = metrics
        self.live = live
        self.principal = principal
        self.reattached = reattached
        self.max_frame_bytes = max_frame_bytes
        self.json_limits = json_limits
        self._bucket = TokenBucket(rate=rate, burst=burst, now=trio.current_time())
        self._outbox = Outbox(websocket, outbox_size, on_hang_up=self._hung_up)
        # Frames pushed while a replay is read or sent (they go out after it): the history a
        # reattaching client is shown first, or the envelopes a team subscription replays.
        self._held: list[tuple[str, ...]] | None = [] if reattached else None
        self._held_frames = 0  # frames in _held
        self._outbox_size = outbox_size
        self._team = False  # subscribed to the team channel
        self._reached = 0  # the sequence of the last fact pushed to this client

    # ── the connection ─────────────────────────────────────────────────────

    async def run(self) -> None:
        structlog.contextvars.bind_contextvars(session=self.live.uri, client=self.principal.name)
        state = self.live.attach(self)
        self._reached = state.last_sequence
        # The session's state changes with every fact: what the replay shows of it is taken
        # now, before any checkpoint, so that it ends exactly where the live facts begin.
        replayed = _Replay.of(state) if self.reattached else None
        try:
            self._emit(agent_event("init", sessionId=self.live.id, team=self.live.team_name))
            if replayed is not None:
                await self._replay(replayed)
            self._release_held()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read, nursery.cancel_scope)
                await self._outbox.send()
                nursery.cancel_scope.cancel()
        finally:
            self.live.detach(self)

    async def _replay(self, replayed: _Replay) -> None:
        """History, the running turn so far, what waits for the user, the active views."""
        messages: list[dict[str, Any]] = []
        if replayed.chat is not None:
            rows = await trio.to_thread.run_sync(
                self.daemon.reader.agent_messages, self.live.uri, replayed.chat
            )
            # Rows of turns that ended after the state was taken come live instead.
            messages = [row.event for row in rows if row.turn_id in replayed.finished]
        self._emit(agent_event("history", messages=messages))
        for event in replayed.events:
            self._emit(event)

    def _emit(self, event: dict[str, Any]) -> None:
        """Queue ``event`` for the client; one that fell behind is disconnected."""
        self._outbox.put(json.dumps(event, ensure_ascii=False))

    def _hang_up(self, code: int, reason: str) -> None:
        self._outbox.hang_up(code, reason)

    def _hung_up(self, code: int, reason: str) -> None:
        log.info("client disconnected", session=self.live.uri, code=code, reason=reason)
        if code == CLOSE_FELL_BEHIND:
            self.metrics.dropped_clients += 1
            self.live.detach(self)  # the session stops feeding this connection now

    # ── what the session pushes (a Sink: called as facts are published) ───────

    def deliver(self, fact: Fact, frames: tuple[str, ...], team: Sequence[str]) -> None:
        if fact.sequence <= self._reached:
            return
        self._reached = fact.sequence
        if self._team:
            frames += tuple(team)
        if self._held is not None:
            # A replay is being read or sent: these go after it, and a client that lets as
            # many pile up meanwhile as its buffer holds has fallen behind all the same.
            self._held.append(frames)
            self._held_frames += len(frames)
            if self._held_frames > self._outbox_size:
                self._hang_up(
                    CLOSE_FELL_BEHIND, f"fell behind: {self._held_frames} messages were waiting"
                )
            return
        for text in frames:
            self._outbox.hold(text)  # sent with the batch (see published)

    def published(self) -> None:
        self._outbox.push()

    def failed(self) -> None:
        self._hang_up(CLOSE_INTERNAL_ERROR, "the session's feed failed")

    def _release_held(self) -> None:
        """Send what came live while a replay was read or sent, after it."""
        held, self._held, self._held_frames = self._held or [], None, 0
        for frames in held:
            for text in frames:
                self._outbox.put(text)

    def ended(self, reason: str | None = None) -> None:
        """The session ended (its run finished, the daemon is stopping, it was never
        prompted, or the journal could record nothing more of it: ``reason`` says so)."""
        # How its run ended, when it was recorded (a conversation a client or the idle
        # expiry ended: completed or cancelled).
        run = self.live.state.run
        ended = {"status": str(run.status)} if run is not None and run.status else {}
        if reason is None:
            self._emit(agent_event("session_ended", sessionId=self.live.id, **ended))
        else:
            self._emit(agent_event("session_ended", sessionId=self.live.id, reason=reason, **ended))
        # A close frame's reason holds 123 bytes: a long one is in session_ended only.
        short = reason if reason is not None and len(reason.encode()) <= 120 else None
        self._hang_up(CLOSE_GOING_AWAY, short or "the session ended")

    async def _subscribe_team(self, from_sequence: int) -> None:
        """Envelopes after ``from_sequence`` up to the last fact pushed, then live ones.

        The session has one team log for every reader (see :mod:`._team_log`). Once ready and
        until the next checkpoint, it ends exactly where the facts pushed to this client end.
        The replay is its lines after ``from_sequence``, taken then. The frames of every later
        fact come with the fact (:meth:`deliver`).
        """
        team_log = await self.daemon.team_log(self.live)
        # Envelopes are numbered from 1 without gaps: the N-th is at index N - 1.
        replay = [team_frame(line) for line in team_log.lines[from_sequence:]]
        self._team = True
        # Sent at the client's pace: a session's whole history may be longer than the buffer
        # that tells a slow client (see Outbox.put_waiting); live frames wait behind it.
        self._held = []
        try:
            for text in replay:
                await self._outbox.put_waiting(text)
        finally:
            self._release_held()

    # ── requests ───────────────────────────────────────────────────────────

    async def _read(self, cancel: trio.CancelScope) -> None:
        def dropped(message: str) -> None:
            self._emit(_error("rate_limited", message))

        frames = client_frames(self.websocket, self._bucket, dropped=dropped)
        async with contextlib.aclosing(frames):
            async for frame in frames:
                channel = "agent"  # until the frame says which: errors answer on it
                try:
                    request = parse_client_message(
                        frame, max_bytes=self.max_frame_bytes, limits=self.json_limits
                    )
                    channel = channel_of(request)
                    await self._handle(request)
                except ClientMessageError as exc:
                    self._emit(_error("bad_request", f"{exc.path}: {exc.message}", exc.channel))
                except PeerProtocolError as exc:
                    self._emit(_error("bad_request", f"{exc.path}: {exc.message}", channel))
                except (RunError, IllegalTransitionError) as exc:
                    self._emit(_error("refused", str(exc), channel))
                except FactLogError as exc:
                    # The journal cannot take facts any more: nothing can be done, say why.
                    self._emit(_error("unavailable", f"the journal failed: {exc.message}", channel))
        cancel.cancel()  # the client disconnected

    async def _handle(self, request: ClientMessage) -> None:
        if isinstance(request, TeamSubscribe):
            await self._subscribe_team(request.from_sequence)
            return
        if not self.principal.may(Permission.OPERATE):
            raise RunError(f"{self.principal.name} may watch, not act (an operator token may)")
        live = self.live
        match request:
            case Prompt(prompt=text, kind="steering"):
                await _steer(live, text, self.principal.name)
            case Prompt(prompt=text, task_id=task_id):
                # The handshake's traceparent: a client in a traced app; its prompts
                # continue that trace.
                with prompted_from(self.websocket.headers.get("traceparent")):
                    await live.prompt(text, task_id=task_id)
            case Abort(task_id=task_id):
                await live.abort(task_id)
            case End():
                # The session's end reaches this client as every session's does: its
                # connection closes once the run is recorded finished.
                await self.daemon.dispose(live)
            case ToolResponse(tool_call_id=call, result=result):
                await live.answer(call, result)
            case Approve(request_id=approval):
                await live.decide(approval, approved=True, principal=self.principal.name)
            case Reject(request_id=approval):
                await live.decide(approval, approved=False, principal=self.principal.name)
            case Settings():
                raise RunError(
                    "settings: this session's agents take their provider and model from the "
                    f"team file ({live.team_name}); edit it to change them"
                )


async def _steer(live: LiveSession, text: str, principal: str) -> None:
    """Steer the coordinator's running turn with ``text`` (read at its next model round),
    as ``principal``; refused when no turn runs, since the message would then wait for
    none."""
    chat = live.state.coordinator_chat()
    state = live.state.chats.get(chat) if chat is not None else None
    if chat is None or state is None or state.active_turn is None:
        raise RunError(
            "steering: the coordinator has no turn running to steer; send the message "
            "queued (the default) to start its next turn"
        )
    await live.steer(chat, text, principal=principal)


@attrs.frozen
class _Replay:
    """What a reattaching client is replayed, as of one state: the coordinator chat, its
    finished turns (their history rows come from the journal) and the rest
    (:func:`~orchestrator.protocols._agent_channel.replay`)."""

    chat: str | None
    finished: frozenset[str]
    events: list[dict[str, Any]]

    @classmethod
    def of(cls, state: TeamState) -> _Replay:
        chat = state.coordinator_chat()
        turns = state.chats[chat].turns if chat is not None else ()
        return cls(chat, frozenset(turn.id for turn in turns), replay(state))


def _error(code: str, message: str, channel: str = "agent") -> dict[str, Any]:
    """An ``error`` event on ``channel``: the one the request that caused it came on."""
    return {**agent_event("error", code=code, message=message), "channel": channel}
