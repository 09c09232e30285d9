"""What a call of an MCP tool comes to, as the model reads it: each kind of content block as
text, the structured content kept or dropped, and the cut at ``MCP_OUTPUT_LIMIT``."""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.runtime.tools import MCP_OUTPUT_LIMIT, McpResult, call_result, failed_result
from tests.support.examples import examples


def answer(**result: Any) -> mcp_types.CallToolResult:
    """A ``tools/call`` result as a server writes it (camelCase wire names)."""
    return mcp_types.CallToolResult.model_validate(result)


class TestContent:
    @pytest.mark.parametrize(
        ("block", "text"),
        [
            ({"type": "text", "text": "hello"}, "hello"),
            (
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                "[image: image/png, 8 bytes]",
            ),
            (
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                "[audio: audio/wav, 3 bytes]",
            ),
            (
                {"type": "resource_link", "name": "n", "uri": "file:///notes.md"},
                "[resource link: file:///notes.md]",
            ),
            (
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}},
                "[resource: file:///a.txt]\nbody",
            ),
            (
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a.bin", "blob": "AAAAAA==", "mimeType": "x/y"},
                },
                "[resource: file:///a.bin, x/y, 4 bytes]",
            ),
            (
                {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAA="}},
                "[resource: file:///a.bin, binary, 2 bytes]",
            ),
        ],
    )
    def test_each_kind_of_block_as_the_model_reads_it(
        self, block: dict[str, Any], text: str
    ) -> None:
        assert call_result(answer(content=[block])) == McpResult(success=True, output=text)

    def test_blocks_are_joined_by_lines_in_order(self) -> None:
        result = answer(
            content=[
                {"type": "text", "text": "one"},
                {"type": "resource_link", "name": "n", "uri": "https://x.invalid/"},
                {"type": "text", "text": "two"},
            ]
        )
        assert call_result(result).output == "one\n[resource link: https://x.invalid/]\ntwo"

    def test_an_error_result_is_a_failure_with_its_text(self) -> None:
        result = answer(content=[{"type": "text", "text": "no such file"}], isError=True)
        assert call_result(result) == McpResult(success=False, output="no such file")

    def test_lone_surrogates_are_replaced(self) -> None:
        """A lone surrogate cannot be encoded to UTF-8 for the model: it reads U+FFFD."""
        output = call_result(answer(content=[{"type": "text", "text": "a\ud800b"}])).output
        assert output == "a\ufffdb"


class TestStructuredContent:
    def test_without_text_it_is_the_output_as_compact_json(self) -> None:
        result = call_result(answer(content=[], structuredContent={"n": 2, "double": 4}))
        assert result == McpResult(
            success=True, output='{"n":2,"double":4}', structured={"n": 2, "double": 4}
        )

    def test_with_text_the_text_is_the_output_and_it_is_kept_beside(self) -> None:
        result = call_result(
            answer(content=[{"type": "text", "text": "two"}], structuredContent={"n": 2})
        )
        assert (result.output, result.structured) == ("two", {"n": 2})

    def test_a_text_resource_counts_as_text(self) -> None:
        block = {"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}
        result = call_result(answer(content=[block], structuredContent={"n": 1}))
        assert result.output == "[resource: file:///a]\nt"

    def test_structured_content_longer_than_the_limit_is_not_kept(self) -> None:
        """Only its text, cut, reaches the model; the whole value is not passed on."""
        big = {"text": "x" * MCP_OUTPUT_LIMIT}
        result = call_result(answer(content=[], structuredContent=big))
        assert result.structured is None
        assert result.output.startswith('{"text":"xxx')
        assert result.output.endswith("[output truncated: 11 more characters not shown]")


class TestLimit:
    def test_text_at_the_limit_is_whole(self) -> None:
        text = "y" * MCP_OUTPUT_LIMIT
        assert call_result(answer(content=[{"type": "text", "text": text}])).output == text

    def test_longer_text_is_cut_with_a_note_of_what_was_dropped(self) -> None:
        text = "y" * (MCP_OUTPUT_LIMIT + 5)
        output = call_result(answer(content=[{"type": "text", "text": text}])).output
        assert output == "y" * MCP_OUTPUT_LIMIT + (
            "\n[output truncated: 5 more characters not shown]"
        )

    def test_a_failure_message_is_cut_the_same_way(self) -> None:
        result = failed_result("z" * (MCP_OUTPUT_LIMIT + 1))
        assert not result.success
        assert result.structured is None
        assert result.output.endswith("\n[output truncated: 1 more characters not shown]")
        assert result.output.startswith("z" * MCP_OUTPUT_LIMIT + "\n")

    @settings(max_examples=examples(60))
    @given(text=st.text(alphabet="ab \n", max_size=200), extra=st.integers(0, 3))
    def test_what_is_kept_is_a_prefix_of_the_text(self, text: str, extra: int) -> None:
        """Cut or not, the output starts with as much of the text as the limit allows."""
        whole = text * (1 + extra * (MCP_OUTPUT_LIMIT // max(len(text), 1)))
        output = failed_result(whole).output
        kept = output.split("\n[output truncated: ")[0] if len(whole) > MCP_OUTPUT_LIMIT else output
        assert kept == whole[:MCP_OUTPUT_LIMIT]
        assert len(output) <= MCP_OUTPUT_LIMIT + 60
