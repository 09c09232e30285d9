"""The stdio transport of an MCP server: its program, started and stopped as a process group.

Theory of operation
-------------------
:func:`stdio_transport` is an MCP SDK ``Transport`` (an async context manager yielding the
session's read and write streams) for a server whose ``[mcp.<name>]`` table has a
``command``. It is ours rather than the SDK's ``stdio_client`` for four reasons: the program
gets exactly the allow-listed environment (the SDK adds variables of the daemon's own
environment to whatever it is given), its stderr comes through a pipe we read (the last
:data:`STDERR_TAIL` bytes are kept, for the message of a call that fails), its exit status
is known (so a message can say "exited with status 3"), and when the connection ends
everything left in its process group is killed, not only the program.

Three tasks bridge the program's pipes to the session's in-memory streams: stdout is read
line by line, each line parsed as one JSON-RPC message (a line that is not one reaches the
session as an exception, as the SDK's own transport does); messages the session writes go
to stdin, one per line; stderr is drained into its :class:`StdioProcess` tail. When stdout
ends (the program exited or closed it), the read stream is closed, so the session fails
its waiting requests with "connection closed", and ``on_end`` is called.

Leaving the context stops the program the way the MCP specification's shutdown section
says: stdin is closed, the program has ``grace`` seconds to exit, then its process group
gets SIGTERM and, ``grace`` seconds later, SIGKILL; whatever is left of the group then is
killed too. This runs shielded, every wait bounded, so a cancelled caller neither leaks a
server nor hangs on one.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from ._command_tool import KILL_GRACE, STDERR_TAIL, _signal_name, _stop, _Tail

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams

# Private to the runtime: used by ._mcp only.
__all__: list[str] = []

#: The longest line (one JSON-RPC message) a server may write: past it, its connection is
#: closed as broken rather than buffered without bound.
MAX_LINE: Final = 16 * 1024 * 1024


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
    on_end: Callable[[], None],
    grace: float = KILL_GRACE,
) -> AsyncIterator[TransportStreams]:
    """Start ``command`` and speak MCP over its stdin and stdout (see the module's doc).

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

    async def read_stdout() -> None:
        try:
            async with read_writer, contextlib.aclosing(_lines(stdout)) as lines:
                async for line in lines:
                    await read_writer.send(_parse(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the session is gone, or we are closing: nothing to tell
        except _LineTooLongError as exc:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await read_writer.send(exc)
        finally:
            on_end()

    async def write_stdin() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
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


def _parse(line: str) -> Any:
    """One line of stdout as a session message, or the exception that says why it is not."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)
