"""A minimal MCP server over stdio in plain Python: no SDK, so it starts in milliseconds.

It speaks the handshake era (``initialize``; it refuses the 2026-07-28 ``server/discover``
probe, so a client falls back) and sends ``notifications/tools/list_changed`` on its own,
as servers of that era do. The tests use it where a start's timing matters (a start
slower than ``start_timeout``, then one within it) and where the SDK's import would cost
more than the test.

``python tests/support/mcp_raw_server.py [--start-delay S] [--delay-once FILE] [--exit-at-once]``:
``--delay-once`` sleeps ``S`` only when ``FILE`` does not exist yet (and creates it), so
the first start is slow and the next ones are not.

Tools: ``echo(text)``; ``grow(name)`` adds a tool ``name`` and says the list changed;
``spawn()`` starts a child (``sleep``) in the server's process group and returns the
server's pid and the child's; ``getenv(name)``: a variable of its environment, or
``"<unset>"``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ECHO = {
    "name": "echo",
    "description": "Echo the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
_GROW = {
    "name": "grow",
    "description": "Add a tool.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
_SPAWN = {"name": "spawn", "description": "Start a child.", "inputSchema": {"type": "object"}}
_GETENV = {
    "name": "getenv",
    "description": "A variable of the server's environment.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve() -> None:
    tools = [_ECHO, _GROW, _SPAWN, _GETENV]
    children = []
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if ident is None:
            continue  # a notification (initialized, cancelled)
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call" and params.get("name") in {t["name"] for t in tools}:
            name, arguments = params["name"], params.get("arguments") or {}
            if name == "grow":
                tools.append({**_ECHO, "name": arguments["name"]})
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                text = "grown"
            elif name == "spawn":
                children.append(subprocess.Popen(["sleep", "60"]))
                text = f"{os.getpid()} {children[-1].pid}"
            elif name == "getenv":
                text = os.environ.get(arguments["name"], "<unset>")
            else:
                text = str(arguments.get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": ident, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--delay-once", type=Path)
    parser.add_argument("--exit-at-once", action="store_true")
    options = parser.parse_args()
    print("raw server starting", file=sys.stderr, flush=True)
    if options.exit_at_once:
        print("refusing to start: exit at once", file=sys.stderr, flush=True)
        sys.exit(3)
    if options.delay_once is None or not options.delay_once.exists():
        if options.delay_once is not None:
            options.delay_once.touch()
        time.sleep(options.start_delay)
    serve()


if __name__ == "__main__":
    main()
