"""A fork is the source's fold at the fork point, re-recorded as a new session's own facts."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp import unstructure
from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatResponsePartAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatSummary,
    ForkChatOrigin,
    MarkdownResponsePart,
    SideChatSelection,
    ToolCallResponsePart,
    ToolChatOrigin,
    ToolResultSubagentContent,
    TurnState,
)
from orchestrator.base import RunError
from orchestrator.core import (
    DelegationGraph,
    EdgeKind,
    Fact,
    ForkedFrom,
    RunFinished,
    SessionForked,
    TeamState,
    before_run_end,
    build_graph,
    chat_fork_actions,
    conversation,
    fact_to_json,
    fork_facts,
    fork_point,
    fork_rows,
    fork_sequence,
    side_chat_context,
)
from tests.support.examples import examples
from tests.support.scenarios import LEAD, SESSION, Log, scenarios

NEW = "ahp-session:/00000000-0000-4000-8000-0000000000ff"
NOW = "2026-12-07T13:00:00.000Z"
WORKER = "ahp-chat:/worker-0"


#: Chat URIs a client may choose (AHP createChat takes any text after the prefix): what
#: JSON writes escaped, or as it is, must be renamed as a plain one is.
ODD_WORKERS = (
    WORKER,
    'ahp-chat:/w"quoted"',
    "ahp-chat:/w\\back",
    "ahp-chat:/wörker",
    "ahp-chat:/w\x01",
    "ahp-chat:/w\\",
)


@st.composite
def _uri_texts(draw: st.DrawFn, worker: str = WORKER) -> str:
    """A text naming a URI of the session (or another): whole, quoted inside, escaped,
    as a key, at the end of a text after an escaped quote."""
    uri = draw(st.sampled_from([LEAD, worker, SESSION, "ahp-chat:/elsewhere", "ahp-chat:/"]))
    forms = [
        uri,
        f'"{uri}"',
        f'say "{uri}',
        f'{uri}"',
        f'\\"{uri}\\"',
        f'x\\\\"{uri}"',
        f'["{uri}", "{uri}"]',
        f'{{"{uri}": 1}}',
        f"{uri} and {uri}",
        f'"ahp-{uri}"',
    ]
    return draw(st.sampled_from(forms)) + draw(st.sampled_from(["", " ", "é", "\\", "\n"]))


@st.composite
def _runs_naming_uris(draw: st.DrawFn) -> list[Fact]:
    """A run whose prompts, answers and streamed text name URIs (see :func:`_uri_texts`):
    a fact that names a chat in its action is renamed where a value is the URI whole, a
    stream's delta is copied as written."""
    worker = draw(st.sampled_from(ODD_WORKERS))
    log = Log()
    log.run_started(budget=1)
    log.turn(LEAD, text=draw(_uri_texts(worker)))
    call, task = log.delegate(LEAD, "researcher")
    log.start_worker(LEAD, call, task, worker, "researcher")
    for chat in (worker, LEAD):
        if chat == worker:
            log.turn(chat, text=draw(_uri_texts(worker)))
        for _ in range(draw(st.integers(0, 3))):
            text = draw(_uri_texts(worker))
            turn = log.active_turn[chat]
            part = MarkdownResponsePart(id=f"part-{len(log.facts)}", content=text)
            log.add(chat, ChatResponsePartAction(turn_id=turn, part=part))
            log.add(chat, ChatDeltaAction(turn_id=turn, part_id=part.id, content=text))
        log.end_turn(chat)
    return log.facts


def _new_chats() -> Any:
    counter = itertools.count(1)
    return lambda: f"ahp-chat:/copy-{next(counter)}"


