"""Text frames written below Starlette, several in one socket write: the hypercorn seam.

Theory of operation
-------------------
A frame sent with Starlette's ``WebSocket.send_text`` takes a long way:

- it passes Starlette's state checks and two exception wrappers;
- it becomes an ASGI message dict;
- it goes through hypercorn's ``WSStream.app_send``, its HTTP/1.1 protocol and its TCP server;
- the TCP server takes a lock and writes it with a socket ``send()`` of its own.

The lock and the send are two trips through the trio scheduler. With a hundred clients of one
session, each event waited for a hundred of these. Here a client's waiting frames are encoded by
the connection's own wsproto ``Connection`` and written with one ``send()``. That write is made
straight from the sender's task when nothing else is writing to that socket. Otherwise, or for
what the socket did not take, the frames go to hypercorn as one ``Data`` event (what
``app_send`` does for each frame).

The seam is hypercorn's, not a public API (checked with hypercorn 0.17.3 and 0.18.0):

- the ASGI ``send`` callable its trio worker hands the app is the bound method
  ``WSStream.app_send``;
- that ``WSStream`` keeps the wsproto ``connection``, its ASGI ``state``, its ``closed`` flag,
  its ``stream_id`` and ``send``, the bound ``H11Protocol.stream_send``;
- that protocol's ``send`` is the bound ``TCPServer.protocol_send``;
- the ``TCPServer`` keeps the ``trio.SocketStream`` and the ``send_lock`` it holds while it
  writes (``async with``, its one use of it).

:class:`HypercornSeam` keeps the ASGI ``send`` in the scope. :func:`frame_writer` checks every
piece it uses. Without the first piece it returns ``None``, and the caller sends through
Starlette (another server, a test client, a changed hypercorn). Without the socket (HTTP/2, TLS)
it writes through hypercorn only. ``tests/server/test_hypercorn_ws.py`` fails if the seam changes.

Written from any task. A session publishing a fact writes each client's frames to its socket
itself when nothing else is writing to it (:meth:`FrameWriter.write_now`, one ``send()``, no task
to wake). When the socket takes only part, the rest must reach the client before any other byte
(a pong, a close frame, the next frames). The task that finishes it (the client's sender) is not
the one that began it. hypercorn's ``send_lock`` is a ``trio.Lock``, which only the task that
took it may release. So the writer puts a :class:`SendLock` in its place, while it is free (no
task holds it or waits for it then). A :class:`SendLock` belongs to no task:

- the publisher takes it for the rest;
- the sender writes the rest and releases it (:meth:`FrameWriter.flush`);
- hypercorn's writers wait for it meanwhile.

A text many clients are sent (a fact's events, made once per session) is a :class:`SharedText`.
Its WebSocket frame is made once, by wsproto, by the first writer that sends it. The very same
bytes go to every connection that frames as that one does. A server's frames are not masked, so
that means one without extensions, which is what the seam checks. permessage-deflate compresses
each connection's frames with a context of its own, so those connections frame the text
themselves. A client then costs the daemon a lookup and its share of a ``send()``, not an
encoding.

Only text frames go this way; accepting, closing and reading stay with Starlette.
:meth:`FrameWriter.abort` closes the socket under a write that waits for a client which
stopped reading. hypercorn shields each write from cancellation. Without the abort, such a
client holds its connection's tasks, and a shutdown, for as long as it reads nothing.
:class:`OpenSockets` does the same for every connection (HTTP too) that is still open when
a shutdown has given up waiting; :class:`HypercornSeam` wraps the Starlette app (not as
Starlette middleware, whose error handler wraps an HTTP ``send``) to feed both.

For HTTP, the seam also makes hypercorn's close of a connection (its ``TCPServer._close``,
replaced on the instance) wait for the response the app is writing, and take the
``send_lock`` before it shuts the socket: see :func:`_responding_whole`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Final

import trio
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from wsproto.connection import ConnectionState
from wsproto.events import TextMessage
from wsproto.frame_protocol import FrameProtocol
from wsproto.utilities import LocalProtocolError

from orchestrator.sessions import SharedText

try:
    from hypercorn.protocol.events import Data
    from hypercorn.protocol.h11 import H11Protocol
    from hypercorn.protocol.http_stream import HTTPStream
    from hypercorn.protocol.ws_stream import ASGIWebsocketState, WSStream
    from hypercorn.trio.tcp_server import TCPServer
except ImportError:  # pragma: no cover - a hypercorn without the seam: Starlette's path
    WSStream = HTTPStream = None  # type: ignore[assignment, misc]

__all__ = [
    "SCOPE_KEY",
    "FrameWriter",
    "HypercornSeam",
    "SendLock",
    "frame_writer",
    "seam_problem",
]

#: Where :class:`HypercornSeam` keeps the server's ``send`` callable in a WebSocket scope.
SCOPE_KEY: Final = "orchestrator.asgi_send"
#: How long a client has to go once the app is done with its WebSocket (seconds).
DISCONNECT_TIMEOUT: Final = 5.0
#: How long a connection hypercorn closes (the client half-closed it mid-request) waits for
#: the response the app has begun to be written whole (seconds).
RESPONSE_GRACE: Final = 2.0


class OpenSockets:
    """The plain-TCP sockets of the connections the app has seen (weakly: a connection that
    ends drops out), so that a shutdown can close those whose clients stopped reading."""

    def __init__(self) -> None:
        self._servers: weakref.WeakSet[Any] = weakref.WeakSet()

    def add(self, send: Send) -> None:
        """Remember the socket under the connection whose ASGI ``send`` this is, if any."""
        stream = getattr(send, "__self__", None)
        if WSStream is None or not isinstance(stream, WSStream | HTTPStream):
            return
        if tcp := _tcp_server(stream):
            self._servers.add(tcp)

    def close_all(self) -> int:
        """Close every socket still open; how many were."""
        closed = 0
        for tcp in list(self._servers):
            socket = tcp.stream.socket
            if socket.fileno() != -1:
                socket.close()  # trio's close wakes whoever waits on it
                closed += 1
        return closed


class HypercornSeam:
    """ASGI middleware between hypercorn and the app.

    It does three things:

    - it keeps the server's own ``send`` of each WebSocket in its scope (the callable before
      Starlette wraps it), for :func:`frame_writer`;
    - it keeps the socket of each connection in ``sockets``;
    - once the app is done with a WebSocket, it takes what the client still sends, up to its
      disconnect.

    That last part works around hypercorn (0.17, 0.18). hypercorn queues a WebSocket's incoming
    messages for the app, ten at most. When the app has returned, it still puts the disconnect
    there, into a full queue that nobody reads. That blocks the connection's tasks for good, so
    its TCP connection is never closed. A client waiting for that close (as RFC 6455 tells it
    to) then waits forever. This was seen with a client that sent thirty prompts and then waited
    for the session that failed under them to end."""

    def __init__(self, app: ASGIApp, sockets: OpenSockets | None = None) -> None:
        self.app = app
        self.sockets = sockets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("websocket", "http") and self.sockets is not None:
            self.sockets.add(send)
        if scope["type"] == "http":
            await _responding_whole(self.app, scope, receive, send)
            return
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        scope[SCOPE_KEY] = send
        accepted = disconnected = False

        async def receive_noting_disconnect() -> Message:
            nonlocal disconnected
            message = await receive()
            disconnected = message["type"] == "websocket.disconnect"
            return message

        async def send_noting_accept(message: Message) -> None:
            nonlocal accepted
            accepted = accepted or message["type"] == "websocket.accept"
            await send(message)

        try:
            await self.app(scope, receive_noting_disconnect, send_noting_accept)
        except Exception:
            if accepted and not disconnected:  # tell the client to go (1011), then let it
                with contextlib.suppress(Exception):
                    await send({"type": "websocket.close", "code": 1011})
                await take_until_disconnect(receive, functools.partial(_cut_off, send))
            raise
        # A refused handshake queued nothing (hypercorn answers data on it with a 400).
        if accepted and not disconnected:
            await take_until_disconnect(receive, functools.partial(_cut_off, send))


class _Response:
    """The response an HTTP request's app is writing: the task that writes it, and whether
    it has begun and ended."""

    def __init__(self) -> None:
        self.writer = trio.lowlevel.current_task()
        self.begun = False
        self.ended = trio.Event()


async def _responding_whole(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app`` for an HTTP request; should hypercorn close the connection meanwhile, its
    close waits (:data:`RESPONSE_GRACE` at most) for a response begun to be written whole.

    That works around hypercorn (0.17, 0.18): when a client half-closes the connection before
    the body its ``Content-Length`` declared (a huge one, say, refused 413 from its headers),
    hypercorn closes the socket at once, under the app's response. The client got nothing,
    or the response cut off; and when the close came while the response was being written,
    the app's write failed with ``BusyResourceError``, logged by hypercorn as an error."""
    stream = getattr(send, "__self__", None)
    tcp = _tcp_server(stream) if HTTPStream is not None and isinstance(stream, HTTPStream) else None
    if tcp is None or not callable(getattr(tcp, "_close", None)):
        await app(scope, receive, send)
        return
    response = tcp.orchestrator_response = _Response()
    if not getattr(tcp, "orchestrator_close_waits", False):
        tcp.orchestrator_close_waits = True
        tcp._close = functools.partial(_close_after_response, tcp, tcp._close)

    async def send_noting_response(message: Message) -> None:
        response.begun = response.begun or message["type"] == "http.response.start"
        try:
            await send(message)
        finally:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                response.ended.set()

    try:
        await app(scope, receive, send_noting_response)
    finally:
        response.ended.set()


