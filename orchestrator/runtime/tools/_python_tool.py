"""Python tools: a team file's ``[tools.<name>] python = "package.module:function"``, called
for a tool call in the orchestrator's own process.

Theory of operation
-------------------
**When a team starts** (:class:`~orchestrator.runtime.TeamRuntime` is made, and
``orchestrator teams check``), :func:`resolve_python_tools` imports each tool's module. It
imports from ``sys.path``, as any import, with the team file's directory added at its end. So
``mytools/maths.py`` beside the team file imports without ``PYTHONPATH``, and an installed
module of the same name goes first. It looks the function up and reads its signature. A
reference that does not resolve fails the start, not the first call. The error is a
:class:`~orchestrator.base.TeamFileError` naming ``tools.<name>.python``. Without a
``parameters`` table, the input schema is derived from the signature. Each parameter is a
property (required unless it has a default), typed by its annotation. The function's docstring
(its first paragraph) describes the tool when the table does not. The
result, a :class:`ResolvedPythonTool`, carries the :class:`~orchestrator.spec.ToolDefinition`
the model is offered (``discovered`` of :func:`~orchestrator.spec.tool_definitions`).

The schema comes from pydantic, as :mod:`orchestrator.spec._tool_signature` says (the
rule :func:`~orchestrator.spec.tool` applies when a function is decorated).

**A call** (:func:`run_python_tool`): the input is checked against the offered schema (the
check a model's input gets in the backend, :func:`~orchestrator.spec.check_tool_input`);
input it refuses fails the call with a message the model reads, and the function is not
called. Then the input object's keys are the keyword arguments:

* an ``async def`` runs in trio, in the turn's task: cancelling the turn cancels it;
* a plain ``def`` runs in a worker thread (``trio.to_thread.run_sync`` with
  ``abandon_on_cancel``, on a limiter of its own so a stuck tool cannot take the threads
  the journal uses). A cancelled turn does not wait for it, but **a thread cannot be
  stopped**: the function runs on to its end, and its result is dropped;
* ``timeout`` (as for command tools) bounds the call either way; a timed-out call fails.

Its return value is the result: a ``str`` as it is, anything else JSON can hold as compact
JSON, anything else a failed call naming the type. An exception fails the call with
``ExceptionType: message``; its traceback goes to the log, not to the model. Results are cut
at :data:`~._command_tool.OUTPUT_LIMIT` bytes, as a command tool's stdout is.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import structlog
import trio

from orchestrator.base import TeamFileError, clean_text
from orchestrator.spec import (
    PythonTool,
    TeamSpec,
    Tool,
    ToolDefinition,
    arguments_model,
    arguments_schema,
    check_tool_input,
    docstring_summary,
    schema_problem,
)

from ._command_tool import OUTPUT_LIMIT, CommandResult, _duration

if TYPE_CHECKING:
    # Imported where a team has Python tools (~60 ms): a team without pays nothing.
    import pydantic

__all__ = [
    "PYTHON_TOOL_THREADS",
    "ResolvedPythonTool",
    "python_tool_problems",
    "resolve_python_tool",
    "resolve_python_tools",
    "run_python_tool",
]

log = structlog.get_logger("orchestrator.python_tool")

#: Worker threads the sync Python tools of one process may hold at once (abandoned ones
#: included, until they end); further calls wait for one.
PYTHON_TOOL_THREADS: Final = 16
_THREADS: Final = trio.lowlevel.RunVar[trio.CapacityLimiter]("python_tool_threads")

#: What a sync tool's call comes to when the function returned a coroutine (closed unrun).
_RETURNED_COROUTINE: Final = object()


@attrs.frozen(kw_only=True)
class ResolvedPythonTool:
    """A :class:`~orchestrator.spec.PythonTool` whose function was found: what a call needs.

    ``arguments``: the model that turns checked input into keyword arguments (a dataclass
    parameter gets a dataclass); None when the table gives ``parameters``, whose input is
    passed on as JSON decoded it.
    """

    tool: PythonTool
    function: Callable[..., Any] = attrs.field(eq=False)
    is_async: bool
    definition: ToolDefinition
    arguments: type[pydantic.BaseModel] | None = attrs.field(default=None, eq=False)

    @property
    def name(self) -> str:
        return self.tool.name


def resolve_python_tools(team: TeamSpec) -> dict[str, ResolvedPythonTool]:
    """Every Python tool of ``team``, by name; :class:`TeamFileError` naming each that does
    not resolve (all of them, one per line)."""
    resolved: dict[str, ResolvedPythonTool] = {}
    problems: list[TeamFileError] = []
    for tool in team.python_tools:
        try:
            resolved[tool.name] = resolve_python_tool(team, tool)
        except TeamFileError as exc:
            problems.append(exc)
    if problems:
        raise TeamFileError.of(problems)
    return resolved


def python_tool_problems(team: TeamSpec) -> list[str]:
    """What stops ``team``'s Python tools from resolving, one line each (``teams check``)."""
    try:
        resolve_python_tools(team)
    except TeamFileError as exc:
        return [str(problem) for problem in exc.problems]
    return []


