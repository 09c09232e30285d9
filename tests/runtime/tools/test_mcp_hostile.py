"""MCP tool servers that are hostile (orchestrator.runtime.tools._mcp, ._mcp_stdio): a real one.

``tests/support/mcp_hostile_server.py`` lists hostile tools (``--listing``) and answers its
``answer`` tool with whatever bytes a test gives it, so each case is a real line on a real
pipe. What holds, whatever a server writes: a tool that cannot be offered (not a valid MCP
tool, an input schema that is not a valid JSON Schema of an object, a bad or repeated name)
is dropped with a warning naming the server and the tool, the rest offered; a bad answer
fails its call with a message naming the server and what was wrong, at most
``MCP_OUTPUT_LIMIT`` characters; a line that breaks the stream ends the connection (its
calls fail saying why) and the next call starts the server again; ``McpServers.call``
never raises and ``McpServers.run`` never exits. The last test is a seeded fuzz of
``tools/list`` and ``tools/call`` answers (``MCP_FUZZ_SEED``, ``MCP_FUZZ_CASES``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from orchestrator.base import compact_dumps, text_problem
from orchestrator.runtime import MCP_OUTPUT_LIMIT, McpResult, McpServers
from orchestrator.runtime.tools._mcp_listing import MCP_DESCRIPTION_LIMIT, MCP_MAX_TOOLS
from orchestrator.runtime.tools._mcp_stdio import MAX_LINE
from orchestrator.spec import McpServer, ToolDefinition, check_tool_input, schema_problem
from tests.support.fuzz import Fuzzer
from tests.support.mcp_servers import BASE_ENV, seconds
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

HOSTILE_SERVER = (sys.executable, str(PROJECT_ROOT / "tests" / "support" / "mcp_hostile_server.py"))
#: The tools the hostile server always lists first.
CONTROL = ["mcp.h/echo", "mcp.h/answer", "mcp.h/relist"]
#: What a capped output may add to the cap: the note that says what was dropped.
NOTE: Final = 100
FUNCTION_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


def hostile(*args: str, timeout: float = 2.0, start_timeout: float = 5.0) -> McpServer:
    return McpServer(
        name="h",
        command=(*HOSTILE_SERVER, *args),
        timeout=seconds(timeout),
        start_timeout=seconds(start_timeout),
    )


@asynccontextmanager
async def running(server: McpServer) -> AsyncIterator[McpServers]:
    """``server`` started (listed or failed), stopped when the block ends; fails the test if
    ``run`` ends by itself."""
    servers = McpServers([server], BASE_ENV)
    async with trio.open_nursery() as nursery:
        await nursery.start(servers.run)
        yield servers
        nursery.cancel_scope.cancel()


async def answer(servers: McpServers, line: bytes, fill: int = 0) -> McpResult:
    """Call ``answer``: the server answers with ``line`` (``@ID@``: the request's id)."""
    return await servers.call("mcp.h/answer", {"hex": line.hex(), "fill": fill})


async def assert_echo_works(servers: McpServers) -> None:
    result = await servers.call("mcp.h/echo", {"text": "still here"})
    assert result == McpResult(success=True, output="still here")


def assert_offerable(definitions: Mapping[str, ToolDefinition]) -> None:
    """What a model may be offered: schemas jsonschema can check input against, function
    names a model API takes, each once."""
    names = [d.function_name for d in definitions.values()]
    assert len(set(names)) == len(names), names
    for definition in definitions.values():
        assert FUNCTION_NAME.match(definition.function_name), definition.function_name
        assert schema_problem(definition.parameters) is None, definition
        assert text_problem(definition.description) is None
        assert len(definition.description) <= MCP_DESCRIPTION_LIMIT + NOTE
        # Never SchemaError mid-turn: the input is checked against what was offered.
        problem = check_tool_input(tuple(definitions.values()), definition.name, {"x": 1})
        assert problem is None or problem.startswith("invalid input")


def dropped(logs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [
        (entry["tool"], entry["problem"])
        for entry in logs
        if entry["event"] == "mcp tool dropped" and entry["server"] == "h"
    ]


def result(body: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":@ID@,"result":' + body.encode() + b"}"


class TestListing:
    @pytest.mark.parametrize(
        ("listing", "tool", "problem"),
        [
            ("invalid-schema", "bad", "not a valid MCP tool: at inputSchema.type: Input should"),
            ("string-schema", "bad", "not a valid MCP tool: at inputSchema.type: Input should"),
            ("array-schema", "bad", "not a valid MCP tool: at inputSchema: Input should be a"),
            (
                "bad-json-schema",
                "bad",
                "its input schema is not a valid JSON Schema: at .properties.a.type: 'nonsense'",
            ),
            ("empty-name", "", "a tool name is 1 to 128 letters, digits"),
            ("long-name", "n" * 80 + "… (10000 characters)", "a tool name is 1 to 128"),
            ("duplicate", "twice", "listed twice: the first is offered"),
        ],
    )
    async def test_a_tool_that_cannot_be_offered_is_dropped_the_rest_kept(
        self, listing: str, tool: str, problem: str
    ) -> None:
        """The tool is left out with a warning naming the server, the tool and why; the
        others are offered and the server's tools can be called."""
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile("--listing", listing)) as servers:
                definitions = servers.definitions()
                assert servers.errors() == {}
                await assert_echo_works(servers)
        names = ["twice"] if listing == "duplicate" else []
        assert list(definitions) == [*CONTROL, *(f"mcp.h/{n}" for n in names), "mcp.h/good"]
        [(name, why)] = dropped(logs)
        assert (name, why[: len(problem)]) == (tool, problem)
        assert_offerable(definitions)
        if listing == "duplicate":
            assert definitions["mcp.h/twice"].description == "first"

    async def test_names_outside_the_allowed_characters_are_dropped(self) -> None:
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile("--listing", "bad-chars")) as servers:
                definitions = servers.definitions()
        assert list(definitions) == [*CONTROL, "mcp.h/good"]
        assert [name for name, _ in dropped(logs)] == ["a b", "a/b", "é"]

    async def test_a_schema_nested_10000_levels_refuses_the_listing(self) -> None:
        """The answer cannot be read at all (no id to tie it to): the start fails saying
        why, with the server's stderr, and is tried again after the backoff."""
        with trio.fail_after(10):
            async with running(hostile("--listing", "deep-schema")) as servers:
                errors = servers.errors()
                definitions = servers.definitions()
                call = await servers.call("mcp.h/echo", {})
        assert definitions == {}
        assert errors["h"] == (
            "MCP server 'h' failed to start: it wrote a line that cannot be read: at $: "
            "nested deeper than 64 levels\nstderr:\nhostile server starting"
        )
        assert not call.success
        assert call.output.startswith(errors["h"])
        assert "next attempt to start it is in" in call.output

    async def test_10000_tools_are_cut_to_the_limit(self) -> None:
        with trio.fail_after(20), capture_logs() as logs:
            async with running(hostile("--listing", "many-tools")) as servers:
                definitions = servers.definitions()
                await assert_echo_works(servers)
        assert len(definitions) == MCP_MAX_TOOLS
        assert list(definitions)[:4] == [*CONTROL, "mcp.h/t0"]
        assert [e["problem"] for e in logs if e["event"] == "mcp tools dropped"] == [
            f"it lists more than {MCP_MAX_TOOLS} tools; the rest are not offered"
        ]

    async def test_a_10_mb_description_is_cut(self) -> None:
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile("--listing", "huge-description")) as servers:
                description = servers.definitions()["mcp.h/big"].description
        assert description == "d" * MCP_DESCRIPTION_LIMIT + "… (cut: 10000000 characters)"
        [cut] = [e for e in logs if e["event"] == "mcp tool description cut"]
        assert (cut["server"], cut["tool"], cut["characters"]) == ("h", "big", 10_000_000)

    async def test_names_that_differ_only_in_unsafe_characters_stay_distinct(self) -> None:
        with trio.fail_after(10):
            async with running(hostile("--listing", "unsafe-pair")) as servers:
                definitions = servers.definitions()
        names = {d.name: d.function_name for d in definitions.values()}
        assert names["mcp.h/a_b"] == "h__a_b"
        assert names["mcp.h/a-b"] == "h__a-b"
        assert re.fullmatch(r"h__a_b_[0-9a-f]{8}", names["mcp.h/a.b"])
        assert_offerable(definitions)


