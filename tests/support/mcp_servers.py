"""MCP servers for the tests, written with the SDK's ``MCPServer`` (formerly FastMCP).

As a program (``python tests/support/mcp_servers.py [--start-delay S] [--exit-at-once]``) it is a
stdio server; :func:`serve_http` serves the same tools over streamable HTTP on a loopback
port, inside the test's trio run (hypercorn's trio worker, the daemon's own server: no
thread, no second event loop, and the ``nursery`` fixture stops it).

The tools:

* ``add(a, b)``: their sum (text and structured content); the SDK refuses input that is
  not two integers (its own validation: ``isError``).
* ``fail(message)``: raises, so the result is ``isError`` with the message.
* ``only_structured(n)``: structured content and no text.
* ``picture()``: an image and a text.
* ``crash(code)``: writes to stderr, then exits with status ``code`` (mid-call).
* ``slow(seconds, marker)``: writes ``started`` to the file ``marker``, sleeps; if its
  request is cancelled, writes ``cancelled`` to it first.
* ``getenv(name)``: the variable's value in the server's environment, or ``"<unset>"``.
* ``grow(name)``: adds a tool ``name`` and says the list changed (both protocol eras).
* ``pid()``: the server program's process id.
* ``traceparent()``: the W3C trace context the call came with (``_meta``, and its HTTP
  request's header), as ``{"meta": ..., "header": ...}``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import trio
import trio.testing
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

#: Run this file with the tests' interpreter to get the stdio server.
STDIO_SERVER = (sys.executable, str(Path(__file__).resolve()))

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def make_server(
    *,
    on_slow: Callable[[], None] | None = None,
    on_slow_cancelled: Callable[[], None] | None = None,
) -> MCPServer:
    """The probe server; in the tests' own process, ``on_slow`` and ``on_slow_cancelled``
    tell when ``slow`` starts and when its request is cancelled."""
    server = MCPServer("probe")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Fail with the message given.")
    def fail(message: str) -> str:
        raise ToolError(message)  # the SDK hides the message of any other exception

    @server.tool(description="Structured content only.")
    def only_structured(n: int) -> mcp_types.CallToolResult:
        return mcp_types.CallToolResult(content=[], structured_content={"n": n, "double": 2 * n})

    @server.tool(description="An image and a caption.")
    def picture() -> list[mcp_types.ContentBlock]:
        return [
            mcp_types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
            mcp_types.TextContent(text="a tiny picture"),
        ]

    @server.tool(description="Exit mid-call.")
    def crash(code: int) -> str:
        print("crashing on purpose: the tail of stderr", file=sys.stderr, flush=True)
        os._exit(code)

    @server.tool(description="Sleep; tell a file when it started and if it was cancelled.")
    async def slow(seconds: float, marker: str = "") -> str:
        if on_slow is not None:
            on_slow()
        if marker:
            Path(marker).write_text("started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            if marker:
                Path(marker).write_text("cancelled")
            if on_slow_cancelled is not None:
                on_slow_cancelled()
            raise
        return f"slept {seconds}"

    @server.tool(description="An environment variable of the server.")
    def getenv(name: str) -> str:
        return os.environ.get(name, "<unset>")

    @server.tool(description="Add a tool and say the list changed.")
    async def grow(name: str, ctx: Context) -> str:
        def grown() -> str:
            return f"{name} grown"

        server.add_tool(grown, name=name, description=f"Grown as {name}.")
        await ctx.notify_tools_changed()  # 2026-07-28: to subscriptions/listen streams
        await ctx.request_context.session.send_tool_list_changed()  # earlier: to the session
        return "grown"

    @server.tool(description="The server's process id.")
    def pid() -> int:
        return os.getpid()

    @server.tool(description="The trace context the call came with: _meta, and header.")
    def traceparent(ctx: Context) -> dict[str, Any]:
        meta: Mapping[str, Any] = ctx.request_context.meta or {}
        headers = getattr(ctx.request_context.request, "headers", None) or {}
        return {"meta": meta.get("traceparent"), "header": headers.get("traceparent")}

    return server


class HeaderRecorder:
    """An ASGI wrapper that keeps the headers of every request the app receives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


@asynccontextmanager
async def serve_http(
    server: MCPServer | None = None, port: int = 0
) -> AsyncIterator[tuple[str, HeaderRecorder]]:
    """Serve ``server`` (a new :func:`make_server` by default) over streamable HTTP on a
    loopback port (``port``, or any free one); yields its URL and the recorder of the
    headers it received."""
    from hypercorn.config import Config
    from hypercorn.trio import serve

    app = HeaderRecorder((server or make_server()).streamable_http_app())
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.graceful_timeout = 0.5
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, app, config)
        yield f"{binds[0]}/mcp", app
        nursery.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--exit-at-once", action="store_true")
    options = parser.parse_args()
    if options.exit_at_once:
        print("refusing to start: exit at once", file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(options.start_delay)
    make_server().run()


if __name__ == "__main__":
    main()


#: What every stdio server of these tests may see of the test process's environment.
BASE_ENV = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}


def seconds(value: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=value)
