"""Agent-channel history: rows written as turns end, replay, undo / truncate / restore."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from orchestrator.ahp import TURN_ENDS
from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatTruncatedAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import MarkdownResponsePart, Message, MessageKind, MessageOrigin, Turn
from orchestrator.base import FactLogError, IllegalTransitionError, RunError
from orchestrator.cli import main
from orchestrator.core import (
    Action,
    Fact,
    RunFinished,
    RunStatus,
    TeamState,
    Transition,
    build_graph,
)
from orchestrator.journal import (
    PG_SCHEMA_VERSION,
    Journal,
    JournalReader,
    SqliteJournal,
    edit_history,
    open_journal,
    open_reader,
)
from orchestrator.journal._rows import _AgentHistory, _batch, _write_group
from orchestrator.journal._schema import _migrate
from orchestrator.protocols import restore_actions, truncate_action, turn_messages, undo_action
from orchestrator.runtime import FactBus, MemoryFactLog, Recorder, Ticket
from tests.support.examples import examples
from tests.support.journal import (
    back_to_schema_4,
    back_to_schema_7,
    pg_back_to_version_4,
    run_team,
)
from tests.support.postgres import direct_sql
from tests.support.sessions import solo_opening
from tests.support.strategies import (
    CHANNEL,
    CHAT_ACTION_CLASSES,
    TOOL_CALL_ACTION_CLASSES,
    empty_chats,
    pooled_actions,
)

SESSION = "ahp-session:/history"
CHAT = "ahp-chat:/lead"
NOW = "2026-11-23T00:00:00.000Z"


async def three_turns(db: Path | str) -> None:
    """A finished session whose coordinator chat has three turns: "one", "two", "three"."""
    journal: Journal = open_journal(db)
    state = TeamState(SESSION)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        recorder = Recorder(state, journal, FactBus(), clock=lambda: NOW)
        await recorder.record(solo_opening(SESSION, CHAT, prompt="one", at=NOW))
        for n, word in enumerate(("one", "two", "three"), start=1):
            turn = f"turn-{n}"
            message = Message(text=word, origin=MessageOrigin(kind=MessageKind.USER))
            await recorder.record(
                [(CHAT, ChatTurnStartedAction(turn_id=turn, started_at=NOW, message=message))]
            )
            part = MarkdownResponsePart(id=f"part-{n}", content="said ")
            await recorder.record([(CHAT, ChatResponsePartAction(turn_id=turn, part=part))])
            await recorder.record(
                [(CHAT, ChatDeltaAction(turn_id=turn, part_id=f"part-{n}", content=word))]
            )
            await recorder.record([(CHAT, ChatTurnCompleteAction(turn_id=turn, duration=1))])
        await recorder.record(
            [(SESSION, RunFinished(run="run-1", status=RunStatus.COMPLETED, result="done"))]
        )
        services.cancel_scope.cancel()


def prompts(db: Path | str, *, deleted: bool = False) -> list[str]:
    return [
        m.event["prompt"]
        for m in open_reader(db).agent_messages(SESSION, CHAT, deleted=deleted)
        if m.event["type"] == "prompt"
    ]


async def test_each_finished_turn_is_written_as_agent_channel_events(
    journal_db: Path | str,
) -> None:
    db = journal_db
    await three_turns(db)
    messages = open_reader(db).agent_messages(SESSION, CHAT)
    assert [m.event["type"] for m in messages[:4]] == ["prompt", "text", "result", "done"]
    assert messages[1].event == {"channel": "agent", "type": "text", "content": "said one"}
    assert messages[2].event["summary"] == "said one"
    assert [m.turn_id for m in messages] == ["turn-1"] * 4 + ["turn-2"] * 4 + ["turn-3"] * 4
    assert prompts(db) == ["one", "two", "three"]


async def test_a_real_run_replays_tool_calls_and_results(journal_db: Path | str) -> None:
    db = journal_db
    outcome, runtime, _ = await run_team(db)
    lead = runtime.state.coordinator_chat()
    assert lead is not None
    events = [m.event for m in open_reader(db).agent_messages(outcome.session, lead)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "prompt"
    assert kinds.count("tool_invocation") == kinds.count("tool_result") == 3
    assert kinds[-2:] == ["result", "done"]
    assert events[-2]["summary"] == outcome.result
    # The rows equal what the pure conversion makes of the chat's turns.
    (turn,) = runtime.state.chats[lead].turns
    assert events == turn_messages(turn)


async def test_undo_truncate_and_restore_soft_delete_and_bring_back(journal_db: Path | str) -> None:
    db = journal_db
    await three_turns(db)

    await edit_history(db, SESSION, CHAT, lambda chat, facts: [undo_action(chat)])
    assert prompts(db) == ["one", "two"]
    assert prompts(db, deleted=True) == ["one", "two", "three"], "rows stay on disk"
    assert [t.id for t in open_reader(db).open(SESSION).chats[CHAT].turns] == [
        "turn-1",
        "turn-2",
    ]

    await edit_history(db, SESSION, CHAT, lambda chat, facts: [truncate_action(chat, None)])
    assert prompts(db) == []
    assert open_reader(db).open(SESSION).chats[CHAT].turns == ()

    # Restore brings back what the last cut removed: the turns and their rows, in place.
    recorded = await edit_history(db, SESSION, CHAT, restore_actions)
    assert recorded
    assert prompts(db) == ["one", "two"]
    restored = open_reader(db).open(SESSION).chats[CHAT].turns
    assert [t.id for t in restored] == ["turn-1", "turn-2"]
    assert [
        m.event["content"]
        for m in open_reader(db).agent_messages(SESSION, CHAT)
        if m.event["type"] == "text"
    ] == ["said one", "said two"]
    facts = open_reader(db).facts(SESSION)
    assert build_graph(facts).check() == []
    folded = TeamState.fold(SESSION, facts)
    assert folded.chats[CHAT] == open_reader(db).open(SESSION).chats[CHAT]


async def test_a_turn_cut_in_the_transaction_it_ended_in_is_written_deleted(
    journal_db: Path | str,
) -> None:
    """The rows of a turn are kept until its transaction is written, and a cut in the same
    transaction marks them deleted (it writes the rows kept so far first)."""
    db = journal_db
    journal: Journal = open_journal(db)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        recorder = Recorder(TeamState(SESSION), journal, FactBus(), clock=lambda: NOW)
        message = Message(text="one", origin=MessageOrigin(kind=MessageKind.USER))
        part = MarkdownResponsePart(id="part-1", content="said one")
        await recorder.record(
            [
                *solo_opening(SESSION, CHAT, prompt="one", at=NOW, member=False),
                (CHAT, ChatTurnStartedAction(turn_id="turn-1", started_at=NOW, message=message)),
                (CHAT, ChatResponsePartAction(turn_id="turn-1", part=part)),
            ]
        )
        await recorder.record(
            [
                (CHAT, ChatTurnCompleteAction(turn_id="turn-1", duration=1)),
                (CHAT, ChatTruncatedAction(turn_id=None)),
            ]
        )
        services.cancel_scope.cancel()
    assert prompts(db) == []
    assert prompts(db, deleted=True) == ["one"]


async def test_edits_that_cannot_apply_say_why_and_change_nothing(journal_db: Path | str) -> None:
    db = journal_db
    await three_turns(db)
    before = open_reader(db).facts(SESSION)
    with pytest.raises(RunError, match="nothing to restore"):
        await edit_history(db, SESSION, CHAT, restore_actions)
    with pytest.raises(RunError, match=r"no turn 'turn-9' \(its turns: turn-1, turn-2, turn-3\)"):
        await edit_history(db, SESSION, CHAT, lambda chat, facts: [truncate_action(chat, "turn-9")])
    with pytest.raises(RunError, match="no turn after turn-3"):
        await edit_history(db, SESSION, CHAT, lambda chat, facts: [truncate_action(chat, "turn-3")])
    assert open_reader(db).facts(SESSION) == before

    await edit_history(db, SESSION, CHAT, lambda chat, facts: [undo_action(chat)])
    await edit_history(db, SESSION, CHAT, lambda chat, facts: [undo_action(chat)])
    await edit_history(db, SESSION, CHAT, restore_actions)  # brings back "two"
    with pytest.raises(RunError, match="moved on"):
        await edit_history(db, SESSION, CHAT, restore_actions)


async def test_a_running_session_is_not_edited(journal_db: Path | str) -> None:
    db = journal_db
    await three_turns(db)
    with direct_sql(db) as connection:
        connection.execute("UPDATE sessions SET status = 'running'")
    with pytest.raises(RunError, match="resume it"):
        await edit_history(db, SESSION, CHAT, lambda chat, facts: [undo_action(chat)])


async def test_a_schema_2_journal_gets_its_history_written_when_migrated(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    await three_turns(db)
    written = JournalReader(db).agent_messages(SESSION, CHAT)
    connection = sqlite3.connect(db)
    back_to_schema_4(connection)
    connection.execute("DROP TABLE agent_messages")
    connection.execute("DROP TABLE snapshot_parts")  # schema 4's
    connection.execute("PRAGMA user_version=2")
    connection.commit()
    connection.close()
    await trio.to_thread.run_sync(SqliteJournal(db).open)
    assert JournalReader(db).agent_messages(SESSION, CHAT) == written


class TestHistoryChecksums:
    """Each history row carries a checksum, as facts do, verified when it is read."""

    async def test_a_damaged_row_fails_the_read_naming_it(self, journal_db: Path | str) -> None:
        """A row changed on disk that still parses is not replayed as the history."""
        db = journal_db
        await three_turns(db)
        written = open_reader(db).agent_messages(SESSION, CHAT)
        assert any(m.event.get("prompt") == "two" for m in written)
        with direct_sql(db) as connection:
            changed = connection.execute(
                "UPDATE agent_messages SET message = replace(message, '\"two\"', '\"tw0\"') "
                "WHERE session = ? AND message LIKE '%\"two\"%'",
                (SESSION,),
            ).rowcount
        assert changed == 1
        with pytest.raises(FactLogError, match=f"of turn turn-2 of {CHAT} in {SESSION} is damaged"):
            open_reader(db).agent_messages(SESSION, CHAT)

    async def test_rows_written_without_one_still_read(self, journal_db: Path | str) -> None:
        """Rows of an older journal (or of a node running older code on a shared database)
        have no checksum: they read as they were written."""
        db = journal_db
        await three_turns(db)
        written = open_reader(db).agent_messages(SESSION, CHAT)
        with direct_sql(db) as connection:
            connection.execute("UPDATE agent_messages SET checksum = NULL")
        assert open_reader(db).agent_messages(SESSION, CHAT) == written

    async def test_a_schema_6_file_gains_the_column_and_reads_its_rows(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "journal.db"
        await three_turns(db)
        written = JournalReader(db).agent_messages(SESSION, CHAT)
        connection = sqlite3.connect(db)
        back_to_schema_7(connection, commit=False)
        connection.execute("ALTER TABLE agent_messages DROP COLUMN checksum")
        connection.execute("PRAGMA user_version=6")
        connection.commit()
        connection.close()
        await trio.to_thread.run_sync(SqliteJournal(db).open)
        assert JournalReader(db).agent_messages(SESSION, CHAT) == written
        with sqlite3.connect(db) as connection:
            nulls = connection.execute(
                "SELECT count(*) FROM agent_messages WHERE checksum IS NULL"
            ).fetchone()
        assert nulls == (len(written),)  # added, not computed: the rows read unchecked

    async def test_a_version_3_postgresql_journal_gains_the_column(
        self, postgres_database: str
    ) -> None:
        db = postgres_database
        await three_turns(db)
        written = open_reader(db).agent_messages(SESSION, CHAT)
        with direct_sql(db) as connection:
            pg_back_to_version_4(connection)
            connection.execute("ALTER TABLE agent_messages DROP COLUMN checksum")
            connection.execute("DELETE FROM journal_migrations WHERE version = 4")
        journal = open_journal(db)
        await trio.to_thread.run_sync(journal.open)
        journal.close()
        with direct_sql(db) as connection:
            version = connection.execute("SELECT max(version) FROM journal_migrations").fetchone()
            nulls = connection.execute(
                "SELECT count(*) FROM agent_messages WHERE checksum IS NULL"
            ).fetchone()
        assert version == (PG_SCHEMA_VERSION,)
        assert nulls == (len(written),)
        assert open_reader(db).agent_messages(SESSION, CHAT) == written


def test_history_undo_and_restore_from_the_command_line(
    journal_db: Path | str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = journal_db
    trio.run(three_turns, db)
    capsys.readouterr()
    assert main(["history", "history", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 12
    assert main(["undo", "history", "--db", str(db)]) == 0
    assert "lead has 2 turn(s), the last turn-2" in capsys.readouterr().err
    assert main(["truncate", "history", "--db", str(db), "--keep", "turn-1"]) == 0
    assert main(["history", "history", "--db", str(db)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["history", "history", "--db", str(db), "--deleted"]) == 0
    deleted = [
        line for line in capsys.readouterr().out.splitlines() if '"deletedAt": null' not in line
    ]
    assert len(deleted) == 8
    assert main(["restore", "history", "--db", str(db)]) == 0
    assert main(["truncate", "history", "--db", str(db), "--keep", "turn-7"]) == 2
    assert "no turn 'turn-7'" in capsys.readouterr().err


# ─── The rows of the runtime's turns are the rows of the fold ────────────────

#: Turn starts and ends, parts and text drawn more often than the other chat actions, so
#: that most generated sequences finish turns with something in them.
HISTORY_ACTION_CLASSES = (
    CHAT_ACTION_CLASSES
    + 3 * TOOL_CALL_ACTION_CLASSES
    + 8 * TURN_ENDS
    + 2 * (ChatTurnStartedAction, ChatResponsePartAction, ChatDeltaAction, ChatReasoningAction)
)


def written_rows(batches: list[tuple[list[Fact], dict[int, Turn] | None]]) -> list[tuple[Any, ...]]:
    """The ``agent_messages`` rows the journal's writer leaves after ``batches``, one
    transaction each."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    _migrate(connection, 0)
    history = _AgentHistory()
    for facts, ended_turns in batches:
        connection.execute("BEGIN IMMEDIATE")
        _write_group(connection, [_batch(facts, ended_turns)], history)
        connection.execute("COMMIT")
    rows = connection.execute(
        "SELECT chat, turn_id, part, sequence, type, message, deleted_at, deleted_by "
        "FROM agent_messages ORDER BY id"
    ).fetchall()
    connection.close()
    return rows


