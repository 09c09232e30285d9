"""A tool's result recorded as an artifact.

An agent lists in ``artifacts`` the tools whose results are its declared outputs (a file it
wrote, a report, structured data): a command tool, a Python tool, an MCP tool or a plain
scripted one. A successful call of one records, in the same append as the call's completion,
a system-notification part of the turn whose ``_meta`` keeps the artifact under
:data:`~orchestrator.core.ARTIFACT_META`, in the shape a remote teammate's artifacts have
(:mod:`._remote_tasks`). So every projection that shows a remote teammate's artifact shows
a tool's the same way, and a team served over A2A sends it to its client as an artifact.

The parts: the result's structured content (an MCP tool's ``structuredContent``), or its
text when the text is a JSON object or array, as one ``{"data": ...}`` part of media type
``application/json``; any other text as one ``{"text": ...}`` part of ``text/plain``. Pure.
"""

from __future__ import annotations

from typing import Any, Final

from orchestrator.ahp.state import SystemNotificationResponsePart
from orchestrator.base import PeerProtocolError, parse_json

from ._remote_tasks import ARTIFACT_META

__all__ = ["TOOL_ARTIFACT_PREFIX", "tool_artifact_part"]

#: The ``artifactId`` of a tool's artifact: this, then the call's id.
TOOL_ARTIFACT_PREFIX: Final = "tool-"


def tool_artifact_part(
    tool_call_id: str, tool_name: str, output: str, *, structured: Any = None
) -> SystemNotificationResponsePart:
    """The part that records the result of call ``tool_call_id`` of ``tool_name`` as an
    artifact: ``structured`` (a JSON value) if given, else ``output``."""
    value = structured
    if value is None and output.lstrip()[:1] in ("{", "["):
        try:
            value = parse_json(output, protocol="tool output")
        except PeerProtocolError:
            value = None  # not JSON after all (or past the gate's limits): it is text
    parts: list[dict[str, Any]]
    if isinstance(value, dict | list):
        media_type, parts = "application/json", [{"data": value}]
    else:
        media_type, parts = "text/plain", [{"text": output}]
    artifact = {
        "artifactId": TOOL_ARTIFACT_PREFIX + tool_call_id,
        "name": tool_name,
        "mediaType": media_type,
        "toolCallId": tool_call_id,
        "append": False,
        "lastChunk": True,
        "parts": parts,
    }
    return SystemNotificationResponsePart(
        content=f"[artifact {tool_name}]", meta={ARTIFACT_META: artifact}
    )
