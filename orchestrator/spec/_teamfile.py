"""Team definition files: TOML text in, validated frozen models out.

Theory of operation: :func:`parse_team` hands the text to :mod:`tomllib`, then
walks the resulting dict once, top-down (``[team]``, then every command tool
``[tools.<name>]``, then every ``[agents.<name>]`` in file order, then its turns
and steps, then every ``[[background]]`` teammate, whose schedule
:mod:`._schedule` checks). Each check knows
the key path of the value it looks at, so the first problem raises a
:class:`~orchestrator.base._errors.TeamFileError` naming the file, the key path
(``agents.researcher.turns[0].steps[2].chunks``) and what is wrong.

The checks are explicit code rather than a cattrs structure hook: the messages
need domain words ("did you mean", the declared agents, the allowed values) and
most rules are cross references (the coordinator, ``delegates_to``,
``needs_approval`` ⊆ ``tools``, the script's tool steps against ``tools``) that
a structural converter cannot express. The agent names are collected before any
agent is read, so a reference to an agent declared further down is fine.

Scripted steps are validated here too, so the scripted backend never sees a
malformed step: it can pattern-match the step classes and trust every field.

Pure: no trio and no IO, except :func:`load_team` / :func:`check_team`, which
read the file they are given.
"""

from __future__ import annotations

import datetime
import difflib
import enum
import json
import math
import re
import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

import attrs

from orchestrator.base._errors import RunError, ScheduleError, TeamFileError

from ._schedule import (
    DEFAULT_CATCH_UP_LIMIT,
    BackgroundSpec,
    CatchUp,
    Every,
    Overlap,
    Schedule,
    parse_cron,
    parse_duration,
    parse_zone,
)

__all__ = [
    "COMMAND_ENV_PREFIX",
    "DEFAULT_COMMAND_TIMEOUT",
    "TEAM_TOOLS",
    "AgentSpec",
    "ApprovedBy",
    "AskStep",
    "BackendName",
    "CommandTool",
    "DelegateStep",
    "Delegation",
    "FailStep",
    "HandoffStep",
    "Interactivity",
    "OpenAISettings",
    "QuestionKind",
    "RestartPolicy",
    "SayStep",
    "ScriptedTurn",
    "SleepStep",
    "Step",
    "TeamSpec",
    "ThinkStep",
    "ToolStep",
    "Topology",
    "UsageStep",
    "check_team",
    "lint_team",
    "load_team",
    "parse_team",
    "team_from_mapping",
]

Topology: TypeAlias = Literal[
    "solo_run",
    "coordinator_team",
    "parallel_workers",
    "specialist_handoff",
    "review_team",
    "human_agent_board",
    "background_teammate",
    "remote_teammate",
]
Interactivity: TypeAlias = Literal["full", "read-only", "hidden"]
ApprovedBy: TypeAlias = Literal["user", "coordinator"]
BackendName: TypeAlias = Literal["scripted", "openai"]
QuestionKind: TypeAlias = Literal[
    "text", "number", "integer", "boolean", "single-select", "multi-select"
]

#: Tool names the runtime implements itself; any other name is a plain tool.
TEAM_TOOLS: Final = frozenset({"delegate", "handoff", "ask"})

_TOPOLOGIES: Final[dict[str, Topology]] = {v: v for v in get_args(Topology)}
_INTERACTIVITIES: Final[dict[str, Interactivity]] = {v: v for v in get_args(Interactivity)}
_APPROVERS: Final[dict[str, ApprovedBy]] = {v: v for v in get_args(ApprovedBy)}
_BACKENDS: Final[dict[str, BackendName]] = {v: v for v in get_args(BackendName)}
_QUESTION_KINDS: Final[dict[str, QuestionKind]] = {v: v for v in get_args(QuestionKind)}
_SELECT_KINDS: Final = frozenset({"single-select", "multi-select"})

#: Agent names and tool names end up in key paths, tool call arguments and
#: (for tools) OpenAI function names, so both keep to TOML's bare-key alphabet.
_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_BARE_KEY_RE: Final = re.compile(r"[A-Za-z0-9_-]+\Z")
_TOML_POSITION_RE: Final = re.compile(r"\(at line (\d+), column (\d+)\)")

_TOP_KEYS: Final = ("team", "agents", "tools", "openai", "background")
_TEAM_KEYS: Final = (
    "name",
    "topology",
    "parallel_budget",
    "coordinator",
    "description",
    "on_restart",
)
#: What [openai] and an openai agent's table may set (see :class:`OpenAISettings`).
_OPENAI_KEYS: Final = (
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "read_timeout",
    "max_retries",
)
_AGENT_KEYS: Final = (
    "role",
    "backend",
    "instructions",
    "interactivity",
    "tools",
    "delegates_to",
    "needs_approval",
    "approved_by",
    "approves",
    "timeout",
    "tool_results",
    "turns",
    # The backend's own settings, overriding the file's [openai] table for this agent.
    *_OPENAI_KEYS,
)
_ENV_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: What a [tools.<name>] table may set (see :class:`CommandTool`).
_COMMAND_KEYS: Final = ("command", "description", "timeout", "cwd", "env")
#: Environment variables the runtime sets for a command tool; a team file cannot set them.
COMMAND_ENV_PREFIX: Final = "ORCHESTRATOR_"
_TURN_KEYS: Final = ("steps",)
_BACKGROUND_KEYS: Final = (
    "name",
    "schedule",
    "every",
    "timezone",
    "prompt",
    "agent",
    "overlap",
    "max_runtime",
    "catch_up",
    "catch_up_limit",
)
_OVERLAPS: Final = {policy.value: policy for policy in Overlap}
_CATCH_UPS: Final = {policy.value: policy for policy in CatchUp}
_DELEGATION_KEYS: Final = ("agent", "task")

#: Each step has exactly one action key; these are the keys each action allows.
_STEP_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "say": ("say", "chunks"),
    "think": ("think", "chunks"),
    "tool": ("tool", "input"),
    "delegate": ("delegate",),
    "handoff": ("handoff", "reason", "resume"),
    "ask": ("ask", "kind", "options"),
    "fail": ("fail",),
    "sleep": ("sleep",),
    "usage": ("usage",),
}
_STEP_COMMON_KEYS: Final = ("when_task_contains",)
_ALL_STEP_KEYS: Final = (
    tuple(dict.fromkeys(k for keys in _STEP_KEYS.values() for k in keys)) + _STEP_COMMON_KEYS
)

