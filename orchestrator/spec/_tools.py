"""The tools an agent may call, defined once: the JSON Schema a model is offered and the check
of the input a model sends back are the same object.

Theory of operation: :func:`tool_definitions` turns an agent of a team into one
:class:`ToolDefinition` per entry of its ``tools``, in file order. The team tools carry
schemas with the team's names in them (``delegate``'s ``agent`` is an enum of the agents this
caller may delegate to, so a model cannot even be offered a wrong name); a plain tool takes
any JSON object (a team file does not declare plain tools' parameters); a command tool
(``[tools.<name>]``) is described by its ``description``. A backend that
receives input from an untrusted model checks it with :func:`check_tool_input` against the
definition it offered, so "offered" and "accepted" cannot drift apart.

Pure: no trio and no IO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, get_args

import attrs
import jsonschema
import jsonschema.exceptions

from ._model import AgentSpec, CommandTool, TeamSpec
from ._script import QuestionKind

__all__ = [
    "ToolDefinition",
    "check_tool_input",
    "command_input_problem",
    "tool_definitions",
]

#: Plain tools take whatever JSON object the model sends: the team file gives no schema.
_ANY_OBJECT: Final[Mapping[str, Any]] = {"type": "object", "additionalProperties": True}


@attrs.frozen(kw_only=True)
class ToolDefinition:
    """One tool as offered to a model: ``parameters`` is a JSON Schema for its input object."""

    name: str
    description: str
    # JSON-compatible; treat as read-only.
    parameters: Mapping[str, Any] = attrs.field(hash=False)


def tool_definitions(team: TeamSpec, agent: AgentSpec) -> tuple[ToolDefinition, ...]:
    """The tools ``agent`` of ``team`` may call, in the order its ``tools`` lists them.

    ``delegate`` and ``handoff`` are left out when ``delegates_to`` is empty: there is
    nobody to name (``teams check`` reports that team file).
    """
    routes = {"delegate", "handoff"}
    return tuple(
        _definition(team, agent, name)
        for name in agent.tools
        if agent.delegates_to or name not in routes
    )


def check_tool_input(
    definitions: Sequence[ToolDefinition], tool_name: str, arguments: object
) -> str | None:
    """Why a model's call of ``tool_name`` with ``arguments`` cannot run, or None if it can.

    The message names the tool, the offending place in the input and what was expected, in
    words a model can act on when it reads the message as the call's result.
    """
    definition = next((d for d in definitions if d.name == tool_name), None)
    if definition is None:
        offered = ", ".join(d.name for d in definitions) or "none"
        return f"there is no tool named {tool_name!r} (tools: {offered})"
    return _input_problem(tool_name, definition.parameters, arguments)


def _definition(team: TeamSpec, agent: AgentSpec, name: str) -> ToolDefinition:
    targets = list(agent.delegates_to)
    if name == "delegate":
        return ToolDefinition(
            name=name,
            description=(
                "Start a worker agent on a task and wait for its report, which comes back as "
                "this call's result. Call it several times in one response to run workers in "
                f"parallel (at most {team.parallel_budget} run at once; the rest wait)."
            ),
            parameters=_object(
                agent={
                    "type": "string",
                    "enum": targets,
                    "description": "The worker to start: " + _roles(team, targets),
                },
                task={
                    "type": "string",
                    "minLength": 1,
                    "description": "What the worker should do, self-contained: it sees nothing "
                    "else of this conversation.",
                },
            ),
        )
    if name == "handoff":
        return ToolDefinition(
            name=name,
            description=(
                "Hand the whole task to a specialist, who works on it until done; the task "
                "then comes back to the agent named by resume."
            ),
            parameters=_object(
                agent={
                    "type": "string",
                    "enum": targets,
                    "description": "The specialist: " + _roles(team, targets),
                },
                reason={"type": "string", "minLength": 1, "description": "Why the work moves."},
                resume={
                    "type": "string",
                    "enum": list(team.agent_names),
                    "description": f"Who gets the task back (default: {agent.name}).",
                },
                optional=("resume",),
            ),
        )
    if name == "ask":
        return ToolDefinition(
            name=name,
            description="Ask the user a question and wait for the answer.",
            parameters=_object(
                question={"type": "string", "minLength": 1},
                kind={
                    "type": "string",
                    "enum": list(get_args(QuestionKind)),
                    "description": "How the answer is read (default: text).",
                },
                options={
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The choices, for single-select and multi-select only.",
                },
                optional=("kind", "options"),
            ),
        )
    command = team.command_tool(name)
    if command is not None and command.description:
        description = command.description
    else:
        description = f"The {name} tool of team {team.name}."
    parameters = dict(command.parameters) if command is not None else _ANY_OBJECT
    return ToolDefinition(name=name, description=description, parameters=parameters)


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot be a tool's input schema, or None: it must be a valid JSON Schema
    (draft 2020-12) whose instances may be objects (a tool's input is one)."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in exc.path)
        return f"not a valid JSON Schema: at {where or 'the top'}: {exc.message}"
    kind = schema.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        return f"a tool's input is an object: the schema's type must be \"object\", not {kind!r}"
    return None


def command_input_problem(command: CommandTool, arguments: object) -> str | None:
    """Why ``arguments`` do not fit ``command``'s input schema, in words a model can act on."""
    return _input_problem(command.name, command.parameters, arguments)


def _input_problem(tool_name: str, schema: Mapping[str, Any], arguments: object) -> str | None:
    """The first place where ``arguments`` do not fit ``schema``, and what was expected."""
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = error.json_path if error.json_path != "$" else "the input"
    return f"invalid input for {tool_name}: {where}: {error.message}"


def _object(*, optional: Sequence[str] = (), **properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": [p for p in properties if p not in optional],
        "additionalProperties": False,
    }


def _roles(team: TeamSpec, names: Sequence[str]) -> str:
    return "; ".join(f"{n} ({team.agent(n).role})" for n in names) or "nobody"