async def _close_after_response(tcp: Any, close: Callable[[], Awaitable[None]]) -> None:
    """``TCPServer._close`` of a connection that may be writing a response.

    First that response is written, then the socket is closed while no one writes to it. Both
    waits end when :data:`RESPONSE_GRACE` has passed (a client that does not read). The socket
    is closed then all the same."""
    response: _Response | None = getattr(tcp, "orchestrator_response", None)
    task = trio.lowlevel.current_task()
    lock = tcp.send_lock
    held = False
    try:
        with trio.move_on_after(RESPONSE_GRACE):
            if response is not None and response.begun and response.writer is not task:
                await response.ended.wait()
            if isinstance(lock, trio.Lock) and lock.statistics().owner is not task:
                await lock.acquire()
                held = True
    finally:
        try:
            await close()
        finally:
            if held:
                lock.release()


async def take_until_disconnect(receive: Receive, cut_off: Callable[[], None]) -> None:
    """Receive and drop messages until the disconnect.

    A client that has not gone within :data:`DISCONNECT_TIMEOUT` is ``cut_off`` (its socket
    closed). What hypercorn had read before that is taken too. Its reader may be blocked
    putting the rest of a burst into the full queue. Only once it is through does it find the
    closed socket and put the disconnect."""
    if await _received_disconnect(receive):
        return
    cut_off()
    await _received_disconnect(receive)


