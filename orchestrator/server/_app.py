"""``orchestrator serve``: one port for every client (Starlette on hypercorn's trio worker).

Routes:

- ``GET /healthz``: 200 ``{"status": "ok"}`` once the daemon accepts clients, 503 while it
  starts or stops (no token needed: a load balancer asks it);
- ``GET /metrics``: Prometheus text (viewer);
- ``WS /ws?team=NAME`` (a new session) or ``/ws?session=ID`` (reattach): the agent channel,
  the team channel and views (see :mod:`orchestrator.server._agent_socket`);
- ``WS /ahp``: the AHP host, JSON-RPC 2.0 (see :mod:`orchestrator.server._ahp_socket`);
- ``WS /teammates``: the background teammates: list, history, pause / resume / trigger /
  stop (operator), and their Agent UI envelopes (see
  :mod:`orchestrator.protocols._teammate_channel`);
- ``POST /callback``: view updates from tools (tool role);
- ``GET /``, ``/assets/...``, ``/api/...``: the web view, its sign-in and the JSON it reads
  (see :mod:`orchestrator.server._web`).

Theory of operation: :func:`serve` does these, all in one nursery:

- it opens the journal and loads the teams;
- it builds the daemon and :func:`assembles <assemble>` it with its background teammates'
  scheduler and its metrics (the daemon imports neither: it knows them as a companion service
  and a session observer);
- it starts the daemon's sessions and then hypercorn;
- it reports the bound URL when clients can connect (and tells systemd READY=1).

SIGTERM / SIGINT:

- stop accepting (``/healthz`` turns 503);
- let running turns end for ``shutdown_grace`` seconds;
- stop the sessions without recording (recovery at the next start takes them up);
- drain the journal, exit 0.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import attrs
import structlog
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from orchestrator.base import (
    FactLogError,
    IllegalTransitionError,
    JsonLimits,
    OrchestratorError,
    PeerProtocolError,
    RunError,
    SessionLimitError,
    parse_json,
    register_secret,
    timestamp,
    utc_now,
)
from orchestrator.journal import Db, is_postgres_url, open_journal
from orchestrator.protocols import ClientMessageError, agent_event, model_choice, view_update
from orchestrator.runtime import ToolCallback, callback_url
from orchestrator.runtime import group_id as session_group
from orchestrator.runtime.backends import http_client
from orchestrator.sessions import (
    Daemon,
    Scheduler,
    default_node,
    load_teams,
    session_id,
    session_uri,
)
from orchestrator.spec import TeamSpec

from ._agent_socket import AgentSocket
from ._agui_endpoint import AguiRequestError, agui_run
from ._ahp_socket import serve_ahp
from ._auth import Authenticator, Permission, Principal
from ._config import ServeConfig
from ._hypercorn_ws import HypercornSeam, OpenSockets, seam_problem
from ._metrics import CONTENT_TYPE, DaemonMetrics
from ._outbox import CLOSE_GOING_AWAY
from ._principals import AccessRefusedError, Principals
from ._sd_notify import SystemdNotifier
from ._served_names import ServedNames
from ._teammates_socket import serve_teammates
from ._web import web_routes
from ._web_assets import WebAssets

__all__ = [
    "assemble",
    "serve",
]

log = structlog.get_logger("orchestrator.server")

#: Close code for a WebSocket refused after the handshake (1008: policy violation).
CLOSE_POLICY: Final = 1008
#: Seconds a POST body has to arrive in whole: a client that declares more bytes than it sends
#: and waits would otherwise hold its request, and a task, for as long as it likes. A body
#: of ``max_body_bytes`` (1 MiB) takes a link of 35 kB/s; no tool posts anything near that.
BODY_TIMEOUT: Final = 30.0
#: Seconds a client refused for a limit is told to wait (``Retry-After``).
RETRY_AFTER: Final = 5
#: Seconds after hypercorn's graceful timeout when the sockets of connections that are still
#: open (a write waiting for a client that stopped reading) are closed under them.
STUCK_AFTER_GRACE: Final = 0.5


@attrs.frozen
class _HttpError(Exception):
    status: int
    message: str
    close: bool = False  # the connection is closed after the answer


class _ClientGoneError(Exception):
    """The client of a request went away while its body was read."""

    def __init__(self, declared: str | None, received: int) -> None:
        super().__init__(f"the client went after {received} of {declared} declared bytes")


def _call_session(request: Request, callback: ToolCallback) -> str | None:
    """The session whose running tool call ``request``'s bearer token was made for; None
    when it brings no such token."""
    scheme, _, credential = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        return None
    return callback.session_of(credential.strip())


def _json_error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def _limit_error(exc: SessionLimitError) -> JSONResponse:
    """A session refused by a limit: 429 for the client's own (it holds too many), 503 for
    the daemon's (it is full); the body names the limit."""
    status = 429 if exc.per_principal else 503
    response = JSONResponse({"error": str(exc), "limit": exc.limit}, status_code=status)
    response.headers["Retry-After"] = str(RETRY_AFTER)
    return response


