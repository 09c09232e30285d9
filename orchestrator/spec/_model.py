"""The team-file model: a validated team definition as frozen attrs classes.

:class:`TeamSpec` holds the ``[team]`` table, its agents (:class:`AgentSpec`, each with
its backend's settings and its scripted turns, :mod:`._script`), its command tools
(:class:`CommandTool`), its Python tools (:class:`PythonTool`) and its ``[[background]]``
teammates (:mod:`._schedule`). The
parser (:mod:`._parse`) builds them and checks every invariant written beside a field,
so the runtime trusts them as they are.

Pure: no trio and no IO.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from orchestrator.base import RunError

from ._board import BoardSpec
from ._review import DEFAULT_MAX_REVIEW_ROUNDS, ReviewMode
from ._schedule import BackgroundSpec
from ._script import ScriptedTurn
from ._wording import _did_you_mean

__all__ = [
    "A2A_BACKEND",
    "BUILTIN_BACKENDS",
    "COMMAND_ENV_PREFIX",
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_MCP_CALL_TIMEOUT",
    "DEFAULT_MCP_START_TIMEOUT",
    "DEFAULT_PARALLEL_BUDGET",
    "DEFAULT_TOOL_RESULT",
    "MCP_PREFIX",
    "TEAM_TOOLS",
    "A2ASettings",
    "AgentSpec",
    "ApprovedBy",
    "BackendName",
    "CommandTool",
    "Interactivity",
    "McpServer",
    "McpToolRef",
    "OpenAISettings",
    "PythonTool",
    "RestartPolicy",
    "StructuredOutput",
    "TeamSpec",
    "Topology",
    "mcp_tool_ref",
    "with_model",
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
#: How the OpenAI-compatible backend asks for an answer that fits an agent's output_schema:
#: ``auto`` (the response format for an agent without tools, else a ``final_answer`` tool),
#: ``response_format`` (always the response format) or ``tool`` (always the tool: for a server
#: that does not take response formats).
StructuredOutput: TypeAlias = Literal["auto", "response_format", "tool"]
ApprovedBy: TypeAlias = Literal["user", "coordinator"]
#: An agent's backend: a built-in one (:data:`BUILTIN_BACKENDS`), the name of a plugin
#: registered under the ``orchestrator.backends`` entry-point group, or ``module:factory``.
#: The spec only records it; :mod:`orchestrator.runtime.backends` resolves it.
BackendName: TypeAlias = str
#: The backends the runtime has built in; any other name is a plugin's.
BUILTIN_BACKENDS: Final = ("scripted", "openai")
#: The backend of a remote teammate (``[agents.NAME] a2a = "http://..."``): not a name a team
#: file writes in ``backend``, the ``a2a`` key sets it.
A2A_BACKEND: Final = "a2a"

#: Tool names the runtime implements itself; any other name is a plain tool.
TEAM_TOOLS: Final = frozenset({"delegate", "handoff", "ask", "review"})

#: Environment variables the runtime sets for a command tool; a team file cannot set them.
COMMAND_ENV_PREFIX: Final = "ORCHESTRATOR_"

DEFAULT_PARALLEL_BUDGET: Final = 4
DEFAULT_TOOL_RESULT: Final = "ok"
#: How long a command tool may run when its table sets no ``timeout``.
DEFAULT_COMMAND_TIMEOUT: Final = datetime.timedelta(minutes=10)
#: How long one call of an MCP server's tool may take when its table sets no ``timeout``.
DEFAULT_MCP_CALL_TIMEOUT: Final = datetime.timedelta(minutes=5)
#: How long an MCP server may take to start and answer the handshake.
DEFAULT_MCP_START_TIMEOUT: Final = datetime.timedelta(seconds=30)
#: How an agent's ``tools`` names an MCP server's tool: ``mcp.<server>/<tool>``, or
#: ``mcp.<server>/*`` for every tool the server lists.
MCP_PREFIX: Final = "mcp."


@attrs.frozen(kw_only=True)
class OpenAISettings:
    """How an agent on the OpenAI-compatible backend reaches its model.

    ``base_url`` None means: the ``OPENAI_BASE_URL`` environment variable, else the hosted
    API (what the official clients do). The API key is read from the environment variable
    ``api_key_env`` when a run starts; the team file never holds a key. The servers that
    speak the format differ in a few ways, each a setting here (docs/guides/models.md says
    which server needs which).
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    # The header the key goes in: ``authorization`` sends ``Bearer <key>``; another name
    # sends the key alone (Azure OpenAI's ``api-key``).
    api_key_header: str = "authorization"
    # Query parameters added to every request (Azure OpenAI's ``api-version``).
    query: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # Ask for the token counts at the end of the stream (``stream_options.include_usage``);
    # off for a server that refuses the option.
    stream_usage: bool = True
    temperature: float | None = None
    # Seconds without a byte from the server before the round fails (models think slowly).
    read_timeout: float = 120.0
    # Retries of a request the server refused with 429 / 5xx or could not be reached (not
    # when a loopback address refuses or a name does not resolve: see backends/_reachability).
    max_retries: int = 4
    # How an answer that fits the agent's output_schema is asked for (see StructuredOutput).
    structured_output: StructuredOutput = "auto"


