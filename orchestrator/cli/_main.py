"""The ``orchestrator`` command line.

    orchestrator run TEAM PROMPT [--db PATH] [--events FILE] [--facts FILE] [--approve MODE]
    orchestrator sessions [--db PATH] [--json]
    orchestrator events SESSION [--db PATH] [--format facts|agent-ui]
    orchestrator graph [SESSION | --facts FILE] [--db PATH] [--format FORMAT] [--check]
    orchestrator teams check [PATH ...]
    orchestrator serve [--config FILE] [--host H] [--port P] [--db PATH] [--teams DIR]

Every fact of a run goes to the journal (``--db``, by default under the XDG state
directory) before anyone sees it. Exit status: 0 success, 1 the run failed (or the graph check
found violations), 2 bad input (a team file, a journal, a fact file or an argument that cannot
be used).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TextIO

import attrs
import trio

from orchestrator.base import ConfigError, FactLogError, OrchestratorError, RunError, TeamFileError
from orchestrator.core import (
    Fact,
    RunStatus,
    build_graph,
    fact_to_json,
    to_dot,
    to_graphml,
    to_json,
    to_mermaid,
)
from orchestrator.journal import (
    Durability,
    Edit,
    JournalReader,
    SessionInfo,
    SqliteJournal,
    edit_history,
    resolve_chat,
)
from orchestrator.protocols import (
    AgentUiProjector,
    envelope_to_json_line,
    project_facts,
    restore_actions,
    truncate_action,
    undo_action,
)
from orchestrator.runtime import (
    RunOutcome,
    TeamRuntime,
    configure_logging,
    read_facts,
    require_prompt,
    tune_gc,
)
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.server import DEFAULT_PORT, ServeConfig, load_serve_config, serve
from orchestrator.spec import check_team, load_team, parse_team

from ._console import ApprovalMode, TeamConsole
from ._teammates_client import TOKEN_ENV, print_answer, read_token, request, teammates_url

__all__ = [
    "main",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

GRAPH_FORMATS = {"json": to_json, "dot": to_dot, "mermaid": to_mermaid, "graphml": to_graphml}
EVENT_FORMATS = ("facts", "agent-ui")


def default_db() -> Path:
    """The journal's default place: ``$XDG_STATE_HOME/orchestrator/journal.db``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "orchestrator" / "journal.db"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orchestrator",
        description=(
            "Run coordinator-worker teams of AI agents and inspect their delegation graphs."
        ),
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
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

    sessions = with_db(commands.add_parser("sessions", help="list the journal's sessions"))
    sessions.add_argument("--json", action="store_true", help="a JSON array, oldest first")

    events = with_db(commands.add_parser("events", help="print a session's facts or envelopes"))
    events.add_argument("session", help="session URI, or a unique beginning of its id")
    events.add_argument("--format", choices=EVENT_FORMATS, default="facts")

    graph = with_db(commands.add_parser("graph", help="draw or check a session's delegation graph"))
    graph.add_argument("session", nargs="?", help="session URI, or a unique beginning of its id")
    graph.add_argument(
        "--facts", type=Path, metavar="FILE", help="a fact log (JSON Lines) instead of a session"
    )
    graph.add_argument("--format", choices=sorted(GRAPH_FORMATS), default="mermaid")
    graph.add_argument(
        "--check", action="store_true", help="check consistency; exit 1 on violations"
    )

    history = with_db(
        commands.add_parser("history", help="print a chat's agent-channel history (JSON Lines)")
    )
    history.add_argument("session", help="session URI, or a unique beginning of its id")
    history.add_argument("--chat", help="chat URI or id prefix (default: the coordinator's)")
    history.add_argument(
        "--deleted", action="store_true", help="include what undo and truncation removed"
    )
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

    teams = commands.add_parser("teams", help="work with team files")
    team_commands = teams.add_subparsers(dest="teams_command", required=True, metavar="ACTION")
    check = team_commands.add_parser("check", help="validate team files (default: teams/*.toml)")
    check.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The daemon says what it does (its URL, sessions taken up); the one-shot commands
    # keep quiet unless asked.
    quiet = logging.INFO if args.command == "serve" else logging.WARNING
    configure_logging(level=max(logging.DEBUG, quiet - 10 * args.verbose))
    tune_gc()
    try:
        match args.command:
            case "run":
                return trio.run(_run, args)
            case "resume":
                return trio.run(_resume, args)
            case "sessions":
                return _sessions(_reader(args), sys.stdout, as_json=args.json)
            case "events":
                return _events(_reader(args), args.session, args.format, sys.stdout)
            case "graph":
                return _graph(args, sys.stdout)
            case "history":
                return _history(_reader(args), args, sys.stdout)
            case "undo" | "truncate" | "restore":
                return trio.run(_edit_history, args)
            case "serve":
                return _serve(args)
            case "teammates":
                return trio.run(_teammates, args, sys.stdout)
            case _:
                return _teams_check(args.paths, sys.stdout)
    except OrchestratorError as exc:
        print(f"orchestrator: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _reader(args: argparse.Namespace) -> JournalReader:
    return JournalReader(args.db or default_db())


# ─── run ─────────────────────────────────────────────────────────────────────


async def _run(args: argparse.Namespace) -> int:
    # Everything that can be bad input is checked before the first task starts, so it
    # reaches main() as a plain OrchestratorError (exit 2), not inside an exception group.
    team = load_team(args.team)
    require_prompt(args.prompt)

    async def start(runtime: TeamRuntime, console: TeamConsole) -> RunOutcome:
        return await runtime.run(args.prompt)

    async with http_client() as http:
        backends = backend_factory(team, client=http)  # an unset API key stops us here
        journal = SqliteJournal(args.db or default_db(), durability=Durability(args.durability))
        await trio.to_thread.run_sync(journal.open)
        runtime = TeamRuntime(team, backends=backends, factlog=journal)
        return await _supervise(args, journal, runtime, start)


async def _resume(args: argparse.Namespace) -> int:
    path = args.db or default_db()
    journal = SqliteJournal(path, durability=Durability(args.durability))
    await trio.to_thread.run_sync(journal.open)  # first: it migrates an older file
    reader = JournalReader(path)
    info = _resolve(reader, args.session)
    if info.status != "running":
        raise RunError(f"the run of {info.session} has already {info.status}: nothing to resume")
    if args.team is not None:
        team = load_team(args.team)
    else:
        team_file, team_toml = reader.team_toml(info.session)
        if not team_toml:
            raise RunError(f"{info.session} did not record its team file: pass --team FILE")
        team = parse_team(team_toml, file=team_file or "<journal>")
    state = await trio.to_thread.run_sync(reader.open, info.session)
    wanted = args.events or args.facts
    history = await trio.to_thread.run_sync(reader.facts, info.session) if wanted else []

    async def start(runtime: TeamRuntime, console: TeamConsole) -> RunOutcome:
        outcome: list[RunOutcome] = []

        async def resume(*, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
            outcome.append(await runtime.resume(task_status=task_status))

        async with trio.open_nursery() as nursery:
            await nursery.start(resume)
            console.take_up_waits()  # asked before the stop: ask again
        return outcome[0]

    async with http_client() as http:
        backends = backend_factory(team, client=http)
        runtime = TeamRuntime(team, backends=backends, factlog=journal, state=state)
        return await _supervise(args, journal, runtime, start, history=history, append=True)


async def _supervise(
    args: argparse.Namespace,
    journal: SqliteJournal,
    runtime: TeamRuntime,
    start: Callable[[TeamRuntime, TeamConsole], Awaitable[RunOutcome]],
    *,
    history: Sequence[Fact] = (),
    append: bool = False,
) -> int:
    """Run ``start`` with the journal, the console and the output files around it."""
    outputs = [
        (*_open_output(path, append=append), write)
        for path, write in ((args.events, _write_events), (args.facts, _write_facts))
        if path is not None
    ]
    try:
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            console = TeamConsole(
                runtime, mode=ApprovalMode(args.approve), live=False if args.plain else None
            )
            async with trio.open_nursery() as nursery:
                for out, written, write in outputs:
                    await nursery.start(write, runtime, out, history, written)
                await nursery.start(console.serve)
                signals: trio.CancelScope = await nursery.start(_cancel_on_signal, runtime)
                outcome = await start(runtime, console)
                signals.cancel()
                # The readers drain what is buffered for them, then their iteration ends.
                runtime.bus.close()
            services.cancel_scope.cancel()  # the journal drains what was submitted, and closes
    finally:
        for out, _, _ in outputs:
            out.close()
    if outcome.status is RunStatus.COMPLETED:
        print(outcome.result)
        return EXIT_OK
    print(f"orchestrator: run {outcome.status}: {outcome.error}", file=sys.stderr)
    print(f"orchestrator: session {outcome.session}", file=sys.stderr)
    return EXIT_FAILED


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


def _open_output(path: Path, *, append: bool) -> tuple[TextIO, int]:
    """Open a JSON Lines output; appending, also the ``sequence`` of its last whole line.

    A process killed mid-write can leave a torn last line: appending cuts it off first, so
    the file goes on with whole lines only.
    """
    written = 0
    if append and path.exists():
        try:
            with path.open("r+b") as existing:
                data = existing.read()
                whole = data.rfind(b"\n") + 1
                existing.truncate(whole)
            lines = data[:whole].splitlines()
            written = int(json.loads(lines[-1])["sequence"]) if lines else 0
        except OSError as exc:
            raise FactLogError(f"cannot append: {exc.strerror}", source=str(path)) from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise FactLogError(
                f"cannot append: its last line is not a JSON object with a sequence ({exc})",
                source=str(path),
            ) from exc
    return _open_for_writing(path, append=append), written


def _open_for_writing(path: Path, *, append: bool = False) -> TextIO:
    try:
        return path.open("a" if append else "w", encoding="utf-8")
    except OSError as exc:
        raise FactLogError(f"cannot open for writing: {exc.strerror}", source=str(path)) from exc


async def _write_events(
    runtime: TeamRuntime,
    out: TextIO,
    history: Sequence[Fact],
    written: int,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Project every fact to Agent UI envelopes and write them as JSON Lines.

    ``history``: the facts before this process (a resumed run), which bring the projection
    up to date; of their envelopes, those after sequence ``written`` (the file's last) are
    written too, which a stop kept the process before from writing.
    """
    subscription = runtime.bus.subscribe("events-file", buffer_size=float("inf"))
    projector = AgentUiProjector(runtime.session)
    for fact in history:
        for envelope in projector.feed(fact):
            if (envelope.sequence or 0) > written:
                out.write(envelope_to_json_line(envelope) + "\n")
    task_status.started()
    try:
        async for fact in subscription:
            for envelope in projector.feed(fact):
                out.write(envelope_to_json_line(envelope) + "\n")
            if not subscription.buffered():
                out.flush()  # a burst is written in one go; a quiet moment leaves it on disk
    finally:
        out.flush()


async def _write_facts(
    runtime: TeamRuntime,
    out: TextIO,
    history: Sequence[Fact],
    written: int,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Write every fact as a JSON line, once it is durable: each line was acknowledged.

    ``history``: a resumed run's earlier facts; those after ``written`` (the file's last
    sequence) are written first.
    """
    subscription = runtime.bus.subscribe("facts-file", buffer_size=float("inf"))
    out.writelines(fact_to_json(f) + "\n" for f in history if f.sequence > written)
    out.flush()
    task_status.started()
    try:
        async for fact in subscription:
            out.write(fact_to_json(fact) + "\n")
            out.flush()
    finally:
        out.flush()


# ─── serve ───────────────────────────────────────────────────────────────────


def _serve(args: argparse.Namespace) -> int:
    config = load_serve_config(args.config) if args.config is not None else ServeConfig()
    overrides = {
        key: value
        for key, value in (
            ("host", args.host),
            ("port", args.port),
            ("teams", args.teams),
        )
        if value is not None
    }
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ConfigError("expected a port number from 0 to 65535", file="--port")
    config = attrs.evolve(config, **overrides)
    db = args.db or config.db or default_db()
    try:
        trio.run(functools.partial(serve, config, db=db))
    except BaseExceptionGroup as group:
        # A problem found while starting (a port in use, a journal refused) is bad input
        # like any other: say it in one line.
        first = _first_leaf(group)
        if isinstance(first, OrchestratorError):
            raise first from None
        raise
    return EXIT_OK


async def _teammates(args: argparse.Namespace, out: TextIO) -> int:
    action = args.teammates_command
    if args.url is not None:
        base = args.url
    else:
        config = load_serve_config(args.config) if args.config is not None else ServeConfig()
        host = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
        base = f"http://[{host}]:{config.port}" if ":" in host else f"http://{host}:{config.port}"
    message: dict[str, object] = {"type": action}
    if action != "list":
        message["name"] = args.name
    if action == "history":
        message["limit"] = args.limit
    answer = await request(teammates_url(base), message, token=read_token(args.token_file))
    print_answer(action, answer, out, as_json=args.json)
    return EXIT_OK


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


# ─── history ─────────────────────────────────────────────────────────────────


def _history(reader: JournalReader, args: argparse.Namespace, out: TextIO) -> int:
    info = _resolve(reader, args.session)
    chat = resolve_chat(reader, info.session, args.chat)
    for message in reader.agent_messages(info.session, chat, deleted=args.deleted):
        event = message.event
        if args.deleted:
            event = {**event, "turnId": message.turn_id, "deletedAt": message.deleted_at}
        out.write(json.dumps(event, ensure_ascii=False) + "\n")
    return EXIT_OK


async def _edit_history(args: argparse.Namespace) -> int:
    path = args.db or default_db()
    reader = JournalReader(path)
    info = _resolve(reader, args.session)
    chat = resolve_chat(reader, info.session, args.chat)
    edit: Edit
    match args.command:
        case "undo":
            edit = lambda state, facts: [undo_action(state)]  # noqa: E731
        case "truncate":
            keep = None if args.keep == "none" else args.keep
            edit = lambda state, facts: [truncate_action(state, keep)]  # noqa: E731
        case _:
            edit = restore_actions
    recorded = await edit_history(path, info.session, chat, edit)
    turns = reader.open(info.session).chats[chat].turns
    print(
        f"{args.command}: {len(recorded)} fact(s) recorded; {chat} has {len(turns)} turn(s)"
        + (f", the last {turns[-1].id}" if turns else ""),
        file=sys.stderr,
    )
    return EXIT_OK


# ─── reading the journal ─────────────────────────────────────────────────────


def _resolve(reader: JournalReader, wanted: str) -> SessionInfo:
    """The session a user named: its URI, or a unique beginning of its id."""
    sessions = reader.sessions()
    exact = [s for s in sessions if s.session == wanted]
    if exact:
        return exact[0]
    prefix = wanted.removeprefix("ahp-session:/")
    matching = [s for s in sessions if s.session.removeprefix("ahp-session:/").startswith(prefix)]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        raise FactLogError(
            f"no session {wanted!r} (orchestrator sessions lists them)", source=str(reader.path)
        )
    shown = ", ".join(s.session for s in matching[:3])
    raise FactLogError(
        f"{wanted!r} names {len(matching)} sessions ({shown}...); give more of the id",
        source=str(reader.path),
    )


def _sessions(reader: JournalReader, out: TextIO, *, as_json: bool) -> int:
    sessions = reader.sessions()
    if as_json:
        json.dump([s.to_json() for s in sessions], out, indent=2)
        out.write("\n")
        return EXIT_OK
    if not sessions:
        print(f"no sessions in {reader.path}", file=out)
        return EXIT_OK
    for s in sessions:
        print(f"{s.session}  {s.status:<9}  {s.created_at}  {s.team}: {s.title}", file=out)
    return EXIT_OK


def _events(reader: JournalReader, wanted: str, fmt: str, out: TextIO) -> int:
    session = _resolve(reader, wanted).session
    facts = reader.facts(session)
    if fmt == "facts":
        _lines(out, (fact_to_json(f) for f in facts))
    else:
        _lines(out, (envelope_to_json_line(e) for e in project_facts(session, facts)))
    return EXIT_OK


def _lines(out: TextIO, lines: Iterable[str]) -> None:
    for line in lines:
        out.write(line + "\n")


def _graph(args: argparse.Namespace, out: TextIO) -> int:
    facts: Iterable[Fact]
    if args.facts is not None:
        if args.session is not None:
            raise FactLogError("give a SESSION or --facts FILE, not both", source="graph")
        source = str(args.facts)
        facts = read_facts(args.facts)
    elif args.session is not None:
        reader = _reader(args)
        source = _resolve(reader, args.session).session
        facts = reader.facts(source)
    else:
        raise FactLogError("name a SESSION (orchestrator sessions lists them)", source="graph")
    graph = build_graph(facts)
    if args.check:
        violations = graph.check()
        for violation in violations:
            print(f"{violation.kind}: {violation.message}", file=out)
        if violations:
            print(f"{len(violations)} violation(s) in {source}", file=out)
            return EXIT_FAILED
        print(f"ok: {source} is consistent", file=out)
        return EXIT_OK
    drawn = GRAPH_FORMATS[args.format](graph)
    out.write(drawn if drawn.endswith("\n") else drawn + "\n")
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
