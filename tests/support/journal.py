"""Journal helpers shared by the journal's tests: old schemas, a team run to the end."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio
import trio.testing

from orchestrator.core import Action, Fact, RunStarted, ViewUpdated
from orchestrator.journal import Journal, open_journal
from orchestrator.runtime import RunOutcome, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import TeamSpec, load_team
from tests.support.paths import PROJECT_ROOT
from tests.support.postgres import direct_sql


def back_to_schema_4(connection: sqlite3.Connection) -> None:
    """Make a journal of this version one of schema 4: the team files back in the sessions
    rows, no checksums (nor the history's, schema 7), no chats table."""
    connection.execute("DROP TABLE chats")
    connection.execute(
        "UPDATE sessions SET team_toml = (SELECT team_toml FROM session_teams AS t "
        "WHERE t.session = sessions.session)"
    )
    connection.execute("DROP TABLE session_teams")
    for table in ("facts", "snapshots", "snapshot_parts", "agent_messages"):
        connection.execute(f"ALTER TABLE {table} DROP COLUMN checksum")
    back_to_schema_7(connection, commit=False)
    connection.execute("PRAGMA user_version=4")
    connection.commit()


def back_to_schema_7(connection: sqlite3.Connection, *, commit: bool = True) -> None:
    """Make a journal of this version one of schema 7: no fork lineage in the sessions rows."""
    for column in ("forked_from", "forked_at", "forked_turn"):
        connection.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    if commit:
        connection.execute("PRAGMA user_version=7")
        connection.commit()


def pg_back_to_version_4(connection: Any) -> None:
    """Make a PostgreSQL journal of this version one of version 4: no fork lineage."""
    connection.execute(
        "ALTER TABLE sessions DROP COLUMN forked_from, DROP COLUMN forked_at, "
        "DROP COLUMN forked_turn"
    )
    connection.execute("DELETE FROM journal_migrations WHERE version = 5")


DELIVERY = PROJECT_ROOT / "teams" / "delivery.toml"


HANDOFF = PROJECT_ROOT / "teams" / "handoff.toml"


async def run_team(
    db: Path | str, team: TeamSpec | None = None, **options: object
) -> tuple[RunOutcome, TeamRuntime, Any]:
    """Run a team against the journal ``db`` names (approvals approved) and close it."""
    journal: Journal = open_journal(db, **options)  # type: ignore[arg-type]
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        runtime = TeamRuntime(
            team or load_team(DELIVERY), backends=ScriptedBackend, factlog=journal
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(approve_all, runtime)
            outcome = await runtime.run("Ship the release notes")
            nursery.cancel_scope.cancel()
        services.cancel_scope.cancel()
    return outcome, runtime, journal


async def approve_all(runtime: TeamRuntime) -> None:
    async for fact in facts_of(runtime):
        if fact.type == "team/approvalRequested":
            await runtime.resolve_approval(fact.action.approval, approved=True)


async def facts_of(runtime: TeamRuntime) -> AsyncIterator[Any]:
    subscription = runtime.bus.subscribe("test")
    async for fact in subscription:
        yield fact


A = "ahp-session:/a"


B = "ahp-session:/b"


def started(session: str, prompt: str = "go") -> Fact:
    action = RunStarted(
        run="run-1",
        team="t",
        topology="flat",
        parallel_budget=1,
        coordinator="lead",
        prompt=prompt,
        task="task-1",
    )
    return Fact(sequence=1, session=session, channel=session, at=AT, action=action)


def view(session: str, sequence: int, text: str = "ok") -> Fact:
    action: Action = ViewUpdated(view_type="notes", content={"text": text})
    return Fact(sequence=sequence, session=session, channel=session, at=AT, action=action)


async def wait_all(*tickets: Any) -> None:
    with trio.fail_after(10):  # real seconds: the writer is a thread
        for ticket in tickets:
            await ticket.wait()


AT = "2026-11-26T00:00:00.000Z"


NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def age(db: Path | str, session: str, *, days: int, status: str | None = None) -> None:
    """Make ``session`` last written ``days`` before NOW (and set its status)."""
    written = (NOW - dt.timedelta(days=days)).isoformat(timespec="milliseconds")
    with direct_sql(db) as connection:
        connection.execute(
            "UPDATE sessions SET updated_at = ?, status = coalesce(?, status) WHERE session = ?",
            (written.replace("+00:00", "Z"), status, session),
        )


async def a_run_and_its_fork(db: Path | str) -> tuple[str, str, int]:
    """A one-worker run in ``db``, forked at its last fact by another node: the source's and
    the fork's URIs, and the source's last fact the fork copied."""
    import orchestrator
    from orchestrator.sessions import fork_session
    from tests.support.teams import fan_team

    team = orchestrator.parse_team(fan_team(1), file="fan.toml")
    source = await orchestrator.run_team(team, "first", journal=db)
    journal = open_journal(db, node="node-b")
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        made = await fork_session(journal, source.session)
        nursery.cancel_scope.cancel()
    return source.session, made.session, made.sequence
