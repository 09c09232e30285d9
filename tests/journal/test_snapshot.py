"""Snapshots in parts: a state read back from its parts equals the fold it was cut from."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import PeerProtocolError, compact_dumps
from orchestrator.core import ApprovalRequested, Fact, TeamState
from orchestrator.journal import (
    PartKey,
    decode_parts,
    decode_state,
    encode_part,
    encode_state,
    same_values,
    snapshot_due,
    snapshot_header,
    snapshot_parts,
    state_entries,
)
from orchestrator.runtime import MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import load_team
from tests.support.paths import PROJECT_ROOT

DELIVERY = PROJECT_ROOT / "teams" / "delivery.toml"


async def delivery_run() -> tuple[str, list[Fact]]:
    """The facts of a run of the delivery team (three workers, one approval, approved)."""
    log = MemoryFactLog()
    runtime = TeamRuntime(load_team(DELIVERY), backends=ScriptedBackend, factlog=log)

    async def approve_all() -> None:
        async for fact in runtime.bus.subscribe("test"):
            if isinstance(fact.action, ApprovalRequested):
                await runtime.resolve_approval(fact.action.approval, approved=True)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(approve_all)
            await runtime.run("Ship the release notes")
            nursery.cancel_scope.cancel()
    return runtime.session, log.facts


def stored(state: TeamState, *, chunk: int) -> TeamState:
    """``state`` written as parts (as JSON text, as the journal stores them) and read back."""
    parts = [
        (*key, json.loads(compact_dumps(encode_part(key, values))))
        for key, values in snapshot_parts(state, chunk=chunk).items()
    ]
    return decode_parts(json.loads(compact_dumps(snapshot_header(state))), reversed(parts))


def assert_same_state(opened: TeamState, folded: TeamState) -> None:
    assert opened.session_uri == folded.session_uri
    assert opened.last_sequence == folded.last_sequence
    assert opened.session == folded.session
    assert opened.run == folded.run
    for name in ("chats", "members", "tasks", "approvals"):
        mine, theirs = getattr(opened, name), getattr(folded, name)
        assert mine == theirs, name
        assert list(mine) == list(theirs), f"the order of {name}"
    assert opened.queued_count() == folded.queued_count()
    assert opened.has_pending_approval() == folded.has_pending_approval()


class TestParts:
    async def test_a_state_read_back_from_its_parts_equals_the_fold(self) -> None:
        """At every fact of a run, with chunks of two items (turns, parts and the catalog
        then span several), the state read back from its parts equals the fold."""
        session, facts = await delivery_run()
        state = TeamState(session)
        for fact in facts:
            state.apply(fact)
            assert_same_state(stored(state, chunk=2), state)

    async def test_the_run_s_reviews_and_board_read_back(self) -> None:
        """The run record's reviews (teams/review.toml: one fix, then passed) and board
        (teams/board.toml) read back from the parts at every fact, as the fold made them."""
        for name in ("review", "board"):
            log = MemoryFactLog()
            runtime = TeamRuntime(
                load_team(PROJECT_ROOT / "teams" / f"{name}.toml"),
                backends=ScriptedBackend,
                factlog=log,
            )
            with trio.fail_after(60):
                await runtime.run("Ship the notes")
            state = TeamState(runtime.session)
            for fact in log.facts:
                state.apply(fact)
                assert_same_state(stored(state, chunk=2), state)
            assert state.run is not None
            assert state.run.reviews if name == "review" else state.run.board.items

    async def test_a_fact_changes_only_the_parts_of_what_it_changed(self) -> None:
        """A chat fact leaves the other chats' parts holding the same objects, so the
        journal does not write them again."""
        session, facts = await delivery_run()
        state = TeamState(session)
        before: dict[PartKey, tuple[Any, ...]] = {}
        chat_facts = 0
        for fact in facts:
            state.apply(fact)
            now = snapshot_parts(state, chunk=2)
            changed = {
                key for key, values in now.items() if not same_values(before.get(key), values)
            }
            if fact.channel != session:
                chat_facts += 1
                assert {
                    name for kind, name, _ in changed if kind in ("chat", "turns", "parts")
                } <= {fact.channel}
            before = now
        assert chat_facts > 10

    def test_an_empty_state_has_no_parts(self) -> None:
        state = TeamState("ahp-session:/empty")
        assert snapshot_parts(state) == {}
        assert_same_state(stored(state, chunk=2), state)


class TestWhenToSnapshot:
    def test_a_small_session_is_snapshot_every_so_many_facts(self) -> None:
        assert not snapshot_due(4_999, 10, every=5_000)
        assert snapshot_due(5_000, 10, every=5_000)

    def test_a_large_session_waits_one_fact_per_entry(self) -> None:
        """A fan-out of 10,000 workers (30,001 entries) is not snapshot every 5,000 facts:
        each snapshot would walk all its parts and encode again those of workers that change
        again before the next."""
        assert not snapshot_due(5_000, 30_001, every=5_000)
        assert not snapshot_due(30_000, 30_001, every=5_000)
        assert snapshot_due(30_001, 30_001, every=5_000)

    @given(every=st.integers(1, 50_000), since=st.integers(0, 100_000), entries=st.integers(0))
    def test_nothing_is_due_before_every_facts_whatever_the_entries(
        self, every: int, since: int, entries: int
    ) -> None:
        """What lets the journal skip counting the entries for most batches (``committed``):
        under ``every`` facts nothing is due, and from there only the entries decide."""
        due = snapshot_due(since, entries, every=every)
        if since < every:
            assert not due
        else:
            assert due == (since >= entries)

    @given(
        every=st.integers(1, 50),
        commits=st.lists(st.tuples(st.integers(1, 20), st.integers(0, 30)), max_size=200),
    )
    def test_snapshots_cost_at_most_the_facts_and_the_tail_stays_bounded(
        self, every: int, commits: list[tuple[int, int]]
    ) -> None:
        """Committing batches of facts while the state grows (each commit: its facts, the
        entries it adds), as the journal asks: the entries walked by all snapshots together
        are at most the facts committed, and no tail left to fold grows past ``every`` or
        the state's entries by more than one commit."""
        sequence = last = entries = walked = 0
        for facts, added in commits:
            sequence += facts
            entries += added
            if snapshot_due(sequence - last, entries, every=every):
                walked += entries
                last = sequence
            assert sequence - last < max(every, entries) + facts
        assert walked <= sequence

    async def test_the_entries_of_a_state_are_its_chats_members_tasks_and_approvals(
        self,
    ) -> None:
        session, facts = await delivery_run()
        state = TeamState.fold(session, facts)
        assert state_entries(state) == (
            len(state.chats) + len(state.members) + len(state.tasks) + len(state.approvals)
        )
        assert state_entries(TeamState(session)) == 0