DEFAULT_CHUNKS: Final = 3
DEFAULT_PARALLEL_BUDGET: Final = 4
DEFAULT_TOOL_RESULT: Final = "ok"
#: How long a command tool may run when its table sets no ``timeout``.
DEFAULT_COMMAND_TIMEOUT: Final = datetime.timedelta(minutes=10)


# --------------------------------------------------------------------------- steps


@attrs.frozen(kw_only=True)
class _StepBase:
    """What every step has: an optional condition on the chat's task."""

    #: Whether the step requests tool calls, which ends its model round.
    ends_round: ClassVar[bool] = False
    #: The step runs only when the chat's task contains this (case-insensitive).
    when_task_contains: str | None = None

    def applies_to(self, task: str) -> bool:
        """Whether this step runs for a chat whose task is ``task`` (case-insensitive)."""
        return self.when_task_contains is None or (
            self.when_task_contains.casefold() in task.casefold()
        )


@attrs.frozen(kw_only=True)
class SayStep(_StepBase):
    """Stream answer text in ``chunks`` nearly equal :class:`TextDelta` pieces.

    ``{task}`` and ``{outcomes}`` in ``text`` are replaced when it is streamed.
    """

    text: str
    chunks: int = DEFAULT_CHUNKS


@attrs.frozen(kw_only=True)
class ThinkStep(_StepBase):
    """Stream reasoning text, chunked and substituted like :class:`SayStep`."""

    text: str
    chunks: int = DEFAULT_CHUNKS


@attrs.frozen(kw_only=True)
class ToolStep(_StepBase):
    """Request one call of a plain tool; ends the round."""

    ends_round: ClassVar[bool] = True
    tool: str
    # JSON-compatible (checked when parsing); treat as read-only.
    input: Mapping[str, Any] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class Delegation:
    """One worker to start: which agent definition, with which task."""

    agent: str
    task: str


@attrs.frozen(kw_only=True)
class DelegateStep(_StepBase):
    """Request one ``delegate`` call per delegation, all in one round; ends the round."""

    ends_round: ClassVar[bool] = True
    delegations: tuple[Delegation, ...]


@attrs.frozen(kw_only=True)
class HandoffStep(_StepBase):
    """Request a ``handoff`` call to ``agent``; ``resume`` gets the task back. Ends the round."""

    ends_round: ClassVar[bool] = True
    agent: str
    reason: str
    resume: str


@attrs.frozen(kw_only=True)
class AskStep(_StepBase):
    """Request an ``ask`` call (a question to the user); ends the round.

    Invariant: ``bool(options) == (kind in {"single-select", "multi-select"})``
    """

    ends_round: ClassVar[bool] = True
    question: str
    kind: QuestionKind = "text"
    options: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class FailStep(_StepBase):
    """Make the round raise ``ScriptedFailure(message)``."""

    message: str


@attrs.frozen(kw_only=True)
class SleepStep(_StepBase):
    """Wait ``seconds`` (finite, >= 0) before the next step."""

    seconds: float


@attrs.frozen(kw_only=True)
class UsageStep(_StepBase):
    """Report token usage (both counts >= 0)."""

    input_tokens: int
    output_tokens: int


Step: TypeAlias = (
    SayStep
    | ThinkStep
    | ToolStep
    | DelegateStep
    | HandoffStep
    | AskStep
    | FailStep
    | SleepStep
    | UsageStep
)


@attrs.frozen(kw_only=True)
class ScriptedTurn:
    """The steps one agent plays for one user turn (a worker's only turn is its task)."""

    steps: tuple[Step, ...]

    def rounds_for(self, task: str) -> tuple[tuple[Step, ...], ...]:
        """The model rounds this turn plays for ``task``.

        Steps whose ``when_task_contains`` does not match are dropped first; the
        rest is cut after every step that requests tool calls. When the last kept
        step requests tool calls, an empty final round follows (the runtime asks
        for one more round after running the tools). There is always >= 1 round.
        """
        rounds: list[tuple[Step, ...]] = []
        current: list[Step] = []
        for step in self.steps:
            if not step.applies_to(task):
                continue
            current.append(step)
            if step.ends_round:
                rounds.append(tuple(current))
                current = []
        rounds.append(tuple(current))
        return tuple(rounds)


# --------------------------------------------------------------------------- team models


