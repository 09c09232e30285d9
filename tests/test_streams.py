"""``TeamRun.stream(mode)``: each mode against the facts it comes from, on a team that reasons,
streams text from several chats at once, calls tools and waits for an approval."""

from __future__ import annotations

import functools
import itertools
import json
from collections import defaultdict
from typing import Any

import attrs
import jsonpatch
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import orchestrator
from orchestrator._streams import STREAM_MODES, projection
from orchestrator.ahp.state import MarkdownResponsePart, ReasoningResponsePart
from orchestrator.core import Fact, TeamState
from orchestrator.protocols import team_view
from tests.support.agui import check_run, validate_event
from tests.support.examples import examples
from tests.support.teams import STREAMED


@attrs.define
class Watched:
    """A run of :data:`STREAMED` (its approval approved) and every stream of it, each read
    from the start of the run by a task of its own."""

    facts: list[Fact]
    outcome: orchestrator.RunOutcome
    updates: list[orchestrator.RunUpdate]  # TeamRun.updates()
    streams: dict[str, list[Any]]  # mode -> its items


async def watch() -> Watched:
    log = orchestrator.MemoryFactLog()
    streams: dict[str, list[Any]] = {}
    updates: list[orchestrator.RunUpdate] = []
    spec = orchestrator.parse_team(STREAMED, file="streamed.toml")
    with trio.fail_after(20):
        async with orchestrator.open_run(
            spec, "ship", journal=log, on_approval=lambda request: True, delta_window=0
        ) as run:

            async def read(mode: str) -> None:
                streams[mode] = [item async for item in run.stream(mode)]

            async with trio.open_nursery() as nursery:
                for mode in STREAM_MODES:
                    nursery.start_soon(read, mode)
                updates += [update async for update in run.updates()]
            outcome = await run.outcome()
    return Watched(facts=log.facts, outcome=outcome, updates=updates, streams=streams)


@functools.cache
def recorded_facts() -> tuple[Fact, ...]:
    """The facts of one run of :data:`STREAMED` (for the properties over its facts)."""
    return tuple(trio.run(watch).facts)


@functools.cache
def items_fact_by_fact() -> dict[str, list[Any]]:
    """Each mode's items over :func:`recorded_facts` fed one at a time (``values``: the
    snapshot after each fact)."""
    facts = recorded_facts()
    start = TeamState(facts[0].session)
    made = {mode: projection(mode, start) for mode in STREAM_MODES}
    return {mode: [item for fact in facts for item in made[mode].feed([fact])] for mode in made}


def fold(facts: list[Fact] | tuple[Fact, ...]) -> TeamState:
    return TeamState.fold(facts[0].session, facts)


def texts_held(state: TeamState) -> dict[str, list[tuple[str, bool, str]]]:
    """Each chat's messages as its state holds them, in order: (message id, reasoning, text)."""
    held: dict[str, list[tuple[str, bool, str]]] = {}
    for chat, chat_state in state.chats.items():
        held[chat] = [
            (part.id, isinstance(part, ReasoningResponsePart), part.content)
            for turn in chat_state.turns
            for part in turn.response_parts
            if isinstance(part, MarkdownResponsePart | ReasoningResponsePart)
        ]
    return held


