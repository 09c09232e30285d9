"""One AHP client on ``/ahp``: JSON-RPC 2.0 over a WebSocket, one message per text frame.

Theory of operation
-------------------
Two tasks per connection, plus one per session the client follows, in one nursery:

- the **reader** takes frames, applies the rate limit, parses them
  (:func:`~orchestrator.protocols._ahp_rpc.parse_call`) and carries out each call in turn; a bad
  frame or a refused call is answered with a JSON-RPC error and the connection stays
  usable;
- a **feed** per session the client follows: a sink of the session
  (:class:`~orchestrator.sessions._live_session.Sink`), which the session hands each fact as
  it is published, puts it on the channels the client subscribed to as ``action``
  notifications (:func:`~orchestrator.protocols._ahp_rpc.channel_envelopes`: every change of
  a channel's state, and each with its fact's ``origin``, so every subscriber sees a client's
  action as its dispatcher's echo does), frames made once per session for every client
  (:meth:`LiveSession.action_frames`); no task and no bus subscription of its own;
- the **sender** writes frames to the socket;
- while the client follows ``ahp-root://``, a **root forwarder** moves what the daemon's
  :class:`~orchestrator.sessions._root_channel.RootChannel` publishes (``root/*`` actions and
  the ``root/sessionAdded`` / ``sessionRemoved`` / ``sessionSummaryChanged`` notifications)
  from this connection's bounded root subscription to the outbox; a subscription that fills
  up is dropped, and the client disconnected with 1008, like a full outbox.

Everything goes through one bounded outbox: a client that lets it fill up is disconnected
(close code 1008, "fell behind").

No gap, no duplicate. A channel's snapshot is taken from the session's committed state
*after* the feed is attached to the session. The channel remembers the state's
``last_sequence`` as its ``from_seq``. The feed passes only facts above it, and every fact
above it is published after the feed was attached. Facts are published by another task,
so never within a step of the reader: a snapshot's response is queued before any action
after it.
``reconnect`` reads the journal (in a thread) for the replay; meanwhile the feed holds the
channels' new actions back (``_Channel.held``) and lets them go after the response.
The root channel is numbered apart (its own ``serverSeq``) and never replayed: its snapshot is
taken with the subscription in place, and root frames are held back while an ``initialize``
or ``reconnect`` is answered. Before a reply that a client compares with what it folded (a
root ``subscribe``, ``listSessions``), the root frames waiting are sent first (``_pump_root``),
so a client's fold and the reply agree at that point.

Sessions' catalog: ``listSessions`` answers from the root channel's summaries
(:func:`~orchestrator.sessions._root_channel.session_summary`, made from the session channel's
state); a session channel's snapshot names the team the session runs as its ``provider``.

Sessions and chats:

- ``createSession`` makes a session at the client's URI whose run starts with its first message;
- ``createChat`` with ``initialMessage`` on such a session starts the run, with the
  coordinator's chat at the client's URI;
- the coordinator then takes each user message as its next turn (``dispatchAction``);
- workers appear as the coordinator delegates; their chats are ``read-only`` or ``hidden``, as
  the team file says.

``dispatchAction`` is carried out by :mod:`orchestrator.server._ahp_dispatch`.
"""

from __future__ import annotations

import contextlib
import functools
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

import attrs
import structlog
import trio
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from orchestrator.ahp.actions import ActionEnvelope
from orchestrator.ahp.commands import (
    ROOT,
    CreateChatParams,
    CreateSessionParams,
    DispatchActionParams,
    DisposeChatParams,
    DisposeSessionParams,
    ErrorCode,
    ForkChatSource,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListSessionsParams,
    ListSessionsResult,
    ReconnectParams,
    ReconnectReplayResult,
    ReconnectResult,
    ReconnectSnapshotResult,
    SideChatSource,
    Snapshot,
    SubscribeParams,
    SubscribeResult,
    UnknownChatSource,
    UnsubscribeParams,
)
from orchestrator.ahp.state import ChatInteractivity, MessageKind
from orchestrator.base import (
    JSON_LIMITS,
    FactLogError,
    JsonLimits,
    RpcError,
    RunError,
    SessionExistsError,
    SessionLimitError,
)
from orchestrator.core import Fact, SummaryUpdate, TeamState, is_forked_chat, summary_updates
from orchestrator.journal import Journal, JournalReader
from orchestrator.protocols import (
    Call,
    error_frame,
    negotiate,
    parse_call,
    result_frame,
)
from orchestrator.runtime import Ids
from orchestrator.sessions import (
    CHAT_PREFIX,
    SESSION_PREFIX,
    Limits,
    LiveSession,
    RootChannel,
    RootSubscription,
    TeamCatalog,
    ahp_envelopes,
    fork_session,
    session_channel_state,
)