def _cut_off(send: Send) -> None:
    """Close the socket under the hypercorn WebSocket whose ``send`` this is."""
    stream = getattr(send, "__self__", None)
    if WSStream is not None and isinstance(stream, WSStream):
        FrameWriter(stream, _tcp_server(stream)).abort()


async def _received_disconnect(receive: Receive) -> bool:
    """Whether the disconnect came within :data:`DISCONNECT_TIMEOUT`."""
    with trio.move_on_after(DISCONNECT_TIMEOUT):
        while (await receive())["type"] != "websocket.disconnect":
            pass
        return True
    return False


def framed(text: SharedText) -> bytes:
    """The server's unmasked text frame of ``text``, with no extension: made once, and kept
    in ``text`` for every other connection that frames alike."""
    frame = text.frame
    if frame is None:
        frame = text.frame = bytes(_FRAMES.send_data(str(text), fin=True))
    return frame


#: Frames whole text messages for :class:`SharedText`: wsproto's own framing of a server
#: connection without extensions (each frame is final, so it keeps no state between them).
_FRAMES: Final = FrameProtocol(client=False, extensions=[])


def _frames_plainly(connection: Any) -> bool:
    """Whether ``connection`` (a wsproto ``Connection``) sends a text as
    :func:`framed` frames it: open, and no extension negotiated."""
    proto = getattr(connection, "_proto", None)
    return (
        connection.state is ConnectionState.OPEN
        and proto is not None
        and getattr(proto, "extensions", None) == []
        and getattr(proto, "_outbound_opcode", None) is None
    )


