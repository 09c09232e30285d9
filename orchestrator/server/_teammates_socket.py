"""``WS /teammates``: list, watch and control the background teammates (see
:mod:`orchestrator.protocols._teammate_channel` for the messages).

Viewers list, read histories and subscribe; operators also pause, resume, trigger and stop,
and what they do is recorded with their token's name. A connection is a reader (requests,
rate-limited) and one writer (its :class:`~._outbox.Outbox`): a subscriber that falls behind
is closed with 1008, as on ``/ws``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog
import trio
from starlette.websockets import WebSocket

from orchestrator.base import FactLogError, PeerProtocolError, RunError, timestamp
from orchestrator.protocols import (
    ControlTeammate,
    Envelope,
    ListTeammates,
    Subscribe,
    TeammateHistory,
    TeammateRequest,
    parse_request,
    teammates_message,
    unstructure_envelope,
)
from orchestrator.sessions import Limits, Scheduler, Teammate, Watch

from ._auth import Permission, Principal
from ._client_frames import client_frames
from ._outbox import CLOSE_FELL_BEHIND, CLOSE_GOING_AWAY, Outbox
from ._rate_limit import TokenBucket

if TYPE_CHECKING:
    from ._metrics import DaemonMetrics

__all__: list[str] = []

log = structlog.get_logger("orchestrator.teammates")


async def serve_teammates(
    websocket: WebSocket,
    scheduler: Scheduler,
    metrics: DaemonMetrics,
    principal: Principal,
    limits: Limits,
) -> None:
    """Serve one accepted ``/teammates`` connection until it closes."""
    await _TeammatesSocket(websocket, scheduler, metrics, principal, limits).run()


class _TeammatesSocket:
    def __init__(
        self,
        websocket: WebSocket,
        scheduler: Scheduler,
        metrics: DaemonMetrics,
        principal: Principal,
        limits: Limits,
    ) -> None:
        self.websocket = websocket
        self.scheduler = scheduler
        self.metrics = metrics
        self.principal = principal
        self.max_frame_bytes = limits.max_frame_bytes
        self.json_limits = limits.json
        self._bucket = TokenBucket(
            rate=limits.messages_per_second, burst=limits.burst, now=trio.current_time()
        )
        self._outbox = Outbox(websocket, limits.subscriber_buffer, on_hang_up=self._hung_up)
        self._watch: Watch | None = None

    async def run(self) -> None:
        structlog.contextvars.bind_contextvars(client=self.principal.name)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read, nursery.cancel_scope)
                nursery.start_soon(self._close_when_stopping)
                await self._outbox.send()
                nursery.cancel_scope.cancel()
        finally:
            self._unwatch()

    async def _close_when_stopping(self) -> None:
        await self.scheduler.stopping.wait()
        self._outbox.hang_up(CLOSE_GOING_AWAY, "the daemon is stopping")

    def _hung_up(self, code: int, reason: str) -> None:
        log.info("teammates client disconnected", code=code, reason=reason)
        if code == CLOSE_FELL_BEHIND:
            self.metrics.dropped_clients += 1
        self._unwatch()

    def _unwatch(self) -> None:
        if self._watch is not None:
            self.scheduler.unwatch(self._watch)
            self._watch = None

    def _send(self, kind: str, request_id: str | int | None = None, **fields: object) -> None:
        self._outbox.put(teammates_message(kind, request_id, **fields))

    # ── requests ───────────────────────────────────────────────────────────

    async def _read(self, cancel: trio.CancelScope) -> None:
        def dropped(message: str) -> None:
            self._send("error", code="rate_limited", message=message)

        frames = client_frames(self.websocket, self._bucket, dropped=dropped)
        async with contextlib.aclosing(frames):
            async for frame in frames:
                request: TeammateRequest | None = None
                try:
                    request = parse_request(
                        frame, max_bytes=self.max_frame_bytes, limits=self.json_limits
                    )
                    await self._handle(request)
                except PeerProtocolError as exc:
                    self._send("error", code="bad_request", message=f"{exc.path}: {exc.message}")
                except (_RequestError, RunError, FactLogError) as exc:
                    code, message = _refusal(exc)
                    self._send("error", request.id if request else None, code=code, message=message)
        cancel.cancel()  # the client disconnected

    async def _handle(self, request: TeammateRequest) -> None:
        match request:
            case ListTeammates(id=request_id):
                self._send("teammates", request_id, teammates=self._listing())
            case TeammateHistory(name=name, limit=limit, id=request_id):
                teammate = self._find(name)
                runs = [run.to_json() for run in teammate.state.runs[-limit:]]
                if teammate.state.running is not None:
                    runs.append(teammate.state.running.to_json())
                self._send("history", request_id, teammate=teammate.key, runs=runs)
            case Subscribe(id=request_id):
                self._subscribe(request_id)
            case ControlTeammate(action=action, name=name, id=request_id):
                if not self.principal.may(Permission.OPERATE):
                    raise _RequestError(
                        "forbidden",
                        f"{self.principal.name} may watch teammates, not {action} them "
                        "(an operator token may)",
                    )
                teammate = self._find(name)
                by = self.principal.name
                extra: dict[str, object] = {}
                if action == "pause":
                    changed = await teammate.pause(by)
                elif action == "resume":
                    changed = await teammate.resume(by)
                elif action == "stop":
                    changed = teammate.stop(by)
                else:
                    decision = await teammate.trigger(by)
                    changed = decision.value != "skip"
                    extra["decision"] = decision.value
                log.info("teammate control", teammate=teammate.key, action=action, by=by)
                self._send(
                    "done",
                    request_id,
                    action=action,
                    changed=changed,
                    teammate=teammate.to_json(),
                    **extra,
                )

    def _find(self, name: str) -> Teammate:
        try:
            return self.scheduler.find(name)
        except RunError as exc:
            raise _RequestError("not_found", str(exc)) from None

    def _listing(self) -> list[dict[str, object]]:
        return [teammate.to_json() for teammate in self.scheduler]

    def _subscribe(self, request_id: str | int | None) -> None:
        """Every teammate as it is now, then each change (no await in between: nothing is
        missed or sent twice)."""
        if self._watch is not None:
            raise RunError("already subscribed")
        self._send("subscribed", request_id, teammates=len(self.scheduler.teammates))
        now = timestamp(self.scheduler.clock())
        for teammate in self.scheduler:
            self._push(teammate, teammate.envelopes(teammate.state.last_sequence, now))
        self._watch = self.scheduler.watch(self._push)

    def _push(self, teammate: Teammate, envelopes: Sequence[Envelope]) -> None:
        for envelope in envelopes:
            self._send("event", teammate=teammate.key, envelope=unstructure_envelope(envelope))


def _refusal(exc: Exception) -> tuple[str, str]:
    """The error code and message a refused request is answered with."""
    if isinstance(exc, _RequestError):
        return exc.code, exc.message
    if isinstance(exc, FactLogError):
        return "unavailable", f"the journal failed: {exc.message}"
    return "refused", str(exc)


class _RequestError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
