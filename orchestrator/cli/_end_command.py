"""``orchestrator end SESSION``: end a conversation the running daemon holds.

A daemon session is a conversation: it takes prompt after prompt until a client ends it (or
the daemon's ``idle_conversation`` limit does). This command is such a client: it attaches to
the session on ``/ws`` (as the web view does) and sends ``end``. The daemon records the
session ``completed`` if it waits for its next message. Otherwise it cancels what it is doing
and records it ``cancelled``. The session can then be pruned. SESSION is the id the web
view and ``orchestrator sessions`` show, its URI, or the start of the id when one running
session has it. The token comes from ``ORCHESTRATOR_TOKEN`` or ``--token-file``, as for
``orchestrator teammates``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
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
#: Running sessions listed to find the one an id's start names (the daemon lists at most 2,000).
RUNNING_LISTED = 2000
#: The fewest characters of an id that may name its session.
MIN_PREFIX = 4


def end(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator end SESSION``."""
    wanted = args.session.removeprefix(SESSION_PREFIX)
    if not wanted:
        raise RunError("SESSION is empty: give an id the web view or `orchestrator sessions` shows")
    base = teammates_url(daemon_base(args)).removesuffix("/teammates")
    token = read_token(args.token_file)
    http = base.replace("ws", "http", 1)
    session = trio.run(_running_session, http, wanted, token)
    url = f"{base}/ws?session={quote(session, safe='')}"
    # Attached to, an ended session shows its end as if it ended now: ask first.
    status = trio.run(_status, f"{http}/api/sessions/{quote(session, safe='')}", token)
    if status != "running":
        raise RunError(f"session {session} has ended already ({status}): nothing to end")
    status = trio.run(_end, url, token)
    print(f"session {session} ended: {status}", file=out)
    return EXIT_OK


async def _running_session(http: str, wanted: str, token: str | None) -> str:
    """The id of the session ``wanted`` names, from the daemon's running sessions."""
    listed = await _get(f"{http}/api/sessions?status=running&limit={RUNNING_LISTED}", token)
    return session_named([str(row.get("id")) for row in listed.get("sessions") or ()], wanted)


def session_named(running: Sequence[str], wanted: str) -> str:
    """The id ``wanted`` names among the ``running`` sessions' ids: itself when one has that
    id or none starts with it (the daemon's answer for it then says why), else the one whose
    id starts with it. Several such sessions are an error that lists them."""
    if wanted in running:
        return wanted
    # Like git, a start of fewer than four characters names nothing: too easy to mistype.
    matching = [s for s in running if len(wanted) >= MIN_PREFIX and s.startswith(wanted)]
    if len(matching) > 1:
        shown = ", ".join(matching[:5]) + (", ..." if len(matching) > 5 else "")
        raise RunError(
            f"{len(matching)} running sessions start with {wanted!r} ({shown}): give more of the id"
        )
    return matching[0] if matching else wanted


async def _status(url: str, token: str | None) -> str:
    """The session's status as the daemon at ``url`` (its ``/api/sessions/ID``) lists it."""
    return str((await _get(url, token)).get("status"))


async def _get(url: str, token: str | None) -> dict[str, Any]:
    """The JSON object the daemon answers ``GET url`` with; an error names its refusal."""
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
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise RunError(f"the daemon's answer to {url} is not a JSON object")
    return answer


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
