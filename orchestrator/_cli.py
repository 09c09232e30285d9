"""The ``orchestrator`` command line.

    orchestrator run TEAM PROMPT [--events FILE] [--facts FILE] [--approve ask|auto|deny]
    orchestrator graph --facts FILE [--format json|dot|mermaid|graphml] [--check]
    orchestrator teams check [PATH ...]

Exit status: 0 success, 1 the run failed (or the graph check found violations),
2 bad input (a team file, a fact file or an argument that cannot be used).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import trio

from ._agentui_wire import envelope_to_json_line
from ._backend_scripted import ScriptedBackend
from ._console import ApprovalMode, TeamConsole
from ._errors import FactLogError, OrchestratorError, TeamFileError
from ._factlog import FactLog, JsonlFactLog, MemoryFactLog, read_facts
from ._graph import build_graph, to_dot, to_graphml, to_json, to_mermaid
from ._logging import configure_logging
from ._process import tune_gc
from ._project_agentui import AgentUiProjector
from ._runtime import TeamRuntime, require_prompt
from ._team_actions import RunStatus
from ._teamfile import AgentSpec, check_team, load_team

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

GRAPH_FORMATS = {"json": to_json, "dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description=(
            "Run coordinator-worker teams of AI agents and inspect their delegation graphs."
        ),
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a team on a prompt")
    run.add_argument("team", type=Path, help="team file (TOML), e.g. teams/delivery.toml")
    run.add_argument("prompt", help="what the coordinator should do")
    run.add_argument(
        "--events", type=Path, metavar="FILE", help="write Agent UI envelopes as JSON Lines"
    )
    run.add_argument(
        "--facts", type=Path, metavar="FILE", help="write every recorded fact as JSON Lines"
    )
    run.add_argument(
        "--approve",
        choices=[m.value for m in ApprovalMode],
        default=ApprovalMode.ASK.value,
        help="approvals routed to you: ask at the prompt (default), approve all, or deny all",
    )
    run.add_argument(
        "--plain", action="store_true", help="print progress lines instead of the live tree"
    )

    graph = commands.add_parser("graph", help="draw or check the delegation graph of a fact log")
    graph.add_argument(
        "--facts", type=Path, metavar="FILE", required=True, help="fact log (JSON Lines)"
    )
    graph.add_argument("--format", choices=sorted(GRAPH_FORMATS), default="mermaid")
    graph.add_argument(
        "--check", action="store_true", help="check consistency; exit 1 on violations"
    )

    teams = commands.add_parser("teams", help="work with team files")
    team_commands = teams.add_subparsers(dest="teams_command", required=True, metavar="ACTION")
    check = team_commands.add_parser("check", help="validate team files (default: teams/*.toml)")
    check.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(level=max(logging.DEBUG, logging.WARNING - 10 * args.verbose))
    tune_gc()
    try:
        if args.command == "run":
            return trio.run(_run, args)
        if args.command == "graph":
            return _graph(args, sys.stdout)
        return _teams_check(args.paths, sys.stdout)
    except OrchestratorError as exc:
        print(f"orchestrator: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


async def _run(args: argparse.Namespace) -> int:
    # Everything that can be bad input is checked before the first task starts, so it
    # reaches main() as a plain OrchestratorError (exit 2), not inside an exception group.
    team = load_team(args.team)
    require_prompt(args.prompt)
    events = _open_for_writing(args.events) if args.events is not None else None
    factlog: FactLog
    if args.facts is not None:
        factlog = JsonlFactLog(args.facts)
        factlog.open()
    else:
        factlog = MemoryFactLog()
    runtime = TeamRuntime(team, backends=_backend_for, factlog=factlog)
    console = TeamConsole(
        runtime, mode=ApprovalMode(args.approve), live=False if args.plain else None
    )
    try:
        async with trio.open_nursery() as nursery:
            if events is not None:
                await nursery.start(_write_events, runtime, events)
            await nursery.start(console.serve)
            signals: trio.CancelScope = await nursery.start(_cancel_on_signal, runtime)
            outcome = await runtime.run(args.prompt)
            signals.cancel()
            # The readers drain what is buffered for them, then their iteration ends.
            runtime.bus.close()
    finally:
        if isinstance(factlog, JsonlFactLog):
            factlog.close()
        if events is not None:
            events.close()
    if outcome.status is RunStatus.COMPLETED:
        print(outcome.result)
        return EXIT_OK
    print(f"orchestrator: run {outcome.status}: {outcome.error}", file=sys.stderr)
    return EXIT_FAILED


def _backend_for(agent: AgentSpec) -> ScriptedBackend:
    return ScriptedBackend(agent)


async def _cancel_on_signal(
    runtime: TeamRuntime,
    *,
    task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
) -> None:
    """SIGINT / SIGTERM cancel the team: turns end cancelled, the run is recorded cancelled.

    Reports its cancel scope, which the caller cancels once the run is over.
    """
    with (
        trio.CancelScope() as scope,
        trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals,
    ):
        task_status.started(scope)
        async for _ in signals:
            runtime.cancel()
            return


def _open_for_writing(path: Path) -> TextIO:
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise FactLogError(f"cannot open for writing: {exc.strerror}", source=str(path)) from exc


async def _write_events(
    runtime: TeamRuntime,
    out: TextIO,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Project every fact to Agent UI envelopes and write them as JSON Lines."""
    subscription = runtime.bus.subscribe("events-file", buffer_size=float("inf"))
    projector = AgentUiProjector(runtime.session)
    task_status.started()
    try:
        async for fact in subscription:
            for envelope in projector.feed(fact):
                out.write(envelope_to_json_line(envelope) + "\n")
    finally:
        out.flush()


def _graph(args: argparse.Namespace, out: TextIO) -> int:
    graph = build_graph(read_facts(args.facts))
    if args.check:
        violations = graph.check()
        for violation in violations:
            print(f"{violation.kind}: {violation.message}", file=out)
        if violations:
            print(f"{len(violations)} violation(s) in {args.facts}", file=out)
            return EXIT_FAILED
        print(f"ok: {args.facts} is consistent", file=out)
        return EXIT_OK
    out.write(GRAPH_FORMATS[args.format](graph))
    if not GRAPH_FORMATS[args.format](graph).endswith("\n"):
        out.write("\n")
    return EXIT_OK


def _teams_check(paths: Sequence[Path], out: TextIO) -> int:
    files = list(paths) or sorted(Path("teams").glob("*.toml"))
    if not files:
        raise TeamFileError("no team files to check (give a PATH)", file="teams/")
    status = EXIT_OK
    for path in files:
        problems = check_team(path)
        if problems:
            status = EXIT_BAD_INPUT
            for problem in problems:
                print(problem, file=out)
        else:
            print(f"ok: {path}", file=out)
    return status
