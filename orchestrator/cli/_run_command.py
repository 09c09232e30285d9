"""``orchestrator run`` and ``resume``: a team run in this process, with the live console, the
journal and the optional JSON Lines outputs around it.

The run is a node of its own (``run:HOSTNAME:PID``). It owns its session while it runs,
through its journal's :class:`~orchestrator.journal.SessionOwnership`, so that no daemon takes
the session over meanwhile:

- on a PostgreSQL journal that daemons may share (issue 21), it holds the session's lease,
  renewed every third of its TTL (:func:`_keep_owned`);
- on a SQLite file, it holds the session's lock.

It is given up once the journal has written the run's last batch. A run killed
leaves its lease to expire (its lock goes with its process), and a daemon on the database
then takes the session up by its recovery rules. ``resume`` claims the session before it
reads it. It refuses (exit 3: try again later) while a live process holds it, naming it. The
lease of a run on this machine whose process is gone (``kill -9``, a crash) is taken at once,
as ``resume`` after a crash always could."""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TextIO

import structlog
import trio

from orchestrator.base import FactLogError, OrchestratorError, RunError, UnavailableError
from orchestrator.core import (
    Fact,
    RunStatus,
    fact_to_json,
)
from orchestrator.journal import (
    Durability,
    Journal,
    SessionOwnership,
    open_journal,
)
from orchestrator.protocols import (
    AgentUiProjector,
    envelope_to_json_line,
)
from orchestrator.runtime import (
    DEFAULT_DELTA_WINDOW,
    RunOutcome,
    TeamRuntime,
    TracingSettings,
    require_prompt,
    traced,
)
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.sessions import load_team_reference
from orchestrator.spec import TeamSpec, parse_team, with_model

from ._approval_mode import ApprovalMode
from ._console import TeamConsole
from ._conventions import EXIT_FAILED, EXIT_OK, MODEL_ENV, Reporter, default_db
from ._sessions_command import resolve_session

__all__: list[str] = []

log = structlog.get_logger("orchestrator.cli")

#: A task that writes one of the run's output files (``--events``, ``--facts``) as it goes.
_Writer = Callable[..., Awaitable[None]]


