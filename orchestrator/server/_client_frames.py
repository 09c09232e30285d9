"""What a WebSocket client sends, frame by frame, within its rate limit."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

import trio
from starlette.websockets import WebSocket

from ._rate_limit import TokenBucket

__all__: list[str] = []


async def client_frames(
    websocket: WebSocket, bucket: TokenBucket, *, dropped: Callable[[str], None]
) -> AsyncGenerator[str | bytes, None]:
    """Each frame the client sends until it disconnects (use it in ``contextlib.aclosing``).
    A frame over the rate limit is dropped, and ``dropped`` is told why (the client should
    hear it)."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        frame: str | bytes | None = message.get("text")
        if frame is None:
            frame = message.get("bytes") or b""
        if not bucket.take(trio.current_time()):
            dropped(
                f"more than {bucket.rate:g} messages a second (bursts of {bucket.burst}): "
                "this one was dropped"
            )
            continue
        yield frame
