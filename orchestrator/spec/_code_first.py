"""Teams defined in Python: :class:`Agent`, :class:`Team`, :func:`tool`, :class:`Command` and
:class:`Mcp` build the :class:`~._model.TeamSpec` a team file does.

Theory of operation: a :class:`Team` writes its agents, tools and servers as the document
a team file decodes to (the ``[team]``, ``[agents.<name>]``, ``[tools.<name>]`` and
``[mcp.<name>]`` tables, each key as the file spells it), then hands it to the parser of team
files (:func:`~._teamfile.team_from_mapping`). One set of checks therefore holds both forms,
with the same messages. Only the place differs: the key path ``agents.writer.delegates_to[0]``
is written ``Agent("writer").delegates_to[0]``, after ``Team("name")`` where a file's name
would be. A keyword the calls do not take is Python's own :class:`TypeError`, and so is an
object where an :class:`Agent`, a tool or an :class:`Mcp` belongs.

The one thing a file cannot hold is a function. A :func:`tool`-decorated function goes into
its ``[tools.<name>]`` table as ``python`` (the function itself), and the parser records it
on the :class:`~._model.PythonTool` it makes: the runtime calls it as it is, without an import.
:meth:`Team.to_toml` writes it as its import path (``module:qualname``), so the file it writes
parses to an equal spec (functions are not compared; their paths are).

Python values are written as a file would have them. Names may be given as the objects they
name (an :class:`Agent` in ``delegates_to``, a :func:`tool` in ``tools``). A plain function in
``tools`` is made a tool as ``@tool`` would. A
:class:`datetime.timedelta` is written as a duration (``"90s"``), or as seconds for an
agent's ``timeout``. Scripted ``turns`` are the file's tables as dicts
(``{"steps": [{"say": "..."}]}``).

Pure: no trio and no IO.
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, ParamSpec, TypeVar, overload

import attrs

from orchestrator.base import TeamFileError

from ._model import TeamSpec
from ._output import output_schema_of
from ._parse_tools import _FACTORY_PATH_RE, callable_target
from ._teamfile import team_from_mapping
from ._tool_signature import arguments_model, arguments_schema, docstring_summary
from ._wording import _describe

__all__ = ["Agent", "Command", "Item", "Mcp", "Team", "Tool", "tool"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: A key path's first segment and name: ``agents.writer`` or ``agents."a b"``.
_NAMED_PATH_RE: Final = re.compile(r'(agents|tools|mcp)\.([A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*")(.*)\Z')
_CALLS: Final = {"agents": "Agent", "mcp": "Mcp"}
_BARE_KEY_RE: Final = re.compile(r"[A-Za-z0-9_-]+\Z")


# ── tools ───────────────────────────────────────────────────────────────────


@attrs.frozen(kw_only=True)
class Tool(Generic[_P, _R]):
    """A function made a tool by :func:`tool`; calling it calls the function.

    ``parameters`` is the input schema a model is offered: derived from the signature (as the
    runtime derives it for a ``python = "module:function"`` table) unless given.
    """

    function: Callable[_P, _R]
    name: str
    # Given to the decorator; "" : the docstring's first paragraph (see ``summary``).
    description: str = ""
    needs_approval: bool = False
    artifact: bool = False
    timeout: datetime.timedelta | str | None = None
    # Given to the decorator, or None: derived from the signature.
    given_parameters: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    parameters: Mapping[str, Any] = attrs.field(hash=False)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.function(*args, **kwargs)

    @property
    def __wrapped__(self) -> Callable[_P, _R]:
        """The function (what :func:`inspect.signature` and :func:`inspect.unwrap` follow)."""
        return self.function

    @property
    def summary(self) -> str:
        """What a model is told the tool does: ``description``, or the docstring's first
        paragraph."""
        return self.description or docstring_summary(self.function)

    @property
    def target(self) -> str:
        """The function's ``module:qualname``."""
        return callable_target(self.function)


