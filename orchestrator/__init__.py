"""Team orchestrator: runs coordinator-worker teams of AI agents as trio tasks.

The public API: what a program that embeds the orchestrator needs, importable from
``orchestrator`` itself (each name is imported when first used, so ``import orchestrator``
costs nothing; the layer packages behind it are the README's Architecture).

Run a team::

    import orchestrator

    outcome = orchestrator.run_team_sync("teams/delivery.toml", "Ship the release notes")
    print(outcome.status, outcome.result)

Under trio, watching the run (every fact once durable, with its Agent UI envelopes) and
deciding its approvals and answering its questions::

    async with orchestrator.open_run(team, prompt, journal="runs.db") as run:
        async for update in run.updates():
            if update.approval is not None:
                await run.approve(update.approval.approval)
            if update.question is not None:
                await run.answer(update.question, "yes")
        outcome = await run.outcome()

The parts:

* teams: :func:`load_team` (a file), :func:`parse_team` (TOML text), :class:`TeamSpec`; or
  in Python: :class:`Team` of :class:`Agent` values, with :func:`tool`-decorated functions
  (a :class:`Tool`), :class:`Command` tools and :class:`Mcp` servers;
* runs: :func:`open_run` (a :class:`TeamRun`: :meth:`~TeamRun.updates`,
  :meth:`~TeamRun.stream`, :meth:`~TeamRun.approve`, :meth:`~TeamRun.deny`, :meth:`~TeamRun.answer`,
  :meth:`~TeamRun.outcome`), :func:`run_team` and :func:`run_team_sync` (unattended: without
  callbacks an approval is denied and a question declined), :func:`fork` (a session of a
  journal forked at a turn or a fact, run on as a :class:`TeamRun`), :class:`RunOutcome`,
  :class:`RunStatus`; :class:`TeamRuntime` underneath, for what these do not cover;
* what a run says: :class:`RunUpdate` (a :class:`Fact` and its :class:`Envelope` values),
  :class:`ApprovalRequested`, :class:`Question`; :func:`fact_to_json`,
  :func:`envelope_to_json_line` for their wire forms;
* what a stream says (:data:`StreamMode`): :class:`MessageDelta` and :class:`MessageEnd`
  (``messages``), :class:`FactUpdate` (``updates``), :class:`TeamSnapshot` with its
  :class:`MemberSnapshot` and :class:`TaskSnapshot` values (``values``);
* model backends: the :class:`Backend` contract (``stream_round(RoundContext)`` yields
  :data:`ModelEvent` values: :class:`TextDelta`, :class:`ReasoningDelta`,
  :class:`ToolCallStarted`, :class:`ToolCallInputDelta`, :class:`ToolCallRequest`,
  :class:`UsageReport`), passed as ``backends=`` or named by a team file as a plugin
  (``backend = "module:factory"``, or an ``orchestrator.backends`` entry point: the factory
  gets a :class:`BackendSetup`);
* journals: :class:`SqliteJournal` (``journal=`` takes its path, or a ``postgresql://`` URL
  for the PostgreSQL journal), :class:`JournalReader`
  (sessions, facts, states of a journal file), :class:`SessionInfo`; :class:`MemoryFactLog`;
* errors: :class:`OrchestratorError` and its subclasses.

As a library it writes nothing to stdout and configures no logging: its loggers
(``orchestrator.*``) go to the standard library's :mod:`logging`, silent unless the program
configures it. :func:`configure_logging` sets up the CLI's (console or JSON on stderr).
``__version__`` is the installed distribution's version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._embed import (
        ApprovalHandler,
        Backends,
        Question,
        QuestionHandler,
        RunBoard,
        RunUpdate,
        TeamRun,
        fork,
        open_run,
        run_team,
        run_team_sync,
    )
    from ._streams import (
        FactUpdate,
        MemberSnapshot,
        MessageDelta,
        MessageEnd,
        StreamMode,
        TaskSnapshot,
        TeamSnapshot,
    )
    from .base import (
        FactLogError,
        IllegalTransitionError,
        LocalProtocolError,
        OrchestratorError,
        PeerProtocolError,
        ProtocolError,
        RunError,
        TeamFileError,
    )
    from .core import (
        ApprovalRequested,
        Backend,
        Fact,
        ModelEvent,
        ReasoningDelta,
        RoundContext,
        RunStatus,
        TextDelta,
        ToolCallInputDelta,
        ToolCallRequest,
        ToolCallStarted,
        ToolOutcome,
        UsageReport,
        fact_to_json,
    )
    from .journal import JournalReader, SessionInfo, SqliteJournal
    from .protocols import Envelope, envelope_to_json_line
    from .runtime import (
        BoardRefusedError,
        FactLog,
        MemoryFactLog,
        RunOutcome,
        TeamRuntime,
        configure_logging,
    )
    from .runtime.backends import BackendSetup
    from .spec import (
        Agent,
        AgentSpec,
        Command,
        Item,
        Mcp,
        Team,
        TeamSpec,
        Tool,
        load_team,
        parse_team,
        tool,
    )

__all__ = [
    "Agent",
    "AgentSpec",
    "ApprovalHandler",
    "ApprovalRequested",
    "Backend",
    "BackendSetup",
    "Backends",
    "BoardRefusedError",
    "Command",
    "Envelope",
    "Fact",
    "FactLog",
    "FactLogError",
    "FactUpdate",
    "IllegalTransitionError",
    "Item",
    "JournalReader",
    "LocalProtocolError",
    "Mcp",
    "MemberSnapshot",
    "MemoryFactLog",
    "MessageDelta",
    "MessageEnd",
    "ModelEvent",
    "OrchestratorError",
    "PeerProtocolError",
    "ProtocolError",
    "Question",
    "QuestionHandler",
    "ReasoningDelta",
    "RoundContext",
    "RunBoard",
    "RunError",
    "RunOutcome",
    "RunStatus",
    "RunUpdate",
    "SessionInfo",
    "SqliteJournal",
    "StreamMode",
    "TaskSnapshot",
    "Team",
    "TeamFileError",
    "TeamRun",
    "TeamRuntime",
    "TeamSnapshot",
    "TeamSpec",
    "TextDelta",
    "Tool",
    "ToolCallInputDelta",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolOutcome",
    "UsageReport",
    "configure_logging",
    "envelope_to_json_line",
    "fact_to_json",
    "fork",
    "load_team",
    "open_run",
    "parse_team",
    "run_team",
    "run_team_sync",
    "tool",
]

#: The distribution whose version ``__version__`` is.
_DISTRIBUTION = "team-orchestrator"

if TYPE_CHECKING:
    __version__: str
else:
    _exported, _public_name, __dir__ = lazy_facade(
        __name__,
        {
            "Agent": ".spec",
            "AgentSpec": ".spec",
            "ApprovalHandler": "._embed",
            "ApprovalRequested": ".core",
            "Backend": ".core",
            "BackendSetup": ".runtime.backends",
            "Backends": "._embed",
            "BoardRefusedError": ".runtime",
            "Command": ".spec",
            "Envelope": ".protocols",
            "Fact": ".core",
            "FactLog": ".runtime",
            "FactLogError": ".base",
            "FactUpdate": "._streams",
            "IllegalTransitionError": ".base",
            "Item": ".spec",
            "JournalReader": ".journal",
            "LocalProtocolError": ".base",
            "MemberSnapshot": "._streams",
            "Mcp": ".spec",
            "MemoryFactLog": ".runtime",
            "MessageDelta": "._streams",
            "MessageEnd": "._streams",
            "ModelEvent": ".core",
            "OrchestratorError": ".base",
            "PeerProtocolError": ".base",
            "ProtocolError": ".base",
            "Question": "._embed",
            "QuestionHandler": "._embed",
            "ReasoningDelta": ".core",
            "RoundContext": ".core",
            "RunBoard": "._embed",
            "RunError": ".base",
            "RunOutcome": ".runtime",
            "RunStatus": ".core",
            "RunUpdate": "._embed",
            "SessionInfo": ".journal",
            "SqliteJournal": ".journal",
            "StreamMode": "._streams",
            "TaskSnapshot": "._streams",
            "Team": ".spec",
            "TeamFileError": ".base",
            "TeamRun": "._embed",
            "TeamRuntime": ".runtime",
            "TeamSnapshot": "._streams",
            "TeamSpec": ".spec",
            "TextDelta": ".core",
            "Tool": ".spec",
            "ToolCallInputDelta": ".core",
            "ToolCallRequest": ".core",
            "ToolCallStarted": ".core",
            "ToolOutcome": ".core",
            "UsageReport": ".core",
            "configure_logging": ".runtime",
            "envelope_to_json_line": ".protocols",
            "fact_to_json": ".core",
            "load_team": ".spec",
            "open_run": "._embed",
            "fork": "._embed",
            "parse_team": ".spec",
            "run_team": "._embed",
            "run_team_sync": "._embed",
            "tool": ".spec",
        },
    )

    def __getattr__(name: str) -> object:
        # Not the generated facade alone: the first public name used routes the library's
        # logging to the standard library (see orchestrator.runtime._library_logging), and
        # __version__ is asked of the installed metadata. A submodule name (``from
        # orchestrator import server``) falls through to the import system untouched.
        if name == "__version__":
            globals()[name] = version = _installed_version()
            return version
        if name in __all__:
            from orchestrator.runtime import library_logging

            library_logging()
        return _public_name(name)


def _installed_version() -> str:
    """The installed distribution's version; ``0+unknown`` from a tree not installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


# The facade's own tools are not part of the API (``vars(orchestrator)`` is ``__all__``).
del TYPE_CHECKING, annotations, lazy_facade
