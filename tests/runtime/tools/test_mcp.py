"""MCP tool servers (orchestrator.runtime.tools._mcp): real servers, no mocks.

The servers: the SDK's ``MCPServer`` over streamable HTTP, served in the test's own trio
run by hypercorn's trio worker (it starts in milliseconds, and the test can see what the
server saw: headers, a request's cancellation); the same server over stdio, as a program
(``tests/support/mcp_servers.py``); a minimal SDK-less stdio server that starts in milliseconds
(``tests/support/mcp_raw_server.py``: the handshake era, and timing-sensitive starts); and the
third-party ``mcp-server-time``. Starting an SDK server as a program costs about 1.5 s (its
imports), so only the tests that need a program of that kind start one.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from orchestrator.core import SpanFold, parse_traceparent, span_id_of, trace_id_of
from orchestrator.runtime import (
    BACKOFF_MAX,
    McpListing,
    McpServers,
    Tracing,
    TracingSettings,
    in_span,
    install_tracing,
    list_server_tools,
)
from orchestrator.spec import McpServer, ToolDefinition
from tests.support.mcp_servers import BASE_ENV, STDIO_SERVER, make_server, seconds, serve_http
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

RAW_SERVER = (sys.executable, str(PROJECT_ROOT / "tests" / "support" / "mcp_raw_server.py"))
TIME_SERVER = (sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC")


@asynccontextmanager
async def running(
    servers: McpServers | list[McpServer], environ: Mapping[str, str] | None = None
) -> AsyncIterator[McpServers]:
    """``servers`` started (each listed or failed), stopped when the block ends."""
    if not isinstance(servers, McpServers):
        servers = McpServers(servers, BASE_ENV if environ is None else environ)
    async with trio.open_nursery() as nursery:
        await nursery.start(servers.run)
        yield servers
        nursery.cancel_scope.cancel()


class HttpProbe:
    """The probe server on loopback, and what it saw."""

    def __init__(self) -> None:
        self.slow_started = trio.Event()
        self.slow_cancelled = trio.Event()
        self.url = ""
        self.headers: list[dict[str, str]] = []

    def server(self, name: str = "web", **fields: Any) -> McpServer:
        return McpServer(name=name, url=self.url, **fields)


@pytest.fixture
async def probe() -> AsyncIterator[HttpProbe]:
    probe = HttpProbe()
    server = make_server(on_slow=probe.slow_started.set, on_slow_cancelled=probe.slow_cancelled.set)
    async with serve_http(server) as (url, recorder):
        probe.url = url
        probe.headers = recorder.headers
        yield probe


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def running_pid(pid: int) -> bool:
    """Whether process ``pid`` is alive (a zombie, killed but not yet reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


class TestListing:
    async def test_definitions_are_the_servers_tools_with_their_schemas(
        self, probe: HttpProbe
    ) -> None:
        """Each listed tool is a definition named mcp.<server>/<tool>, in listing order,
        with the server's description and input schema (a plain-JSON copy)."""
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                definitions = servers.definitions()
                errors = servers.errors()
        assert errors == {}
        assert list(definitions) == [
            f"mcp.web/{tool}"
            for tool in (
                "add",
                "fail",
                "only_structured",
                "picture",
                "crash",
                "slow",
                "getenv",
                "grow",
                "pid",
                "traceparent",
            )
        ]
        add = definitions["mcp.web/add"]
        assert add == ToolDefinition(
            name="mcp.web/add",
            description="Add two integers.",
            parameters={
                "type": "object",
                "properties": {
                    "a": {"title": "A", "type": "integer"},
                    "b": {"title": "B", "type": "integer"},
                },
                "required": ["a", "b"],
                "title": "addArguments",
            },
        )
        assert add.function_name == "web__add"
        assert type(add.parameters) is dict
        assert json.loads(json.dumps(add.parameters)) == add.parameters
        assert servers.version == 1

    async def test_servers_come_in_file_order(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server("zeta"), probe.server("alpha")]) as servers:
                names = list(servers.definitions())
        assert names[0] == "mcp.zeta/add"
        assert names[10] == "mcp.alpha/add"
        assert len(names) == 20

    async def test_a_stdio_server_is_listed_and_its_calls_share_one_connection(
        self, tmp_path: Path
    ) -> None:
        """The SDK's server as a program: listed at start, then concurrent calls run at
        once on the one connection (one program: one pid)."""
        server = McpServer(name="probe", command=STDIO_SERVER)
        with trio.fail_after(30):
            async with running([server]) as servers:
                assert "mcp.probe/slow" in servers.definitions()
                pids: list[str] = []
                slept: list[bool] = []

                async def call_pid() -> None:
                    result = await servers.call("mcp.probe/pid", {})
                    assert result.success, result.output
                    pids.append(result.output)

                async def call_slow() -> None:
                    result = await servers.call("mcp.probe/slow", {"seconds": 0.5})
                    slept.append(result.success)

                began = trio.current_time()
                async with trio.open_nursery() as nursery:
                    for _ in range(4):
                        nursery.start_soon(call_slow)
                        nursery.start_soon(call_pid)
                took = trio.current_time() - began
        assert slept == [True] * 4
        assert len(pids) == 4
        assert len(set(pids)) == 1
        assert took < 1.9  # four half-second calls, at once

    async def test_the_third_party_time_server_is_listed_and_called(self) -> None:
        server = McpServer(name="time", command=TIME_SERVER)
        with trio.fail_after(30):
            async with running([server]) as servers:
                assert list(servers.definitions()) == [
                    "mcp.time/get_current_time",
                    "mcp.time/convert_time",
                ]
                schema = servers.definitions()["mcp.time/get_current_time"].parameters
                result = await servers.call("mcp.time/get_current_time", {"timezone": "UTC"})
        assert schema["required"] == ["timezone"]
        assert result.success, result.output
        assert json.loads(result.output)["timezone"] == "UTC"
        assert result.structured["timezone"] == "UTC"