class TestDamage:
    async def test_a_missing_chunk_is_damage(self) -> None:
        session, facts = await delivery_run()
        state = TeamState.fold(session, facts)
        parts = {
            key: json.loads(compact_dumps(encode_part(key, values)))
            for key, values in snapshot_parts(state, chunk=2).items()
        }
        header = snapshot_header(state)
        catalog = [key for key in parts if key[0] == "catalog"]
        assert len(catalog) > 1
        without_first = [(*key, data) for key, data in parts.items() if key != catalog[0]]
        with pytest.raises(PeerProtocolError, match="chunk 0 of the chat catalog is missing"):
            decode_parts(header, without_first)
        without_last = [(*key, data) for key, data in parts.items() if key != catalog[-1]]
        with pytest.raises(PeerProtocolError, match="the chat catalog has 2 items, its header"):
            decode_parts(header, without_last)
        orphan = [*((*key, data) for key, data in parts.items()), ("turns", "ahp-chat:/x", 0, [])]
        with pytest.raises(PeerProtocolError, match="chunks of no chat"):
            decode_parts(header, orphan)

    @pytest.mark.parametrize(
        ("header", "parts", "message"),
        [
            ({"format": 1}, [], "not a snapshot of format 2"),
            ([], [], "not a snapshot of format 2"),
            (None, [("future", "", 0, {})], "not a snapshot of format 2"),
            ({"format": 2, "session": "s", "sequence": 1}, [("future", "", 0, {})], "unknown part"),
            ({"format": 2, "session": "s", "sequence": 1}, [("run", "", 0, [])], "damaged"),
            ({"format": 2, "sequence": 1}, [], "damaged"),
        ],
    )
    def test_what_is_not_a_snapshot_is_refused(
        self, header: object, parts: list[tuple[str, str, int, object]], message: str
    ) -> None:
        with pytest.raises(PeerProtocolError, match=message):
            decode_parts(header, parts)


class TestFormatOne:
    async def test_a_whole_state_snapshot_reads_back(self) -> None:
        """Format 1 (schema-3 journals, converted by the migration) still reads back."""
        session, facts = await delivery_run()
        state = TeamState.fold(session, facts)
        assert_same_state(decode_state(json.loads(compact_dumps(encode_state(state)))), state)
