"""Properties of the delegation graph over generated spawn trees and generated logs."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatSummaryChanges,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatTurnCancelledAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
)
from orchestrator.ahp.state import (
    ChatSummary,
    ErrorInfo,
    ForkChatOrigin,
    SessionStatus,
    SideChatOrigin,
    ToolChatOrigin,
    ToolResultSubagentContent,
    UserChatOrigin,
)
from orchestrator.core import (
    DelegationGraph,
    EdgeKind,
    Fact,
    ViolationKind,
    build_graph,
    tool_call_node,
)
from tests.support.delegation_log import COORDINATOR, FactLog, chat
from tests.support.graph_reference import build_reference
from tests.support.scenarios import LEAD, SESSION, scenarios


@attrs.frozen(kw_only=True)
class SpawnTree:
    """Worker ``i`` (1-based) was spawned by chat ``parents[i - 1]`` (0 is the coordinator)."""

    parents: tuple[int, ...]
    finish_order: tuple[int, ...]  # the workers that finished, in that order

    @property
    def workers(self) -> int:
        return len(self.parents)


@st.composite
def spawn_trees(draw: st.DrawFn) -> SpawnTree:
    """Random fan-out and depth: each worker's parent is any chat spawned before it."""
    size = draw(st.integers(min_value=1, max_value=12))
    parents = tuple(draw(st.integers(min_value=0, max_value=i)) for i in range(size))
    finished = draw(st.permutations(range(1, size + 1)))
    cut = draw(st.integers(min_value=0, max_value=size))
    return SpawnTree(parents=parents, finish_order=tuple(finished[:cut]))


def chat_of(index: int) -> str:
    return COORDINATOR if index == 0 else chat(f"worker-{index}")


def call_of(index: int) -> str:
    return f"delegate-{index}"


def tree_log(tree: SpawnTree) -> tuple[FactLog, list[int]]:
    """The tree as facts; returns the log and the fact count at the end of each append."""
    log = FactLog()
    log.coordinator()
    boundaries = [len(log.facts)]
    tasks: dict[int, str] = {}
    for worker, parent in enumerate(tree.parents, start=1):
        parent_task = tasks.get(parent, "")
        tasks[worker] = log.spawn(
            chat_of(parent), call_of(worker), chat_of(worker), parent_task=parent_task
        )
        boundaries.append(len(log.facts))
    for worker in tree.finish_order:
        parent = tree.parents[worker - 1]
        log.finish(chat_of(parent), call_of(worker), chat_of(worker), tasks[worker])
        boundaries.append(len(log.facts))
    return log, boundaries


def carries_subagent_content(fact: Fact, worker: str) -> bool:
    match fact.action:
        case ChatToolCallContentChangedAction(content=content):
            pass
        case ChatToolCallCompleteAction(result=result):
            content = result.content or ()
        case _:
            return False
    return any(isinstance(c, ToolResultSubagentContent) and c.resource == worker for c in content)


def renumbered(facts: list[Fact]) -> list[Fact]:
    return [attrs.evolve(fact, sequence=i) for i, fact in enumerate(facts, start=1)]


class TestSpawnTrees:
    @given(spawn_trees())
    def test_a_consistent_tree_checks_clean(self, tree: SpawnTree) -> None:
        """Any tree of spawns checks clean, with one spawned edge per worker."""
        log, _ = tree_log(tree)
        graph = build_graph(log.facts)
        assert graph.check() == []
        spawned = graph.edges_of_kind(EdgeKind.SPAWNED)
        assert len(spawned) == tree.workers
        expected = {(chat_of(p), chat_of(w)) for w, p in enumerate(tree.parents, start=1)}
        assert {(u, v) for u, v, _ in spawned} == expected

    @given(spawn_trees())
    def test_both_directions_agree(self, tree: SpawnTree) -> None:
        """The spawned edges (origins) and subagent edges (tool results) are the same pairs."""
        graph = build_graph(tree_log(tree)[0].facts)
        from_origins = {
            (tool_call_node(u, d["tool_call_id"]), v)
            for u, v, d in graph.edges_of_kind(EdgeKind.SPAWNED)
        }
        from_results = {(u, v) for u, v, _ in graph.edges_of_kind(EdgeKind.SUBAGENT)}
        assert from_origins == from_results

    @given(spawn_trees())
    def test_clean_between_appends(self, tree: SpawnTree) -> None:
        """The log checks clean after every complete append, not only at the end."""
        log, boundaries = tree_log(tree)
        graph = DelegationGraph()  # folded live, as the daemon does
        for count, fact in enumerate(log.facts, start=1):
            graph.apply(fact)
            if count in boundaries:
                assert graph.check() == [], fact

    @given(spawn_trees(), st.data())
    def test_missing_subagent_content_is_reported(
        self, tree: SpawnTree, data: st.DataObject
    ) -> None:
        """Dropping one spawn's subagent content reports exactly that worker, under (a)."""
        log, _ = tree_log(tree)
        victim = data.draw(st.integers(min_value=1, max_value=tree.workers), label="victim")
        worker = chat_of(victim)
        facts = renumbered([f for f in log.facts if not carries_subagent_content(f, worker)])
        assert len(facts) < len(log.facts)
        [violation] = build_graph(facts).check()
        assert violation.kind == ViolationKind.ORIGIN_WITHOUT_SUBAGENT
        parent = chat_of(tree.parents[victim - 1])
        assert violation.nodes == (worker, tool_call_node(parent, call_of(victim)))


