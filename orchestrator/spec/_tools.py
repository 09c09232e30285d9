"""The tools an agent may call, defined once: the JSON Schema a model is offered and the check
of the input a model sends back are the same object.

Theory of operation: :func:`tool_definitions` turns an agent of a team into one
:class:`ToolDefinition` per entry of its ``tools``, in file order. The tools come in three kinds:

- team tools, which carry schemas with the team's names in them: ``delegate``'s ``agent`` is an
  enum of the agents this caller may delegate to, so a model cannot even be offered a wrong
  name;
- plain tools, which take any JSON object (a team file does not declare plain tools'
  parameters);
- command tools (``[tools.<name>]``), described by their ``description`` and ``parameters``.

Tools whose schema is known only at run time (an MCP server's listing, a Python function's
signature) come in as ``discovered`` definitions, keyed by the name the team file calls them.
Without one, a Python tool is offered with its table's ``description`` and ``parameters``, or
any object. An agent's ``mcp.<server>/*`` takes every discovered tool of that server, in
listing order.

A definition has two names: ``name``, the team file's (what facts record and the scripted
backend calls, e.g. ``mcp.time/get_current_time``), and ``function_name``, the one a model
is offered (letters, digits, ``_`` and ``-``, at most 64: ``time__get_current_time``); a
backend maps a model's call back by the latter. A backend that
receives input from an untrusted model checks it with :func:`check_tool_input` against the
definition it offered, so "offered" and "accepted" cannot drift apart.

Pure: no trio and no IO.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, get_args

import attrs
import jsonschema
import jsonschema.exceptions

from ._board import BOARD_TOOLS, Priority
from ._model import MCP_PREFIX, AgentSpec, CommandTool, TeamSpec, mcp_tool_ref
from ._review import REVIEW_MODES
from ._script import QuestionKind

__all__ = [
    "ToolDefinition",
    "check_tool_input",
    "command_input_problem",
    "function_name",
    "schema_problem",
    "tool_definitions",
]

#: Plain tools take whatever JSON object the model sends: the team file gives no schema.
_ANY_OBJECT: Final[Mapping[str, Any]] = {"type": "object", "additionalProperties": True}
#: What a model API accepts as a function's name (OpenAI's rule; others are laxer).
_FUNCTION_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_UNSAFE_RE: Final = re.compile(r"[^A-Za-z0-9_-]")


@attrs.frozen(kw_only=True)
class ToolDefinition:
    """One tool as offered to a model: ``parameters`` is a JSON Schema for its input object."""

    name: str
    description: str
    # JSON-compatible; treat as read-only.
    parameters: Mapping[str, Any] = attrs.field(hash=False)
    # The name a model is offered and calls; ``name`` when that is already one.
    function_name: str = attrs.field()

    @function_name.default
    def _function_name(self) -> str:
        return function_name(self.name)


def function_name(name: str) -> str:
    """The model-facing name of the tool a team file calls ``name``.

    It is ``name`` itself when that is already a valid function name, and ``<server>__<tool>``
    for an MCP tool. Any other character is made ``_``. A long name is cut, with a hash of the
    whole keeping it distinct."""
    if _FUNCTION_NAME_RE.match(name):
        return name
    if name in BOARD_TOOLS:
        return name.replace(".", "_")  # board.claim: board_claim
    ref = mcp_tool_ref(name)
    readable = f"{ref.server}__{ref.tool}" if ref is not None else name
    safe = _UNSAFE_RE.sub("_", readable)
    if safe == readable and len(safe) <= 64:
        return safe
    # Two names may come to the same safe text (a.b and a_b): a hash of the whole tells
    # them apart.
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{safe[:55]}_{digest}"


def tool_definitions(
    team: TeamSpec,
    agent: AgentSpec,
    discovered: Mapping[str, ToolDefinition] | None = None,
) -> tuple[ToolDefinition, ...]:
    """The tools ``agent`` of ``team`` may call, in the order its ``tools`` lists them.

    ``delegate`` and ``handoff`` are left out when ``delegates_to`` is empty: there is
    nobody to name (``teams check`` reports that team file). ``discovered``: the
    definitions known at run time, by team-file name; an MCP tool the agent names that is
    not among them (its server is down, or does not list it) is left out, not guessed.
    """
    discovered = discovered or {}
    routes = {"delegate", "handoff"}
    offered: dict[str, ToolDefinition] = {}
    for name in agent.tools:
        if name in routes and not agent.delegates_to:
            continue
        ref = mcp_tool_ref(name)
        if ref is not None and ref.is_wildcard:
            prefix = f"{MCP_PREFIX}{ref.server}/"
            for key, definition in discovered.items():
                if key.startswith(prefix):
                    offered.setdefault(key, definition)
        elif name in discovered:
            offered.setdefault(name, discovered[name])
        elif ref is None:
            offered.setdefault(name, _definition(team, agent, name))
    return tuple(offered.values())


def check_tool_input(
    definitions: Sequence[ToolDefinition], tool_name: str, arguments: object
) -> str | None:
    """Why a model's call of ``tool_name`` with ``arguments`` cannot run, or None if it can.

    The message names the tool, the offending place in the input and what was expected, in
    words a model can act on when it reads the message as the call's result.
    """
    definition = next((d for d in definitions if d.name == tool_name), None)
    if definition is None:
        offered = ", ".join(d.function_name for d in definitions) or "none"
        return f"there is no tool named {tool_name!r} (tools: {offered})"
    return _input_problem(tool_name, definition.parameters, arguments)


def _definition(team: TeamSpec, agent: AgentSpec, name: str) -> ToolDefinition:
    targets = list(agent.delegates_to)
    if name == "delegate":
        reviewed = [t for t in targets if team.reviewer_of(t) is not None]
        review: dict[str, Mapping[str, Any]] = {}
        if reviewed:
            review["review"] = {
                "type": "string",
                "enum": list(REVIEW_MODES),
                "description": (
                    f"When the work of {', '.join(reviewed)} is reviewed: always (before this "
                    "call returns) or on_request (when you call review). Default: "
                    f"{team.review_mode}."
                ),
            }
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
                optional=tuple(review),
                **review,
            ),
        )
    if name == "review":
        return ToolDefinition(
            name=name,
            description=(
                "Have a finished delegation's work checked by its reviewer, who answers with a "
                "verdict; on changes_requested the worker fixes its work and is reviewed again. "
                "The result is the last verdict."
            ),
            parameters=_object(
                task={
                    "type": "string",
                    "minLength": 1,
                    "description": "The delegation's task id (task-N, in its delegate result).",
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
    if name in BOARD_TOOLS:
        return _board_definition(team, name)
    table = team.command_tool(name) or team.python_tool(name)
    if table is not None and table.description:
        description = table.description
    else:
        description = f"The {name} tool of team {team.name}."
    parameters: Mapping[str, Any] = _ANY_OBJECT
    if table is not None and table.parameters is not None:
        parameters = dict(table.parameters)
    return ToolDefinition(name=name, description=description, parameters=parameters)


def _board_definition(team: TeamSpec, name: str) -> ToolDefinition:
    """A board tool: its item is one of the board's ids (an enum, as delegate's agents)."""
    ids = [i.id for i in team.board.items] if team.board is not None else []
    item = {"type": "string", "enum": ids, "description": "The item's id."}
    text = {"type": "string", "minLength": 1, "maxLength": 4000}
    descriptions = {
        "board.list": "List the team's board: each item's id, title, status, assignee, "
        "dependencies and latest comments.",
        "board.claim": "Claim an open item: it is yours until done. Refused when someone "
        "else has it.",
        "board.update": "Change an item's title, description, priority or assignee, or say "
        "it is ready for review.",
        "board.comment": "Comment on an item (everyone on the board reads it).",
        "board.block": "Say an item is blocked, on whom it waits and why.",
        "board.done": "Mark an item done.",
    }
    parameters: dict[str, Any]
    if name == "board.list":
        parameters = _object()
    elif name == "board.update":
        parameters = _object(
            item=item,
            title=text,
            description={"type": "string", "maxLength": 4000},
            priority={"type": "string", "enum": [p.value for p in Priority]},
            assignee={
                "type": "string",
                "description": "An agent's name, or a person as @principal.",
            },
            reviewing={"type": "boolean", "description": "true: ready for review."},
            optional=("title", "description", "priority", "assignee", "reviewing"),
        )
    elif name == "board.comment":
        parameters = _object(item=item, text=text)
    elif name == "board.block":
        parameters = _object(
            item=item,
            reason=text,
            waiting_for={
                "type": "string",
                "description": "Whom it waits for: an agent's name or a person as @principal.",
            },
            optional=("waiting_for",),
        )
    else:
        parameters = _object(item=item)
    return ToolDefinition(name=name, description=descriptions[name], parameters=parameters)


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