@attrs.frozen(kw_only=True)
class OpenAISettings:
    """How an agent on the OpenAI-compatible backend reaches its model.

    ``base_url`` None means: the ``OPENAI_BASE_URL`` environment variable, else the hosted
    API (what the official clients do). The API key is read from the environment variable
    ``api_key_env`` when a run starts; the team file never holds a key.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    # Seconds without a byte from the server before the round fails (models think slowly).
    read_timeout: float = 120.0
    # Retries of a request the server refused with 429 / 5xx or could not be reached.
    max_retries: int = 4


@attrs.frozen(kw_only=True)
class CommandTool:
    """A tool that runs a local program: a ``[tools.<name>]`` table of a team file.

    A call runs ``command`` (an argv: no shell reads it) with the call's input as JSON on
    stdin; what the program writes to stdout is the call's result (see
    :mod:`orchestrator.runtime._command_tool`).

    Invariant: len(self.command) >= 1 and self.command[0] != ""
    Invariant: not any(k.startswith(COMMAND_ENV_PREFIX) for k in self.env)
    """

    name: str
    command: tuple[str, ...]
    description: str = ""
    timeout: datetime.timedelta = DEFAULT_COMMAND_TIMEOUT
    # The working directory; None: the orchestrator's own. A relative path in the file is
    # taken from the team file's directory (resolved when parsed, like the daemon's
    # token_file), so a team file can name its project's directory wherever it runs from.
    cwd: str | None = None
    # Added to the orchestrator's environment for the program.
    env: Mapping[str, str] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class AgentSpec:
    """One agent definition of a team (a worker definition may run as several chats)."""

    name: str
    role: str
    backend: BackendName = "scripted"
    # Invariant: (self.openai is not None) == (self.backend == "openai")
    openai: OpenAISettings | None = None
    instructions: str = ""
    interactivity: Interactivity = "read-only"
    tools: tuple[str, ...] = ()
    delegates_to: tuple[str, ...] = ()
    # Invariant: set(needs_approval) <= set(tools)
    needs_approval: tuple[str, ...] = ()
    approved_by: ApprovedBy = "user"
    # The coordinator's policy for approvals routed to it: the tools it approves (any other
    # is denied). None when not declared (a team routing approvals to it must declare it).
    approves: tuple[str, ...] | None = None
    timeout: float | None = None
    # Invariant: set(tool_results) <= set(tools) - TEAM_TOOLS - {the team's command tools}
    tool_results: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    turns: tuple[ScriptedTurn, ...] = ()

    @property
    def plain_tools(self) -> tuple[str, ...]:
        """The tools that are not team tools (the runtime executes them as plain tools)."""
        return tuple(t for t in self.tools if t not in TEAM_TOOLS)

    def needs_approval_for(self, tool: str) -> bool:
        """Whether a call of ``tool`` by this agent waits for a decision."""
        return tool in self.needs_approval

    def tool_result(self, tool: str) -> str:
        """The scripted result text of a plain tool (``"ok"`` unless the file says)."""
        return self.tool_results.get(tool, DEFAULT_TOOL_RESULT)


class RestartPolicy(enum.StrEnum):
    """What a restart does with the turns it finds cut off (``[team] on_restart``).

    Turns parked on something that survives (an approval, a question, running workers) go
    on under either policy; this decides the turns a stop cut off mid-stream.
    """

    RESUME = "resume"  # run them again from their message
    FAIL = "fail"  # a worker's task is reported failed; a cut-off coordinator fails the run


@attrs.frozen(kw_only=True)
class TeamSpec:
    """A validated team definition.

    Invariant: coordinator in {a.name for a in agents}
    Invariant: all(d in names for a in agents for d in a.delegates_to)
    """

    name: str
    topology: Topology = "coordinator_team"
    parallel_budget: int = DEFAULT_PARALLEL_BUDGET
    coordinator: str
    description: str = ""
    on_restart: RestartPolicy = RestartPolicy.RESUME
    agents: tuple[AgentSpec, ...]
    # The [[background]] teammates, in file order.
    # Invariant: len({b.name for b in background}) == len(background)
    # Invariant: all(b.agent in self.agent_names for b in background)
    background: tuple[BackgroundSpec, ...] = ()
    # The [tools.<name>] command tools, in file order.
    # Invariant: not ({c.name for c in command_tools} & TEAM_TOOLS)
    command_tools: tuple[CommandTool, ...] = ()
    file: str = "<team>"
    # The TOML text it was parsed from (kept with a session so it can be resumed as it was).
    source: str = attrs.field(default="", repr=False, eq=False)

    @property
    def agent_names(self) -> tuple[str, ...]:
        """The declared agents, in file order."""
        return tuple(a.name for a in self.agents)

    @property
    def coordinator_agent(self) -> AgentSpec:
        """The agent the user talks to."""
        return self.agent(self.coordinator)

    @property
    def workers(self) -> tuple[AgentSpec, ...]:
        """Every agent but the coordinator, in file order."""
        return tuple(a for a in self.agents if a.name != self.coordinator)

    def command_tool(self, name: str) -> CommandTool | None:
        """The command tool called ``name``; None if ``name`` is not one (a plain tool then
        answers its scripted ``tool_results``)."""
        for tool in self.command_tools:
            if tool.name == name:
                return tool
        return None

    def agent(self, name: str) -> AgentSpec:
        """The agent called ``name``; :class:`RunError` naming the team if there is none."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        names = self.agent_names
        raise RunError(
            f"team {self.name!r} ({self.file}) has no agent {name!r}"
            f"{_did_you_mean(name, names)}; agents: {', '.join(names)}"
        )


# --------------------------------------------------------------------------- entry points


def load_team(path: str | Path) -> TeamSpec:
    """Read and parse the team file at ``path``."""
    file = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as exc:
        raise TeamFileError(f"cannot read the file: {exc.strerror or exc}", file=file) from exc
    except UnicodeDecodeError as exc:
        raise TeamFileError(
            f"the file is not UTF-8 (byte {exc.start}): TOML files must be UTF-8", file=file
        ) from exc
    return parse_team(text, file=file)


