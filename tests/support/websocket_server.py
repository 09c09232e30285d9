"""A small Starlette app on hypercorn's trio worker on loopback, a plain wsproto client of
it, and an accepted WebSocket that is not hypercorn's."""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.types import Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Event,
    Request,
    TextMessage,
)

from orchestrator.server import (
    HypercornSeam,
)

Handler = Callable[[WebSocket], Awaitable[None]]


@asynccontextmanager
async def serving(
    handler: Handler,
    *,
    record: bool = True,
    accept: bool = True,
    returned: list[float] | None = None,
) -> AsyncIterator[tuple[str, int]]:
    """``(host, port)`` of a Starlette app on hypercorn (127.0.0.1, port 0) whose one route,
    ``/ws``, accepts (unless not ``accept``) and hands the socket to ``handler``; with
    ``returned``, the times at which the app returned to hypercorn are appended to it."""

    async def endpoint(websocket: WebSocket) -> None:
        if accept:
            await websocket.accept()
        await handler(websocket)

    routes = Starlette(routes=[WebSocketRoute("/ws", endpoint)])
    seam = HypercornSeam(routes) if record else routes  # outside Starlette, as the daemon does

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await seam(scope, receive, send)
        if returned is not None and scope["type"] == "websocket":
            returned.append(trio.current_time())

    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            lambda task_status: hypercorn_serve(
                app,  # type: ignore[arg-type]
                config,
                shutdown_trigger=stop.wait,
                task_status=task_status,
            )
        )
        host, port = binds[0].removeprefix("http://").split(":")
        try:
            yield host, int(port)
        finally:
            stop.set()


@attrs.define
class Client:
    """A plain wsproto client: it reads only when asked to, and keeps every event."""

    stream: trio.SocketStream
    ws: WSConnection
    events: list[Event] = attrs.Factory(list)

    async def send(self, event: Event) -> None:
        await self.stream.send_all(self.ws.send(event))

    async def until_closed(self) -> tuple[list[str], int]:
        """Read to the server's close (answered): the text messages and the close code."""
        texts, close = await self._read()
        assert close is not None, "the server hung up without a close frame"
        if self.ws.state is ConnectionState.REMOTE_CLOSING:
            await self.send(close.response())
        return texts, close.code

    async def until_eof(self) -> list[str]:
        """Read to the end of the stream (no close frame): the text messages that arrived
        whole."""
        texts, close = await self._read()
        assert close is None, close
        return texts

    async def _read(self) -> tuple[list[str], CloseConnection | None]:
        """The text messages up to a close frame or the end of the stream, and the close."""
        texts: list[str] = []
        pieces: list[str] = []
        while data := await self.stream.receive_some(65_536):
            self.ws.receive_data(data)
            for event in self.ws.events():
                self.events.append(event)
                if isinstance(event, TextMessage):
                    pieces.append(event.data)
                    if event.message_finished:
                        texts.append("".join(pieces))
                        pieces.clear()
                elif isinstance(event, CloseConnection):
                    return texts, event
        return texts, None


@asynccontextmanager
async def connected(address: tuple[str, int], *, receive_buffer: int = 0) -> AsyncIterator[Client]:
    """A client of ``/ws`` (with ``receive_buffer``: that SO_RCVBUF, so that it stops taking
    data soon after it stops reading)."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, receive_buffer)
    await sock.connect(address)
    async with trio.SocketStream(sock) as stream:
        client = Client(stream, WSConnection(ConnectionType.CLIENT))
        await client.send(Request(host=f"{address[0]}:{address[1]}", target="/ws"))
        while not any(isinstance(e, AcceptConnection) for e in client.ws.events()):
            client.ws.receive_data(await stream.receive_some(65_536))
        yield client


@attrs.define
class FakeAsgi:
    """The ASGI side of one accepted WebSocket that is not hypercorn's: what was sent."""

    sent: list[Message] = attrs.Factory(list)

    async def receive(self) -> Message:
        return {"type": "websocket.connect"}

    async def send(self, message: Message) -> None:
        self.sent.append(message)
        await trio.lowlevel.checkpoint()


async def accepted(asgi: FakeAsgi) -> WebSocket:
    scope: dict[str, Any] = {"type": "websocket", "path": "/ws", "headers": []}
    websocket = WebSocket(scope, asgi.receive, asgi.send)
    await websocket.accept()
    return websocket
