"""The journal contains faults: what one batch holds fails that batch and its session only,
the writer never dies silently, a stopping journal waits for its backlog a bounded time, a
file another connection locked is waited for a bounded time, and the file can be trusted
(checksummed facts, owner-only mode, the whole-file check once).
The tests that take ``journal_db`` run on SQLite and on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
import trio.testing
from hypothesis import assume, given
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatResponsePartAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatSummary,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    SessionStatus,
    UserChatOrigin,
)
from orchestrator.base import FactLogError
from orchestrator.core import Action, Fact, MemberJoined, RunStarted, TeamState
from orchestrator.journal import (
    SCHEMA_VERSION,
    Journal,
    JournalReader,
    SqliteJournal,
    _group_commit,
    fact_checksum,
    open_journal,
    open_reader,
    state_entries,
)
from orchestrator.journal._checksum import checked_fact_text as _checked
from orchestrator.journal._rows import COPY_AT_LEAST, _Snapshot
from tests.support.journal import (
    AT,
    DELIVERY,
    A,
    B,
    back_to_schema_4,
    run_team,
    started,
    view,
    wait_all,
)
from tests.support.postgres import direct_sql


def conversation(session: str, chat: str) -> list[Fact]:
    """A run whose coordinator's first turn streams an answer: 12 facts, the turn's start
    the 4th, its end the last."""
    summary = ChatSummary(
        resource=chat,
        title="lead",
        status=SessionStatus.IDLE,
        modified_at=AT,
        origin=UserChatOrigin(),
    )
    message = Message(text="a question", origin=MessageOrigin(kind=MessageKind.USER))
    part = MarkdownResponsePart(id="part-1", content="The answer")
    actions: list[tuple[str, Action]] = [
        (session, SessionChatAddedAction(summary=summary)),
        (session, MemberJoined(chat=chat, agent="lead", role="coordinator", task="task-1")),
        (chat, ChatTurnStartedAction(turn_id="turn-1", started_at=AT, message=message)),
        (chat, ChatResponsePartAction(turn_id="turn-1", part=part)),
        *[
            (chat, ChatDeltaAction(turn_id="turn-1", part_id="part-1", content=" is"))
            for _ in range(6)
        ],
        (chat, ChatTurnCompleteAction(turn_id="turn-1", duration=1)),
    ]
    return [started(session)] + [
        Fact(sequence=n, session=session, channel=channel, at=AT, action=action)
        for n, (channel, action) in enumerate(actions, start=2)
    ]


def sequences(db: Path | str, session: str) -> list[int]:
    return [f.sequence for f in open_reader(db).facts(session)]


class TestOneBatchFailsAlone:
    async def test_text_that_cannot_be_encoded_fails_its_session_and_no_other(
        self, journal_db: Path | str
    ) -> None:
        """A lone surrogate in a fact (it cannot be UTF-8) fails that batch with an error
        naming the session, the facts and what was wrong; the session's later batches fail
        with it and its next submission is refused; the other session goes on writing, and
        the journal as a whole stays healthy."""
        journal: Journal = open_journal(journal_db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            a1, b1 = journal.submit([started(A)]), journal.submit([started(B)])
            bad = journal.submit([view(A, 2, "bad \ud800 text"), view(A, 3)])
            b2 = journal.submit([view(B, 2)])
            a4 = journal.submit([view(A, 4)])
            await wait_all(a1, b1, bad, b2, a4)
            assert (a1.error, b1.error, b2.error) == (None, None, None)
            assert bad.error is not None
            message = str(bad.error)
            assert A in message
            assert "facts 2 to 3" in message
            assert "UnicodeEncodeError" in message
            assert "\ud800" not in message, "the message itself is printable"
            assert a4.error is bad.error, "later batches of the session fail with it"
            with pytest.raises(FactLogError, match="can record nothing more"):
                journal.submit([view(A, 5)])
            await wait_all(journal.submit([view(B, 3)]))
            assert journal.failed is None
            assert journal.session_failed(B) is None
            assert journal.session_failed(A) is bad.error
            services.cancel_scope.cancel()
        assert sequences(journal_db, A) == [1]
        assert sequences(journal_db, B) == [1, 2, 3]

    async def test_a_duplicate_sequence_fails_that_session_and_the_others_commit(
        self, journal_db: Path | str
    ) -> None:
        """A conflict on (session, sequence) is one session's problem: its batch fails with
        the database's reason and the session's name, the good batches queued with it (in
        the same transaction or not) commit, and the journal takes facts of other sessions
        on. (On PostgreSQL this is also what a second writer of a session meets.)"""
        journal: Journal = open_journal(journal_db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            # No checkpoint between these: the writer takes them in as few groups as it can.
            b1 = journal.submit([started(B)])
            again = journal.submit([started(A, "again")])
            b2 = journal.submit([view(B, 2)])
            await wait_all(b1, again, b2)
            assert again.error is not None
            assert re.search(
                "UNIQUE constraint failed|duplicate key value violates unique constraint",
                str(again.error),
            )
            assert f"session {A}" in str(again.error)
            assert (b1.error, b2.error) == (None, None)
            assert journal.failed is None
            await wait_all(journal.submit([view(B, 3)]))
            services.cancel_scope.cancel()
        assert sequences(journal_db, B) == [1, 2, 3]
        assert open_reader(journal_db).facts(A) == [started(A)]

    async def test_large_batches_are_written_whole_and_one_that_clashes_fails_alone(
        self, journal_db: Path | str
    ) -> None:
        """Batches of many facts (copied in on PostgreSQL, ``COPY_AT_LEAST``) read back as
        they were submitted; one whose sequences clash with facts on file fails alone, with
        the database's reason, and the batches queued with it commit."""
        assert COPY_AT_LEAST < 100
        journal: Journal = open_journal(journal_db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            first = journal.submit([started(A), *(view(A, n) for n in range(2, 101))])
            b1 = journal.submit([started(B), *(view(B, n) for n in range(2, 101))])
            clash = journal.submit([view(A, n) for n in range(60, 160)])
            b2 = journal.submit([view(B, n) for n in range(101, 201)])
            await wait_all(first, b1, clash, b2)
            assert (first.error, b1.error, b2.error) == (None, None, None)
            assert clash.error is not None
            assert re.search("UNIQUE constraint failed|duplicate key value", str(clash.error))
            services.cancel_scope.cancel()
        assert sequences(journal_db, A) == list(range(1, 101))
        assert sequences(journal_db, B) == list(range(1, 201))
        assert [f.action for f in open_reader(journal_db).facts(B)][1:] == [
            view(B, n).action for n in range(2, 201)
        ]

    async def test_a_snapshot_that_cannot_be_written_is_skipped(
        self, journal_db: Path | str
    ) -> None:
        """A snapshot is only a cache: one that cannot be stored is logged and skipped, and
        no session fails for it."""
        journal: Journal = open_journal(journal_db, snapshot_every=1)
        state = TeamState(A)
        state.apply(started(A, "bad \ud800 prompt"))  # in memory only: a bug's state, say
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            with structlog.testing.capture_logs() as logs:
                journal.committed(state)
                b1 = journal.submit([started(B)])
                await wait_all(b1)
            assert b1.error is None
            assert journal.failed is None
            assert journal.session_failed(A) is None
            assert [e["session"] for e in logs if e["event"] == "journal skipped a snapshot"] == [A]
            services.cancel_scope.cancel()
        with direct_sql(journal_db) as connection:
            assert connection.execute("SELECT count(*) FROM snapshots").fetchone() == (0,)
        assert sequences(journal_db, B) == [1]

    async def test_a_full_disk_still_stops_the_whole_journal(self, tmp_path: Path) -> None:
        """A fault of the file (here: it may not grow) is not one session's: the journal
        fails as a whole, with SQLite's reason, for every session."""
        journal = SqliteJournal(tmp_path / "journal.db", max_bytes=64 * 1024)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            too_big = journal.submit([started(B, "x" * 100_000)])
            await wait_all(too_big)
            assert too_big.error is not None
            assert journal.failed is too_big.error
            assert "the journal failed: database or disk is full" in str(journal.failed)
            with pytest.raises(FactLogError, match="disk is full"):
                journal.submit([view(A, 2)])
            services.cancel_scope.cancel()


class _WriterBug(BaseException):
    """Not an Exception: what no error barrier of the writer catches as one item's fault."""


class TestTheWriterNeverDiesSilently:
    async def test_a_writer_that_dies_fails_the_journal_and_every_ticket(
        self, journal_db: Path | str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The writer thread ending on what it cannot contain fails the journal with the
        reason (what /healthz reports), fails every batch in hand or queued, refuses later
        ones, and the journal still stops at once when cancelled."""
        journal: Journal = open_journal(journal_db)

        def broken(*args: object) -> None:
            raise _WriterBug("out of its depth")

        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            # Where this journal's writer looks it up: the module of its _write_rows.
            writer_module = sys.modules[type(journal)._write_rows.__module__]  # type: ignore[attr-defined]
            monkeypatch.setattr(writer_module, "_write_group", broken)
            tickets = [journal.submit([view(A, n)]) for n in range(2, 6)]
            await wait_all(*tickets)
            assert all(t.error is not None for t in tickets)
            assert journal.failed is not None
            assert "the journal's writer stopped: _WriterBug: out of its depth" in str(
                journal.failed
            )
            with pytest.raises(FactLogError, match="writer stopped"):
                journal.submit([view(B, 1)])
            services.cancel_scope.cancel()
        assert sequences(journal_db, A) == [1]


class TestBoundedShutdown:
    async def test_a_stopping_journal_waits_for_its_backlog_a_bounded_time(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Cancelled with a backlog it cannot write within ``drain_limit``, the journal
        writes the transaction in hand and fails the rest (never acknowledged): every ticket
        completes, the file holds exactly the batches reported durable, in order."""
        journal = SqliteJournal(tmp_path / "journal.db", drain_limit=1.0)
        # The writer's first transaction waits until the drain limit has passed (the stop
        # gave up on the backlog): on a machine where the writer thread kept up with the
        # submissions, the whole backlog could otherwise be written in time, and the test
        # would see nothing cut short.
        write_together, stop_writing = journal._write_together, journal.stop_writing
        gave_up = threading.Event()

        def write_after_the_limit(connection: sqlite3.Connection, group: Any) -> None:
            gave_up.wait()
            write_together(connection, group)

        def give_up() -> None:
            stop_writing()
            gave_up.set()

        journal._write_together = write_after_the_limit  # type: ignore[method-assign]
        journal.stop_writing = give_up  # type: ignore[method-assign]
        tickets = []
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            tickets.append(journal.submit([started(A)]))
            sequence = 2
            for _ in range(400):  # 100,000 facts: more than a few transactions
                batch = [view(A, sequence + n, "y" * 200) for n in range(250)]
                tickets.append(journal.submit(batch))
                sequence += 250
            services.cancel_scope.cancel()
        assert trio.current_time() <= 1.0 + 1e-9, "no longer than the limit in trio time"
        assert all(t.done() for t in tickets)
        durable = [t for t in tickets if t.error is None]
        assert durable == tickets[: len(durable)], "what is durable is a prefix"
        assert len(durable) < len(tickets), "the backlog was cut short"
        assert all(
            "closed before this batch was written" in str(t.error) for t in tickets[len(durable) :]
        )
        assert sequences(journal.path, A) == list(range(1, 2 + 250 * (len(durable) - 1)))

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


def busy() -> sqlite3.OperationalError:
    """The error SQLite's busy handler ends with: another connection holds the lock."""
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = sqlite3.SQLITE_BUSY
    error.sqlite_errorname = "SQLITE_BUSY"
    return error


def locked_by_another(db: Path) -> sqlite3.Connection:
    """A second connection holding ``db``'s write lock (as the sqlite3 shell can, or a
    backup into the file) until it rolls back."""
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("BEGIN EXCLUSIVE")
    return connection


def noted_waits(journal: SqliteJournal) -> threading.Event:
    """Set when the journal's writer first tries to take the lock again (it is waiting:
    :attr:`~SqliteJournal.reconnecting` was set before)."""
    waiting = threading.Event()
    try_again = journal._reconnect

    def noted() -> Any:
        waiting.set()
        return try_again()

    journal._reconnect = noted  # type: ignore[method-assign]
    return waiting


async def until_set(event: threading.Event) -> None:
    assert await trio.to_thread.run_sync(event.wait, 10), "real seconds: the writer is a thread"


def logged(logs: Sequence[Mapping[str, Any]], event: str) -> list[Mapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


class BusyAtCommit(SqliteJournal):
    """A journal whose next ``COMMIT`` says SQLITE_BUSY once (``busy_next_commit``), ``when``:
    ``after-commit`` (SQLite committed; only the answer is lost), ``before-commit`` (the
    transaction still open, as SQLite leaves it), or ``rollback-refused`` (and the
    ``ROLLBACK`` after it says SQLITE_BUSY too, so the transaction stays open)."""

    def __init__(self, path: Path, *, when: str, **options: Any) -> None:
        super().__init__(path, **options)
        self.when = when
        self.busy_next_commit = False
        self.refuse_rollback = False

    def _connect(self) -> Any:
        return _BusyAtCommit(self, super()._connect())


class _BusyAtCommit:
    def __init__(self, journal: BusyAtCommit, connection: sqlite3.Connection) -> None:
        self.journal = journal
        self.connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        journal = self.journal
        if sql == "COMMIT" and journal.busy_next_commit:
            journal.busy_next_commit = False
            if journal.when == "after-commit":
                self.connection.execute(sql)
            journal.refuse_rollback = journal.when == "rollback-refused"
            raise busy()
        if sql == "ROLLBACK" and journal.refuse_rollback:
            journal.refuse_rollback = False
            raise busy()
        return self.connection.execute(sql, parameters)


class TestALockedFile:
    """Another connection holds the file's write lock (the sqlite3 shell, a backup): the
    writer waits for it, for ``reconnect_for`` at most, and writes every batch once, in
    order. The lock is a real one and the writer a thread: these tests wait in real time
    (a ``busy_timeout`` of 0.05 s, bounded by ``fail_after``)."""

    def test_a_lock_is_waited_for_and_a_fault_of_the_file_is_not(self) -> None:
        """SQLITE_BUSY and SQLITE_LOCKED, with their extended codes, are another
        connection's lock: the writer waits. A full disk, an I/O error or a constraint
        are not; the file's faults still fail the journal at once."""
        journal = SqliteJournal("journal.db")
        for code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, 517, 262):  # BUSY_SNAPSHOT,
            error = busy()  # LOCKED_SHAREDCACHE
            error.sqlite_errorcode = code
            assert journal._transient(error, None)
            assert journal._retries(error)
        for code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CONSTRAINT):
            error = busy()
            error.sqlite_errorcode = code
            assert not journal._transient(error, None)
            assert not journal._retries(error)
        assert not journal._transient(ValueError("database is locked"), None)

    def test_how_long_it_waits(self, tmp_path: Path) -> None:
        """A minute by default (``reconnect_for``; the daemon's ``reconnect_for`` key sets
        it, through ``open_journal``); each try waits SQLite's ``busy_timeout``, 5 s by
        default."""
        journal = SqliteJournal(tmp_path / "journal.db")
        assert (journal.reconnect_for, journal.busy_timeout) == (60.0, 5.0)
        configured = open_journal(tmp_path / "journal.db", reconnect_for=7)
        assert isinstance(configured, SqliteJournal)
        assert configured.reconnect_for == 7.0
        with pytest.raises(FactLogError, match="0 seconds or more"):
            SqliteJournal(tmp_path / "journal.db", reconnect_for=-1)

    async def test_batches_wait_for_the_lock_and_are_written_once_in_order(
        self, tmp_path: Path
    ) -> None:
        """Batches submitted while another connection holds the lock wait (none fails,
        none is acknowledged), ``reconnecting`` says since when, and the log says the
        journal is locked, not that a connection was lost; once the lock is let go every
        batch is durable exactly once, in order, and the journal is healthy."""
        db = tmp_path / "journal.db"
        journal = SqliteJournal(db, busy_timeout=0.05, reconnect_for=30)
        waiting = noted_waits(journal)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            other = locked_by_another(db)
            try:
                with structlog.testing.capture_logs() as logs:
                    tickets = [journal.submit([view(A, 2), view(A, 3)])]
                    tickets.append(journal.submit([started(B)]))
                    await until_set(waiting)
                    since = journal.reconnecting
                    assert since is not None
                    assert since <= dt.datetime.now(dt.UTC)
                    tickets.append(journal.submit([view(A, 4)]))  # queued behind the group
                    tickets.append(journal.submit([view(B, 2)]))
                    assert not any(t.done() for t in tickets)
                    assert journal.failed is None
                    other.execute("ROLLBACK")
                    await wait_all(*tickets)
            finally:
                other.close()
            assert [t.error for t in tickets] == [None] * 4
            assert journal.failed is None
            assert journal.reconnecting is None
            statistics = journal.statistics()
            services.cancel_scope.cancel()
        reader = open_reader(db)
        assert [f.sequence for f in reader.facts(A)] == [1, 2, 3, 4]
        assert [f.sequence for f in reader.facts(B)] == [1, 2]
        assert reader.facts(A)[1:] == [view(A, 2), view(A, 3), view(A, 4)]
        assert reader.session(A).last_sequence == 4
        assert (statistics.facts, statistics.batches) == (6, 5)
        assert (statistics.queued, statistics.failed) == (0, False)
        (locked,) = logged(logs, "journal locked by another connection: waiting")
        assert locked["error"] == "database is locked"
        assert locked["within"] == 30
        (unlocked,) = logged(logs, "journal unlocked")
        assert unlocked["committed"] == 0
        assert not logged(logs, "journal connection lost: reconnecting")
        assert not logged(logs, "journal write failed")

    @pytest.mark.parametrize("when", ["after-commit", "before-commit", "rollback-refused"])
    async def test_a_commit_that_says_busy_is_read_back_not_written_twice(
        self, tmp_path: Path, when: str
    ) -> None:
        """A ``COMMIT`` that says SQLITE_BUSY (in WAL mode it can): the writer reads back
        what is stored, by checksum. A group that committed after all is acknowledged as it
        is; one whose transaction is still open (SQLite keeps it, for the COMMIT to be
        tried again) is rolled back before the reading, even when its first ROLLBACK
        failed too (its rows would read as stored), and written again: each fact once."""
        db = tmp_path / "journal.db"
        journal = BusyAtCommit(db, when=when, busy_timeout=0.05, reconnect_for=30)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            journal.busy_next_commit = True
            with structlog.testing.capture_logs() as logs:
                tickets = [
                    journal.submit([view(A, 2), view(A, 3)]),
                    journal.submit([started(B)]),
                    journal.submit([view(A, 4)]),
                ]
                await wait_all(*tickets)
            assert [t.error for t in tickets] == [None, None, None]
            assert journal.failed is None
            assert not journal.busy_next_commit, "the commit said busy"
            assert journal.statistics().facts == 5, "each fact counted written once"
            services.cancel_scope.cancel()
        reader = open_reader(db)
        assert [f.sequence for f in reader.facts(A)] == [1, 2, 3, 4]
        assert [f.sequence for f in reader.facts(B)] == [1]
        assert reader.session(A).last_sequence == 4
        (unlocked,) = logged(logs, "journal unlocked")
        assert (unlocked["committed"] > 0) is (when == "after-commit")

    async def test_a_lock_held_past_reconnect_for_fails_the_journal_saying_so(
        self, tmp_path: Path
    ) -> None:
        """The lock is held longer than ``reconnect_for``: the batch fails, and the journal
        with it, saying the database stayed locked for so long (what ``/healthz`` and the
        sessions' clients are told); what was acknowledged before stays."""
        db = tmp_path / "journal.db"
        journal = SqliteJournal(db, busy_timeout=0.05, reconnect_for=1)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            other = locked_by_another(db)
            try:
                with structlog.testing.capture_logs() as logs:
                    held = journal.submit([view(A, 2)])
                    await wait_all(held)
            finally:
                other.close()
            assert held.error is not None
            assert journal.failed is held.error
            assert journal.reconnecting is None
            assert (
                "the journal failed: the database stayed locked by another connection for 1 s "
                "(database is locked)"
            ) in held.error.message
            with pytest.raises(FactLogError, match="stayed locked"):
                journal.submit([view(A, 3)])
            services.cancel_scope.cancel()
        assert sequences(db, A) == [1]
        assert len(logged(logs, "journal locked by another connection: waiting")) == 1
        assert not logged(logs, "journal connection lost: reconnecting")
        (failed,) = logged(logs, "journal write failed")
        assert "stayed locked" in failed["error"]


class TestTeamFileStoredOnce:
    async def test_batches_do_not_write_the_team_file_again(self, tmp_path: Path) -> None:
        """The team file is written once, in a table of its own: a batch of a session with
        a 2 MB team file writes a few pages, never the team file again (the WAL stays far
        smaller than one copy of it)."""
        db = tmp_path / "journal.db"
        journal = SqliteJournal(db)
        team_toml = "# " + "x" * (2 * 2**20) + "\n"
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            journal.describe(A, team_file="big.toml", team_toml=team_toml)
            await wait_all(journal.submit([view(A, 2)]))
            connection = sqlite3.connect(db)
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection.close()
            # Sequences across 127 -> 128, where the sessions row grows by a byte: SQLite
            # writes a row again whole when its size changes (and only compares its overflow
            # pages, all of them, when it does not).
            for sequence in range(120, 140):
                await wait_all(journal.submit([view(A, sequence)]))
            wal = db.with_name("journal.db-wal").stat().st_size
            assert wal < 2**20, f"20 batches wrote {wal} bytes"
            services.cancel_scope.cancel()
        assert JournalReader(db).team_toml(A) == ("big.toml", team_toml)
        assert JournalReader(db).session(A).team_file == "big.toml"

    async def test_a_schema_4_journal_is_migrated(self, tmp_path: Path) -> None:
        """Migrating a schema-4 file moves each session's team file to its own table,
        computes a checksum for every fact on file (reading them verifies them), and lists
        each chat's session."""
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db)
        expected = JournalReader(db).facts(runtime.session)
        connection = sqlite3.connect(db)
        back_to_schema_4(connection)
        connection.close()
        journal = SqliteJournal(db)
        await trio.to_thread.run_sync(journal.open)
        assert journal._connection is not None
        journal._connection.close()
        connection = sqlite3.connect(db)
        assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert connection.execute(
            "SELECT count(*) FROM sessions WHERE team_toml IS NOT NULL"
        ).fetchone() == (0,)
        reader = JournalReader(db)
        assert reader.team_toml(runtime.session) == (str(DELIVERY), DELIVERY.read_text())
        assert reader.facts(runtime.session) == expected
        assert reader.open(runtime.session).chats == runtime.state.chats
        # Schema 6: each chat's session, from the facts on file.
        assert runtime.state.chats
        for chat in runtime.state.chats:
            assert reader.session_of_chat(chat) == runtime.session
        assert reader.session_of_chat("ahp-chat:/no-such-chat") is None


