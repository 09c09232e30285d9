"""MCP tool servers: one connection per ``[mcp.<name>]`` server of a team, kept open.

Theory of operation
-------------------
:class:`McpServers` is a service of a team's runtime: ``await nursery.start(servers.run)``.
``run`` starts a supervisor task per server, which connects (starts the program, over
stdio: see :mod:`._mcp_stdio`; or reaches the URL, over streamable HTTP), does the MCP
handshake and lists the server's tools, all within the server's ``start_timeout``. ``run``
reports started once every server has been listed or has failed: a server that fails
stops neither the others nor the team. A connection (one MCP client session) then stays
open in its supervisor's task until it is lost or ``run`` is cancelled; cancelling ``run``
closes every connection and stops every program, its whole process group with it.

Listing. :meth:`McpServers.definitions` are the listed tools, keyed by the name a team file
gives them (``mcp.<server>/<tool>``). Servers come in file order, each server's tools in its
listing order, with the server's description and its own input schema. Only the tools that
can be offered are there:

- a name the MCP specification allows, listed once;
- a valid JSON Schema of an object;
- a function name no other tool has;
- at most :data:`MCP_MAX_TOOLS`, descriptions cut.

Each other one is dropped with a warning naming it (see :func:`._mcp_listing.offerable`). A
stdio transport has already dropped those that are not MCP tools at all. A server's tools are
listed again when it says they changed:

- on a 2026-07-28 connection, through a ``subscriptions/listen`` stream its supervisor keeps
  open (when the server's capabilities say ``tools.listChanged``);
- on an earlier one, through the ``notifications/tools/list_changed`` the session hands to its
  message handler.

Each change of the definitions increments :attr:`McpServers.version` (see
:meth:`McpServers.wait_definitions_changed`). A server that is down keeps its last listing: its
tools are still offered, and calling one starts it again.

Calls. :meth:`McpServers.call` runs in the caller's task, on the server's one connection
(concurrent calls share it: each is one JSON-RPC request). It is bounded by the server's
``timeout``: past it, the awaiting scope is cancelled, which makes the SDK send
``notifications/cancelled`` for the request, and the call fails saying so. Cancelling the
caller cancels the request the same way, and the cancellation goes on.

Failures are results (:class:`McpResult` with ``success`` False), never exceptions: a
message naming the server, what happened and, for a stdio server, the end of its stderr.
A result's text and a failure's message are cut to :data:`MCP_OUTPUT_LIMIT`; structured
content is kept only when its JSON fits in it. A stdio server's answers have passed the
input gate in its transport (:mod:`._mcp_stdio`). A refused answer is an error answer with the
code ``REFUSED_ANSWER``. A line that breaks the stream is a lost connection whose reason says
what the server wrote.
A server's state is a small machine::

    starting ──listed──▶ ready ──lost──▶ down ──a call──▶ starting
        └─────failed───────────────────▶ down (until retry_at)

A call finds its server in one of three states:

- ready: it calls;
- starting: it waits for that start's outcome;
- down: once ``retry_at`` has passed, it asks the supervisor for a new start and waits for its
  outcome. Inside the backoff window it fails at once with the last error and when the next
  attempt will be.

After a failed start the window is :data:`BACKOFF_FIRST` seconds, doubled at each failed start in a
row, at most :data:`BACKOFF_MAX`; a start that lists ends the series. A server lost after it listed
is started again at the next call, at once. Times are ``trio.current_time()``, so a test's
``MockClock`` drives the backoff.

What a server is told:

- a stdio program gets the allow-listed environment (:func:`tool_environment`: never the
  daemon's secrets, unless its table names them in ``env_passthrough``);
- an HTTP server gets its table's ``headers``, and its ``env_headers`` read from the
  orchestrator's environment when it is contacted.

Logs name servers, never header or environment values.

The MCP SDK costs about a second to import: it is imported only when a server is started.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
import structlog
import trio

from orchestrator.spec import MCP_PREFIX, McpServer, ToolDefinition, mcp_tool_ref

from .._tracing import traceparent_headers
from ._command_tool import KILL_GRACE, _duration
from ._mcp_listing import MCP_MAX_TOOLS, offerable
from ._mcp_results import McpResult, call_result, failed_result
from ._mcp_stdio import (
    OUTPUT_CLOSED,
    REFUSED_ANSWER,
    ProgramNotStartedError,
    StdioProcess,
    stdio_transport,
    validation_text,
)
from ._tool_environment import tool_environment

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.client._transport import TransportStreams
    from mcp.client.session import IncomingMessage

__all__ = [
    "BACKOFF_FIRST",
    "BACKOFF_MAX",
    "McpListing",
    "McpServers",
    "list_server_tools",
]

log = structlog.get_logger("orchestrator.mcp")

#: Seconds before a server that failed to start is tried again; doubled at each failure.
BACKOFF_FIRST: Final = 1.0
#: The longest wait between two attempts to start a server.
BACKOFF_MAX: Final = 30.0
#: How long a call that lost its server waits for the connection's end (the program
#: stopped, its stderr read), so its message can say how the server ended.
_TEARDOWN_WAIT: Final = 4 * KILL_GRACE
#: Pages of a tools/list a server may answer: a cursor that never ends cannot hang a start.
_MAX_PAGES: Final = 100
#: The code the SDK gives a request whose connection closed (mcp_types.CONNECTION_CLOSED).
_CONNECTION_CLOSED: Final = -32000


@attrs.frozen(kw_only=True)
class McpListing:
    """One server's tools, as :func:`list_server_tools` found them, or why it could not."""

    server: str
    definitions: tuple[ToolDefinition, ...] = ()
    error: str | None = None