class TestMessages:
    async def test_the_deltas_join_to_exactly_the_text_each_chat_holds(self) -> None:
        watched = await watch()
        state = fold(watched.facts)
        streamed: dict[str, dict[tuple[str, bool], str]] = defaultdict(dict)
        for item in watched.streams["messages"]:
            if isinstance(item, orchestrator.MessageDelta):
                key = (item.message, item.reasoning)
                streamed[item.chat][key] = streamed[item.chat].get(key, "") + item.text
        held = texts_held(state)
        assert {chat: texts for chat, texts in held.items() if texts} == {
            chat: [(message, reasoning, text) for (message, reasoning), text in by_id.items()]
            for chat, by_id in streamed.items()
        }
        # Every chat of the team streamed, the coordinator's reasoning among it.
        assert len(streamed) == 3
        assert any(item.reasoning for item in watched.streams["messages"])

    async def test_each_message_ends_once_after_its_last_delta(self) -> None:
        items = (await watch()).streams["messages"]
        ends = [i for i, item in enumerate(items) if isinstance(item, orchestrator.MessageEnd)]
        ended = [items[i].message for i in ends]
        assert sorted(ended) == sorted(set(ended))
        for i in ends:
            end = items[i]
            later = [
                item
                for item in items[i + 1 :]
                if isinstance(item, orchestrator.MessageDelta) and item.message == end.message
            ]
            assert later == []
            earlier = [
                item
                for item in items[:i]
                if isinstance(item, orchestrator.MessageDelta) and item.message == end.message
            ]
            assert earlier, f"message {end.message} ended before any text"
            assert {(d.chat, d.turn, d.name, d.reasoning) for d in earlier} == {
                (end.chat, end.turn, end.name, end.reasoning)
            }
        assert {
            item.message for item in items if isinstance(item, orchestrator.MessageDelta)
        } == set(ended)

    async def test_each_delta_says_who_writes_it_in_which_chat_and_turn(self) -> None:
        watched = await watch()
        state = fold(watched.facts)
        deltas = [
            item
            for item in watched.streams["messages"]
            if isinstance(item, orchestrator.MessageDelta)
        ]
        assert {(d.agent, d.name) for d in deltas} == {
            ("lead", "lead #1"),
            ("writer", "writer #1"),
            ("publisher", "publisher #1"),
        }
        for delta in deltas:
            assert state.members[delta.chat].agent == delta.agent
            turn = next(
                turn
                for turn in state.chats[delta.chat].turns
                if any(getattr(part, "id", None) == delta.message for part in turn.response_parts)
            )
            assert turn.id == delta.turn

    @settings(max_examples=examples(10))
    @given(
        st.lists(
            st.tuples(
                st.text(
                    st.characters(exclude_characters="{}", exclude_categories=("Cs", "Cc")),
                    min_size=1,
                    max_size=30,
                ),
                st.integers(min_value=1, max_value=6),
            ),
            min_size=1,
            max_size=3,
        ),
        st.booleans(),
    )
    def test_any_script_streams_exactly_what_it_says(
        self, says: list[tuple[str, int]], think: bool
    ) -> None:
        """Whatever a worker says, in however many chunks, and whether its coordinator
        reasons first: the deltas of each message join to the text its chat holds."""
        steps = [
            f"{{ say = {json.dumps(text, ensure_ascii=False)}, chunks = {chunks} }}"
            for text, chunks in says
        ]
        thought = '{ think = "plan", chunks = 2 },' if think else ""
        spec = orchestrator.parse_team(
            f"""
[team]
name = "said"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ {thought} {{ delegate = [ {{ agent = "worker", task = "t" }} ] }},
          {{ say = "{{outcomes}}" }} ]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [ {", ".join(steps)} ]
""",
            file="said.toml",
        )

        async def streamed() -> tuple[list[Any], list[Fact]]:
            log = orchestrator.MemoryFactLog()
            async with orchestrator.open_run(spec, "go", journal=log) as run:
                items = [item async for item in run.stream("messages")]
            return items, log.facts

        items, facts = trio.run(streamed)
        joined: dict[str, dict[tuple[str, bool], str]] = defaultdict(dict)
        for item in items:
            if isinstance(item, orchestrator.MessageDelta):
                key = (item.message, item.reasoning)
                joined[item.chat][key] = joined[item.chat].get(key, "") + item.text
        held = {chat: texts for chat, texts in texts_held(fold(facts)).items() if texts}
        assert held == {
            chat: [(message, reasoning, text) for (message, reasoning), text in by_id.items()]
            for chat, by_id in joined.items()
        }
        worker = next(
            chat for chat, member in fold(facts).members.items() if member.agent == "worker"
        )
        assert "".join(text for _, _, text in held[worker]) == "".join(text for text, _ in says)


