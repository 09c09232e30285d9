"""The journal on real files and a real PostgreSQL server: writes, reads, versions, damage,
full disks, snapshots. The tests that take ``journal_db`` run against both databases."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from orchestrator.base import FactLogError, PeerProtocolError
from orchestrator.core import Fact, RunStarted, RunStatus, TeamState, build_graph
from orchestrator.journal import (
    APPLICATION_ID,
    MIGRATIONS,
    PG_SCHEMA_VERSION,
    SCHEMA_VERSION,
    Durability,
    Journal,
    JournalReader,
    PostgresJournal,
    SqliteJournal,
    _group_commit,
    _rows,
    encode_state,
    open_journal,
    open_reader,
    state_entries,
)
from orchestrator.journal._file import _unreadable
from orchestrator.journal._reader import _snapshot
from orchestrator.journal._rows import _Snapshot
from orchestrator.journal.postgres._connection import redacted
from orchestrator.journal.postgres._schema import PG_MIGRATIONS, schema_version
from tests.support.journal import (
    DELIVERY,
    HANDOFF,
    back_to_schema_4,
    run_team,
)
from tests.support.postgres import PostgresServer, direct_sql


def file_bytes(path: Path) -> bytes:
    return path.read_bytes()


class TestWriteAndRead:
    async def test_a_run_reads_back_as_it_was_recorded(self, journal_db: Path | str) -> None:
        """Every fact is on disk, in order; the session is listed with its status and title;
        opening it gives the state the runtime had; the graph checks clean."""
        outcome, runtime, journal = await run_team(journal_db)
        assert outcome.status is RunStatus.COMPLETED
        reader = open_reader(journal_db)
        facts = reader.facts(runtime.session)
        assert [f.sequence for f in facts] == list(range(1, runtime.state.last_sequence + 1))
        (info,) = reader.sessions()
        assert (info.session, info.status, info.title, info.team) == (
            runtime.session,
            "completed",
            "Ship the release notes",
            "delivery",
        )
        assert info.last_sequence == len(facts)
        assert info.team_file == str(DELIVERY)
        assert reader.team_toml(runtime.session)[1] == DELIVERY.read_text()
        opened = reader.open(runtime.session)
        assert opened.chats == runtime.state.chats
        assert opened.tasks == runtime.state.tasks
        assert build_graph(facts).check() == []
        stats = journal.statistics()
        assert stats.facts == len(facts)
        assert stats.transactions <= stats.batches

    async def test_batches_in_flight_share_transactions(self, journal_db: Path | str) -> None:
        """Group commit: three researchers' batches are made durable together."""
        _, _, journal = await run_team(journal_db)
        stats = journal.statistics()
        assert stats.transactions < stats.batches

    @pytest.mark.parametrize("durability", list(Durability))
    async def test_each_durability_sets_sqlite_to_match(
        self, tmp_path: Path, durability: Durability
    ) -> None:
        journal = SqliteJournal(tmp_path / "journal.db", durability=durability)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        (level,) = journal._connection.execute("PRAGMA synchronous").fetchone()
        assert level == {Durability.POWER: 2, Durability.PROCESS: 1}[durability]
        (mode,) = journal._connection.execute("PRAGMA journal_mode").fetchone()
        assert mode == "wal"
        journal._connection.close()

    def test_reading_a_missing_journal_says_how_to_make_one(self, tmp_path: Path) -> None:
        with pytest.raises(FactLogError, match="no journal here"):
            JournalReader(tmp_path / "nope.db").sessions()


