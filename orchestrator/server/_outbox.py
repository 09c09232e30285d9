"""What one WebSocket client is sent: one bounded buffer, one writer, one way to hang up.

Producers (the tasks that project facts, answer requests) never wait: :meth:`Outbox.put`
queues a text frame, and a client that lets ``size`` frames pile up is hung up on with close
code 1008 and a reason ("fell behind"), its backlog dropped (stale to a client that must
reconnect anyway), so nobody else waits for it. What the connection sends at its own pace, a
replay it was asked for, goes through :meth:`Outbox.put_waiting`, which waits for room
instead: a replay longer than the buffer is no sign of a slow client.

:meth:`Outbox.send` is the connection's one writer: it sends the frames in order, then the
close frame. Under hypercorn, the frames waiting when the writer wakes go out together, in
one socket write where the socket takes them (:mod:`orchestrator.server._hypercorn_ws`); elsewhere
one by one through Starlette.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Final

import trio
from starlette.websockets import WebSocket

from ._hypercorn_ws import FrameWriter, frame_writer

__all__ = ["CLOSE_FELL_BEHIND", "CLOSE_GOING_AWAY", "CLOSE_INTERNAL_ERROR", "Outbox"]

#: Close codes: 1008 policy violation (the client fell behind), 1001 going away, 1011 an
#: internal error (what the client was being fed failed).
CLOSE_FELL_BEHIND: Final = 1008
CLOSE_GOING_AWAY: Final = 1001
CLOSE_INTERNAL_ERROR: Final = 1011
#: The most frames written together (a client far behind catches up in writes of this many).
MAX_BATCH: Final = 64
#: How long a client that is hung up on has to take what is left and the close frame before
#: its socket is closed under it (seconds).
CLOSE_TIMEOUT: Final = 5.0


class Outbox:
    def __init__(
        self, websocket: WebSocket, size: int, *, on_hang_up: Callable[[int, str], None]
    ) -> None:
        """``on_hang_up(code, reason)`` is called once, when the connection is to close
        (to log it, count it, and stop feeding it)."""
        self._websocket = websocket
        self._size = size
        self._on_hang_up = on_hang_up
        self._send_side, self._receive_side = trio.open_memory_channel[str](size)
        self.closing: tuple[int, str] | None = None
        self._hung_up = trio.Event()
        self._writing = False  # a write to the socket is in flight

    def put(self, text: str) -> None:
        """Queue ``text``; a client with ``size`` frames waiting is hung up on instead."""
        if self.closing is not None:
            return
        try:
            self._send_side.send_nowait(text)
        except trio.WouldBlock:
            self.hang_up(CLOSE_FELL_BEHIND, f"fell behind: {self._size} messages were waiting")

    async def put_waiting(self, text: str) -> None:
        """Queue ``text`` once there is room (nothing, once hung up on)."""
        if self.closing is not None:
            return
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send_side.send(text)

    def hang_up(self, code: int, reason: str) -> None:
        """Close after what is queued (after the frames being written, for one that fell
        behind: its backlog is dropped)."""
        if self.closing is not None:
            return
        self.closing = (code, reason)
        self._hung_up.set()
        self._send_side.close()
        if code == CLOSE_FELL_BEHIND:
            while True:
                try:
                    self._receive_side.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
        self._on_hang_up(code, reason)

    async def send(self) -> None:
        """Write every frame, in order, until hung up; then the close frame.

        Under hypercorn, a client that stopped reading cannot hold the connection open
        forever: once hung up on, it has :data:`CLOSE_TIMEOUT` to take what is left; and
        when this task is cancelled (the connection is torn down, the daemon stops) in the
        middle of a write, the socket is closed under the write."""
        writer = frame_writer(self._websocket)
        if writer is None:
            await self._write_through_starlette()
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._unstick, writer)
            await self._write(writer)
            nursery.cancel_scope.cancel()

    async def _write_through_starlette(self) -> None:
        async for text in self._receive_side:
            await self._websocket.send_text(text)
        await self._close()

    async def _write(self, writer: FrameWriter) -> None:
        async for text in self._receive_side:
            batch = [text]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._receive_side.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            self._writing = True
            await writer.write(batch)
            self._writing = False
        self._writing = True
        await self._close()
        self._writing = False

    async def _close(self) -> None:
        if self.closing is not None:
            code, reason = self.closing
            await self._websocket.close(code=code, reason=reason[:120])

    async def _unstick(self, writer: FrameWriter) -> None:
        """Close the socket under a write that cannot finish (hypercorn shields its writes,
        so cancelling them does nothing while the client reads nothing)."""
        try:
            await self._hung_up.wait()
            await trio.sleep(CLOSE_TIMEOUT)
        except trio.Cancelled:
            if self._writing:  # torn down mid-write
                writer.abort()
            raise
        writer.abort()  # hung up on long ago, and still writing