@attrs.frozen(kw_only=True)
class CommandTool:
    """A tool that runs a local program: a ``[tools.<name>]`` table of a team file.

    A call runs ``command`` (an argv: no shell reads it) with the call's input as JSON on
    stdin; what the program writes to stdout is the call's result (see
    :mod:`orchestrator.runtime.tools._command_tool`).

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
    # Added to the program's allow-listed environment (the orchestrator's own is not
    # passed on: see orchestrator.runtime's tool_environment).
    env: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # Variables of the orchestrator's environment the program also gets, by name.
    env_passthrough: tuple[str, ...] = ()
    # The JSON Schema of a call's input (``parameters`` or ``parameters_file``): offered to the
    # model as the tool's parameters, and a call's input is checked against it before the
    # program runs. Without one, any JSON object.
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"}, hash=False)


@attrs.frozen(kw_only=True)
class PythonTool:
    """A tool that calls a Python function: a ``[tools.<name>]`` table with ``python``.

    ``target`` names the function as ``package.module:qualname``; the spec only records it
    (it imports no user code): the runtime imports it when a team starts, and derives the
    input schema from its signature unless ``parameters`` gives one (see
    :mod:`orchestrator.runtime.tools._python_tool`). The function runs in the orchestrator's own
    process, so the table has no ``cwd`` or ``env``.

    Invariant: ":" in self.target
    """

    name: str
    target: str
    # Empty: the function's docstring (its first paragraph) describes it.
    description: str = ""
    timeout: datetime.timedelta = DEFAULT_COMMAND_TIMEOUT
    # The input schema (``parameters`` or ``parameters_file``); None: derived from the
    # function's signature and type hints when the team starts.
    parameters: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    # The function itself, for a team defined in Python (``python`` given a callable: see
    # :mod:`._code_first`): the runtime calls it as it is, and ``target`` only names it. None:
    # the runtime imports ``target`` when the team starts.
    function: Callable[..., Any] | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def module(self) -> str:
        """The module to import: ``package.module`` of ``package.module:qualname``."""
        return self.target.partition(":")[0]

    @property
    def qualname(self) -> str:
        """The function's (dotted) name inside :attr:`module`."""
        return self.target.partition(":")[2]