class TestStart:
    async def test_garbage_before_the_handshake_fails_the_start(self) -> None:
        """A server MUST NOT write anything but MCP messages to stdout: its start fails
        saying what it wrote, and is tried again (after the backoff) at a call."""
        with trio.fail_after(10):
            async with running(hostile("--garbage-first")) as servers:
                error = servers.errors()["h"]
        assert error == (
            "MCP server 'h' failed to start: it wrote a line that cannot be read: at $: "
            "not JSON: Expecting value (line 1, column 1)\nstderr:\nhostile server starting"
        )

    async def test_a_server_that_never_answers_fails_its_start_in_time(self) -> None:
        with trio.fail_after(10):
            async with running(hostile("--silent", start_timeout=0.3)) as servers:
                error = servers.errors()["h"]
                call = await servers.call("mcp.h/echo", {})
        assert error.startswith("MCP server 'h' did not start within 0.3s")
        assert not call.success
        assert call.output.startswith(error)


DEEP: Final = '{"a":' * 10_000 + "1" + "}" * 10_000
DEEPISH: Final = '{"a":' * 100 + "1" + "}" * 100


class TestAnswers:
    @pytest.mark.parametrize(
        ("line", "fill", "message"),
        [
            pytest.param(
                result('{"content":[],"structuredContent":' + DEEPISH + "}"),
                0,
                "MCP server 'h': answer failed: its answer was refused: at "
                "$.result.structuredContent.a.a.a.a….a.a.a.a: nested deeper than 64 levels",
                id="structured-100-deep",
            ),
            pytest.param(
                result('{"content":[],"structuredContent":{"n":' + "9" * 5000 + "}}"),
                0,
                "MCP server 'h': answer failed: its answer was refused: at "
                "$.result.structuredContent.n: an integer of 5000 digits; the limit is 32",
                id="5000-digits",
            ),
            pytest.param(
                result('{"content":[],"structuredContent":{"n":NaN}}'),
                0,
                "MCP server 'h': answer failed: its answer was refused: at "
                "$.result.structuredContent.n: NaN is not a JSON number",
                id="nan",
            ),
            pytest.param(
                result('{"content":[{"type":"hologram","data":"x"}]}'),
                0,
                "MCP server 'h': answer failed: its answer is not a valid tool result: at "
                "content.0.TextContent.text: Field required (and 10 more problems)",
                id="unknown-content-type",
            ),
            pytest.param(
                result('{"content":[{"type":"text","text":"x"}],"isError":"yes"}'),
                0,
                "MCP server 'h': answer failed: its answer's isError is not a boolean: yes",
                id="isError-not-boolean",
            ),
            pytest.param(
                result("[1,2]"),
                0,
                "MCP server 'h': answer failed: its answer is not a JSON-RPC answer: its "
                "result is not an object: {'jsonrpc': '2.0', 'id': ",
                id="result-not-an-object",
            ),
        ],
    )
    async def test_a_bad_answer_fails_its_call_and_the_connection_goes_on(
        self, line: bytes, fill: int, message: str
    ) -> None:
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile()) as servers:
                called = await answer(servers, line, fill)
                await assert_echo_works(servers)
        assert not called.success
        assert called.output.startswith(message)
        assert called.structured is None
        assert not [e for e in logs if e["event"] == "mcp server stopped"]  # one connection

    @pytest.mark.parametrize(
        ("line", "fill", "reason"),
        [
            pytest.param(
                result('{"content":[],"structuredContent":' + DEEP + "}"),
                0,
                "it wrote a line that cannot be read: at $: nested deeper than 64 levels",
                id="structured-10000-deep",
            ),
            pytest.param(
                result('{"content":[{"type":"text","text":"@FILL@"}]}'),
                100_000_000,
                f"it wrote a message longer than {MAX_LINE} bytes",
                id="100-mb-of-text",
            ),
            pytest.param(
                b'{"jsonrpc":"2.0","id":true,"result":[]}',
                0,
                "it wrote a line that cannot be read: not a JSON-RPC answer: its result is "
                "not an object: {'jsonrpc': '2.0', 'id': True, 'result': []}",
                id="id-true",
            ),
            pytest.param(
                b"this is not json",
                0,
                "it wrote a line that cannot be read: at $: not JSON: Expecting value "
                "(line 1, column 1)",
                id="not-json",
            ),
        ],
    )
    async def test_a_line_that_breaks_the_stream_ends_the_connection(
        self, line: bytes, fill: int, reason: str
    ) -> None:
        """The call fails saying why; the next call starts the server again."""
        with trio.fail_after(20), capture_logs() as logs:
            async with running(hostile()) as servers:
                called = await answer(servers, line, fill)
                await assert_echo_works(servers)
        assert called == McpResult(
            success=False,
            output=f"MCP server 'h' stopped: {reason}\nstderr:\nhostile server starting",
        )
        assert [e["reason"] for e in logs if e["event"] == "mcp server stopped"] == [
            f"MCP server 'h' stopped: {reason}"
        ]
        starts = [e for e in logs if e["event"] == "mcp server started"]
        assert len(starts) == 2

    @pytest.mark.parametrize(
        ("stray", "why"),
        [
            (b"99999", "99999, which is no request waiting (never sent)"),
            (b'"4"', '"4", which is no request waiting (never sent)'),  # an id as a string
            (b"0", "0, which is no request waiting (answered already)"),  # initialize's
            # JSON-RPC's answer to a request that could not be read: an error, its id null.
            (b"null", "null, which is no request waiting (never sent)"),
        ],
    )
    async def test_an_answer_to_no_waiting_request_is_dropped_and_said(
        self, stray: bytes, why: str
    ) -> None:
        """An answer whose id is no pending request is dropped with a warning naming the
        server and the id; the call waiting gets its own answer when it comes (not a
        timeout, not a broken connection), and the next call works on the same connection."""
        answered = (
            b'"error":{"code":-32700,"message":"Parse error"}'
            if stray == b"null"
            else b'"result":{"content":[]}'
        )
        wrong = b'{"jsonrpc":"2.0","id":' + stray + b"," + answered + b"}"
        line = wrong + b"\n" + result('{"content":[{"type":"text","text":"mine"}]}')
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile(timeout=5.0)) as servers:
                asked = trio.current_time()
                called = await answer(servers, line)
                took = trio.current_time() - asked
                await assert_echo_works(servers)
        assert called == McpResult(success=True, output="mine")
        assert took < 5.0
        assert [
            (e["log_level"], e["server"], e["problem"])
            for e in logs
            if e["event"] == "mcp answer dropped"
        ] == [("warning", "h", f"it answered request {why}")]
        assert not [e for e in logs if e["event"] == "mcp server stopped"]  # one connection

    async def test_an_id_answered_twice_keeps_the_first_answer(self) -> None:
        """The second answer to a request already answered is dropped (as a late answer
        to a cancelled request is): the connection goes on."""
        twice = result('{"content":[{"type":"text","text":"first"}]}') + b"\n"
        twice += result('{"content":[{"type":"text","text":"second"}]}')
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile()) as servers:
                called = await answer(servers, twice)
                await assert_echo_works(servers)
        assert called == McpResult(success=True, output="first")
        assert not [e for e in logs if e["event"] == "mcp server stopped"]

    async def test_a_refused_relisting_keeps_the_last_listing(self) -> None:
        """A tools/list answer the gate refuses, after a list_changed: the tools listed
        before stay offered, with a warning naming the server and why."""
        listing = result('{"tools":[{"name":"x","inputSchema":{"type":"object"},"n":NaN}]}')
        with trio.fail_after(10), capture_logs() as logs:
            async with running(hostile("--listing", "unsafe-pair")) as servers:
                before = servers.definitions()
                relisted = await servers.call("mcp.h/relist", {"hex": listing.hex()})
                await trio.testing.wait_all_tasks_blocked()
                after = servers.definitions()
                await assert_echo_works(servers)
        assert relisted.success
        assert after is before
        [warning] = [e for e in logs if e["event"] == "mcp tools not listed"]
        assert (warning["server"], warning["problem"]) == (
            "h",
            "its answer was refused: at $.result.tools[0].n: NaN is not a JSON number",
        )

    async def test_lone_surrogates_are_replaced(self) -> None:
        line = result('{"content":[{"type":"text","text":"a\\ud800b"}]}')
        with trio.fail_after(10):
            async with running(hostile()) as servers:
                called = await answer(servers, line)
        assert called == McpResult(success=True, output="a\ufffdb")

    async def test_big_text_and_structured_content_are_capped(self) -> None:
        """1 MB of text is cut to the limit with a note; structured content whose JSON
        is past the limit is not kept (its text, cut, is the output)."""
        text = result('{"content":[{"type":"text","text":"@FILL@"}]}')
        structured = result('{"content":[],"structuredContent":{"s":"@FILL@"}}')
        with trio.fail_after(10):
            async with running(hostile()) as servers:
                big_text = await answer(servers, text, 1_000_000)
                big_structured = await answer(servers, structured, 1_000_000)
                small = await answer(servers, result('{"content":[],"structuredContent":{"s":1}}'))
        assert big_text.output == (
            "x" * MCP_OUTPUT_LIMIT
            + f"\n[output truncated: {1_000_000 - MCP_OUTPUT_LIMIT} more characters not shown]"
        )
        assert big_structured.success
        assert big_structured.structured is None
        assert big_structured.output.startswith('{"s":"xxx')
        assert len(big_structured.output) < MCP_OUTPUT_LIMIT + NOTE
        assert small == McpResult(success=True, output='{"s":1}', structured={"s": 1})

    async def test_an_answer_that_never_comes_times_out(self) -> None:
        with trio.fail_after(10):
            async with running(hostile(timeout=0.3)) as servers:
                called = await answer(servers, b"")
                await assert_echo_works(servers)
        assert called == McpResult(
            success=False,
            output="MCP server 'h': answer timed out after 0.3s (its request was cancelled)",
        )


