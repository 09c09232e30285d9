"""Structured output: an agent's ``output_schema`` and the check of its final answer.

Theory of operation: an agent with an ``output_schema`` (a JSON Schema, draft 2020-12) must
end each turn with an answer that is one JSON value fitting it. :func:`check_answer` reads the
final answer's text (one JSON value, optionally inside a single Markdown code fence, as models
often write it) and validates it. It gives an :class:`Answer` holding the parsed value, or an
:class:`AnswerProblem` saying where the answer does not fit and what was wrong there.

The runtime gives a failing answer exactly one retry: the model is told the problem
(:func:`retry_prompt`) and asked again; a second failure ends the turn failed with
:meth:`AnswerProblem.error`, which names the agent.

:func:`output_schema_problem` is the check the team-file parser runs on the schema itself, so a
broken schema is refused when the file is parsed, not when an answer arrives.

Pure: no trio and no IO.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from orchestrator.base import OutputSchemaError, PeerProtocolError, compact_dumps, parse_json

__all__ = [
    "Answer",
    "AnswerProblem",
    "answer_text",
    "check_answer",
    "output_schema_of",
    "output_schema_problem",
    "retry_prompt",
]

#: One Markdown code fence around the whole answer (```json ... ```), as models often write it.
_FENCED: Final = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?```\Z", re.DOTALL)


@attrs.frozen(kw_only=True)
class Answer:
    """A final answer that fits its agent's ``output_schema``: its parsed JSON value."""

    value: Any


@attrs.frozen(kw_only=True)
class AnswerProblem:
    """Why a final answer does not fit its agent's ``output_schema``.

    ``path`` is where (a JSON path such as ``$.items[2].price``; ``$`` for the whole answer)
    and ``message`` is what was wrong there.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"at {self.path}: {self.message}"

    def error(self, agent: str) -> OutputSchemaError:
        """The error a turn fails with after the retry failed too, naming ``agent``."""
        return OutputSchemaError(
            f"agent {agent!r} answered twice with output that does not fit its "
            f"output_schema; the second answer: {self}",
            agent=agent,
            path=self.path,
            problem=self.message,
        )


def output_schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot be an agent's output schema, or None: it must be a valid JSON
    Schema (draft 2020-12). Any type of value may be asked for."""
    import jsonschema  # only for a team that has a schema (its import takes a while)
    import jsonschema.exceptions

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in exc.path)
        return f"not a valid JSON Schema: at {where or 'the top'}: {exc.message}"
    return None


def output_schema_of(value: object) -> dict[str, Any]:
    """An output_schema given in code: a JSON Schema (a mapping), or a pydantic model class,
    whose ``model_json_schema()`` it is. :class:`ValueError` says why ``value`` is neither, or
    why its schema is not a valid JSON Schema."""
    make_schema = getattr(value, "model_json_schema", None) if isinstance(value, type) else None
    schema: object
    if callable(make_schema):
        schema = make_schema()
    elif isinstance(value, Mapping):
        schema = value
    else:
        raise ValueError(
            "output_schema takes a JSON Schema (a dict) or a pydantic model class, "
            f"got {type(value).__name__}"
        )
    if not isinstance(schema, Mapping):
        raise ValueError(f"{value!r}.model_json_schema() gave no JSON Schema object")
    problem = output_schema_problem(schema)
    if problem is not None:
        raise ValueError(f"output_schema is {problem}")
    return dict(schema)


def answer_text(text: str) -> str:
    """The JSON text of an answer: ``text`` without surrounding whitespace, and without one
    Markdown code fence that wraps it whole."""
    stripped = text.strip()
    fenced = _FENCED.match(stripped)
    return fenced.group("body").strip() if fenced is not None else stripped


def check_answer(schema: Mapping[str, Any], text: str) -> Answer | AnswerProblem:
    """The parsed value of the final answer ``text`` if it fits ``schema``, else the first
    place where it does not (jsonschema's best match) and what was wrong."""
    import jsonschema
    import jsonschema.exceptions

    body = answer_text(text)
    if not body:
        return AnswerProblem(path="$", message="the answer is empty; expected one JSON value")
    try:
        value = parse_json(body, protocol="final answer")
    except PeerProtocolError as exc:
        return AnswerProblem(
            path=exc.path or "$", message=f"the answer is not one JSON value: {exc.message}"
        )
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return Answer(value=value)
    return AnswerProblem(path=error.json_path, message=error.message)


def retry_prompt(problem: AnswerProblem, schema: Mapping[str, Any]) -> str:
    """What the model is told when its answer did not fit: where and what was wrong, and the
    schema to answer with."""
    return (
        f"Your answer does not fit the required output schema: {problem}. "
        "Answer again with only one JSON value that fits this JSON Schema: "
        f"{compact_dumps(dict(schema))}"
    )
