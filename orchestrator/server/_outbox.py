"""What one WebSocket client is sent: one bounded buffer, one writer, one way to hang up.

Producers (the tasks that project facts, answer requests) never wait. :meth:`Outbox.put`
queues a text frame; :meth:`Outbox.hold` then :meth:`Outbox.push` queue several, written now.
A client that lets ``size`` frames pile up is hung up on with close code 1008 and a reason
("fell behind"). Its backlog is dropped: it is stale to a client that must reconnect anyway.
So nobody else waits for it. What the connection sends at its own pace, a
replay it was asked for, goes through :meth:`Outbox.put_waiting`, which waits for room
instead: a replay longer than the buffer is no sign of a slow client.

:meth:`Outbox.send` is the connection's writer task: it sends the frames in order, then the
close frame. Under hypercorn, the frames waiting when the writer wakes go out together, in
one socket write where the socket takes them (:mod:`orchestrator.server._hypercorn_ws`); elsewhere
one by one through Starlette.

What a session publishes goes out faster. It holds each fact's frames for each client
(:meth:`Outbox.hold`), then pushes them (:meth:`Outbox.push`). When nothing else is writing to
the client's socket, they are written there and then: one ``send()`` for the batch, with no
writer task to wake. Nothing else is writing when no frames are queued before them and no write
of the writer task's or hypercorn's is under way. Only when the socket takes part of them does
the writer task write the rest (:meth:`FrameWriter.write_now`: hypercorn's writers wait for it,
so no frame is cut), and the frames queued meanwhile after it.
"""

from __future__ import annotations

from collections import deque
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
        self._queue: deque[str] = deque()  # frames not yet taken by a write, in order
        self._frames = trio.lowlevel.ParkingLot()  # the writer task waits here for frames
        self._room = trio.lowlevel.ParkingLot()  # put_waiting waits here for room
        self.closing: tuple[int, str] | None = None
        self._hung_up = trio.Event()
        # The socket's writer while the writer task runs under hypercorn (see push).
        self._writer: FrameWriter | None = None
        self._writing = False  # the writer task is writing to the socket

    def put(self, text: str) -> None:
        """Queue ``text`` for the writer task; a client with ``size`` frames waiting is hung
        up on instead."""
        self.hold(text)
        if self._frames:
            self._frames.unpark()

    def hold(self, text: str) -> None:
        """Queue ``text`` to go with the next :meth:`push` (or :meth:`put`): a session
        publishing a batch of facts holds each fact's frames for each client, then pushes
        them, in one write. As :meth:`put`, a client with ``size`` frames waiting is hung
        up on instead."""
        if self.closing is not None:
            return
        if len(self._queue) >= self._size:
            self.hang_up(CLOSE_FELL_BEHIND, f"fell behind: {self._size} messages were waiting")
            return
        self._queue.append(text)

    def push(self) -> None:
        """Write what is queued, now, from the caller's task, when nothing else is writing
        to the socket (one ``send()``, and no writer task to wake); otherwise, or for what
        the socket did not take, the writer task does. Never waits."""
        queue = self._queue
        if not queue:
            return
        writer = self._writer
        if (
            writer is not None
            and not self._writing
            and len(queue) <= MAX_BATCH
            and writer.write_now(queue)
        ):
            queue.clear()
            if self._room:
                self._room.unpark_all()
            if not writer.pending:
                return
        if self._frames:
            self._frames.unpark()  # the rest, or what is queued, is the writer task's

    async def put_waiting(self, text: str) -> None:
        """Queue ``text`` once there is room (nothing, once hung up on)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while self.closing is None and len(self._queue) >= self._size:
            await self._room.park()
        self.put(text)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def hang_up(self, code: int, reason: str) -> None:
        """Close after what is queued (after the frames being written, for one that fell
        behind: its backlog is dropped)."""
        if self.closing is not None:
            return
        self.closing = (code, reason)
        self._hung_up.set()
        if code == CLOSE_FELL_BEHIND:
            self._queue.clear()
        self._frames.unpark_all()
        self._room.unpark_all()
        self._on_hang_up(code, reason)

    def _take(self) -> list[str]:
        """The next frames to write together (at most :data:`MAX_BATCH`)."""
        queue = self._queue
        if len(queue) <= MAX_BATCH:
            batch = list(queue)
            queue.clear()
        else:
            batch = [queue.popleft() for _ in range(MAX_BATCH)]
        if self._room:
            self._room.unpark_all()
        return batch

    async def send(self) -> None:
        """Write every frame, in order, until hung up; then the close frame.

        Under hypercorn, a client that stopped reading cannot hold the connection open
        forever. Once hung up on, it has :data:`CLOSE_TIMEOUT` to take what is left. This task
        may be cancelled in the middle of a write (the connection is torn down, the daemon
        stops). Then the socket is closed under the write."""
        writer = frame_writer(self._websocket)
        if writer is None:
            await self._write_through_starlette()
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._unstick, writer)
            await self._write(writer)
            nursery.cancel_scope.cancel()

    async def _write_through_starlette(self) -> None:
        while True:
            if self._queue:
                text = self._queue.popleft()
                if self._room:
                    self._room.unpark_all()
                await self._websocket.send_text(text)
            elif self.closing is not None:
                break
            else:
                await self._frames.park()
        await self._close()

    async def _write(self, writer: FrameWriter) -> None:
        self._writer = writer if writer.direct else None
        try:
            while True:
                if writer.pending:  # the rest of what push wrote comes first
                    self._writing = True
                    await writer.flush()
                    self._writing = False
                elif self._queue:
                    batch = self._take()
                    self._writing = True
                    await writer.write(batch)
                    self._writing = False
                elif self.closing is not None:
                    break
                else:
                    await self._frames.park()
        finally:
            self._writer = None
            writer.discard()  # torn down with the rest of a write still to go
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
            if self._writing or writer.pending:  # torn down mid-write
                writer.abort()
            raise
        writer.abort()  # hung up on long ago, and still writing