def resolve_python_tool(team: TeamSpec, tool: PythonTool) -> ResolvedPythonTool:
    """Import ``tool``'s function and make its definition; :class:`TeamFileError` naming
    ``tools.<name>.python`` if it cannot be used."""

    def error(message: str) -> TeamFileError:
        return TeamFileError(message, file=team.file, key_path=f"tools.{tool.name}.python")

    # A team defined in Python gives the function itself; a file names it by import path.
    found = (
        tool.function if tool.function is not None else _find(tool, error, _team_directory(team))
    )
    # A @tool-decorated function, imported by its path, is called as the function it wraps.
    function = found.function if isinstance(found, Tool) else found
    if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
        raise error(f"{tool.target} is a generator function: a tool returns one result")
    unwrapped = function.func if isinstance(function, functools.partial) else function
    is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__  # an object whose __call__ is async
    )
    description = tool.description or docstring_summary(unwrapped)
    if not description:
        description = f"The {tool.name} tool of team {team.name}."
    arguments: type[pydantic.BaseModel] | None = None
    if tool.parameters is not None:
        parameters = dict(tool.parameters)
    else:
        arguments = arguments_model(function, name=tool.name, target=tool.target, error=error)
        parameters = arguments_schema(arguments)
        problem = schema_problem(parameters)
        if problem is not None:  # pydantic makes valid schemas; a custom type may not
            raise error(f"the schema derived from {tool.target}'s signature is {problem}")
    return ResolvedPythonTool(
        tool=tool,
        function=function,
        is_async=is_async,
        definition=ToolDefinition(name=tool.name, description=description, parameters=parameters),
        arguments=arguments,
    )


async def run_python_tool(
    resolved: ResolvedPythonTool,
    arguments: Mapping[str, Any],
    *,
    output_limit: int = OUTPUT_LIMIT,
) -> CommandResult:
    """Run one call of ``resolved`` with input ``arguments``; never raises but Cancelled."""
    name = resolved.name
    problem = check_tool_input((resolved.definition,), name, arguments)
    keywords: dict[str, Any] = {}
    if problem is None:
        keywords, problem = _keywords(resolved, arguments)
    if problem is not None:
        # The function never sees input its schema refuses (as a command tool's program).
        await trio.lowlevel.checkpoint()
        return CommandResult(success=False, output=problem)
    started = trio.current_time()
    seconds = resolved.tool.timeout.total_seconds()
    with trio.move_on_after(seconds) as deadline:
        try:
            if resolved.is_async:
                value = await resolved.function(**keywords)
            else:
                value = await trio.to_thread.run_sync(
                    functools.partial(_in_thread, resolved.function, keywords),
                    abandon_on_cancel=True,  # a cancelled turn does not wait for the thread
                    limiter=_threads(),
                )
        except (Exception, SystemExit) as exc:
            # The model reads what went wrong; the traceback is for whoever runs the daemon.
            # sys.exit() in a tool is its failure too: it must not end the run or the daemon.
            log.warning("python tool raised", tool=name, exc_info=exc)
            said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return CommandResult(success=False, output=said)
    elapsed = round(trio.current_time() - started, 3)
    if deadline.cancelled_caught:
        left = "" if resolved.is_async else " (its thread cannot be stopped: it runs on)"
        problem = f"{name} timed out after {_duration(seconds)}{left}"
        log.info("python tool failed", tool=name, problem=problem, seconds=elapsed)
        return CommandResult(success=False, output=problem)
    result = _result(name, value, output_limit)
    log.info("python tool ran", tool=name, success=result.success, seconds=elapsed)
    return result


# ── resolving ───────────────────────────────────────────────────────────────


