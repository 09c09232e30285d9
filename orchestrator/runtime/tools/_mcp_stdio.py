"""The stdio transport of an MCP server: its program, started and stopped as a process group.

Theory of operation
-------------------
:func:`stdio_transport` is an MCP SDK ``Transport`` (an async context manager yielding the
session's read and write streams) for a server whose ``[mcp.<name>]`` table has a
``command``. It is ours rather than the SDK's ``stdio_client`` for four reasons:

- the program gets exactly the allow-listed environment (the SDK adds variables of the
  daemon's own environment to whatever it is given);
- its stderr comes through a pipe we read (the last :data:`STDERR_TAIL` bytes are kept, for
  the message of a call that fails);
- its exit status is known (so a message can say "exited with status 3");
- when the connection ends, everything left in its process group is killed, not only the
  program.

Three tasks bridge the program's pipes to the session's in-memory streams:

- stdout is read line by line, each line checked as one JSON-RPC message (see below);
- messages the session writes go to stdin, one per line;
- stderr is drained into its :class:`StdioProcess` tail.

When stdout ends (the program exited or closed it, or it broke the stream), the read stream is
closed. So the session fails its waiting requests with "connection closed". ``on_end`` is
called with why.

A server is a peer we do not control. So each line passes the input gate
(:func:`orchestrator.base.parse_json`: depth, integer size, no NaN, lone surrogates replaced)
and the JSON-RPC message types before the session sees it. The transport remembers which
request each id it sent was. An answer to a pending request that fails a check becomes an
error answer to that request (code :data:`REFUSED_ANSWER`, the message naming the field). So
that call fails and the connection goes on. So does a ``tools/call`` answer whose ``isError``
is not a boolean. A ``tools/list`` answer loses the tools that are not valid MCP tools (each
dropped with a warning naming the server and the tool), not the rest. A well-formed answer
whose id is no pending request (answered already, or never sent) is dropped with a warning
naming the server and the id. The calls waiting go on waiting for their own answers, and the
connection goes on. Some lines break the stream: a line that cannot be read (not JSON, nested
too deep to read, not a JSON-RPC message) and cannot be tied to a pending request, or one
longer than :data:`MAX_LINE`. Then the connection ends, its calls fail saying why, and the
next call starts the server again.

Leaving the context stops the program the way the MCP specification's shutdown section
says:

- stdin is closed;
- the program has ``grace`` seconds to exit;
- then its process group gets SIGTERM and, ``grace`` seconds later, SIGKILL;
- whatever is left of the group then is killed too.

This runs shielded, every wait bounded, so a cancelled caller neither leaks a
server nor hangs on one.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
import structlog
import trio

from orchestrator.base import PeerProtocolError, parse_json

from ._command_tool import KILL_GRACE, STDERR_TAIL, _signal_name, _stop, _Tail

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams

# Private to the runtime: used by ._mcp only.
__all__: list[str] = []

log = structlog.get_logger("orchestrator.mcp")

#: The longest line (one JSON-RPC message) a server may write: past it, its connection is
#: closed as broken rather than buffered without bound.
MAX_LINE: Final = 16 * 1024 * 1024
#: Why a stream ended when the server ended it; any other reason says how it broke it.
OUTPUT_CLOSED: Final = "it closed its output"
#: The JSON-RPC error code of an answer the transport refused in the server's stead (its
#: message says why); in the range JSON-RPC leaves to implementations.
REFUSED_ANSWER: Final = -32098
#: Requests remembered as pending: a server that never answers cannot grow the table.
_MAX_PENDING: Final = 10_000


@attrs.define(eq=False)
class StdioProcess:
    """What the runtime knows of one start of a stdio server's program."""

    tail: _Tail = attrs.field(factory=lambda: _Tail(STDERR_TAIL))
    # Set once stderr has reached its end (the program and its children closed it).
    stderr_closed: trio.Event = attrs.field(factory=trio.Event)
    # The program's exit status (negative: the signal), once it has exited.
    returncode: int | None = None
    # Whether the program exited before the runtime had to signal it.
    exited_by_itself: bool = False

    def exit_text(self) -> str:
        """How the program ended, for a message: "exited with status 3", "was killed by
        SIGKILL"; "" while it runs."""
        status = self.returncode
        if status is None:
            return ""
        if status < 0:
            return f"was killed by {_signal_name(-status)}"
        return f"exited with status {status}"

    def stderr_text(self) -> str:
        """Its stderr's end, as a message's last lines ("" when it wrote nothing)."""
        tail = self.tail
        if not tail.data:
            return ""
        cut = f" (its last {len(tail.data)} of {tail.total} bytes)" if tail.cut else ""
        return f"stderr{cut}:\n{tail.text().rstrip()}"


class ProgramNotStartedError(Exception):
    """A stdio server's program that cannot be started: the message says which and why."""


