"""The team-file model: a validated team definition as frozen attrs classes.

:class:`TeamSpec` holds the ``[team]`` table, its agents (:class:`AgentSpec`, each with
its backend's settings and its scripted turns, :mod:`._script`), its command tools
(:class:`CommandTool`) and its ``[[background]]`` teammates (:mod:`._schedule`). The
parser (:mod:`._parse`) builds them and checks every invariant written beside a field,
so the runtime trusts them as they are.

Pure: no trio and no IO.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from orchestrator.base import RunError

from ._schedule import BackgroundSpec
from ._script import ScriptedTurn
from ._wording import _did_you_mean

__all__ = [
    "BUILTIN_BACKENDS",
    "COMMAND_ENV_PREFIX",
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_PARALLEL_BUDGET",
    "DEFAULT_TOOL_RESULT",
    "TEAM_TOOLS",
    "AgentSpec",
    "ApprovedBy",
    "BackendName",
    "CommandTool",
    "Interactivity",
    "OpenAISettings",
    "RestartPolicy",
    "TeamSpec",
    "Topology",
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
ApprovedBy: TypeAlias = Literal["user", "coordinator"]
#: An agent's backend: a built-in one (:data:`BUILTIN_BACKENDS`), the name of a plugin
#: registered under the ``orchestrator.backends`` entry-point group, or ``module:factory``.
#: The spec only records it; :mod:`orchestrator.runtime.backends` resolves it.
BackendName: TypeAlias = str
#: The backends the runtime has built in; any other name is a plugin's.
BUILTIN_BACKENDS: Final = ("scripted", "openai")

#: Tool names the runtime implements itself; any other name is a plain tool.
TEAM_TOOLS: Final = frozenset({"delegate", "handoff", "ask"})

#: Environment variables the runtime sets for a command tool; a team file cannot set them.
COMMAND_ENV_PREFIX: Final = "ORCHESTRATOR_"

DEFAULT_PARALLEL_BUDGET: Final = 4
DEFAULT_TOOL_RESULT: Final = "ok"
#: How long a command tool may run when its table sets no ``timeout``.
DEFAULT_COMMAND_TIMEOUT: Final = datetime.timedelta(minutes=10)


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
    # The JSON Schema of a call's input (``parameters`` or ``parameters_file``): offered to the
    # model as the tool's parameters, and a call's input is checked against it before the
    # program runs. Without one, any JSON object.
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"}, hash=False)


@attrs.frozen(kw_only=True)
class AgentSpec:
    """One agent definition of a team (a worker definition may run as several chats)."""

    name: str
    role: str
    backend: BackendName = "scripted"
    # Invariant: (self.openai is not None) == (self.backend == "openai")
    openai: OpenAISettings | None = None
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


def with_model(team: TeamSpec, model: str) -> TeamSpec:
    """``team`` with every agent of the OpenAI-compatible backend asking ``model``
    (``orchestrator run --model``: one run's choice, the team file unchanged)."""
    agents = tuple(
        agent
        if agent.openai is None
        else attrs.evolve(agent, openai=attrs.evolve(agent.openai, model=model))
        for agent in team.agents
    )
    return attrs.evolve(team, agents=agents)
