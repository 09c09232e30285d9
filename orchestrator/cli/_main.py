"""The ``orchestrator`` command line.

    orchestrator run TEAM [PROMPT | -] [--prompt-file FILE] [--db PATH] [--model M] [--json]
    orchestrator resume SESSION [--team FILE]
    orchestrator fork SESSION [--at-turn ID | --at SEQ] [--prompt TEXT] [--team FILE] [--model M]
    orchestrator diff A B [--db PATH] [--json]
    orchestrator replay SESSION [--until SEQ] [--team FILE] [--db PATH]
    orchestrator sessions [--db PATH] [--json]
    orchestrator events SESSION [--db PATH] [--format facts|agent-ui]
    orchestrator graph [SESSION | --facts FILE] [--db PATH] [--format FORMAT] [--check]
    orchestrator history | undo | truncate | restore SESSION [--chat CHAT]
    orchestrator teams check [PATH ...] [--tools] [--offline] [--json]
    orchestrator init [DIR]
    orchestrator serve [--config FILE] [--host H] [--port P] [--db PATH] [--teams DIR] [--team REF]
    orchestrator teammates list | history | pause | resume | trigger | stop [NAME]

Every command takes ``-v`` / ``--log-level`` and ``--log-format`` (before or after its name).
Every fact of a run goes to the journal (``--db``, by default under the XDG state directory)
before anyone sees it. Exit status (:class:`._conventions.Exit`): 0 ok, 1 the run failed or a
check found problems, 2 bad usage or input, 3 the daemon or a service it needs cannot be
reached.

This module is the parser and nothing else: each command's handler is named by module
(``set_defaults(handler=...)``) and imported when the command runs, so that ``--help`` and
the light commands do not load the daemon, the backends or the console.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from orchestrator.base import OrchestratorError, UnavailableError
from orchestrator.journal import Durability, db_location

from ._approval_mode import ApprovalMode
from ._conventions import (
    DEFAULT_PORT,
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_STATUSES,
    EXIT_UNAVAILABLE,
    LOG_FORMATS,
    MODEL_ENV,
    TOKEN_ENV,
    Reporter,
    default_db,
    logs_as_json,
)
from ._version import ShowVersion

__all__ = [
    "main",
]

GRAPH_FORMATS = ("dot", "graphml", "html", "json", "mermaid")
EVENT_FORMATS = ("facts", "agent-ui")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: A session's status, as the journal, `sessions` and /metrics name it.
SESSION_STATUSES = ("running", "completed", "failed", "cancelled")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description=(
            "Run coordinator-worker teams of AI agents and inspect their delegation graphs."
        ),
        epilog=EXIT_STATUSES,
    )
    parser.add_argument("--version", action=ShowVersion)
    _logging_options(parser, inherited=False)
    commands = _Commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))

    def with_db(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
        command.add_argument(
            "--db",
            type=db_location,
            metavar="PATH|URL",
            default=None,
            help=f"the journal: a SQLite file (default {default_db()}) or "
            "postgresql://USER@HOST:PORT/DB",
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
            "--model",
            help=f"the model of the OpenAI-compatible agents, for this run (or ${MODEL_ENV})",
        )
        command.add_argument(
            "--json",
            action="store_true",
            help="print the outcome as JSON (session, status, result, error) on stdout",
        )
        command.add_argument(
            "--durability",
            choices=[d.value for d in Durability],
            default=Durability.POWER.value,
            help="what an acknowledged fact survives: a power loss (default), or a process kill",
        )
        command.add_argument(
            "--lease-ttl",
            type=_seconds,
            default=15.0,
            metavar="SECONDS",
            help="on a PostgreSQL journal daemons share: how long the session's lease lasts "
            "unless renewed (default 15; renewed every third of it while the run lives)",
        )
        command.add_argument(
            "--delta-window",
            type=_delta_window,
            metavar="SECONDS",
            # (The default is the runtime's, not imported here: it would load trio.)
            help="how long a model's streamed text gathers at most before it is written as "
            "one fact (default 0.05; 0: every chunk its own fact)",
        )
        return with_db(command)

    run = running(commands.add_parser("run", help="run a team on a prompt"), "write")
    run.add_argument(
        "team",
        type=Path,
        help="team file (TOML), e.g. teams/delivery.toml, or module:attr of a Team in Python",
    )
    run.add_argument(
        "prompt", nargs="?", help="what the coordinator should do (-: read it from stdin)"
    )
    run.add_argument("--prompt-file", type=Path, metavar="FILE", help="read the prompt from FILE")
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
        help="run with this team file (or module:attr) instead of the one the session recorded",
    )
    resume.set_defaults(handler=("._run_command", "resume"))

    fork = running(
        commands.add_parser(
            "fork",
            help="copy a session up to a turn or a fact into a new one, and maybe run it on",
        ),
        "write",
    )
    fork.add_argument("session", help="session URI, or a unique beginning of its id")
    where = fork.add_mutually_exclusive_group()
    where.add_argument("--at-turn", metavar="ID", help="fork where this turn ended")
    where.add_argument(
        "--at", type=_positive, metavar="SEQ", help="fork after this fact (default: the last)"
    )
    fork.add_argument(
        "--prompt",
        help="run the fork on, with this as the coordinator's next message",
    )
    fork.add_argument(
        "--team",
        type=Path,
        metavar="FILE",
        help="run the fork on with this team file; open work of agents it lacks is cancelled",
    )
    fork.set_defaults(handler=("._fork_command", "fork"))

    compare = with_db(
        commands.add_parser("diff", help="where two sessions part, and what differs per chat")
    )
    compare.add_argument("a", help="session URI, or a unique beginning of its id")
    compare.add_argument("b", help="the other session (a fork of A, say)")
    compare.add_argument("--json", action="store_true", help="the findings as one JSON object")
    compare.set_defaults(handler=("._diff_command", "diff"), logs=False)

    replaying = with_db(
        commands.add_parser(
            "replay", help="run a session again on its recorded model rounds, and compare"
        )
    )
    replaying.add_argument("session", help="session URI, or a unique beginning of its id")
    replaying.add_argument(
        "--until", type=_positive, metavar="SEQ", help="replay and compare facts 1 to SEQ only"
    )
    replaying.add_argument(
        "--team",
        type=Path,
        metavar="FILE",
        help="try this team file (or module:attr) against the recorded answers",
    )
    replaying.set_defaults(handler=("._replay_command", "replay"))

    sessions = with_db(commands.add_parser("sessions", help="list the journal's sessions"))
    sessions.add_argument("--json", action="store_true", help="a JSON array, oldest first")
    sessions.add_argument(
        "--status", choices=SESSION_STATUSES, help="only the sessions of this status"
    )
    sessions.add_argument("--team", help="only the sessions of this team")
    sessions.add_argument("--limit", type=_positive, metavar="N", help="only the N most recent")
    sessions.add_argument(
        "--tree", action="store_true", help="each fork indented under the session it came from"
    )
    sessions.set_defaults(handler=("._sessions_command", "sessions"), logs=False)

    events = with_db(commands.add_parser("events", help="print a session's facts or envelopes"))
    events.add_argument("session", help="session URI, or a unique beginning of its id")
    events.add_argument(
        "--format",
        choices=EVENT_FORMATS,
        default="facts",
        help="the session's facts (default) or the Agent UI envelopes projected from them",
    )
    events.add_argument(
        "--json", action="store_true", help="JSON Lines, one fact or envelope a line"
    )
    events.set_defaults(handler=("._journal_commands", "events"))

    graph = with_db(commands.add_parser("graph", help="draw or check a session's delegation graph"))
    graph.add_argument("session", nargs="?", help="session URI, or a unique beginning of its id")
    graph.add_argument(
        "--facts", type=Path, metavar="FILE", help="a fact log (JSON Lines) instead of a session"
    )
    graph.add_argument(
        "--format",
        choices=GRAPH_FORMATS,
        default="mermaid",
        help="html: one file that draws the graph offline, as the web view does (default: mermaid)",
    )
    graph.add_argument(
        "--check", action="store_true", help="check consistency; exit 1 on violations"
    )
    graph.add_argument(
        "--json", action="store_true", help="with --check: the result as one JSON object"
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

    prune = with_db(
        commands.add_parser(
            "prune", help="remove ended sessions (facts, snapshots, history) older than AGE"
        )
    )
    prune.add_argument(
        "--older-than",
        required=True,
        metavar="AGE",
        help="last written more than AGE ago: 90s, 15m, 2h, 30d (at most 366d)",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="say what would be removed, remove nothing"
    )
    prune.add_argument("--json", action="store_true", help="print the report as JSON")
    prune.set_defaults(handler=("._sessions_command", "prune"))

    serve = commands.add_parser(
        "serve", help="run the daemon: WebSocket and HTTP clients on one port"
    )
    serve.add_argument("--config", type=Path, metavar="FILE", help="the daemon's TOML config")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help=f"port to bind (default {DEFAULT_PORT}; 0: any)")
    serve.add_argument(
        "--db",
        type=db_location,
        metavar="PATH|URL",
        help=f"the journal: a SQLite file (default {default_db()}) or "
        "postgresql://USER@HOST:PORT/DB",
    )
    serve.add_argument(
        "--teams", type=Path, metavar="DIR", help="directory of team files (default teams/)"
    )
    serve.add_argument(
        "--team",
        action="append",
        metavar="FILE|MODULE:ATTR",
        help="serve this team too: a team file, or module:attr of a Team defined in Python "
        "(repeatable; the --teams directory may then be missing)",
    )
    serve.add_argument(
        "--node",
        metavar="ID",
        help="this daemon's id among several on one PostgreSQL journal (default HOSTNAME:PID)",
    )
    serve.set_defaults(handler=("._serve_command", "serve"))

    completion = commands.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print the completion script for SHELL. For bash: "
        "orchestrator completion bash > ~/.local/share/bash-completion/completions/orchestrator",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    completion.set_defaults(handler=("._completion_command", "completion"), logs=False)

    teammates = commands.add_parser(
        "teammates", help="list and control the running daemon's background teammates"
    )
    mate_commands = _Commands(
        teammates.add_subparsers(dest="teammates_command", required=True, metavar="ACTION")
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

    end = commands.add_parser(
        "end", help="end a conversation of the running daemon (then prunable)"
    )
    end.add_argument(
        "session", help="the session: its id, its ahp-session:/ URI, or the id's first characters"
    )
    end.add_argument(
        "--url",
        help=f"the daemon (default: --config's host and port, else http://127.0.0.1:{DEFAULT_PORT})",
    )
    end.add_argument("--config", type=Path, metavar="FILE", help="the daemon's config")
    end.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help=f"a file holding the token (default: ${TOKEN_ENV})",
    )
    end.set_defaults(handler=("._end_command", "end"))

    board = commands.add_parser(
        "board", help="work a session's board on the running daemon (list, claim, done...)"
    )
    board.add_argument(
        "session", help="the session: its id, its ahp-session:/ URI, or the id's first characters"
    )
    board.add_argument("--url", help="the daemon (as for end)")
    board.add_argument("--config", type=Path, metavar="FILE", help="the daemon's config")
    board.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help=f"a file holding the token (default: ${TOKEN_ENV})",
    )
    board.add_argument("--json", action="store_true", help="print the board as JSON")
    operations = board.add_subparsers(dest="operation", required=True, metavar="OPERATION")
    operations.add_parser("list", help="print the board")
    for name, what in (
        ("claim", "take an open item"),
        ("unblock", "lift an item's block"),
    ):
        operations.add_parser(name, help=what).add_argument("item", help="the item's id")
    comment = operations.add_parser("comment", help="comment on an item")
    comment.add_argument("item", help="the item's id")
    comment.add_argument("text", help="the comment")
    block = operations.add_parser("block", help="say an item is blocked, and why")
    block.add_argument("item", help="the item's id")
    block.add_argument("reason", help="why")
    block.add_argument(
        "--waiting-for", metavar="WHO", help="whom it waits for: an agent, or @principal"
    )
    done = operations.add_parser("done", help="mark an item done")
    done.add_argument("item", help="the item's id")
    done.add_argument("--summary", help="what was done")
    assign = operations.add_parser("assign", help="give an item to an agent or a person")
    assign.add_argument("item", help="the item's id")
    assign.add_argument("assignee", help="an agent's name, or a person as @principal")
    board.set_defaults(handler=("._board_command", "board"))
    for operation in operations.choices.values():
        operation.set_defaults(handler=("._board_command", "board"))

    init = commands.add_parser(
        "init", help="write a starter team directory (offline, OpenAI-compatible, background)"
    )
    init.add_argument(
        "directory", nargs="?", type=Path, default=Path("teams"), help="where (default teams/)"
    )
    init.set_defaults(handler=("._init_command", "init"))

    teams = commands.add_parser("teams", help="work with team files")
    team_commands = _Commands(
        teams.add_subparsers(dest="teams_command", required=True, metavar="ACTION")
    )
    check = team_commands.add_parser("check", help="validate team files (default: teams/)")
    check.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="team files or directories of them"
    )
    check.add_argument("--json", action="store_true", help="print a JSON array of results")
    check.add_argument(
        "--tools",
        action="store_true",
        help="also start the MCP servers and resolve the Python tools, and list the tools "
        "each agent is offered, with their parameters",
    )
    check.add_argument(
        "--offline",
        action="store_true",
        help="do not probe the model servers the teams use (GET BASE_URL/models)",
    )
    check.set_defaults(handler=("._teams_command", "check"), logs=False)
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _delta_window(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number of seconds from 0 to 1, got {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return value


class _Commands:
    """Subcommands that each take the logging options (``-v`` before or after the
    subcommand) and list the exit statuses in their help."""

    def __init__(self, group: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        self._group = group

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        command = self._group.add_parser(name, epilog=EXIT_STATUSES, **kwargs)
        _logging_options(command, inherited=True)
        return command


def _logging_options(parser: argparse.ArgumentParser, *, inherited: bool) -> None:
    """``-v``, ``--log-level``, ``--log-format``. On a subcommand their defaults are left
    out (SUPPRESS), so that one given before the subcommand is not reset by it; ``-v``
    counts on across both."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if inherited else value

    group = parser.add_argument_group("logging")
    group.add_argument(
        "-v", "--verbose", action="count", default=default(0), help="log more (-vv: debug)"
    )
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=default(None),
        help="the least level logged (default: WARNING; INFO for serve, ERROR for teams)",
    )
    group.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default("auto"),
        help="console lines, or JSON records (auto: JSON when stderr is not a terminal)",
    )


