"""What a call of an MCP tool comes to, as the model reads it.

A result's content blocks become text: text joined, images, audio and binary resources
summarised by their type and size, resource links by their URI, and the structured content
as compact JSON when there is no text. The text, and a failure's message, are cut to
:data:`MCP_OUTPUT_LIMIT` characters, with a note saying how much was dropped; structured
content whose JSON is longer is not kept at all. Failures are results, never exceptions
(see :class:`~orchestrator.runtime.tools._mcp.McpServers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from orchestrator.base import clean_text, compact_dumps

if TYPE_CHECKING:
    import mcp_types

__all__ = ["MCP_OUTPUT_LIMIT", "McpResult", "call_result", "failed_result"]

#: Characters of a call's result text (or failure message) kept; the rest is dropped, with a
#: note saying so. Structured content whose JSON is longer is not kept at all.
MCP_OUTPUT_LIMIT: Final = 64 * 1024


@attrs.frozen(kw_only=True)
class McpResult:
    """What a call of an MCP tool came to: ``output`` is the result text, or the failure's
    message; ``structured`` the result's ``structuredContent`` (a JSON value), if any."""

    success: bool
    output: str
    structured: Any = attrs.field(default=None, hash=False)


def call_result(result: mcp_types.CallToolResult) -> McpResult:
    """A call's result as text: text content joined, other content summarised, and the
    structured content as compact JSON when there is no text."""
    import mcp_types

    parts: list[str] = []
    has_text = False
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
            has_text = True
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}, {_decoded_size(block.data)} bytes]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block.resource, mcp_types.TextResourceContents):
            parts.append(f"[resource: {block.resource.uri}]\n{block.resource.text}")
            has_text = True
        else:
            resource = block.resource
            kind = resource.mime_type or "binary"
            parts.append(
                f"[resource: {resource.uri}, {kind}, {_decoded_size(resource.blob)} bytes]"
            )
    structured = result.structured_content
    if structured is not None:
        structured_json = compact_dumps(structured)
        if not has_text:
            parts.append(structured_json)
        if len(structured_json) > MCP_OUTPUT_LIMIT:
            structured = None  # only the text (cut below) is kept of it
    output = _capped(clean_text("\n".join(parts))[0])
    return McpResult(success=not result.is_error, output=output, structured=structured)


def failed_result(message: str) -> McpResult:
    """A failed call whose message the model reads (cut as a result's text is)."""
    return McpResult(success=False, output=_capped(clean_text(message)[0]))


def _capped(output: str) -> str:
    if len(output) <= MCP_OUTPUT_LIMIT:
        return output
    dropped = len(output) - MCP_OUTPUT_LIMIT
    return f"{output[:MCP_OUTPUT_LIMIT]}\n[output truncated: {dropped} more characters not shown]"


def _decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded."""
    return len(data.rstrip("=")) * 3 // 4
