"""The hypercorn seam of :mod:`orchestrator.server._hypercorn_ws` (the outbox on it:
tests/server/test_outbox.py).

The seam tests run a small Starlette app on hypercorn's trio worker on loopback: if a
hypercorn release moves what the writer relies on, they fail here (the daemon would still
work, through Starlette, only slower)."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.protocol.events import Data
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.protocol.ws_stream import ASGIWebsocketState
from hypercorn.trio.worker_context import WorkerContext
from starlette.types import Message
from starlette.websockets import WebSocket
from wsproto import ConnectionType, WSConnection
from wsproto.connection import Connection
from wsproto.events import (
    CloseConnection,
    Event,
    Ping,
    Pong,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate

from orchestrator.server import (
    CLOSE_GOING_AWAY,
    SCOPE_KEY,
    FrameWriter,
    SendLock,
    frame_writer,
)
from orchestrator.server._hypercorn_ws import (
    DISCONNECT_TIMEOUT,
    _tcp_server,
    framed,
    take_until_disconnect,
)
from orchestrator.sessions import SharedText
from tests.support.websocket_server import connected, serving


class TestSeam:
    @pytest.mark.daemon
    async def test_hypercorn_hands_the_app_a_stream_the_writer_can_use(self) -> None:
        """Under hypercorn's HTTP/1.1 trio worker over plain TCP the writer finds the
        WSStream, its protocol and the TCP server: frames may go straight to the socket,
        and arrive as written, before the close."""
        writers: list[FrameWriter | None] = []

        async def handler(websocket: WebSocket) -> None:
            writer = frame_writer(websocket)
            writers.append(writer)
            assert writer is not None
            await writer.write(["one", "two"])
            await writer.write(["three"])
            await websocket.close(code=CLOSE_GOING_AWAY, reason="done")

        with trio.fail_after(10):
            async with serving(handler) as address, connected(address) as client:
                texts, code = await client.until_closed()
        assert (texts, code) == (["one", "two", "three"], CLOSE_GOING_AWAY)
        [writer] = writers
        assert writer is not None
        assert writer.direct

    @pytest.mark.daemon
    async def test_without_the_middleware_there_is_no_writer(self) -> None:
        """No server ``send`` in the scope: the caller sends through Starlette."""
        found: list[FrameWriter | None] = []

        async def handler(websocket: WebSocket) -> None:
            found.append(frame_writer(websocket))
            await websocket.send_text("hello")
            await websocket.close(code=CLOSE_GOING_AWAY)

        with trio.fail_after(10):
            async with serving(handler, record=False) as address, connected(address) as client:
                assert await client.until_closed() == (["hello"], CLOSE_GOING_AWAY)
        assert found == [None]

    def test_a_send_that_is_not_hypercorns_gives_no_writer(self) -> None:
        """Another server's ``send`` (here a plain function) is not a seam."""

        async def send(message: Message) -> None:
            pass

        async def receive() -> Message:
            return {"type": "websocket.connect"}

        scope = {"type": "websocket", "path": "/ws", "headers": [], SCOPE_KEY: send}
        assert frame_writer(WebSocket(scope, receive, send)) is None

    @pytest.mark.daemon
    async def test_frames_stay_whole_and_in_order_when_the_socket_fills(self) -> None:
        """Frames far larger than the socket buffers, to a client that is not reading: the
        socket takes part of a write and hypercorn writes the rest, while a second write
        waits for it; a ping the client sends meanwhile is answered by hypercorn (another
        writer on the same socket) between frames. Everything arrives whole and in order."""
        frames = [json.dumps({"n": n, "pad": str(n) * 1_500_000}) for n in range(6)]
        waiting = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            writer = frame_writer(websocket)
            assert writer is not None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer.write, frames[:3])
                await trio.testing.wait_all_tasks_blocked()  # the socket is full
                nursery.start_soon(writer.write, frames[3:])
                await trio.testing.wait_all_tasks_blocked()  # it waits for the lock
                waiting.set()
            await websocket.close(code=CLOSE_GOING_AWAY)

        with trio.fail_after(20):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await waiting.wait()
                await client.send(Ping(b"are you there"))
                texts, code = await client.until_closed()
        assert [json.loads(text)["n"] for text in texts] == list(range(6))
        assert texts == frames
        assert code == CLOSE_GOING_AWAY
        assert Pong(b"are you there") in client.events

    @pytest.mark.daemon
    async def test_nothing_is_written_once_the_client_has_gone(self) -> None:
        """A write after the stream closed does nothing, as hypercorn's own send does."""
        done = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            writer = frame_writer(websocket)
            assert writer is not None
            assert (await websocket.receive())["type"] == "websocket.disconnect"
            await writer.write(["too late"])
            done.set()

        with trio.fail_after(10):
            async with serving(handler) as address:
                async with connected(address) as client:
                    await client.send(CloseConnection(code=1000))
                    await client.until_closed()
                await done.wait()


