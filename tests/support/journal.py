"""Journal helpers shared by the journal's tests: old schemas, a team run to the end."""

from __future__ import annotations

import sqlite3


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
