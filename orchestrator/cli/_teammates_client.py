"""``orchestrator teammates ...``: ask the running daemon about its background teammates.

One WebSocket request to ``/teammates`` (see :mod:`orchestrator.protocols._teammate_channel`) per
command: send it with an ``id``, print the answer that carries that ``id``. The token, when the
daemon wants one, comes from ``ORCHESTRATOR_TOKEN`` or ``--token-file`` (never the command line,
where ``ps`` shows it to every user of the machine).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError, open_websocket_url

from orchestrator.base import ConfigError, RunError, UnavailableError, register_secret

from ._conventions import TOKEN_ENV

__all__: list[str] = []

#: The environment variable a CLI token is read from.
#: How long a command waits for the daemon (a trigger answers once its wake is recorded).
TIMEOUT_SECONDS = 30.0


def teammates_url(base: str) -> str:
    """The ``/teammates`` WebSocket URL of a daemon at ``base`` (``http://host:port``,
    ``ws://...``, or ``host:port``)."""
    given = base
    # Without a scheme only ``host:port`` is an address: a bare word is more likely a
    # mistake (a session id, a team name) than a daemon on port 80.
    bare = "://" not in base
    if bare:
        base = f"http://{base}"
    parts = urlsplit(base)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    try:
        port = parts.port
    except ValueError:
        port = None
        scheme = None  # a port that is not a number in 0..65535
    if scheme is None or not parts.hostname or (bare and port is None):
        raise ConfigError(
            "expected the daemon's address, like http://127.0.0.1:8765 or 127.0.0.1:8765; "
            f"got {given!r}",
            file="--url",
        )
    return urlunsplit((scheme, parts.netloc, "/teammates", "", ""))


def read_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The client's token (from ``token_file``, else ``$ORCHESTRATOR_TOKEN``), registered
    for redaction: whatever this process logs never shows it."""
    if token_file is not None:
        try:
            token: str | None = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the token: {exc.strerror}", file=str(token_file)
            ) from None
    else:
        token = environ.get(TOKEN_ENV) or None
    if token:
        register_secret(token)
    return token


async def request(url: str, message: dict[str, Any], *, token: str | None) -> dict[str, Any]:
    """Send ``message`` to the daemon's ``/teammates`` at ``url``; its answer.

    :class:`RunError` when there is no daemon there, it refuses the token, or it answers
    with an error (whose message it carries).
    """
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
    message = {**message, "id": 1}
    try:
        with trio.fail_after(TIMEOUT_SECONDS):
            async with open_websocket_url(
                url, extra_headers=headers, connect_timeout=10, disconnect_timeout=5
            ) as connection:
                await connection.send_message(json.dumps(message))
                while True:
                    answer = json.loads(await connection.get_message())
                    if answer.get("id") == 1 or (
                        answer.get("type") == "error" and "id" not in answer
                    ):
                        break
    except ConnectionRejected as exc:
        detail = rejection(exc)
        raise RunError(f"the daemon at {url} refused the connection: {detail}") from None
    except (OSError, HandshakeError) as exc:
        # trio-websocket's HandshakeError says nothing itself: the reason is its cause.
        reason = str(exc) or str(exc.__cause__ or "") or "the connection failed"
        raise UnavailableError(
            f"no daemon answers at {url}: {reason}; start one with `orchestrator serve`, "
            "or name its address with --url"
        ) from None
    except ConnectionClosed as exc:
        raise UnavailableError(f"the daemon closed the connection: {exc.reason}") from None
    except trio.TooSlowError:
        raise UnavailableError(
            f"the daemon at {url} did not answer in {TIMEOUT_SECONDS:g} s"
        ) from None
    if answer.get("type") == "error":
        raise RunError(f"{answer.get('message')} ({answer.get('code')})")
    return answer  # type: ignore[no-any-return]


def rejection(exc: ConnectionRejected) -> str:
    """What a daemon that refused a WebSocket handshake said: its status and error."""
    body = exc.body or b""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    return f"HTTP {exc.status_code}" + (f": {error}" if error else "")


def print_answer(command: str, answer: Mapping[str, Any], out: TextIO, *, as_json: bool) -> None:
    """Print the daemon's answer to ``command`` for a person, or as JSON."""
    if command == "list":
        teammates: Sequence[Mapping[str, Any]] = answer["teammates"]
        if as_json:
            print(json.dumps(list(teammates), indent=2, ensure_ascii=False), file=out)
            return
        if not teammates:
            print("no background teammates (add [[background]] to a team file)", file=out)
            return
        rows = [("TEAMMATE", "STATE", "SCHEDULE", "NEXT WAKE", "LAST RUN")]
        rows += [
            (
                f"{teammate['team']}/{teammate['name']}",
                str(teammate["state"]),
                str(teammate["schedule"]),
                teammate["nextWake"] or "-",
                _run_line(teammate["lastRun"]),
            )
            for teammate in teammates
        ]
        _table(rows, out)
    elif command == "history":
        runs: Sequence[Mapping[str, Any]] = answer["runs"]
        if as_json:
            print(json.dumps(list(runs), indent=2, ensure_ascii=False), file=out)
            return
        if not runs:
            print(f"{answer['teammate']} has not run yet", file=out)
            return
        rows = [("START", "END", "OUTCOME", "REASON", "SESSION")]
        rows += [
            (
                run["start"],
                run["end"] or "-",
                run["outcome"] or "running",
                run["reason"],
                run["session"],
            )
            for run in runs
        ]
        _table(rows, out)
    else:
        if as_json:
            print(json.dumps(dict(answer), indent=2, ensure_ascii=False), file=out)
            return
        teammate = answer["teammate"]
        key = f"{teammate['team']}/{teammate['name']}"
        if command == "trigger":
            said = {
                "start": f"{key}: a run started",
                "queue": f"{key}: a run is going; this one runs after it",
                "replace": f"{key}: the running run is stopped; a new one starts",
                "skip": f"{key}: a run is going (overlap = skip): nothing started",
            }[answer["decision"]]
        elif answer["changed"]:
            said = {"pause": "paused", "resume": "resumed", "stop": "run stopped"}[command]
            said = f"{key}: {said}"
        else:
            said = {
                "pause": "was paused already",
                "resume": "was not paused",
                "stop": "no run was going",
            }[command]
            said = f"{key}: {said}"
        print(said, file=out)


def _run_line(run: Mapping[str, Any] | None) -> str:
    if run is None:
        return "-"
    return f"{run['outcome'] or 'running'} at {run['end'] or run['start']}"


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(), file=out
        )
