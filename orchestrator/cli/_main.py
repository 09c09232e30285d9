"""The ``orchestrator`` command line.

    orchestrator run TEAM PROMPT [--db PATH] [--events FILE] [--facts FILE] [--approve MODE]
    orchestrator sessions [--db PATH] [--json]
    orchestrator events SESSION [--db PATH] [--format facts|agent-ui]
    orchestrator graph [SESSION | --facts FILE] [--db PATH] [--format FORMAT] [--check]
    orchestrator teams check [PATH ...]
    orchestrator init [DIR]
    orchestrator serve [--config FILE] [--host H] [--port P] [--db PATH] [--teams DIR]

Every fact of a run goes to the journal (``--db``, by default under the XDG state
directory) before anyone sees it. Exit status: 0 success, 1 the run failed (or the graph check
found violations), 2 bad input (a team file, a journal, a fact file or an argument that cannot
be used).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from orchestrator.base import OrchestratorError
from orchestrator.journal import Durability
from orchestrator.server import DEFAULT_PORT

from ._approval_mode import ApprovalMode
from ._conventions import EXIT_BAD_INPUT, TOKEN_ENV, default_db
from ._version import ShowVersion

__all__ = [
    "main",
]

GRAPH_FORMATS = ("dot", "graphml", "json", "mermaid")
EVENT_FORMATS = ("facts", "agent-ui")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description=(
            "Run coordinator-worker teams of AI agents and inspect their delegation graphs."
        ),
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    parser.add_argument("--version", action=ShowVersion)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_db(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
        command.add_argument(
            "--db",
            type=Path,
            metavar="PATH",
            default=None,
            help=f"the journal (SQLite; default {default_db()})",
        )
        return command

    def running(command: argparse.ArgumentParser, verb: str) -> argparse.ArgumentParser:
        command.add_argument(
            "--events",
            type=Path,
            metavar="FILE",
            help=f"also {verb} Agent UI envelopes as JSON Lines",
        )
        command.add_argument(
            "--facts",
            type=Path,
            metavar="FILE",
            help=f"also {verb} every fact as JSON Lines, once durable",
        )
        command.add_argument(
            "--approve",
            choices=[m.value for m in ApprovalMode],
            default=ApprovalMode.ASK.value,
            help="approvals routed to you: ask at the prompt (default), approve all, or deny all",
        )
        command.add_argument(
            "--plain", action="store_true", help="print progress lines instead of the live tree"
        )
        command.add_argument(
            "--durability",
            choices=[d.value for d in Durability],
            default=Durability.POWER.value,
            help="what an acknowledged fact survives: a power loss (default), or a process kill",
        )
        return with_db(command)

    run = running(commands.add_parser("run", help="run a team on a prompt"), "write")
    run.add_argument("team", type=Path, help="team file (TOML), e.g. teams/delivery.toml")
    run.add_argument("prompt", help="what the coordinator should do")
    run.set_defaults(handler=("._run_command", "run"))

    resume = running(
        commands.add_parser("resume", help="take up a run a stopped process left unfinished"),
        "append",
    )
    resume.add_argument("session", help="session URI, or a unique beginning of its id")
    resume.add_argument(
        "--team",
        type=Path,
        metavar="FILE",
        help="run with this team file instead of the one the session recorded",
    )
    resume.set_defaults(handler=("._run_command", "resume"))

    sessions = with_db(commands.add_parser("sessions", help="list the journal's sessions"))
    sessions.add_argument("--json", action="store_true", help="a JSON array, oldest first")
    sessions.set_defaults(handler=("._sessions_command", "sessions"))

    events = with_db(commands.add_parser("events", help="print a session's facts or envelopes"))
    events.add_argument("session", help="session URI, or a unique beginning of its id")
    events.add_argument("--format", choices=EVENT_FORMATS, default="facts")
    events.set_defaults(handler=("._journal_commands", "events"))

    graph = with_db(commands.add_parser("graph", help="draw or check a session's delegation graph"))
    graph.add_argument("session", nargs="?", help="session URI, or a unique beginning of its id")
    graph.add_argument(
        "--facts", type=Path, metavar="FILE", help="a fact log (JSON Lines) instead of a session"
    )
    graph.add_argument("--format", choices=GRAPH_FORMATS, default="mermaid")
    graph.add_argument(
        "--check", action="store_true", help="check consistency; exit 1 on violations"
    )
    graph.set_defaults(handler=("._journal_commands", "graph"))

    history = with_db(
        commands.add_parser("history", help="print a chat's agent-channel history (JSON Lines)")
    )
    history.add_argument("session", help="session URI, or a unique beginning of its id")
    history.add_argument("--chat", help="chat URI or id prefix (default: the coordinator's)")
    history.add_argument(
        "--deleted", action="store_true", help="include what undo and truncation removed"
    )
    history.set_defaults(handler=("._journal_commands", "history"))
    undo = with_db(commands.add_parser("undo", help="remove a chat's last turn from its history"))
    truncate = with_db(
        commands.add_parser("truncate", help="keep a chat's turns up to a given turn")
    )
    restore = with_db(
        commands.add_parser("restore", help="bring back what the last undo or truncate removed")
    )
    for edit in (undo, truncate, restore):
        edit.add_argument("session", help="session URI, or a unique beginning of its id")
        edit.add_argument("--chat", help="chat URI or id prefix (default: the coordinator's)")
        edit.set_defaults(handler=("._journal_commands", "edit"))
    truncate.add_argument(
        "--keep", required=True, metavar="TURN", help='the last turn to keep ("none": all go)'
    )

    serve = commands.add_parser(
        "serve", help="run the daemon: WebSocket and HTTP clients on one port"
    )
    serve.add_argument("--config", type=Path, metavar="FILE", help="the daemon's TOML config")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help=f"port to bind (default {DEFAULT_PORT}; 0: any)")
    serve.add_argument(
        "--db", type=Path, metavar="PATH", help=f"the journal (default {default_db()})"
    )
    serve.add_argument(
        "--teams", type=Path, metavar="DIR", help="directory of team files (default teams/)"
    )
    serve.set_defaults(handler=("._serve_command", "serve"))

    teammates = commands.add_parser(
        "teammates", help="list and control the running daemon's background teammates"
    )
    mate_commands = teammates.add_subparsers(
        dest="teammates_command", required=True, metavar="ACTION"
    )
    for action, text in (
        ("list", "each teammate's state, schedule, next wake and last run"),
        ("history", "a teammate's runs, oldest first"),
        ("pause", "stop waking on schedule (a running run goes on)"),
        ("resume", "wake on schedule again (wakes missed while paused do not run)"),
        ("trigger", "wake now (the overlap policy decides if a run is going)"),
        ("stop", "stop the running run"),
    ):
        command = mate_commands.add_parser(action, help=text)
        if action != "list":
            command.add_argument("name", help="the teammate (NAME, or TEAM/NAME)")
        if action == "history":
            command.add_argument(
                "--limit", type=int, default=50, help="the most recent runs to show (50)"
            )
        command.add_argument(
            "--url",
            help=f"the daemon (default: --config's host and port, else "
            f"http://127.0.0.1:{DEFAULT_PORT})",
        )
        command.add_argument("--config", type=Path, metavar="FILE", help="the daemon's config")
        command.add_argument(
            "--token-file",
            type=Path,
            metavar="FILE",
            help=f"a file holding the token (default: ${TOKEN_ENV})",
        )
        command.add_argument("--json", action="store_true", help="print JSON")
        command.set_defaults(handler=("._serve_command", "teammates"))

    init = commands.add_parser(
        "init", help="write a starter team directory (offline, OpenAI-compatible, background)"
    )
    init.add_argument(
        "directory", nargs="?", type=Path, default=Path("teams"), help="where (default teams/)"
    )
    init.set_defaults(handler=("._init_command", "init"))

    teams = commands.add_parser("teams", help="work with team files")
    team_commands = teams.add_subparsers(dest="teams_command", required=True, metavar="ACTION")
    check = team_commands.add_parser("check", help="validate team files (default: teams/*.toml)")
    check.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    check.set_defaults(handler=("._teams_command", "check"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from orchestrator.runtime import configure_logging, tune_gc

    # The daemon says what it does (its URL, sessions taken up); the one-shot commands
    # keep quiet unless asked.
    quiet = logging.INFO if args.command == "serve" else logging.WARNING
    configure_logging(level=max(logging.DEBUG, quiet - 10 * args.verbose))
    tune_gc()
    try:
        return _dispatch(args)
    except OrchestratorError as exc:
        print(f"orchestrator: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command's handler, importing its module now: --help and the light commands
    do not pay for the daemon, the backends and the console."""
    module, name = args.handler
    handler: Callable[[argparse.Namespace, TextIO], int] = getattr(
        importlib.import_module(module, __package__), name
    )
    return handler(args, sys.stdout)