def parse_team(text: str, *, file: str) -> TeamSpec:
    """Parse team-file TOML ``text``; ``file`` names it in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION_RE.search(message)
        if position is not None:
            reason = message[: position.start()].rstrip()
            line, column = position.groups()
            message = f"invalid TOML at line {line}, column {column}: {reason}"
        else:
            message = f"invalid TOML: {message}"
        raise TeamFileError(message, file=file) from exc
    return attrs.evolve(team_from_mapping(data, file=file), source=text)


def team_from_mapping(data: Mapping[str, Any], *, file: str) -> TeamSpec:
    """Validate an already-decoded TOML document (what :func:`tomllib.loads` returns)."""
    return _Parser(file).team(data)


def lint_team(team: TeamSpec) -> list[str]:
    """Problems of a team that parses but cannot work as written, as messages.

    Pure; these are not parse errors because each agent is valid on its own:
    an agent nothing can start, a ``delegates_to`` no tool can use, a team tool
    with nobody to reach, a scripted agent without turns, a command tool no agent
    lists, a tool name one typo away from a command tool's.
    """
    problems: list[str] = []

    def problem(key_path: str, message: str) -> None:
        problems.append(str(TeamFileError(message, file=team.file, key_path=key_path)))

    # Background and remote teammates may be started by a schedule or a peer.
    if team.topology not in {"background_teammate", "remote_teammate"}:
        # A [[background]] entry starts its agent as the coordinator starts its own.
        roots = [team.coordinator, *(b.agent for b in team.background)]
        reachable = set(roots)
        frontier = list(reachable)
        while frontier:
            for target in team.agent(frontier.pop()).delegates_to:
                if target not in reachable:
                    reachable.add(target)
                    frontier.append(target)
        for agent in team.agents:
            if agent.name not in reachable:
                problem(
                    _join("agents", agent.name),
                    f"not reachable from the coordinator {team.coordinator!r} through "
                    "delegates_to, so nothing can start it",
                )
    for agent in team.agents:
        path = _join("agents", agent.name)
        routes = {"delegate", "handoff"} & set(agent.tools)
        if agent.delegates_to and not routes:
            problem(
                f"{path}.delegates_to",
                "lists agents but tools has neither 'delegate' nor 'handoff', "
                "so it can never reach them",
            )
        if routes and not agent.delegates_to:
            tools = ", ".join(repr(t) for t in sorted(routes))
            problem(f"{path}.tools", f"has {tools} but delegates_to is empty")
        commands = [c.name for c in team.command_tools]
        for index, tool in enumerate(agent.tools):
            if tool in TEAM_TOOLS or tool in commands or tool in agent.tool_results:
                continue
            # A near miss of a command tool's name would quietly answer "ok" instead.
            hint = _did_you_mean(tool, commands)
            if hint:
                problem(
                    f"{path}.tools[{index}]",
                    f"{tool!r} is no [tools] command{hint}, so it answers a scripted result",
                )
        if agent.backend == "scripted" and not agent.turns:
            problem(
                f"{path}.turns",
                "a scripted agent without turns only answers a default text; "
                "add [[" + path + ".turns]] with steps",
            )
    listed = {tool for agent in team.agents for tool in agent.tools}
    for command in team.command_tools:
        if command.name not in listed:
            problem(
                _join("tools", command.name),
                f"no agent lists {command.name!r} in its tools, so nothing can call it",
            )
    return problems


def check_team(path: str | Path) -> list[str]:
    """Every problem with the team file at ``path``, as human-readable lines.

    Empty when the file is fine. A file that does not parse yields its parse errors: the
    first of the team table, or the first of each agent; one that parses yields
    :func:`lint_team`.
    """
    try:
        team = load_team(path)
    except TeamFileError as exc:
        return [str(problem) for problem in exc.problems]
    return lint_team(team)


# --------------------------------------------------------------------------- the parser


def _join(path: str, key: str) -> str:
    segment = key if _BARE_KEY_RE.match(key) else json.dumps(key, ensure_ascii=False)
    return f"{path}.{segment}" if path else segment


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def _describe(value: object) -> str:
    """Name a TOML value the way a user wrote it: its TOML type and a short preview."""
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"float {value}"
    if isinstance(value, str):
        preview = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(preview, ensure_ascii=False)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.datetime):
        return "a datetime"
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, datetime.time):
        return "a time"
    return type(value).__name__


def _one_of(values: Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)


class _Parser:
    """One walk over one decoded document; ``file`` goes into every error."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.agent_names: tuple[str, ...] = ()
        # The [tools.<name>] keys, known before any agent is read (tool_results refers to them).
        self.command_names: tuple[str, ...] = ()
        self.openai_defaults: Mapping[str, object] = {}

    def error(self, key_path: str, message: str) -> TeamFileError:
        return TeamFileError(message, file=self.file, key_path=key_path)

    # -- generic checks ----------------------------------------------------

    def table(self, value: object, path: str, what: str = "a table") -> Mapping[str, object]:
        if not isinstance(value, dict):
            raise self.error(path, f"expected {what}, got {_describe(value)}")
        return value

    def check_keys(
        self,
        data: Mapping[str, object],
        path: str,
        allowed: Sequence[str],
        *,
        required: Collection[str] = (),
    ) -> None:
        for key in data:
            if key not in allowed:
                raise self.error(
                    _join(path, key),
                    f"unknown key {key!r}{_did_you_mean(key, allowed)}; "
                    f"allowed keys: {', '.join(allowed)}",
                )
        for key in required:
            if key not in data:
                raise self.error(_join(path, key), f"missing required key {key!r}")

    def string(self, value: object, path: str, *, empty_ok: bool = False) -> str:
        if not isinstance(value, str):
            raise self.error(path, f"expected a string, got {_describe(value)}")
        if not empty_ok and not value.strip():
            raise self.error(path, "must not be empty")
        return value

    def name(self, value: object, path: str, what: str) -> str:
        text = self.string(value, path)
        if not _NAME_RE.match(text):
            raise self.error(
                path,
                f"{what} {text!r} must be 1-64 letters, digits, '_' or '-'",
            )
        return text

    def integer(self, value: object, path: str, *, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"expected an integer, got {_describe(value)}")
        if value < minimum:
            raise self.error(path, f"must be >= {minimum}, got {value}")
        return value

    def number(self, value: object, path: str, *, positive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(path, f"expected a number (int or float), got {_describe(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise self.error(path, f"must be a finite number, got {value}")
        if positive and number <= 0:
            raise self.error(path, f"must be > 0, got {value}")
        if number < 0:
            raise self.error(path, f"must be >= 0, got {value}")
        return number

    def choice(self, value: object, path: str, allowed: Mapping[str, Any], what: str) -> Any:
        text = self.string(value, path)
        if text not in allowed:
            raise self.error(
                path,
                f"unknown {what} {text!r}{_did_you_mean(text, allowed)}; "
                f"allowed: {', '.join(allowed)}",
            )
        return allowed[text]

    def array(self, value: object, path: str, what: str = "an array") -> list[object]:
        if not isinstance(value, list):
            raise self.error(path, f"expected {what}, got {_describe(value)}")
        return value

    def duration(self, value: object, path: str) -> datetime.timedelta:
        try:
            return parse_duration(self.string(value, path))
        except ScheduleError as exc:
            raise self.error(path, exc.message) from exc

    def names(self, value: object, path: str, what: str) -> tuple[str, ...]:
        """An array of distinct names."""
        result: list[str] = []
        for index, item in enumerate(self.array(value, path)):
            item_path = f"{path}[{index}]"
            name = self.name(item, item_path, what)
            if name in result:
                raise self.error(item_path, f"{name!r} is listed twice")
            result.append(name)
        return tuple(result)

    def agent_ref(self, value: object, path: str) -> str:
        name = self.string(value, path)
        if name not in self.agent_names:
            raise self.error(
                path,
                f"unknown agent {name!r}{_did_you_mean(name, self.agent_names)}; "
                f"declared agents: {', '.join(self.agent_names)}",
            )
        return name

    def json_value(self, value: object, path: str) -> Any:
        """A copy of ``value`` made of JSON types only (tool inputs travel as JSON)."""
        if isinstance(value, dict):
            return {k: self.json_value(v, _join(path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(path, f"{value} is not valid JSON; use a finite number")
        if isinstance(value, str | int | float | bool):
            return value
        raise self.error(path, f"{_describe(value)} is not valid JSON; write it as a string")

    # -- the document --------------------------------------------------------

    def team(self, data: Mapping[str, Any]) -> TeamSpec:
        # [team] is checked before [agents] is required: a typo in [team] is the more useful
        # first error in a file that is still being written.
        self.check_keys(data, "", _TOP_KEYS, required=("team",))
        team = self.table(data["team"], "team", "a [team] table")
        self.check_keys(team, "team", _TEAM_KEYS, required=("name", "coordinator"))
        self.check_keys(data, "", _TOP_KEYS, required=("team", "agents"))
        name = self.string(team["name"], "team.name")
        topology: Topology = "coordinator_team"
        if "topology" in team:
            topology = self.choice(team["topology"], "team.topology", _TOPOLOGIES, "topology")
        budget = DEFAULT_PARALLEL_BUDGET
        if "parallel_budget" in team:
            budget = self.integer(team["parallel_budget"], "team.parallel_budget", minimum=1)
        coordinator = self.string(team["coordinator"], "team.coordinator")
        on_restart = RestartPolicy.RESUME
        if "on_restart" in team:
            on_restart = self.choice(
                team["on_restart"],
                "team.on_restart",
                {policy.value: policy for policy in RestartPolicy},
                "restart policy",
            )

        agents = self.table(data["agents"], "agents", "[agents.<name>] tables")
        if not agents:
            raise self.error("agents", "declare at least one agent as [agents.<name>]")
        self.agent_names = tuple(
            self.name(agent_name, _join("agents", agent_name), "agent name")
            for agent_name in agents
        )
        if coordinator not in self.agent_names:
            raise self.error(
                "team.coordinator",
                f"the coordinator {coordinator!r} is not declared"
                f"{_did_you_mean(coordinator, self.agent_names)}; add [agents.{coordinator}] "
                f"or pick one of: {', '.join(self.agent_names)}",
            )
        description = ""
        if "description" in team:
            description = self.string(team["description"], "team.description", empty_ok=True)
        if "openai" in data:
            self.openai_defaults = self.table(data["openai"], "openai", "an [openai] table")
            self.check_keys(self.openai_defaults, "openai", _OPENAI_KEYS)

        # Each command tool and each agent is checked on its own, so one run of `teams check`
        # reports them all.
        problems: list[TeamFileError] = []
        commands: list[CommandTool] = []
        if "tools" in data:
            tables: Mapping[str, object] = {}
            try:
                tables = self.table(
                    data["tools"], "tools", 'tables such as [tools.run_tests] command = ["..."]'
                )
            except TeamFileError as exc:
                problems.extend(exc.problems)
            self.command_names = tuple(tables)
            for tool_name, value in tables.items():
                try:
                    commands.append(self.command_tool(tool_name, value))
                except TeamFileError as exc:
                    problems.extend(exc.problems)
        parsed: list[AgentSpec] = []
        for agent_name, value in agents.items():
            try:
                parsed.append(
                    self.agent(agent_name, value, is_coordinator=agent_name == coordinator)
                )
            except TeamFileError as exc:
                problems.extend(exc.problems)
        # Then each [[background]] entry, on its own too.
        entries: list[object] = []
        try:
            entries = self.background_entries(data.get("background", []))
        except TeamFileError as exc:
            problems.extend(exc.problems)
        background: list[BackgroundSpec] = []
        for index, entry in enumerate(entries):
            try:
                background.append(self.background(entry, index, background, coordinator))
            except TeamFileError as exc:
                problems.extend(exc.problems)
        if problems:
            raise TeamFileError.of(problems)
        specs = tuple(parsed)
        self.check_approvers(specs, coordinator)
        return TeamSpec(
            name=name,
            topology=topology,
            parallel_budget=budget,
            coordinator=coordinator,
            description=description,
            on_restart=on_restart,
            agents=specs,
            background=tuple(background),
            command_tools=tuple(commands),
            file=self.file,
        )

    def background_entries(self, value: object) -> list[object]:
        if isinstance(value, dict):
            raise self.error(
                "background",
                "expected [[background]] tables, got a table: write each entry under "
                "[[background]], with double brackets",
            )
        return self.array(value, "background", "[[background]] tables")

    def background(
        self, value: object, index: int, earlier: Sequence[BackgroundSpec], coordinator: str
    ) -> BackgroundSpec:
        """One [[background]] teammate; ``earlier`` are the entries before it (names unique)."""
        path = f"background[{index}]"
        data = self.table(value, path, "a [[background]] table")
        self.check_keys(data, path, _BACKGROUND_KEYS, required=("name",))
        name = self.name(data["name"], f"{path}.name", "background teammate name")
        for other, spec in enumerate(earlier):
            if spec.name == name:
                raise self.error(
                    f"{path}.name",
                    f"{name!r} is already the name of background[{other}]; names must be unique",
                )
        if "schedule" in data and "every" in data:
            raise self.error(
                f"{path}.every",
                "set either schedule (a cron expression) or every (an interval), not both",
            )
        schedule: Schedule
        if "schedule" in data:
            try:
                schedule = parse_cron(self.string(data["schedule"], f"{path}.schedule"))
            except ScheduleError as exc:
                raise self.error(f"{path}.schedule", exc.message) from exc
            if "timezone" in data:
                timezone = self.string(data["timezone"], f"{path}.timezone")
                try:
                    parse_zone(timezone)
                except ScheduleError as exc:
                    raise self.error(f"{path}.timezone", exc.message) from exc
                schedule = attrs.evolve(schedule, timezone=timezone)
        elif "every" in data:
            if "timezone" in data:
                raise self.error(
                    f"{path}.timezone",
                    "an every interval counts elapsed time, so a time zone changes nothing; "
                    'for wake times on the local clock write a cron schedule, e.g. "0 3 * * *"',
                )
            schedule = Every(interval=self.duration(data["every"], f"{path}.every"))
        else:
            raise self.error(
                path,
                'missing a schedule: set schedule = "0 3 * * *" (a cron expression) '
                'or every = "15m" (an interval)',
            )
        if "prompt" not in data:
            raise self.error(
                f"{path}.prompt", "missing required key 'prompt' (what the teammate does)"
            )
        prompt = self.string(data["prompt"], f"{path}.prompt")
        agent = coordinator
        if "agent" in data:
            agent = self.agent_ref(data["agent"], f"{path}.agent")
        overlap = Overlap.SKIP
        if "overlap" in data:
            overlap = self.choice(data["overlap"], f"{path}.overlap", _OVERLAPS, "overlap policy")
        max_runtime = None
        if "max_runtime" in data:
            max_runtime = self.duration(data["max_runtime"], f"{path}.max_runtime")
        catch_up = CatchUp.LATEST
        if "catch_up" in data:
            catch_up = self.choice(
                data["catch_up"], f"{path}.catch_up", _CATCH_UPS, "catch-up policy"
            )
        limit = DEFAULT_CATCH_UP_LIMIT
        if "catch_up_limit" in data:
            if catch_up is not CatchUp.ALL:
                raise self.error(
                    f"{path}.catch_up_limit",
                    f'catch_up_limit bounds catch_up = "all"; this entry\'s catch_up is '
                    f"{catch_up.value!r}",
                )
            limit = self.integer(data["catch_up_limit"], f"{path}.catch_up_limit", minimum=1)
        return BackgroundSpec(
            name=name,
            schedule=schedule,
            prompt=prompt,
            agent=agent,
            overlap=overlap,
            max_runtime=max_runtime,
            catch_up=catch_up,
            catch_up_limit=limit,
        )

    def command_tool(self, name: str, value: object) -> CommandTool:
        """One [tools.<name>] table: a program the runtime runs for a call of the tool."""
        path = _join("tools", name)
        self.name(name, path, "tool name")
        if name in TEAM_TOOLS:
            raise self.error(
                path,
                f"{name!r} is a team tool the runtime runs itself; give the command tool "
                "another name",
            )
        data = self.table(value, path, 'a [tools.<name>] table with command = ["..."]')
        self.check_keys(data, path, _COMMAND_KEYS, required=("command",))
        command_path = f"{path}.command"
        raw = data["command"]
        if isinstance(raw, str):
            example = json.dumps(raw.split() or ["program", "argument"], ensure_ascii=False)
            raise self.error(
                command_path,
                f"expected an array of arguments such as {example} (no shell reads it), "
                f"got {_describe(raw)}",
            )
        items = self.array(raw, command_path, "an array of arguments")
        if not items:
            raise self.error(
                command_path, 'name at least the program to run, e.g. ["python", "tool.py"]'
            )
        command = tuple(
            self.argument(item, f"{command_path}[{index}]", empty_ok=index > 0)
            for index, item in enumerate(items)
        )
        description = ""
        if "description" in data:
            description = self.string(data["description"], f"{path}.description")
        timeout = DEFAULT_COMMAND_TIMEOUT
        if "timeout" in data:
            timeout_path = f"{path}.timeout"
            if isinstance(data["timeout"], int | float) and not isinstance(data["timeout"], bool):
                raise self.error(
                    timeout_path,
                    'expected a duration such as "90s", "5m" or "1h30m", got '
                    f"{_describe(data['timeout'])}",
                )
            timeout = self.duration(data["timeout"], timeout_path)
        cwd = None
        if "cwd" in data:
            cwd = self.argument(data["cwd"], f"{path}.cwd", empty_ok=False)
            if not Path(cwd).is_absolute() and not self.file.startswith("<"):
                cwd = str(Path(self.file).parent / cwd)
        env: dict[str, str] = {}
        if "env" in data:
            env_path = f"{path}.env"
            for key, text in self.table(data["env"], env_path, "a table of variables").items():
                key_path = _join(env_path, key)
                if not _ENV_NAME_RE.match(key):
                    raise self.error(
                        key_path,
                        f"{key!r} is not an environment variable name (letters, digits and "
                        "'_', not starting with a digit)",
                    )
                if key.upper().startswith(COMMAND_ENV_PREFIX):
                    raise self.error(
                        key_path,
                        f"variables starting with {COMMAND_ENV_PREFIX} are set by the runtime "
                        "for each call (the callback URL, the group id, ...); choose another name",
                    )
                env[key] = self.argument(text, key_path, empty_ok=True)
        return CommandTool(
            name=name,
            command=command,
            description=description,
            timeout=timeout,
            cwd=cwd,
            env=env,
        )

    def argument(self, value: object, path: str, *, empty_ok: bool) -> str:
        """A string handed to the operating system (an argument, a path, a variable's value),
        which cannot hold a NUL character."""
        text = self.string(value, path, empty_ok=empty_ok)
        if "\0" in text:
            raise self.error(path, "must not contain a NUL character (\\u0000)")
        return text

    def check_approvers(self, agents: Sequence[AgentSpec], coordinator: str) -> None:
        """Approvals routed to the coordinator need its ``approves`` list to be decided."""
        lead = next(a for a in agents if a.name == coordinator)
        for agent in agents:
            if (
                agent.approved_by == "coordinator"
                and agent.needs_approval
                and lead.approves is None
            ):
                raise self.error(
                    f"{_join('agents', agent.name)}.approved_by",
                    f"routes its approvals to the coordinator, but [agents.{coordinator}] has no "
                    "approves list saying which tools it approves (an empty list denies all)",
                )

    def agent(self, name: str, value: object, *, is_coordinator: bool) -> AgentSpec:
        path = _join("agents", name)
        data = self.table(value, path)
        self.check_keys(data, path, _AGENT_KEYS, required=("role",))
        role = self.string(data["role"], f"{path}.role")
        backend: BackendName = "scripted"
        if "backend" in data:
            backend = self.choice(data["backend"], f"{path}.backend", _BACKENDS, "backend")
        openai = self.openai_settings(data, path) if backend == "openai" else None
        if backend != "openai":
            for key in _OPENAI_KEYS:
                if key in data:
                    raise self.error(
                        _join(path, key),
                        f"{key} is a setting of the openai backend; this agent's backend is "
                        f'{backend!r} (set backend = "openai" to use it)',
                    )
        elif "turns" in data:
            raise self.error(
                f"{path}.turns",
                'turns script the scripted backend; an agent with backend = "openai" is '
                "answered by its model",
            )
        instructions = ""
        if "instructions" in data:
            instructions = self.string(data["instructions"], f"{path}.instructions", empty_ok=True)
        interactivity: Interactivity = "full" if is_coordinator else "read-only"
        if "interactivity" in data:
            interactivity = self.choice(
                data["interactivity"], f"{path}.interactivity", _INTERACTIVITIES, "interactivity"
            )
        tools = self.names(data.get("tools", []), f"{path}.tools", "tool name")
        delegates_to: tuple[str, ...] = ()
        if "delegates_to" in data:
            delegates_path = f"{path}.delegates_to"
            delegates_to = self.names(data["delegates_to"], delegates_path, "agent name")
            for index, target in enumerate(delegates_to):
                self.agent_ref(target, f"{delegates_path}[{index}]")
        needs_approval: tuple[str, ...] = ()
        if "needs_approval" in data:
            approval_path = f"{path}.needs_approval"
            needs_approval = self.names(data["needs_approval"], approval_path, "tool name")
            for index, tool in enumerate(needs_approval):
                if tool not in tools:
                    raise self.error(
                        f"{approval_path}[{index}]",
                        f"tool {tool!r} is not in this agent's tools "
                        f"({_one_of(tools) or 'none'}); add it to tools or remove it here",
                    )
        approved_by: ApprovedBy = "user"
        if "approved_by" in data:
            approved_by = self.choice(
                data["approved_by"], f"{path}.approved_by", _APPROVERS, "approver"
            )
            if is_coordinator and approved_by == "coordinator":
                raise self.error(
                    f"{path}.approved_by",
                    'the coordinator cannot approve its own tool calls; use "user"',
                )
        approves: tuple[str, ...] | None = None
        if "approves" in data:
            if not is_coordinator:
                raise self.error(
                    f"{path}.approves",
                    "only the coordinator decides approvals routed to it; approves belongs on "
                    "the agent named by team.coordinator",
                )
            approves = self.names(data["approves"], f"{path}.approves", "tool name")
        timeout = None
        if "timeout" in data:
            timeout = self.number(data["timeout"], f"{path}.timeout", positive=True)
        tool_results: dict[str, str] = {}
        if "tool_results" in data:
            results_path = f"{path}.tool_results"
            plain = tuple(t for t in tools if t not in TEAM_TOOLS)
            for tool, text in self.table(data["tool_results"], results_path).items():
                tool_path = _join(results_path, tool)
                if tool not in plain:
                    raise self.error(
                        tool_path,
                        f"{tool!r} is not a plain tool of this agent{_did_you_mean(tool, plain)}; "
                        f"plain tools: {_one_of(plain) or 'none'}",
                    )
                if tool in self.command_names:
                    raise self.error(
                        tool_path,
                        f"{tool!r} runs a command ([tools.{tool}]): its result is what the "
                        "program prints, not a text from tool_results; remove it here",
                    )
                tool_results[tool] = self.string(text, tool_path, empty_ok=True)
        agent = AgentSpec(
            name=name,
            role=role,
            backend=backend,
            openai=openai,
            instructions=instructions,
            interactivity=interactivity,
            tools=tools,
            delegates_to=delegates_to,
            needs_approval=needs_approval,
            approved_by=approved_by,
            approves=approves,
            timeout=timeout,
            tool_results=tool_results,
        )
        turns: tuple[ScriptedTurn, ...] = ()
        if "turns" in data:
            turns_path = f"{path}.turns"
            turns = tuple(
                self.turn(agent, turn, f"{turns_path}[{index}]")
                for index, turn in enumerate(self.array(data["turns"], turns_path))
            )
        return attrs.evolve(agent, turns=turns)

    def openai_settings(self, data: Mapping[str, object], path: str) -> OpenAISettings:
        """The agent's keys over the file's [openai] table; each error names where the value
        was written."""

        def pick(key: str) -> tuple[object, str] | None:
            if key in data:
                return data[key], _join(path, key)
            if key in self.openai_defaults:
                return self.openai_defaults[key], _join("openai", key)
            return None

        model = pick("model")
        if model is None:
            raise self.error(
                f"{path}.model",
                'backend = "openai" needs a model: set model here or in an [openai] table',
            )
        settings = OpenAISettings(model=self.string(*model))
        if (found := pick("base_url")) is not None:
            url = self.string(*found)
            if not url.startswith(("http://", "https://")):
                raise self.error(found[1], f"expected an http:// or https:// URL, got {url!r}")
            settings = attrs.evolve(settings, base_url=url.rstrip("/"))
        if (found := pick("api_key_env")) is not None:
            env = self.string(*found)
            if not _ENV_NAME_RE.match(env):
                raise self.error(
                    found[1],
                    f"{env!r} is not an environment variable name (the key itself never goes "
                    "in a team file)",
                )
            settings = attrs.evolve(settings, api_key_env=env)
        if (found := pick("temperature")) is not None:
            temperature = self.number(*found, positive=False)
            settings = attrs.evolve(settings, temperature=temperature)
        if (found := pick("read_timeout")) is not None:
            settings = attrs.evolve(settings, read_timeout=self.number(*found, positive=True))
        if (found := pick("max_retries")) is not None:
            settings = attrs.evolve(settings, max_retries=self.integer(*found, minimum=0))
        return settings

    # -- scripts ---------------------------------------------------------------

    def turn(self, agent: AgentSpec, value: object, path: str) -> ScriptedTurn:
        data = self.table(value, path, "a turn table with steps = [...]")
        self.check_keys(data, path, _TURN_KEYS, required=_TURN_KEYS)
        steps_path = f"{path}.steps"
        steps = self.array(data["steps"], steps_path)
        if not steps:
            raise self.error(steps_path, 'a turn needs at least one step, e.g. { say = "..." }')
        return ScriptedTurn(
            steps=tuple(
                self.step(agent, step, f"{steps_path}[{index}]") for index, step in enumerate(steps)
            )
        )

    def step(self, agent: AgentSpec, value: object, path: str) -> Step:
        data = self.table(value, path, 'a step table such as { say = "..." }')
        actions = [key for key in data if key in _STEP_KEYS]
        if not actions:
            for key in data:
                if key not in _ALL_STEP_KEYS:
                    raise self.error(
                        _join(path, key),
                        f"unknown step key {key!r}{_did_you_mean(key, _ALL_STEP_KEYS)}; "
                        f"a step has one of: {', '.join(_STEP_KEYS)}",
                    )
            raise self.error(path, f"the step has no action; add one of: {', '.join(_STEP_KEYS)}")
        if len(actions) > 1:
            raise self.error(
                path,
                f"the step has several actions ({', '.join(actions)}); write one step per action",
            )
        action = actions[0]
        allowed = _STEP_KEYS[action] + _STEP_COMMON_KEYS
        for key in data:
            if key not in allowed:
                owners = [a for a, keys in _STEP_KEYS.items() if key in keys]
                hint = (
                    f" (it belongs to a {owners[0]} step)"
                    if owners
                    else _did_you_mean(key, allowed)
                )
                raise self.error(
                    _join(path, key),
                    f"unknown key {key!r} for a {action} step{hint}; allowed: {', '.join(allowed)}",
                )
        when = None
        if "when_task_contains" in data:
            when = self.string(data["when_task_contains"], f"{path}.when_task_contains")
        action_path = _join(path, action)
        raw = data[action]

        if action in {"say", "think"}:
            text = self.string(raw, action_path)
            chunks = DEFAULT_CHUNKS
            if "chunks" in data:
                chunks = self.integer(data["chunks"], f"{path}.chunks", minimum=1)
            if action == "say":
                return SayStep(text=text, chunks=chunks, when_task_contains=when)
            return ThinkStep(text=text, chunks=chunks, when_task_contains=when)
        if action == "tool":
            tool = self.name(raw, action_path, "tool name")
            if tool in TEAM_TOOLS:
                raise self.error(
                    action_path,
                    f"{tool!r} is a team tool: use a {{ {tool} = ... }} step instead",
                )
            self.require_tool(agent, tool, action_path)
            tool_input: dict[str, Any] = {}
            if "input" in data:
                input_path = f"{path}.input"
                tool_input = self.json_value(self.table(data["input"], input_path), input_path)
            return ToolStep(tool=tool, input=tool_input, when_task_contains=when)
        if action == "delegate":
            self.require_tool(agent, "delegate", action_path)
            entries = self.array(raw, action_path)
            if not entries:
                raise self.error(
                    action_path, 'delegate at least one task: [{ agent = "...", task = "..." }]'
                )
            delegations = []
            for index, entry in enumerate(entries):
                entry_path = f"{action_path}[{index}]"
                entry_data = self.table(entry, entry_path, '{ agent = "...", task = "..." }')
                self.check_keys(entry_data, entry_path, _DELEGATION_KEYS, required=_DELEGATION_KEYS)
                target = self.delegate_target(agent, entry_data["agent"], f"{entry_path}.agent")
                task = self.string(entry_data["task"], f"{entry_path}.task")
                delegations.append(Delegation(agent=target, task=task))
            return DelegateStep(delegations=tuple(delegations), when_task_contains=when)
        if action == "handoff":
            self.require_tool(agent, "handoff", action_path)
            target = self.delegate_target(agent, raw, action_path)
            if "reason" not in data:
                raise self.error(
                    f"{path}.reason", "missing required key 'reason' (why the work moves)"
                )
            reason = self.string(data["reason"], f"{path}.reason")
            resume = agent.name
            if "resume" in data:
                resume = self.agent_ref(data["resume"], f"{path}.resume")
            return HandoffStep(agent=target, reason=reason, resume=resume, when_task_contains=when)
        if action == "ask":
            self.require_tool(agent, "ask", action_path)
            question = self.string(raw, action_path)
            kind: QuestionKind = "text"
            if "kind" in data:
                kind = self.choice(data["kind"], f"{path}.kind", _QUESTION_KINDS, "question kind")
            options: tuple[str, ...] = ()
            if kind in _SELECT_KINDS:
                if "options" not in data:
                    raise self.error(f"{path}.options", f"a {kind} question needs options = [...]")
                options_path = f"{path}.options"
                seen: list[str] = []
                for index, option in enumerate(self.array(data["options"], options_path)):
                    text = self.string(option, f"{options_path}[{index}]")
                    if text in seen:
                        raise self.error(f"{options_path}[{index}]", f"{text!r} is listed twice")
                    seen.append(text)
                if not seen:
                    raise self.error(options_path, f"a {kind} question needs at least one option")
                options = tuple(seen)
            elif "options" in data:
                raise self.error(
                    f"{path}.options",
                    f"options only apply to single-select and multi-select, not {kind}",
                )
            return AskStep(question=question, kind=kind, options=options, when_task_contains=when)
        if action == "fail":
            return FailStep(message=self.string(raw, action_path), when_task_contains=when)
        if action == "sleep":
            seconds = self.number(raw, action_path, positive=False)
            return SleepStep(seconds=seconds, when_task_contains=when)
        # usage: the only action left
        pair = self.array(raw, action_path)
        if len(pair) != 2:
            raise self.error(
                action_path, f"expected [input_tokens, output_tokens], got {len(pair)} items"
            )
        input_tokens = self.integer(pair[0], f"{action_path}[0]", minimum=0)
        output_tokens = self.integer(pair[1], f"{action_path}[1]", minimum=0)
        return UsageStep(
            input_tokens=input_tokens, output_tokens=output_tokens, when_task_contains=when
        )

    def require_tool(self, agent: AgentSpec, tool: str, path: str) -> None:
        if tool not in agent.tools:
            raise self.error(
                path,
                f"agent {agent.name!r} calls {tool!r} but it is not in its tools "
                f"({_one_of(agent.tools) or 'none'}); add it to agents.{agent.name}.tools",
            )

    def delegate_target(self, agent: AgentSpec, value: object, path: str) -> str:
        target = self.agent_ref(value, path)
        if target not in agent.delegates_to:
            raise self.error(
                path,
                f"{target!r} is not in agents.{agent.name}.delegates_to "
                f"({_one_of(agent.delegates_to) or 'empty'}); add it there",
            )
        return target