# ─── the fuzz ────────────────────────────────────────────────────────────────

SEED: Final = int(os.environ.get("MCP_FUZZ_SEED", "20261126"))
CASES: Final = int(os.environ.get("MCP_FUZZ_CASES", "300"))
#: The id in a template, made the request's own when the server answers.
TEMPLATE_ID: Final = 7_777_777


def _tool(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool.", "inputSchema": schema}


_CALL_ANSWERS: Final = (
    {
        "jsonrpc": "2.0",
        "id": TEMPLATE_ID,
        "result": {
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            ],
            "structuredContent": {"a": [1, 2.5, "x", None, True], "b": {"c": "d"}},
            "isError": False,
        },
    },
    {"jsonrpc": "2.0", "id": TEMPLATE_ID, "error": {"code": -32000, "message": "boom"}},
    {
        "jsonrpc": "2.0",
        "id": TEMPLATE_ID,
        "result": {
            "content": [{"type": "resource", "resource": {"uri": "file:///x", "text": "t"}}]
        },
    },
)
_CONTROL_TOOLS: Final = [
    _tool("echo", {"type": "object", "properties": {"text": {"type": "string"}}}),
    _tool("answer", {"type": "object", "properties": {"hex": {"type": "string"}}}),
    _tool("relist", {"type": "object", "properties": {"hex": {"type": "string"}}}),
]
_LISTING: Final = {
    "jsonrpc": "2.0",
    "id": TEMPLATE_ID,
    "result": {
        "tools": [
            *_CONTROL_TOOLS,
            _tool(
                "x.y",
                {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": 0}},
                    "required": ["n"],
                },
            ),
            _tool("x_y", {"type": "object", "additionalProperties": {"type": "string"}}),
        ]
    },
}