@attrs.frozen(kw_only=True)
class A2ASettings:
    """How a remote teammate is reached: an Agent2Agent (A2A) agent at ``url``.

    ``url`` is the base URL its Agent Card is published under
    (``<url>/.well-known/agent-card.json``). The headers go with every request, as an
    ``[mcp.<name>]`` server's do: a value is literal text, or read from an environment
    variable when the agent is contacted (``env_headers``), so a team file never holds a token.
    """

    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # Header name -> environment variable: ``headers = { Authorization = "env:TOKEN" }``.
    env_headers: Mapping[str, str] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class McpServer:
    """A Model Context Protocol tool server: an ``[mcp.<name>]`` table of a team file.

    Exactly one transport: ``command`` (stdio: the runtime starts the program and speaks
    MCP over its stdin and stdout) or ``url`` (streamable HTTP). Its tools are listed when
    the team starts; an agent names them as ``mcp.<name>/<tool>`` (see :class:`McpToolRef`).

    Invariant: (len(self.command) >= 1) != (self.url is not None)
    Invariant: not self.headers or self.url is not None
    Invariant: not (self.env or self.env_passthrough or self.cwd) or self.command
    """

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    # The program's working directory (stdio); relative paths are taken from the team
    # file's directory, as for a command tool.
    cwd: str | None = None
    # Added to the program's allow-listed environment (stdio).
    env: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # Variables of the orchestrator's environment the program also gets (stdio).
    env_passthrough: tuple[str, ...] = ()
    # HTTP headers sent with every request (url). A value is literal text, or the name of
    # an environment variable to read it from when the server is contacted (``env_headers``),
    # so a team file never holds a token.
    headers: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # Header name -> environment variable: ``headers = { Authorization = "env:TOKEN" }``.
    env_headers: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    # One call's limit; a call that takes longer fails (and its request is cancelled).
    timeout: datetime.timedelta = DEFAULT_MCP_CALL_TIMEOUT
    # Starting the program (or reaching the URL) and the handshake, together.
    start_timeout: datetime.timedelta = DEFAULT_MCP_START_TIMEOUT

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url is not None else "stdio"


@attrs.frozen
class McpToolRef:
    """An MCP tool as an agent's ``tools`` names it: ``mcp.<server>/<tool>``; ``tool`` is
    ``"*"`` for every tool the server lists."""

    server: str
    tool: str

    @property
    def is_wildcard(self) -> bool:
        return self.tool == "*"

    def covers(self, name: str) -> bool:
        """Whether this entry names the tool ``name`` (a full ``mcp.<server>/<tool>``)."""
        ref = mcp_tool_ref(name)
        return (
            ref is not None
            and ref.server == self.server
            and (self.is_wildcard or ref.tool == self.tool)
        )

    def __str__(self) -> str:
        return f"{MCP_PREFIX}{self.server}/{self.tool}"


def _names(entries: tuple[str, ...], tool: str) -> bool:
    """Whether ``entries`` (a list of tool names of a team file) names ``tool``."""
    if tool in entries:
        return True
    ref = mcp_tool_ref(tool)
    return ref is not None and f"{MCP_PREFIX}{ref.server}/*" in entries