class SendLock:
    """A socket's write side, held by whoever writes to it: what :class:`FrameWriter` puts in
    place of hypercorn's ``TCPServer.send_lock``, which hypercorn's own writers (pongs, the
    close frame, the handshake) take with ``async with``, as they took that one.

    A ``trio.Lock`` belongs to the task that took it: only that task may release it. This
    one belongs to no task. So a write begun by one task can be finished by another, with
    hypercorn's writers waiting meanwhile. A session publishing a fact begins such writes
    straight to its clients' sockets. The client's sender finishes one when the socket took
    only part of it."""

    __slots__ = ("_semaphore",)

    def __init__(self) -> None:
        self._semaphore = trio.Semaphore(1, max_value=1)  # fair: released to a waiter

    def locked(self) -> bool:
        return self._semaphore.value == 0

    def acquire_nowait(self) -> None:
        self._semaphore.acquire_nowait()

    def release(self) -> None:
        self._semaphore.release()

    async def __aenter__(self) -> None:
        await self._semaphore.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self._semaphore.release()


def _send_lock(tcp: Any) -> SendLock | None:
    """``tcp``'s send lock, a :class:`SendLock` (put in place of hypercorn's own while that
    one is free: no task holds or waits for it then, so every writer from now on takes
    this one); ``None`` while hypercorn's is held."""
    lock = tcp.send_lock
    if isinstance(lock, SendLock):
        return lock
    if lock.locked():
        return None
    lock = tcp.send_lock = SendLock()
    return lock


class FrameWriter:
    """Writes text frames to one hypercorn WebSocket: :meth:`write` from the connection's
    one writer task, :meth:`write_now` from any task, without waiting (see
    :meth:`write_now`)."""

    def __init__(self, stream: Any, tcp: Any) -> None:
        self._stream = stream
        self._tcp = tcp  # None: everything through hypercorn
        # What the socket did not take of a write begun without waiting, its send lock held
        # for it until :meth:`flush` writes it (b"": none).
        self._rest = b""

    @property
    def direct(self) -> bool:
        """Whether frames may go straight to the socket."""
        return self._tcp is not None

    @property
    def pending(self) -> bool:
        """Whether the socket took only part of a write: :meth:`flush` must write the rest
        before anything else is written to it (hypercorn's writers wait for it)."""
        return bool(self._rest)

    def ready(self) -> bool:
        """Whether :meth:`write_now` may write (it may still find the socket full)."""
        tcp = self._tcp
        if tcp is None or self._rest:
            return False
        lock = _send_lock(tcp)
        return lock is not None and not lock.locked()

    def write_now(self, texts: Iterable[str]) -> bool:
        """Write ``texts`` as text frames with one socket ``send()``, now, without waiting.

        Returns ``True`` when done, or dropped once the stream has closed (as :meth:`write`
        drops them). Returns ``False`` when nothing was written: something else is writing to
        the socket, it is full, or the connection frames otherwise. Then :meth:`write` them.

        When the socket takes only part, the rest is :attr:`pending`, the socket's send lock
        held for it. The caller has :meth:`flush` write it (the writer task does). Every other
        writer waits for that, so no frame is ever cut by another.

        Only a connection that frames a text as :class:`SharedText` does is written to this
        way: framing with a connection's own context (permessage-deflate) must come in the
        order of the writes, which :meth:`write` keeps."""
        if not self.ready():
            return False
        stream = self._stream
        if stream.closed or stream.state is not ASGIWebsocketState.CONNECTED:
            return True
        if not _frames_plainly(stream.connection):
            return False
        data = b"".join(
            framed(text) if isinstance(text, SharedText) else _FRAMES.send_data(text, fin=True)
            for text in texts
        )
        return self._send_now(data)

    def _send_now(self, data: bytes) -> bool:
        """Write ``data`` to the socket, whose send lock is free: whether it took any (the
        rest, if any, is then pending, with the lock held for it)."""
        tcp = self._tcp
        fd = tcp.stream.socket.fileno()  # -1 once closed: then hypercorn's path says so
        if fd < 0:
            return False
        try:
            sent = os.write(fd, data)
        except OSError:  # full (BlockingIOError) or broken: hypercorn's path deals with it
            return False
        if sent < len(data):
            tcp.send_lock.acquire_nowait()  # free, so taken at once: nothing can cut in
            self._rest = data[sent:]
        return True

    async def flush(self) -> None:
        """Write what the socket did not take of the last write (see :attr:`pending`),
        even if this task is being cancelled (the rest of a frame must follow it), then
        let the socket's other writers go."""
        rest = self._rest
        if not rest:
            return
        self._rest = b""  # the lock stays held until it is written
        tcp = self._tcp
        try:
            with trio.CancelScope(shield=True):
                await tcp.stream.send_all(rest)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError):
            # The client is gone, or hypercorn is closing the connection: close the socket
            # (if it is not yet), which ends the connection's reader, hence the connection.
            self.abort()
        finally:
            tcp.send_lock.release()

    def discard(self) -> None:
        """Give up what is pending (the writer task is torn down before it could write
        it): the socket is closed, since its client has part of a frame, and the socket's
        other writers are let go (they find it closed)."""
        if self._rest:
            self.abort()
            self._rest = b""
            self._tcp.send_lock.release()

    async def write(self, texts: Sequence[str]) -> None:
        """Write ``texts`` as text frames, in order, after whatever was written before.

        As ``WSStream.app_send`` does for a ``websocket.send``: nothing once the stream has
        closed (the client went away; the reader hears of it), and no frame once wsproto
        refuses one (the connection is closing)."""
        await self.flush()  # the rest of a write begun without waiting, if any, first
        stream = self._stream
        if stream.closed or stream.state is not ASGIWebsocketState.CONNECTED:
            return
        connection = stream.connection
        plain = _frames_plainly(connection)
        frames = []
        for text in texts:
            if plain and isinstance(text, SharedText):
                frames.append(framed(text))  # made once for every client
                continue
            try:
                frames.append(connection.send(TextMessage(data=text)))
            except LocalProtocolError:
                break
        data = b"".join(frames)
        if not data:
            return
        # Nothing else writes to the socket while its send lock is free and this task does
        # not yield: what the socket does not take is written next, the lock held for it.
        if self.ready() and self._send_now(data):
            await self.flush()
            return
        await stream.send(Data(stream_id=stream.stream_id, data=data))

    def abort(self) -> None:
        """Close the connection's socket under it, now: a write that waits for a client
        which stopped reading fails (hypercorn shields its writes from cancellation, so
        nothing else ends one), and hypercorn ends the connection. Without the socket
        (HTTP/2, TLS) there is nothing to close."""
        if self._tcp is not None:
            self._tcp.stream.socket.close()  # trio's close wakes whoever waits on it


