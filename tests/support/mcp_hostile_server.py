"""A hostile MCP server over stdio in plain Python (no SDK: it starts in milliseconds).

It speaks the handshake era as ``tests/support/mcp_raw_server.py`` does, and lists ``echo(text)``
plus whatever its ``--listing`` adds; its ``answer`` tool writes back whatever bytes it is
told to, so one server can give a test hundreds of hostile answers.

``python tests/support/mcp_hostile_server.py [--listing MODE] [--garbage-first] [--silent]``:

* ``--listing``: the tools listed after ``echo`` (see :data:`LISTINGS`): a schema that is not
  a valid JSON Schema, one that is not an object's, one 10,000 levels deep, an empty name, a
  10,000-character name, a name with characters outside ``[A-Za-z0-9_.-]``, a name listed
  twice, 10,000 tools, a 10 MB description, two names that differ only in unsafe characters;
* ``--garbage-first``: writes lines that are not JSON-RPC before it reads anything;
* ``--silent``: reads its input and never answers.

Tools: ``echo(text)``; ``answer(hex, fill=0)``: the answer to this call is the bytes
``hex`` encodes, written as they are followed by a newline, with each ``@ID@`` replaced by
the request's id (as JSON) and each ``@FILL@`` by ``fill`` characters ``x`` (nothing is
written for an empty ``hex``: the call is never answered); ``relist(hex)``: the next
answers to ``tools/list`` are the bytes ``hex`` encodes (``@ID@`` replaced as above), and
the server says its tools changed; it answers this call only once it has answered the
``tools/list`` that follows, so a client whose ``relist`` call returned has read the listing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

_ECHO = {
    "name": "echo",
    "description": "Echo the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
_ANSWER = {
    "name": "answer",
    "description": "Answer with the given bytes.",
    "inputSchema": {
        "type": "object",
        "properties": {"hex": {"type": "string"}, "fill": {"type": "integer"}},
    },
}
_RELIST = {
    "name": "relist",
    "description": "Set the next listing.",
    "inputSchema": {"type": "object", "properties": {"hex": {"type": "string"}}},
}


def _tool(name: str, schema: Any = None, description: str = "A tool.") -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object"} if schema is None else schema,
    }


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


#: What ``--listing`` adds after ``echo``, ``answer`` and ``relist``.
LISTINGS: dict[str, Any] = {
    "none": list,
    "invalid-schema": lambda: [_tool("bad", {"type": 5}), _tool("good")],
    "bad-json-schema": lambda: [
        _tool("bad", {"type": "object", "properties": {"a": {"type": "nonsense"}}}),
        _tool("good"),
    ],
    "string-schema": lambda: [_tool("bad", {"type": "string"}), _tool("good")],
    "array-schema": lambda: [_tool("bad", ["not", "a", "schema"]), _tool("good")],
    "deep-schema": lambda: [_tool("bad", _deep(10_000)), _tool("good")],
    "empty-name": lambda: [_tool(""), _tool("good")],
    "long-name": lambda: [_tool("n" * 10_000), _tool("good")],
    "bad-chars": lambda: [_tool("a b"), _tool("a/b"), _tool("é"), _tool("good")],
    "duplicate": lambda: [_tool("twice", description="first"), _tool("twice"), _tool("good")],
    "many-tools": lambda: [_tool(f"t{i}") for i in range(10_000)],
    "huge-description": lambda: [_tool("big", description="d" * 10_000_000), _tool("good")],
    "unsafe-pair": lambda: [_tool("a.b"), _tool("a_b"), _tool("a-b")],
}


def send(message: dict[str, Any]) -> None:
    write(json.dumps(message).encode())


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def _filled(template: bytes, ident: Any, fill: int = 0) -> bytes:
    return template.replace(b"@ID@", json.dumps(ident).encode()).replace(b"@FILL@", b"x" * fill)


def serve(listing: str, *, silent: bool) -> None:
    tools = [_ECHO, _ANSWER, _RELIST, *LISTINGS[listing]()]
    next_listing: bytes | None = None
    relisting: Any = None  # the id of the relist call to answer after the next tools/list
    for line in sys.stdin:
        if silent:
            continue
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if ident is None:
            continue  # a notification (initialized, cancelled)
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list" and next_listing is not None:
            write(_filled(next_listing, ident))
            if relisting is not None:
                send({"jsonrpc": "2.0", "id": relisting, "result": {"content": []}})
                relisting = None
            continue
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call" and params.get("name") in {"answer", "relist"}:
            arguments = params.get("arguments") or {}
            template = bytes.fromhex(arguments.get("hex", ""))
            if params["name"] == "relist":
                next_listing, relisting = template, ident
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                continue
            if template:  # else never answered
                write(_filled(template, ident, int(arguments.get("fill", 0))))
            continue
        elif method == "tools/call":
            text = str((params.get("arguments") or {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": ident, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listing", choices=sorted(LISTINGS), default="none")
    parser.add_argument("--garbage-first", action="store_true")
    parser.add_argument("--silent", action="store_true")
    options = parser.parse_args()
    sys.setrecursionlimit(50_000)  # json.dumps of the 10,000-level schema
    print("hostile server starting", file=sys.stderr, flush=True)
    if options.garbage_first:
        write(b"Server ready! \xff\xfe not json")
        write(b'{"hello": "world"}')
    serve(options.listing, silent=options.silent)


if __name__ == "__main__":
    main()
