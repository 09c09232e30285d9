"""The team-file parser: one walk over a decoded TOML document, each check naming its key
path.

Theory of operation: :func:`~._teamfile.parse_team` hands the text to :mod:`tomllib`. Then
:class:`_Parser` walks the resulting dict once, top-down:

1. ``[team]``;
2. every tool table ``[tools.<name>]`` and MCP server ``[mcp.<name>]`` (their checks are
   :mod:`._parse_tools`'s);
3. every ``[agents.<name>]`` in file order, with its turns and steps;
4. every ``[[background]]`` teammate, whose schedule :mod:`._schedule` checks.

Each check knows the key path of the value it looks at. So the first problem raises a
:class:`~orchestrator.base._errors.TeamFileError` naming the file, the key path
(``agents.researcher.turns[0].steps[2].chunks``) and what is wrong. The checks of single
values (a table's keys, a name, an integer from a minimum, a duration...) are those of
:class:`~._checks._ValueChecks`, which the parser extends. The rules across values are here.

The checks are explicit code rather than a cattrs structure hook. The messages need domain words
("did you mean", the declared agents, the allowed values). Most rules are cross references that a
structural converter cannot express: the coordinator, ``delegates_to``, ``needs_approval`` ⊆
``tools``, the script's tool steps against ``tools``. The agent names are collected before any agent
is read, so a reference to an agent declared further down is fine.

An agent's scripted turns and their steps are checked by :mod:`._parse_script`, whose
:class:`~._parse_script._ScriptChecks` the parser extends.

Pure: no trio and no IO.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, get_args

import attrs

from orchestrator.base import ScheduleError, TeamFileError

from ._board import BOARD_TOOLS
from ._model import (
    A2A_BACKEND,
    BUILTIN_BACKENDS,
    DEFAULT_PARALLEL_BUDGET,
    MCP_PREFIX,
    TEAM_TOOLS,
    A2ASettings,
    AgentSpec,
    ApprovedBy,
    BackendName,
    CommandTool,
    Interactivity,
    McpServer,
    OpenAISettings,
    PythonTool,
    RestartPolicy,
    StructuredOutput,
    TeamSpec,
    Topology,
)
from ._parse_board import _BoardChecks
from ._parse_script import _ScriptChecks
from ._parse_tools import _FACTORY_PATH_RE, ENV_NAME_RE, _lists
from ._review import DEFAULT_MAX_REVIEW_ROUNDS, REVIEW_MODES, VERDICT_SCHEMA, ReviewMode
from ._schedule import (
    DEFAULT_CATCH_UP_LIMIT,
    BackgroundSpec,
    CatchUp,
    Every,
    Overlap,
    Schedule,
    parse_cron,
    parse_zone,
)
from ._script import (
    ScriptedTurn,
)
from ._wording import _describe, _did_you_mean, _join, _one_of

__all__: list[str] = []

_TOPOLOGIES: Final[dict[str, Topology]] = {v: v for v in get_args(Topology)}
_INTERACTIVITIES: Final[dict[str, Interactivity]] = {v: v for v in get_args(Interactivity)}
_APPROVERS: Final[dict[str, ApprovedBy]] = {v: v for v in get_args(ApprovedBy)}
_STRUCTURED_OUTPUTS: Final[dict[str, StructuredOutput]] = {v: v for v in get_args(StructuredOutput)}
_REVIEW_MODES: Final[dict[str, ReviewMode]] = {v: v for v in REVIEW_MODES}
#: A plugin backend named by its entry point (``[project.entry-points."orchestrator.backends"]``).
_ENTRY_POINT_NAME_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
#: An HTTP header's name (RFC 9110's token), as the key's header is written: lower case.
_HEADER_NAME_RE: Final = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]+\Z")
_PLUGIN_FORMS: Final = "a plugin's entry-point name, or module:factory"

_TOP_KEYS: Final = ("team", "agents", "tools", "mcp", "openai", "background", "board")
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
    "api_key_header",
    "query",
    "stream_usage",
    "temperature",
    "read_timeout",
    "max_retries",
    "structured_output",
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
    "artifacts",
    "timeout",
    "tool_results",
    "turns",
    "output_schema",
    # Reviews: the workers this agent reviews, its limit of rounds; the coordinator's mode.
    "reviews",
    "max_review_rounds",
    "review",
    # A plugin backend's own table, handed to its factory as it is.
    "settings",
    # A remote teammate: its A2A agent's base URL, and the headers sent with each request.
    "a2a",
    "headers",
    # The backend's own settings, overriding the file's [openai] table for this agent.
    *_OPENAI_KEYS,
)
#: The keys of a remote teammate's table (``a2a = "..."``): its agent answers by itself.
_A2A_AGENT_KEYS: Final = ("role", "interactivity", "timeout", "a2a", "headers")
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


class _Problems:
    """The problems found in one table, kept while the table's other keys are checked."""

    def __init__(self) -> None:
        self.found: list[TeamFileError] = []

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """Keep a problem raised in the block instead of stopping at it."""
        try:
            yield
        except TeamFileError as exc:
            self.found.extend(exc.problems)

    def add(self, problem: TeamFileError) -> None:
        self.found.extend(problem.problems)

    def raise_any(self) -> None:
        if self.found:
            raise TeamFileError.of(self.found)