class TestRowsOfTheRuntimesTurns:
    @settings(
        deadline=None, max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow]
    )
    @given(st.data())
    def test_equal_the_rows_of_the_turns_folded_from_their_facts(self, data: st.DataObject) -> None:
        """The journal writes a finished turn's rows from the turn the runtime's state
        reduced (``ended_turns``), or, for a turn not given, from a fold of the turn's facts
        (kept in memory, or read back): the same rows, column for column, as folding every
        turn from its facts, whatever the batches and cuts. Generated as the recorder
        records: each action validated against the state the batches before it leave, a
        refused one left out."""
        state = TeamState.restore(
            SESSION,
            last_sequence=0,
            session=None,
            run=None,
            chats={CHANNEL: data.draw(empty_chats())},
            members={},
            tasks={},
            approvals={},
        )
        batches: list[tuple[list[Fact], dict[int, Turn]]] = []
        sequence = 0
        for _ in range(data.draw(st.integers(1, 8))):
            facts: list[Fact] = []
            ended: dict[int, Turn] = {}
            transitions: list[tuple[Transition, int]] = []
            for _ in range(data.draw(st.integers(1, 12))):
                live = state.latest_chat(CHANNEL)
                action = data.draw(pooled_actions(HISTORY_ACTION_CLASSES, live=live))
                if isinstance(action, ChatTurnStartedAction) and data.draw(st.booleans()):
                    # The pool holds two turn ids, each started once: fresh ones, for more turns.
                    action = attrs.evolve(action, turn_id=f"turn-{len(batches)}-{len(facts)}")
                try:
                    transition = state.prepare([(CHANNEL, action)], now=NOW)
                except IllegalTransitionError:
                    continue
                state.push(transition)
                sequence += 1
                transitions.append((transition, sequence))
                facts.append(
                    Fact(sequence=sequence, session=SESSION, channel=CHANNEL, at=NOW, action=action)
                )
                # A submitter may give some of the turns it ends, or none: the rest are folded.
                if 0 in transition.ended_turns and data.draw(st.booleans()):
                    ended[len(facts) - 1] = transition.ended_turns[0]
            for transition, last in transitions:
                state.commit(transition, last)
            if facts:
                batches.append((facts, ended))
        with_turns = written_rows(list(batches))
        event(f"turns given: {min(sum(len(e) for _, e in batches), 4)}+")
        event(f"rows written: {min(len(with_turns), 20) // 10 * 10}+")
        assert with_turns == written_rows([(facts, None) for facts, _ in batches])

    async def test_the_recorders_batches_give_the_turns_at_their_facts_positions(self) -> None:
        """Through the recorder, batches of several actions: each turn given sits at its
        ending fact's place in the batch submitted, and the rows equal those folded from
        facts."""

        class KeepsBatches(MemoryFactLog):
            def __init__(self) -> None:
                super().__init__()
                self.batches: list[tuple[list[Fact], dict[int, Turn] | None]] = []

            def submit(
                self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
            ) -> Ticket:
                self.batches.append((list(facts), None if ended_turns is None else {**ended_turns}))
                return super().submit(facts, ended_turns=ended_turns)

        def turn(turn_id: str, word: str) -> list[tuple[str, Action]]:
            message = Message(text=word, origin=MessageOrigin(kind=MessageKind.USER))
            part = MarkdownResponsePart(id=f"part-{turn_id}", content=f"said {word}")
            return [
                (CHAT, ChatTurnStartedAction(turn_id=turn_id, started_at=NOW, message=message)),
                (CHAT, ChatResponsePartAction(turn_id=turn_id, part=part)),
                (CHAT, ChatTurnCompleteAction(turn_id=turn_id, duration=1)),
            ]

        log = KeepsBatches()
        recorder = Recorder(TeamState(SESSION), log, FactBus(), clock=lambda: NOW)
        await recorder.record(solo_opening(SESSION, CHAT, prompt="one", at=NOW))
        await recorder.record([*turn("turn-1", "one"), *turn("turn-2", "two")[:2]])
        await recorder.record(
            [
                *turn("turn-2", "two")[2:],
                (CHAT, ChatTruncatedAction(turn_id="turn-1")),
                *turn("turn-3", "three"),
            ]
        )
        given_at = [
            (facts[index].action.type, ended.id)
            for facts, ended_turns in log.batches
            for index, ended in (ended_turns or {}).items()
        ]
        assert given_at == [
            ("chat/turnComplete", "turn-1"),
            ("chat/turnComplete", "turn-2"),
            ("chat/turnComplete", "turn-3"),
        ]
        # Summary updates are derived, not recorded (issue 35): a batch is its actions.
        assert [len(facts) for facts, _ in log.batches[1:]] == [5, 5]
        rows = written_rows(log.batches)
        assert rows == written_rows([(facts, None) for facts, _ in log.batches])
        assert {row[1] for row in rows} == {"turn-1", "turn-2", "turn-3"}
