"""Properties of the delegation graph over generated spawn trees."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.ahp import (
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ToolResultSubagentContent,
)
from orchestrator.core import (
    DelegationGraph,
    EdgeKind,
    Fact,
    ViolationKind,
    build_graph,
    tool_call_node,
)

from .test_graph import COORDINATOR, FactLog, chat


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