@contextlib.asynccontextmanager
async def stdio_transport(
    name: str,
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    process_info: StdioProcess,
    on_end: Callable[[str], None],
    grace: float = KILL_GRACE,
) -> AsyncIterator[TransportStreams]:
    """Start ``command`` and speak MCP over its stdin and stdout (see the module's doc).

    ``on_end`` is called with why the stream ended ("it closed its output", or how it broke).
    Raises :class:`ProgramNotStartedError` when the program cannot be started."""
    import anyio
    from mcp.shared.message import SessionMessage

    try:
        process = await trio.lowlevel.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,  # its own process group: stopped as a whole
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f" (in {cwd})" if cwd is not None else ""
        raise ProgramNotStartedError(
            f"MCP server '{name}' cannot start: {command[0]}{where}: {reason}"
        ) from exc
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

    checker = _Checker(name)

    async def read_stdout() -> None:
        reason = OUTPUT_CLOSED
        try:
            async with read_writer, contextlib.aclosing(_lines(stdout)) as lines:
                async for line in lines:
                    try:
                        item = checker.received(line)
                    except Exception as exc:  # a check's own fault must not end the team
                        log.exception("mcp line not checked", server=name)
                        item = _BrokenStreamError(f"a line of it could not be checked: {exc!r}")
                    if isinstance(item, _BrokenStreamError):
                        reason = str(item)
                        break
                    if isinstance(item, _StrayAnswer):
                        log.warning("mcp answer dropped", server=name, problem=str(item))
                        continue
                    await read_writer.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the session is gone, or we are closing: nothing to tell
        except _LineTooLongError as exc:
            reason = f"it wrote {exc}"
        finally:
            on_end(reason)

    async def write_stdin() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    checker.sent(message.message)
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send_all(data.encode("utf-8") + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError, anyio.ClosedResourceError):
            # The program stopped reading: the session must see the end, not wait forever.
            await read_writer.aclose()

    async def drain_stderr() -> None:
        try:
            await process_info.tail.drain(stderr)
        except trio.ClosedResourceError:
            pass
        finally:
            process_info.stderr_closed.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_stdout)
        nursery.start_soon(write_stdin)
        nursery.start_soon(drain_stderr)
        try:
            yield read_stream, write_stream
        finally:
            with trio.CancelScope(shield=True):
                await _shut_down(process, stdin, grace, process_info)
                # The pipes' tasks end at EOF; bounded, for a child that escaped the group.
                with trio.move_on_after(grace):
                    await process_info.stderr_closed.wait()
                nursery.cancel_scope.cancel()
            for stream in (read_stream, write_stream, read_writer, write_reader):
                stream.close()