def _rename(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {names.get(k, k): _rename(v, names) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rename(v, names) for v in value]
    return value


def _node(node: str, names: Mapping[str, str]) -> str:
    """A graph node id renamed (a tool call's is ``<chat URI>#<id>``)."""
    chat, sep, call = node.partition("#")
    return names.get(chat, chat) + sep + call


def _plain(value: Any) -> Any:
    """A state value as JSON-like data (AHP values by their wire form)."""
    plain: Any = json.loads(json.dumps(unstructure(value), default=str))
    return plain


def _records(state: TeamState) -> Any:
    run = None if state.run is None else attrs.asdict(attrs.evolve(state.run, forked_from=None))
    return _plain(
        {
            "run": run,
            "members": {k: attrs.asdict(v) for k, v in state.members.items()},
            "tasks": {k: attrs.asdict(v) for k, v in state.tasks.items()},
            "approvals": {k: attrs.asdict(v) for k, v in state.approvals.items()},
        }
    )


def _chats(state: TeamState) -> Any:
    chats = {}
    for uri, chat in state.chats.items():
        data = _plain(chat)
        # A copied root chat's origin names its source (the one change a copy makes).
        if isinstance(chat.origin, ForkChatOrigin) or data.get("origin") == {"kind": "user"}:
            data.pop("origin", None)
        chats[uri] = data
    return chats


def _graph(graph: DelegationGraph) -> tuple[set[str], set[tuple[str, str, str]]]:
    """Nodes and edges but the fork's lineage: placeholders of source chats, forked edges,
    and the origin attributes of root chats."""
    g = graph.graph
    nodes = {n for n, d in g.nodes(data=True) if d["kind"] != "chat" or d["added"]}
    edges = {
        (u, v, d["kind"]) for u, v, d in g.edges(data=True) if d["kind"] != EdgeKind.FORKED.value
    }
    return nodes, edges


class TestFork:
    @settings(max_examples=examples(200), deadline=None)
    @given(facts=scenarios(), data=st.data())
    def test_a_fork_opens_to_the_sources_fold_at_the_fork_point(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """At any sequence: the fork's copies fold to the source's fold there (chats, tasks,
        members, approvals, the graph), renamed; the lineage fact follows them; the source's
        facts are unchanged."""
        if not facts:
            return
        before = [fact_to_json(f) for f in facts]
        sequence = data.draw(st.integers(1, len(facts)))
        fork = fork_facts(facts, session=NEW, new_chat=_new_chats(), now=NOW, sequence=sequence)
        assert [fact_to_json(f) for f in facts] == before
        assert [f.sequence for f in fork.facts] == list(range(1, sequence + 2))
        assert {f.session for f in fork.facts} == {NEW}
        names = {SESSION: NEW, **fork.chats}
        source = TeamState.fold(SESSION, facts[:sequence])
        copy = TeamState.fold(NEW, fork.facts)
        assert _chats(copy) == _rename(_chats(source), names)
        assert _records(copy) == _rename(_records(source), names)
        assert copy.last_sequence == sequence + 1
        if source.run is not None:
            assert copy.run is not None
            assert copy.run.forked_from == ForkedFrom(session=SESSION, sequence=sequence)
        source_graph = build_graph(facts[:sequence])
        copy_graph = build_graph(fork.facts)
        nodes, edges = _graph(source_graph)
        assert _graph(copy_graph) == (
            {_node(n, names) for n in nodes},
            {(_node(u, names), _node(v, names), kind) for u, v, kind in edges},
        )
        forked = {(u, v) for u, v, _ in copy_graph.edges_of_kind(EdgeKind.FORKED)}
        assert forked == set(fork.chats.items())
        # The fork's graph is exactly as consistent as the source's at that point.
        assert [v.kind for v in copy_graph.check()] == [v.kind for v in source_graph.check()]

    @settings(max_examples=examples(200), deadline=None)
    @given(facts=scenarios(), data=st.data())
    def test_a_fork_of_the_stored_text_is_the_same_fork(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """fork_rows, on the facts' stored text, writes what fork_facts writes, byte for byte."""
        if not facts:
            return
        sequence = data.draw(st.integers(1, len(facts)))
        made = fork_facts(facts, session=NEW, new_chat=_new_chats(), now=NOW, sequence=sequence)
        stored = [(f.sequence, f.channel, f.at, f.type, fact_to_json(f)) for f in facts]
        rows = fork_rows(
            stored[:sequence], source=SESSION, session=NEW, new_chat=_new_chats(), now=NOW
        )
        assert [row[4] for row in rows.rows] == [fact_to_json(f) for f in made.facts]
        assert [row[:4] for row in rows.rows] == [
            (f.sequence, f.channel, f.at, f.type) for f in made.facts
        ]
        assert rows.chats == made.chats
        run = TeamState.fold(NEW, made.facts).run
        assert rows.status == (None if run is None or run.status is None else str(run.status))
        assert (rows.created is None) == (run is None)

    @settings(max_examples=examples(200), deadline=None)
    @given(facts=_runs_naming_uris(), data=st.data())
    def test_a_uri_in_a_text_is_renamed_in_the_stored_text_as_in_the_fact(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """A text that is a URI whole (in a fact naming chats) is renamed; one quoted
        inside a string, or in a stream's delta, is not: fork_rows on the stored text
        writes what fork_facts writes, byte for byte, and leaves the source as it was."""
        sequence = data.draw(st.integers(1, len(facts)))
        made = fork_facts(facts, session=NEW, new_chat=_new_chats(), now=NOW, sequence=sequence)
        stored = [(f.sequence, f.channel, f.at, f.type, fact_to_json(f)) for f in facts]
        before = list(stored)
        rows = fork_rows(
            stored[:sequence], source=SESSION, session=NEW, new_chat=_new_chats(), now=NOW
        )
        assert [row[4] for row in rows.rows] == [fact_to_json(f) for f in made.facts]
        assert [row[1] for row in rows.rows] == [f.channel for f in made.facts]
        assert stored == before

    def test_root_chats_are_forks_of_their_source_workers_keep_their_tool_origin(self) -> None:
        """The coordinator's copy has a fork origin at its last turn; a worker's copy is
        spawned by the copy of its parent's tool call."""
        log = Log()
        log.run_started(budget=1)
        turn = log.turn(LEAD)
        call, task = log.delegate(LEAD, "researcher", queued=False)
        log.start_worker(LEAD, call, task, "ahp-chat:/w", "researcher")
        fork = fork_facts(
            log.facts, session=NEW, new_chat=_new_chats(), now=NOW, sequence=len(log.facts)
        )
        added = {
            f.action.summary.resource: f.action.summary.origin
            for f in fork.facts
            if isinstance(f.action, SessionChatAddedAction)
        }
        lead, worker = fork.chats[LEAD], fork.chats["ahp-chat:/w"]
        assert added[lead] == ForkChatOrigin(chat=LEAD, turn_id=turn)
        assert added[worker] == ToolChatOrigin(chat=lead, tool_call_id=call)
        assert build_graph(fork.facts).check() == []
        lineage = fork.facts[-1].action
        assert isinstance(lineage, SessionForked)
        assert lineage.chats == {LEAD: lead, "ahp-chat:/w": worker}


class TestForkSequence:
    def _facts(self) -> tuple[list[Fact], str]:
        log = Log()
        log.run_started(budget=1)
        turn = log.turn(LEAD)
        log.end_turn(LEAD)
        log.run_finished()
        return log.facts, turn

    def test_a_turn_resolves_to_the_fact_that_ended_it(self) -> None:
        facts, turn = self._facts()
        at = fork_sequence(facts, turn_id=turn)
        assert facts[at - 1].action.type == "chat/turnComplete"

    def test_no_point_is_the_last_fact(self) -> None:
        facts, _ = self._facts()
        assert fork_sequence(facts) == len(facts)

    @pytest.mark.parametrize(
        ("turn", "sequence", "message"),
        [
            ("nope", None, "no turn 'nope' ended"),
            (None, 0, "no fact 0 to fork at"),
            (None, 999, "no fact 999 to fork at"),
            ("x", 1, "not both"),
        ],
    )
    def test_a_point_it_does_not_have_is_refused(
        self, turn: str | None, sequence: int | None, message: str
    ) -> None:
        facts, _ = self._facts()
        with pytest.raises(RunError, match=message):
            fork_sequence(facts, turn_id=turn, sequence=sequence)

    def test_a_fork_that_runs_on_leaves_the_runs_end_out(self) -> None:
        facts, _ = self._facts()
        assert isinstance(facts[-1].action, RunFinished)
        assert before_run_end(facts, len(facts)) == len(facts) - 1
        assert before_run_end(facts, len(facts) - 1) == len(facts) - 1


class TestForkPoint:
    ROWS = [
        (1, SESSION, "t1", "team/runStarted", "{}"),
        (2, SESSION, "t2", "session/chatAdded", "{}"),  # a spawn: the worker...
        (3, LEAD, "t2", "chat/toolCallContentChanged", "{}"),  # ...and its parent's content
        (4, LEAD, "t3", "chat/delta", "{}"),
        (5, SESSION, "t4", "team/runFinished", "{}"),
    ]

    def test_a_point_inside_a_batch_moves_to_its_end(self) -> None:
        """The facts of one append share their time: a fork never splits them."""
        assert fork_point(self.ROWS, sequence=2) == 3
        assert fork_point(self.ROWS, sequence=3) == 3
        assert fork_point(self.ROWS, sequence=1) == 1

    def test_a_fork_that_runs_on_leaves_the_runs_end_out(self) -> None:
        assert fork_point(self.ROWS) == 5
        assert fork_point(self.ROWS, runs_on=True) == 4

    @pytest.mark.parametrize(
        ("turn", "sequence", "message"),
        [
            ("nope", None, "no turn 'nope' ended"),
            (None, 0, "no fact 0 to fork at"),
            (None, 6, "no fact 6 to fork at"),
            ("x", 1, "not both"),
        ],
    )
    def test_a_point_it_does_not_have_is_refused(
        self, turn: str | None, sequence: int | None, message: str
    ) -> None:
        with pytest.raises(RunError, match=message):
            fork_point(self.ROWS, turn_id=turn, sequence=sequence)

    def test_a_turn_resolves_to_its_end(self) -> None:
        log = Log()
        log.run_started(budget=1)
        turn = log.turn(LEAD)
        log.end_turn(LEAD)
        log.run_finished()
        rows = [(f.sequence, f.channel, f.at, f.type, fact_to_json(f)) for f in log.facts]
        assert fork_point(rows, turn_id=turn) == fork_sequence(log.facts, turn_id=turn)


def test_nothing_to_fork_is_refused() -> None:
    with pytest.raises(RunError, match="nothing to fork"):
        fork_facts([], session=NEW, new_chat=_new_chats(), now=NOW, sequence=0)


def _no_subagents(value: Any) -> Any:
    """A chat's turns as data, without the subagent content a chat fork leaves out."""
    if isinstance(value, dict):
        return {k: _no_subagents(v) for k, v in value.items()}
    if isinstance(value, list):
        return [
            _no_subagents(v)
            for v in value
            if not (isinstance(v, dict) and v.get("type") == "subagent")
        ]
    return value


class TestChatFork:
    @settings(max_examples=examples(100), deadline=None)
    @given(facts=scenarios(), data=st.data())
    def test_a_chat_fork_holds_the_sources_turns_through_a_completed_turn(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """Folded after its ``chatAdded``, a fork's actions give the new chat the source's
        turns through the one named, as they ended, less their subagent content (the workers
        stay their source call's: the graph check is as clean as before)."""
        state = TeamState.fold(SESSION, facts)
        completed = [
            (uri, turn.id)
            for uri, chat in state.chats.items()
            for turn in chat.turns
            if turn.state is TurnState.COMPLETE
        ]
        if not completed:
            return
        uri, turn = data.draw(st.sampled_from(completed))
        source = state.chats[uri]
        actions = chat_fork_actions(source, turn, now=NOW)
        copy = "ahp-chat:/copy"
        summary = ChatSummary(
            resource=copy,
            title="fork",
            status=source.status,
            modified_at=NOW,
            origin=ForkChatOrigin(chat=uri, turn_id=turn),
        )
        after = len(facts)
        more = [
            Fact(
                sequence=after + 1,
                session=SESSION,
                channel=SESSION,
                at=NOW,
                action=SessionChatAddedAction(summary=summary),
            )
        ] + [
            Fact(sequence=after + 2 + i, session=SESSION, channel=copy, at=NOW, action=a)
            for i, a in enumerate(actions)
        ]
        folded = TeamState.fold(SESSION, [*facts, *more])
        through = next(i for i, t in enumerate(source.turns) if t.id == turn) + 1
        assert _no_subagents(_plain(folded.chats[copy].turns)) == _no_subagents(
            _plain(source.turns[:through])
        )
        assert not any(
            isinstance(c, ToolResultSubagentContent)
            for t in folded.chats[copy].turns
            for p in t.response_parts
            if isinstance(p, ToolCallResponsePart)
            for c in getattr(p.tool_call, "content", None) or ()
        )
        assert folded.chats[uri] == state.chats[uri]
        before = [v.kind for v in build_graph(facts).check()]
        assert [v.kind for v in build_graph([*facts, *more]).check()] == before

    def test_a_fork_is_refused_at_a_turn_that_is_not_a_completed_one(self) -> None:
        log = Log()
        log.run_started(budget=1)
        log.turn(LEAD)
        state = TeamState.fold(SESSION, log.facts)
        lead = state.chats[LEAD]
        assert lead.active_turn is not None
        with pytest.raises(RunError, match="still running"):
            chat_fork_actions(lead, lead.active_turn.id, now=NOW)
        with pytest.raises(RunError, match="has no turn 'nope'"):
            chat_fork_actions(lead, "nope", now=NOW)


class TestSideChatContext:
    @settings(max_examples=examples(100), deadline=None)
    @given(facts=scenarios(), data=st.data(), selected=st.none() | st.text(min_size=1))
    def test_the_context_is_the_sources_conversation_through_the_turn(
        self, facts: list[Fact], data: st.DataObject, selected: str | None
    ) -> None:
        """The context is the source's conversation through that turn (a running turn: its
        message and the text so far), then the selection."""
        state = TeamState.fold(SESSION, facts)
        turns = [
            (uri, turn.id, False) for uri, chat in state.chats.items() for turn in chat.turns
        ] + [
            (uri, chat.active_turn.id, True)
            for uri, chat in state.chats.items()
            if chat.active_turn is not None
        ]
        if not turns:
            return
        uri, turn, running = data.draw(st.sampled_from(turns))
        source = state.chats[uri]
        selection = None if selected is None else SideChatSelection(text=selected)
        context = side_chat_context(source, turn, selection)
        if running:
            expected = list(conversation(source))
        else:
            through = next(i for i, t in enumerate(source.turns) if t.id == turn) + 1
            expected = list(
                conversation(attrs.evolve(source, turns=source.turns[:through], active_turn=None))
            )
        body = list(context[: len(context) - (selection is not None)])
        assert body[: len(expected)] == expected
        assert all(role == "assistant" for role, _ in body[len(expected) :])
        if selection is not None:
            assert context[-1] == ("user", f"About this part of the conversation:\n\n{selected}")
