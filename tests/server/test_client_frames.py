"""What a WebSocket client sends, frame by frame, within its rate limit
(``server/_client_frames``); the limit met by a real client: tests/server/test_load.py."""

from __future__ import annotations

import contextlib
from typing import Any

import trio
import trio.testing
from starlette.types import Message
from starlette.websockets import WebSocket

from orchestrator.server import TokenBucket
from orchestrator.server._client_frames import client_frames


class ScriptedClient:
    """The ASGI side of an accepted WebSocket whose client sends ``script``: each entry a
    message, or a number of seconds to wait (on trio's clock) before the next."""

    def __init__(self, script: list[Message | float]) -> None:
        self.script = list(script)

    async def receive(self) -> Message:
        while self.script:
            step = self.script.pop(0)
            if isinstance(step, int | float):
                await trio.sleep(step)
                continue
            return step
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(self, message: Message) -> None:
        raise AssertionError(f"nothing is sent here: {message}")

    def websocket(self) -> WebSocket:
        scope: dict[str, Any] = {"type": "websocket", "path": "/ws", "headers": []}
        websocket = WebSocket(scope, self.receive, self.send)
        websocket.client_state = websocket.client_state.CONNECTED
        websocket.application_state = websocket.application_state.CONNECTED
        return websocket


def text(value: str) -> Message:
    return {"type": "websocket.receive", "text": value}


DISCONNECT: Message = {"type": "websocket.disconnect", "code": 1000}


async def frames_of(
    script: list[Message | float], bucket: TokenBucket
) -> tuple[list[str | bytes], list[str]]:
    """The frames ``client_frames`` yields for ``script``, and what ``dropped`` was told."""
    told: list[str] = []
    websocket = ScriptedClient(script).websocket()
    with trio.fail_after(60):
        async with contextlib.aclosing(
            client_frames(websocket, bucket, dropped=told.append)
        ) as frames:
            got = [frame async for frame in frames]
    return got, told


async def test_text_and_bytes_frames_in_order_until_the_disconnect(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bucket = TokenBucket(rate=100, burst=10, now=trio.current_time())
    script: list[Message | float] = [
        text("one"),
        {"type": "websocket.receive", "bytes": b"\x00two"},
        {"type": "websocket.receive", "bytes": None, "text": None},
        text(""),
        DISCONNECT,
        text("after the disconnect"),
    ]
    got, told = await frames_of(script, bucket)
    assert got == ["one", b"\x00two", b"", ""]
    assert told == []


async def test_frames_past_the_burst_are_dropped_and_said_then_pass_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Bursts of 2 at 1 a second: 4 frames at once, 2 pass and 2 are dropped; a second
    later one more passes."""
    bucket = TokenBucket(rate=1, burst=2, now=trio.current_time())
    script: list[Message | float] = [text("a"), text("b"), text("c"), text("d")]
    script += [1.0, text("e"), text("f"), DISCONNECT]
    got, told = await frames_of(script, bucket)
    assert got == ["a", "b", "e"]
    assert told == ["more than 1 messages a second (bursts of 2): this one was dropped"] * 3


async def test_a_steady_client_within_the_rate_loses_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bucket = TokenBucket(rate=2.5, burst=1, now=trio.current_time())
    script: list[Message | float] = []
    for n in range(20):
        script += [0.5, text(str(n))]
    got, told = await frames_of([*script, DISCONNECT], bucket)
    assert got == [str(n) for n in range(20)]
    assert told == []
