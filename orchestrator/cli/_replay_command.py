"""``orchestrator replay SESSION [--until SEQ]``: a recorded session run again on its own
recorded model rounds, with no model.

Each round is answered from the journal (:class:`~orchestrator.runtime.backends.ReplayBackend`),
which checks that it is asked what the recorded round was, and says where it first differs.
Approvals are decided as they were, in order. The replay is a new session of the same journal,
compared with the recorded one (:func:`~orchestrator.core.diff_sessions`): exit 0 when each
chat did the same, 1 when not (the report says what differs), as ``diff`` does.
With ``--team FILE``, a changed team file is tried against the recorded answers.
"""

from __future__ import annotations

import argparse
from collections import defaultdict, deque
from typing import TextIO

import trio

import orchestrator
from orchestrator.base import RunError
from orchestrator.core import (
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    ReplayScript,
    diff_sessions,
    recorded_rounds,
)
from orchestrator.journal import open_reader
from orchestrator.runtime.backends import ReplayBackend
from orchestrator.sessions import load_team_reference
from orchestrator.spec import parse_team

from ._conventions import EXIT_FAILED, EXIT_OK, Reporter, default_db
from ._sessions_command import resolve_session

__all__: list[str] = []


def replay(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator replay``."""
    return trio.run(_replay, args, out)


def _decisions(facts: list[Fact]) -> dict[tuple[str, str], deque[bool]]:
    """The recorded decisions, in order, by who asked to run which tool."""
    asked = {
        f.action.approval: (f.action.requested_by, f.action.tool_name)
        for f in facts
        if isinstance(f.action, ApprovalRequested)
    }
    decided: dict[tuple[str, str], deque[bool]] = defaultdict(deque)
    for fact in facts:
        action = fact.action
        if isinstance(action, ApprovalResolved) and action.approval in asked:
            decided[asked[action.approval]].append(action.decision == "approved")
    return decided


async def _replay(args: argparse.Namespace, out: TextIO) -> int:
    db = args.db or default_db()
    reader = open_reader(db)
    session = resolve_session(reader, args.session).session
    facts = reader.facts(session)
    until = args.until if args.until is not None else len(facts)
    state = reader.open(session)
    if state.run is None:
        raise RunError(f"{session} has no run to replay")
    if state.run.background is not None:
        raise RunError(f"{session} is a background teammate's wake: replay runs prompted runs")
    if args.team is not None:
        team = load_team_reference(args.team)
    else:
        team_file, team_toml = reader.team_toml(session)
        if not team_toml:
            raise RunError(f"{session} did not record its team file: pass --team FILE")
        team = parse_team(team_toml, file=team_file or "<journal>")
    script = ReplayScript(recorded_rounds(facts, until=until))
    decided = _decisions(facts)

    def decide(request: ApprovalRequested) -> bool:
        recorded = decided.get((request.requested_by, request.tool_name))
        return bool(recorded.popleft()) if recorded else False

    reporter: Reporter = args.reporter
    async with orchestrator.open_run(
        team,
        state.run.prompt,
        backends=ReplayBackend(script, wait_past_end=args.until is not None),
        journal=db,
        on_approval=decide,
        on_question=lambda question: None,
    ) as run:
        reporter.say(f"replaying {session} as {run.session}", session=run.session)
        async for update in run.updates():
            if update.fact.sequence >= until and args.until is not None:
                run.cancel()  # as far as asked: the rest is not compared
                break
        outcome = await run.outcome()
    replayed = reader.facts(run.session)
    found = diff_sessions(facts[:until], replayed[:until])
    print(run.session, file=out)
    if outcome.status != state.run.status and args.until is None and outcome.error:
        reporter.error(f"the replay {outcome.status}: {outcome.error}", session=run.session)
    if not found.chats:
        reporter.say(f"the replay did what {session} did (facts 1 to {until})")
        if found.parted_at is not None:
            reporter.say(
                f"its concurrent chats' facts interleaved otherwise from fact {found.parted_at[0]}",
            )
        return EXIT_OK
    for line in found.lines():
        print(line, file=out)
    return EXIT_FAILED