@attrs.frozen(kw_only=True)
class DaemonAssembly:
    """A daemon and what is built around it: its background teammates' scheduler and its
    metrics (see :func:`assemble`)."""

    daemon: Daemon
    scheduler: Scheduler
    metrics: DaemonMetrics


def assemble(daemon: Daemon, *, wall_clock: Callable[[], dt.datetime] = utc_now) -> DaemonAssembly:
    """Build ``daemon``'s scheduler and metrics and wire them in: the scheduler runs beside
    its sessions (a companion), the metrics observe them. ``wall_clock``: what time it is,
    for the background teammates' schedules (tests pass one made from trio's clock)."""
    scheduler = Scheduler(daemon, clock=wall_clock)
    metrics = DaemonMetrics(daemon, scheduler)
    daemon.observer = metrics
    daemon.companions.append(scheduler)
    return DaemonAssembly(daemon=daemon, scheduler=scheduler, metrics=metrics)


def build_app(
    assembly: DaemonAssembly,
    config: ServeConfig,
    sockets: OpenSockets | None = None,
    *,
    web: WebAssets | None = None,
) -> ASGIApp:
    """The ASGI app of an assembled daemon: every route on one port; under it, the server's
    own ``send`` of each connection is recorded (before Starlette wraps an HTTP one).
    ``web``: the web view's files (default: the package's)."""
    daemon = assembly.daemon
    principals = Principals(Authenticator(config.tokens))
    limits = config.limits

    def require(request: Request, permission: Permission) -> Principal:
        return principals.require(
            request, permission, sign_in="a bearer token is needed (Authorization: Bearer TOKEN)"
        )

    def guarded(
        endpoint: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                return await endpoint(request)
            except AccessRefusedError as exc:
                extra = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
                return _json_error(exc.status, exc.message, **extra)
            except _HttpError as exc:
                extra = {"Connection": "close"} if exc.close else {}
                return _json_error(exc.status, exc.message, **extra)
            except _ClientGoneError as exc:
                log.info("request abandoned", path=request.url.path, reason=str(exc))
                # Answered for form's sake: hypercorn has closed the connection (after a 400
                # of its own if the client half-closed), so nothing is sent.
                return _json_error(400, f"the body was incomplete: {exc}")

        return handle

    async def healthz(request: Request) -> Response:
        if not daemon.accepting:
            return JSONResponse({"status": "unavailable"}, status_code=503)
        if daemon.journal.failed is not None:
            # Nothing can be recorded any more (a full disk, a lost file): every session
            # has stopped. Say so to whoever watches, without the path's details.
            return JSONResponse(
                {"status": "journal failed", "error": daemon.journal.failed.message},
                status_code=503,
            )
        reconnecting = daemon.journal.reconnecting
        journal = (
            # The database went away (a restart, a failover) or another process locked the
            # file: sessions pause, none ends, until the journal is back or gives up (then
            # 503 above).
            {"journal": "reconnecting", "journal_reconnecting_since": timestamp(reconnecting)}
            if reconnecting is not None
            else {}
        )
        return JSONResponse(
            {
                "status": "ok",
                **journal,
                "sessions": len(daemon.sessions),
                # Which node this is, and the sessions it owns: on PostgreSQL those it holds
                # the lease of (several daemons on one journal); on SQLite the lock of.
                "node": daemon.node,
                "owned_sessions": daemon.owned_sessions(),
                # The sessions it follows (another node of the journal runs them).
                "followed_sessions": daemon.followed_sessions(),
                # What a client may ask for, and why the others cannot be asked for.
                # Named by their [team] name (what sessions record); the file of each
                # beside it (its stem names the team too).
                "teams": sorted(set(daemon.catalog.teams) - set(daemon.runtimes.unavailable)),
                "team_files": daemon.catalog.files,
                "unavailable_teams": daemon.runtimes.unavailable,
                "invalid_teams": daemon.catalog.invalid,
                # The MCP servers started so far (for a session of their team), and why
                # those that are not connected are not.
                "mcp_servers": daemon.runtimes.tool_server_status(),
            }
        )

    async def metrics(request: Request) -> Response:
        require(request, Permission.READ)
        return Response(assembly.metrics.render(), media_type=CONTENT_TYPE)

    async def callback(request: Request) -> Response:
        # A tool call's own token (see ToolCallback.call_token) posts into its session only;
        # any other credential is checked as on every route (a configured tool token).
        call_session = _call_session(request, daemon.callback)
        if call_session is None:
            require(request, Permission.CALLBACK)
        body = await _body(request, limits.max_body_bytes)
        view_type, group_id, content = _view_update(body, limits.json)
        if call_session is not None and group_id != session_group(call_session):
            raise _HttpError(403, "group_id: this tool call's token is for another session")
        try:
            live = await daemon.find(group_id)
        except RunError as exc:  # another node of the journal runs it
            raise _HttpError(404, f"group_id: {exc}") from None
        if live is None:
            if not await daemon.journal_knows(group_id):
                raise _HttpError(404, f"group_id: no thread {group_id!r} on this daemon")
            raise _HttpError(409, f"group_id: thread {group_id!r} has ended")
        try:
            await live.update_view(view_type, content)
        except IllegalTransitionError as exc:
            raise _HttpError(409, f"group_id: {exc.reason}") from None
        except RunError as exc:  # a session this daemon follows, whose runner refused
            raise _HttpError(409, f"group_id: {exc}") from None
        except FactLogError as exc:
            raise _HttpError(503, f"the view could not be stored: {exc}") from None
        return JSONResponse({"status": "ok"})

    async def agui(request: Request) -> Response:
        principal = require(request, Permission.OPERATE)
        body = await _body(request, limits.max_body_bytes)
        try:
            return await agui_run(request, body, daemon, principal, limits.json)
        except AguiRequestError as exc:
            raise _HttpError(exc.status, exc.message) from None
        except SessionLimitError as exc:
            return _limit_error(exc)
        except RunError as exc:
            raise _HttpError(409, str(exc)) from None
        except FactLogError as exc:
            raise _HttpError(503, f"the journal failed: {exc.message}") from None

    async def admitted(websocket: WebSocket) -> Principal | None:
        """The principal of a WebSocket handshake that may watch; None once refused."""
        if principals.foreign(websocket):
            message = "a connection from another site's page is refused"
            await websocket.send_denial_response(_json_error(403, message))
            return None
        principal = principals.of(websocket)
        if principal is None or not principal.may(Permission.READ):
            status = 401 if principal is None else 403
            await websocket.send_denial_response(
                _json_error(status, "a bearer token is needed" if status == 401 else "forbidden")
            )
            return None
        if not daemon.accepting:
            await websocket.send_denial_response(_json_error(503, "the daemon is stopping"))
            return None
        return principal

    async def agent_socket(websocket: WebSocket) -> None:
        principal = await admitted(websocket)
        if principal is None:
            return
        wanted = websocket.query_params.get("session")
        if not wanted and not principal.may(Permission.OPERATE):
            message = "opening a session takes an operator token (attach with ?session=ID)"
            await websocket.send_denial_response(_json_error(403, message))
            return
        # A model for the new session's OpenAI-compatible agents (as `run --model`).
        model = websocket.query_params.get("model")
        try:
            if model is not None and wanted:
                raise ClientMessageError(
                    "a session's model is chosen when it opens (with ?team=), not on attach",
                    path="?model",
                )
            if model is not None:
                model = model_choice(model, path="?model")
        except ClientMessageError as exc:
            message = f"{exc.path}: {exc.message}"
            await websocket.send_denial_response(_json_error(400, message))
            return
        try:
            if wanted:
                live = await daemon.find(wanted)
                if live is None:
                    ended = await ended_session(daemon, wanted)
                    if ended is None:
                        raise RunError(f"no session {wanted!r} on this daemon")
                    await websocket.accept()
                    for event in ended:
                        await websocket.send_text(json.dumps(event, ensure_ascii=False))
                    await websocket.close(code=CLOSE_GOING_AWAY, reason="the session ended")
                    return
            else:
                live = await daemon.open_session(
                    websocket.query_params.get("team"), principal=principal.name, model=model
                )
        except SessionLimitError as exc:
            await websocket.send_denial_response(_limit_error(exc))
            return
        except RunError as exc:
            await websocket.send_denial_response(_json_error(404, str(exc)))
            return
        except FactLogError as exc:
            message = f"the journal cannot be read: {exc.message}"
            await websocket.send_denial_response(_json_error(503, message))
            return
        await websocket.accept()
        assembly.metrics.connected_clients += 1
        try:
            with live.attached():
                await AgentSocket(
                    websocket,
                    daemon,
                    live,
                    principal,
                    metrics=assembly.metrics,
                    reattached=bool(wanted),
                    max_frame_bytes=limits.max_frame_bytes,
                    rate=limits.messages_per_second,
                    burst=limits.burst,
                    outbox_size=limits.subscriber_buffer,
                    json_limits=limits.json,
                ).run()
        finally:
            assembly.metrics.connected_clients -= 1

    async def teammates_socket(websocket: WebSocket) -> None:
        principal = await admitted(websocket)
        if principal is None:
            return
        await websocket.accept()
        assembly.metrics.connected_clients += 1
        try:
            await serve_teammates(
                websocket, assembly.scheduler, assembly.metrics, principal, limits
            )
        finally:
            assembly.metrics.connected_clients -= 1

    async def ahp_socket(websocket: WebSocket) -> None:
        if principals.foreign(websocket):
            message = "a connection from another site's page is refused"
            await websocket.send_denial_response(_json_error(403, message))
            return
        await serve_ahp(websocket, daemon, assembly.metrics, principals.of(websocket), limits)

    def a2a(request: Request, permission: Permission) -> str:
        return require(request, permission).name

    # Each team as an A2A agent, when the SDK (the [a2a] extra) is installed.
    try:
        from ._a2a_endpoint import a2a_routes
    except ImportError:
        served_a2a: list[Route] = []
    else:

        async def a2a_body(request: Request) -> None:
            # Bounded and through the input gate before the SDK's dispatcher reads it: its
            # request.json() reads the body kept here (Starlette's cache of request.body()).
            body = await _body(request, limits.max_body_bytes)
            try:
                parse_json(body, protocol="a2a", limits=limits.json)
            except PeerProtocolError as exc:
                raise _HttpError(400, str(exc)) from None
            request._body = body

        served_a2a = a2a_routes(
            daemon,
            read=lambda request: a2a(request, Permission.READ),
            operate=lambda request: a2a(request, Permission.OPERATE),
            checked=a2a_body,
            guarded=guarded,
        )

    app: ASGIApp = Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/metrics", guarded(metrics)),
            Route("/callback", guarded(callback), methods=["POST"]),
            Route("/agui", guarded(agui), methods=["POST"]),
            *served_a2a,
            WebSocketRoute("/ws", agent_socket),
            WebSocketRoute("/ahp", ahp_socket),
            WebSocketRoute("/teammates", teammates_socket),
            *web_routes(
                daemon,
                principals,
                web if web is not None else WebAssets(),
                json_limits=limits.json,
                trace_url=config.tracing.trace_url,
            ),
        ],
    )
    # The name first: a request for another name is refused before it counts or costs.
    return HypercornSeam(
        ServedNames(ConnectionCap(app, limits.max_connections), config.served_names), sockets
    )


