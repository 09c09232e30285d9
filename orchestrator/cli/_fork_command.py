"""``orchestrator fork``: a new session that starts where another stood, maybe run on.

The fork is written first, whole, by a journal of its own (:func:`_write_fork`). It then
exists as any session does: ``orchestrator resume`` takes it up later. With ``--prompt``,
``--team`` or ``--model`` it is taken up at once, as ``resume`` does (the recovery rules
settle what was in flight at the fork point), with the console around it.
"""

from __future__ import annotations

import argparse
import functools
from typing import TextIO

import trio

from orchestrator.core import ForkRows, TeamState, fork_point
from orchestrator.runtime import RunOutcome, TeamRuntime
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.sessions import fork_session, load_team_reference
from orchestrator.spec import TeamSpec, parse_team

from ._console import TeamConsole
from ._conventions import EXIT_OK, Reporter, default_db
from ._run_command import _hold, _open, _supervise, _with_model
from ._sessions_command import resolve_session

__all__: list[str] = []


def fork(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator fork``."""
    return trio.run(_fork, args, out)


async def _fork(args: argparse.Namespace, out: TextIO) -> int:
    runs_on = args.prompt is not None or args.team is not None or args.model is not None
    given = load_team_reference(args.team) if args.team is not None else None
    db = args.db or default_db()
    made = await _write_fork(args, db, given, runs_on=runs_on)
    reporter: Reporter = args.reporter
    where = f"turn {made.turn_id}" if made.turn_id else f"fact {made.sequence}"
    reporter.say(f"forked {made.source} at {where}", session=made.session, source=made.source)
    if not runs_on:
        print(made.session, file=out)
        return EXIT_OK
    journal = _open(db, args)
    await trio.to_thread.run_sync(journal.open)
    try:
        await _hold(journal.ownership, made.session)
    except BaseException:
        journal.close()
        raise
    if given is not None:
        team = given
    else:
        team_file, team_toml = journal.reader.team_toml(made.source)
        team = parse_team(team_toml or "", file=team_file or "<journal>")
    team = _with_model(team, args)
    history = await trio.to_thread.run_sync(journal.reader.facts, made.session)
    state = TeamState.fold(made.session, history)

    async def start(runtime: TeamRuntime, console: TeamConsole) -> RunOutcome:
        outcome: list[RunOutcome] = []

        async def resume(*, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
            outcome.append(
                await runtime.resume(
                    prompt=args.prompt, cancel_removed_work=True, task_status=task_status
                )
            )

        async with trio.open_nursery() as nursery:
            await nursery.start(resume)
            console.take_up_waits()  # asked before the fork point: ask again
        return outcome[0]

    async with http_client() as http:
        backends = backend_factory(team, client=http)
        runtime = TeamRuntime(team, backends=backends, factlog=journal, state=state)
        return await _supervise(args, journal, runtime, start, history=history, append=False)


async def _write_fork(
    args: argparse.Namespace, db: object, given: TeamSpec | None, *, runs_on: bool
) -> ForkRows:
    """The fork, written whole by a journal opened for it and closed after."""
    journal = _open(db, args)  # type: ignore[arg-type]
    await trio.to_thread.run_sync(journal.open)
    try:
        info = resolve_session(journal.reader, args.session)
        rows = await trio.to_thread.run_sync(journal.reader.fact_rows, info.session)
        # A fork point the source lacks is bad input: said before anything starts.
        fork_point(rows, turn_id=args.at_turn, sequence=args.at)
    except BaseException:
        journal.close()
        raise
    team = None if given is None else (given.file, given.source)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        made = await fork_session(
            journal,
            info.session,
            turn_id=args.at_turn,
            sequence=args.at,
            runs_on=runs_on,
            team=team,
            rows=rows,
        )
        services.cancel_scope.cancel()  # the journal drains what was submitted, and closes
    release = functools.partial(journal.ownership.release, made.session)
    await trio.to_thread.run_sync(release)
    journal.ownership.close()
    return made