class TestVersions:
    def v1_journal(self, path: Path) -> None:
        """A journal as schema 1 wrote it, with one session and one fact."""
        connection = sqlite3.connect(path)
        schema = MIGRATIONS[1]
        assert isinstance(schema, str)
        connection.executescript(schema)
        connection.execute(
            "INSERT INTO sessions VALUES ('ahp-session:/1', 'old', 'an old run', 'completed', "
            "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1)"
        )
        fact = {
            "sequence": 1,
            "session": "ahp-session:/1",
            "channel": "ahp-session:/1",
            "at": "2026-01-01T00:00:00.000Z",
            "action": {"type": "session/titleChanged", "title": "an old run"},
        }
        connection.execute(
            "INSERT INTO facts (session, sequence, channel, at, type, fact) VALUES "
            "('ahp-session:/1', 1, 'ahp-session:/1', '2026-01-01T00:00:00.000Z', "
            "'session/titleChanged', ?)",
            (json.dumps(fact),),
        )
        connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
        connection.execute("PRAGMA user_version=1")
        connection.commit()
        connection.close()

    async def test_an_older_journal_is_migrated_and_keeps_its_facts(self, tmp_path: Path) -> None:
        db = tmp_path / "old.db"
        self.v1_journal(db)
        journal = SqliteJournal(db)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        journal._connection.close()
        (version,) = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()
        assert version == SCHEMA_VERSION
        reader = JournalReader(db)
        assert [s.title for s in reader.sessions()] == ["an old run"]
        assert [(f.type, f.origin) for f in reader.facts("ahp-session:/1")] == [
            ("session/titleChanged", None)  # written before facts kept a client's origin
        ]

    async def test_a_failed_migration_leaves_the_file_as_it_was(self, tmp_path: Path) -> None:
        """The migration is one transaction: one that cannot complete changes nothing."""
        db = tmp_path / "old.db"
        self.v1_journal(db)
        connection = sqlite3.connect(db)
        connection.execute("CREATE TABLE snapshots (x)")  # makes migration 2 fail half-way
        connection.commit()
        connection.close()
        with pytest.raises(FactLogError, match="snapshots already exists"):
            await trio.to_thread.run_sync(SqliteJournal(db).open)
        connection = sqlite3.connect(db)
        assert connection.execute("PRAGMA user_version").fetchone() == (1,)
        columns = [row[1] for row in connection.execute("PRAGMA table_info(sessions)")]
        assert "team_toml" not in columns

    async def test_a_newer_journal_is_refused_untouched(self, tmp_path: Path) -> None:
        db = tmp_path / "new.db"
        connection = sqlite3.connect(db)
        connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        connection.execute("CREATE TABLE future (x)")
        connection.commit()
        connection.close()
        before = file_bytes(db)
        with pytest.raises(FactLogError, match="written by a newer orchestrator"):
            await trio.to_thread.run_sync(SqliteJournal(db).open)
        with pytest.raises(FactLogError, match="newer orchestrator"):
            JournalReader(db).sessions()
        assert file_bytes(db) == before
        assert not db.with_name("new.db-wal").exists()

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


class TestFailures:
    async def test_a_full_disk_stops_the_run_and_keeps_what_was_acknowledged(
        self, tmp_path: Path
    ) -> None:
        """When the journal cannot grow, the run stops with SQLite's reason; the file holds
        every acknowledged fact, in order, and nothing half-written."""
        db = tmp_path / "journal.db"
        outcome, runtime, _ = await run_team(db, max_bytes=96 * 1024)
        assert outcome.status is RunStatus.FAILED
        assert "database or disk is full" in outcome.error
        facts = JournalReader(db).facts(runtime.session)
        assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
        assert len(facts) == runtime.state.last_sequence
        assert TeamState.fold(runtime.session, facts).chats == runtime.state.chats

    async def test_a_failure_is_refused_only_after_earlier_batches_are_reported_durable(
        self, tmp_path: Path
    ) -> None:
        """A batch committed before a failed transaction is reported durable before the
        journal refuses anything for the failure: the runtime, which fails every batch in
        flight when a submission is refused, never takes a durable batch for a failed one.
        The trio thread is held (no checkpoint) while the writer commits one transaction
        and fails the next, so neither has been reported yet."""
        journal = SqliteJournal(tmp_path / "journal.db", max_bytes=64 * 1024)
        session = "ahp-session:/full"

        def fact(sequence: int, prompt: str) -> Fact:
            started = RunStarted(
                run="run-1",
                team="t",
                topology="flat",
                parallel_budget=1,
                coordinator="lead",
                prompt=prompt,
                task="task-1",
            )
            at = "2026-11-24T00:00:00.000Z"
            return Fact(sequence=sequence, session=session, channel=session, at=at, action=started)

        def hold_until(written: Callable[[], bool]) -> None:
            deadline = time.monotonic() + 10
            while not written():
                assert time.monotonic() < deadline, "the writer thread did not get there"
                time.sleep(0.001)  # blocking on purpose: the trio thread must not checkpoint

        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            durable = journal.submit([fact(1, "small")])
            hold_until(lambda: journal.statistics().transactions == 1)
            too_big = journal.submit([fact(2, "x" * 100_000)])
            hold_until(lambda: journal._write_failed is not None)
            assert not journal.statistics().failed, "not while a durable batch is unreported"
            behind = journal.submit([fact(3, "small")])
            assert not durable.done()
            with trio.fail_after(10):
                await behind.wait()
            assert durable.error is None
            assert too_big.error is not None
            assert behind.error is too_big.error
            assert journal.failed is too_big.error
            with pytest.raises(FactLogError, match="database or disk is full"):
                journal.submit([fact(4, "small")])
            services.cancel_scope.cancel()
        assert [f.sequence for f in JournalReader(journal.path).facts(session)] == [1]

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


