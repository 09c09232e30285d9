"""What a stdio MCP server writes, checked before the session sees it, without a process:
the lines of its output, each line's verdict (a message, an answer refused in the server's
stead, a stray answer dropped, or a line that breaks the stream), and how a program's end
and its stderr read in a message.

The transport with a real program, and hostile ones, is in ``test_mcp.py`` and
``test_mcp_hostile.py``."""

from __future__ import annotations

import json
from typing import Any

import mcp_types
import pytest
import trio
import trio.testing
from mcp.shared.message import SessionMessage
from structlog.testing import capture_logs

from orchestrator.runtime.tools._mcp_stdio import (
    MAX_LINE,
    REFUSED_ANSWER,
    StdioProcess,
    _BrokenStreamError,
    _Checker,
    _lines,
    _LineTooLongError,
    _StrayAnswer,
    validation_text,
)


def request(ident: int | str, method: str = "tools/call") -> mcp_types.JSONRPCRequest:
    return mcp_types.JSONRPCRequest(jsonrpc="2.0", id=ident, method=method, params={})


def answer(ident: Any, result: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result})


def checker_waiting(*requests: mcp_types.JSONRPCRequest) -> _Checker:
    checker = _Checker("srv")
    for sent in requests:
        checker.sent(sent)
    return checker


def message_of(item: object) -> Any:
    """The message the session is given for a line."""
    assert isinstance(item, SessionMessage), item
    return item.message


class TestAnswers:
    def test_an_answer_to_a_waiting_request_passes(self) -> None:
        checker = checker_waiting(request(0))
        message = message_of(checker.received(answer(0, {"content": []})))
        assert message == mcp_types.JSONRPCResponse(jsonrpc="2.0", id=0, result={"content": []})
        assert checker.pending == {}

    def test_a_notification_passes(self) -> None:
        line = '{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}'
        message = message_of(_Checker("srv").received(line))
        assert isinstance(message, mcp_types.JSONRPCNotification)

    @pytest.mark.parametrize(
        ("ident", "why"), [(0, "answered already"), (5, "never sent"), ("x", "never sent")]
    )
    def test_an_answer_to_no_waiting_request_is_stray(self, ident: Any, why: str) -> None:
        checker = checker_waiting(request(0))
        message_of(checker.received(answer(0, {"content": []})))
        stray = checker.received(answer(ident, {"content": []}))
        assert isinstance(stray, _StrayAnswer)
        shown = json.dumps(ident)
        assert str(stray) == f"it answered request {shown}, which is no request waiting ({why})"

    def test_an_answer_the_gate_refuses_fails_its_own_call(self) -> None:
        """Nested too deep: an error answer to that request, naming where; the stream goes on."""
        checker = checker_waiting(request(3))
        deep = '{"a":' * 70 + "1" + "}" * 70
        message = message_of(
            checker.received(answer(3, {"content": []})[:-1] + ',"x":' + deep + "}")
        )
        assert isinstance(message, mcp_types.JSONRPCError)
        assert (message.id, message.error.code) == (3, REFUSED_ANSWER)
        assert message.error.message.startswith("its answer was refused: at $.x.a.a")
        assert "nested deeper than 64 levels" in message.error.message

    def test_an_answer_whose_result_is_no_object_fails_its_call(self) -> None:
        message = message_of(checker_waiting(request(1)).received(answer(1, [1, 2])))
        assert isinstance(message, mcp_types.JSONRPCError)
        prefix = "its answer is not a JSON-RPC answer: its result is not an object: "
        assert message.error.message.startswith(prefix)
        assert "[1, 2]" in message.error.message

    def test_a_call_answer_whose_is_error_is_no_boolean_fails_its_call(self) -> None:
        line = answer(0, {"content": [], "isError": "no"})
        message = message_of(checker_waiting(request(0)).received(line))
        assert isinstance(message, mcp_types.JSONRPCError)
        assert message.error.message == "its answer's isError is not a boolean: no"

    def test_true_is_not_request_one(self) -> None:
        """``True == 1`` in Python: a refused answer with id true must not fail request 1."""
        checker = checker_waiting(request(1))
        item = checker.received('{"jsonrpc": "2.0", "id": true, "result": 5}')
        assert isinstance(item, _BrokenStreamError)
        assert 1 in checker.pending


