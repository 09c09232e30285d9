"""The names the daemon answers to: a request whose ``Host`` is another name is refused with
421 before any route sees it, on HTTP and WebSocket handshakes alike.

Why: DNS rebinding. A page at ``http://evil.example:8765`` whose name the attacker then points
at 127.0.0.1 stays ``evil.example`` to the browser. Its requests reach the daemon with
``Host: evil.example:8765`` and a matching ``Origin``, so an origin check alone takes the page
for the daemon's own, and a daemon with no tokens would take it for its local user. The name
is what gives it away: the daemon answers only the names it is served under.

- An IP literal is always answered: rebinding needs a DNS name the attacker controls.
- ``localhost`` and names under ``.localhost`` are always answered: browsers resolve them
  to loopback themselves (RFC 6761), never through the attacker's DNS.
- Any other name only when configured (``server_names``, and the bind ``host`` when it is a
  name); ``"*"`` answers every name, for a daemon behind a proxy that checks them itself.

A request with no ``Host`` at all is answered: no browser sends one, so it is not a page's.
The port is not compared: a proxy or a port forward may change it, and a rebinding page uses
the daemon's own port anyway.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ANY_NAME", "ServedNames", "host_name", "is_served"]

#: ``server_names = ["*"]``: every name is answered.
ANY_NAME: Final = "*"
#: The status of a refusal: "misdirected request", the server is not the one for that name.
MISDIRECTED: Final = 421


def host_name(host: str) -> str | None:
    """The name in a ``Host`` header value (lower case, without port or brackets); None if
    it is not a host at all."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8765
        end = host.find("]")
        rest = host[end + 1 :]
        if end < 0 or (rest and not (rest.startswith(":") and _is_port(rest[1:]))):
            return None
        return host[1:end] or None
    name, colon, port = host.partition(":")
    if colon and not _is_port(port):
        return None
    return name or None


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5


def is_served(host: str | None, names: frozenset[str]) -> bool:
    """Whether a request with ``Host: host`` is for this daemon, served under ``names``
    (lower-case names from the configuration; see the module's docstring for the rule)."""
    if host is None:
        return True
    if ANY_NAME in names:
        return True
    name = host_name(host)
    if name is None:
        return False
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name in names
    return True


class ServedNames:
    """ASGI middleware: refuse (421, a JSON reason) every HTTP request and WebSocket handshake
    whose ``Host`` is not a name this daemon is served under (:func:`is_served`)."""

    def __init__(self, app: ASGIApp, names: Iterable[str]) -> None:
        self.app = app
        self.names = frozenset(name.lower() for name in names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [value for key, value in scope.get("headers", ()) if key == b"host"]
        host = hosts[0].decode("latin-1") if len(hosts) == 1 else None
        if len(hosts) <= 1 and is_served(host, self.names):
            await self.app(scope, receive, send)
            return
        await _refuse(scope, receive, send, host)

    def describe(self) -> str:
        """The names answered besides IP literals and ``localhost``, for the start-up log."""
        return ", ".join(sorted(self.names)) or "(none)"


async def _refuse(scope: Scope, receive: Receive, send: Send, host: str | None) -> None:
    shown = "several Host headers" if host is None else f"the name {host!r:.100}"
    body = json.dumps(
        {
            "error": f"this daemon does not answer to {shown}: add the name to server_names "
            "in its configuration to serve it under that name"
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if scope["type"] == "http":
        headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": MISDIRECTED, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    # A WebSocket handshake: answered with an HTTP response where the server can send one
    # (the ASGI denial-response extension, which hypercorn has), else closed before accept.
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await send(
            {"type": "websocket.http.response.start", "status": MISDIRECTED, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})
