"""A real daemon on loopback for tests, and clients that talk to it.

``running_daemon`` starts :func:`orchestrator.server._app.serve` in the test's nursery on
127.0.0.1 with an ephemeral port, a journal in a temporary directory and the teams given;
tests talk to it with trio-websocket and httpx, as users' clients would. ``serving`` is a
daemon without an HTTP server, on the test's mock clock, to open sessions of.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio
import trio.testing
from trio_websocket import WebSocketConnection, open_websocket_url

from orchestrator.server import ServeConfig, assemble, serve
from orchestrator.sessions import Daemon, Limits
from orchestrator.spec import parse_team
from tests.support.paths import PROJECT_ROOT
from tests.support.teammates import HeldClock
from tests.support.teams import ECHO

TEAMS = PROJECT_ROOT / "teams"


@attrs.define
class RunningDaemon:
    url: str  # http://127.0.0.1:PORT
    db: Path | str  # a SQLite file, or postgresql://...
    stop: trio.Event
    stopped: trio.Event = attrs.field(factory=trio.Event)  # set once serve() has returned

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    def http(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10)


def write_teams(directory: Path, teams: Mapping[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in teams.items():
        (directory / f"{name}.toml").write_text(text, encoding="utf-8")
    return directory


@asynccontextmanager
async def running_daemon(
    tmp_path: Path,
    *,
    teams: Mapping[str, str] | None = None,
    config: ServeConfig | None = None,
    db: Path | str | None = None,
) -> AsyncIterator[RunningDaemon]:
    """A daemon serving ``teams`` (name → TOML; default: the project's delivery team)."""
    if teams is None:
        teams = {"delivery": (TEAMS / "delivery.toml").read_text(encoding="utf-8")}
    directory = write_teams(tmp_path / "teams", teams)
    config = attrs.evolve(
        config or ServeConfig(limits=Limits(shutdown_grace=0.5)), teams=directory, port=0
    )
    db = db or tmp_path / "journal.db"
    stop, stopped = trio.Event(), trio.Event()

    async def serve_until_stopped(task_status: trio.TaskStatus[str]) -> None:
        try:
            await serve(config, db=db, task_status=task_status, handle_signals=False, stop=stop)
        finally:
            stopped.set()

    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_until_stopped)
        try:
            yield RunningDaemon(url=url, db=db, stop=stop, stopped=stopped)
        finally:
            stop.set()


class Client:
    """A WebSocket client of ``/ws`` that keeps everything it received, in order."""

    def __init__(self, connection: WebSocketConnection) -> None:
        self.connection = connection
        self.received: list[dict[str, Any]] = []

    async def send(self, message: Mapping[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        await self.connection.send_message(text)

    async def receive(self) -> dict[str, Any]:
        with trio.fail_after(30):
            event: dict[str, Any] = json.loads(await self.connection.get_message())
        self.received.append(event)
        return event

    async def until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Receive until an event satisfies ``predicate``; return it."""
        while True:
            event = await self.receive()
            if predicate(event):
                return event

    async def until_type(self, kind: str, channel: str = "agent") -> dict[str, Any]:
        return await self.until(lambda e: e.get("type") == kind and e.get("channel") == channel)


@asynccontextmanager
async def websocket(url: str, *, token: str | None = None) -> AsyncIterator[WebSocketConnection]:
    """A trio-websocket client of ``url`` whose socket is closed when it is done.

    When the server starts the close (1001 on shutdown, 1008), trio-websocket 0.12 waits for
    the server to close TCP, as RFC 6455 asks of a client, and then leaves its own socket to
    the garbage collector: a ResourceWarning at whatever collection comes next, in whatever
    test is running then. So the socket is closed here."""
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else None
    connection: WebSocketConnection | None = None
    try:
        async with open_websocket_url(url, extra_headers=headers) as connection:
            yield connection
    finally:
        if connection is not None:  # after its close handshake, if any
            await connection._stream.aclose()


@asynccontextmanager
async def connect(
    daemon: RunningDaemon, query: str = "", *, token: str | None = None
) -> AsyncIterator[Client]:
    url = f"{daemon.ws_url}/ws" + (f"?{query}" if query else "")
    async with websocket(url, token=token) as connection:
        yield Client(connection)


@asynccontextmanager
async def serving(tmp_path: Path, limits: Limits) -> AsyncIterator[Daemon]:
    """A daemon (no HTTP server) of the echo team, with ``limits``, on the test's mock clock;
    stopped as SIGTERM stops it when the block ends."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "use the autojump_clock fixture"
    held = HeldClock(clock)
    journal = held.journal(tmp_path / "journal.db")
    teams = {"echo": parse_team(ECHO, file="echo.toml")}
    with held.holding_threads():
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            async with trio.open_nursery() as nursery:
                daemon = Daemon(
                    teams=teams, journal=journal, http=http, shutdown_grace=0.5, limits=limits
                )
                assemble(daemon)
                await nursery.start(daemon.serve)
                try:
                    yield daemon
                finally:
                    with trio.CancelScope(shield=True):
                        await daemon.stop()
                    nursery.cancel_scope.cancel()
            services.cancel_scope.cancel()
