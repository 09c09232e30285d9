"""Shared test configuration: where the protocol fixtures live, and hypothesis's profile."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests check what a function does, not how fast a loaded machine draws its
# inputs: hypothesis's wall-clock checks (a 200 ms deadline per example, "input generation
# is slow") fail at random when two xdist workers share two busy cores. The examples, their
# number and the seed's determinism are unchanged.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: The throwaway PostgreSQL server and the journal fixtures over both databases.
pytest_plugins = ["tests.postgres"]

#: Public schemas and fixtures of the protocols we implement, copied byte for byte with their
#: licences (see protocols/SOURCES.md), so a clean clone tests without anything beside it.
PROTOCOLS = Path(__file__).resolve().parent / "protocols"
AHP_SCHEMAS = PROTOCOLS / "ahp" / "schema"


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
    connection.execute("PRAGMA user_version=4")
    connection.commit()


def pytest_configure(config: pytest.Config) -> None:
    """Runs without --db (the CLI's subprocesses included) write a journal in a temporary
    state directory, never in the home directory of whoever runs the tests."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="orchestrator-tests-")
