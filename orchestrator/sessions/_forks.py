"""Forking a session of a journal: the source's stored facts read, the fork's written beside.

The fork is :func:`orchestrator.core.fork_rows`'s: the source's facts up to the fork point,
renamed in their stored text (what :func:`~orchestrator.core.fork_facts` makes of them, byte
for byte, without decoding them), then the lineage. The source is only read. The journal
writes the fork's team file, then its facts and its source's agent-channel history up to
the fork point as one batch (one transaction), so a fork exists whole or not at all, and can
be taken up once its batch is durable. The fork runs the team file the source recorded, or
the one given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio

from orchestrator.base import now_timestamp
from orchestrator.core import ForkRows, StoredFact, fork_point, fork_rows
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
    rows: Sequence[StoredFact] | None = None,
    session: str | None = None,
) -> ForkRows:
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
        rows: The source's stored facts, when the caller has read them already.
        session: The fork's URI (default: a new one), for a client that names it.

    :class:`~orchestrator.base.RunError` names a fork point the source does not have.
    """
    reader = journal.reader
    ids = Ids()
    now = clock()

    def copy() -> ForkRows:
        # In a thread, read and renamed: 100,000 facts are most of a second of Python, which
        # the event loop (a daemon's other sessions and clients) does not wait for.
        stored = reader.fact_rows(source) if rows is None else rows
        at = fork_point(stored, turn_id=turn_id, sequence=sequence, runs_on=runs_on)
        return fork_rows(
            stored[:at],
            source=source,
            session=session or ids.session(),
            new_chat=ids.chat,
            now=now,
            turn_id=turn_id,
        )

    fork = await trio.to_thread.run_sync(copy)
    # The new session is this process's while it is written (a PostgreSQL journal fences
    # writes by lease); whoever runs it on claims it again.
    await trio.to_thread.run_sync(journal.ownership.claim, fork.session)
    if team is None:
        team_file, team_toml = await trio.to_thread.run_sync(reader.team_toml, source)
        team = (team_file or "<journal>", team_toml) if team_toml else None
    ticket = journal.submit_fork(fork, team=team)
    await ticket.wait()
    if ticket.error is not None:
        raise ticket.error
    return fork