@attrs.define(eq=False)
class _Connection:
    """One start of a server: its client session once it has listed, and its end."""

    server: str
    client: Client | None = None
    lost: trio.Event = attrs.field(factory=trio.Event)  # set: tear it down
    ended: trio.Event = attrs.field(factory=trio.Event)  # set: torn down, the error known
    relist: trio.Event = attrs.field(factory=trio.Event)  # set: the server's tools changed
    reason: str | None = None  # why it was lost

    def lose(self, reason: str) -> None:
        if not self.lost.is_set():
            self.reason = reason
            self.lost.set()

    async def on_message(self, message: IncomingMessage) -> None:
        """The session's message handler: what the server sends besides answers."""
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.relist.set()
        elif isinstance(message, Exception):
            log.debug("mcp server sent a bad message", server=self.server, problem=str(message))
        await trio.lowlevel.checkpoint()


@attrs.define(eq=False)
class _Server:
    """A server's state (see the module's doc)."""

    spec: McpServer
    tools: tuple[mcp_types.Tool, ...] = ()  # the last listing, kept while it is down
    live: _Connection | None = None  # ready: listed, not torn down
    # The start in progress (set when it has listed or failed), or None.
    starting: trio.Event | None = None
    wanted: trio.Event = attrs.field(factory=trio.Event)  # set: a call asks for a start
    error: str | None = None  # why the last start failed, or how the server was lost
    failures: int = 0  # failed starts in a row
    retry_at: float = -math.inf  # no start before this trio time
    process: StdioProcess | None = None  # the last start's program (stdio)

    @property
    def name(self) -> str:
        return self.spec.name


class _StartRefusedError(Exception):
    """A server that cannot be contacted as its table says (a header's variable unset)."""