class TestDisconnect:
    @pytest.mark.daemon
    async def test_a_client_whose_messages_the_app_left_unread_is_let_go(self) -> None:
        """The app returns (after its close) with a full receive queue: hypercorn would
        block putting the disconnect into it, and never close the TCP connection; the
        seam takes the queue, so the close handshake ends with the server's TCP close."""
        queued = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            await queued.wait()
            await trio.testing.wait_all_tasks_blocked()  # hypercorn waits on the full queue
            await websocket.close(code=CLOSE_GOING_AWAY)

        with trio.fail_after(20):
            async with serving(handler) as address, connected(address) as client:
                for n in range(30):
                    await client.send(TextMessage(data=f"prompt {n}"))
                queued.set()
                assert await client.until_closed() == ([], CLOSE_GOING_AWAY)
                assert await client.until_eof() == []

    @pytest.mark.daemon
    async def test_an_app_that_fails_has_the_client_told_and_let_go(self) -> None:
        """The app raises with the client's messages unread: the client is closed with
        1011 and the TCP connection ends (hypercorn alone would block, as above)."""
        queued = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            await queued.wait()
            await trio.testing.wait_all_tasks_blocked()
            raise RuntimeError("a bug in the app")

        with trio.fail_after(20):
            async with serving(handler) as address, connected(address) as client:
                for n in range(30):
                    await client.send(TextMessage(data=f"prompt {n}"))
                queued.set()
                assert await client.until_closed() == ([], 1011)
                assert await client.until_eof() == []

    @pytest.mark.daemon
    async def test_a_refused_handshake_is_not_held(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Nothing was queued for a WebSocket the app refused: the seam returns at once
        (not DISCONNECT_TIMEOUT later), and the client gets its 403."""
        returned: list[float] = []

        async def refuse(websocket: WebSocket) -> None:
            await websocket.close(code=1008)

        with trio.fail_after(60):
            async with serving(refuse, accept=False, returned=returned) as address:
                stream = await trio.open_tcp_stream(*address)
                async with stream:
                    ws = WSConnection(ConnectionType.CLIENT)
                    await stream.send_all(ws.send(Request(host="localhost", target="/ws")))
                    ws.receive_data(await stream.receive_some(65_536))
                    [rejection, *_] = list(ws.events())
                    asked = trio.current_time()
                    while not returned:
                        await trio.testing.wait_all_tasks_blocked()
                        await trio.sleep(0.1)
        assert isinstance(rejection, RejectConnection)
        assert rejection.status_code == 403
        assert returned[0] - asked < 1

    @pytest.mark.daemon
    async def test_a_client_that_never_answers_the_close_is_cut_off(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The same client, but it never answers the close: DISCONNECT_TIMEOUT after the
        app returned, its socket is closed."""
        queued = trio.Event()
        returned: list[float] = []

        async def handler(websocket: WebSocket) -> None:
            await queued.wait()
            await trio.testing.wait_all_tasks_blocked()
            await websocket.close(code=CLOSE_GOING_AWAY)
            returned.append(trio.current_time())

        with trio.fail_after(60):
            async with serving(handler) as address, connected(address) as client:
                for n in range(30):
                    await client.send(TextMessage(data=f"prompt {n}"))
                queued.set()
                texts, close = await client._read()  # the close frame, left unanswered
                assert (texts, close and close.code) == ([], CLOSE_GOING_AWAY)
                assert await client.until_eof() == []
                cut_off = trio.current_time()
        assert cut_off - returned[0] == pytest.approx(DISCONNECT_TIMEOUT, abs=0.5)

    async def test_what_hypercorn_read_before_the_cut_off_is_taken_too(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A client that keeps sending and never goes is cut off while hypercorn's reader
        still holds a burst it read before the socket closed: as hypercorn does, the
        reader puts the burst into its queue of ten, then the disconnect. The drain takes
        the whole burst, so the reader gets through and the connection ends."""
        to_app, from_reader = trio.open_memory_channel[Message](10)
        cut = trio.Event()
        reader_done = trio.Event()
        put: list[Message] = []

        async def hypercorn_reader() -> None:
            def prompt() -> Message:
                message = {"type": "websocket.receive", "text": f"prompt {len(put)}"}
                put.append(message)
                return message

            while not cut.is_set():  # a prompt a second
                await to_app.send(prompt())
                with trio.move_on_after(1):
                    await cut.wait()
            for _ in range(30):  # the rest of a burst read before the socket closed
                await to_app.send(prompt())
            await to_app.send({"type": "websocket.disconnect", "code": 1006})
            reader_done.set()

        taken: list[Message] = []

        async def receive() -> Message:
            taken.append(await from_reader.receive())
            return taken[-1]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hypercorn_reader)
            with trio.fail_after(3 * DISCONNECT_TIMEOUT):
                await take_until_disconnect(receive, cut.set)
                cut_off_after = trio.current_time()
                await reader_done.wait()
        assert cut_off_after == pytest.approx(DISCONNECT_TIMEOUT)
        assert taken[:-1] == put
        assert taken[-1]["type"] == "websocket.disconnect"


@attrs.define
class FakeWSStream:
    """What the writer uses of hypercorn's WSStream, with a real wsproto connection; what it
    hands to hypercorn is kept."""

    connection: Connection = attrs.Factory(lambda: Connection(ConnectionType.SERVER))
    closed: bool = False
    state: ASGIWebsocketState = ASGIWebsocketState.CONNECTED
    stream_id: int = 1
    handed: list[bytes] = attrs.Factory(list)

    async def send(self, event: Data) -> None:
        self.handed.append(event.data)


@attrs.define
class FakeTCPServer:
    """What the writer uses of hypercorn's TCPServer: the socket stream and the send lock."""

    stream: trio.SocketStream
    send_lock: trio.Lock | SendLock = attrs.Factory(trio.Lock)  # replaced by a SendLock


@attrs.frozen
class OverProtocol:
    """A stream of an HTTP/1.1 protocol (``send`` is the protocol's ``stream_send``)."""

    send: Callable[[Any], Awaitable[None]]


def texts_in(data: bytes) -> list[str]:
    client = Connection(ConnectionType.CLIENT)
    client.receive_data(data)
    return [e.data for e in client.events() if isinstance(e, TextMessage)]


class TestFallbacks:
    async def test_a_full_socket_hands_the_whole_write_to_hypercorn(self) -> None:
        """Nothing of the frames goes to a socket that takes nothing: hypercorn writes them
        all (it waits until the socket can take them)."""
        ours, theirs = trio.socket.socketpair()
        with ours, theirs:
            while True:
                try:
                    os.write(ours.fileno(), b"x" * 65_536)
                except BlockingIOError:
                    break
            stream = FakeWSStream()
            writer = FrameWriter(stream, FakeTCPServer(trio.SocketStream(ours)))
            await writer.write(["a", "b"])
        assert [texts_in(data) for data in stream.handed] == [["a", "b"]]

    async def test_a_closed_socket_hands_the_write_to_hypercorn(self) -> None:
        """hypercorn, whose socket it is, notices the close."""
        ours, theirs = trio.socket.socketpair()
        theirs.close()
        socket_stream = trio.SocketStream(ours)
        await socket_stream.aclose()
        stream = FakeWSStream()
        await FrameWriter(stream, FakeTCPServer(socket_stream)).write(["a"])
        assert [texts_in(data) for data in stream.handed] == [["a"]]

    async def test_without_the_tcp_server_every_write_goes_to_hypercorn(self) -> None:
        stream = FakeWSStream()
        writer = FrameWriter(stream, None)
        assert not writer.direct
        await writer.write(["a"])
        await writer.write(["b", "c"])
        assert [texts_in(data) for data in stream.handed] == [["a"], ["b", "c"]]

    async def test_a_closing_connection_takes_no_more_frames(self) -> None:
        """Once wsproto refuses a frame (the close was sent), it and the frames after it are
        dropped, as hypercorn drops them."""
        stream = FakeWSStream()
        stream.connection.send(CloseConnection(code=1000))
        await FrameWriter(stream, None).write(["a", "b"])
        assert stream.handed == []

    def test_no_tcp_server_below_another_protocol_or_a_replaced_send(self) -> None:
        """Under HTTP/2 (not the HTTP/1.1 protocol) or TLS (not a plain socket stream) the
        writer goes through hypercorn only; here, a stream whose ``send`` is not the
        HTTP/1.1 protocol's, and a protocol whose ``send`` is not the TCP server's."""
        assert _tcp_server(FakeWSStream()) is None

        async def send(event: object) -> None:
            pass

        unused: Any = None
        protocol = H11Protocol(
            unused, HypercornConfig(), WorkerContext(None), unused, unused, False, None, None, send
        )
        assert _tcp_server(OverProtocol(protocol.stream_send)) is None


class CountingConnection(Connection):
    """A server's wsproto connection that counts the text frames it makes itself."""

    framed = 0

    def send(self, event: Event) -> bytes:
        if isinstance(event, TextMessage):
            self.framed += 1
        return super().send(event)


def deflating() -> tuple[Connection, Connection]:
    """A server connection and its client with permessage-deflate negotiated."""
    server_ext, client_ext = PerMessageDeflate(), PerMessageDeflate()
    offer = client_ext.offer()
    assert isinstance(offer, str)
    accepted = server_ext.accept(offer)
    assert isinstance(accepted, str)
    client_ext.finalize(accepted)
    return (
        Connection(ConnectionType.SERVER, [server_ext]),
        Connection(ConnectionType.CLIENT, [client_ext]),
    )


class TestSharedText:
    async def test_one_frame_for_every_connection(self) -> None:
        """A shared text is framed once (by wsproto, as a server frames it) and every
        connection without extensions is handed those very bytes; a plain ``str`` is still
        framed by each connection."""
        text = SharedText(json.dumps({"type": "text", "text": "héllo"}))
        streams = [FakeWSStream(connection=CountingConnection(ConnectionType.SERVER))]
        streams.append(FakeWSStream(connection=CountingConnection(ConnectionType.SERVER)))
        for stream in streams:
            await FrameWriter(stream, None).write([text, "own"])
        assert text.frame is not None
        assert framed(text) is text.frame  # made once, kept
        for stream in streams:
            assert texts_in(stream.handed[0]) == [text, "own"]
            assert stream.handed[0].startswith(text.frame)
            assert isinstance(stream.connection, CountingConnection)
            assert stream.connection.framed == 1  # "own" only

    async def test_a_deflating_connection_frames_it_itself(self) -> None:
        """permessage-deflate compresses with each connection's own context: such a
        connection frames a shared text itself, and its client reads it."""
        server, client = deflating()
        stream = FakeWSStream(connection=server)
        text = SharedText("x" * 200)
        await FrameWriter(stream, None).write([text])
        assert text.frame is None  # not made for this connection
        client.receive_data(stream.handed[0])
        assert [e.data for e in client.events() if isinstance(e, TextMessage)] == [text]
        assert len(stream.handed[0]) < 100  # compressed

    async def test_a_closing_connection_takes_no_shared_frame_either(self) -> None:
        stream = FakeWSStream()
        stream.connection.send(CloseConnection(code=1000))
        await FrameWriter(stream, None).write([SharedText("a")])
        assert stream.handed == []


def small_socketpair() -> tuple[trio.socket.SocketType, trio.socket.SocketType]:
    """Two connected sockets with small buffers: a write of a megabyte goes in part."""
    ours, theirs = trio.socket.socketpair()
    ours.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, 4_096)
    theirs.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4_096)
    return ours, theirs