# ── the fold against its reference ─────────────────────────────────────────


def _chat_added(uri: str, origin: object) -> SessionChatAddedAction:
    return SessionChatAddedAction(
        summary=ChatSummary(
            resource=uri,
            title=uri.rsplit("/", 1)[-1],
            status=SessionStatus.IDLE,
            modified_at="2026-11-22T21:00:00.000Z",
            origin=origin,  # type: ignore[arg-type]
        )
    )


#: Facts a run's log seldom has, mixed into generated logs: chats re-added or updated with
#: another origin (fork, side chat, spawn by someone else, user), removed, turns that end.
_WORKER = "ahp-chat:/worker-0"
_ODD_ACTIONS: list[tuple[str, object]] = [
    (SESSION, _chat_added(_WORKER, ForkChatOrigin(chat=LEAD, turn_id="turn-1"))),
    (SESSION, _chat_added(_WORKER, ToolChatOrigin(chat="ahp-chat:/worker-1", tool_call_id="x"))),
    (SESSION, _chat_added(_WORKER, UserChatOrigin())),
    (SESSION, _chat_added(_WORKER, None)),
    (
        SESSION,
        SessionChatUpdatedAction(
            chat=_WORKER,
            changes=ChatSummaryChanges(
                title="t", origin=SideChatOrigin(chat=LEAD, turn_id="turn-1")
            ),
        ),
    ),
    (SESSION, SessionChatRemovedAction(chat=_WORKER)),
    (LEAD, ChatTurnCancelledAction(turn_id="turn-1", duration=0)),
    (
        _WORKER,
        ChatErrorAction(turn_id="turn-1", duration=0, error=ErrorInfo(error_type="x", message="")),
    ),
]


@st.composite
def shuffled_logs(draw: st.DrawFn) -> list[Fact]:
    """Facts of a generated run, and odd ones, drawn in any order, any number of times."""
    facts = draw(scenarios())
    pool = [(f.channel, f.action) for f in facts] + _ODD_ACTIONS
    picked = draw(st.lists(st.sampled_from(pool), max_size=80))
    return [
        Fact(
            sequence=i,
            session=SESSION,
            channel=channel,
            at="2026-11-22T21:00:00.000Z",
            action=action,  # type: ignore[arg-type]
        )
        for i, (channel, action) in enumerate(picked, start=1)
    ]


def _dump(g: Any) -> tuple[Any, ...]:
    """Everything of a graph, in order: attributes as reprs (a StrEnum is not its value)."""
    return (
        repr(g.graph),
        [(n, repr(d)) for n, d in g.nodes(data=True)],
        [(u, v, k, repr(d)) for u, v, k, d in g.edges(keys=True, data=True)],
        list(g.in_edges(keys=True)),
    )


class TestAgainstReference:
    @given(st.one_of(scenarios(), shuffled_logs()))
    def test_the_fold_builds_the_reference_graph(self, facts: list[Fact]) -> None:
        """The fold (indexes of its own, folds looked up by type) builds exactly the graph of
        the plain fold it replaced (tests/support/graph_reference.py): the same nodes, edges, keys
        and attributes, in the same order, whatever the facts and their order."""
        graph = build_graph(facts)
        reference = build_reference(facts)
        assert _dump(graph.graph) == _dump(reference._g)
        assert graph.last_sequence == reference.last_sequence