class TestSnapshots:
    async def test_opening_a_session_starts_from_its_snapshot(self, journal_db: Path | str) -> None:
        """With snapshots every 20 facts the latest is kept; opening from it equals a fold."""
        db = journal_db
        _, runtime, journal = await run_team(db, snapshot_every=20)
        assert journal.statistics().snapshots >= 3
        with direct_sql(db) as connection:
            rows = connection.execute("SELECT sequence FROM snapshots").fetchall()
        assert len(rows) == 1
        assert rows[0][0] >= runtime.state.last_sequence - 20
        reader = open_reader(db)
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, reader.facts(runtime.session))
        assert opened.chats == folded.chats
        assert opened.tasks == folded.tasks
        assert opened.approvals == folded.approvals
        assert opened.session == folded.session
        assert opened.run == folded.run
        assert opened.last_sequence == folded.last_sequence

    async def test_a_snapshot_writes_again_only_the_parts_that_changed(
        self, journal_db: Path | str
    ) -> None:
        """Parts unchanged since an earlier snapshot keep the sequence of the snapshot that
        wrote them (a finished worker's chat is not written again); opening still equals
        the fold."""
        db = journal_db
        _, runtime, journal = await run_team(db, snapshot_every=10)
        with direct_sql(db) as connection:
            ((latest,),) = connection.execute("SELECT sequence FROM snapshots").fetchall()
            kinds = dict(
                connection.execute(
                    "SELECT kind, count(*) FROM snapshot_parts WHERE sequence < ? GROUP BY kind",
                    (latest,),
                ).fetchall()
            )
        assert kinds.get("chat", 0) >= 1, kinds
        assert kinds.get("turns", 0) >= 1, kinds
        assert journal.statistics().snapshots >= 6
        assert journal._snapshots._written == {}, "a finished run's state is let go"
        reader = open_reader(db)
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, reader.facts(runtime.session))
        assert opened.chats == folded.chats
        assert list(opened.tasks.items()) == list(folded.tasks.items())
        assert opened.last_sequence == folded.last_sequence

    async def test_a_session_forgotten_is_let_go_and_its_next_snapshot_written_whole(
        self, tmp_path: Path, journal_db: Path | str
    ) -> None:
        """A session that left the process's memory (``forget_session``, the daemon's call
        when it puts one away) is kept nothing of: the values of its last snapshot are let
        go, and its next snapshot, its run going on, is written whole; opening the session
        from it equals the fold."""
        _, runtime, _ = await run_team(tmp_path / "source.db")
        facts = JournalReader(tmp_path / "source.db").facts(runtime.session)
        half = len(facts) // 2
        journal: Journal = open_journal(journal_db, snapshot_every=1)
        state = TeamState(runtime.session)

        async def commit(batch: list[Any], *, snapshots: int) -> None:
            """Write ``batch``, then the snapshot it makes due: the ``snapshots``-th."""
            ticket = journal.submit(batch)
            await ticket.wait()
            for fact in batch:
                state.apply(fact)
            journal.committed(state)
            with trio.fail_after(10):
                while journal.statistics().snapshots < snapshots:  # noqa: ASYNC110 (its thread)
                    await trio.sleep(0.01)

        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await commit(facts[:half], snapshots=1)
            assert journal.kept_sessions() == 1, "its snapshot's values, for the next one"
            journal.forget_session(runtime.session)
            with trio.fail_after(10):
                while journal.kept_sessions():  # noqa: ASYNC110 (the writer's thread)
                    await trio.sleep(0.01)
            await commit(facts[half:-1], snapshots=2)  # the last fact ends the run: not it
            services.cancel_scope.cancel()
        with direct_sql(journal_db) as connection:
            ((sequence,),) = connection.execute("SELECT sequence FROM snapshots").fetchall()
            ((oldest,),) = connection.execute(
                "SELECT min(sequence) FROM snapshot_parts WHERE session = ?", (runtime.session,)
            ).fetchall()
        assert sequence == oldest == facts[-2].sequence, "written whole"
        reader = open_reader(journal_db)
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, reader.facts(runtime.session))
        assert opened.chats == folded.chats
        assert list(opened.tasks.items()) == list(folded.tasks.items())
        assert opened.last_sequence == folded.last_sequence == facts[-2].sequence

    async def test_a_snapshot_of_more_parts_than_a_statement_takes_is_written_whole(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The writer encodes and inserts a snapshot's parts a statement's rows at a time:
        with room for three rows a statement, every part of a snapshot of many is on file,
        and opening the session equals the fold."""
        monkeypatch.setattr(_rows, "ROWS_PER_INSERT", 3)
        db = tmp_path / "journal.db"
        _, runtime, journal = await run_team(db, snapshot_every=10)
        assert journal.statistics().snapshots >= 1
        with direct_sql(db) as connection:
            ((parts,),) = connection.execute("SELECT count(*) FROM snapshot_parts").fetchall()
        assert parts > 3
        reader = open_reader(db)
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, reader.facts(runtime.session))
        assert opened.chats == folded.chats
        assert list(opened.tasks.items()) == list(folded.tasks.items())

    async def test_closing_hands_freed_memory_back_once_the_connection_is_closed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The writer thread, once it closed its connection, asks the C library to give
        back what it freed (release_free_memory), once."""
        closed_when_called: list[bool] = []
        journal = SqliteJournal(tmp_path / "journal.db")

        def released() -> bool:
            closed_when_called.append(journal._connection is None)
            return True

        monkeypatch.setattr(_group_commit, "release_free_memory", released)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            assert closed_when_called == []
            services.cancel_scope.cancel()
        assert closed_when_called == [True]

    async def test_a_session_is_snapshot_once_per_fact_per_entry_at_most(
        self, tmp_path: Path
    ) -> None:
        """Asked after every fact with ``snapshot_every=1``, the journal snapshots a session
        only once as many facts as the state has entries have been committed since its
        previous snapshot: a large session is not walked and encoded again after every few
        facts."""
        _, runtime, _ = await run_team(tmp_path / "journal.db")
        facts = JournalReader(tmp_path / "journal.db").facts(runtime.session)
        journal = SqliteJournal(tmp_path / "other.db", snapshot_every=1)
        state = TeamState(runtime.session)
        for fact in facts:
            state.apply(fact)
            journal.committed(state)
        queued = []
        while not journal._queue.empty():
            item = journal._queue.get_nowait()
            assert isinstance(item, _Snapshot)
            queued.append(item.state)
        assert 3 <= len(queued) < len(facts) // 4
        previous = 0
        for snapshot in queued:
            assert snapshot.last_sequence - previous == max(1, state_entries(snapshot))
            previous = snapshot.last_sequence

    async def test_a_schema_3_snapshot_is_converted_to_parts(self, tmp_path: Path) -> None:
        """A schema-3 journal's whole-state snapshot becomes parts when the file is migrated,
        and the session opens from them as from a fold."""
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db, snapshot_every=20)
        reader = JournalReader(db)
        facts = reader.facts(runtime.session)
        at = facts[len(facts) // 2 - 1].sequence
        connection = sqlite3.connect(db)
        back_to_schema_4(connection)
        connection.execute("DROP TABLE snapshot_parts")
        connection.execute("DELETE FROM snapshots")
        old = encode_state(TeamState.fold(runtime.session, facts[: len(facts) // 2]))
        connection.execute(
            "INSERT INTO snapshots (session, sequence, state) VALUES (?, ?, ?)",
            (runtime.session, at, json.dumps(old)),
        )
        connection.execute("PRAGMA user_version=3")
        connection.commit()
        connection.close()
        journal = SqliteJournal(db)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        journal._connection.close()
        connection = sqlite3.connect(db)
        assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        (header,) = connection.execute("SELECT state FROM snapshots").fetchone()
        assert json.loads(header)["sequence"] == at
        (parts,) = connection.execute("SELECT count(*) FROM snapshot_parts").fetchone()
        assert parts > 0
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, facts)
        assert opened.chats == folded.chats
        assert opened.approvals == folded.approvals
        assert opened.session == folded.session

    async def test_a_part_newer_than_its_header_is_refused(self, tmp_path: Path) -> None:
        """Header and parts are written in one transaction and read in one; a part newer
        than the header (a snapshot read half) would fold the facts after it twice."""
        db = tmp_path / "journal.db"
        await run_team(db, snapshot_every=20)
        connection = sqlite3.connect(db)
        (sequence, header) = connection.execute("SELECT sequence, state FROM snapshots").fetchone()
        parts = connection.execute(
            "SELECT kind, name, position, sequence, data FROM snapshot_parts"
        ).fetchall()
        assert _snapshot(sequence, header, parts).last_sequence == sequence
        newer = [
            (*part[:3], sequence + 1, part[4]) if part[0] == "chat" else part for part in parts
        ]
        with pytest.raises(PeerProtocolError, match="a part is newer than its snapshot"):
            _snapshot(sequence, header, newer)

    @pytest.mark.parametrize(
        "damage",
        [
            "UPDATE snapshots SET state = '{\"format\": 99}'",
            "UPDATE snapshot_parts SET data = 'not json' WHERE kind = 'turns'",
            "DELETE FROM snapshot_parts WHERE kind = 'turns'",
            "UPDATE snapshot_parts SET data = '{}' WHERE kind = 'task'",
            "UPDATE snapshot_parts SET sequence = sequence + 1000 WHERE kind = 'chat'",
        ],
    )
    async def test_a_damaged_snapshot_is_only_a_cache(
        self, journal_db: Path | str, damage: str
    ) -> None:
        _, runtime, _ = await run_team(journal_db, snapshot_every=20)
        with direct_sql(journal_db) as connection:
            connection.execute(damage)
        opened = open_reader(journal_db).open(runtime.session)
        assert opened.chats == runtime.state.chats
        assert opened.last_sequence == runtime.state.last_sequence


@pytest.mark.daemon
class TestCommandLine:
    def orchestrator(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def test_sessions_events_and_graph_of_past_runs(self, journal_db: Path | str) -> None:
        """``--db`` a SQLite file or ``postgresql://...``: the same commands, the same answers."""
        db = str(journal_db)
        first = self.orchestrator("run", str(HANDOFF), "refund", "--db", db)
        second = self.orchestrator("run", str(DELIVERY), "Ship it", "--db", db, "--approve", "auto")
        assert first.returncode == second.returncode == 0
        listed = json.loads(self.orchestrator("sessions", "--db", db, "--json").stdout)
        assert [(s["team"], s["status"], s["title"]) for s in listed] == [
            ("support", "completed", "refund"),
            ("delivery", "completed", "Ship it"),
        ]
        assert all(s["session"].startswith("ahp-session:/") and s["createdAt"] for s in listed)
        short = listed[1]["session"].removeprefix("ahp-session:/")[:8]
        facts = self.orchestrator("events", short, "--db", db, "--json").stdout.splitlines()
        assert json.loads(facts[0])["action"]["type"] == "team/runStarted"
        envelopes = self.orchestrator("events", short, "--db", db, "--format", "agent-ui", "--json")
        assert json.loads(envelopes.stdout.splitlines()[-1])["type"] == "run.finished"
        checked = self.orchestrator("graph", short, "--db", db, "--check")
        assert checked.returncode == 0
        assert "is consistent" in checked.stdout
        as_json = json.loads(
            self.orchestrator("graph", short, "--db", db, "--check", "--json").stdout
        )
        assert as_json == {"source": listed[1]["session"], "ok": True, "violations": []}

        # For a person: one line per fact, numbered, with the agent and what happened.
        lines = self.orchestrator("events", short, "--db", db).stdout.splitlines()
        assert len(lines) == len(facts)
        assert lines[0].split()[0::3] == ["1", "team/runStarted"]
        assert any(line.split()[2] == "researcher" and "chat/turnStarted" in line for line in lines)
        assert any("+ lead joined (coordinator)" in line for line in lines)
        people = self.orchestrator("events", short, "--db", db, "--format", "agent-ui")
        assert people.stdout.splitlines()[-1].split()[-1] == "run.finished"

    def test_an_unknown_session_is_named(self, tmp_path: Path) -> None:
        db = str(tmp_path / "journal.db")
        assert self.orchestrator("run", str(HANDOFF), "refund", "--db", db).returncode == 0
        done = self.orchestrator("events", "nope", "--db", db)
        assert done.returncode == 2
        assert "no session 'nope'" in done.stderr


class TestPostgresInput:
    """What ``--db postgresql://...`` says when it cannot be used: each a clear error naming
    what was wrong, with the README's exit status (2: bad input, 3: unreachable)."""

    def orchestrator(self, *args: str) -> subprocess.CompletedProcess[str]:
        return TestCommandLine().orchestrator(*args)

    @pytest.mark.daemon
    def test_a_url_that_does_not_parse(self) -> None:
        done = self.orchestrator("sessions", "--db", "postgresql://me@127.0.0.1:port/journal")
        assert done.returncode == 2, done.stderr
        assert "this PostgreSQL URL does not parse" in done.stderr
        done = self.orchestrator("sessions", "--db", "postgresql://me@127.0.0.1:5432")
        assert done.returncode == 2, done.stderr
        assert "names no database" in done.stderr

    @pytest.mark.daemon
    def test_a_server_that_is_not_there(self) -> None:
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"postgresql://me:secret@127.0.0.1:{port}/journal"
        for command in (("sessions",), ("run", str(HANDOFF), "refund")):
            done = self.orchestrator(*command, "--db", url)
            assert done.returncode == 3, done.stderr
            assert "cannot reach the PostgreSQL server" in done.stderr
            assert f"127.0.0.1:{port}" in done.stderr
            assert "secret" not in done.stderr, "the password is never shown"

    def test_a_database_that_does_not_exist(self, postgres_server: PostgresServer) -> None:
        url = postgres_server.url("no_such_database")
        for command in (("sessions",), ("run", str(HANDOFF), "refund")):
            done = self.orchestrator(*command, "--db", url)
            assert done.returncode == 2, done.stderr
            assert "no such database" in done.stderr
            assert "no_such_database" in done.stderr

    def test_an_empty_database_and_a_foreign_one(self, postgres_database: str) -> None:
        done = self.orchestrator("sessions", "--db", postgres_database)
        assert done.returncode == 2, done.stderr
        assert "no journal here" in done.stderr
        with direct_sql(postgres_database) as connection:
            connection.execute("CREATE TABLE facts (id integer)")
        done = self.orchestrator("run", str(HANDOFF), "refund", "--db", postgres_database)
        assert done.returncode == 2, done.stderr
        assert "not an orchestrator journal" in done.stderr
        with direct_sql(postgres_database) as connection:
            (tables,) = connection.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == 1, "nothing was written to it"

    def test_prune_of_a_database_without_a_journal_says_so(self, postgres_database: str) -> None:
        """prune works on PostgreSQL too (tests/journal/test_prune.py); on an empty database it
        says there is no journal there (exit 2), and creates nothing."""
        done = self.orchestrator("prune", "--older-than", "30d", "--db", postgres_database)
        assert done.returncode == 2, done.stderr
        assert f"{postgres_database}: no journal here" in done.stderr
        with direct_sql(postgres_database) as connection:
            (tables,) = connection.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == 0

    def test_a_password_never_names_the_journal(self) -> None:
        assert redacted("postgresql://me:secret@db.example:5432/j") == (
            "postgresql://me:***@db.example:5432/j"
        )
        assert redacted("postgresql://me@db.example/j") == "postgresql://me@db.example/j"
        assert redacted("postgresql://me@db.example/j?sslmode=require&password=secret") == (
            "postgresql://me@db.example/j?sslmode=require&password=***"
        )
        assert redacted("postgres://db/j?PassWord=a%26b&sslpassword=c") == (
            "postgres://db/j?PassWord=***&sslpassword=***"
        )


class TestPostgresSchema:
    """The PostgreSQL journal's own schema: its version table, what it refuses, what two
    nodes opening one new database at once do, and what --durability sets."""

    @pytest.mark.parametrize(("durability", "expected"), [("power", "on"), ("process", "off")])
    async def test_each_durability_sets_the_writer_s_synchronous_commit(
        self, postgres_database: str, durability: str, expected: str
    ) -> None:
        journal = PostgresJournal(postgres_database, durability=Durability(durability))
        await trio.to_thread.run_sync(journal.open)
        try:
            (setting,) = journal._connection.execute("SHOW synchronous_commit").fetchone()
        finally:
            journal.close()
        assert setting == expected

    async def test_two_nodes_opening_a_new_database_at_once_create_it_once(
        self, postgres_database: str
    ) -> None:
        journals = [open_journal(postgres_database) for _ in range(4)]
        async with trio.open_nursery() as nursery:
            for journal in journals:
                nursery.start_soon(trio.to_thread.run_sync, journal.open)
        for journal in journals:
            journal.close()
        with direct_sql(postgres_database) as connection:
            versions = connection.execute("SELECT version FROM journal_migrations").fetchall()
        assert versions == [(version,) for version in range(1, PG_SCHEMA_VERSION + 1)]
        assert open_reader(postgres_database).sessions() == []

    def test_a_migration_committed_between_its_two_questions_is_a_journal(
        self, postgres_database: str
    ) -> None:
        """Opening asks whether the migrations table is there, then, if not, whether a
        journal's tables are: another node's migration (one transaction) committing between
        the two made a new journal look like a foreign database (a flaky refusal when two
        daemons start on a new database at once)."""

        class CommitsTheOtherAfterOneQuestion:
            def __init__(self, connection: Any, other: Any) -> None:
                self.connection, self.other, self.asked = connection, other, 0

            def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
                found = self.connection.execute(sql, params)
                self.asked += 1
                if self.asked == 1:
                    self.other.execute("COMMIT")
                return found

        with direct_sql(postgres_database) as other, direct_sql(postgres_database) as here:
            other.execute("BEGIN")
            other.execute("CREATE TABLE journal_migrations (version integer PRIMARY KEY)")
            for target in range(1, PG_SCHEMA_VERSION + 1):
                for statement in PG_MIGRATIONS[target]:
                    other.execute(statement)
                other.execute("INSERT INTO journal_migrations (version) VALUES (?)", (target,))
            asking = CommitsTheOtherAfterOneQuestion(here, other)
            assert schema_version(asking, postgres_database) == PG_SCHEMA_VERSION
            assert asking.asked >= 3, "the first question was asked before the commit"

    async def test_a_newer_journal_is_refused_untouched(self, postgres_database: str) -> None:
        journal = open_journal(postgres_database)
        await trio.to_thread.run_sync(journal.open)
        journal.close()
        with direct_sql(postgres_database) as connection:
            connection.execute(
                "INSERT INTO journal_migrations (version) VALUES (?)", (PG_SCHEMA_VERSION + 1,)
            )
        for opening in (
            open_journal(postgres_database).open,
            open_reader(postgres_database).sessions,
        ):
            with pytest.raises(FactLogError, match="written by a newer orchestrator"):
                opening()

    def test_the_statements_question_marks_are_parameters_and_percents_are_text(
        self, postgres_database: str
    ) -> None:
        """The journal's statements are written with SQLite's ``?``; on PostgreSQL each is a
        parameter, and a ``%`` stays the character it is, with parameters or without."""
        with direct_sql(postgres_database) as connection:
            assert connection.execute("SELECT '100%'").fetchone() == ("100%",)
            assert connection.execute("SELECT '50%' || ?", ("?",)).fetchone() == ("50%?",)
