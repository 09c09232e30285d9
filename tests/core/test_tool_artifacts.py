"""A tool's result as an artifact part: JSON objects and arrays (or structured content) are
data, anything else is text, and the part reads back as an artifact."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.state import SystemNotificationResponsePart
from orchestrator.core import ARTIFACT_META, TOOL_ARTIFACT_PREFIX, artifact_of, tool_artifact_part
from tests.support.examples import examples

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


class TestToolArtifactPart:
    def test_a_json_object_is_data(self) -> None:
        part = tool_artifact_part("call-1", "count_rows", ' {"rows": 3}\n')
        assert artifact_of(part) == {
            "artifactId": "tool-call-1",
            "name": "count_rows",
            "mediaType": "application/json",
            "toolCallId": "call-1",
            "append": False,
            "lastChunk": True,
            "parts": [{"data": {"rows": 3}}],
        }
        assert part == SystemNotificationResponsePart(
            content="[artifact count_rows]", meta={ARTIFACT_META: artifact_of(part)}
        )

    def test_structured_content_is_the_data_whatever_the_text(self) -> None:
        part = tool_artifact_part("c", "mcp.calc/x", "8", structured={"double": 8})
        assert (artifact_of(part) or {})["parts"] == [{"data": {"double": 8}}]

    def test_text_that_only_looks_like_json_is_text(self) -> None:
        for output in ("{not json", "[1, 2", '"a string"', "42", "", "[NaN]"):
            artifact = artifact_of(tool_artifact_part("c", "t", output)) or {}
            assert artifact["mediaType"] == "text/plain", output
            assert artifact["parts"] == [{"text": output}]

    @settings(max_examples=examples(300))
    @given(JSON, st.text(max_size=10))
    def test_every_output_is_data_or_its_text_and_reads_back(self, value: Any, call: str) -> None:
        output = json.dumps(value)
        artifact = artifact_of(tool_artifact_part(call, "t", output)) or {}
        assert artifact["artifactId"] == TOOL_ARTIFACT_PREFIX + call
        if isinstance(value, dict | list):
            assert artifact["parts"] == [{"data": value}]
            assert artifact["mediaType"] == "application/json"
        else:
            assert artifact["parts"] == [{"text": output}]
            assert artifact["mediaType"] == "text/plain"
