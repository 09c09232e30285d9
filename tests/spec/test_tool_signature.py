"""A function's input schema derived from its signature (what a Python tool is offered as)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.base import TeamFileError
from orchestrator.spec import (
    arguments_model,
    arguments_schema,
    docstring_summary,
    parameter_descriptions,
)


class Opaque:
    """A type pydantic has no JSON Schema for."""


def error(message: str) -> TeamFileError:
    return TeamFileError(message, file="probe")


def schema_of(function: Any) -> dict[str, Any]:
    model = arguments_model(function, name="probe", target="m:probe", error=error)
    return arguments_schema(model)


class TestArgumentsSchema:
    def test_each_parameter_is_a_property_required_unless_it_has_a_default(self) -> None:
        def add(a: int, b: int = 1) -> int:
            return a + b

        assert schema_of(add) == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
            "required": ["a"],
            "additionalProperties": False,
        }

    def test_a_parameter_without_annotation_takes_any_value(self) -> None:
        def echo(value):  # type: ignore[no-untyped-def]
            return value

        assert schema_of(echo)["properties"] == {"value": {}}

    def test_the_model_turns_input_into_keyword_arguments_by_name(self) -> None:
        def probe(model_config: str) -> str:
            return model_config

        model = arguments_model(probe, name="probe", target="m:probe", error=error)
        checked = model.model_validate({"model_config": "x"})
        assert checked.model_dump(by_alias=True) == {"model_config": "x"}

    def test_star_args_are_refused_naming_them(self) -> None:
        def probe(*items: int) -> None: ...

        with pytest.raises(TeamFileError, match=r"m:probe takes \*items: a tool's input"):
            schema_of(probe)

    def test_a_type_without_schema_is_refused_naming_the_parameter_and_the_way_out(self) -> None:
        def probe(thing: Opaque) -> None: ...

        model = None
        with pytest.raises(TeamFileError) as caught:
            model = arguments_model(
                probe, name="probe", target="m:probe", error=error, instead="do this"
            )
        assert model is None
        assert caught.value.message.startswith("parameter 'thing' of m:probe: its type ")
        assert caught.value.message.endswith("or do this")


class TestDocstringSummary:
    def test_the_first_paragraph_on_one_line(self) -> None:
        def probe() -> None:
            """Count the words
            of a text.

            Longer notes."""

        assert docstring_summary(probe) == "Count the words of a text."

    def test_empty_without_a_docstring(self) -> None:
        assert docstring_summary(lambda: None) == ""


class TestParameterDescriptions:
    def test_a_google_style_args_section_describes_each_parameter(self) -> None:
        def probe(query: str, limit: int = 3, *, exact: bool = False) -> None:
            """Look it up.

            Args:
                query: What to look for.
                limit (int): How many results,
                    at most.
                exact:

            Returns:
                limit: not a parameter's entry.
            """

        assert parameter_descriptions(probe) == {
            "query": "What to look for.",
            "limit": "How many results, at most.",
        }
        schema = schema_of(probe)
        assert schema["properties"]["query"]["description"] == "What to look for."
        assert "description" not in schema["properties"]["exact"]

    def test_none_without_an_args_section(self) -> None:
        def probe(query: str) -> None:
            """Look it up: query is what to look for."""

        assert parameter_descriptions(probe) == {}
