"""``orchestrator end SESSION``: end a conversation the running daemon holds.

A daemon session is a conversation: it takes prompt after prompt until a client ends it (or
the daemon's ``idle_conversation`` limit does). This command is such a client: it attaches to
the session on ``/ws`` (as the web view does) and sends ``end``; the daemon records the
session ``completed`` if it waits for its next message, or cancels what it is doing and
records it ``cancelled``, and the session can then be pruned. The token comes from
``ORCHESTRATOR_TOKEN`` or ``--token-file``, as for ``orchestrator teammates``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO
from urllib.parse import quote

import httpx
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError, open_websocket_url

from orchestrator.base import RunError, UnavailableError

from ._conventions import EXIT_OK
from ._serve_command import daemon_base
from ._teammates_client import TIMEOUT_SECONDS, read_token, rejection, teammates_url

__all__: list[str] = []

SESSION_PREFIX = "ahp-session:/"


def end(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator end SESSION``."""
    session = args.session.removeprefix(SESSION_PREFIX)
    base = teammates_url(daemon_base(args)).removesuffix("/teammates")
    url = f"{base}/ws?session={quote(session, safe='')}"
    token = read_token(args.token_file)
    # Attached to, an ended session shows its end as if it ended now: ask first.
    http = base.replace("ws", "http", 1)
    status = trio.run(_status, f"{http}/api/sessions/{quote(session, safe='')}", token)
    if status != "running":
        raise RunError(f"session {session} has ended already ({status}): nothing to end")
    status = trio.run(_end, url, token)
    print(f"session {session} ended: {status}", file=out)
    return EXIT_OK


async def _status(url: str, token: str | None) -> str:
    """The session's status as the daemon at ``url`` (its ``/api/sessions/ID``) lists it."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx.AsyncClient(headers=headers, timeout=10) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        raise UnavailableError(
            f"no daemon answers at {url}: {exc}; name its address with --url"
        ) from None
    if response.status_code != 200:
        try:
            error = response.json().get("error")
        except (ValueError, AttributeError):
            error = None
        raise RunError(f"the daemon refused: HTTP {response.status_code}: {error or '?'}")
    return str(response.json().get("status"))


async def _end(url: str, token: str | None) -> str:
    """Attach to the session at ``url``, ask it to end, and wait until it has: how it ended."""
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
    try:
        with trio.fail_after(TIMEOUT_SECONDS):
            async with open_websocket_url(
                url, extra_headers=headers, connect_timeout=10, disconnect_timeout=5
            ) as connection:
                sent = False
                while True:
                    event: dict[str, Any] = json.loads(await connection.get_message())
                    kind = event.get("type")
                    if kind == "init" and not sent:
                        await connection.send_message(
                            json.dumps({"channel": "agent", "type": "end"})
                        )
                        sent = True
                    elif kind == "error" and event.get("channel") == "agent":
                        raise RunError(f"{event.get('message')} ({event.get('code')})")
                    elif kind == "session_ended":
                        return str(event.get("status") or event.get("reason") or "ended")
    except ConnectionRejected as exc:
        raise RunError(f"the daemon refused: {rejection(exc)}") from None
    except (OSError, HandshakeError) as exc:
        reason = str(exc) or str(exc.__cause__ or "") or "the connection failed"
        raise UnavailableError(
            f"no daemon answers at {url}: {reason}; the session can be ended only by the "
            "daemon that holds it (name its address with --url)"
        ) from None
    except ConnectionClosed as exc:
        raise UnavailableError(f"the daemon closed the connection: {exc.reason}") from None
    except trio.TooSlowError:
        raise UnavailableError(f"the session did not end in {TIMEOUT_SECONDS:g} s") from None