def _team_directory(team: TeamSpec) -> Path | None:
    """The directory of ``team``'s file (None for a team not read from a file)."""
    path = Path(team.file)
    return path.parent.resolve() if path.is_file() else None


def _find(
    tool: PythonTool, error: Callable[[str], TeamFileError], directory: Path | None
) -> Callable[..., Any]:
    """The callable ``tool.target`` names, imported with ``directory`` (the team file's) on
    ``sys.path``: at its end, for good (the module may import more of its package later,
    as a call runs)."""
    if directory is not None and str(directory) not in sys.path:
        sys.path.append(str(directory))
    try:
        target: Any = importlib.import_module(tool.module)
    # The module's own code may raise anything as it is imported, sys.exit() included: that
    # is a bad tool, not a reason to end the run or the daemon.
    except (Exception, SystemExit) as exc:
        hint = ""
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None and f"{tool.module}.".startswith(f"{missing}."):
            # The tool's own module (not one it imports) is nowhere: say where it was looked for.
            beside = f"beside the team file (in {directory}), " if directory is not None else ""
            hint = f" (put it {beside}install it, or name its directory in PYTHONPATH)"
        raise error(
            f"cannot import {tool.module!r} for {tool.target}: {type(exc).__name__}: {exc}{hint}"
        ) from exc
    for part in tool.qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise error(f"module {tool.module!r} has no {tool.qualname!r}") from None
    if not callable(target):
        raise error(f"{tool.target} is {type(target).__name__}, not a function")
    function: Callable[..., Any] = target
    return function


# ── calling ─────────────────────────────────────────────────────────────────


def _keywords(
    resolved: ResolvedPythonTool, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """The keyword arguments of a call, or why there are none: through the signature's model
    when the schema was derived from it (only the keys given: the function's own defaults
    stay its own)."""
    model = resolved.arguments
    if model is None:
        return dict(arguments), None
    import pydantic

    try:
        checked = model.model_validate(dict(arguments))
    except pydantic.ValidationError as exc:
        # The schema check passed: what is left is what JSON Schema cannot say (a date's
        # format, a validator of the type's own).
        return {}, f"invalid input for {resolved.name}: {_validation_problem(exc)}"
    keywords = {
        field.alias or key: getattr(checked, key)
        for key, field in model.model_fields.items()
        if key in checked.model_fields_set
    }
    return keywords, None


def _in_thread(function: Callable[..., Any], keywords: Mapping[str, Any]) -> object:
    """Call a sync tool (in its worker thread); a coroutine it returns (an async function
    in disguise) is closed here, in the thread that made it, and said so."""
    value = function(**keywords)
    if inspect.iscoroutine(value):
        value.close()
        return _RETURNED_COROUTINE
    return value


def _validation_problem(exc: pydantic.ValidationError) -> str:
    """The first of pydantic's complaints, placed as the JSON Schema check places its own."""
    first = exc.errors(include_url=False)[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    return f"${where}: {first['msg']}"


def _result(name: str, value: object, limit: int) -> CommandResult:
    """What a call's return value comes to (see the module docstring)."""
    if isinstance(value, str):
        text = value
    else:
        if inspect.iscoroutine(value) or value is _RETURNED_COROUTINE:
            if inspect.iscoroutine(value):
                value.close()  # never awaited: closed here, not left to warn at collection
            return CommandResult(
                success=False,
                output=f"{name} returned a coroutine: declare the function async def",
            )
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return CommandResult(
                success=False,
                output=f"{name} returned {type(value).__name__}, which is neither a str nor "
                "JSON-serialisable (a dict, list, str, number, bool or None)",
            )
    text, _ = clean_text(text)  # a lone surrogate has no UTF-8: U+FFFD, as a model's text
    data = text.encode("utf-8")
    if len(data) > limit:
        # A character cut in two at the limit is left out, as for a command tool's output.
        kept = data[:limit].decode("utf-8", errors="ignore")
        text = f"{kept}\n[output truncated: {len(data) - limit} more bytes not shown]"
    return CommandResult(success=True, output=text)


def _threads() -> trio.CapacityLimiter:
    """This trio run's limiter of Python tools' threads (see :data:`PYTHON_TOOL_THREADS`)."""
    try:
        return _THREADS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(PYTHON_TOOL_THREADS)
        _THREADS.set(limiter)
        return limiter
