"""The web view: the page at ``/``, its assets, sign-in, and the JSON it reads.

Routes (the page itself is :mod:`orchestrator.server.web`, drawn in the browser):

- ``GET /``: the page (revalidated on every load); ``GET /assets/NAME.HASH.EXT``: its files,
  cached for a year (see :mod:`._web_assets`). Every answer carries the Content-Security-Policy
  and headers that keep the page out of frames and its URLs out of referrers.
- ``POST /api/login`` ``{"token"}``: a sign-in cookie for the token's holder (see
  :mod:`._auth`); ``POST /api/logout``; ``GET /api/me``: who the browser is and what it may do.
- ``GET /api/sessions`` (``?status=``, ``?team=``, ``?limit=``, newest first),
  ``GET /api/sessions/ID``: sessions as the list shows them, live and ended, and who runs
  each running one when this daemon does not (``runBy``: an ``orchestrator run`` beside it
  on its SQLite file, which ``GET /api/sessions/ID`` then follows, so that its page is live);
  ``GET /api/sessions/ID/envelopes?after=N``: the session's Agent UI envelopes after N,
  projected from the journal (the team channel's numbering: a page reads them, then
  subscribes from the last one, with no gap and no duplicate);
  ``GET /api/sessions/ID/graph``: the delegation graph, node-link JSON;
  ``GET /api/sessions/ID/transcript?thread=CHAT``: one chat's turns as agent-channel events,
  and (``traces``) the trace and span ids of its turns and tool calls, as exported, each with
  its ``url`` in the trace UI when daemon.toml's ``tracing.trace_url`` names one;
  ``GET /api/sessions/ID/usage``: what each chat used (tokens in and out, model calls, time)
  and the total, folded from the session's facts;
  ``GET /api/sessions/ID/diff?with=OTHER``: where the two sessions part and what each chat
  did differently, side by side (what ``orchestrator diff --json`` prints);
- ``GET /api/sessions/ID/board``: the board's items as its facts leave them (see
  :mod:`orchestrator.protocols._board_wire`); ``POST`` the same with a person's request
  ``{"op": "claim" | "comment" | "block" | "unblock" | "done" | "assign" | "update" | "move",
  "item": ..., ...}`` (operator): recorded as board facts attributed to the principal, the
  board after them answered, a refusal answered 409 with its reason;
- ``GET /api/teams``: the teams a session can be opened with (name, description,
  coordinator, agents, the model of its OpenAI-compatible agents or null), for the page's
  "New run" form, which then opens the session as any client does (``WS /ws?team=NAME``,
  with ``&model=M`` when one was chosen; operator).

Everything live, and every command (a new run, a message, a decision, a cancel), goes over
the daemon's existing sockets (``/ahp``'s root channel for the list, ``/ws`` for a session,
``/teammates``): these routes only read, but for the board's ``POST``.

Reads of the journal run in a worker thread; a request's input (its path, query and the
sign-in body) passes the input gate, and each error names what was wrong.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import structlog
import trio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from orchestrator.base import FactLogError, JsonLimits, PeerProtocolError, RunError, parse_json
from orchestrator.core import (
    CHAT_SPAN_TEAM_TYPES,
    ChatSpans,
    Reviews,
    SpanIds,
    TeamState,
    chat_spans,
    diff_sessions,
    open_questions,
)
from orchestrator.journal import SESSION_STATUSES, JournalReader, SessionInfo
from orchestrator.protocols import (
    board_to_json,
    chat_transcript,
    chat_usage,
    parse_board_request,
    usage_to_json,
)
from orchestrator.runtime import BoardRefusedError
from orchestrator.sessions import (
    EnvelopeCache,
    GraphCache,
    LiveSession,
    TeamCatalog,
    TeamLog,
    TeamRuntimes,
    session_id,
    session_uri,
)

from ._auth import COOKIE_LIFETIME, COOKIE_NAME, Permission, Principal
from ._principals import AccessRefusedError, Principals
from ._rate_limit import TokenBucket
from ._web_assets import CONTENT_SECURITY_POLICY, WebAssets

__all__ = ["WebError", "session_summary", "web_routes"]

log = structlog.get_logger("orchestrator.server.web")

#: Headers of every page and asset answer.
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
#: Sessions listed when the page does not say how many.
DEFAULT_LIMIT: Final = 200
MAX_LIMIT: Final = 2000
#: A sign-in body is a token in a small JSON object.
MAX_LOGIN_BYTES: Final = 4096
#: Bytes from which a JSON answer is gzipped (when the client takes it).
GZIP_FROM: Final = 64 * 1024
#: Gzipped answers kept (see :class:`GzipCache`): a few big sessions' pages.
GZIP_CACHE_CAPACITY: Final = 4
#: Seconds a sign-in body has to arrive in whole.
BODY_TIMEOUT: Final = 10.0
#: Failed sign-ins an address may make at once, then one every 6 s.
SIGN_IN_FAILURE_BURST: Final = 10
SIGN_IN_FAILURES_PER_SECOND: Final = 1 / 6
#: Addresses whose failures are counted at once (the count restarts past it).
MAX_SIGN_IN_CLIENTS: Final = 10_000
#: A board request is one operation on one item, with a comment's text at most.
MAX_BOARD_BYTES: Final = 64 * 1024
#: Longest session id, chat URI or filter value taken from a URL.
MAX_NAME: Final = 512


class WebError(Exception):
    """A request the web routes refuse: its status and what was wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers={"Cache-Control": "no-store"})