class TestUpdates:
    async def test_one_update_per_fact_in_order(self) -> None:
        watched = await watch()
        assert [u.fact for u in watched.streams["updates"]] == watched.facts

    async def test_the_changes_rebuild_the_view_of_the_folded_state(self) -> None:
        watched = await watch()
        view = team_view(TeamState(watched.outcome.session))
        seen: list[Any] = []
        for update in watched.streams["updates"]:
            view = jsonpatch.apply_patch(view, list(update.changes))
            seen.append(view)
        assert view == team_view(fold(watched.facts))
        # A change says what the fact changed: the approval is pending after its request.
        requested = next(
            i
            for i, u in enumerate(watched.streams["updates"])
            if u.fact.type == "team/approvalRequested"
        )
        assert [a["tool"] for a in seen[requested]["pendingApprovals"]] == ["publish"]
        assert seen[-1]["pendingApprovals"] == []
        deltas = [u for u in watched.streams["updates"] if u.fact.type == "chat/delta"]
        assert deltas
        assert all(u.changes == () for u in deltas)


class TestValues:
    async def test_the_last_snapshot_is_the_state_the_journal_folds_to(self) -> None:
        watched = await watch()
        snapshots = watched.streams["values"]
        assert snapshots[-1] == orchestrator.TeamSnapshot.from_state(fold(watched.facts))
        last = snapshots[-1]
        assert last.status is orchestrator.RunStatus.COMPLETED
        assert last.answer == watched.outcome.result
        assert last.team == "streamed"
        assert [(m.name, m.status.value) for m in last.members] == [
            ("lead #1", "completed"),
            ("writer #1", "completed"),
            ("publisher #1", "completed"),
        ]
        assert [(t.agent, t.status.value) for t in last.tasks] == [
            ("lead", "completed"),
            ("writer", "completed"),
            ("publisher", "completed"),
        ]

    async def test_one_snapshot_per_durable_batch_each_the_fold_so_far(self) -> None:
        watched = await watch()
        snapshots = watched.streams["values"]
        sequences = [s.sequence for s in snapshots]
        assert sequences == sorted(set(sequences))
        assert sequences[-1] == len(watched.facts)
        for snapshot in snapshots:
            assert snapshot == orchestrator.TeamSnapshot.from_state(
                fold(watched.facts[: snapshot.sequence])
            )
        waiting = [s for s in snapshots if s.pending_approvals]
        assert waiting, "no snapshot shows the approval waiting"
        assert {a.tool_name for s in waiting for a in s.pending_approvals} == {"publish"}
        assert all(s.answer is None for s in snapshots[:-1])


class TestEvents:
    async def test_the_envelopes_are_those_updates_carries(self) -> None:
        watched = await watch()
        assert watched.streams["events"] == [e for u in watched.updates for e in u.envelopes]
        assert watched.streams["events"]


class TestAgui:
    async def test_every_event_validates_and_each_run_is_well_formed(self) -> None:
        events = (await watch()).streams["agui"]
        for event in events:
            validate_event(event)
        starts = [i for i, e in enumerate(events) if e["type"] == "RUN_STARTED"]
        runs = [events[a:b] for a, b in itertools.pairwise([*starts, len(events)])]
        for run in runs:
            check_run(run)
        # The approval interrupts the first run; once decided, the second run goes on.
        assert [run[0]["runId"] for run in runs] == ["run-1", "run-2"]
        assert runs[0][-1]["outcome"]["type"] == "interrupt"
        assert runs[-1][-1]["type"] == "RUN_FINISHED"
        assert "outcome" not in runs[-1][-1] or runs[-1][-1]["outcome"]["type"] == "success"

    async def test_its_text_is_the_chats_text(self) -> None:
        watched = await watch()
        streamed: dict[tuple[str, bool], str] = {}
        for event in watched.streams["agui"]:
            kind = event["type"]
            if kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
                key = (event["messageId"], kind == "REASONING_MESSAGE_CONTENT")
                streamed[key] = streamed.get(key, "") + event["delta"]
        held = {
            (message, reasoning): text
            for texts in texts_held(fold(watched.facts)).values()
            for message, reasoning, text in texts
        }
        assert streamed == held