from ._ahp_dispatch import ActionDispatcher, DispatchHost
from ._auth import Permission, Principal
from ._metrics import DaemonMetrics
from ._outbox import CLOSE_FELL_BEHIND, CLOSE_GOING_AWAY, CLOSE_INTERNAL_ERROR, Outbox
from ._rate_limit import TokenBucket

__all__: list[str] = []

log = structlog.get_logger("orchestrator.ahp")

#: Close codes: 1008 policy violation (fell behind), 1001 going away.
#: Replay a channel's gap on reconnect up to this many facts of its session; beyond, a snapshot.
REPLAY_LIMIT: Final = 10_000


class ClientIds(Ids):
    """The ids of a session created over AHP: its URI, and the chat URIs the client chose,
    handed out in order before any made-up one."""

    def __init__(self, session: str) -> None:
        super().__init__()
        self._session = session
        self.reserved: deque[str] = deque()

    def session(self) -> str:
        return self._session

    def chat(self) -> str:
        return self.reserved.popleft() if self.reserved else super().chat()


class AhpHost(DispatchHost, Protocol):
    """What an AHP connection asks of the daemon: its sessions (found, opened, ended), the
    chat URIs clients claim, the root channel, and whether it is serving."""

    @property
    def accepting(self) -> bool: ...

    @property
    def stopped(self) -> trio.Event: ...

    @property
    def reader(self) -> JournalReader: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def catalog(self) -> TeamCatalog: ...

    @property
    def root(self) -> RootChannel: ...

    @property
    def sessions(self) -> Mapping[str, LiveSession]: ...

    async def find(self, session: str) -> LiveSession | None: ...

    async def open_session(
        self, team_name: str | None, *, ids: Ids | None = ..., principal: str | None = ...
    ) -> LiveSession: ...

    async def dispose(self, live: LiveSession) -> None: ...

    async def claim_chat(self, chat: str) -> None: ...

    def release_chat(self, chat: str) -> None: ...


async def serve_ahp(
    websocket: WebSocket,
    daemon: AhpHost,
    metrics: DaemonMetrics,
    principal: Principal | None,
    limits: Limits,
) -> None:
    """The ``/ahp`` endpoint: refuse the handshake (401 / 403 / 503) or run the connection."""
    if principal is None or not principal.may(Permission.READ):
        status = 401 if principal is None else 403
        message = "a bearer token is needed" if status == 401 else "forbidden"
        await websocket.send_denial_response(JSONResponse({"error": message}, status_code=status))
        return
    if not daemon.accepting:
        stopping = JSONResponse({"error": "the daemon is stopping"}, status_code=503)
        await websocket.send_denial_response(stopping)
        return
    await websocket.accept()
    metrics.connected_clients += 1
    try:
        await AhpSocket(
            websocket,
            daemon,
            principal,
            metrics=metrics,
            max_frame_bytes=limits.max_frame_bytes,
            rate=limits.messages_per_second,
            burst=limits.burst,
            outbox_size=limits.subscriber_buffer,
            json_limits=limits.json,
        ).run()
    finally:
        metrics.connected_clients -= 1


@attrs.define(eq=False)
class _Channel:
    """A channel the client subscribed to."""

    uri: str
    session: str | None  # None: the root channel
    from_seq: int  # actions up to here are in the snapshot (or were replayed)
    # New actions held back while a reply is made: (serverSeq, frame).
    held: list[tuple[int, str]] | None = None


@attrs.define(eq=False)
class _Feed:
    """A live session's facts, on their way to the client's channels of that session: a
    sink the session pushes each fact to as it is published (see Sink)."""

    live: LiveSession
    socket: AhpSocket
    every_fact: bool = attrs.field(default=True, init=False)  # projected here (Sink)

    def deliver(self, fact: Fact, frames: tuple[str, ...], team: Sequence[str]) -> None:
        self.socket._deliver(self.live, fact)

    def published(self) -> None:
        self.socket._outbox.push()

    def failed(self) -> None:
        self.socket._hang_up(CLOSE_INTERNAL_ERROR, "the session's feed failed")

    def ended(self, reason: str | None = None) -> None:
        """A session that ended leaves its channels subscribed: nothing more comes on them."""


