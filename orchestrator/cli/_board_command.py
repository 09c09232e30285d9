"""``orchestrator board SESSION ...``: a person works a session's board on the running daemon.

``list`` prints the board (``--json`` its JSON); ``claim ITEM``, ``comment ITEM TEXT``,
``block ITEM REASON [--waiting-for WHO]``, ``unblock ITEM``, ``done ITEM [--summary TEXT]`` and
``assign ITEM WHO`` (an agent's name, or a person as ``@principal``) each send one request to
the daemon's ``POST /api/sessions/ID/board``. The daemon records it as board facts attributed
to the token's principal, or refuses it, saying why (an item someone else claimed, a
dependency not done...). SESSION and the token are found as for ``orchestrator end``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO
from urllib.parse import quote

import httpx
import trio

from orchestrator.base import RunError, UnavailableError
from orchestrator.core import Board, ItemStatus
from orchestrator.protocols import board_from_json

from ._conventions import EXIT_OK
from ._end_command import SESSION_PREFIX, _running_session
from ._serve_command import daemon_base
from ._teammates_client import read_token, teammates_url

__all__: list[str] = []


def board(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator board SESSION OPERATION ...``."""
    wanted = args.session.removeprefix(SESSION_PREFIX)
    if not wanted:
        raise RunError("SESSION is empty: give an id the web view or `orchestrator sessions` shows")
    http = teammates_url(daemon_base(args)).removesuffix("/teammates").replace("ws", "http", 1)
    token = read_token(args.token_file)
    session = trio.run(_running_session, http, wanted, token)
    url = f"{http}/api/sessions/{quote(session, safe='')}/board"
    body = request_body(args)
    answer = trio.run(_call, url, token, body)
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=2), file=out)
    else:
        if body is not None:
            print(f"{args.operation} {args.item}: ok", file=out)
        print(board_table(board_from_json(answer)), file=out)
    return EXIT_OK


def request_body(args: argparse.Namespace) -> dict[str, Any] | None:
    """The request an operation's arguments make (None: ``list`` only reads)."""
    op = args.operation
    if op == "list":
        return None
    body: dict[str, Any] = {"op": op, "item": args.item}
    if op == "comment":
        body["text"] = args.text
    elif op == "block":
        body["reason"] = args.reason
        if args.waiting_for:
            body["waitingFor"] = args.waiting_for
    elif op == "done" and args.summary:
        body["summary"] = args.summary
    elif op == "assign":
        body["assignee"] = args.assignee
    return body


def board_table(board: Board) -> str:
    """The board as ``orchestrator board SESSION list`` prints it: one line per item."""
    if not board.items:
        return "(the board is empty)"
    rows = []
    for item in board.items.values():
        who = "-"
        if item.assignee is not None:
            who = ("@" if item.assignee_kind == "person" else "") + item.assignee
        note = ""
        if item.status == ItemStatus.BLOCKED:
            note = f"  blocked: {item.blocked_reason}"
            if item.waiting_for:
                note += f" (waiting for {item.waiting_for})"
        elif item.claimed_by is not None and item.status != ItemStatus.DONE:
            note = f"  by {item.claimed_by}"
        rows.append(
            f"{item.id:<12} {item.status:<9} {item.priority:<7} {who:<12} {item.title}{note}"
        )
    return "\n".join(rows)


async def _call(url: str, token: str | None, body: dict[str, Any] | None) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx.AsyncClient(headers=headers, timeout=10) as client:
            if body is None:
                response = await client.get(url)
            else:
                response = await client.post(url, json=body)
    except httpx.HTTPError as exc:
        raise UnavailableError(
            f"no daemon answers at {url}: {exc}; name its address with --url"
        ) from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code != 200:
        error = answer.get("error") if isinstance(answer, dict) else None
        raise RunError(f"the daemon refused: HTTP {response.status_code}: {error or '?'}")
    if not isinstance(answer, dict):
        raise RunError(f"the daemon's answer to {url} is not a JSON object")
    return answer