class TestCalls:
    async def test_valid_input(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.web/add", {"a": 2, "b": 3})
        assert result.success
        assert result.output == "5"
        assert result.structured == {"result": 5}

    async def test_a_call_in_a_span_carries_its_traceparent(self, probe: HttpProbe) -> None:
        """Tracing on, a call made inside a tool call's span tells the server that span, as
        MCP carries W3C trace context: ``_meta.traceparent``."""
        session, chat, call = "ahp-session:/s", "ahp-chat:/c", "call-1"
        fold = SpanFold(session)
        fold._root_of_chat[chat] = "task-1"
        fold._traces["task-1"] = trace_id_of(session, "task-1")
        before = install_tracing(Tracing(TracingSettings(enabled=True, exporter="console")))
        try:
            with trio.fail_after(10):
                async with running([probe.server()]) as servers:
                    untraced = await servers.call("mcp.web/traceparent", {})
                    with in_span(fold, chat, "tool", chat, call):
                        traced = await servers.call("mcp.web/traceparent", {})
        finally:
            install_tracing(before)
        assert untraced.structured == {"meta": None, "header": None}
        assert traced.structured is not None
        sent = parse_traceparent(traced.structured["meta"])
        assert sent is not None
        assert (sent.trace_id, sent.span_id) == (
            trace_id_of(session, "task-1"),
            span_id_of("tool", chat, call),
        )

    async def test_input_the_server_refuses_fails_with_its_message(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.web/add", {"a": "two", "b": 3})
        assert not result.success
        assert "validation error" in result.output
        assert "a\n  Input should be a valid integer" in result.output

    async def test_a_tool_that_raises_fails_with_its_message(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.web/fail", {"message": "the disk is full"})
        assert not result.success
        assert result.output == "Error executing tool fail: the disk is full"

    async def test_structured_content_without_text_is_compact_json(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.web/only_structured", {"n": 21})
        assert result.success
        assert result.output == '{"n":21,"double":42}'
        assert result.structured == {"n": 21, "double": 42}

    async def test_other_content_is_summarised(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.web/picture", {})
        assert result.success
        assert result.output == "[image: image/png, 8 bytes]\na tiny picture"

    async def test_a_tool_the_server_does_not_list(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.web/nope", {})
        assert not result.success
        assert result.output == (
            "MCP server 'web' has no tool 'nope'; it lists: add, fail, only_structured, "
            "picture, crash, slow, getenv, grow, pid, traceparent"
        )

    async def test_a_server_the_team_does_not_have(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                result = await servers.call("mcp.other/add", {})
                wildcard = await servers.call("mcp.web/*", {})
        assert not result.success
        assert result.output == "'mcp.other/add' is not a tool of this team's MCP servers ('web')"
        assert not wildcard.success

    async def test_a_call_past_its_timeout_fails_and_its_request_is_cancelled(
        self, probe: HttpProbe
    ) -> None:
        with trio.fail_after(10):
            async with running([probe.server(timeout=seconds(0.3))]) as servers:
                result = await servers.call("mcp.web/slow", {"seconds": 30})
                await probe.slow_cancelled.wait()  # the server saw notifications/cancelled
                after = await servers.call("mcp.web/add", {"a": 1, "b": 1})
        assert not result.success
        assert result.output == (
            "MCP server 'web': slow timed out after 0.3s (its request was cancelled)"
        )
        assert after.output == "2"  # the connection goes on

    async def test_cancelling_the_caller_cancels_the_request(self, probe: HttpProbe) -> None:
        """The cancellation goes on (no result), the server's handler is cancelled, and
        the connection serves the next call."""
        results = []
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                with trio.CancelScope() as scope:
                    async with trio.open_nursery() as nursery:

                        async def call() -> None:
                            results.append(await servers.call("mcp.web/slow", {"seconds": 30}))

                        nursery.start_soon(call)
                        await probe.slow_started.wait()
                        scope.cancel()
                await probe.slow_cancelled.wait()
                after = await servers.call("mcp.web/add", {"a": 1, "b": 2})
        assert scope.cancelled_caught
        assert results == []
        assert after.output == "3"


class TestHeaders:
    async def test_literal_and_environment_headers_reach_the_server(self, probe: HttpProbe) -> None:
        server = probe.server(
            headers={"X-Team": "tools"}, env_headers={"Authorization": "TRACKER_TOKEN"}
        )
        with capture_logs() as logs, trio.fail_after(10):
            async with running([server], {"TRACKER_TOKEN": "Bearer s3cret"}) as servers:
                result = await servers.call("mcp.web/add", {"a": 1, "b": 2})
        assert result.success
        assert probe.headers
        for headers in probe.headers:
            assert headers["authorization"] == "Bearer s3cret"
            assert headers["x-team"] == "tools"
        assert logs  # the start was logged, and no log holds a header's value
        assert "s3cret" not in repr(logs)

    async def test_an_unset_variable_fails_the_server_naming_header_and_variable(
        self, probe: HttpProbe
    ) -> None:
        server = probe.server(env_headers={"Authorization": "TRACKER_TOKEN"})
        with trio.fail_after(10):
            async with running([server], {}) as servers:
                result = await servers.call("mcp.web/add", {"a": 1, "b": 2})
        assert not result.success
        assert result.output.startswith(
            "MCP server 'web': its header Authorization is read from the environment "
            "variable TRACKER_TOKEN, which is not set\n(the next attempt to start it is in "
        )
        assert servers.definitions() == {}
        assert probe.headers == []  # never contacted


class TestListChanged:
    async def test_a_listen_stream_brings_the_new_listing(self, probe: HttpProbe) -> None:
        """2026-07-28: the server tells a subscriptions/listen stream."""
        with trio.fail_after(10):
            async with running([probe.server()]) as servers:
                version = servers.version
                assert (await servers.call("mcp.web/grow", {"name": "extra"})).success
                assert await servers.wait_definitions_changed(version) == version + 1
                assert list(servers.definitions())[-1] == "mcp.web/extra"
                assert servers.definitions()["mcp.web/extra"].description == "Grown as extra."
                result = await servers.call("mcp.web/extra", {})
        assert result.output == "extra grown"

    async def test_a_notification_brings_the_new_listing(self) -> None:
        """The handshake era: the server sends notifications/tools/list_changed by itself."""
        server = McpServer(name="raw", command=RAW_SERVER)
        with trio.fail_after(10):
            async with running([server]) as servers:
                version = servers.version
                assert (await servers.call("mcp.raw/grow", {"name": "again"})).success
                assert await servers.wait_definitions_changed(version) == version + 1
                assert "mcp.raw/again" in servers.definitions()

    # The SDK's streamable HTTP client leaves the async generators of its GET stream (the
    # handshake era's) to the garbage collector when it closes: trio cleans them up, and
    # says so with a ResourceWarning.
    @pytest.mark.filterwarnings("ignore:Async generator:ResourceWarning")
    async def test_the_sdk_server_in_the_handshake_era(self, probe: HttpProbe) -> None:
        """The SDK's server, spoken to in the handshake era: it tells the session."""
        servers = McpServers([probe.server()], {})
        servers._protocol_mode = "legacy"
        with trio.fail_after(10):
            async with running(servers):
                version = servers.version
                assert (await servers.call("mcp.web/grow", {"name": "extra"})).success
                assert await servers.wait_definitions_changed(version) == version + 1


class TestFailures:
    async def test_a_server_that_fails_to_start_is_retried_with_backoff(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Each failed start doubles the wait before the next (1 s, 2 s, ... at most 30 s);
        a call inside the wait fails at once, saying when the next attempt is. (A start
        that fails before any IO: a spawn runs in a thread, and the autojump clock would
        jump to the start timeout meanwhile.)"""
        server = McpServer(
            name="web", url="http://127.0.0.1:9/mcp", env_headers={"Authorization": "UNSET"}
        )
        unset = (
            "MCP server 'web': its header Authorization is read from the environment "
            "variable UNSET, which is not set"
        )
        with capture_logs() as logs:
            async with running([server], {}) as servers:
                assert servers.definitions() == {}
                waits = []
                for _ in range(7):
                    started = trio.current_time()
                    result = await servers.call("mcp.web/tool", {})
                    assert trio.current_time() == started  # nothing waited
                    assert not result.success
                    first, _, retry = result.output.partition("\n")
                    assert first == unset
                    again = await servers.call("mcp.web/tool", {})
                    assert again.output == result.output  # inside the window: no attempt
                    wait = float(retry.removeprefix("(the next attempt to start it is in ")[:-2])
                    waits.append(wait)
                    await trio.sleep(wait)
        attempts = [entry for entry in logs if entry["event"] == "mcp server failed to start"]
        assert [entry["retry_in"] for entry in attempts] == [1, 2, 4, 8, 16, 30, 30]
        assert waits == [1, 2, 4, 8, 16, 30, 30]
        assert trio.current_time() == 1 + 2 + 4 + 8 + 16 + 30 + 30
        assert BACKOFF_MAX == 30

    async def test_a_program_that_does_not_exist(self) -> None:
        server = McpServer(name="gone", command=("/nonexistent/mcp-server",))
        with trio.fail_after(10):
            async with running([server]) as servers:
                errors = servers.errors()
                result = await servers.call("mcp.gone/tool", {})
        assert errors == {
            "gone": "MCP server 'gone' cannot start: /nonexistent/mcp-server: No such file or "
            "directory"
        }
        assert result.output == (
            "MCP server 'gone' cannot start: /nonexistent/mcp-server: No such file or "
            "directory\n(the next attempt to start it is in 1s)"
        )

    async def test_a_program_that_exits_at_once(self) -> None:
        server = McpServer(name="raw", command=(*RAW_SERVER, "--exit-at-once"))
        with trio.fail_after(10):
            async with running([server], {}) as servers:
                result = await servers.call("mcp.raw/echo", {})
        assert result.output.startswith(
            "MCP server 'raw' stopped before it answered the handshake: its program exited "
            "with status 3\nstderr:\nraw server starting\nrefusing to start: exit at once\n"
        )

    async def test_a_server_that_exits_mid_call_is_started_again_at_the_next_call(self) -> None:
        server = McpServer(name="probe", command=STDIO_SERVER)
        with trio.fail_after(30):
            async with running([server]) as servers:
                first_pid = (await servers.call("mcp.probe/pid", {})).output
                crashed = await servers.call("mcp.probe/crash", {"code": 4})
                second_pid = (await servers.call("mcp.probe/pid", {})).output
        assert not crashed.success
        first, _, stderr = crashed.output.partition("\n")
        assert first == "MCP server 'probe' stopped: its program exited with status 4"
        assert stderr.startswith("stderr")
        assert stderr.endswith("crashing on purpose: the tail of stderr")
        assert second_pid.isdigit()
        assert second_pid != first_pid

    async def test_a_stdio_call_cancelled_mid_call_reaches_the_program(
        self, tmp_path: Path
    ) -> None:
        marker = tmp_path / "cancelled"
        server = McpServer(name="probe", command=STDIO_SERVER, timeout=seconds(0.5))
        with trio.fail_after(30):
            async with running([server]) as servers:
                result = await servers.call(
                    "mcp.probe/slow", {"seconds": 30, "marker": str(marker)}
                )
                # The program writes it when its handler is cancelled: another process.
                while not marker.exists() or marker.read_text() != "cancelled":  # noqa: ASYNC110
                    await trio.sleep(0.01)  # (polls a file)
        assert "timed out after 0.5s" in result.output

    async def test_a_server_slow_to_start_within_its_start_timeout(self) -> None:
        server = McpServer(
            name="raw", command=(*RAW_SERVER, "--start-delay", "0.5"), start_timeout=seconds(10)
        )
        with trio.fail_after(15):
            began = trio.current_time()
            async with running([server]) as servers:
                took = trio.current_time() - began
                result = await servers.call("mcp.raw/echo", {"text": "hi"})
        assert took >= 0.5
        assert result.output == "hi"

    async def test_a_server_slow_past_its_start_timeout_fails_then_recovers(
        self, tmp_path: Path
    ) -> None:
        """The first start takes too long: it fails (the program is stopped); the next
        call starts it again, quickly this time."""
        once = tmp_path / "started-once"
        command = (*RAW_SERVER, "--start-delay", "60", "--delay-once", str(once))
        server = McpServer(name="raw", command=command, start_timeout=seconds(2))
        servers = McpServers([server], BASE_ENV, backoff_first=0.0)
        with trio.fail_after(15):
            async with running(servers):
                assert servers.definitions() == {}
                state = servers._servers["raw"]
                assert state.process is not None
                assert state.process.returncode is not None  # stopped
                error = state.error
                result = await servers.call("mcp.raw/echo", {"text": "at last"})
        assert error == "MCP server 'raw' did not start within 2s\nstderr:\nraw server starting"
        assert result.output == "at last"

    async def test_a_url_that_refuses_connections(self) -> None:
        url = f"http://127.0.0.1:{unused_port()}/mcp"
        with trio.fail_after(10):
            async with running([McpServer(name="web", url=url)]) as servers:
                result = await servers.call("mcp.web/add", {})
        assert result.output.startswith(f"MCP server 'web' cannot be reached at {url}: ")

    async def test_an_http_server_that_goes_away_is_reached_again_when_it_is_back(
        self,
    ) -> None:
        """Its calls fail naming it while it is away; a call once it is back (here with
        no backoff) connects again."""
        port = unused_port()
        url = f"http://127.0.0.1:{port}/mcp"
        servers = McpServers([McpServer(name="web", url=url)], {}, backoff_first=0.0)
        with trio.fail_after(15):
            async with running(servers):
                async with serve_http(port=port):
                    assert servers.definitions() == {}  # started before the server was
                    first = await servers.call("mcp.web/add", {"a": 1, "b": 2})
                away = await servers.call("mcp.web/add", {"a": 1, "b": 2})
                async with serve_http(port=port):
                    back = await servers.call("mcp.web/add", {"a": 2, "b": 2})
        assert first.output == "3"
        assert not away.success
        assert away.output.startswith("MCP server 'web' ")
        assert back.output == "4"


class TestEnvironment:
    async def test_a_stdio_server_sees_the_allow_list_not_the_daemons_secrets(self) -> None:
        environ = {**BASE_ENV, "DAEMON_SECRET": "s3cret", "SHARED_TOKEN": "granted"}
        server = McpServer(
            name="raw",
            command=RAW_SERVER,
            env={"FROM_TABLE": "set"},
            env_passthrough=("SHARED_TOKEN",),
        )
        seen = {}
        with trio.fail_after(10):
            async with running([server], environ) as servers:
                for name in ("DAEMON_SECRET", "SHARED_TOKEN", "FROM_TABLE", "PATH"):
                    seen[name] = (await servers.call("mcp.raw/getenv", {"name": name})).output
        path = seen.pop("PATH")
        assert seen == {"DAEMON_SECRET": "<unset>", "SHARED_TOKEN": "granted", "FROM_TABLE": "set"}
        assert path.endswith(BASE_ENV["PATH"])  # perhaps behind the interpreter's directory


class TestLifetime:
    async def test_stopping_run_stops_each_program_and_its_process_group(self) -> None:
        server = McpServer(name="raw", command=RAW_SERVER)
        with trio.fail_after(15):
            async with running([server]) as servers:
                spawned = await servers.call("mcp.raw/spawn", {})
                server_pid, child_pid = map(int, spawned.output.split())
                assert running_pid(server_pid)
                assert running_pid(child_pid)
            after = await servers.call("mcp.raw/echo", {"text": "x"})
            # Killed, the orphan is reaped by init (not us): it may linger as a zombie a moment.
            while running_pid(child_pid):  # noqa: ASYNC110 (polls /proc)
                await trio.sleep(0.01)
        assert not running_pid(server_pid)
        assert after.output == "MCP server 'raw' is not running (the team's servers are stopped)"

    async def test_list_server_tools_connects_once(self, probe: HttpProbe) -> None:
        with trio.fail_after(10):
            listing = await list_server_tools(probe.server(), {})
            gone = await list_server_tools(McpServer(name="gone", command=("/nonexistent",)))
        assert listing.error is None
        assert [d.name for d in listing.definitions][:2] == ["mcp.web/add", "mcp.web/fail"]
        assert gone == McpListing(
            server="gone",
            error="MCP server 'gone' cannot start: /nonexistent: No such file or directory",
        )
