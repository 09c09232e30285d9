"""Structured output: reading a final answer and checking it against its schema."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import OutputSchemaError, compact_dumps
from orchestrator.spec import (
    Answer,
    AnswerProblem,
    answer_text,
    check_answer,
    output_schema_of,
    output_schema_problem,
    retry_prompt,
)
from tests.support.strategies import json_values

SCORE: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "tags": {"type": "array"}},
    "required": ["score"],
}

#: What a model may put around its JSON: spacing, and one Markdown fence (tagged or not).
_wrappings = st.sampled_from(
    [
        "{}",
        "  {}\n",
        "```json\n{}\n```",
        "```\n{}\n```",
        "\n```JSON \r\n{}\r\n```\n",
    ]
)


class TestCheckAnswer:
    @given(json_values, _wrappings)
    def test_any_json_value_is_read_back_as_it_was(self, value: Any, wrapping: str) -> None:
        """Whatever JSON value a model writes, however wrapped, an empty schema accepts it
        and the parsed value is the value written."""
        text = wrapping.replace("{}", compact_dumps(value))
        assert check_answer({}, text) == Answer(value=value)

    @given(json_values.filter(lambda v: not isinstance(v, str)))
    def test_a_value_of_the_wrong_type_is_a_problem_at_the_top(self, value: Any) -> None:
        problem = check_answer({"type": "string"}, compact_dumps(value))
        assert isinstance(problem, AnswerProblem)
        assert problem.path == "$"
        assert problem.message.endswith("is not of type 'string'")

    @pytest.mark.parametrize(
        ("text", "path", "message"),
        [
            ('{"score": "3"}', "$.score", "'3' is not of type 'integer'"),
            ('{"score": 1, "tags": 2}', "$.tags", "2 is not of type 'array'"),
            ("{}", "$", "'score' is a required property"),
            ("   ", "$", "the answer is empty; expected one JSON value"),
            (
                "Here it is: {}",
                "$",
                "the answer is not one JSON value: not JSON: Expecting value (line 1, column 1)",
            ),
            (
                '{"score": NaN}',
                "$.score",
                "the answer is not one JSON value: NaN is not a JSON number",
            ),
        ],
    )
    def test_a_problem_says_where_and_what(self, text: str, path: str, message: str) -> None:
        assert check_answer(SCORE, text) == AnswerProblem(path=path, message=message)

    def test_a_fence_inside_the_text_is_not_taken_apart(self) -> None:
        """Only a fence around the whole answer is taken off."""
        text = 'Result:\n```json\n{"score": 1}\n```'
        assert answer_text(text) == text
        assert isinstance(check_answer(SCORE, text), AnswerProblem)


class TestMessages:
    def test_the_retry_prompt_names_the_problem_and_the_schema(self) -> None:
        problem = AnswerProblem(path="$.score", message="'3' is not of type 'integer'")
        assert retry_prompt(problem, {"type": "object"}) == (
            "Your answer does not fit the required output schema: at $.score: '3' is not of "
            "type 'integer'. Answer again with only one JSON value that fits this JSON "
            'Schema: {"type":"object"}'
        )

    def test_the_final_error_names_the_agent(self) -> None:
        error = AnswerProblem(path="$", message="the answer is empty").error("analyst")
        assert isinstance(error, OutputSchemaError)
        assert (error.agent, error.path, error.problem) == ("analyst", "$", "the answer is empty")
        assert str(error) == (
            "agent 'analyst' answered twice with output that does not fit its output_schema; "
            "the second answer: at $: the answer is empty"
        )

    def test_a_schema_of_any_type_may_be_asked_for(self) -> None:
        assert output_schema_problem({"type": "array", "items": {"type": "string"}}) is None
        assert output_schema_problem({"type": 3}) == (
            "not a valid JSON Schema: at .type: 3 is not valid under any of the given schemas"
        )


class TestOutputSchemaOf:
    """The code-first form: a dict or a pydantic model class (``Agent(output_schema=...)``)."""

    def test_a_pydantic_model_gives_its_json_schema(self) -> None:
        import pydantic

        class Score(pydantic.BaseModel):
            score: int
            notes: str = ""

        schema = output_schema_of(Score)
        assert schema == Score.model_json_schema()
        assert check_answer(schema, '{"score": 2}') == Answer(value={"score": 2})
        assert check_answer(schema, '{"notes": "x"}') == AnswerProblem(
            path="$", message="'score' is a required property"
        )

    def test_a_dict_is_checked_as_a_schema(self) -> None:
        assert output_schema_of({"type": "string"}) == {"type": "string"}
        with pytest.raises(
            ValueError, match=r"output_schema is not a valid JSON Schema: at \.type"
        ):
            output_schema_of({"type": "text"})

    def test_anything_else_is_refused_by_name(self) -> None:
        with pytest.raises(
            ValueError, match="a JSON Schema \\(a dict\\) or a pydantic model class, got int"
        ):
            output_schema_of(3)
