"""The rows the writer writes: many rows in few statements (or one COPY), in order;
snapshot parts written again only when they changed, whole after a session was forgotten,
and a statement's rows at a time."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import TeamState
from orchestrator.journal import (
    Journal,
    JournalReader,
    _rows,
    open_journal,
    open_reader,
)
from tests.support.examples import examples
from tests.support.journal import run_team
from tests.support.postgres import direct_sql


class TestSnapshotParts:
    async def test_a_snapshot_writes_again_only_the_parts_that_changed(
        self, journal_db: Path | str
    ) -> None:
        """Parts unchanged since an earlier snapshot keep the sequence of the snapshot that
        wrote them (a finished worker's chat is not written again); opening still equals
        the fold."""
        db = journal_db
        _, runtime, journal = await run_team(db, snapshot_every=6)
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
        _, runtime, journal = await run_team(db, snapshot_every=6)
        assert journal.statistics().snapshots >= 1
        with direct_sql(db) as connection:
            ((parts,),) = connection.execute("SELECT count(*) FROM snapshot_parts").fetchall()
        assert parts > 3
        reader = open_reader(db)
        opened = reader.open(runtime.session)
        folded = TeamState.fold(runtime.session, reader.facts(runtime.session))
        assert opened.chats == folded.chats
        assert list(opened.tasks.items()) == list(folded.tasks.items())


class Recording:
    """An in-memory SQLite connection that notes each statement it is given."""

    def __init__(self) -> None:
        self.connection = sqlite3.connect(":memory:")
        self.connection.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        self.statements: list[str] = []

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        self.statements.append(sql)
        return self.connection.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        raise AssertionError("rows go in multi-row statements")

    def rows(self) -> list[tuple[Any, ...]]:
        return self.connection.execute("SELECT a, b FROM t ORDER BY rowid").fetchall()


class Copying(Recording):
    """A connection that can copy rows in, as PostgreSQL's can."""

    def __init__(self) -> None:
        super().__init__()
        self.copied: list[tuple[str, int]] = []

    def copy_rows(self, head: str, rows: Sequence[Sequence[Any]]) -> None:
        self.copied.append((head, len(rows)))


class TestInsertRows:
    @settings(max_examples=examples(60))
    @given(count=st.integers(min_value=0, max_value=3 * _rows.ROWS_PER_INSERT))
    def test_every_row_goes_in_in_order_in_few_statements(self, count: int) -> None:
        connection = Recording()
        rows = [(n, f"row {n}") for n in range(count)]
        _rows._insert_rows(connection, "INSERT INTO t (a, b)", rows)
        assert connection.rows() == rows
        full = count // _rows.ROWS_PER_INSERT
        assert len(connection.statements) <= full + 2, "whole statements, then two at most"
        assert all(sql.count("(?, ?)") <= _rows.ROWS_PER_INSERT for sql in connection.statements)

    def test_a_tail_follows_the_rows(self) -> None:
        connection = Recording()
        connection.connection.execute("CREATE UNIQUE INDEX one_a ON t (a)")
        tail = " ON CONFLICT (a) DO NOTHING"
        _rows._insert_rows(connection, "INSERT INTO t (a, b)", [(1, "x"), (1, "y")], tail)
        assert connection.rows() == [(1, "x")]
        assert connection.statements[0].endswith(tail)

    def test_enough_rows_are_copied_where_the_connection_can(self) -> None:
        many = [(n, "x") for n in range(_rows.COPY_AT_LEAST)]
        connection = Copying()
        _rows._insert_rows(connection, "INSERT INTO t (a, b)", many)
        assert connection.copied == [("INSERT INTO t (a, b)", len(many))]
        assert connection.statements == []

    @pytest.mark.parametrize(
        ("rows", "tail"),
        [
            ([(n, "x") for n in range(_rows.COPY_AT_LEAST - 1)], ""),
            ([(n, "x") for n in range(_rows.COPY_AT_LEAST)], " ON CONFLICT DO NOTHING"),
        ],
    )
    def test_few_rows_or_a_tail_are_inserted_even_there(
        self, rows: list[tuple[int, str]], tail: str
    ) -> None:
        connection = Copying()
        _rows._insert_rows(connection, "INSERT INTO t (a, b)", rows, tail)
        assert connection.copied == []
        assert connection.rows() == rows


def _history(db: Path | str, session: str) -> list[tuple[Any, ...]]:
    """A session's agent-channel rows as stored, in replay order (their ids')."""
    with direct_sql(db) as sql:
        rows = sql.execute(
            "SELECT chat, turn_id, part, sequence, type, message, checksum, deleted_at "
            "FROM agent_messages WHERE session = ? ORDER BY id",
            (session,),
        ).fetchall()
    return [tuple(row) for row in rows]


class TestCopyHistory:
    """A fork's agent-channel history is copied in its batch's transaction: there once the
    fork is acknowledged, up to the fork point, under the copies' URIs; not at all when
    the fork's batch fails."""

    async def test_it_is_there_once_the_fork_is_acknowledged_up_to_the_fork_point(
        self, journal_db: Path | str
    ) -> None:
        import orchestrator
        from orchestrator.sessions import fork_session
        from tests.support.teams import fan_team

        db = journal_db
        team = orchestrator.parse_team(fan_team(2), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        ends = [
            f.sequence
            for f in open_reader(db).facts(source.session)
            if f.action.type == "chat/turnComplete"
        ]
        assert len(ends) >= 3  # the workers', the lead's
        rows = _history(db, source.session)
        journal = open_journal(db, node="node-b")
        async with trio.open_nursery() as nursery:
            await nursery.start(journal.serve)
            for end in (ends[0], ends[-1]):
                made = await fork_session(journal, source.session, sequence=end)
                # Read while the journal still serves: acknowledged means written.
                wanted = [
                    (made.chats[r[0]], *r[1:])
                    for r in rows
                    if r[3] <= made.sequence and r[7] is None  # not undone or truncated
                ]
                assert _history(db, made.session) == wanted
                assert 0 < len(wanted) <= len(rows)
                assert (len(wanted) < len(rows)) == (end != ends[-1])
            nursery.cancel_scope.cancel()
        assert _history(db, source.session) == rows

    async def test_a_fork_whose_batch_fails_copies_no_history(self, journal_db: Path | str) -> None:
        """A second fork named as the first (its facts' keys taken) fails whole: the
        first fork's history is all its session holds."""
        import orchestrator
        from orchestrator.sessions import fork_session
        from tests.support.teams import fan_team

        db = journal_db
        team = orchestrator.parse_team(fan_team(1), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        journal = open_journal(db, node="node-b")
        async with trio.open_nursery() as nursery:
            await nursery.start(journal.serve)
            first = await fork_session(journal, source.session)
            with pytest.raises(orchestrator.FactLogError):
                await fork_session(journal, source.session, session=first.session)
            nursery.cancel_scope.cancel()
        with direct_sql(db) as sql:
            chats = {
                row[0]
                for row in sql.execute(
                    "SELECT chat FROM agent_messages WHERE session = ?", (first.session,)
                ).fetchall()
            }
        assert chats == set(first.chats.values())