class _Parser(_ScriptChecks):
    """One walk over one decoded document; ``file`` goes into every error."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        # The [tools.<name>] keys, known before any agent is read (tool_results refers to them).
        self.command_names: tuple[str, ...] = ()
        # Those of them that call a Python function (``python``) rather than run a program.
        self.python_names: tuple[str, ...] = ()
        self.openai_defaults: Mapping[str, object] = {}
        # team.coordinator, once read (a reviewer may not review it).
        self.coordinator = ""

    # -- the document --------------------------------------------------------

    def team(self, data: Mapping[str, Any]) -> TeamSpec:
        # [team] is checked before [agents] is required: a typo in [team] is the more useful
        # first error in a file that is still being written.
        self.check_keys(data, "", _TOP_KEYS, required=("team",))
        team = self.table(data["team"], "team", "a [team] table")
        # The [team] table's problems are kept while its other keys and the agents are
        # checked: one teams check reports them all (see _Problems).
        found = _Problems()
        with found.kept():
            self.check_keys(team, "team", _TEAM_KEYS, required=("name", "coordinator"))
        if "agents" not in data:
            found.raise_any()
        self.check_keys(data, "", _TOP_KEYS, required=("team", "agents"))
        name = ""
        if "name" in team:
            with found.kept():
                name = self.string(team["name"], "team.name")
        topology: Topology = "coordinator_team"
        if "topology" in team:
            with found.kept():
                topology = self.choice(team["topology"], "team.topology", _TOPOLOGIES, "topology")
        budget = DEFAULT_PARALLEL_BUDGET
        if "parallel_budget" in team:
            with found.kept():
                budget = self.integer(team["parallel_budget"], "team.parallel_budget", minimum=1)
        coordinator = ""
        if "coordinator" in team:
            with found.kept():
                coordinator = self.string(team["coordinator"], "team.coordinator")
                self.coordinator = coordinator
        on_restart = RestartPolicy.RESUME
        if "on_restart" in team:
            with found.kept():
                on_restart = self.choice(
                    team["on_restart"],
                    "team.on_restart",
                    {policy.value: policy for policy in RestartPolicy},
                    "restart policy",
                )

        try:  # without the agents' names nothing more can be checked
            agents = self.table(data["agents"], "agents", "[agents.<name>] tables")
            if not agents:
                raise self.error("agents", "declare at least one agent as [agents.<name>]")
            self.agent_names = tuple(
                self.name(agent_name, _join("agents", agent_name), "agent name")
                for agent_name in agents
            )
        except TeamFileError as exc:
            found.add(exc)
            found.raise_any()
        if coordinator and coordinator not in self.agent_names:
            found.add(
                self.error(
                    "team.coordinator",
                    f"the coordinator {coordinator!r} is not declared"
                    f"{_did_you_mean(coordinator, self.agent_names)}; add "
                    f"[agents.{coordinator}] or pick one of: {', '.join(self.agent_names)}",
                )
            )
        description = ""
        if "description" in team:
            with found.kept():
                description = self.string(team["description"], "team.description", empty_ok=True)
        if "openai" in data:
            with found.kept():
                self.openai_defaults = self.table(data["openai"], "openai", "an [openai] table")
                self.check_keys(self.openai_defaults, "openai", _OPENAI_KEYS)

        # Each command tool and each agent is checked on its own, so one run of `teams check`
        # reports them all (after the [team] table's problems).
        problems: list[TeamFileError] = found.found
        commands: list[CommandTool] = []
        pythons: list[PythonTool] = []
        if "tools" in data:
            tables = self.section(
                data, "tools", 'tables such as [tools.run_tests] command = ["..."]', problems
            )
            self.command_names = tuple(tables)
            self.python_names = tuple(
                n for n, table in tables.items() if isinstance(table, dict) and "python" in table
            )
            for tool_name, value in tables.items():
                try:
                    match self.command_tool(tool_name, value):
                        case CommandTool() as command:
                            commands.append(command)
                        case PythonTool() as python:
                            pythons.append(python)
                except TeamFileError as exc:
                    problems.extend(exc.problems)
        # The MCP servers before the agents, whose tools name them.
        servers: list[McpServer] = []
        if "mcp" in data:
            mcp_tables = self.section(
                data, "mcp", 'tables such as [mcp.time] command = ["..."]', problems
            )
            self.mcp_names = tuple(mcp_tables)
            for server_name, value in mcp_tables.items():
                try:
                    servers.append(self.mcp_server(server_name, value))
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
        board = None
        if "board" in data:
            try:
                board = _BoardChecks(self.file).board(data["board"], self.agent_names)
            except TeamFileError as exc:
                problems.extend(exc.problems)
        for agent in parsed:
            for index, tool in enumerate(agent.tools):
                if tool in BOARD_TOOLS and board is None and "board" not in data:
                    problems.append(
                        self.error(
                            _join(_join("agents", agent.name), "tools") + f"[{index}]",
                            f"{tool!r} works on the team's board, and this file declares "
                            "none: add a [board] table with [[board.items]]",
                        )
                    )
        if problems:
            raise TeamFileError.of(problems)
        specs = tuple(parsed)
        self.check_approvers(specs, coordinator)
        self.check_reviews(specs, coordinator)
        return TeamSpec(
            name=name,
            topology=topology,
            parallel_budget=budget,
            coordinator=coordinator,
            description=description,
            on_restart=on_restart,
            agents=specs,
            python_tools=tuple(pythons),
            background=tuple(background),
            command_tools=tuple(commands),
            mcp_servers=tuple(servers),
            board=board,
            file=self.file,
        )

    def section(
        self, data: Mapping[str, Any], key: str, what: str, problems: list[TeamFileError]
    ) -> Mapping[str, object]:
        """The tables of a section such as ``[tools]`` (empty, its problem kept in
        ``problems``, if it is not a table)."""
        try:
            return self.table(data[key], key, what)
        except TeamFileError as exc:
            problems.extend(exc.problems)
            return {}

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

    def check_reviews(self, agents: Sequence[AgentSpec], coordinator: str) -> None:
        """Each worker has at most one reviewer, and the coordinator's ``review`` mode and
        ``review`` tool have a reviewer to call."""
        problems: list[TeamFileError] = []
        reviewed_by: dict[str, str] = {}
        for agent in agents:
            for index, worker in enumerate(agent.reviews):
                where = f"{_join('agents', agent.name)}.reviews[{index}]"
                if worker in reviewed_by:
                    problems.append(
                        self.error(
                            where,
                            f"{worker!r} is already reviewed by {reviewed_by[worker]!r}; a "
                            "worker has one reviewer (remove it from one of the two lists)",
                        )
                    )
                else:
                    reviewed_by[worker] = agent.name
        lead = next(a for a in agents if a.name == coordinator)
        lead_path = _join("agents", coordinator)
        if not reviewed_by and lead.review is not None:
            problems.append(
                self.error(
                    f"{lead_path}.review",
                    'no agent reviews anyone: add reviews = ["<worker>"] to a reviewer\'s '
                    "table, or remove review",
                )
            )
        if not reviewed_by and "review" in lead.tools:
            problems.append(
                self.error(
                    f"{lead_path}.tools",
                    "the review tool asks a reviewer, and no agent reviews anyone: add "
                    'reviews = ["<worker>"] to a reviewer\'s table, or remove "review"',
                )
            )
        if lead.review == "on_request" and "review" not in lead.tools:
            problems.append(
                self.error(
                    f"{lead_path}.review",
                    'with review = "on_request" the coordinator asks for reviews with the '
                    'review tool: add "review" to its tools',
                )
            )
        if problems:
            raise TeamFileError.of(problems)

    def reviews(self, data: Mapping[str, Any], path: str, name: str) -> tuple[str, ...]:
        """An agent's ``reviews``: declared agents other than itself and the coordinator."""
        reviews_path = f"{path}.reviews"
        workers = self.names(data["reviews"], reviews_path, "agent name")
        for index, worker in enumerate(workers):
            self.agent_ref(worker, f"{reviews_path}[{index}]")
            if worker == name:
                raise self.error(
                    f"{reviews_path}[{index}]",
                    "an agent cannot review its own work; name the workers it reviews",
                )
            if worker == self.coordinator:
                raise self.error(
                    f"{reviews_path}[{index}]",
                    f"{worker!r} is the coordinator, which nobody delegates to; a reviewer "
                    "reviews workers",
                )
        return workers

    def own_tools(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        tools: tuple[str, ...],
        tools_known: bool,
        problems: _Problems,
    ) -> tuple[str, ...]:
        """An agent's ``key`` (``needs_approval``, ``artifacts``): tool names, each one of
        the agent's ``tools`` when those could be read; () when absent."""
        if key not in data:
            return ()
        key_path = f"{path}.{key}"
        named: tuple[str, ...] = ()
        with problems.kept():
            named = self.tool_names(data[key], key_path)
        for index, tool in enumerate(named):
            if tools_known and not _lists(tools, tool):
                problems.add(
                    self.error(
                        f"{key_path}[{index}]",
                        f"tool {tool!r} is not in this agent's tools "
                        f"({_one_of(tools) or 'none'}); add it to tools or remove it here",
                    )
                )
        return named

    def agent(self, name: str, value: object, *, is_coordinator: bool) -> AgentSpec:
        """One ``[agents.NAME]`` table. Its keys are checked one by one and every problem
        found is raised together (a key that cannot be read counts as absent for the checks
        that depend on it), so ``teams check`` reports them all at once."""
        path = _join("agents", name)
        data = self.table(value, path)
        problems = _Problems()
        with problems.kept():
            self.check_keys(data, path, _AGENT_KEYS, required=("role",))
        role = ""
        if "role" in data:
            with problems.kept():
                role = self.string(data["role"], f"{path}.role")
        backend: BackendName = "scripted"
        backend_known = True  # False: the backend could not be read; its checks are skipped
        if "backend" in data:
            backend_known = False
            with problems.kept():
                backend = self.backend_name(data["backend"], f"{path}.backend")
                backend_known = True
        a2a = None
        if "a2a" in data:
            with problems.kept():
                a2a = self.a2a_settings(data, path, is_coordinator=is_coordinator)
            # Checked here, each problem at its key: the other keys are then left alone.
            problems.raise_any()
            return AgentSpec(
                name=name,
                role=role,
                backend=A2A_BACKEND,
                a2a=a2a,
                # Its input_required is put as a question: through the ask tool.
                tools=("ask",),
                **self.remote_options(data, path, is_coordinator=is_coordinator),
            )
        if "headers" in data:
            problems.add(
                self.error(
                    f"{path}.headers",
                    'headers are sent to a remote teammate; add a2a = "http://host:port/" '
                    "(its A2A agent's URL), or remove them",
                )
            )
        openai = None
        if backend == "openai":
            with problems.kept():
                openai = self.openai_settings(data, path)
        settings: dict[str, Any] = {}
        if "settings" in data and backend_known:
            with problems.kept():
                if backend in BUILTIN_BACKENDS:
                    raise self.error(
                        f"{path}.settings",
                        f"settings are handed to a plugin backend's factory; the {backend} "
                        "backend takes none (remove them, or name a plugin in backend)",
                    )
                settings = dict(self.table(data["settings"], f"{path}.settings"))
        if backend != "openai" and backend_known:
            for key in _OPENAI_KEYS:
                if key in data:
                    problems.add(
                        self.error(
                            _join(path, key),
                            f"{key} is a setting of the openai backend; this agent's backend "
                            f'is {backend!r} (set backend = "openai" to use it)',
                        )
                    )
        if backend != "scripted" and backend_known and "turns" in data:
            problems.add(
                self.error(
                    f"{path}.turns",
                    f"turns script the scripted backend; an agent with backend = {backend!r} "
                    "is answered by its model",
                )
            )
        instructions = ""
        if "instructions" in data:
            with problems.kept():
                instructions = self.string(
                    data["instructions"], f"{path}.instructions", empty_ok=True
                )
        interactivity: Interactivity = "full" if is_coordinator else "read-only"
        if "interactivity" in data:
            with problems.kept():
                interactivity = self.choice(
                    data["interactivity"],
                    f"{path}.interactivity",
                    _INTERACTIVITIES,
                    "interactivity",
                )
        tools: tuple[str, ...] = ()
        tools_known = False  # the checks against the agent's tools need its tools
        with problems.kept():
            tools = self.tool_names(data.get("tools", []), f"{path}.tools")
            tools_known = True
        delegates_to: tuple[str, ...] = ()
        before_delegates = len(problems.found)
        if "delegates_to" in data:
            delegates_path = f"{path}.delegates_to"
            with problems.kept():
                delegates_to = self.names(data["delegates_to"], delegates_path, "agent name")
            for index, target in enumerate(delegates_to):
                with problems.kept():
                    self.agent_ref(target, f"{delegates_path}[{index}]")
        delegates_known = len(problems.found) == before_delegates
        needs_approval = self.own_tools(data, "needs_approval", path, tools, tools_known, problems)
        artifacts = self.own_tools(data, "artifacts", path, tools, tools_known, problems)
        approved_by: ApprovedBy = "user"
        if "approved_by" in data:
            with problems.kept():
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
            with problems.kept():
                if not is_coordinator:
                    raise self.error(
                        f"{path}.approves",
                        "only the coordinator decides approvals routed to it; approves belongs "
                        "on the agent named by team.coordinator",
                    )
                approves = self.tool_names(data["approves"], f"{path}.approves")
        timeout = None
        if "timeout" in data:
            with problems.kept():
                timeout = self.number(data["timeout"], f"{path}.timeout", positive=True)
        tool_results: dict[str, str] = {}
        if "tool_results" in data and tools_known:
            results_path = f"{path}.tool_results"
            plain = tuple(t for t in tools if t not in TEAM_TOOLS)
            results: Mapping[str, object] = {}
            with problems.kept():
                results = self.table(data["tool_results"], results_path)
            for tool, text in results.items():
                tool_path = _join(results_path, tool)
                with problems.kept():
                    if tool not in plain:
                        hint = _did_you_mean(tool, plain)
                        raise self.error(
                            tool_path,
                            f"{tool!r} is not a plain tool of this agent{hint}; "
                            f"plain tools: {_one_of(plain) or 'none'}",
                        )
                    if tool.startswith(MCP_PREFIX):
                        raise self.error(
                            tool_path,
                            f"{tool!r} is an MCP server's tool: its result is what the server "
                            "answers, not a text from tool_results; remove it here",
                        )
                    if tool in self.command_names:
                        runs, gives = (
                            ("calls a Python function", "function returns")
                            if tool in self.python_names
                            else ("runs a command", "program prints")
                        )
                        raise self.error(
                            tool_path,
                            f"{tool!r} {runs} ([tools.{tool}]): its result is what the "
                            f"{gives}, not a text from tool_results; remove it here",
                        )
                    tool_results[tool] = self.string(text, tool_path, empty_ok=True)
        output_schema: dict[str, Any] | None = None
        schema_known = True  # a turn's retry is checked against the schema
        if "output_schema" in data:
            schema_known = False
            with problems.kept():
                output_schema = self.output_schema(data["output_schema"], f"{path}.output_schema")
                schema_known = True
        reviews: tuple[str, ...] = ()
        if "reviews" in data:
            with problems.kept():
                if is_coordinator:
                    raise self.error(
                        f"{path}.reviews",
                        "the coordinator does not review: give reviews to another agent, "
                        "which the coordinator's delegations are then checked by",
                    )
                reviews = self.reviews(data, path, name)
        if reviews and "output_schema" in data:
            problems.add(
                self.error(
                    f"{path}.output_schema",
                    "a reviewer answers with a verdict, whose schema is given to it: remove "
                    "output_schema (or reviews)",
                )
            )
        if reviews:
            output_schema, schema_known = dict(VERDICT_SCHEMA), True
        max_rounds = DEFAULT_MAX_REVIEW_ROUNDS
        if "max_review_rounds" in data:
            with problems.kept():
                max_rounds = self.integer(
                    data["max_review_rounds"], f"{path}.max_review_rounds", minimum=1
                )
                if "reviews" not in data:
                    raise self.error(
                        f"{path}.max_review_rounds",
                        'max_review_rounds limits a reviewer\'s rounds; add reviews = ["<worker>"] '
                        "or remove it",
                    )
        review: ReviewMode | None = None
        if "review" in data:
            with problems.kept():
                review = self.choice(data["review"], f"{path}.review", _REVIEW_MODES, "review mode")
                if not is_coordinator:
                    raise self.error(
                        f"{path}.review",
                        "review says when the coordinator's delegations are reviewed; it "
                        "belongs on the agent named by team.coordinator",
                    )
        agent = AgentSpec(
            name=name,
            role=role,
            backend=backend,
            openai=openai,
            settings=settings,
            instructions=instructions,
            interactivity=interactivity,
            tools=tools,
            delegates_to=delegates_to,
            needs_approval=needs_approval,
            approved_by=approved_by,
            approves=approves,
            artifacts=artifacts,
            timeout=timeout,
            tool_results=tool_results,
            output_schema=output_schema,
            reviews=reviews,
            max_review_rounds=max_rounds,
            review=review,
        )
        turns: list[ScriptedTurn] = []
        # The turns are checked against the agent's tools, whom it delegates to and its output
        # schema: not when those could not be read (each would fail for want of them).
        if "turns" in data and tools_known and delegates_known and schema_known:
            turns_path = f"{path}.turns"
            for index, turn in enumerate(self.array(data["turns"], turns_path)):
                with problems.kept():  # each turn on its own: all their problems at once
                    turns.append(self.turn(agent, turn, f"{turns_path}[{index}]"))
        problems.raise_any()
        return attrs.evolve(agent, turns=tuple(turns))

    def a2a_settings(
        self, data: Mapping[str, object], path: str, *, is_coordinator: bool
    ) -> A2ASettings:
        """A remote teammate's ``a2a`` URL and ``headers``; every other key of its table that
        would configure a local agent is refused, naming it."""
        if is_coordinator:
            raise self.error(
                f"{path}.a2a",
                "a remote teammate cannot be the coordinator: it is reached by delegate or "
                "handoff; make another agent the coordinator",
            )
        for key in data:
            if key not in _A2A_AGENT_KEYS:
                raise self.error(
                    _join(path, key),
                    f"{key} configures a local agent; this one is a remote teammate "
                    f"(a2a), which answers by itself: remove {key} (a remote teammate takes "
                    f"{_one_of(_A2A_AGENT_KEYS)})",
                )
        url = self.http_url(data["a2a"], f"{path}.a2a")
        headers, env_headers = self.headers(data.get("headers", {}), f"{path}.headers")
        return A2ASettings(url=url, headers=headers, env_headers=env_headers)

    def remote_options(
        self, data: Mapping[str, object], path: str, *, is_coordinator: bool
    ) -> dict[str, Any]:
        """The keys a remote teammate shares with a local agent: interactivity, timeout."""
        options: dict[str, Any] = {
            "interactivity": "full" if is_coordinator else "read-only",
        }
        if "interactivity" in data:
            options["interactivity"] = self.choice(
                data["interactivity"], f"{path}.interactivity", _INTERACTIVITIES, "interactivity"
            )
        if "timeout" in data:
            options["timeout"] = self.number(data["timeout"], f"{path}.timeout", positive=True)
        return options

    def output_schema(self, value: object, path: str) -> dict[str, Any]:
        """An agent's ``output_schema``: an inline table holding a JSON Schema (draft
        2020-12), checked as one; a bad schema is named by its key path and the place in it."""
        if not isinstance(value, dict):
            raise self.error(
                path,
                "expected a JSON Schema as an inline table, e.g. output_schema = "
                f'{{ type = "object" }}, got {_describe(value)}',
            )
        schema: dict[str, Any] = self.json_value(value, path)
        from ._output import output_schema_problem  # jsonschema: only for a file that has one

        problem = output_schema_problem(schema)
        if problem is not None:
            raise self.error(path, problem)
        return schema

    def backend_name(self, value: object, path: str) -> BackendName:
        """A built-in backend, or a plugin's name as written (resolved when a run starts,
        not here: the spec does no IO). A near miss of a built-in name is refused as the
        typo it most likely is."""
        name = self.string(value, path)
        if name == A2A_BACKEND:
            raise self.error(
                path,
                'a remote teammate is declared by its agent\'s URL: a2a = "http://host:port/" '
                "instead of backend",
            )
        if name in BUILTIN_BACKENDS or _FACTORY_PATH_RE.match(name):
            return name
        hint = _did_you_mean(name, BUILTIN_BACKENDS)
        if hint or not _ENTRY_POINT_NAME_RE.match(name):
            raise self.error(
                path,
                f"unknown backend {name!r}{hint}; allowed: {', '.join(BUILTIN_BACKENDS)}, "
                f"{_PLUGIN_FORMS}",
            )
        return name

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
            if not ENV_NAME_RE.match(env):
                raise self.error(
                    found[1],
                    f"{env!r} is not an environment variable name (the key itself never goes "
                    "in a team file)",
                )
            settings = attrs.evolve(settings, api_key_env=env)
        if (found := pick("api_key_header")) is not None:
            header = self.string(*found).lower()
            if not _HEADER_NAME_RE.match(header):
                raise self.error(found[1], f"{header!r} is not an HTTP header name")
            settings = attrs.evolve(settings, api_key_header=header)
        if (found := pick("query")) is not None:
            table = self.table(*found, "a table of query parameters")
            query = {
                name: self.string(value, _join(found[1], name), empty_ok=True)
                for name, value in table.items()
            }
            settings = attrs.evolve(settings, query=query)
        if (found := pick("stream_usage")) is not None:
            settings = attrs.evolve(settings, stream_usage=self.boolean(*found))
        if (found := pick("temperature")) is not None:
            temperature = self.number(*found, positive=False)
            settings = attrs.evolve(settings, temperature=temperature)
        if (found := pick("read_timeout")) is not None:
            settings = attrs.evolve(settings, read_timeout=self.number(*found, positive=True))
        if (found := pick("max_retries")) is not None:
            settings = attrs.evolve(settings, max_retries=self.integer(*found, minimum=0))
        if (found := pick("structured_output")) is not None:
            how = self.choice(*found, _STRUCTURED_OUTPUTS, "structured_output setting")
            settings = attrs.evolve(settings, structured_output=how)
        return settings