def seam_problem() -> str | None:
    """Why no connection can take the seam with the hypercorn installed, or ``None``.

    What can be seen without a connection: the modules and the methods the seam goes
    through. The daemon logs the reason at startup (its frames then go through Starlette,
    correct but slower with many clients); pyproject bounds hypercorn to the versions
    checked, so this is for an install that forced another.
    """
    if WSStream is None:
        return "hypercorn has none of the protocol modules the seam uses"
    for owner, method in (
        (WSStream, "app_send"),
        (H11Protocol, "stream_send"),
        (TCPServer, "protocol_send"),
    ):
        if not callable(getattr(owner, method, None)):
            return f"hypercorn's {owner.__name__} has no {method}"
    return None


def frame_writer(websocket: WebSocket) -> FrameWriter | None:
    """A writer for ``websocket``'s text frames; ``None`` when it is not served by a
    hypercorn with the seam (the caller then sends through Starlette)."""
    send = websocket.scope.get(SCOPE_KEY)
    stream = getattr(send, "__self__", None)
    if (
        WSStream is None
        or not isinstance(stream, WSStream)
        or getattr(send, "__func__", None) is not WSStream.app_send
        or not all(hasattr(stream, name) for name in ("connection", "state", "closed", "send"))
        or not isinstance(getattr(stream, "stream_id", None), int)
    ):
        return None
    return FrameWriter(stream, _tcp_server(stream))


def _tcp_server(stream: Any) -> Any:
    """The plain-TCP ``TCPServer`` under ``stream``'s HTTP/1.1 connection, or ``None``."""
    protocol = getattr(stream.send, "__self__", None)
    if not isinstance(protocol, H11Protocol):
        return None
    protocol_send = getattr(protocol, "send", None)
    tcp = getattr(protocol_send, "__self__", None)
    if (
        not isinstance(tcp, TCPServer)
        or getattr(protocol_send, "__func__", None) is not TCPServer.protocol_send
        or not isinstance(getattr(tcp, "send_lock", None), trio.Lock | SendLock)
        or not isinstance(getattr(tcp, "stream", None), trio.SocketStream)
    ):
        return None
    return tcp