def mcp_tool_ref(name: str) -> McpToolRef | None:
    """The MCP server and tool that ``name`` names, or None if it is not an MCP tool's name
    (``mcp.<server>/<tool>``; the parser has checked both parts of a team file's names)."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, slash, tool = name[len(MCP_PREFIX) :].partition("/")
    if not slash or not server or not tool:
        return None
    return McpToolRef(server, tool)


@attrs.frozen(kw_only=True)
class AgentSpec:
    """One agent definition of a team (a worker definition may run as several chats)."""

    name: str
    role: str
    backend: BackendName = "scripted"
    # Invariant: (self.openai is not None) == (self.backend == "openai")
    openai: OpenAISettings | None = None
    # A remote teammate's A2A agent; its turns are the remote task's updates.
    # Invariant: (self.a2a is not None) == (self.backend == A2A_BACKEND)
    a2a: A2ASettings | None = None
    # A plugin backend's ``[agents.<name>.settings]`` table, as TOML decoded it; the
    # plugin's factory reads it (see :mod:`orchestrator.runtime.backends._plugins`).
    # Invariant: not self.settings or self.backend not in BUILTIN_BACKENDS
    settings: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
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
    # Invariant: set(artifacts) <= set(tools)
    artifacts: tuple[str, ...] = ()  # its tools whose results are recorded as artifacts
    timeout: float | None = None
    # Invariant: set(tool_results) <= set(tools) - TEAM_TOOLS - {the team's [tools] tables}
    tool_results: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    turns: tuple[ScriptedTurn, ...] = ()
    # The JSON Schema (draft 2020-12) each final answer must fit (see spec/_output.py); None:
    # any text. Checked as a schema when parsed.
    output_schema: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    # The workers this agent reviews (``reviews``): each delegation to one of them is reviewed
    # by this agent, whose output_schema is then the verdict's (spec/_review.py).
    # Invariant: self.name not in self.reviews
    reviews: tuple[str, ...] = ()
    # At most this many reviews of one delegation (a reviewer's ``max_review_rounds``).
    # Invariant: self.max_review_rounds >= 1
    max_review_rounds: int = DEFAULT_MAX_REVIEW_ROUNDS
    # When reviewed delegations are reviewed (the coordinator's ``review``): None when not
    # declared, which means "always".
    review: ReviewMode | None = None

    @property
    def plain_tools(self) -> tuple[str, ...]:
        """The tools that are not team tools (the runtime executes them as plain tools)."""
        return tuple(t for t in self.tools if t not in TEAM_TOOLS)

    def may_call(self, tool: str) -> bool:
        """Whether ``tool`` is one of this agent's tools: listed by name, or an MCP tool
        whose server's ``mcp.<server>/*`` is listed."""
        return _names(self.tools, tool)

    def records_artifact(self, tool: str) -> bool:
        """Whether a successful call of ``tool`` by this agent is recorded as an artifact."""
        return _names(self.artifacts, tool)

    def needs_approval_for(self, tool: str) -> bool:
        """Whether a call of ``tool`` by this agent waits for a decision."""
        return _names(self.needs_approval, tool)

    def approves_tool(self, tool: str) -> bool:
        """Whether this agent (the coordinator) approves calls of ``tool`` routed to it."""
        return _names(self.approves or (), tool)

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
    # The [tools.<name>] tables with ``python``, in file order.
    # Invariant: not ({p.name for p in python_tools} & {c.name for c in command_tools})
    # Invariant: not ({p.name for p in python_tools} & TEAM_TOOLS)
    python_tools: tuple[PythonTool, ...] = ()
    # The [mcp.<name>] tool servers, in file order.
    # Invariant: every mcp_tool_ref(t) of an agent's tools names one of them
    mcp_servers: tuple[McpServer, ...] = ()
    # The [board] work items; None when the file declares no board.
    # Invariant: every assignee of kind agent is in self.agent_names
    board: BoardSpec | None = None
    file: str = "<team>"
    # The TOML text it was parsed from (kept with a session so it can be resumed as it was).
    source: str = attrs.field(default="", repr=False, eq=False)
    # The model one run chose for its OpenAI-compatible agents (:func:`with_model`), not a
    # team-file key: a run records it (``team/runStarted``'s ``model``), since ``source``
    # does not have it. None: each agent asks its own.
    model: str | None = None

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

    @property
    def tool_table_names(self) -> tuple[str, ...]:
        """The ``[tools.<name>]`` tools: the command tools, then the Python tools."""
        return tuple(t.name for t in self.command_tools) + tuple(t.name for t in self.python_tools)

    def command_tool(self, name: str) -> CommandTool | None:
        """The command tool called ``name``; None if ``name`` is not one (a plain tool then
        answers its scripted ``tool_results``)."""
        for tool in self.command_tools:
            if tool.name == name:
                return tool
        return None

    def python_tool(self, name: str) -> PythonTool | None:
        """The Python tool called ``name``, or None."""
        for tool in self.python_tools:
            if tool.name == name:
                return tool
        return None

    def mcp_server(self, name: str) -> McpServer | None:
        """The ``[mcp.<name>]`` server called ``name``, or None."""
        for server in self.mcp_servers:
            if server.name == name:
                return server
        return None

    def reviewer_of(self, worker: str) -> AgentSpec | None:
        """The agent that reviews ``worker``'s delegations (its ``reviews`` names it), or None.

        Invariant: at most one agent's ``reviews`` names a worker (the parser checks it).
        """
        return next((a for a in self.agents if worker in a.reviews), None)

    @property
    def review_mode(self) -> ReviewMode:
        """When reviewed delegations are reviewed, unless a delegation says otherwise."""
        return self.coordinator_agent.review or "always"

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


def with_model(team: TeamSpec, model: str) -> TeamSpec:
    """``team`` with every agent of the OpenAI-compatible backend asking ``model``
    (``orchestrator run --model``: one run's choice, the team file unchanged)."""
    agents = tuple(
        agent
        if agent.openai is None
        else attrs.evolve(agent, openai=attrs.evolve(agent.openai, model=model))
        for agent in team.agents
    )
    return attrs.evolve(team, agents=agents, model=model)