def run(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator run``."""
    with traced(TracingSettings.from_environ(os.environ)):
        return trio.run(_run, args)


def resume(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator resume``."""
    with traced(TracingSettings.from_environ(os.environ)):
        return trio.run(_resume, args)


async def _run(args: argparse.Namespace) -> int:
    # Everything that can be bad input is checked before the first task starts, so it
    # reaches main() as a plain OrchestratorError (exit 2), not inside an exception group.
    team = _with_model(load_team_reference(args.team), args)
    prompt = _prompt(args)
    require_prompt(prompt)

    async def start(runtime: TeamRuntime, console: TeamConsole) -> RunOutcome:
        # A traced program that runs us says where in its trace (the OpenTelemetry
        # convention for a child process): the run's trace continues it.
        return await runtime.run(prompt, traceparent=os.environ.get("TRACEPARENT"))

    async with http_client() as http:
        backends = backend_factory(team, client=http)  # an unset API key stops us here
        db = args.db or default_db()
        journal = _open(db, args)
        await trio.to_thread.run_sync(journal.open)
        runtime = TeamRuntime(
            team, backends=backends, factlog=journal, delta_window=_delta_window(args)
        )
        # A new session: nobody else holds it, and no daemon on the journal may take it up
        # while it runs here.
        elsewhere = await trio.to_thread.run_sync(journal.ownership.claim, runtime.session)
        if elsewhere is not None:
            raise RunError(f"{runtime.session} {elsewhere.description}: run again")
        return await _supervise(args, journal, runtime, start)


def _open(db: Path | str, args: argparse.Namespace) -> Journal:
    """The run's journal, its sessions owned by this process as node
    ``run:HOSTNAME:PID`` (leased on PostgreSQL, locked on a SQLite file)."""
    node = f"run:{socket.gethostname()}:{os.getpid()}"
    durability = Durability(args.durability)
    return open_journal(db, durability=durability, node=node, lease_ttl=args.lease_ttl)


async def _hold(ownership: SessionOwnership, session: str) -> None:
    """Claim ``session`` before reading it (so the read comes after its previous owner's
    last write); :class:`UnavailableError` naming who holds it."""
    elsewhere = await trio.to_thread.run_sync(ownership.claim, session)
    if elsewhere is not None and _dead_run(elsewhere.owner):
        take = functools.partial(ownership.claim, session, replacing=elsewhere.owner)
        elsewhere = await trio.to_thread.run_sync(take)
    if elsewhere is not None:
        raise UnavailableError(
            f"{session} {elsewhere.description}: resume it there, or once it has stopped"
        )


def _dead_run(node: str) -> bool:
    """Whether ``node`` is an ``orchestrator run`` of this machine whose process is gone."""
    prefix = f"run:{socket.gethostname()}:"
    if not node.startswith(prefix) or not node[len(prefix) :].isdigit():
        return False
    try:
        os.kill(int(node[len(prefix) :]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's): alive
        return False
    return False


async def _keep_owned(
    ownership: SessionOwnership,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Renew the run's lease every third of its TTL until cancelled (a lock: never). A
    renewal that fails is tried again at the next; a lease found taken (this process
    stalled past its TTL) is logged: the journal's fence then fails the run's next batch,
    and the run stops."""
    task_status.started()
    while True:
        await trio.sleep(ownership.renew_every)
        try:
            lost = await trio.to_thread.run_sync(ownership.renew)
        except (OrchestratorError, OSError) as exc:
            log.warning("lease not renewed", node=ownership.node, error=str(exc))
            continue
        for session in lost:
            log.error("lease lost: another node took the session over", session=session)


async def _release(journal: Journal, session: str) -> None:
    """Give the run's lease or lock up (after its last batch is written: the fence would
    refuse one written after); never raises (a lease not given up expires, and the kernel
    lets go of a lock when the process ends)."""
    ownership = journal.ownership
    if not ownership.holds(session):
        return
    try:
        await trio.to_thread.run_sync(functools.partial(ownership.release, session))
    except (OrchestratorError, OSError) as exc:
        log.warning("lease not released", session=session, error=str(exc))
    finally:
        ownership.close()


async def _resume(args: argparse.Namespace) -> int:
    path = args.db or default_db()
    journal = _open(path, args)
    await trio.to_thread.run_sync(journal.open)  # first: it migrates an older file
    reader = journal.reader
    info = resolve_session(reader, args.session)
    if info.status != "running":
        raise RunError(f"the run of {info.session} has already {info.status}: nothing to resume")
    try:
        await _hold(journal.ownership, info.session)
    except BaseException:
        journal.close()
        raise
    if args.team is not None:
        team = load_team_reference(args.team)
    else:
        team_file, team_toml = reader.team_toml(info.session)
        if not team_toml:
            raise RunError(f"{info.session} did not record its team file: pass --team FILE")
        team = parse_team(team_toml, file=team_file or "<journal>")
    team = _with_model(team, args)
    state = await trio.to_thread.run_sync(reader.open, info.session)
    if team.model is None and state.run is not None and state.run.model is not None:
        team = with_model(team, state.run.model)  # the model the run was started with
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
        runtime = TeamRuntime(
            team,
            backends=backends,
            factlog=journal,
            state=state,
            delta_window=_delta_window(args),
        )
        return await _supervise(args, journal, runtime, start, history=history, append=True)


async def _supervise(
    args: argparse.Namespace,
    journal: Journal,
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
    reporter: Reporter = args.reporter
    reporter.say(f"session {runtime.session}", session=runtime.session)
    try:
        outcome = await _served(args, journal, runtime, start, history, outputs)
    except BaseExceptionGroup as group:
        # The journal refused the run's first facts (a table gone, the file locked past
        # its wait): the run never started, and that is what it is said, in one line.
        failure = _journal_failure(group)
        if failure is None:
            raise
        outcome = RunOutcome(
            session=runtime.session, status=RunStatus.FAILED, result="", error=str(failure)
        )
    completed = outcome.status is RunStatus.COMPLETED
    if args.json:
        json.dump(_outcome_json(outcome), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    elif completed:
        print(outcome.result)
    if completed:
        reporter.say(ending_line(outcome), session=outcome.session, status=str(outcome.status))
    else:
        reporter.error(ending_line(outcome), session=outcome.session, status=str(outcome.status))
    return EXIT_OK if completed else EXIT_FAILED


_ENDED = {
    RunStatus.COMPLETED: "the run completed",
    RunStatus.FAILED: "the run failed",
    RunStatus.CANCELLED: "the run was cancelled",
}


def ending_line(outcome: RunOutcome) -> str:
    """The line ``run`` ends with: how the run ended, then why, unless the recorded error
    only repeats the status (a cancelled run's error is the word ``cancelled``)."""
    line = _ENDED.get(outcome.status, f"the run ended {outcome.status}")
    error = outcome.error.strip()
    if error and error.lower() != str(outcome.status):
        line = f"{line}: {error}"
    return f"{line} (session {outcome.session})"


async def _served(
    args: argparse.Namespace,
    journal: Journal,
    runtime: TeamRuntime,
    start: Callable[[TeamRuntime, TeamConsole], Awaitable[RunOutcome]],
    history: Sequence[Fact],
    outputs: Sequence[tuple[TextIO, int, _Writer]],
) -> RunOutcome:
    """``start``'s outcome, run with the journal, the console and the output files."""
    reporter: Reporter = args.reporter
    try:
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await services.start(_keep_owned, journal.ownership)
            console = TeamConsole(
                runtime,
                mode=ApprovalMode(args.approve),
                live=False if args.plain else None,
                reporter=reporter,
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
        with trio.CancelScope(shield=True):
            await _release(journal, runtime.session)
    return outcome


def _journal_failure(group: BaseExceptionGroup[BaseException]) -> FactLogError | None:
    """The journal's failure, when it is all ``group`` holds (else None: raised as it is)."""
    failures, rest = group.split(FactLogError)
    if failures is None or rest is not None:
        return None
    first: BaseException = failures
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first if isinstance(first, FactLogError) else None


def _outcome_json(outcome: RunOutcome) -> dict[str, object]:
    """``run --json``: the session, how the run ended, its answer (and its parsed value, when
    the coordinator has an output_schema) or its error."""
    return {
        "session": outcome.session,
        "status": str(outcome.status),
        "result": outcome.result or None,
        "result_value": outcome.result_value,
        "error": outcome.error or None,
    }


def _prompt(args: argparse.Namespace) -> str:
    """The prompt: the argument, standard input (``-``) or ``--prompt-file``."""
    if args.prompt_file is not None:
        if args.prompt is not None:
            raise RunError("give the prompt as an argument or with --prompt-file, not both")
        try:
            return str(args.prompt_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RunError(f"cannot read the prompt from {args.prompt_file}: {exc}") from exc
    if args.prompt == "-":
        return sys.stdin.read()
    if args.prompt is None:
        raise RunError("give a prompt: as an argument, - for standard input, or --prompt-file")
    prompt: str = args.prompt
    return prompt


def _with_model(team: TeamSpec, args: argparse.Namespace) -> TeamSpec:
    """``team`` with ``--model`` (or ``$ORCHESTRATOR_MODEL``) for its OpenAI-compatible
    agents, for this run only."""
    model = args.model or os.environ.get(MODEL_ENV) or None
    if model is None:
        return team
    if not any(agent.openai is not None for agent in team.agents):
        raise RunError(
            f"--model {model}: no agent of {team.name} uses the OpenAI-compatible backend"
        )
    return with_model(team, model)


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


def _delta_window(args: argparse.Namespace) -> float:
    """``--delta-window``, or the runtime's default."""
    window: float | None = args.delta_window
    return DEFAULT_DELTA_WINDOW if window is None else window