class TestStreams:
    async def test_streams_opened_late_start_from_the_first_fact(self) -> None:
        spec = orchestrator.parse_team(STREAMED, file="streamed.toml")
        late: dict[str, list[Any]] = {}
        with trio.fail_after(20):
            async with orchestrator.open_run(spec, "ship", on_approval=lambda r: True) as run:
                first = run.stream("updates")
                early = [await first.__anext__() for _ in range(10)]
                # Opened once ten facts are out: it begins at the first all the same.
                middle = run.stream("updates")
                early += [update async for update in first]
                late["middle"] = [update async for update in middle]
                await run.outcome()
                # Opened after the run's end: the whole run, then the end.
                late["after"] = [update async for update in run.stream("updates")]
        assert [u.fact.sequence for u in early] == list(range(1, len(early) + 1))
        assert late["middle"] == early
        assert late["after"] == early

    async def test_the_streams_of_a_cancelled_run_end_with_it(self) -> None:
        """Nobody decides the approval: the run waits until it is cancelled, and the streams
        open meanwhile end with the cancelled run's last batch."""
        spec = orchestrator.parse_team(STREAMED, file="streamed.toml")
        with trio.fail_after(20):
            async with orchestrator.open_run(spec, "ship") as run:
                values = run.stream("values")
                async for snapshot in values:
                    if snapshot.pending_approvals:
                        break
                messages = run.stream("messages")
                run.cancel()
                rest = [snapshot async for snapshot in values]
                said = [item async for item in messages]
        assert rest[-1].status is orchestrator.RunStatus.CANCELLED
        assert rest[-1].pending_approvals == ()
        # The publisher never got to say what it would after its tool call.
        publisher = [m for m in said if m.agent == "publisher"]
        texts = [m.text for m in publisher if isinstance(m, orchestrator.MessageDelta)]
        assert "".join(texts) == "Publishing now."

    async def test_an_unknown_mode_is_refused_with_the_modes(self) -> None:
        spec = orchestrator.parse_team(STREAMED, file="streamed.toml")
        async with orchestrator.open_run(spec, "ship", on_approval=lambda r: True) as run:
            with pytest.raises(ValueError, match="no stream mode 'tokens'") as refused:
                run.stream("tokens")
        assert "'messages', 'updates', 'values', 'events', 'agui'" in str(refused.value)


class TestPureFunctionOfFacts:
    """Each mode is a function of the facts: however the durable batches cut them, the items
    are the same (``values`` gives one snapshot per batch: the fold up to its end)."""

    def test_values_after_each_fact_are_the_folds_so_far(self) -> None:
        facts = recorded_facts()
        assert items_fact_by_fact()["values"] == [
            orchestrator.TeamSnapshot.from_state(fold(facts[:end]))
            for end in range(1, len(facts) + 1)
        ]

    @settings(max_examples=examples(40))
    @given(st.data())
    def test_the_batches_do_not_change_the_items(self, data: st.DataObject) -> None:
        facts = recorded_facts()
        cuts = sorted(
            data.draw(st.sets(st.integers(min_value=1, max_value=len(facts) - 1), max_size=20))
        )
        batches = [facts[a:b] for a, b in itertools.pairwise([0, *cuts, len(facts)])]
        start = TeamState(facts[0].session)
        reference = items_fact_by_fact()
        for mode in ("messages", "updates", "events", "agui"):
            by_batch = projection(mode, start)
            assert [item for batch in batches for item in by_batch.feed(batch)] == reference[mode]
        values = projection("values", start)
        assert [item for batch in batches for item in values.feed(batch)] == [
            reference["values"][end - 1] for end in [*cuts, len(facts)]
        ]
