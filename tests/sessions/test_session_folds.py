"""Folds of a session's facts kept between reads (what the web view reads): a read feeds a
kept fold only the facts recorded since, equals a fold of the whole log, and past the
capacity the least recently read session goes. A real SQLite journal is read."""

from __future__ import annotations

from pathlib import Path

import trio

from orchestrator.core import Fact, build_graph, to_json
from orchestrator.journal import JournalReader, open_journal
from orchestrator.protocols import envelope_to_json_line, project_facts
from orchestrator.sessions import EnvelopeCache, GraphCache, SessionFolds
from orchestrator.spec import load_team
from tests.support.journal import HANDOFF, A, B, run_team, started, view, wait_all


async def write(path: Path, *facts: Fact) -> None:
    journal = open_journal(path)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        await wait_all(journal.submit(list(facts)))
        services.cancel_scope.cancel()


class Sequences:
    """A fold that keeps the sequences it was fed; its size is how many."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.fed: list[int] = []

    @property
    def last_sequence(self) -> int:
        return self.fed[-1] if self.fed else 0

    @property
    def size(self) -> int:
        return len(self.fed)

    def feed(self, fact: Fact) -> None:
        assert fact.session == self.session
        self.fed.append(fact.sequence)


def size(fold: Sequences) -> int:
    return fold.size


class TestSessionFolds:
    async def test_a_kept_fold_is_fed_only_what_was_recorded_since(self, tmp_path: Path) -> None:
        db = tmp_path / "journal.db"
        await write(db, started(A), view(A, 2))
        folds = SessionFolds(JournalReader(db), Sequences, capacity=100)
        assert await folds.read(A, lambda fold: fold.fed[:]) == [1, 2]
        await write(db, view(A, 3), view(A, 4))
        fed = await folds.read(A, lambda fold: fold)
        assert fed.fed == [1, 2, 3, 4], "each fact once, in order"
        assert folds.size == 4

    async def test_past_its_capacity_the_least_recently_read_go_first(self, tmp_path: Path) -> None:
        db = tmp_path / "journal.db"
        await write(db, started(A), view(A, 2), started(B), view(B, 2), view(B, 3))
        folds = SessionFolds(JournalReader(db), Sequences, capacity=5)
        await folds.read(A, size)
        await folds.read(B, size)
        assert folds.size == 5, "both kept: at the capacity, not past it"
        await write(db, view(A, 3))
        await folds.read(A, size)  # A read last: B, read before, goes
        assert folds.size == 3
        made: list[str] = []

        def make(session: str) -> Sequences:
            made.append(session)
            return Sequences(session)

        small = SessionFolds(JournalReader(db), make, capacity=1)
        assert await small.read(B, size) == 3, "the one just read is kept, however large"
        assert small.size == 3
        await small.read(B, size)
        assert made == [B], "kept: not made again"

    async def test_a_session_without_facts_is_an_empty_fold(self, tmp_path: Path) -> None:
        db = tmp_path / "journal.db"
        await write(db, started(A))
        folds = SessionFolds(JournalReader(db), Sequences, capacity=10)
        assert await folds.read(B, lambda fold: fold.fed) == []


class TestEnvelopesAndGraphs:
    async def test_the_envelopes_are_those_of_the_whole_log_and_can_be_taken(
        self, tmp_path: Path
    ) -> None:
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db, load_team(HANDOFF))
        reader = JournalReader(db)
        session = runtime.session
        cache = EnvelopeCache(reader)
        lines = await cache.envelopes(session)
        whole = [envelope_to_json_line(e) for e in project_facts(session, reader.facts(session))]
        assert lines == whole
        assert cache.size == sum(len(line) for line in lines)
        lines.clear()  # a copy: the kept fold is not changed by its reader
        assert await cache.envelopes(session) == whole
        taken = await cache.take(session)
        assert taken is not None
        projector, kept = taken
        assert kept == whole
        assert projector.state.last_sequence == reader.facts(session)[-1].sequence
        assert cache.size == 0
        assert await cache.take(session) is None, "handed over once"

    async def test_the_graph_is_that_of_the_whole_log(self, tmp_path: Path) -> None:
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db, load_team(HANDOFF))
        reader = JournalReader(db)
        graphs = GraphCache(reader)
        facts = reader.facts(runtime.session)
        assert await graphs.graph_json(runtime.session) == to_json(build_graph(facts))
        assert graphs.size == len(facts), "measured in facts folded"