async def read_exactly(sock: trio.socket.SocketType, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await sock.recv(65_536)
        assert chunk, f"the stream ended after {len(data)} of {size} bytes"
        data += chunk
    return data


async def hypercorn_writes(tcp: FakeTCPServer, data: bytes) -> None:
    """What hypercorn's TCPServer.protocol_send does with a pong or a close frame."""
    async with tcp.send_lock:
        await tcp.stream.send_all(data)


class TestWriteNow:
    """:meth:`FrameWriter.write_now`: frames written from any task, without waiting; what
    the socket does not take is written by :meth:`FrameWriter.flush` (another task may),
    and nothing else is written to the socket in between."""

    async def test_a_frame_the_socket_takes_part_of_is_finished_before_anything_else(
        self,
    ) -> None:
        ours, theirs = small_socketpair()
        with ours, theirs:
            tcp = FakeTCPServer(trio.SocketStream(ours))
            writer = FrameWriter(FakeWSStream(), tcp)
            text = SharedText("x" * 1_000_000)
            assert writer.write_now([text])
            assert writer.pending  # the socket took part of it
            assert text.frame is not None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hypercorn_writes, tcp, b"PONG")
                await trio.testing.wait_all_tasks_blocked()  # it waits for the rest
                assert not writer.write_now(["after"])  # and so does every other frame
                nursery.start_soon(writer.flush)  # a task other than the one that began
                received = await read_exactly(theirs, len(text.frame) + 4)
        assert received == text.frame + b"PONG"
        assert not writer.pending

    async def test_a_frame_the_socket_takes_whole_leaves_it_free(self) -> None:
        ours, theirs = small_socketpair()
        with ours, theirs:
            tcp = FakeTCPServer(trio.SocketStream(ours))
            writer = FrameWriter(FakeWSStream(), tcp)
            assert writer.write_now([SharedText("a"), "b"])
            assert not writer.pending
            assert writer.ready()
            await hypercorn_writes(tcp, b"PONG")
            received = await theirs.recv(65_536)
        assert texts_in(received[:-4]) == ["a", "b"]
        assert received.endswith(b"PONG")

    async def test_nothing_is_written_now_while_another_writer_holds_the_socket(self) -> None:
        ours, theirs = small_socketpair()
        with ours, theirs:
            tcp = FakeTCPServer(trio.SocketStream(ours))
            writer = FrameWriter(FakeWSStream(), tcp)
            async with tcp.send_lock:  # hypercorn is writing (its own trio.Lock)
                assert not writer.ready()
                assert not writer.write_now(["a"])
            assert writer.write_now(["a"])  # its lock is replaced once free
            assert isinstance(tcp.send_lock, SendLock)
            async with tcp.send_lock:  # and hypercorn takes the new one
                assert not writer.write_now(["b"])
            assert texts_in(await theirs.recv(65_536)) == ["a"]

    async def test_a_full_socket_takes_nothing_now(self) -> None:
        ours, theirs = small_socketpair()
        with ours, theirs:
            while True:
                try:
                    os.write(ours.fileno(), b"x" * 65_536)
                except BlockingIOError:
                    break
            writer = FrameWriter(FakeWSStream(), FakeTCPServer(trio.SocketStream(ours)))
            assert not writer.write_now(["a"])
            assert not writer.pending

    async def test_a_connection_that_frames_otherwise_is_written_by_its_writer_task(
        self,
    ) -> None:
        """A deflating connection's frames are made with its own context, in the order of
        the writes: only :meth:`FrameWriter.write` makes them. A closed stream drops them."""
        ours, theirs = small_socketpair()
        with ours, theirs:
            server, _client = deflating()
            tcp = FakeTCPServer(trio.SocketStream(ours))
            assert not FrameWriter(FakeWSStream(connection=server), tcp).write_now(["a"])
            assert FrameWriter(FakeWSStream(closed=True), tcp).write_now(["a"])
            with trio.move_on_after(0.1):  # nothing was written
                assert await theirs.recv(65_536) == b""
                raise AssertionError("written")

    async def test_given_up_it_closes_the_socket_and_lets_the_other_writers_go(self) -> None:
        """A write whose rest cannot be written (its writer task torn down): the client
        has part of a frame, so the socket is closed; hypercorn's writer waiting for it
        finds it closed rather than waiting for ever."""
        ours, theirs = small_socketpair()
        with theirs:
            tcp = FakeTCPServer(trio.SocketStream(ours))
            writer = FrameWriter(FakeWSStream(), tcp)
            assert writer.write_now(["x" * 1_000_000])
            failed: list[BaseException] = []

            async def pong() -> None:
                try:
                    await hypercorn_writes(tcp, b"PONG")
                except trio.ClosedResourceError as exc:
                    failed.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(pong)
                await trio.testing.wait_all_tasks_blocked()
                writer.discard()
            assert ours.fileno() == -1
            assert len(failed) == 1
            assert not writer.pending

    #: A frame larger than what loopback's socket buffers hold for a client that reads nothing.

    async def test_a_write_to_a_peer_that_is_gone_raises_nothing(self) -> None:
        """EPIPE / ECONNRESET in the publisher: write_now says 'not written' and raises
        nothing (the publisher feeds every client of the session)."""
        ours, theirs = trio.socket.socketpair()
        with ours:
            theirs.close()
            writer = FrameWriter(FakeWSStream(), FakeTCPServer(trio.SocketStream(ours)))
            assert writer.write_now([SharedText("a")]) is False
            assert not writer.pending
