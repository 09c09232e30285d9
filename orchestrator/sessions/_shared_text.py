"""A text sent to many clients as it is: one session's frame, made once for all its clients.

The transport frames it once too: the first WebSocket writer that sends it on a connection
without extensions keeps its frame in :attr:`SharedText.frame`, and every such connection is
sent those same bytes (see :func:`orchestrator.server._hypercorn_ws.framed`). The sessions
make the texts; the framing is the server's, so this is the only part of it they know.
"""

from __future__ import annotations

__all__ = [
    "SharedText",
]


class SharedText(str):
    """A text frame sent to many clients, as it is (a ``str``), and its WebSocket frame,
    kept by the first writer that frames it (:attr:`frame`, ``None`` until then)."""

    frame: bytes | None = None