def _line(fuzzer: Fuzzer, template: Mapping[str, Any]) -> bytes:
    frame = fuzzer.frame(template)
    data = frame if isinstance(frame, bytes) else frame.encode("utf-8", "surrogatepass")
    return data.replace(str(TEMPLATE_ID).encode(), b"@ID@")


class TestFuzz:
    async def test_mutated_answers_never_break_the_invariants(self) -> None:
        """Seeded hostile answers to tools/call and tools/list: each call returns an
        McpResult (never raises) within the cap, in text that encodes; every listing
        offers only checkable schemas under distinct valid function names; run goes on."""
        fuzzer = Fuzzer(SEED)
        restarts = 0
        with trio.fail_after(120), capture_logs() as logs:
            async with trio.open_nursery() as nursery:
                servers, scope = await self._start(nursery)
                for _ in range(CASES):
                    if fuzzer.random.random() < 0.5:
                        template = fuzzer.random.choice(_CALL_ANSWERS)
                        called = await answer(servers, _line(fuzzer, template))
                        self._assert_bounded(called)
                    else:
                        line = _line(fuzzer, _LISTING)
                        relisted = await servers.call("mcp.h/relist", {"hex": line.hex()})
                        self._assert_bounded(relisted)
                        await trio.testing.wait_all_tasks_blocked()
                        assert_offerable(servers.definitions())
                        if not all(name in servers.definitions() for name in CONTROL):
                            # It no longer lists what the fuzz calls: a new connection.
                            scope.cancel()
                            servers, scope = await self._start(nursery)
                            restarts += 1
                await assert_echo_works(servers)
                nursery.cancel_scope.cancel()
        events = [e["event"] for e in logs]
        print(
            f"MCP fuzz: seed {SEED}, {CASES} cases, {restarts} fresh connections, "
            f"{events.count('mcp server stopped')} broken, "
            f"{events.count('mcp call timed out')} timed out"
        )

    async def _start(self, nursery: trio.Nursery) -> tuple[McpServers, trio.CancelScope]:
        servers = McpServers([hostile(timeout=1.0)], BASE_ENV)
        scope = trio.CancelScope()

        async def run(task_status: trio.TaskStatus[None]) -> None:
            with scope:
                await servers.run(task_status=task_status)
            assert scope.cancelled_caught, "McpServers.run ended by itself"

        await nursery.start(run)
        return servers, scope

    @staticmethod
    def _assert_bounded(called: McpResult) -> None:
        assert isinstance(called, McpResult)
        assert len(called.output) <= MCP_OUTPUT_LIMIT + NOTE
        assert text_problem(called.output) is None
        if called.structured is not None:
            assert len(compact_dumps(called.structured)) <= MCP_OUTPUT_LIMIT
            json.dumps(called.structured, allow_nan=False)