async def _shut_down(
    process: trio.Process, stdin: trio.abc.SendStream, grace: float, info: StdioProcess
) -> None:
    """Close stdin, give the program ``grace`` seconds to exit, then stop its group."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stdin.aclose()
    if process.returncode is None:
        with trio.move_on_after(grace):
            await process.wait()
    info.exited_by_itself = process.returncode is not None
    await _stop(process, grace)  # SIGTERM, SIGKILL, then whatever of its group is left
    info.returncode = process.returncode


class _LineTooLongError(Exception):
    """A server wrote a line longer than :data:`MAX_LINE`."""


async def _lines(stream: trio.abc.ReceiveStream) -> AsyncGenerator[str, None]:
    """The lines of ``stream`` (without their newline), decoded as UTF-8."""
    buffer = bytearray()
    async for chunk in stream:
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = buffer[start:end]
            start = end + 1
            if line.strip():
                yield line.decode("utf-8", errors="replace")
        del buffer[:start]
        if len(buffer) > MAX_LINE:
            raise _LineTooLongError(f"a message longer than {MAX_LINE} bytes")
    if buffer.strip():
        yield buffer.decode("utf-8", errors="replace")


class _BrokenStreamError(Exception):
    """A line that breaks the stream: the message says what the server wrote."""


class _StrayAnswer(Exception):  # noqa: N818  # a verdict on a line, raised by no one
    """An answer whose id is no pending request: the message says which id, and why."""


class _Checker:
    """The checks of what a server writes (see the module's doc), and what they need: the
    requests sent and not yet answered, by id, with their method."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.pending: dict[Any, str] = {}
        self.highest_sent = -1  # the SDK numbers its requests 0, 1, 2...
        # The protocol version the session validates answers by: the handshake's, or the
        # 2026-07-28 one once a server/discover probe was answered.
        self.version = "2025-11-25"

    def sent(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.JSONRPCRequest):
            if len(self.pending) >= _MAX_PENDING:  # the oldest, surely never answered
                del self.pending[next(iter(self.pending))]
            self.pending[message.id] = message.method
            if isinstance(message.id, int):
                self.highest_sent = max(self.highest_sent, message.id)

    def received(self, line: str) -> Any:
        """The session message ``line`` holds (an answer refused in the server's stead
        included), or the :class:`_BrokenStreamError` that says why there is none."""
        import mcp_types
        from mcp.shared.message import SessionMessage

        try:
            value = parse_json(line, protocol="MCP", bad_text="replace")
        except PeerProtocolError as refusal:
            problem = f"at {refusal.path}: {refusal.message}"
            return self._refused(_answer_id(line), f"its answer was refused: {problem}", problem)
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)
        except ValueError as exc:
            ident = value.get("id") if isinstance(value, dict) else None
            problem = f"not a JSON-RPC message: {validation_text(exc)}"
            if not isinstance(value, dict) or not ("result" in value or "error" in value):
                ident = None
            elif "result" in value and not isinstance(value["result"], dict):
                problem = f"not a JSON-RPC answer: its result is not an object: {_short(value)}"
            return self._refused(ident, f"its answer is {problem}", problem)
        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            ident = message.id
            method = self.pending.pop(ident, None) if ident is not None else None
            if method is None:
                # Not an answer of any call waiting: dropped (the SDK would drop it without a
                # word, and the call waiting would seem to hang for no reason).
                why = "answered already" if self._was_sent(ident) else "never sent"
                return _StrayAnswer(
                    f"it answered request {_short(json.dumps(ident))}, which is no request "
                    f"waiting ({why})"
                )
            if isinstance(message, mcp_types.JSONRPCResponse):
                if method == "initialize":
                    version = message.result.get("protocolVersion")
                    self.version = version if isinstance(version, str) else self.version
                elif method == "server/discover":
                    self.version = "2026-07-28"
                elif method == "tools/list":
                    self._drop_bad_tools(message.result)
                elif method == "tools/call":
                    refused = _call_answer_problem(message.result)
                    if refused is not None:
                        return _refusal(ident, refused)
        return SessionMessage(message)

    def _was_sent(self, ident: Any) -> bool:
        return isinstance(ident, int) and 0 <= ident <= self.highest_sent

    def _refused(self, ident: Any, message: str, problem: str) -> Any:
        """An error answer to the pending request ``ident`` saying ``message``, or (no such
        request) the stream broken by a line that is ``problem``."""
        # Not a bool: True == 1 would find request 1.
        if type(ident) in (int, str) and self.pending.pop(ident, None) is not None:
            return _refusal(ident, message)
        return _BrokenStreamError(f"it wrote a line that cannot be read: {problem}")

    def _drop_bad_tools(self, result: dict[str, Any]) -> None:
        """Leave out of a tools/list answer each tool that is not a valid MCP tool (of the
        protocol version the session will validate the answer by)."""
        from mcp_types.methods import validate_server_result

        tools = result.get("tools")
        if not isinstance(tools, list):
            return  # the session says what is wrong with the answer
        kept = []
        for index, tool in enumerate(tools):
            try:
                validate_server_result("tools/list", self.version, {**result, "tools": [tool]})
            except KeyError:
                return  # a version the SDK does not know: the session will say so
            except ValueError as exc:
                log.warning(
                    "mcp tool dropped",
                    server=self.server,
                    tool=_tool_label(tool, index),
                    problem="not a valid MCP tool: "
                    + validation_text(exc).replace("at tools.0.", "at ", 1),
                )
            else:
                kept.append(tool)
        result["tools"] = kept


def _refusal(ident: Any, message: str) -> Any:
    import mcp_types
    from mcp.shared.message import SessionMessage

    error = mcp_types.ErrorData(code=REFUSED_ANSWER, message=message)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=ident, error=error))


def _call_answer_problem(result: dict[str, Any]) -> str | None:
    """What the session's validation lets through in a tools/call answer but we do not."""
    is_error = result.get("isError", False)
    if not isinstance(is_error, bool):
        return f"its answer's isError is not a boolean: {_short(is_error)}"
    return None


def _answer_id(line: str) -> Any:
    """The id of the answer ``line`` holds, read leniently (numbers and NaN ignored), for a
    line the gate refused; None when it has none or cannot be read at all."""
    import json

    try:
        value = json.loads(line, parse_int=_small_int, parse_constant=lambda _: None)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and ("result" in value or "error" in value):
        return value.get("id")
    return None


def _small_int(literal: str) -> int | None:
    return int(literal) if len(literal) <= 32 else None


def validation_text(exc: BaseException) -> str:
    """A pydantic validation error in a line: the first problem and where, and how many
    more (its own text repeats the input, at length)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return _short(str(exc), 500)
    found = errors(include_url=False, include_input=False)
    if not found:
        return _short(str(exc), 500)
    first = found[0]
    where = ".".join(str(step) for step in first.get("loc", ())) or "the top"
    more = f" (and {len(found) - 1} more problems)" if len(found) > 1 else ""
    return _short(f"at {where}: {first.get('msg', '')}{more}", 500)


def _tool_label(tool: object, index: int) -> str:
    name = tool.get("name") if isinstance(tool, dict) else None
    return _short(name) if isinstance(name, str) else f"#{index} (no name)"


def _short(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
