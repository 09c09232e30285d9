"""Forking a session of a journal: the fork written whole beside its source, which is only read."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

import orchestrator
from orchestrator.ahp.actions import ChatTurnCompleteAction
from orchestrator.core import (
    SessionForked,
    TeamState,
    build_graph,
    fact_to_json,
    fork_facts,
    fork_point,
)
from orchestrator.journal import open_journal, open_reader
from orchestrator.sessions import fork_session
from tests.support.journal import a_run_and_its_fork
from tests.support.postgres import direct_sql
from tests.support.teams import fan_team


def _rows(db: Path | str, session: str) -> list[tuple[object, ...]]:
    """The source's stored rows, byte for byte (text and checksum)."""
    with direct_sql(db) as sql:
        rows = sql.execute(
            "SELECT sequence, fact, checksum FROM facts WHERE session = ? ORDER BY sequence",
            (session,),
        ).fetchall()
    return [tuple(row) for row in rows]


async def _fork(db: Path | str, source: str, **where: object) -> orchestrator.core.ForkRows:
    # Another node than the one that ran the source (on PostgreSQL: leases of its own).
    journal = open_journal(db, node="node-b")
    async with trio.open_nursery() as nursery:
        await nursery.start(journal.serve)
        made = await fork_session(journal, source, **where)  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()
    return made


