"""Command tools: a team file's ``[tools.<name>]`` programs, run for a tool call.

Theory of operation
-------------------
:func:`run_command` starts the tool's ``command`` (an argv: no shell) in a new session. So the
program and whatever it starts form one process group. It writes the call's input as JSON (one
line) to its stdin and closes it. It reads stdout and stderr as they come. It keeps the first
``output_limit`` bytes of stdout; the rest is counted and dropped, so a chatty program cannot
fill memory or the journal. It keeps the last ``STDERR_TAIL`` bytes of stderr.
The program ends the call when it has exited and closed both pipes.

* Exit status 0: the call succeeds; its result is stdout (with a note when it was cut).
* Any other status, a signal, or ``timeout`` passing first: the call fails; the message says
  which, then stderr's tail, then stdout.
* The program cannot start (not found, not executable, no such ``cwd``): the call fails
  saying why.
* The caller is cancelled (the turn aborted, the session stopped): the process group gets
  SIGTERM, then SIGKILL ``kill_grace`` seconds later if anything of it is left, and the
  cancellation goes on. A timeout stops it the same way.

When the call ends, in every case, whatever the program left running in its process group
is killed: nothing a tool started outlives its call (a program that must leave something
behind starts it in a session of its own).

What the program is told (:func:`command_environment`):

- an allow-listed environment (:mod:`._tool_environment`: PATH, HOME, the locale... never the
  daemon's keys and tokens);
- the variables the tool's ``env_passthrough`` names;
- the tool's ``env`` table;
- ``ORCHESTRATOR_GROUP_ID``: the session id, the ``group_id`` of a view update it posts;
- ``ORCHESTRATOR_TOOL_CALL_ID``;
- ``ORCHESTRATOR_CALLBACK_URL``: the daemon's ``POST /callback``;
- ``ORCHESTRATOR_CALLBACK_TOKEN``: a token made for this call
  (:meth:`ToolCallback.call_token`). ``POST /callback`` takes it for the call's own session
  only, and only until the call ends.

A tool can thus post into its own session and no other. A token it lets out (a program that
prints its environment) is dead by the time anyone reads it. The call's recorded output shows
it as ``[redacted]`` all the same. The daemon's
configured ``tool`` tokens are for programs outside it. Without a daemon (``orchestrator
run``) the two callback variables are whatever the orchestrator's own environment holds, if
anything.

Calls are independent: each has its own process, pipes and buffers, so a model may call
command tools, the same one included, concurrently.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import os
import secrets
import signal
import subprocess
from collections.abc import Iterator, Mapping
from typing import Any, Final

import attrs
import structlog
import trio

from orchestrator.spec import CommandTool

from .._tracing import traceparent_headers
from ._tool_environment import tool_environment

__all__ = [
    "CALLBACK_TOKEN_VAR",
    "CALLBACK_URL_VAR",
    "GROUP_ID_VAR",
    "KILL_GRACE",
    "REDACTED_TOKEN",
    "STDERR_TAIL",
    "TOOL_CALL_ID_VAR",
    "TRACEPARENT_VAR",
    "CommandResult",
    "ToolCallback",
    "callback_url",
    "command_environment",
    "group_id",
    "run_command",
]

log = structlog.get_logger("orchestrator.command_tool")

CALLBACK_URL_VAR: Final = "ORCHESTRATOR_CALLBACK_URL"
CALLBACK_TOKEN_VAR: Final = "ORCHESTRATOR_CALLBACK_TOKEN"
GROUP_ID_VAR: Final = "ORCHESTRATOR_GROUP_ID"
TOOL_CALL_ID_VAR: Final = "ORCHESTRATOR_TOOL_CALL_ID"
#: The call's span, as a W3C traceparent, while tracing is on (the OpenTelemetry convention
#: for a child process's environment).
TRACEPARENT_VAR: Final = "TRACEPARENT"

#: Bytes of stdout kept as a call's result; the rest is dropped, with a note saying so.
OUTPUT_LIMIT: Final = 64 * 1024
#: Bytes of stderr kept (its end) for a failed call's message.
STDERR_TAIL: Final = 4 * 1024
#: Seconds between SIGTERM and SIGKILL when a call is stopped (cancelled or timed out).
KILL_GRACE: Final = 2.0

_SESSION_PREFIX: Final = "ahp-session:/"
#: The route of the daemon that takes view updates (see orchestrator.server._app).
_CALLBACK_PATH: Final = "/callback"
_WILDCARDS: Final = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}


#: What a call's token is shown as in the call's recorded output.
REDACTED_TOKEN: Final = "[redacted]"


@attrs.define
class ToolCallback:
    """Where command tools post view updates (the daemon's ``POST /callback``), and the
    tokens of the calls running now, each good for its own session only.

    Not frozen: the daemon makes one before it listens, hands it to every session, and sets
    ``url`` once the server knows its port, so sessions taken up at start see it too.
    """

    url: str | None = None
    # A call token's SHA-256 → the session it may post into. Keyed by digest, so that a
    # lookup's timing says nothing about the tokens themselves.
    _calls: dict[bytes, str] = attrs.field(factory=dict, init=False, repr=False)

    @contextlib.contextmanager
    def call_token(self, session: str) -> Iterator[str]:
        """A new token for one tool call in ``session``: :meth:`session_of` knows it until
        the block ends."""
        token = secrets.token_urlsafe(32)
        key = _digest(token)
        self._calls[key] = session
        try:
            yield token
        finally:
            del self._calls[key]

    def session_of(self, token: str) -> str | None:
        """The session of the running call whose token is ``token``; None if there is none
        (a token never made, or its call has ended)."""
        return self._calls.get(_digest(token))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


@attrs.frozen(kw_only=True)
class CommandResult:
    """What a call came to: ``output`` is the result text, or the failure's message."""

    success: bool
    output: str


def group_id(session: str) -> str:
    """The ``group_id`` of a session's view updates: its id (the URI without its scheme)."""
    return session.removeprefix(_SESSION_PREFIX)


def callback_url(bound: str) -> str:
    """The callback URL of a daemon bound to ``bound`` (``http://HOST:PORT``). A wildcard
    address is reached on loopback: the tools run on the daemon's machine."""
    scheme, _, rest = bound.partition("://")
    host, _, port = rest.rpartition(":")
    return f"{scheme}://{_WILDCARDS.get(host, host)}:{port}{_CALLBACK_PATH}"


def command_environment(
    base: Mapping[str, str],
    tool: CommandTool,
    *,
    session: str,
    tool_call_id: str,
    callback: ToolCallback | None,
    token: str | None = None,
) -> dict[str, str]:
    """The environment of one call of ``tool``.

    It is the allow-listed part of ``base`` (see :func:`tool_environment`), the tool's
    ``env``, then the runtime's variables.

    Args:
        base: The orchestrator's environment.
        tool: The command tool called.
        session: The session; its id is told as ``ORCHESTRATOR_GROUP_ID``.
        tool_call_id: The call's id.
        callback: The daemon's callback. None: no daemon. The callback variables of ``base``,
            if any, then pass through (that is how ``orchestrator run`` is told).
        token: The call's own token (:meth:`ToolCallback.call_token`), told with the daemon's
            URL.
    """
    env = tool_environment(base, tool.env, tool.env_passthrough)
    env[GROUP_ID_VAR] = group_id(session)
    env[TOOL_CALL_ID_VAR] = tool_call_id
    if callback is None:
        told = {name: base.get(name) for name in (CALLBACK_URL_VAR, CALLBACK_TOKEN_VAR)}
    else:
        told = {
            CALLBACK_URL_VAR: callback.url,
            CALLBACK_TOKEN_VAR: token if callback.url is not None else None,
        }
    env.update({name: value for name, value in told.items() if value is not None})
    traceparent = traceparent_headers().get("traceparent")
    if traceparent is not None:
        env[TRACEPARENT_VAR] = traceparent  # the call's span: the program's own spans go under it
    return env


async def run_command(
    tool: CommandTool,
    arguments: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    output_limit: int = OUTPUT_LIMIT,
    kill_grace: float = KILL_GRACE,
) -> CommandResult:
    """Run one call of ``tool`` with input ``arguments``; never raises but Cancelled."""
    data = (json.dumps(arguments, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        process = await trio.lowlevel.open_process(
            list(tool.command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tool.cwd,
            env=dict(env),
            start_new_session=True,  # its own process group: stopped as a whole
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f" (in {tool.cwd})" if tool.cwd is not None else ""
        return CommandResult(
            success=False, output=f"cannot start {tool.name}: {tool.command[0]}{where}: {reason}"
        )
    stdout = _Head(output_limit)
    stderr = _Tail(STDERR_TAIL)
    started = trio.current_time()
    exited = False
    try:
        with trio.move_on_after(tool.timeout.total_seconds()) as deadline:
            async with trio.open_nursery() as nursery:
                assert process.stdin is not None
                assert process.stdout is not None
                assert process.stderr is not None
                nursery.start_soon(_feed, process.stdin, data)
                nursery.start_soon(stdout.drain, process.stdout)
                nursery.start_soon(stderr.drain, process.stderr)
                await process.wait()
                exited = True
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process, kill_grace)
    seconds = round(trio.current_time() - started, 3)
    status = process.returncode
    timeout = _duration(tool.timeout.total_seconds())
    if deadline.cancelled_caught and exited:
        problem = (
            f"{tool.name} exited with status {status}, but what it started kept its output "
            f"open until the timeout ({timeout})"
        )
    elif deadline.cancelled_caught:
        problem = f"{tool.name} timed out after {timeout}"
    elif status == 0:
        log.info("command tool ran", tool=tool.name, status=status, seconds=seconds)
        return CommandResult(success=True, output=stdout.text())
    elif status is not None and status < 0:
        problem = f"{tool.name} was killed by {_signal_name(-status)}"
    else:
        problem = f"{tool.name} exited with status {status}"
    log.info("command tool failed", tool=tool.name, problem=problem, seconds=seconds)
    parts = [problem]
    if stderr.data:
        cut = f" (its last {len(stderr.data)} of {stderr.total} bytes)" if stderr.cut else ""
        parts.append(f"stderr{cut}:\n{stderr.text()}")
    if stdout.kept:
        parts.append(f"stdout:\n{stdout.text()}")
    return CommandResult(success=False, output="\n".join(parts))


async def _feed(stream: trio.abc.SendStream, data: bytes) -> None:
    # A program may exit or close its stdin without reading it all: its choice.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        async with stream:
            await stream.send_all(data)


async def _stop(process: trio.Process, grace: float) -> None:
    """Stop what is left of ``process``'s group: SIGTERM while the program runs, SIGKILL
    after ``grace`` seconds; then SIGKILL whatever else of its group is left."""
    if process.returncode is None:
        _signal_group(process, signal.SIGTERM)
        with trio.move_on_after(grace):
            await process.wait()
    _signal_group(process, signal.SIGKILL)
    await process.wait()


def _signal_group(process: trio.Process, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # nothing of the group is left
        os.killpg(process.pid, signum)


class _Head:
    """The first ``limit`` bytes of a stream, and how many more there were."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        async with stream:
            async for chunk in stream:
                room = self.limit - len(self.kept)
                self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        # A character cut in two at the limit is left out, not shown as U+FFFD.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(bytes(self.kept), final=not self.dropped)
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes not shown]"
        return text


class _Tail:
    """The last ``limit`` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = b""
        self.total = 0

    @property
    def cut(self) -> bool:
        return self.total > len(self.data)

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        async with stream:
            async for chunk in stream:
                self.total += len(chunk)
                self.data = (self.data + chunk)[-self.limit :]

    def text(self) -> str:
        data = self.data
        while data and data[0] & 0xC0 == 0x80:  # starts inside a character: skip its rest
            data = data[1:]
        return data.decode("utf-8", errors="replace")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _duration(seconds: float) -> str:
    """``300`` → ``"5m"``, ``5400`` → ``"1h30m"``, the way a team file writes it."""
    whole = int(seconds)
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts) or f"{seconds}s"
