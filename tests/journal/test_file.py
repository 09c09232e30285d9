"""The SQLite journal's file: what is not a journal (a foreign file, a directory, a damaged
one), what SQLite's errors are called, and a read-only filesystem."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.base import FactLogError
from orchestrator.journal import (
    JournalReader,
    SqliteJournal,
)
from orchestrator.journal._file import _unreadable
from tests.support.journal import (
    DELIVERY,
    run_team,
)


def file_bytes(path: Path) -> bytes:
    return path.read_bytes()


class TestWhatIsNotAJournal:
    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (b"this is a text file, not a journal\n" * 100, "not an orchestrator journal"),
            (None, "not an orchestrator journal"),  # another application's SQLite file
        ],
    )
    async def test_a_foreign_file_is_refused_untouched(
        self, tmp_path: Path, content: bytes | None, message: str
    ) -> None:
        db = tmp_path / "other.db"
        if content is None:
            connection = sqlite3.connect(db)
            connection.execute("CREATE TABLE contacts (name TEXT)")
            connection.commit()
            connection.close()
        else:
            db.write_bytes(content)
        before = file_bytes(db)
        with pytest.raises(FactLogError, match=message):
            await trio.to_thread.run_sync(SqliteJournal(db).open)
        assert file_bytes(db) == before

    def test_a_directory_is_refused_as_one(self, tmp_path: Path) -> None:
        with pytest.raises(FactLogError, match="this is a directory: --db takes a journal"):
            JournalReader(tmp_path).sessions()

    @pytest.mark.parametrize(
        ("code", "said"),
        [
            (sqlite3.SQLITE_CANTOPEN, "must be able to write its directory"),
            (sqlite3.SQLITE_IOERR, "is its disk full or failing"),
            (sqlite3.SQLITE_FULL, "is its disk full or failing"),
            (sqlite3.SQLITE_BUSY, "locked by another process"),
            (sqlite3.SQLITE_NOTADB, "not an orchestrator journal, or it is damaged"),
            (sqlite3.SQLITE_CORRUPT, "not an orchestrator journal, or it is damaged"),
        ],
    )
    def test_only_a_file_that_is_not_a_database_or_damaged_is_called_so(
        self, code: int, said: str
    ) -> None:
        """A healthy journal on a full disk, or in a directory this user cannot write, must
        not be called damaged: at 3 a.m. that reads as "restore from backup"."""
        exc = sqlite3.OperationalError("what SQLite said")
        exc.sqlite_errorcode = code
        assert said in _unreadable(exc)
        assert "what SQLite said" in _unreadable(exc)

    async def test_a_damaged_journal_is_refused_untouched(self, tmp_path: Path) -> None:
        db = tmp_path / "journal.db"
        await run_team(db)
        data = bytearray(file_bytes(db))
        page = 4096
        for offset in range(2 * page + 100, min(len(data), 6 * page), 97):
            data[offset] ^= 0x5A  # scribble over table pages, not the header
        db.write_bytes(bytes(data))
        before = file_bytes(db)
        with pytest.raises(FactLogError, match=r"damaged|not an orchestrator journal"):
            await trio.to_thread.run_sync(SqliteJournal(db).open)
        assert file_bytes(db) == before


class TestReadOnly:
    @pytest.mark.daemon
    def test_a_read_only_journal_is_a_clear_error(self, tmp_path: Path) -> None:
        """On a read-only filesystem (a bind mount, made by the test): exit 2 with SQLite's
        reason, and the file unchanged."""
        db = tmp_path / "ro" / "journal.db"
        trio.run(run_team, db)
        before = file_bytes(db)
        mounted = subprocess.run(
            ["mount", "--bind", "-o", "ro", str(db.parent), str(db.parent)],
            capture_output=True,
            check=False,
        )
        if mounted.returncode != 0:
            pytest.skip(f"cannot make a read-only mount here: {mounted.stderr!r}")
        try:
            done = subprocess.run(
                [sys.executable, "-m", "orchestrator", "run", str(DELIVERY), "go", "--db", str(db)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        finally:
            subprocess.run(["umount", str(db.parent)], check=True)
        assert done.returncode == 2, done.stderr
        assert str(db) in done.stderr
        assert "cannot write the journal: it is on a read-only filesystem" in done.stderr
        assert "Traceback" not in done.stderr
        assert file_bytes(db) == before
        # Reading it there still works: sessions, events and graphs of past runs.
        subprocess.run(["mount", "--bind", "-o", "ro", str(db.parent), str(db.parent)], check=True)
        try:
            assert [s.status for s in JournalReader(db).sessions()] == ["completed"]
        finally:
            subprocess.run(["umount", str(db.parent)], check=True)