@overload
def tool(function: Callable[_P, _R], /) -> Tool[_P, _R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str = "",
    needs_approval: bool = False,
    artifact: bool = False,
    timeout: datetime.timedelta | str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Callable[[Callable[_P, _R]], Tool[_P, _R]]: ...
def tool(
    function: Callable[_P, _R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str = "",
    needs_approval: bool = False,
    artifact: bool = False,
    timeout: datetime.timedelta | str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Tool[_P, _R] | Callable[[Callable[_P, _R]], Tool[_P, _R]]:
    """Make a plain or async function a tool an :class:`Agent` lists in ``tools``.

    ``@tool`` alone, or ``@tool(...)`` with settings. The input schema is derived from the
    signature and type hints now, so a parameter whose type has no JSON Schema is a
    :class:`~orchestrator.base.TeamFileError` naming it here, not when a team starts.

    Args:
        function: The function (``@tool`` without parentheses).
        name: The tool's name; the function's name if not given.
        description: What a model is told the tool does; the docstring's first paragraph if
            not given.
        needs_approval: Whether every agent listing the tool waits for a decision before a
            call runs (as if each listed it in ``needs_approval``).
        artifact: Whether a call's result is recorded as an artifact in every agent listing
            the tool (as if each listed it in ``artifacts``).
        timeout: How long a call may run (a duration such as ``"90s"``); 10 minutes if not
            given.
        parameters: The input's JSON Schema, instead of the one derived from the signature
            (the input is then passed on as JSON decoded it).
    """

    def decorate(function: Callable[_P, _R]) -> Tool[_P, _R]:
        if isinstance(function, Tool):  # a tool made again, with other settings
            function = function.function
        target = callable_target(function)

        def error(message: str) -> TeamFileError:
            return TeamFileError(message, file="@tool")

        if not callable(function):
            raise error(f"expected a function, got {_describe(function)}")
        if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
            raise error(f"{target} is a generator function: a tool returns one result")
        tool_name = name if name is not None else getattr(function, "__name__", "")
        schema: Mapping[str, Any]
        if parameters is not None:
            schema = dict(parameters)
        else:
            model = arguments_model(
                function,
                name=tool_name or "tool",
                target=target,
                error=error,
                instead="give the input's schema as @tool(parameters=...)",
            )
            schema = arguments_schema(model)
        return Tool(
            function=function,
            name=tool_name,
            description=description,
            needs_approval=needs_approval,
            artifact=artifact,
            timeout=timeout,
            given_parameters=parameters,
            parameters=schema,
        )

    return decorate if function is None else decorate(function)


def _frozen(items: Any) -> Any:
    """A list as a tuple (so the tool can be hashed); anything else as it is, for the parser
    to name (a string where an argv belongs, say)."""
    return tuple(items) if isinstance(items, list) else items


@attrs.frozen(kw_only=True)
class Command:
    """A tool that runs a program: a ``[tools.<name>]`` table with ``command``.

    Args (as the table's keys): ``command`` (an argv), ``description``, ``timeout`` (a
    duration), ``cwd``, ``env``, ``env_passthrough`` and ``parameters`` (the input's JSON
    Schema).
    """

    name: str = attrs.field(kw_only=False)
    command: Sequence[str] = attrs.field(converter=_frozen)
    description: str | None = None
    timeout: datetime.timedelta | str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    env_passthrough: Sequence[str] | None = attrs.field(default=None, converter=_frozen)
    parameters: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    parameters_file: str | None = None

    def table(self) -> dict[str, Any]:
        return _given(self, skip=("name",))


@attrs.frozen(kw_only=True)
class Mcp:
    """A Model Context Protocol tool server: an ``[mcp.<name>]`` table. An agent names its
    tools ``"mcp.<name>/<tool>"`` (or ``"mcp.<name>/*"``), or as ``server.tool("<tool>")``.
    """

    name: str = attrs.field(kw_only=False)
    command: Sequence[str] | None = attrs.field(default=None, converter=_frozen)
    url: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    env_passthrough: Sequence[str] | None = attrs.field(default=None, converter=_frozen)
    headers: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    timeout: datetime.timedelta | str | None = None
    start_timeout: datetime.timedelta | str | None = None

    def tool(self, name: str) -> str:
        """How an agent lists this server's tool ``name`` (``"*"``: every tool it lists)."""
        return f"mcp.{self.name}/{name}"

    def table(self) -> dict[str, Any]:
        return _given(self, skip=("name",))


# ── agents and teams ────────────────────────────────────────────────────────

#: What an agent's ``tools`` (and ``needs_approval``, ``approves``) may hold: a plain function
#: is made a tool as ``@tool`` would.
ToolRef = str | Tool[..., Any] | Command | Callable[..., Any]


def _tools(items: Iterable[Any]) -> tuple[Any, ...]:
    """``items`` with each plain function made a :class:`Tool`."""
    return tuple(
        tool(item) if callable(item) and not isinstance(item, Tool | Command) else item
        for item in items
    )


def _optional_tools(items: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if items is None else _tools(items)


@attrs.frozen(kw_only=True)
class Agent:
    """An agent: an ``[agents.<name>]`` table. Each keyword is the table's key of that name;
    one left out (None) is left out of the table, so it takes the file's default.

    ``tools`` holds names, :func:`tool`-decorated functions and :class:`Command` tools;
    ``delegates_to`` and ``reviews`` hold names or agents. ``output_schema`` is a JSON Schema
    (a mapping) or a pydantic model class, whose ``model_json_schema()`` it stands for. ``model``,
    ``base_url``, ``api_key_env``, ``api_key_header``, ``query``, ``stream_usage``,
    ``structured_output``, ``temperature``, ``read_timeout`` and ``max_retries`` are the
    ``openai`` backend's. ``a2a`` (an A2A agent's URL) and ``headers`` make it a remote
    teammate. Nothing is checked until the agent is part of a :class:`Team`.
    """

    name: str = attrs.field(kw_only=False)
    role: str | None = None
    instructions: str | None = None
    backend: str | None = None
    interactivity: str | None = None
    tools: Sequence[ToolRef] = attrs.field(default=(), converter=_tools)
    delegates_to: Sequence[str | Agent] = ()
    needs_approval: Sequence[ToolRef] = attrs.field(default=(), converter=_tools)
    approved_by: str | None = None
    approves: Sequence[ToolRef] | None = attrs.field(default=None, converter=_optional_tools)
    artifacts: Sequence[ToolRef] = attrs.field(default=(), converter=_tools)
    timeout: float | datetime.timedelta | None = None
    tool_results: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    turns: Sequence[Mapping[str, Any]] | None = None
    output_schema: Mapping[str, Any] | type | None = attrs.field(default=None, hash=False)
    reviews: Sequence[str | Agent] = ()
    max_review_rounds: int | None = None
    review: str | None = None
    settings: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    a2a: str | None = None
    headers: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    api_key_header: str | None = None
    query: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    stream_usage: bool | None = None
    structured_output: str | None = None
    temperature: float | None = None
    read_timeout: float | None = None
    max_retries: int | None = None

    def table(self) -> dict[str, Any]:
        """The agent's ``[agents.<name>]`` table (its tools by name)."""
        table = _given(
            self,
            skip=(
                "name",
                "tools",
                "delegates_to",
                "reviews",
                "needs_approval",
                "artifacts",
                "timeout",
                "output_schema",
            ),
        )
        if isinstance(self.output_schema, Mapping):
            # Checked by the file's rules, its errors placed at this call.
            table["output_schema"] = _plain(self.output_schema)
        elif self.output_schema is not None:
            try:
                table["output_schema"] = output_schema_of(self.output_schema)
            except ValueError as exc:
                name = json.dumps(self.name, ensure_ascii=False)
                raise ValueError(f"Agent({name}).output_schema: {exc}") from None
        if self.tools:
            table["tools"] = [_tool_name(t) for t in self.tools]
        if self.delegates_to:
            table["delegates_to"] = [_plain(a) for a in self.delegates_to]
        if self.reviews:
            table["reviews"] = [_plain(a) for a in self.reviews]
        # A tool decorated with needs_approval=True waits in every agent listing it.
        flagged = [t.name for t in self.tools if isinstance(t, Tool) and t.needs_approval]
        listed = [_tool_name(t) for t in self.needs_approval]
        approval = listed + [n for n in flagged if n not in listed]
        if approval:
            table["needs_approval"] = approval
        # A tool decorated with artifact=True is an artifact in every agent listing it.
        marked = [t.name for t in self.tools if isinstance(t, Tool) and t.artifact]
        given = [_tool_name(t) for t in self.artifacts]
        artifacts = given + [n for n in marked if n not in given]
        if artifacts:
            table["artifacts"] = artifacts
        if self.timeout is not None:
            timeout = self.timeout
            seconds = (
                timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
            )
            table["timeout"] = seconds
        return {k: table[k] for k in _AGENT_ORDER if k in table}


_AGENT_ORDER: Final = tuple(a.name for a in attrs.fields(Agent) if a.name != "name")


@attrs.frozen(kw_only=True)
class Item:
    """A board's work item: a ``[[board.items]]`` table (see :class:`Team`'s ``board``).

    ``assignee`` is an :class:`Agent` (or its name), or a person as ``"@principal"``;
    ``depends_on`` holds ids or items.
    """

    id: str = attrs.field(kw_only=False)
    title: str = attrs.field(kw_only=False)
    description: str | None = None
    priority: str | None = None
    depends_on: Sequence[str | Item] = ()
    assignee: str | Agent | None = None

    def table(self) -> dict[str, Any]:
        """The item's ``[[board.items]]`` table."""
        table: dict[str, Any] = {"id": self.id, "title": self.title}
        table.update(_given(self, skip=("id", "title", "depends_on")))
        if self.depends_on:
            table["depends_on"] = [d if isinstance(d, str) else d.id for d in self.depends_on]
        return table


@attrs.frozen(kw_only=True, eq=False)
class Team:
    """A team defined in Python; ``spec`` is the :class:`~._model.TeamSpec` a team file with
    the same tables gives, checked by the same rules (a
    :class:`~orchestrator.base.TeamFileError` when one fails, naming ``Team("name")``
    and the call).

    ``agents`` are in the order a file would list them; a ``coordinator`` given as an
    :class:`Agent` that is not among them comes first. ``tools`` are the team's
    ``[tools.<name>]`` tables: those its agents list (:func:`tool`-decorated functions,
    :class:`Command` tools) are added by themselves. ``openai`` is the ``[openai]`` table and
    ``background`` the ``[[background]]`` tables (dicts with the file's keys), and ``board``
    the ``[board]``'s work items (:class:`Item`).
    """

    name: str = attrs.field(kw_only=False)
    coordinator: str | Agent
    agents: Sequence[Agent] = ()
    topology: str | None = None
    parallel_budget: int | None = None
    description: str | None = None
    on_restart: str | None = None
    tools: Sequence[Tool[..., Any] | Command | Callable[..., Any]] = attrs.field(
        default=(), converter=_tools
    )
    mcp: Sequence[Mcp] = ()
    openai: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    background: Sequence[Mapping[str, Any]] = ()
    #: The ``[board]``'s work items (None: no board).
    board: Sequence[Item] | None = None
    #: The team file's document, as the calls wrote it.
    document: Mapping[str, Any] = attrs.field(init=False, repr=False)
    spec: TeamSpec = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        label = f"Team({json.dumps(self.name, ensure_ascii=False)})"
        document = self._document(label)
        functions = {name for name, table in document.get("tools", {}).items() if "python" in table}
        try:
            spec = team_from_mapping(document, file=label)
        except TeamFileError as exc:
            raise TeamFileError.of([_at_call(p, functions) for p in exc.problems]) from None
        object.__setattr__(self, "document", document)
        object.__setattr__(self, "spec", spec)
        # The file a session records, so a run of the team can be resumed from it; none when
        # a function has no import path (a resume then names the team again: --team).
        with contextlib.suppress(TeamFileError):
            object.__setattr__(self, "spec", attrs.evolve(spec, source=self.to_toml()))

    def _document(self, label: str) -> dict[str, Any]:
        for what, items, kinds in (
            ("agents", self.agents, (Agent,)),
            ("tools", self.tools, (Tool, Command)),
            ("mcp", self.mcp, (Mcp,)),
            ("board", self.board or (), (Item,)),
        ):
            for index, item in enumerate(items):
                if not isinstance(item, kinds):
                    expected = " or ".join(k.__name__ for k in kinds)
                    raise TypeError(
                        f"{label}: {what}[{index}] is {type(item).__name__}, not {expected}"
                    )
        agents = list(self.agents)
        lead = self.coordinator
        if isinstance(lead, Agent) and all(a.name != lead.name for a in agents):
            agents.insert(0, lead)
        team: dict[str, Any] = {"name": self.name, "coordinator": _plain(lead)}
        for key in ("topology", "parallel_budget", "description", "on_restart"):
            value = getattr(self, key)
            if value is not None:
                team[key] = _plain(value)
        document: dict[str, Any] = {"team": team}
        if self.openai is not None:
            document["openai"] = _plain(self.openai)
        tools = _tool_tables(self.tools, agents, label)
        if tools:
            document["tools"] = tools
        if self.mcp:
            document["mcp"] = {server.name: server.table() for server in self.mcp}
        document["agents"] = {agent.name: agent.table() for agent in agents}
        if self.background:
            document["background"] = [_plain(entry) for entry in self.background]
        if self.board is not None:
            document["board"] = {"items": [item.table() for item in self.board]}
        return document

    def to_toml(self) -> str:
        """The team file that parses to an equal :attr:`spec`: each decorated function
        written as its import path. A :class:`~orchestrator.base.TeamFileError` names a tool
        whose function has none (a lambda, a function defined inside another, or one of a
        script run as ``__main__``)."""
        document = dict(self.document)
        if "tools" in document:
            tables: dict[str, Any] = {}
            for name, table in document["tools"].items():
                if callable(table.get("python")):
                    table = {**table, "python": _import_path(self.spec.file, name, table["python"])}
                tables[name] = table
            document["tools"] = tables
        return _toml_document(document)


# ── building the document ───────────────────────────────────────────────────


def _tool_tables(
    declared: Iterable[object], agents: Sequence[Agent], label: str
) -> dict[str, dict[str, Any]]:
    """The ``[tools.<name>]`` tables: the team's, then those its agents list, in that order.
    One name given to two different tools is an error naming it."""
    tables: dict[str, dict[str, Any]] = {}
    given: dict[str, Tool[..., Any] | Command] = {}
    listed = [
        t for a in agents for t in (*a.tools, *a.needs_approval, *a.artifacts, *(a.approves or ()))
    ]
    for item in [*declared, *listed]:
        if not isinstance(item, Tool | Command):
            continue  # a name
        name = item.name
        if name in given:
            if given[name] != item:
                raise TeamFileError(
                    f"two different tools are called {name!r} ({_what(given[name])} and "
                    f"{_what(item)}); give one another name",
                    file=label,
                    key_path=f"tool({json.dumps(name)})",
                )
            continue
        given[name] = item
        tables[name] = item.table() if isinstance(item, Command) else _python_table(item)
    return tables


def _python_table(tool: Tool[..., Any]) -> dict[str, Any]:
    table: dict[str, Any] = {"python": tool.function}
    if tool.description:
        table["description"] = tool.description
    if tool.timeout is not None:
        table["timeout"] = _plain(tool.timeout)
    if tool.given_parameters is not None:
        table["parameters"] = _plain(tool.given_parameters)
    return table


def _what(item: Tool[..., Any] | Command) -> str:
    return f"the function {item.target}" if isinstance(item, Tool) else "a command"


def _tool_name(item: ToolRef) -> str:
    return item if isinstance(item, str) else _plain(item)


def _given(instance: Any, *, skip: Sequence[str]) -> dict[str, Any]:
    """The fields of ``instance`` that were given (not None), as a file's values."""
    return {
        field.name: _plain(value)
        for field in attrs.fields(type(instance))
        if field.name not in skip and (value := getattr(instance, field.name)) is not None
    }


def _plain(value: Any) -> Any:
    """``value`` as a decoded team file has it: names for the objects that have one,
    durations as text, lists for sequences, dicts for mappings."""
    match value:
        case Agent() | Tool() | Command():
            return value.name
        case Item():
            return value.id
        case enum.Enum():
            return _plain(value.value)
        case datetime.timedelta():
            return _duration(value)
        case str() | bool() | int() | float():
            return value
        case Mapping():
            return {key: _plain(item) for key, item in value.items()}
        case list() | tuple():
            return [_plain(item) for item in value]
    return value  # the parser names what a file cannot hold


def _duration(value: datetime.timedelta) -> str:
    """``value`` in the file's duration form (``"1h30m"``); a value the form cannot say is
    written as Python does, and the parser names it."""
    seconds = value.total_seconds()
    if seconds <= 0 or seconds != int(seconds):
        return str(value)
    rest = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def _at_call(problem: TeamFileError, functions: Collection[str]) -> TeamFileError:
    """``problem`` placed at the Python call: ``Agent("writer").tools[0]`` rather than the key
    path ``agents.writer.tools[0]``; ``functions``: the tools that are decorated functions."""
    path = problem.key_path
    match = _NAMED_PATH_RE.match(path)
    if match is not None:
        section, name, rest = match.groups()
        quoted = name if name.startswith('"') else json.dumps(name)
        call = _CALLS.get(section) or ("tool" if name in functions else "Command")
        path = f"{call}({quoted}){rest}"
    elif path.startswith("team."):
        path = path.removeprefix("team.")
    elif path.startswith("board.items["):
        path = "board[" + path.removeprefix("board.items[")
    return TeamFileError(problem.message, file=problem.file, key_path=path)


def _import_path(label: str, name: str, function: Callable[..., Any]) -> str:
    """The ``module:qualname`` a file names ``function`` by; an error naming the tool when
    importing that would not find it."""
    target = callable_target(function)
    module, _, qualname = target.partition(":")

    def error(why: str) -> TeamFileError:
        return TeamFileError(
            f"{target} cannot be written in a team file: {why}; define it at the top level of "
            "a module, or keep this team in Python",
            file=f"{label}.to_toml()",
            key_path=f"tool({json.dumps(name)})",
        )

    if module == "__main__":
        raise error("it belongs to the script being run (__main__), which no import finds")
    if not _FACTORY_PATH_RE.match(target):
        raise error("it has no import path (a lambda, or a function defined inside another)")
    found: Any = sys.modules.get(module)
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None)
    if (
        found is not None
        and found is not function
        and getattr(found, "function", None) is not function
    ):
        raise error(f"{module}.{qualname} is another object")
    return target


# ── writing TOML ────────────────────────────────────────────────────────────


def _toml_document(document: Mapping[str, Any]) -> str:
    """The TOML text of a team file's document: a table per section entry, values inline."""
    lines: list[str] = []

    def table(header: str, values: Mapping[str, Any]) -> None:
        if lines:
            lines.append("")
        lines.append(header)
        lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in values.items())

    for section, content in document.items():
        if section in ("team", "openai"):
            table(f"[{section}]", content)
        elif section == "board":
            table("[board]", {})
            for entry in content["items"]:
                table("[[board.items]]", entry)
        elif section == "background":
            for entry in content:
                table("[[background]]", entry)
        else:
            for name, values in content.items():
                header = f"{section}.{_toml_key(name)}"
                table(f"[{header}]", {k: v for k, v in values.items() if k != "turns"})
                # An agent's turns as a file writes them: a table each, a step a line (the
                # parser has checked that each is a table).
                for turn in values.get("turns", ()):
                    lines.extend(["", f"[[{header}.turns]]"])
                    for key, value in turn.items():
                        if key == "steps" and isinstance(value, list) and value:
                            lines.append("steps = [")
                            lines.extend(f"  {_toml_value(step)}," for step in value)
                            lines.append("]")
                        else:
                            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    return key if _BARE_KEY_RE.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    # JSON's escapes are TOML's; TOML also refuses a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    match value:
        case bool():
            return "true" if value else "false"
        case int():
            return str(value)
        case float():
            if math.isnan(value):
                return "nan"
            if math.isinf(value):
                return "inf" if value > 0 else "-inf"
            return repr(value)
        case str():
            return _toml_string(value)
        case Mapping():
            if not value:
                return "{}"
            inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
            return f"{{ {inner} }}"
        case list() | tuple():
            return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TeamFileError(
        f"{_describe(value)} cannot be written in a team file", file="Team.to_toml()"
    )
