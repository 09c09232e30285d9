"""Whether a SQLite journal changed (``journal/_sqlite_changes``): one pragma per look,
true once anything was committed since the last look, by any other connection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from orchestrator.base import FactLogError
from orchestrator.journal import SqliteChanges, open_journal


def test_a_commit_by_another_connection_is_seen_once(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    journal = open_journal(db)
    journal.open()  # the file, its schema and WAL
    journal.close()
    changes = SqliteChanges(db)
    try:
        assert changes.changed(), "the first look: nothing known yet"
        assert not changes.changed()
        assert not changes.changed()
        with sqlite3.connect(db) as writer:
            writer.execute("CREATE TABLE scratch (x)")
        assert changes.changed()
        assert not changes.changed(), "seen once"
        assert changes.looks == 5
    finally:
        changes.close()


def test_a_journal_that_is_not_there_is_named(tmp_path: Path) -> None:
    changes = SqliteChanges(tmp_path / "missing.db")
    with pytest.raises(FactLogError) as raised:
        changes.changed()
    assert "missing.db" in str(raised.value)
    assert "see whether the journal changed" in str(raised.value)
