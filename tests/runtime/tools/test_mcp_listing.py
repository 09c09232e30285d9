"""Which tools of an MCP server's listing are offered to a model: names the MCP specification
allows, each once, input schemas that are JSON Schemas of objects, at most ``MCP_MAX_TOOLS``,
descriptions cut; each tool left out is logged with the server, the tool and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from orchestrator.runtime.tools._mcp_listing import (
    MCP_DESCRIPTION_LIMIT,
    MCP_MAX_TOOLS,
    offerable,
)
from tests.support.examples import examples

OBJECT: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}


def tool(name: str, schema: Any = OBJECT, description: str | None = None) -> mcp_types.Tool:
    return mcp_types.Tool.model_construct(name=name, input_schema=schema, description=description)


def names(tools: tuple[mcp_types.Tool, ...]) -> list[str]:
    return [t.name for t in tools]


def dropped(logs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(e["tool"], e["problem"]) for e in logs if e["event"] == "mcp tool dropped"]


class TestNames:
    @pytest.mark.parametrize("name", ["a", "read_file", "fs.read", "a-b", "A9", "n" * 128])
    def test_a_name_the_specification_allows_is_offered(self, name: str) -> None:
        assert names(offerable("s", [tool(name)])) == [name]

    @pytest.mark.parametrize("name", ["", "a b", "a/b", "naïve", "a\n", "n" * 129])
    def test_any_other_name_is_dropped_and_said(self, name: str) -> None:
        with capture_logs() as logs:
            assert offerable("s", [tool(name), tool("ok")]) == (tool("ok"),)
        [(shown, problem)] = dropped(logs)
        assert problem.startswith("a tool name is 1 to 128 letters, digits")
        assert logs[0]["server"] == "s"
        assert shown == (name if len(name) <= 80 else f"{name[:80]}… (129 characters)")

    def test_a_name_listed_twice_keeps_the_first(self) -> None:
        first, second = tool("t", description="first"), tool("t", description="second")
        with capture_logs() as logs:
            assert offerable("s", [first, second]) == (first,)
        assert dropped(logs) == [("t", "listed twice: the first is offered")]


class TestSchemas:
    @pytest.mark.parametrize(
        ("schema", "problem"),
        [
            ([], "its input schema is not an object"),
            ({"type": "object", "properties": {"a": {"type": "nonsense"}}}, "its input schema is "),
            ({"type": "object", "x": {1, 2}}, "its input schema is not plain JSON: "),
        ],
    )
    def test_a_schema_that_cannot_be_checked_against_is_dropped(
        self, schema: Any, problem: str
    ) -> None:
        with capture_logs() as logs:
            assert offerable("s", [tool("bad", schema), tool("good")]) == (tool("good"),)
        [(name, said)] = dropped(logs)
        assert name == "bad"
        assert said.startswith(problem), said

    def test_a_schema_too_deep_to_read_is_dropped(self) -> None:
        deep: dict[str, Any] = {"type": "object"}
        for _ in range(5000):
            deep = {"type": "object", "properties": {"a": deep}}
        with capture_logs() as logs:
            assert offerable("s", [tool("deep", deep)]) == ()
        [(name, said)] = dropped(logs)
        assert name == "deep"
        assert said.startswith("its input schema is")


class TestLimits:
    def test_past_the_most_tools_the_rest_are_dropped_with_one_warning(self) -> None:
        listing = [tool(f"t{n}") for n in range(MCP_MAX_TOOLS + 3)]
        with capture_logs() as logs:
            offered = offerable("s", listing)
        assert names(offered) == [f"t{n}" for n in range(MCP_MAX_TOOLS)]
        [warning] = [e for e in logs if e["event"] == "mcp tools dropped"]
        assert warning["problem"] == "it lists more than 1000 tools; the rest are not offered"

    def test_a_long_description_is_cut_and_says_its_length(self) -> None:
        long = "d" * (MCP_DESCRIPTION_LIMIT + 10)
        with capture_logs() as logs:
            [offered] = offerable("s", [tool("t", description=long)])
        assert offered.description == (
            f"{'d' * MCP_DESCRIPTION_LIMIT}… (cut: {MCP_DESCRIPTION_LIMIT + 10} characters)"
        )
        assert [e["event"] for e in logs] == ["mcp tool description cut"]

    def test_a_description_at_the_limit_is_whole(self) -> None:
        whole = "d" * MCP_DESCRIPTION_LIMIT
        assert offerable("s", [tool("t", description=whole)])[0].description == whole


@settings(max_examples=examples(80))
@given(
    listing=st.lists(
        st.tuples(
            st.text(alphabet="ab. /", max_size=3),
            st.sampled_from([OBJECT, {"type": "object"}, [], {"type": 5}]),
        ),
        max_size=8,
    )
)
def test_what_is_offered_is_each_good_tool_once_in_listing_order(
    listing: list[tuple[str, Any]],
) -> None:
    """Whatever a server lists, what is offered are the valid tools, first of each name,
    in its order; every other tool is said to be dropped."""
    tools = [tool(name, schema) for name, schema in listing]
    with capture_logs() as logs:
        offered = offerable("s", tools)
    good = [
        t.name
        for t in tools
        if t.name
        and " " not in t.name
        and "/" not in t.name
        and t.input_schema in (OBJECT, {"type": "object"})
    ]
    expected = list(dict.fromkeys(good))
    assert names(offered) == expected
    assert len(dropped(logs)) == len(tools) - len(expected)
