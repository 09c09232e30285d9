"""Forking a session of a journal: the source's facts read, the fork's written beside them.

The facts are :func:`orchestrator.core.fork_facts`'s (the source's up to the fork point,
renamed, then the lineage); this module reads and writes them. The source is only read. The
copies are one batch, so they exist whole or not at all; the lineage follows the team file,
so a fork with its lineage can be taken up. The fork runs
the team file the source recorded (or the one given), which the journal keeps with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio

from orchestrator.base import now_timestamp
from orchestrator.core import Fact, Fork, before_run_end, fork_facts, fork_sequence
from orchestrator.journal import Journal
from orchestrator.runtime import Ids

__all__ = ["fork_session"]


async def fork_session(
    journal: Journal,
    source: str,
    *,
    turn_id: str | None = None,
    sequence: int | None = None,
    runs_on: bool = False,
    team: tuple[str, str] | None = None,
    clock: Callable[[], str] = now_timestamp,
    facts: Sequence[Fact] | None = None,
    session: str | None = None,
) -> Fork:
    """Fork ``source`` at the end of turn ``turn_id``, at ``sequence``, or at its last fact,
    into a new session of ``journal`` (served by the caller); the fork, once durable.

    Args:
        journal: The journal of the source, where the fork is written.
        source: The source session's URI.
        turn_id: Fork where this turn ended.
        sequence: Fork after this fact.
        runs_on: The fork is taken up at once: a run's end at the fork point is left out.
        team: The team file's path and text the fork runs (default: the source's).
        clock: The lineage fact's time.
        facts: The source's facts, when the caller has read them already.
        session: The fork's URI (default: a new one), for a client that names it.

    :class:`~orchestrator.base.RunError` names a fork point the source does not have.
    """
    reader = journal.reader
    if facts is None:
        facts = await trio.to_thread.run_sync(reader.facts, source)
    at = fork_sequence(facts, turn_id=turn_id, sequence=sequence)
    if runs_on:
        at = before_run_end(facts, at)
    ids = Ids()
    fork = fork_facts(
        facts,
        session=session or ids.session(),
        new_chat=ids.chat,
        now=clock(),
        sequence=at,
        turn_id=turn_id,
    )
    # The new session is this process's while it is written (a PostgreSQL journal fences
    # writes by lease); whoever runs it on claims it again.
    await trio.to_thread.run_sync(journal.ownership.claim, fork.session)
    # The copies, the team file, then the lineage: the journal writes them in that order, so
    # once the lineage is durable the fork can be taken up (its team file is there).
    copies = journal.submit(fork.facts[:-1])
    team_file, team_toml = team if team is not None else reader.team_toml(source)
    if team_toml:
        journal.describe(fork.session, team_file=team_file or "<journal>", team_toml=team_toml)
    lineage = journal.submit(fork.facts[-1:])
    for ticket in (copies, lineage):
        await ticket.wait()
        if ticket.error is not None:
            raise ticket.error
    return fork