class TestBrokenStream:
    @pytest.mark.parametrize(
        ("line", "says"),
        [
            ("nope", "it wrote a line that cannot be read: at $: not JSON: "),
            ("[1]", "it wrote a line that cannot be read: not a JSON-RPC message: "),
            ('{"jsonrpc": "2.0", "id": 0, "result": NaN}', "it wrote a line that cannot be read: "),
        ],
    )
    def test_a_line_tied_to_no_waiting_request_breaks_the_stream(
        self, line: str, says: str
    ) -> None:
        item = checker_waiting(request(1)).received(line)
        assert isinstance(item, _BrokenStreamError)
        assert str(item).startswith(says), str(item)


class TestListing:
    def test_invalid_tools_are_dropped_the_rest_kept_and_said(self) -> None:
        checker = checker_waiting(request(0, "tools/list"))
        tools = [
            {"name": "good", "inputSchema": {"type": "object"}},
            {"name": "bad", "inputSchema": {"type": "string"}},
            {"inputSchema": {"type": "object"}},
        ]
        with capture_logs() as logs:
            message = message_of(checker.received(answer(0, {"tools": tools})))
        assert [t["name"] for t in message.result["tools"]] == ["good"]
        dropped = [(e["tool"], e["problem"][:42]) for e in logs if e["event"] == "mcp tool dropped"]
        assert dropped == [
            ("bad", "not a valid MCP tool: at inputSchema.type:"),
            ("#2 (no name)", "not a valid MCP tool: at name: Field requi"),
        ]

    def test_the_handshake_s_version_is_the_one_tools_are_checked_by(self) -> None:
        checker = checker_waiting(request(0, "initialize"))
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"},
        }
        message_of(checker.received(answer(0, result)))
        assert checker.version == "2025-06-18"


class TestLines:
    async def lines_of(self, *chunks: bytes) -> list[str]:
        send, receive = trio.testing.memory_stream_one_way_pair()
        for chunk in chunks:
            await send.send_all(chunk)
        await send.aclose()
        return [line async for line in _lines(receive)]

    async def test_lines_across_chunks_blank_ones_skipped_the_last_unterminated(self) -> None:
        lines = await self.lines_of(b'{"a"', b':1}\n\n  \n{"b":2}\n{"c"', b":3}")
        assert lines == ['{"a":1}', '{"b":2}', '{"c":3}']

    async def test_bytes_that_are_not_utf8_are_replaced(self) -> None:
        assert await self.lines_of(b"a\xffb\n") == ["a\ufffdb"]

    async def test_a_line_past_the_limit_ends_the_stream(self) -> None:
        with pytest.raises(_LineTooLongError, match=f"a message longer than {MAX_LINE} bytes"):
            await self.lines_of(b"x" * (MAX_LINE + 1))


class TestStdioProcess:
    @pytest.mark.parametrize(
        ("returncode", "text"),
        [
            (None, ""),
            (0, "exited with status 0"),
            (3, "exited with status 3"),
            (-9, "was killed by SIGKILL"),
        ],
    )
    def test_how_the_program_ended(self, returncode: int | None, text: str) -> None:
        assert StdioProcess(returncode=returncode).exit_text() == text

    async def test_its_stderr_s_end_with_how_much_was_cut(self) -> None:
        process = StdioProcess()
        assert process.stderr_text() == ""
        written = b"starting\n" + b"x" * process.tail.limit + b"\nfailed\n"
        send, receive = trio.testing.memory_stream_one_way_pair()
        await send.send_all(written)
        await send.aclose()
        await process.tail.drain(receive)
        text = process.stderr_text()
        assert text.startswith(
            f"stderr (its last {process.tail.limit} of {len(written)} bytes):\nxxx"
        )
        assert text.endswith("xxx\nfailed")

    async def test_a_short_stderr_is_whole(self) -> None:
        process = StdioProcess()
        send, receive = trio.testing.memory_stream_one_way_pair()
        await send.send_all(b"listening\n")
        await send.aclose()
        await process.tail.drain(receive)
        assert process.stderr_text() == "stderr:\nlistening"


def test_a_validation_error_is_its_first_problem_and_how_many_more() -> None:
    with pytest.raises(ValueError, match="validation errors") as caught:
        mcp_types.Tool.model_validate({"name": 3, "inputSchema": "x"})
    assert validation_text(caught.value).startswith("at name: ")
    assert validation_text(caught.value).endswith("(and 1 more problems)")
    assert validation_text(RuntimeError("plain")) == "plain"