def _log_level(args: argparse.Namespace) -> int:
    if args.log_level is not None:
        level: int = logging.getLevelName(args.log_level)
        return level
    # The daemon says what it does (its URL, sessions taken up); the one-shot commands
    # keep quiet unless asked.
    quiet = logging.INFO if args.command == "serve" else logging.WARNING
    if args.command == "teams":
        quiet = logging.ERROR  # teams check --tools reports a server that fails itself
    verbose: int = args.verbose
    return max(logging.DEBUG, quiet - 10 * verbose)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from orchestrator.runtime import tune_gc

    as_json = logs_as_json(args.log_format, sys.stderr)
    if getattr(args, "logs", True) or getattr(args, "tools", False):
        # Commands that log set structlog up; the light ones (sessions, teams check,
        # completion) do not log and skip its import, a good part of their start-up
        # (teams check --tools starts the teams' tool servers: it logs).
        from orchestrator.runtime import configure_logging

        configure_logging(json=as_json, level=_log_level(args))
    args.reporter = reporter = Reporter(as_json=as_json)
    # A crash's traceback is a line on stderr too: it goes through the logs' redactor, as
    # every other one (a frame's source line or the message may hold a URL's password).
    sys.excepthook = _redacted_traceback
    tune_gc()
    try:
        status = _dispatch(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except BrokenPipeError:
        # The reader went away (``orchestrator events S | head``): stop quietly. Python
        # would complain again when it flushes stdout at exit, so point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except UnavailableError as exc:
        reporter.error(str(exc))
        return EXIT_UNAVAILABLE
    except OrchestratorError as exc:
        reporter.error(str(exc))
        return EXIT_BAD_INPUT


def _redacted_traceback(
    kind: type[BaseException], value: BaseException, trace: TracebackType | None
) -> None:
    """``sys.excepthook``: Python's traceback, redacted as a log line is."""
    from orchestrator.base import redact_text

    text = "".join(traceback.format_exception(kind, value, trace))
    sys.stderr.write(redact_text(text))
    sys.stderr.flush()


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command's handler, importing its module now: --help and the light commands
    do not pay for the daemon, the backends and the console."""
    module, name = args.handler
    handler: Callable[[argparse.Namespace, TextIO], int] = getattr(
        importlib.import_module(module, __package__), name
    )
    return handler(args, sys.stdout)