class TestStoredDataYouCanTrust:
    async def test_a_damaged_fact_is_named_never_applied(self, journal_db: Path | str) -> None:
        """One byte changed in a stored fact (still valid JSON, still a valid fact) is found
        by its checksum: reading or opening the session fails naming the session and the
        fact's sequence; other sessions read and open as before."""
        db = journal_db
        _, damaged, _ = await run_team(db)
        _, intact, _ = await run_team(db)
        with direct_sql(db) as connection:
            ((sequence, text),) = connection.execute(
                "SELECT sequence, fact FROM facts WHERE session = ? AND sequence = 1",
                (damaged.session,),
            ).fetchall()
            assert "Ship the release notes" in text
            connection.execute(
                "UPDATE facts SET fact = ? WHERE session = ? AND sequence = ?",
                (text.replace("Ship the", "Shiq the"), damaged.session, sequence),
            )
        reader = open_reader(db)
        message = f"fact {sequence} of {damaged.session} is damaged"
        with pytest.raises(FactLogError, match=message):
            reader.facts(damaged.session)
        with pytest.raises(FactLogError, match=message):
            reader.open(damaged.session)
        assert reader.open(intact.session).chats == intact.state.chats
        assert len(reader.facts(intact.session)) == intact.state.last_sequence

    async def test_a_fact_that_is_not_utf8_is_named_in_a_short_error(self, tmp_path: Path) -> None:
        """Bytes in a fact's column that are not UTF-8 (written by something else, or a
        damaged page) are reported naming the session, the sequence and the column, in a
        line of bounded length, not as SQLite's decode error quoting the whole row; reading
        or opening the session fails, other sessions read on."""
        db = tmp_path / "journal.db"
        _, damaged, _ = await run_team(db)
        _, intact, _ = await run_team(db)
        with direct_sql(db) as connection:
            (text,) = connection.execute(
                "SELECT fact FROM facts WHERE session = ? AND sequence = 3", (damaged.session,)
            ).fetchone()
            raw = text.encode() + b" \xff\xfe" + b"x" * 5000
            connection.execute(
                "UPDATE facts SET fact = CAST(? AS TEXT) WHERE session = ? AND sequence = 3",
                (raw, damaged.session),
            )
        reader = open_reader(db)
        for read in (reader.facts, reader.open):
            with pytest.raises(FactLogError) as error:
                read(damaged.session)
            message = str(error.value)
            assert f"fact 3 of {damaged.session}" in message
            assert "(its column fact is not UTF-8 text: byte 0xff at offset " in message
            assert "\ufffd" not in message
            assert len(message) < 400, message
        assert len(reader.facts(intact.session)) == intact.state.last_sequence

    @given(text=st.text(min_size=1), data=st.data())
    def test_any_flipped_bit_of_a_fact_is_found(self, text: str, data: st.DataObject) -> None:
        """CRC32 finds every single-bit error: a stored fact with one bit flipped (that is
        still text) never passes as the fact that was written."""
        raw = bytearray(text.encode())
        bit = data.draw(st.integers(0, len(raw) * 8 - 1))
        raw[bit // 8] ^= 1 << (bit % 8)
        try:
            damaged = raw.decode()
        except UnicodeDecodeError:
            damaged = None
        assume(damaged is not None)  # else SQLite would not hand it back as text
        assert damaged is not None
        assert _checked(A, 7, text, fact_checksum(text), source="j.db") == text
        with pytest.raises(FactLogError, match=f"fact 7 of {A} is damaged"):
            _checked(A, 7, damaged, fact_checksum(text), source="j.db")

    async def test_a_damaged_snapshot_that_still_parses_is_ignored(self, tmp_path: Path) -> None:
        """A snapshot is checksummed too: a part changed on disk that still decodes is not
        taken for the state; the session opens from its facts, as the fold gives it."""
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db, snapshot_every=20)
        connection = sqlite3.connect(db)
        changed = connection.execute(
            "UPDATE snapshot_parts SET data = replace(data, 'release notes', 'release notez')"
        ).rowcount
        connection.commit()
        connection.close()
        assert changed > 0
        with structlog.testing.capture_logs() as logs:
            opened = JournalReader(db).open(runtime.session)
        assert opened.chats == runtime.state.chats
        assert opened.last_sequence == runtime.state.last_sequence
        assert [e["error"] for e in logs if e["event"] == "snapshot ignored"] == [
            "snapshot: $: a row's checksum does not match"
        ]

    async def test_a_damaged_fact_is_not_folded_into_a_turn_s_history(
        self, journal_db: Path | str
    ) -> None:
        """The writer reads a turn's facts back from the file when the turn began before
        it started (to write the turn's agent-channel history): a damaged one fails the
        batch that ends the turn, naming the fact, instead of going into the history."""
        db = journal_db
        chat = "ahp-chat:/a-lead"
        facts = conversation(A, chat)
        first: Journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(first.serve)
            await wait_all(first.submit(facts[:-1]))  # the turn is running
            services.cancel_scope.cancel()
        with direct_sql(db) as connection:
            connection.execute(
                "UPDATE facts SET fact = replace(fact, 'question', 'questioN') "
                "WHERE session = ? AND type = 'chat/turnStarted'",
                (A,),
            )
        second: Journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(second.serve)
            ended = second.submit(facts[-1:])  # no ended_turns: the turn is read back
            await wait_all(ended)
            assert ended.error is not None
            assert f"fact 4 of {A} is damaged" in str(ended.error)
            services.cancel_scope.cancel()
        assert open_reader(db).agent_messages(A, chat) == []

    async def test_a_turn_s_fact_that_is_not_utf8_fails_the_batch_naming_it(
        self, tmp_path: Path
    ) -> None:
        """Read back by the writer for a turn's history, a fact that is not UTF-8 fails the
        batch that ends the turn with a short error naming it."""
        db = tmp_path / "journal.db"
        chat = "ahp-chat:/a-lead"
        facts = conversation(A, chat)
        first: Journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(first.serve)
            await wait_all(first.submit(facts[:-1]))  # the turn is running
            services.cancel_scope.cancel()
        with direct_sql(db) as connection:
            connection.execute(
                "UPDATE facts SET fact = CAST(CAST(fact AS BLOB) || x'c0' || zeroblob(4000) "
                "AS TEXT) WHERE session = ? AND type = 'chat/turnStarted'",
                (A,),
            )
        second: Journal = open_journal(db)
        async with trio.open_nursery() as services:
            await services.start(second.serve)
            ended = second.submit(facts[-1:])  # no ended_turns: the turn is read back
            await wait_all(ended)
            assert ended.error is not None
            message = str(ended.error)
            assert f"fact 4 of {A} is damaged (its column fact is not UTF-8 text" in message
            assert len(message) < 400, message
            services.cancel_scope.cancel()

    async def test_the_journal_and_its_wal_are_readable_by_their_owner_only(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "state" / "journal.db"
        journal = SqliteJournal(db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            modes = {
                path.name: stat.S_IMODE(path.stat().st_mode)
                for path in (db, db.with_name("journal.db-wal"), db.with_name("journal.db-shm"))
            }
            services.cancel_scope.cancel()
        assert modes == {"journal.db": 0o600, "journal.db-wal": 0o600, "journal.db-shm": 0o600}


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement run by connections opened from here on (sqlite3's tracing)."""
    seen: list[str] = []
    connect: Callable[..., sqlite3.Connection] = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(seen.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    return seen


class TestCheapLookups:
    async def test_the_whole_file_is_checked_once_not_per_lookup(
        self, tmp_path: Path, statements: list[str]
    ) -> None:
        """A reader checks the file (PRAGMA quick_check) on its first read only; a lookup of
        an unknown session id is then one query, by the sessions' primary key."""
        db = tmp_path / "journal.db"
        await run_team(db)
        reader = JournalReader(db)
        statements.clear()
        for n in range(20):
            with pytest.raises(FactLogError, match="no session"):
                reader.session(f"ahp-session:/unknown-{n}")
        assert sum("quick_check" in s for s in statements) == 1
        statements.clear()
        with pytest.raises(FactLogError, match="no session"):
            reader.session("ahp-session:/unknown")
        assert len(statements) == 1, statements
        (plan,) = sqlite3.connect(db).execute(f"EXPLAIN QUERY PLAN {statements[0]}").fetchall()
        assert "USING INDEX sqlite_autoindex_sessions_1" in plan[3]

    async def test_a_journal_opened_for_writing_is_not_checked_again_by_its_reader(
        self, tmp_path: Path, statements: list[str]
    ) -> None:
        db = tmp_path / "journal.db"
        await run_team(db)
        statements.clear()
        journal = SqliteJournal(db)
        async with trio.open_nursery() as services:
            await services.start(journal.serve)
            await wait_all(journal.submit([started(A)]))
            for _ in range(5):
                journal.reader.session(A)
            services.cancel_scope.cancel()
        assert sum("quick_check" in s for s in statements) == 1, "once, as it opened"

    def test_a_file_replaced_under_a_reader_is_checked_again(self, tmp_path: Path) -> None:
        """The check is per file: one put in the journal's place (a restored backup, a
        damaged copy) is checked before it is read."""
        db = tmp_path / "journal.db"
        trio.run(run_team, db)
        reader = JournalReader(db)
        assert len(reader.sessions()) == 1
        replacement = tmp_path / "other.db"
        replacement.write_bytes(b"this is not a journal\n" * 100)
        replacement.replace(db)
        with pytest.raises(FactLogError, match="not an orchestrator journal"):
            reader.sessions()


class TestBatchesInFlight:
    async def test_batches_in_flight_share_transactions(self, journal_db: Path | str) -> None:
        """Group commit: three researchers' batches are made durable together."""
        _, _, journal = await run_team(journal_db)
        stats = journal.statistics()
        assert stats.transactions < stats.batches

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


class TestSnapshotsDue:
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