class GzipCache:
    """The last few gzipped answers, by the digest of what was compressed.

    An ended session's envelopes are the same text on every page load: compressing 7 MB
    once, not per load, takes most of a tenth of a second off each (``bench/web_render.py``).
    Keyed by content, an answer that changed (a live session's) is compressed afresh."""

    def __init__(self, capacity: int = GZIP_CACHE_CAPACITY) -> None:
        self._capacity = capacity
        self._kept: dict[bytes, bytes] = {}  # digest -> gzipped, oldest use first
        self._lock = threading.Lock()  # worker threads share it

    def compress(self, data: bytes) -> bytes:
        """``data`` gzipped (blocking: call it in a worker thread)."""
        key = hashlib.blake2b(data, digest_size=16).digest()
        with self._lock:
            kept = self._kept.pop(key, None)
        if kept is None:
            kept = gzip.compress(data, compresslevel=5)
        with self._lock:
            self._kept.pop(key, None)
            while len(self._kept) >= self._capacity:
                del self._kept[next(iter(self._kept))]
            self._kept[key] = kept  # the most recently used last
        return kept


async def _large_json(request: Request, body: str, gzipped: GzipCache) -> Response:
    """JSON text that may run to megabytes (a 1,000-worker session's envelopes are 7 MB):
    gzipped (kept in ``gzipped``), in a worker thread, when the client takes it and it is
    worth it."""
    headers = {"Cache-Control": "no-store", "Vary": "Accept-Encoding"}
    data = body.encode("utf-8")
    if len(data) >= GZIP_FROM and "gzip" in request.headers.get("accept-encoding", ""):
        data = await trio.to_thread.run_sync(gzipped.compress, data)
        headers["Content-Encoding"] = "gzip"
    return Response(data, media_type="application/json", headers=headers)


def _name(value: str | None, what: str) -> str:
    """A name from the URL: text, not too long, no control characters."""
    if not value:
        raise WebError(400, f"{what}: missing")
    if len(value) > MAX_NAME or any(ord(c) < 32 or c == "\x7f" for c in value):
        raise WebError(400, f"{what}: not a name this daemon could have given")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise WebError(400, f"{what}: not valid text (a lone surrogate)")
    return value


def _count(value: str | None, what: str, *, default: int, most: int) -> int:
    if value is None or value == "":
        return default
    if not value.isascii() or not value.isdigit() or len(value) > 9:
        raise WebError(400, f"{what}: expected a whole number from 0, got {value[:40]!r}")
    return min(int(value), most)