class McpServers:
    """A team's MCP tool servers: one connection each, for the team's lifetime (see the
    module's doc). Knows nothing of sessions: a daemon may share one per team."""

    # How the client negotiates the protocol version: "auto" (2026-07-28 when the server
    # speaks it, else the initialize handshake); tests set "legacy" to speak the latter.
    _protocol_mode: str = "auto"

    def __init__(
        self,
        servers: Sequence[McpServer],
        environ: Mapping[str, str] | None = None,
        *,
        backoff_first: float = BACKOFF_FIRST,
        backoff_max: float = BACKOFF_MAX,
    ) -> None:
        self._servers = {spec.name: _Server(spec) for spec in servers}
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._backoff_first = backoff_first
        self._backoff_max = backoff_max
        self._running = False
        self._definitions: dict[str, ToolDefinition] = {}
        self._version = 0
        self._changed = trio.Event()
        self._started = trio.Event()

    @property
    def version(self) -> int:
        """Incremented at each change of :meth:`definitions`."""
        return self._version

    def definitions(self) -> Mapping[str, ToolDefinition]:
        """The listed tools, keyed ``mcp.<server>/<tool>``: servers in file order, tools in
        each server's listing order. A new mapping at each change; treat as read-only."""
        return self._definitions

    def errors(self) -> dict[str, str]:
        """The servers that are not connected, in file order, with why: the last start's
        failure, or how the connection was lost (empty when every server is listed)."""
        return {
            name: server.error or f"MCP server '{name}' is not connected"
            for name, server in self._servers.items()
            if server.live is None or server.live.lost.is_set()
        }

    async def wait_started(self) -> None:
        """Wait until :meth:`run` has started: every server listed or failed once. A runtime
        sharing servers another task runs waits here before its first model round, so the
        tools it offers are those listed."""
        await self._started.wait()

    async def wait_definitions_changed(self, version: int) -> int:
        """Wait until :attr:`version` is no longer ``version``; return the new one."""
        while self._version == version:
            await self._changed.wait()
        return self._version

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect to every server and keep the connections until cancelled; started once
        every server has listed its tools or failed."""
        if self._running:
            raise RuntimeError("McpServers.run is already running")
        try:
            async with trio.open_nursery() as nursery:
                self._running = True
                first_starts = []
                for server in self._servers.values():
                    server.starting = trio.Event()
                    first_starts.append(server.starting)
                    nursery.start_soon(self._supervise, server)
                for started in first_starts:
                    await started.wait()
                self._started.set()
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._running = False

    async def call(self, name: str, arguments: Mapping[str, Any]) -> McpResult:
        """Call the tool a team file calls ``name`` (``mcp.<server>/<tool>``) with
        ``arguments``; never raises but Cancelled."""
        ref = mcp_tool_ref(name)
        server = self._servers.get(ref.server) if ref is not None else None
        if ref is None or server is None or ref.is_wildcard:
            known = ", ".join(repr(s) for s in self._servers) or "none"
            return failed_result(f"{name!r} is not a tool of this team's MCP servers ({known})")
        connection = await self._connection(server)
        if isinstance(connection, str):
            return failed_result(connection)
        assert connection.client is not None
        if not any(tool.name == ref.tool for tool in server.tools):
            listed = ", ".join(tool.name for tool in server.tools) or "none"
            return failed_result(
                f"MCP server '{server.name}' has no tool {ref.tool!r}; it lists: {listed}"
            )
        timeout = server.spec.timeout.total_seconds()
        try:
            with trio.move_on_after(timeout) as deadline:
                result = await connection.client.call_tool(
                    ref.tool, dict(arguments), meta=_trace_meta()
                )
        except Exception as exc:
            return await self._call_failed(server, connection, ref.tool, exc)
        if deadline.cancelled_caught:
            log.info("mcp call timed out", server=server.name, tool=ref.tool, seconds=timeout)
            return failed_result(
                f"MCP server '{server.name}': {ref.tool} timed out after "
                f"{_duration(timeout)} (its request was cancelled)"
            )
        return call_result(result)

    async def _connection(self, server: _Server) -> _Connection | str:
        """The server's live connection, starting it if it is down and its backoff has
        passed; else why there is none."""
        if not self._running:
            return f"MCP server '{server.name}' is not running (the team's servers are stopped)"
        live = server.live
        if live is not None and not live.lost.is_set():
            return live
        if server.starting is None:
            now = trio.current_time()
            if now < server.retry_at:
                return _with_retry(server.error, server.retry_at - now)
            server.starting = trio.Event()
            server.wanted.set()
        await server.starting.wait()
        live = server.live
        if live is not None:
            return live
        error = server.error or f"MCP server '{server.name}' did not start"
        return _with_retry(error, server.retry_at - trio.current_time())

    async def _call_failed(
        self, server: _Server, connection: _Connection, tool: str, exc: Exception
    ) -> McpResult:
        from mcp.shared.exceptions import MCPError

        leaf = _leaf(exc)
        lost = connection.lost.is_set() or _is_transport_failure(leaf)
        if isinstance(leaf, MCPError) and not lost:
            if leaf.error.code == REFUSED_ANSWER:  # refused by our transport
                return failed_result(
                    f"MCP server '{server.name}': {tool} failed: {leaf.error.message}"
                )
            # The server answered with an error: the connection is fine.
            return failed_result(f"MCP server '{server.name}' refused {tool}: {leaf.error.message}")
        if isinstance(leaf, ValueError) and not lost:  # the SDK's validation of the answer
            return failed_result(
                f"MCP server '{server.name}': {tool} failed: its answer is not a valid "
                f"tool result: {validation_text(leaf)}"
            )
        if not lost:
            return failed_result(f"MCP server '{server.name}': {tool} failed: {_text(leaf)}")
        connection.lose(f"its connection failed during a call: {_text(leaf)}")
        with trio.move_on_after(_TEARDOWN_WAIT):
            await connection.ended.wait()
        return failed_result(server.error or f"MCP server '{server.name}' stopped during {tool}")

    async def _supervise(self, server: _Server) -> None:
        """Start the server, hold its connection while it lasts, and start it again when a
        call asks; until cancelled."""
        while True:
            await self._start(server)
            await server.wanted.wait()
            server.wanted = trio.Event()

    async def _start(self, server: _Server) -> None:
        connection = _Connection(server.name)
        began = trio.current_time()
        scope = trio.CancelScope(deadline=began + server.spec.start_timeout.total_seconds())
        problem: Exception | None = None
        try:
            with scope:
                async with (
                    self._open(server, connection) as client,
                    trio.open_nursery() as nursery,
                ):
                    # Subscribed before listing, so no change between the two is missed.
                    if _tells_changes(client):
                        await nursery.start(self._listen, server, connection, client)
                    tools = await _list_tools(client, server.name)
                    scope.deadline = math.inf
                    connection.client = client
                    self._listed(server, connection, tools, trio.current_time() - began)
                    nursery.start_soon(self._relist, server, connection, client)
                    await connection.lost.wait()
                    nursery.cancel_scope.cancel()
        except Exception as exc:
            problem = exc
        except BaseException:
            self._settle(server, connection, None, timed_out=False, stopping=True)
            raise
        self._settle(server, connection, problem, timed_out=scope.cancelled_caught)

    @contextlib.asynccontextmanager
    async def _open(self, server: _Server, connection: _Connection) -> AsyncIterator[Client]:
        """A client session with the server: its program started, or its URL reached."""
        from mcp import Client
        from mcp_types import Implementation

        spec = server.spec
        transport: contextlib.AbstractAsyncContextManager[TransportStreams]
        if spec.url is not None:
            transport = _http_transport(spec.url, self._headers(spec))
        else:
            server.process = StdioProcess()
            transport = stdio_transport(
                spec.name,
                spec.command,
                env=tool_environment(self._environ, spec.env, spec.env_passthrough),
                cwd=spec.cwd,
                process_info=server.process,
                on_end=connection.lose,
            )
        client = Client(
            transport,
            mode=self._protocol_mode,
            cache=None,  # listings are taken when the server says they changed, not cached
            message_handler=connection.on_message,
            client_info=Implementation(name="orchestrator", version=_version()),
        )
        async with client:
            yield client

    def _headers(self, spec: McpServer) -> dict[str, str]:
        headers = dict(spec.headers)
        for header, variable in spec.env_headers.items():
            value = self._environ.get(variable)
            if value is None:
                raise _StartRefusedError(
                    f"MCP server '{spec.name}': its header {header} is read from the "
                    f"environment variable {variable}, which is not set"
                )
            headers[header] = value
        return headers

    async def _listen(
        self,
        server: _Server,
        connection: _Connection,
        client: Client,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep a subscriptions/listen stream open, the 2026-07-28 way a server tells that
        its tools changed (the session also hands each event to the message handler);
        started once the server has acknowledged it."""
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _event in subscription:
                    connection.relist.set()
        except Exception as exc:
            problem = _text(_leaf(exc))
            if not started:
                # Its tools are still listed now; they will not be again on a change.
                log.warning(
                    "mcp server refused to tell changes", server=server.name, problem=problem
                )
                task_status.started()
                return
            # A server that ends the stream has gone away (the SDK's text says to listen
            # again: a new connection will).
            log.debug("mcp listen stream ended", server=server.name, problem=problem)
            connection.lose("its stream of changes (subscriptions/listen) broke off")

    async def _relist(self, server: _Server, connection: _Connection, client: Client) -> None:
        while True:
            await connection.relist.wait()
            connection.relist = trio.Event()
            try:
                with trio.move_on_after(server.spec.timeout.total_seconds()) as deadline:
                    tools = await _list_tools(client, server.name)
            except Exception as exc:
                leaf = _leaf(exc)
                if _is_transport_failure(leaf):
                    connection.lose(f"listing its tools again failed: {_text(leaf)}")
                    return
                log.warning("mcp tools not listed", server=server.name, problem=_text(leaf))
                continue
            if deadline.cancelled_caught:
                connection.lose("listing its tools again timed out")
                return
            server.tools = tools
            if self._rebuild():
                log.info("mcp tools changed", server=server.name, tools=len(tools))

    def _listed(
        self,
        server: _Server,
        connection: _Connection,
        tools: tuple[mcp_types.Tool, ...],
        took: float,
    ) -> None:
        server.live = connection
        server.tools = tools
        server.error = None
        server.failures = 0
        self._rebuild()
        log.info(
            "mcp server started",
            server=server.name,
            transport=server.spec.transport,
            tools=len(tools),
            seconds=round(took, 3),
        )
        _release(server)

    def _settle(
        self,
        server: _Server,
        connection: _Connection,
        problem: Exception | None,
        *,
        timed_out: bool,
        stopping: bool = False,
    ) -> None:
        """Record how a start ended: it failed, the connection was lost, or run stopped."""
        if server.live is connection:
            server.live = None
        if stopping:
            server.error = f"MCP server '{server.name}' was stopped"
            _release(server)
        elif connection.client is not None:
            server.error = self._lost_message(server, connection, problem)
            server.retry_at = trio.current_time()  # started again at the next call, at once
            log.warning("mcp server stopped", server=server.name, reason=_first_line(server.error))
        else:
            server.error = self._start_problem(
                server, problem, timed_out=timed_out, reason=connection.reason
            )
            server.failures += 1
            delay = min(self._backoff_first * 2 ** (server.failures - 1), self._backoff_max)
            server.retry_at = trio.current_time() + delay
            log.warning(
                "mcp server failed to start",
                server=server.name,
                problem=_first_line(server.error),
                failures=server.failures,
                retry_in=delay,
            )
            _release(server)
        connection.ended.set()

    def _lost_message(
        self, server: _Server, connection: _Connection, problem: Exception | None
    ) -> str:
        process = server.process
        what = connection.reason or (
            _text(_leaf(problem)) if problem is not None else "its connection closed"
        )
        broke = connection.reason not in (None, OUTPUT_CLOSED)  # it broke the stream
        if (
            not broke
            and process is not None
            and process.exited_by_itself
            and process.returncode is not None
        ):
            what = f"its program {process.exit_text()}"
        return _with_stderr(f"MCP server '{server.name}' stopped: {what}", server)

    def _start_problem(
        self,
        server: _Server,
        problem: Exception | None,
        *,
        timed_out: bool,
        reason: str | None = None,
    ) -> str:
        from mcp.shared.exceptions import MCPError

        spec = server.spec
        name = server.name
        leaf = _leaf(problem) if problem is not None else None
        process = server.process if spec.url is None else None
        if timed_out:
            seconds = spec.start_timeout.total_seconds()
            message = f"MCP server '{name}' did not start within {_duration(seconds)}"
        elif isinstance(leaf, _StartRefusedError | ProgramNotStartedError):
            return str(leaf)
        elif process is not None and reason not in (None, OUTPUT_CLOSED):
            message = f"MCP server '{name}' failed to start: {reason}"
        elif process is not None and isinstance(leaf, MCPError):
            ended = process.exit_text() or "closed its output"
            message = (
                f"MCP server '{name}' stopped before it answered the handshake: its program {ended}"
            )
        elif spec.url is not None and _is_transport_failure(leaf):
            message = (
                f"MCP server '{name}' cannot be reached at {_safe_url(spec.url)}: {_text(leaf)}"
            )
        else:
            message = f"MCP server '{name}' failed to start: {_text(leaf)}"
        return _with_stderr(message, server)

    def _rebuild(self) -> bool:
        """Make the definitions again from the listings; whether they changed."""
        definitions: dict[str, ToolDefinition] = {}
        function_names: dict[str, str] = {}
        for server in self._servers.values():
            for tool in server.tools:
                name = f"{MCP_PREFIX}{server.name}/{tool.name}"
                definition = ToolDefinition(
                    name=name,
                    description=tool.description or "",
                    parameters=json.loads(json.dumps(tool.input_schema)),  # plain JSON, a copy
                )
                # A model calls a tool by its function name: two tools under one would be
                # one tool to it (a hash in the name makes that unlikely, not impossible).
                taken = function_names.setdefault(definition.function_name, name)
                if taken != name:
                    log.warning(
                        "mcp tool dropped",
                        server=server.name,
                        tool=tool.name,
                        problem=f"its function name {definition.function_name} is {taken}'s",
                    )
                    continue
                definitions[name] = definition
        if definitions == self._definitions:
            return False
        self._definitions = definitions
        self._version += 1
        self._changed.set()
        self._changed = trio.Event()
        return True