class ConnectionCap:
    """ASGI middleware: at most ``limit`` long-lived connections at once (WebSockets, from
    the handshake to the close, and ``POST /agui`` requests, to the end of their event
    stream). One more is refused at once with 503 and a JSON reason, before it costs
    anything; plain requests (``/healthz``, ``/metrics``, ``/callback``) are never counted
    or refused, so the daemon can still be watched when it is full."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if not (kind == "websocket" or (kind == "http" and scope.get("path") == "/agui")):
            await self.app(scope, receive, send)
            return
        if self.open >= self.limit:
            refusal = _json_error(
                503,
                f"the daemon has {self.open} connections open, its limit (max_connections): "
                "try again later",
                **{"Retry-After": str(RETRY_AFTER)},
            )
            if kind == "websocket":
                await WebSocket(scope, receive, send).send_denial_response(refusal)
            else:
                await refusal(scope, receive, send)
            return
        self.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1


async def _body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) past ``limit`` bytes without reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _HttpError(413, f"the body is {declared} bytes; the limit is {limit}")
    body = bytearray()
    with trio.move_on_after(BODY_TIMEOUT) as waiting:
        try:
            # Closed here, also when left early (over the limit, out of time), rather than
            # by the garbage collector.
            async with contextlib.aclosing(request.stream()) as chunks:
                async for chunk in chunks:
                    body += chunk
                    if len(body) > limit:
                        raise _HttpError(413, f"the body is over the limit of {limit} bytes")
        except ClientDisconnect:
            # The client went before sending the Content-Length it declared (it lied, or
            # was cut off): nobody is left to read an answer, and it is not our error.
            raise _ClientGoneError(declared, len(body)) from None
    if waiting.cancelled_caught:
        # The connection cannot carry another request after a body left unread: close it.
        raise _HttpError(
            408,
            f"the body did not arrive within {BODY_TIMEOUT:g} s ({len(body)} of "
            f"{declared or 'the'} bytes declared came)",
            close=True,
        )
    return bytes(body)


def _view_update(body: bytes, limits: JsonLimits) -> tuple[str, str, dict[str, Any]]:
    """``(view_type, group_id, content)`` of a view_update body, or a 400 naming the field."""
    try:
        data = parse_json(body, protocol="view update", limits=limits)
    except PeerProtocolError as exc:
        raise _HttpError(400, _where(exc)) from None
    if not isinstance(data, dict):
        raise _HttpError(400, "the body must be a JSON object")
    if data.get("type") != "view_update":
        raise _HttpError(400, f'type: expected "view_update", got {json.dumps(data.get("type"))}')
    for key in ("group_id", "view_type"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise _HttpError(400, f"{key}: expected a non-empty string")
    content = data.get("content")
    if not isinstance(content, dict):
        raise _HttpError(400, "content: expected a JSON object ({} clears the view)")
    return data["view_type"], data["group_id"], content


def _where(exc: PeerProtocolError) -> str:
    """A refused body's error for an HTTP client: the field (``content.rows[3]``), then what
    was wrong with it."""
    field = exc.path.removeprefix("$").removeprefix(".")
    return f"{field}: {exc.message}" if field else f"the body: {exc.message}"


async def ended_session(daemon: Daemon, session: str) -> list[dict[str, Any]] | None:
    """What a client attaching to an ended session is shown (its history, its views, then
    ``session_ended``), from the journal; None if the journal has no such session."""
    uri = session_uri(session)
    try:
        info = await trio.to_thread.run_sync(daemon.reader.session, uri)
        state = await trio.to_thread.run_sync(daemon.reader.open, uri)
    except FactLogError:
        return None
    chat = state.coordinator_chat()
    rows = (
        await trio.to_thread.run_sync(daemon.reader.agent_messages, uri, chat)
        if chat is not None
        else []
    )
    team = info.team  # its [team] name, as the daemon names teams
    events: list[dict[str, Any]] = [
        agent_event("init", sessionId=session_id(uri), team=team),
        agent_event("history", messages=[row.event for row in rows]),
    ]
    views = state.run.views if state.run is not None else {}
    events += [view_update(view_type, content) for view_type, content in views.items()]
    events.append(agent_event("session_ended", sessionId=session_id(uri), status=info.status))
    return events


# ─── the process ─────────────────────────────────────────────────────────────


async def serve(
    config: ServeConfig,
    *,
    db: Db,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    handle_signals: bool = True,
    stop: trio.Event | None = None,
) -> None:
    """Run the daemon until SIGTERM / SIGINT (or ``stop`` is set); report the bound URL.

    Configuration problems (a team file, a token, the journal, the address) raise
    :class:`OrchestratorError` before anything listens.
    """
    for token in config.tokens:  # first: a line logged from here on never shows one
        register_secret(token.secret)
    config.check()
    if (problem := seam_problem()) is not None:
        log.warning(
            "hypercorn seam unavailable: WebSocket frames go through Starlette, one write "
            "each (slower with many clients)",
            reason=problem,
        )
    team_files = load_teams(config.teams, named=config.team_references)
    teams = team_files.teams
    node = config.node or default_node()
    # A SQLite file, or postgresql://... (there, this node's sessions are leased to it);
    # reconnect_for only when daemon.toml sets it: each journal has its own default.
    bound: dict[str, Any] = (
        {} if config.reconnect_for is None else {"reconnect_for": config.reconnect_for}
    )
    journal = (
        open_journal(db, node=node, lease_ttl=config.lease_ttl, **bound)
        if is_postgres_url(db)
        else open_journal(db, **bound)  # one node: no leases
    )
    await trio.to_thread.run_sync(journal.open)  # a refused journal stops us here
    notifier = SystemdNotifier.from_environment()
    stop = trio.Event() if stop is None else stop
    async with http_client() as http:
        daemon = Daemon(
            teams=teams,
            journal=journal,
            http=http,
            default_team=config.default_team,
            callback=ToolCallback(),
            limits=config.limits,
            invalid_teams=team_files.invalid,
            node=node,
            team_files=team_files.files,
            delta_window=config.delta_window,
        )
        assembly = assemble(daemon)
        async with trio.open_nursery() as services:
            if handle_signals:
                # Before anything else: from here on SIGTERM / SIGINT stop us cleanly.
                await services.start(_set_on_signal, stop)
            await services.start(journal.serve)
            await _serve_daemon(
                assembly, config, teams, journal.source, notifier, stop, task_status
            )
            services.cancel_scope.cancel()  # the journal drains what was submitted, closes
    log.info("daemon stopped")


async def _serve_daemon(
    assembly: DaemonAssembly,
    config: ServeConfig,
    teams: Mapping[str, TeamSpec],
    db: str,  # the journal, as its errors name it (a URL without its password)
    notifier: SystemdNotifier,
    stop: trio.Event,
    task_status: trio.TaskStatus[str],
) -> None:
    daemon = assembly.daemon
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.serve)
        sockets = OpenSockets()
        app = build_app(assembly, config, sockets)
        hyper = HypercornConfig()
        hyper.bind = [f"{_host(config.host)}:{config.port}"]
        # Frames over the daemon's limit are answered with an error event; hypercorn only
        # drops a connection whose frame is far beyond it.
        hyper.websocket_max_message_size = 4 * config.limits.max_frame_bytes
        hyper.graceful_timeout = 1.0
        hyper.accesslog = None  # a token in a URL must not reach a log
        hyper.errorlog = logging.getLogger("hypercorn.error")  # through our handler: one format
        stopped, served = trio.Event(), trio.Event()
        binds: list[str] = await nursery.start(
            _hypercorn, app, hyper, stopped, served, name="hypercorn"
        )
        url = binds[0]
        daemon.callback.url = callback_url(url)  # command tools post view updates there
        log.info(
            "daemon listening",
            url=url,
            teams=sorted(teams),
            db=db,
            # Besides IP literals and localhost (see orchestrator.server._served_names).
            server_names=list(config.served_names),
        )
        notifier.notify(f"READY=1\nSTATUS=listening on {url}")
        task_status.started(url)
        nursery.start_soon(notifier.watchdog)
        nursery.start_soon(daemon.evict_idle)
        nursery.start_soon(daemon.expire_conversations)
        await stop.wait()
        log.info("daemon stopping", sessions=len(daemon.sessions))
        notifier.notify("STOPPING=1")
        await daemon.stop()
        # Hypercorn stops listening, gives open connections graceful_timeout to finish
        # (they are closing: their sessions ended), then cancels them and returns. A write
        # to a client that stopped reading ignores the cancel (hypercorn shields its
        # writes), so what is left a moment later has its socket closed under it.
        stopped.set()
        with trio.move_on_after(hyper.graceful_timeout + STUCK_AFTER_GRACE):
            await served.wait()
        if not served.is_set():
            closed = sockets.close_all()
            log.warning("closed connections whose clients stopped reading", connections=closed)
            await served.wait()
        nursery.cancel_scope.cancel()


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def _hypercorn(
    app: ASGIApp,
    config: HypercornConfig,
    stopped: trio.Event,
    served: trio.Event,
    *,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until ``stopped`` is set; set ``served`` once hypercorn has returned."""
    listening = _Listening(task_status)
    try:
        await hypercorn_serve(
            app,  # type: ignore[arg-type]
            config,
            shutdown_trigger=stopped.wait,
            task_status=listening,  # type: ignore[arg-type]
        )
    except (OSError, BaseExceptionGroup) as exc:
        # Binding fails inside hypercorn's nursery, so the OSError comes in a group. Before
        # the daemon listens, it is the address's fault: said in one line (a port in use,
        # an address not on this machine). After, it is not ours to rename.
        refused = _first_os_error(exc)
        if listening.binds is not None or refused is None:
            raise
        reason = refused.strerror or str(refused)
        raise OrchestratorError(f"cannot listen on {config.bind[0]}: {reason}") from exc
    finally:
        served.set()


@attrs.define
class _Listening:
    """The task status hypercorn reports its addresses to, remembering them."""

    status: trio.TaskStatus[list[str]]
    binds: list[str] | None = None

    def started(self, binds: list[str]) -> None:
        self.binds = binds
        self.status.started(binds)


def _first_os_error(exc: BaseException) -> OSError | None:
    """``exc`` if it is an ``OSError``, else the first one in the groups it holds."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first_os_error(inner)
            if found is not None:
                return found
    return None


async def _set_on_signal(
    stop: trio.Event, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            stop.set()
            return