def session_summary(
    info: SessionInfo,
    live: LiveSession | None = None,
    run_by: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """A session as the list shows it: the journal's record, what the live one adds, and
    who runs it when this daemon does not (``run_by``, see
    :meth:`orchestrator.sessions.SessionFinder.run_by`)."""
    pending = questions = 0
    activity = None
    if live is not None:
        state = live.state
        pending = sum(1 for a in state.approvals.values() if a.decision is None)
        questions = len(open_questions(state))
        activity = "idle" if live.idle.is_set() else "busy"
    ended = info.status != "running"
    return {
        "id": session_id(info.session),
        "uri": info.session,
        "team": info.team,
        "title": info.title,
        "status": info.status,
        "activity": activity,
        "live": live is not None,
        # An unfinished conversation that nobody runs: put away when idle, or not yet taken
        # up since the daemon started. Not ended: the next client that sends to it takes
        # it up (a page's message wakes it).
        "resting": not ended and live is None and run_by is None,
        "startedAt": info.created_at,
        "updatedAt": info.updated_at,
        "endedAt": info.updated_at if ended else None,
        "facts": info.last_sequence,
        "pendingApprovals": pending,
        "pendingQuestions": questions,
        # What waits for a decision of someone: the list's "Pending" column.
        "pending": pending + questions,
        "runBy": dict(run_by) if run_by is not None and not ended else None,
        # A fork's lineage: its source, at which of its facts and turn (None: no fork).
        "forkedFrom": info.to_json()["forkedFrom"],
    }


def unrecorded_info(live: LiveSession) -> SessionInfo:
    """``live``, a session this daemon opened and has recorded nothing of (not prompted
    yet), as the journal will list it: the root channel announces it already, so the
    pages that hear of it can read it."""
    return SessionInfo(
        session=live.uri,
        team=live.team_name,
        title="",
        status="running",
        created_at=live.opened_on,
        updated_at=live.opened_on,
        last_sequence=0,
    )


class WebHost(Protocol):
    """What the web view reads of the daemon: the journal, the sessions it runs or follows,
    and their logs; reading takes nothing up (``watch``, not ``find``)."""

    @property
    def accepting(self) -> bool: ...

    @property
    def reader(self) -> JournalReader: ...

    @property
    def envelopes(self) -> EnvelopeCache: ...

    @property
    def sessions(self) -> Mapping[str, LiveSession]: ...

    @property
    def catalog(self) -> TeamCatalog: ...

    @property
    def runtimes(self) -> TeamRuntimes: ...

    async def watch(self, session: str) -> LiveSession | None: ...

    def run_by(self, uri: str) -> dict[str, object] | None: ...

    async def team_log(self, live: LiveSession) -> TeamLog: ...


def web_routes(
    daemon: WebHost,
    principals: Principals,
    assets: WebAssets,
    *,
    json_limits: JsonLimits,
    trace_url: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Sequence[BaseRoute]:
    """The web view's routes on ``daemon``; ``trace_url`` is the trace UI's URL template
    (``{trace_id}``, ``{span_id}``), checked by the daemon's configuration."""
    auth = principals.auth
    reader = daemon.reader
    projected = daemon.envelopes
    graphs = GraphCache(reader)
    gzipped = GzipCache()
    # Failed sign-ins per client address: guessing tokens is slowed to a few a minute.
    failed_sign_ins: dict[str, TokenBucket] = {}

    def require(request: Request, permission: Permission = Permission.READ) -> Principal:
        return principals.require(
            request, permission, sign_in="sign in first (POST /api/login with a token)"
        )

    def handled(
        endpoint: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            try:
                return await endpoint(request)
            except (WebError, AccessRefusedError) as exc:
                return _json({"error": exc.message}, exc.status)
            except FactLogError as exc:
                log.warning("journal read failed", path=request.url.path, error=exc.message)
                return _json({"error": f"the journal cannot be read: {exc.message}"}, 503)

        return handle

    async def page(request: Request) -> Response:
        return Response(
            assets.index_html,
            media_type="text/html; charset=utf-8",
            headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
        )

    async def asset(request: Request) -> Response:
        found = assets.asset(request.path_params["path"])
        if found is None:
            return Response(
                "no such asset (the page may be older than the daemon: reload it)\n",
                status_code=404,
                media_type="text/plain; charset=utf-8",
                headers={**SECURITY_HEADERS, "Cache-Control": "no-store"},
            )
        return Response(
            found.body,
            media_type=found.media_type,
            headers={**SECURITY_HEADERS, "Cache-Control": "public, max-age=31536000, immutable"},
        )

    async def login(request: Request) -> Response:
        if principals.foreign(request):
            raise WebError(403, "a sign-in from another site's page is refused")
        body = await _small_body(request, MAX_LOGIN_BYTES)
        try:
            data = parse_json(body, protocol="sign-in", limits=json_limits)
        except PeerProtocolError as exc:
            raise WebError(400, str(exc)) from None
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise WebError(400, '$.token: expected the token as a string ({"token": "..."})')
        if auth.open:
            principal: Principal | None = principals.of(request)
        else:
            principal = auth.authenticate(f"Bearer {token}")
        if principal is None:
            client = request.client.host if request.client is not None else "?"
            bucket = failed_sign_ins.get(client)
            now = trio.current_time()
            if bucket is None:
                if len(failed_sign_ins) >= MAX_SIGN_IN_CLIENTS:
                    failed_sign_ins.clear()  # a flood of addresses: start counting afresh
                bucket = failed_sign_ins[client] = TokenBucket(
                    rate=SIGN_IN_FAILURES_PER_SECOND, burst=SIGN_IN_FAILURE_BURST, now=now
                )
            if not bucket.take(now):
                log.warning("sign-in refused", reason="too many failures", client=client)
                raise WebError(429, "too many failed sign-ins from this address: wait a minute")
            log.info("sign-in refused", reason="unknown token", client=client)
            raise WebError(401, "this daemon has no such token")
        if not principal.may(Permission.READ):
            raise WebError(403, "this token may not read: it cannot sign in to the web view")
        response = _json(_me(principal, open_=auth.open))
        if not auth.open:
            response.set_cookie(
                COOKIE_NAME,
                auth.sign_in_cookie(principal, now=clock()),
                max_age=COOKIE_LIFETIME,
                path="/",
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
        log.info("signed in", principal=principal.name)
        return response

    async def logout(request: Request) -> Response:
        if principals.foreign(request):
            raise WebError(403, "a sign-out from another site's page is refused")
        response = Response(status_code=204, headers={"Cache-Control": "no-store"})
        response.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict")
        return response

    async def me(request: Request) -> Response:
        return _json(_me(require(request), open_=auth.open))

    async def sessions(request: Request) -> Response:
        require(request)
        query = request.query_params
        status = _name(query["status"], "status") if query.get("status") else None
        if status is not None and status not in SESSION_STATUSES:
            raise WebError(
                400, f"status: expected one of {', '.join(SESSION_STATUSES)}, got {status[:40]!r}"
            )
        team = _name(query["team"], "team") if query.get("team") else None
        limit = _count(query.get("limit"), "limit", default=DEFAULT_LIMIT, most=MAX_LIMIT)

        # The sessions opened here with nothing recorded yet (not prompted, or their first
        # facts on their way to the disk) are listed too, as the newest: the root channel
        # announces them.
        opened = [
            live
            for live in daemon.sessions.values()
            if status in (None, "running") and team in (None, live.team_name)
        ]

        def read() -> list[tuple[SessionInfo, Mapping[str, object] | None]]:
            found = reader.sessions(status=status, team=team, limit=limit)
            listed = {info.session for info in found}
            unrecorded = sorted(
                (
                    unrecorded_info(live)
                    for live in opened
                    if live.uri not in listed and not reader.has_session(live.uri)
                ),
                key=lambda info: info.created_at,
            )
            newest = [*found, *unrecorded]
            # Who runs each running session (a system call each): in the same thread.
            return [
                (info, daemon.run_by(info.session) if info.status == "running" else None)
                for info in newest[max(0, len(newest) - limit) :]
            ]

        found = await trio.to_thread.run_sync(read)
        listed = [
            session_summary(info, daemon.sessions.get(info.session), runner)
            for info, runner in reversed(found)
        ]
        return _json({"sessions": listed})

    async def known(request: Request) -> tuple[str, SessionInfo]:
        require(request)
        if not daemon.accepting:
            # Starting or stopping, its sessions are not (or no longer) live here: "not
            # live" would read as "ended". A page asks again.
            raise WebError(503, "the daemon is starting or stopping: ask again shortly")
        uri = session_uri(_name(request.path_params["session"], "session"))
        if await trio.to_thread.run_sync(reader.has_session, uri):
            return uri, await trio.to_thread.run_sync(reader.session, uri)
        live = daemon.sessions.get(uri)
        if live is None:
            raise WebError(404, f"no session {session_id(uri)!r} on this daemon")
        # Opened, not prompted yet (or its first facts on their way to the disk).
        return uri, unrecorded_info(live)

    async def watched(uri: str, info: SessionInfo) -> LiveSession | None:
        """The live session ``uri``: the one this daemon runs, or followed when another
        process runs it (so its page attaches, and sees it end); never taken up."""
        if info.status != "running":
            return daemon.sessions.get(uri)
        return await daemon.watch(uri)

    async def run_by(uri: str, info: SessionInfo) -> Mapping[str, object] | None:
        if info.status != "running":
            return None
        return await trio.to_thread.run_sync(daemon.run_by, uri)

    async def session(request: Request) -> Response:
        uri, info = await known(request)
        live = await watched(uri, info)
        return _json(session_summary(info, live, await run_by(uri, info)))

    async def envelopes(request: Request) -> Response:
        uri, info = await known(request)
        after = _count(request.query_params.get("after"), "after", default=0, most=2**62)
        live = await watched(uri, info)
        if live is not None:  # the session's own log, fed as facts come (and kept)
            lines = (await daemon.team_log(live)).lines
        else:
            lines = await projected.envelopes(uri)
        # Envelopes are numbered from 1 without gaps: the N-th is at index N - 1.
        summary = json.dumps(
            session_summary(info, live, await run_by(uri, info)), ensure_ascii=False
        )
        body = f'{{"session":{summary},"envelopes":[{",".join(lines[after:])}]}}'
        return await _large_json(request, body, gzipped)

    async def graph(request: Request) -> Response:
        uri, _ = await known(request)
        return await _large_json(request, await graphs.graph_json(uri), gzipped)

    async def transcript(request: Request) -> Response:
        uri, _ = await known(request)
        chat = _name(request.query_params.get("thread"), "thread")
        live = daemon.sessions.get(uri)
        state: TeamState = (
            live.state if live is not None else await trio.to_thread.run_sync(reader.open, uri)
        )
        if chat not in state.chats:
            raise WebError(404, f"thread: session {session_id(uri)!r} has no chat {chat!r}")
        # The session's reviews are the state's (the run record keeps them).
        reviews = Reviews(state.run.reviews if state.run is not None else None)
        found = chat_transcript(state, chat, reviews)
        if found is None:
            raise WebError(404, f"thread: session {session_id(uri)!r} has no chat {chat!r}")
        # The chat's own facts and the few that place it in a run's trace, not the session's.
        facts = await trio.to_thread.run_sync(reader.chat_facts, uri, chat, CHAT_SPAN_TEAM_TYPES)
        found["traces"] = _traces_json(
            chat_spans(uri, facts, chat), [t["id"] for t in found["turns"]], trace_url
        )
        return _json(found)

    async def diff(request: Request) -> Response:
        uri, _ = await known(request)
        other = session_uri(_name(request.query_params.get("with"), "with"))
        if not await trio.to_thread.run_sync(reader.has_session, other):
            raise WebError(404, f"with: no session {session_id(other)!r} on this daemon")

        def compare() -> dict[str, Any]:
            return diff_sessions(reader.facts(uri), reader.facts(other)).to_json()

        return _json(await trio.to_thread.run_sync(compare))

    async def usage(request: Request) -> Response:
        uri, _ = await known(request)
        facts = await trio.to_thread.run_sync(reader.facts, uri)
        return _json(usage_to_json(chat_usage(facts)))

    async def board(request: Request) -> Response:
        uri, info = await known(request)
        if request.method == "POST":
            return await board_change(request, uri, info)
        live = await watched(uri, info)
        state: TeamState = (
            live.state if live is not None else await trio.to_thread.run_sync(reader.open, uri)
        )
        if state.run is None:
            return _json({"items": []})
        return _json(board_to_json(state.run.board))

    async def board_change(request: Request, uri: str, info: SessionInfo) -> Response:
        """A person's board request (operator): it writes the board's facts, attributed to
        the principal, and answers the board after them (409 with the reason if refused).
        A session another node runs is followed, and the request forwarded to its owner."""
        principal = require(request, Permission.OPERATE)
        body = await _small_body(request, MAX_BOARD_BYTES)
        try:
            change = parse_board_request(
                parse_json(body, protocol="board request", limits=json_limits)
            )
        except PeerProtocolError as exc:
            raise WebError(400, str(exc)) from None
        live = await watched(uri, info)
        if live is None:
            raise WebError(409, f"session {session_id(uri)!r} is not running")
        try:
            await live.board_request(
                change.op, change.item, change.fields, principal=principal.name
            )
        except BoardRefusedError as exc:
            raise WebError(409, f"refused: {exc}") from None
        except RunError as exc:
            raise WebError(409, str(exc)) from None
        run = live.state.run
        return _json(board_to_json(run.board) if run is not None else {"items": []})

    async def teams(request: Request) -> Response:
        require(request)
        unavailable = daemon.runtimes.unavailable
        offered = [
            {
                "name": name,
                "description": spec.description,
                "coordinator": spec.coordinator,
                "agents": [agent.name for agent in spec.agents],
                # The model its OpenAI-compatible agents ask (None: it has none, and a
                # session of it takes no model choice: see ``/ws?model=``).
                "model": next((a.openai.model for a in spec.agents if a.openai is not None), None),
            }
            for name, spec in sorted(daemon.catalog.teams.items())
            if name not in unavailable
        ]
        return _json({"teams": offered, "default": daemon.catalog.default})

    async def unknown(request: Request) -> Response:
        raise WebError(404, f"no endpoint {request.method} {request.url.path[:200]}")

    return [
        Route("/", page),
        Route("/assets/{path:path}", asset),
        Route("/api/login", handled(login), methods=["POST"]),
        Route("/api/logout", handled(logout), methods=["POST"]),
        Route("/api/me", handled(me)),
        Route("/api/sessions", handled(sessions)),
        Route("/api/sessions/{session}", handled(session)),
        Route("/api/sessions/{session}/envelopes", handled(envelopes)),
        Route("/api/sessions/{session}/graph", handled(graph)),
        Route("/api/sessions/{session}/transcript", handled(transcript)),
        Route("/api/sessions/{session}/usage", handled(usage)),
        Route("/api/sessions/{session}/board", handled(board), methods=["GET", "POST"]),
        Route("/api/sessions/{session}/diff", handled(diff)),
        Route("/api/teams", handled(teams)),
        Route("/api/{rest:path}", handled(unknown), methods=["GET", "POST", "PUT", "DELETE"]),
    ]


async def _small_body(request: Request, limit: int) -> bytes:
    """A short request body: 413 past ``limit`` bytes (read no further), 408 if it takes
    more than :data:`BODY_TIMEOUT` seconds to come."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared[:12]) > limit:
        raise WebError(413, f"the body is {declared} bytes; the limit is {limit}")
    body = bytearray()
    with trio.move_on_after(BODY_TIMEOUT):
        try:
            async with contextlib.aclosing(request.stream()) as chunks:
                async for chunk in chunks:
                    body += chunk
                    if len(body) > limit:
                        raise WebError(413, f"the body is over the limit of {limit} bytes")
        except ClientDisconnect:
            raise WebError(400, "the client went before its body came") from None
        return bytes(body)
    raise WebError(408, f"the body did not arrive within {BODY_TIMEOUT:g} s")


def _traces_json(
    spans: ChatSpans, turn_order: Sequence[str], trace_url: str | None
) -> dict[str, Any]:
    """A chat's spans for the page: ``agent`` (its last turn's), ``turns`` and
    ``toolCalls`` by id, each ``{traceId, spanId}`` and, with a template, its ``url``."""

    def entry(ids: SpanIds) -> dict[str, str]:
        out = {"traceId": ids.trace_hex, "spanId": ids.span_hex}
        if trace_url is not None:
            out["url"] = trace_url.format(trace_id=ids.trace_hex, span_id=ids.span_hex)
        return out

    last = next((spans.turns[t] for t in reversed(turn_order) if t in spans.turns), None)
    return {
        "agent": None if last is None else entry(last),
        "turns": {turn: entry(ids) for turn, ids in spans.turns.items()},
        "toolCalls": {call: entry(ids) for call, ids in spans.tool_calls.items()},
    }


def _me(principal: Principal, *, open_: bool) -> dict[str, Any]:
    return {
        "name": principal.name,
        "permissions": sorted(str(p) for p in principal.permissions),
        "open": open_,
    }