async def list_server_tools(
    server: McpServer, environ: Mapping[str, str] | None = None
) -> McpListing:
    """Connect to ``server`` once, list its tools and close: what ``teams check --tools``
    shows. A server that cannot start gives its error, not an exception."""
    servers = McpServers([server], environ)
    async with trio.open_nursery() as nursery:
        await nursery.start(servers.run)
        listing = McpListing(
            server=server.name,
            definitions=tuple(servers.definitions().values()),
            error=servers.errors().get(server.name),
        )
        nursery.cancel_scope.cancel()
    return listing


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: Mapping[str, str]) -> AsyncIterator[TransportStreams]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # No read timeout: a call is bounded by its server's timeout, and a subscriptions/listen
    # stream is quiet until something changes.
    timeout = httpx2.Timeout(30.0, read=None)
    async with (
        httpx2.AsyncClient(headers=dict(headers), timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _trace_meta() -> mcp_types.RequestParamsMeta | None:
    """The call's span as the request's ``_meta.traceparent`` (MCP's place for W3C trace
    context: a server's tool runs in the caller's trace); None when tracing is off."""
    carried = traceparent_headers()
    if not carried:
        return None
    meta: mcp_types.RequestParamsMeta = {}
    meta.update(carried)  # type: ignore[typeddict-item]
    return meta


def _version() -> str:
    """The orchestrator's version, as a client tells a server."""
    import importlib.metadata

    try:
        return importlib.metadata.version("team-orchestrator")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def _tells_changes(client: Client) -> bool:
    """Whether a subscriptions/listen stream is how ``client``'s server tells that its tools
    changed (a 2026-07-28 connection, and its capabilities say so)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = client.server_capabilities.tools
    return (
        client.protocol_version in MODERN_PROTOCOL_VERSIONS
        and tools is not None
        and bool(tools.list_changed)
    )


async def _list_tools(client: Client, server: str) -> tuple[mcp_types.Tool, ...]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or len(tools) > MCP_MAX_TOOLS:
            break
    return offerable(server, tools)


def _release(server: _Server) -> None:
    """Wake the calls waiting for the server's start."""
    if server.starting is not None:
        server.starting.set()
        server.starting = None


def _with_stderr(message: str, server: _Server) -> str:
    process = server.process if server.spec.url is None else None
    stderr = process.stderr_text() if process is not None else ""
    return f"{message}\n{stderr}" if stderr else message


def _with_retry(error: str | None, seconds: float) -> str:
    text = error or "the server is down"
    if seconds <= 0:
        return text
    return f"{text}\n(the next attempt to start it is in {_duration(math.ceil(seconds))})"


def _leaf(exc: BaseException) -> BaseException:
    """The first exception that is not a group: what the SDK's task groups wrapped."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _is_transport_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the connection itself failed (not the server's answer)."""
    import anyio
    import httpx2
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        return exc.error.code == _CONNECTION_CLOSED
    return isinstance(
        exc,
        httpx2.TransportError
        | OSError
        | anyio.BrokenResourceError
        | anyio.ClosedResourceError
        | trio.BrokenResourceError
        | trio.ClosedResourceError,
    )


def _text(exc: BaseException | None) -> str:
    if exc is None:
        return "no reason given"
    return str(exc) or type(exc).__name__


def _first_line(text: str) -> str:
    return text.partition("\n")[0]


def _safe_url(url: str) -> str:
    """``url`` without its user information (a password in a URL is not for logs)."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"