class TestForkSession:
    async def test_the_forks_session_row_keeps_its_lineage(self, journal_db: Path | str) -> None:
        """``orchestrator sessions`` reads a fork's lineage from its session row: the source,
        the last fact copied and the turn (none here); a fork of a fork names its own."""
        db = journal_db
        source, fork, sequence = await a_run_and_its_fork(db)
        again = await _fork(db, fork)
        by_uri = {s.session: s for s in open_reader(db).sessions()}
        assert by_uri[source].forked_from is None
        assert by_uri[source].to_json()["forkedFrom"] is None
        assert (by_uri[fork].forked_from, by_uri[fork].forked_at) == (source, sequence)
        assert by_uri[fork].forked_turn is None
        assert by_uri[fork].to_json()["forkedFrom"] == {
            "session": source,
            "sequence": sequence,
            "turnId": None,
        }
        assert (by_uri[again.session].forked_from, by_uri[again.session].forked_at) == (
            fork,
            again.sequence,
        )
        assert open_reader(db).session(fork) == by_uri[fork]

    async def test_the_fork_is_a_session_of_its_own_and_the_source_is_untouched(
        self, journal_db: Path | str
    ) -> None:
        """Forked at its last fact: the fork's facts are the source's, renamed, then the
        lineage; the source's rows are what they were; the fork opens to the same run."""
        db = journal_db
        team = orchestrator.parse_team(fan_team(1), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        before = _rows(db, source.session)
        made = await _fork(db, source.session)
        assert _rows(db, source.session) == before
        reader = open_reader(db)
        stored = reader.facts(made.session)
        source_facts = reader.facts(source.session)
        copies = iter(made.chats.values())
        expected = fork_facts(
            source_facts,
            session=made.session,
            new_chat=lambda: next(copies),
            now=stored[-1].at,
            sequence=len(source_facts),
        )
        # What fork_facts makes of the decoded facts, byte for byte.
        assert [fact_to_json(f) for f in stored] == [fact_to_json(f) for f in expected.facts]
        # The agent channel's history came along, under the copies' URIs.
        for chat, copy in made.chats.items():
            before_rows = [
                (m.turn_id, m.event) for m in reader.agent_messages(source.session, chat)
            ]
            after_rows = [(m.turn_id, m.event) for m in reader.agent_messages(made.session, copy)]
            assert after_rows == before_rows
            assert after_rows
        assert made.sequence == len(before)
        assert isinstance(stored[-1].action, SessionForked)
        opened = reader.open(made.session)
        folded = TeamState.fold(source.session, reader.facts(source.session))
        assert opened.run is not None
        assert folded.run is not None
        assert (opened.run.status, opened.run.result) == (folded.run.status, folded.run.result)
        assert len(opened.chats) == len(folded.chats) == 4
        assert set(opened.chats) == set(made.chats.values())
        assert reader.team_toml(made.session) == reader.team_toml(source.session)
        listed = {s.session: (s.status, s.title) for s in reader.sessions()}
        assert listed[made.session] == listed[source.session] == ("completed", "first")

    async def test_a_fork_that_runs_on_leaves_the_runs_end_out(self, tmp_path: Path) -> None:
        db = tmp_path / "j.db"
        team = orchestrator.parse_team(fan_team(1), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        made = await _fork(db, source.session, runs_on=True)
        assert made.sequence == len(open_reader(db).facts(source.session)) - 1
        assert open_reader(db).session(made.session).status == "running"

    async def test_a_fork_point_it_lacks_writes_nothing(self, tmp_path: Path) -> None:
        db = tmp_path / "j.db"
        team = orchestrator.parse_team(fan_team(1), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        with pytest.RaisesGroup(
            pytest.RaisesExc(orchestrator.RunError, match="no fact 9999"), flatten_subgroups=True
        ):
            await _fork(db, source.session, sequence=9999)
        assert len(open_reader(db).sessions()) == 1


class TestForkOfTheStoredText:
    """fork_rows, on the stored text, makes the fork fork_facts makes of every decoded fact:
    at any point, also of a fork, and never of a damaged source."""

    async def test_at_every_point_the_fork_is_fork_facts_and_its_graph_as_clean(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "j.db"
        team = orchestrator.parse_team(fan_team(2), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        reader = open_reader(db)
        facts = reader.facts(source.session)
        rows = reader.fact_rows(source.session)
        turns = [f.action.turn_id for f in facts if isinstance(f.action, ChatTurnCompleteAction)]
        points: list[dict[str, object]] = [{"sequence": n} for n in (1, 2, len(facts) // 2)]
        points += [{"turn_id": turn} for turn in turns]
        points.append({})
        for where in points:
            at = fork_point(rows, **where)  # type: ignore[arg-type]
            made = await _fork(db, source.session, **where)
            stored = reader.facts(made.session)
            copies = iter(made.chats.values())
            expected = fork_facts(
                facts,
                session=made.session,
                new_chat=lambda copies=copies: next(copies),  # type: ignore[misc]
                now=stored[-1].at,
                sequence=at,
                turn_id=where.get("turn_id"),  # type: ignore[arg-type]
            )
            assert [fact_to_json(f) for f in stored] == [fact_to_json(f) for f in expected.facts]
            assert [v.kind for v in build_graph(stored).check()] == [
                v.kind for v in build_graph(facts[:at]).check()
            ]
        # A fork of a fork: the first fork's lineage is copied, its copies renamed.
        first = await _fork(db, source.session)
        second = await _fork(db, first.session)
        copied = [
            f.action for f in reader.facts(second.session) if isinstance(f.action, SessionForked)
        ]
        lineage = reader.facts(first.session)[-1].action
        assert isinstance(lineage, SessionForked)
        assert copied[0].chats == {k: second.chats[v] for k, v in lineage.chats.items()}
        assert copied[-1].source == first.session
        assert build_graph(reader.facts(second.session)).check() == []

    async def test_a_chat_uri_quoted_inside_a_text_is_left_as_written(self, tmp_path: Path) -> None:
        """A URI quoted inside a message (an escaped quote before it), and a stream's text
        that starts with one, are copied as written; the fork is fork_facts's."""
        db = tmp_path / "j.db"
        team = orchestrator.parse_team(
            fan_team(1).replace(
                '{ say = "finished {task}", chunks = 3 }',
                "{ say = 'ahp-chat:/inline finished {task}', chunks = 1 }",
            ),
            file="fan.toml",
        )
        prompt = 'see "ahp-chat:/not-a-chat" first'
        source = await orchestrator.run_team(team, prompt, journal=db)
        made = await _fork(db, source.session)
        reader = open_reader(db)
        stored = reader.facts(made.session)
        copies = iter(made.chats.values())
        expected = fork_facts(
            reader.facts(source.session),
            session=made.session,
            new_chat=lambda: next(copies),
            now=stored[-1].at,
            sequence=made.sequence,
        )
        assert [fact_to_json(f) for f in stored] == [fact_to_json(f) for f in expected.facts]
        text = "\n".join(fact_to_json(f) for f in stored)
        assert '\\"ahp-chat:/not-a-chat\\"' in text
        assert '"ahp-chat:/inline finished' in text

    async def test_a_damaged_source_is_not_forked(self, tmp_path: Path) -> None:
        db = tmp_path / "j.db"
        team = orchestrator.parse_team(fan_team(1), file="fan.toml")
        source = await orchestrator.run_team(team, "first", journal=db)
        with direct_sql(db) as sql:
            sql.execute(
                "UPDATE facts SET checksum = checksum + 1 WHERE session = ? AND sequence = 3",
                (source.session,),
            )
        with pytest.RaisesGroup(
            pytest.RaisesExc(orchestrator.FactLogError, match="fact 3 of .* is damaged"),
            flatten_subgroups=True,
        ):
            await _fork(db, source.session)
        assert len(open_reader(db).sessions()) == 1
