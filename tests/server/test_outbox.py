"""The outbox of one WebSocket client (``server/_outbox``): through Starlette, and under
hypercorn where a session's frames are pushed from its own task."""

import json
import socket
import struct
from collections.abc import Callable

import pytest
import trio
from starlette.websockets import WebSocket
from wsproto.events import (
    CloseConnection,
    Event,
    Ping,
    Pong,
    TextMessage,
)

from orchestrator.server import (
    CLOSE_FELL_BEHIND,
    CLOSE_GOING_AWAY,
    Outbox,
)
from orchestrator.server._outbox import CLOSE_TIMEOUT, MAX_BATCH
from orchestrator.sessions import SharedText
from tests.support.websocket_server import Client, FakeAsgi, accepted, connected, serving

#: Four megabytes of frames: more than the socket buffers to a client that reads nothing hold.
MEGABYTES = [json.dumps({"n": n, "pad": "x" * 10_000}) for n in range(400)]


def filled_outbox(websocket: WebSocket, frames: list[str]) -> Outbox:
    """An outbox with room for ``frames``, holding them."""
    outbox = Outbox(websocket, len(frames), on_hang_up=lambda *args: None)
    for frame in frames:
        outbox.put(frame)
    return outbox


class TestOutbox:
    async def test_through_starlette_frames_go_in_order_then_the_close(self) -> None:
        """Without the seam the outbox sends each frame through Starlette, in order, then
        closes with the hang-up's code and reason."""
        asgi = FakeAsgi()
        websocket = await accepted(asgi)
        hung_up: list[tuple[int, str]] = []
        outbox = Outbox(websocket, 10, on_hang_up=lambda *args: hung_up.append(args))
        for n in range(3):
            outbox.put(f"frame {n}")
        outbox.hang_up(CLOSE_GOING_AWAY, "the session ended")
        outbox.put("after the hang-up")
        with trio.fail_after(5):
            await outbox.send()
        assert asgi.sent[1:] == [
            {"type": "websocket.send", "text": "frame 0"},
            {"type": "websocket.send", "text": "frame 1"},
            {"type": "websocket.send", "text": "frame 2"},
            {"type": "websocket.close", "code": CLOSE_GOING_AWAY, "reason": "the session ended"},
        ]
        assert hung_up == [(CLOSE_GOING_AWAY, "the session ended")]

    async def test_a_full_outbox_hangs_up_with_1008_and_drops_the_backlog(self) -> None:
        asgi = FakeAsgi()
        websocket = await accepted(asgi)
        outbox = Outbox(websocket, 2, on_hang_up=lambda *args: None)
        for n in range(3):
            outbox.put(f"frame {n}")
        with trio.fail_after(5):
            await outbox.send()
        assert asgi.sent[1:] == [
            {
                "type": "websocket.close",
                "code": CLOSE_FELL_BEHIND,
                "reason": "fell behind: 2 messages were waiting",
            }
        ]

    async def test_through_starlette_pushed_frames_go_in_order_with_put_ones(self) -> None:
        asgi = FakeAsgi()
        websocket = await accepted(asgi)
        outbox = Outbox(websocket, 10, on_hang_up=lambda *args: None)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(outbox.send)
            await trio.testing.wait_all_tasks_blocked()
            outbox.hold("held 0")
            outbox.put("put")
            outbox.hold("held 1")
            outbox.push()
            await trio.testing.wait_all_tasks_blocked()
            outbox.hold("held 2")
            outbox.push()
            outbox.hang_up(CLOSE_GOING_AWAY, "done")
        assert [m.get("text") for m in asgi.sent[1:-1]] == ["held 0", "put", "held 1", "held 2"]

    async def test_a_replay_longer_than_the_buffer_waits_for_room(self) -> None:
        """put_waiting waits for the writer to take frames, rather than hang up."""
        asgi = FakeAsgi()
        websocket = await accepted(asgi)
        hung_up: list[tuple[int, str]] = []
        outbox = Outbox(websocket, 2, on_hang_up=lambda *args: hung_up.append(args))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(outbox.send)
            for n in range(10):
                await outbox.put_waiting(f"replayed {n}")
            outbox.hang_up(CLOSE_GOING_AWAY, "done")
        assert [m.get("text") for m in asgi.sent[1:-1]] == [f"replayed {n}" for n in range(10)]
        assert hung_up == [(CLOSE_GOING_AWAY, "done")]

    async def test_a_replay_waiting_for_room_ends_with_the_hang_up(self) -> None:
        asgi = FakeAsgi()
        websocket = await accepted(asgi)
        outbox = Outbox(websocket, 2, on_hang_up=lambda *args: None)
        outbox.put("a")
        outbox.put("b")  # full: no writer yet
        async with trio.open_nursery() as nursery:
            nursery.start_soon(outbox.put_waiting, "c")
            await trio.testing.wait_all_tasks_blocked()
            outbox.hang_up(CLOSE_FELL_BEHIND, "gone")
        with trio.fail_after(5):
            await outbox.send()
        assert asgi.sent[1:] == [
            {"type": "websocket.close", "code": CLOSE_FELL_BEHIND, "reason": "gone"}
        ]

    @pytest.mark.daemon
    async def test_under_hypercorn_a_backlog_goes_out_in_batches_in_order(self) -> None:
        """What waits when the writer wakes goes out together (at most MAX_BATCH frames a
        write), in order, then the close."""
        count = 2 * MAX_BATCH + 5

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, count, on_hang_up=lambda *args: None)
            for n in range(count):
                outbox.put(str(n))
            outbox.hang_up(CLOSE_GOING_AWAY, "the session ended")
            await outbox.send()

        with trio.fail_after(10):
            async with serving(handler) as address, connected(address) as client:
                texts, code = await client.until_closed()
        assert texts == [str(n) for n in range(count)]
        assert code == CLOSE_GOING_AWAY
        [close] = [e for e in client.events if isinstance(e, CloseConnection)]
        assert close.reason == "the session ended"

    @pytest.mark.daemon
    async def test_a_client_hung_up_on_that_reads_nothing_is_cut_off(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Hung up on with megabytes still to write to a client that reads nothing, the
        outbox gives it CLOSE_TIMEOUT, then closes the socket under the write (hypercorn
        would wait forever): the writer returns, and the client finds whole frames, in
        order, then the end of the stream without a close frame."""
        frames = MEGABYTES
        took: list[float] = []
        returned = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            outbox = filled_outbox(websocket, frames)
            outbox.hang_up(CLOSE_GOING_AWAY, "the session ended")
            started = trio.current_time()
            await outbox.send()
            took.append(trio.current_time() - started)
            returned.set()

        with trio.fail_after(60):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await returned.wait()
                texts = await client.until_eof()
        assert CLOSE_TIMEOUT <= took[0] < CLOSE_TIMEOUT + 1
        assert 0 < len(texts) < len(frames)
        assert texts == frames[: len(texts)]
        assert not [e for e in client.events if isinstance(e, CloseConnection)]

    @pytest.mark.daemon
    async def test_cancelled_in_the_middle_of_a_write_it_closes_the_socket(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Torn down (the daemon stops) while a write waits for a client that reads
        nothing: the socket is closed under the write, so the cancel takes effect."""
        frames = MEGABYTES
        returned = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            outbox = filled_outbox(websocket, frames)
            with trio.move_on_after(1):
                await outbox.send()
            returned.set()

        with trio.fail_after(60):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await returned.wait()
                assert trio.current_time() < 2
                texts = await client.until_eof()
        assert texts == frames[: len(texts)]

    @pytest.mark.daemon
    async def test_cancelled_while_idle_it_leaves_the_connection_alone(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """With nothing being written, a cancelled outbox leaves the socket to hypercorn:
        the app can still send and close."""

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 10, on_hang_up=lambda *args: None)
            with trio.move_on_after(1):
                await outbox.send()
            await websocket.send_text("still here")
            await websocket.close(code=CLOSE_GOING_AWAY)

        with trio.fail_after(60):
            async with serving(handler) as address, connected(address) as client:
                assert await client.until_closed() == (["still here"], CLOSE_GOING_AWAY)


HUGE = SharedText(json.dumps({"pad": "x" * 8_000_000}))


async def read_until(client: Client, done: Callable[[list[Event]], bool]) -> None:
    while not done(client.events):
        data = await client.stream.receive_some(65_536)
        assert data, "the stream ended"
        client.ws.receive_data(data)
        client.events.extend(client.ws.events())


def whole_texts(events: list[Event]) -> list[str]:
    texts: list[str] = []
    pieces: list[str] = []
    for event in events:
        if isinstance(event, TextMessage):
            pieces.append(event.data)
            if event.message_finished:
                texts.append("".join(pieces))
                pieces.clear()
    return texts


@pytest.mark.daemon
class TestPush:
    """:meth:`Outbox.push` under hypercorn: what a session publishes is written from its own
    task when the socket is free; the rest of a write the socket took part of, the frames
    queued after it, and hypercorn's own frames come after it, whole."""

    async def test_written_now_without_waking_the_writer_task(self) -> None:
        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 10, on_hang_up=lambda *args: None)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(outbox.send)
                await trio.testing.wait_all_tasks_blocked()  # the writer waits for frames
                for n in range(3):
                    outbox.hold(SharedText(f"fact {n}"))
                outbox.push()
                assert outbox._frames.statistics().tasks_waiting == 1  # not woken
                outbox.hang_up(CLOSE_GOING_AWAY, "done")

        with trio.fail_after(10):
            async with serving(handler) as address, connected(address) as client:
                assert await client.until_closed() == (
                    ["fact 0", "fact 1", "fact 2"],
                    CLOSE_GOING_AWAY,
                )

    async def test_a_pong_comes_after_the_rest_of_a_pushed_frame(self) -> None:
        pushed = trio.Event()
        read = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 10, on_hang_up=lambda *args: None)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(outbox.send)
                await trio.testing.wait_all_tasks_blocked()
                outbox.hold(HUGE)
                outbox.push()
                assert outbox._writer is not None
                assert outbox._writer.pending  # the socket took part of it
                pushed.set()
                await read.wait()
                outbox.hang_up(CLOSE_GOING_AWAY, "done")

        with trio.fail_after(20):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await pushed.wait()
                await client.send(Ping(b"are you there"))
                await trio.testing.wait_all_tasks_blocked()  # hypercorn waits to answer
                await read_until(client, lambda events: Pong(b"are you there") in events)
                read.set()
                texts, code = await client.until_closed()
        pong = client.events.index(Pong(b"are you there"))
        assert whole_texts(client.events[:pong]) == [HUGE]
        assert (texts, code) == ([], CLOSE_GOING_AWAY)

    async def test_a_close_comes_after_the_rest_of_a_pushed_frame(self) -> None:
        """The app closes the WebSocket (through Starlette and hypercorn) while the rest of
        a pushed frame is still to be written: the close frame follows it."""

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 10, on_hang_up=lambda *args: None)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(outbox.send)
                await trio.testing.wait_all_tasks_blocked()
                outbox.hold(HUGE)
                outbox.push()
                assert outbox._writer is not None
                assert outbox._writer.pending
                await websocket.close(code=CLOSE_GOING_AWAY)
                nursery.cancel_scope.cancel()

        with trio.fail_after(20):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                assert await client.until_closed() == ([HUGE], CLOSE_GOING_AWAY)

    async def test_frames_go_in_order_whichever_task_writes_them(self) -> None:
        """Pushed while the rest of a frame waits, put between pushes, pushed once the
        socket is free again: every frame arrives whole, in the order queued."""
        pushed = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 100, on_hang_up=lambda *args: None)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(outbox.send)
                await trio.testing.wait_all_tasks_blocked()
                outbox.hold(HUGE)
                outbox.push()  # written in part: the rest is the writer task's
                outbox.put("put")
                outbox.hold(SharedText("held"))
                outbox.push()  # queued behind the rest
                pushed.set()
                await trio.testing.wait_all_tasks_blocked()  # the client reads it all
                outbox.hold(SharedText("later"))
                outbox.push()  # the socket is free: written now
                assert outbox._frames.statistics().tasks_waiting == 1
                outbox.hang_up(CLOSE_GOING_AWAY, "done")

        with trio.fail_after(20):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await pushed.wait()
                assert await client.until_closed() == (
                    [HUGE, "put", "held", "later"],
                    CLOSE_GOING_AWAY,
                )

    async def test_a_client_that_reads_nothing_falls_behind_as_before(self) -> None:
        """Pushes to a client that reads nothing: written now until its socket is full,
        then queued; once ``size`` frames wait it is hung up on with 1008, its backlog
        dropped. It finds whole frames, in order, then the close."""
        frames = [SharedText(json.dumps({"n": n, "pad": "x" * 200_000})) for n in range(200)]
        hung_up: list[tuple[int, str]] = []

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 5, on_hang_up=lambda *args: hung_up.append(args))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(outbox.send)
                await trio.testing.wait_all_tasks_blocked()
                for frame in frames:
                    outbox.hold(frame)
                    outbox.push()
                    if outbox.closing is not None:
                        break

        with trio.fail_after(20):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await trio.testing.wait_all_tasks_blocked()
                texts, code = await client.until_closed()
        assert hung_up == [(CLOSE_FELL_BEHIND, "fell behind: 5 messages were waiting")]
        assert code == CLOSE_FELL_BEHIND
        assert 0 < len(texts) < len(frames) - 5
        assert texts == frames[: len(texts)]

    async def test_torn_down_with_the_rest_of_a_push_to_write_it_closes_the_socket(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Cancelled (the daemon stops) while the rest of a pushed frame waits for a client
        that reads nothing: the socket is closed, and hypercorn is not left waiting."""
        returned = trio.Event()

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 10, on_hang_up=lambda *args: None)
            with trio.move_on_after(1):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(outbox.send)
                    await trio.testing.wait_all_tasks_blocked()
                    outbox.hold(HUGE)
                    outbox.push()
                    assert outbox._writer is not None
                    assert outbox._writer.pending
            returned.set()

        with trio.fail_after(60):
            async with (
                serving(handler) as address,
                connected(address, receive_buffer=4_096) as client,
            ):
                await returned.wait()
                assert trio.current_time() < 2
                assert await client.until_eof() == []

    async def test_a_client_that_resets_mid_push_is_let_go_and_the_publisher_goes_on(
        self,
    ) -> None:
        """The rest of a pushed frame waits for a client that reads nothing; the client then
        resets (RST). The publisher keeps pushing without raising, the writer task's flush
        fails, the connection ends and the app returns: nothing is left waiting."""
        pushed, reset, returned = trio.Event(), trio.Event(), trio.Event()

        async def handler(websocket: WebSocket) -> None:
            outbox = Outbox(websocket, 1_000, on_hang_up=lambda *args: None)

            async def read(cancel: trio.CancelScope) -> None:
                while (await websocket.receive())["type"] != "websocket.disconnect":
                    pass
                cancel.cancel()

            async def publish() -> None:
                outbox.hold(HUGE)
                outbox.push()
                assert outbox._writer is not None
                assert outbox._writer.pending
                pushed.set()
                await reset.wait()
                for n in range(200):  # the publisher goes on while the connection dies
                    outbox.hold(SharedText(f"fact {n}"))
                    outbox.push()
                    await trio.lowlevel.checkpoint()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read, nursery.cancel_scope)
                nursery.start_soon(publish)
                await outbox.send()
                nursery.cancel_scope.cancel()
            returned.set()

        with trio.fail_after(20):
            async with serving(handler) as address:
                async with connected(address, receive_buffer=4_096) as client:
                    await pushed.wait()
                    client.stream.socket.setsockopt(  # closed with SO_LINGER 0: a reset
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                reset.set()
                await returned.wait()