class AhpSocket:
    def __init__(
        self,
        websocket: WebSocket,
        daemon: AhpHost,
        principal: Principal,
        *,
        metrics: DaemonMetrics,
        max_frame_bytes: int,
        rate: float,
        burst: int,
        outbox_size: int,
        json_limits: JsonLimits = JSON_LIMITS,
    ) -> None:
        self.websocket = websocket
        self.daemon = daemon
        self.metrics = metrics
        self.principal = principal
        self.max_frame_bytes = max_frame_bytes
        self.json_limits = json_limits
        self._bucket = TokenBucket(rate=rate, burst=burst, now=trio.current_time())
        self._outbox = Outbox(websocket, outbox_size, on_hang_up=self._hung_up)
        self.client_id: str | None = None
        self._channels: dict[str, _Channel] = {}
        self._feeds: dict[str, _Feed] = {}
        self._dispatcher = ActionDispatcher(
            daemon, principal, emit=self._emit, live_channel=self._live_channel
        )
        self._nursery: trio.Nursery | None = None
        # The root channel: this connection's subscription (while it follows ahp-root://),
        # and whether its frames wait for a reply being made (see _hold_root).
        self._root: RootSubscription | None = None
        self._root_released = trio.Event()
        self._root_released.set()

    # ── the connection ─────────────────────────────────────────────────────

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._read, nursery.cancel_scope)
                nursery.start_soon(self._close_when_stopped)
                await self._outbox.send()
                nursery.cancel_scope.cancel()
        finally:
            for feed in self._feeds.values():
                feed.live.detach(feed)
                feed.live.clients -= 1
            if self._root is not None:
                self.daemon.root.unsubscribe(self._root)

    async def _close_when_stopped(self) -> None:
        """The daemon stopped its sessions (SIGTERM): say goodbye with 1001 "going away",
        after what is queued, as /ws and /teammates do (a client can tell it from a drop)."""
        await self.daemon.stopped.wait()
        self._hang_up(CLOSE_GOING_AWAY, "the daemon is stopping")

    def _emit(self, frame: str) -> None:
        """Queue ``frame`` for the client; one that fell behind is disconnected."""
        self._outbox.put(frame)

    def _hang_up(self, code: int, reason: str) -> None:
        self._outbox.hang_up(code, reason)

    def _hung_up(self, code: int, reason: str) -> None:
        log.info("ahp client disconnected", client=self.client_id, code=code, reason=reason)
        if code == CLOSE_FELL_BEHIND:
            self.metrics.dropped_clients += 1

    # ── feeds: facts to action notifications ───────────────────────────────

    def _feed(self, live: LiveSession) -> _Feed:
        """The feed of ``live``, made (with its bus subscription) on first use."""
        feed = self._feeds.get(live.uri)
        if feed is None:
            feed = self._feeds[live.uri] = _Feed(live=live, socket=self)
            live.attach(feed)
            live.clients += 1  # a session a client follows is never put away
        return feed

    def _drop_feed_if_unused(self, session: str) -> None:
        if any(c.session == session for c in self._channels.values()):
            return
        feed = self._feeds.pop(session, None)
        if feed is not None:
            feed.live.detach(feed)
            feed.live.clients -= 1

    def _deliver(self, live: LiveSession, fact: Fact) -> None:
        # A fact's envelopes are on its own channel (channel_envelopes), and on its session's
        # when it derived a catalog update: one or two lookups find the subscriptions it
        # concerns, so a client of a team's every chat pays per fact, not per chat it follows.
        channel = self._channels.get(fact.channel)
        if channel is not None and channel.session == fact.session:
            self._deliver_on(live, fact, channel)
        if fact.channel != fact.session and live.state.summary_update(fact.sequence) is not None:
            session = self._channels.get(fact.session)
            if session is not None:
                self._deliver_on(live, fact, session)

    def _deliver_on(self, live: LiveSession, fact: Fact, channel: _Channel) -> None:
        # Made once for every client of the session (see LiveSession.action_frames).
        for server_seq, frame in live.action_frames(fact, channel.uri):
            if channel.held is not None:
                channel.held.append((server_seq, frame))
            elif server_seq > channel.from_seq:
                self._outbox.hold(frame)  # sent with the batch (see _Feed.published)

    def _release(self, channels: list[_Channel]) -> None:
        """Send what the channels held back while a reply was made, after the reply."""
        for channel in channels:
            held, channel.held = channel.held or [], None
            for server_seq, frame in held:
                if server_seq > channel.from_seq:
                    self._emit(frame)

    # ── the root channel: the daemon's sessions coming, going, changing ─────

    def _follow_root(self) -> None:
        """Subscribe to the daemon's root channel (once per connection)."""
        if self._root is None:
            self._root = self.daemon.root.subscribe(f"ahp {self.principal.name}")
            assert self._nursery is not None
            self._nursery.start_soon(self._forward_root, self._root)

    def _unfollow_root(self) -> None:
        if self._root is not None:
            self.daemon.root.unsubscribe(self._root)
            self._root = None

    async def _forward_root(self, subscription: RootSubscription) -> None:
        while not subscription.closed:
            await subscription.wait()
            await self._root_released.wait()
            self._pump_root()
        if subscription.dropped_reason is not None:
            self._hang_up(CLOSE_FELL_BEHIND, subscription.dropped_reason)

    def _pump_root(self) -> None:
        """Send every root frame waiting, now: before a reply that must follow them (the
        actions a new snapshot already holds are left out)."""
        if self._root is None:
            return
        channel = self._channels.get(ROOT)
        for frame in self._root.drain():
            if channel is not None and (frame.seq is None or frame.seq > channel.from_seq):
                self._emit(frame.text)

    def _hold_root(self) -> None:
        """Hold root frames back until the reply being made is sent (``initialize`` and
        ``reconnect`` may give a root snapshot, then wait for other channels)."""
        if self._root_released.is_set():
            self._root_released = trio.Event()

    def _release_root(self) -> None:
        self._root_released.set()
        self._pump_root()

    # ── requests ───────────────────────────────────────────────────────────

    def _rate_limited(self, frame: str | bytes) -> RpcError:
        """The answer to a frame dropped by the rate limit: with the request's id, so the
        client knows which of its requests was not carried out (a frame that is no request,
        or not JSON-RPC, gets the null id JSON-RPC gives an error it cannot attribute)."""
        try:
            call = parse_call(frame, max_bytes=self.max_frame_bytes, limits=self.json_limits)
        except RpcError as exc:
            request_id = exc.id  # a request whose id was read, if its params were not
        else:
            request_id = call.id if call.is_request else None
        return RpcError(
            ErrorCode.RATE_LIMITED,
            f"more than {self._bucket.rate:g} messages a second (bursts of "
            f"{self._bucket.burst}): this one was dropped",
            id=request_id,
        )

    async def _read(self, cancel: trio.CancelScope) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                cancel.cancel()
                return
            frame: str | bytes | None = message.get("text")
            if frame is None:
                frame = message.get("bytes") or b""
            if not self._bucket.take(trio.current_time()):
                self._emit(error_frame(self._rate_limited(frame)))
                continue
            call: Call | None = None
            try:
                call = parse_call(frame, max_bytes=self.max_frame_bytes, limits=self.json_limits)
                result = await self._handle(call)
                if call.is_request:
                    assert call.id is not None
                    self._emit(result_frame(call.id, result))
            except RpcError as exc:
                if call is not None:
                    exc.id = call.id
                self._emit(error_frame(exc))
            except Exception as exc:  # an error barrier per call: the connection goes on
                log.exception("ahp call failed", method=call.method if call else None)
                request_id = call.id if call is not None else None
                self._emit(
                    error_frame(
                        RpcError(ErrorCode.INTERNAL_ERROR, f"internal error: {exc}", id=request_id)
                    )
                )
            finally:
                if call is not None and call.method in ("subscribe", "reconnect", "initialize"):
                    self._release([c for c in self._channels.values() if c.held is not None])
                    self._release_root()

    async def _handle(self, call: Call) -> object:
        method = call.method
        if method == "ping":
            return None
        if method == "initialize":
            return await self._initialize(call.params)
        if method == "reconnect":
            return await self._reconnect(call.params)
        if self.client_id is None:
            raise RpcError(ErrorCode.INVALID_REQUEST, f"{method}: send initialize first")
        match call.params:
            case SubscribeParams(channel=channel):
                return SubscribeResult(snapshot=await self._subscribe(channel))
            case UnsubscribeParams(channel=channel):
                self._unsubscribe(channel)
                return None
            case ListSessionsParams():
                return self._list_sessions(call.params)
            case DispatchActionParams():
                await self._dispatcher.dispatch(
                    call.params, client_id=self.client_id, as_request=call.is_request
                )
                return None
        self._require_operator(method)
        match call.params:
            case CreateSessionParams():
                await self._create_session(call.params)
            case DisposeSessionParams(channel=channel):
                await self._dispose_session(channel)
            case CreateChatParams():
                await self._create_chat(call.params)
            case DisposeChatParams(channel=channel):
                await self._dispose_chat(channel)
        return None

    def _require_operator(self, what: str) -> None:
        if not self.principal.may(Permission.OPERATE):
            raise RpcError(
                ErrorCode.PERMISSION_DENIED,
                f"{what}: {self.principal.name} may watch, not act (an operator token may)",
                data={},
            )

    # ── initialize, reconnect, subscriptions ───────────────────────────────

    async def _initialize(self, params: InitializeParams) -> InitializeResult:
        if self.client_id is not None:
            raise RpcError(ErrorCode.INVALID_REQUEST, "initialize: this connection is initialized")
        version = negotiate(params.protocol_versions)
        self._hold_root()
        self.client_id = params.client_id
        snapshots: list[Snapshot] = []
        for uri in params.initial_subscriptions or ():
            try:
                snapshot = await self._subscribe(uri)
            except RpcError:
                continue  # a channel that is gone is left out, as reconnect's ``missing``
            snapshots.append(snapshot)
        log.info("ahp client initialized", client=self.client_id, version=version)
        return InitializeResult(
            protocol_version=version,
            server_seq=max((s.from_seq for s in snapshots), default=0),
            server_info=Implementation(name="team-orchestrator", title="Team orchestrator"),
            snapshots=tuple(snapshots),
        )

    async def _subscribe(self, uri: str) -> Snapshot:
        """Subscribe to ``uri``; its snapshot (:class:`RpcError` if there is no such channel)."""
        snapshot, _ = await self._open(uri)
        return snapshot

    async def _open(self, uri: str) -> tuple[Snapshot, TeamState | None]:
        """Subscribe to ``uri``: its snapshot, and its session's state (None: the root)."""
        if uri == ROOT:
            # Subscribed again: the same subscription goes on (nothing in between is lost).
            self._follow_root()
            self.daemon.root.flush()  # changes held back go to every subscriber, this one too
            self._pump_root()  # ...and out, under the channel as it was (if any)
            root, seq = self.daemon.root.snapshot()
            self._channels[uri] = _Channel(uri=uri, session=None, from_seq=seq)
            return Snapshot(resource=uri, state=root, from_seq=seq), None
        if uri in self._channels:
            self._unsubscribe(uri)
        live, chat = self._live_channel(uri)
        if live is None and not chat:
            try:
                live = await self.daemon.find(uri)  # an unfinished session put away: take it up
            except RunError as exc:  # another node of the journal runs it
                raise RpcError(ErrorCode.SESSION_NOT_FOUND, str(exc)) from None
        if live is not None:
            self._feed(live)  # before the state is read: nothing after it is missed
            state, provider = live.state, live.team_name
        elif chat:
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {uri} in a live session of this host")
        else:
            state, provider = await self._past_state(uri)
        snapshot = _snapshot(state, uri, provider)
        session = live.uri if live is not None else uri
        self._channels[uri] = _Channel(uri=uri, session=session, from_seq=snapshot.from_seq)
        return snapshot, state

    def _unsubscribe(self, uri: str) -> None:
        if uri == ROOT:
            self._pump_root()  # what waits was published while subscribed
            self._unfollow_root()
        channel = self._channels.pop(uri, None)
        if channel is not None and channel.session is not None:
            self._drop_feed_if_unused(channel.session)

    def _live_channel(self, uri: str) -> tuple[LiveSession | None, bool]:
        """The live session of a session or chat URI, and whether ``uri`` is a chat's.
        A hidden chat is as if it did not exist."""
        if uri.startswith(CHAT_PREFIX):
            for live in self.daemon.sessions.values():
                chat = live.state.chats.get(uri)
                if chat is not None:
                    if chat.interactivity is ChatInteractivity.HIDDEN:
                        return None, True
                    return live, True
            return None, True
        if not uri.startswith(SESSION_PREFIX):
            raise RpcError(
                ErrorCode.NOT_FOUND,
                f"no channel {uri!r} (channels: {ROOT}, ahp-session:/ID, ahp-chat:/ID)",
            )
        return self.daemon.sessions.get(uri), False

    async def _past_state(self, uri: str) -> tuple[TeamState, str]:
        """The state of a session this daemon no longer runs, from the journal, and its
        provider (the team it ran: its ``[team] name``, as the daemon names teams)."""
        try:
            state = await trio.to_thread.run_sync(self.daemon.reader.open, uri)
        except FactLogError:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"no session {uri}") from None
        return state, state.run.team if state.run is not None else "orchestrator"

    async def _reconnect(self, params: ReconnectParams) -> ReconnectResult:
        if self.client_id is not None and self.client_id != params.client_id:
            raise RpcError(
                ErrorCode.INVALID_REQUEST, "reconnect: this connection has another clientId"
            )
        self.client_id = params.client_id
        self._hold_root()
        cursors = dict(params.cursors or {})
        snapshots: list[Snapshot] = []
        missing: list[str] = []
        to_replay: list[tuple[_Channel, int, TeamState]] = []
        for uri in dict.fromkeys(params.subscriptions):
            try:
                snapshot, state = await self._open(uri)
            except RpcError:
                missing.append(uri)
                continue
            channel = self._channels[uri]
            channel.held = []  # until the reply is sent (see _read)
            cursor = cursors.get(uri, params.last_seen_server_seq)
            last = channel.from_seq
            if state is None:
                # Root actions are not kept: a snapshot, unless the client's own cursor of
                # the root says it has seen them all (lastSeenServerSeq counts sessions').
                if cursors.get(uri) != last:
                    snapshots.append(snapshot)
            elif cursor > last or last - cursor > REPLAY_LIMIT:
                snapshots.append(snapshot)  # a gap too big to replay
            else:
                to_replay.append((channel, cursor, state))
        if snapshots and not params.cursors:
            # A plain AHP reconnect has one kind of result: every channel gets a snapshot.
            every = [self._snapshot_now(c.uri) for c, _, _ in to_replay]
            return ReconnectSnapshotResult(snapshots=(*snapshots, *every))
        replayed: list[ActionEnvelope] = []
        for session in dict.fromkeys(c.session for c, _, _ in to_replay):
            assert session is not None
            mine = [(c, cursor, state) for c, cursor, state in to_replay if c.session == session]
            after = min(cursor for _, cursor, _ in mine)
            facts = await trio.to_thread.run_sync(
                functools.partial(self.daemon.reader.facts, session, after=after)
            )
            # The session channel's catalog updates are derived, not stored: the state
            # knows those of its latest facts; older ones are derived again from the journal.
            summaries = None
            if any(c.uri == session for c, _, _ in mine):
                summaries = mine[0][2].summary_updates_after(after)
                if summaries is None:
                    summaries = await trio.to_thread.run_sync(
                        functools.partial(_derived_summaries, self.daemon.reader, session)
                    )
            for channel, cursor, state in mine:
                replayed += [
                    envelope
                    for fact in facts
                    if cursor < fact.sequence <= channel.from_seq
                    for envelope in ahp_envelopes(state, fact, channel.uri, summaries)
                ]
        replayed.sort(key=lambda e: e.server_seq)
        return ReconnectReplayResult(
            actions=tuple(replayed),
            missing=tuple(missing),
            snapshots=tuple(snapshots) if params.cursors else None,
        )

    def _snapshot_now(self, uri: str) -> Snapshot:
        channel = self._channels[uri]
        feed = self._feeds.get(channel.session or "")
        if feed is None:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"{uri}: its session has ended")
        snapshot = _snapshot(feed.live.state, uri, feed.live.team_name)
        channel.from_seq = snapshot.from_seq
        return snapshot

    def _list_sessions(self, params: ListSessionsParams) -> ListSessionsResult:
        summaries = sorted(
            self.daemon.root.summaries(),  # what was held back is sent to subscribers...
            key=lambda s: (s.modified_at, s.resource),
            reverse=True,
        )
        self._pump_root()  # ...and to this client before the reply
        start = 0
        if params.cursor is not None:
            if not params.cursor.isdigit() or int(params.cursor) > len(summaries):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"cursor: unknown {params.cursor!r}")
            start = int(params.cursor)
        limit = params.limit if params.limit is not None and params.limit > 0 else len(summaries)
        page = summaries[start : start + limit]
        after = start + len(page)
        return ListSessionsResult(
            items=tuple(page), next_cursor=str(after) if after < len(summaries) else None
        )

    # ── sessions and chats ─────────────────────────────────────────────────

    async def _create_session(self, params: CreateSessionParams) -> None:
        uri = params.channel
        if not uri.startswith(SESSION_PREFIX) or len(uri) == len(SESSION_PREFIX):
            raise RpcError(ErrorCode.INVALID_PARAMS, "channel: expected ahp-session:/ID")
        if params.fork is not None:
            await self._fork_session(uri, params.fork.session, params.fork.turn_id)
            return
        try:
            self.daemon.catalog.team(params.provider)
        except RunError as exc:
            raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, f"provider: {exc}") from None
        try:
            await self.daemon.open_session(
                params.provider, ids=ClientIds(uri), principal=self.principal.name
            )
        except SessionExistsError as exc:
            raise RpcError(ErrorCode.SESSION_ALREADY_EXISTS, str(exc)) from None
        except SessionLimitError as exc:
            raise RpcError(ErrorCode.LIMIT_REACHED, str(exc), data={"limit": exc.limit}) from None
        except RunError as exc:
            raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, f"provider: {exc}") from None
        except FactLogError as exc:
            message = f"the journal cannot be read: {exc.message}"
            raise RpcError(ErrorCode.INTERNAL_ERROR, message) from None
        log.info("ahp session created", session=uri, client=self.client_id)

    async def _fork_session(self, uri: str, source: str, turn_id: str) -> None:
        """``createSession`` with ``fork``: a new session ``uri`` holding ``source``'s content
        up to and including turn ``turn_id``'s response, taken up as a restart takes a session
        up (the team and provider are the source's)."""
        if self.daemon.live(uri) is not None or await self.daemon.journal_knows(uri):
            raise RpcError(ErrorCode.SESSION_ALREADY_EXISTS, f"session {uri} exists already")
        if not source.startswith(SESSION_PREFIX) or not await self.daemon.journal_knows(source):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"fork.session: no session {source} to fork")
        try:
            await fork_session(
                self.daemon.journal, source, turn_id=turn_id, runs_on=True, session=uri
            )
            live = await self.daemon.find(uri)
        except RunError as exc:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"fork.turnId: {exc}") from None
        except FactLogError as exc:
            message = f"the journal cannot be read: {exc.message}"
            raise RpcError(ErrorCode.INTERNAL_ERROR, message) from None
        if live is None:
            raise RpcError(ErrorCode.INTERNAL_ERROR, f"the fork {uri} could not be taken up")
        log.info("ahp session forked", session=uri, source=source, client=self.client_id)

    async def _dispose_session(self, uri: str) -> None:
        live = self.daemon.live(uri) if uri.startswith(SESSION_PREFIX) else None
        if live is not None:
            await self.daemon.dispose(live)
            return
        if not uri.startswith(SESSION_PREFIX) or not await self.daemon.journal_knows(uri):
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"no session {uri}")
        # A session that has ended holds nothing to clean up; the journal keeps its record.

    async def _create_chat(self, params: CreateChatParams) -> None:
        session = params.channel
        live = self.daemon.live(session) if session.startswith(SESSION_PREFIX) else None
        if live is None:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"no live session {params.channel}")
        chat = params.chat
        if not chat.startswith(CHAT_PREFIX) or len(chat) == len(CHAT_PREFIX):
            raise RpcError(ErrorCode.INVALID_PARAMS, "chat: expected ahp-chat:/ID")
        source = params.source
        if isinstance(source, UnknownChatSource):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"source.kind: this host forks chats (fork) and opens side chats (sideChat), "
                f"not {source.kind!r}",
            )
        # A chat URI names one chat across every session, live or past: the daemon checks
        # both, and holds the URI for this request until the chat exists or was not made.
        try:
            await self.daemon.claim_chat(chat)
        except SessionExistsError as exc:
            raise RpcError(ErrorCode.ALREADY_EXISTS, str(exc)) from None
        except FactLogError as exc:
            message = f"the journal cannot be read: {exc.message}"
            raise RpcError(ErrorCode.INTERNAL_ERROR, message) from None
        try:
            if source is None:
                await self._start_coordinator_chat(live, chat, params)
            else:
                await self._fork_chat(live, chat, source, params)
        finally:
            self.daemon.release_chat(chat)

    async def _fork_chat(
        self,
        live: LiveSession,
        chat: str,
        source: ForkChatSource | SideChatSource,
        params: CreateChatParams,
    ) -> None:
        """``createChat`` with a ``source``: a fork of a chat of this session at a completed
        turn, or a side chat from one of its turns; then its initial message, if any."""
        message = params.initial_message
        if message is not None and message.origin.kind is not MessageKind.USER:
            raise RpcError(ErrorCode.INVALID_PARAMS, "initialMessage: only user messages")
        state = live.state.chats.get(source.chat)
        hidden = state is not None and state.interactivity is ChatInteractivity.HIDDEN
        if state is None or hidden:
            raise RpcError(
                ErrorCode.INVALID_PARAMS, f"source.chat: no chat {source.chat} in {live.uri}"
            )
        side = isinstance(source, SideChatSource)
        try:
            await live.fork_chat(
                chat,
                source=source.chat,
                turn_id=source.turn_id,
                side=side,
                selection=source.selection if isinstance(source, SideChatSource) else None,
            )
        except RunError as exc:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"source.turnId: {exc}") from None
        log.info("ahp chat forked", chat=chat, source=source.chat, side=side)
        if message is not None:
            try:
                await live.prompt_chat(chat, message.text)
            except RunError as exc:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"initialMessage: {exc}") from None

    async def _start_coordinator_chat(
        self, live: LiveSession, chat: str, params: CreateChatParams
    ) -> None:
        coordinator = live.state.coordinator_chat()
        if live.started or coordinator is not None:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"session {live.uri} has its coordinator chat ({coordinator}); a team's "
                "other chats are its workers, made when the coordinator delegates",
            )
        ids = live.ids
        if not isinstance(ids, ClientIds):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                "this session was not created over AHP: its coordinator chat is made by its "
                "first prompt",
            )
        message = params.initial_message
        if message is None:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                "initialMessage: a team's coordinator chat starts with its first message",
            )
        if message.origin.kind is not MessageKind.USER:
            raise RpcError(ErrorCode.INVALID_PARAMS, "initialMessage: only user messages")
        ids.reserved.append(chat)
        try:
            await live.prompt(message.text, task_id=None)
        except RunError as exc:
            ids.reserved.clear()
            raise RpcError(ErrorCode.INVALID_PARAMS, str(exc)) from None

    async def _dispose_chat(self, uri: str) -> None:
        live, _ = self._live_channel(uri) if uri.startswith(CHAT_PREFIX) else (None, False)
        if live is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {uri} in a live session of this host")
        if uri == live.state.coordinator_chat():
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"{uri} is the session's coordinator chat: dispose the session instead",
            )
        if is_forked_chat(live.state, uri):
            # Its queued messages are withdrawn and its running turn cancelled, alone.
            try:
                await live.dispose_chat(uri)
            except RunError as exc:
                raise RpcError(ErrorCode.INVALID_PARAMS, str(exc)) from None
            return
        # A worker that has finished holds nothing; its chat stays in the record.
        with contextlib.suppress(RunError):
            await live.cancel_worker(uri)


def _snapshot(state: TeamState, uri: str, provider: str) -> Snapshot:
    if uri.startswith(CHAT_PREFIX):
        chat = state.chats.get(uri)
        if chat is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no chat {uri}")
        return Snapshot(resource=uri, state=chat, from_seq=state.last_sequence)
    return Snapshot(
        resource=uri,
        state=session_channel_state(state, provider),
        from_seq=state.last_sequence,
    )


def _derived_summaries(reader: JournalReader, session: str) -> dict[int, SummaryUpdate]:
    """Every catalog update the session's facts derive (a thread: it folds them all)."""
    return summary_updates(session, reader.facts(session))
