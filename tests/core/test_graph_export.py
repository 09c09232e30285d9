"""The delegation graph's exports: JSON and GraphML keep every attribute, DOT and Mermaid caption
each node by its kind and escape what their syntax cannot hold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import networkx as nx
import pytest

from orchestrator.ahp.state import (
    UserChatOrigin,
)
from orchestrator.core import (
    ApprovalRequested,
    DelegationGraph,
    EdgeKind,
    HandoffRecorded,
    NodeKind,
    to_dot,
    to_graphml,
    to_json,
    to_mermaid,
)
from orchestrator.core._graph_export import _graphml_value
from tests.support.delegation_log import COORDINATOR, ROOT_TASK, SESSION, FactLog, chat
from tests.support.graph_logs import WORKERS, edge_set, request_approval


@pytest.fixture
def full() -> DelegationGraph:
    """Three workers, a handoff and an approval, with awkward characters in names."""
    log = FactLog()
    log.coordinator(agent='lead "boss" #1 <x> \\ {y}')
    task = log.spawn(COORDINATOR, "c1", WORKERS[0], agent="researcher")
    log.spawn(COORDINATOR, "c2", WORKERS[1], agent="writer")
    log.spawn(WORKERS[0], "c3", WORKERS[2], agent="checker", parent_task=task)
    log.chat_added(chat("lawyer"), origin=None, agent="legal", task=ROOT_TASK)
    log.add(
        SESSION,
        HandoffRecorded(
            task=ROOT_TASK,
            from_chat=COORDINATOR,
            to_chat=chat("lawyer"),
            to_agent="legal",
            reason="contract",
            resume_target="lead",
            tool_call_id="h1",
        ),
    )
    request_approval(log, WORKERS[1])
    return log.graph()


ALL_CHATS = [COORDINATOR, *WORKERS, chat("lawyer")]


class TestJson:
    def test_node_link_data(self, full: DelegationGraph) -> None:
        """JSON node-link data with sorted keys, every node and keyed edge."""
        text = to_json(full)
        data = json.loads(text)
        assert set(data) == {"directed", "multigraph", "graph", "nodes", "edges"}
        assert (data["directed"], data["multigraph"]) == (True, True)
        assert text == json.dumps(data, sort_keys=True)
        assert {n["id"] for n in data["nodes"] if n["kind"] == "chat"} == set(ALL_CHATS)
        spawned = {(e["source"], e["target"]) for e in data["edges"] if e["kind"] == "spawned"}
        assert spawned == edge_set(full, EdgeKind.SPAWNED)
        assert all("key" in e for e in data["edges"])

    def test_round_trip(self, full: DelegationGraph) -> None:
        """node_link_graph reads it back into the same graph."""
        back = nx.node_link_graph(json.loads(to_json(full)), edges="edges")
        assert nx.utils.graphs_equal(back, full.graph)


class TestGraphml:
    def test_parses_back(self, full: DelegationGraph) -> None:
        """GraphML text that networkx parses back, None attributes left out."""
        back = nx.parse_graphml(to_graphml(full))
        assert set(back.nodes) == set(full.graph.nodes)
        assert back.number_of_edges() == full.graph.number_of_edges()
        kinds_back = sorted(d["kind"] for _, _, d in back.edges(data=True))
        assert kinds_back == sorted(d["kind"] for _, _, d in full.graph.edges(data=True))
        assert back.nodes[COORDINATOR]["agent"] == 'lead "boss" #1 <x> \\ {y}'
        assert "interactivity" not in back.nodes[COORDINATOR]  # None: left out
        assert back.nodes[WORKERS[0]]["added"] is True
        handoff = [d for _, _, d in back.edges(data=True) if d["kind"] == "handoff"]
        assert handoff[0]["reason"] == "contract"


def dot_tokens(text: str) -> Iterator[str]:
    """Quoted strings (escapes honoured) and the single characters outside them."""
    i = 0
    while i < len(text):
        if text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            yield text[i : j + 1]
            i = j + 1
        else:
            yield text[i]
            i += 1


def dot_unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1])


class TestDot:
    def test_well_formed(self, full: DelegationGraph) -> None:
        """Braces balance outside quoted strings; every chat id appears quoted."""
        text = to_dot(full)
        assert text.startswith("digraph delegation {")
        tokens = list(dot_tokens(text))
        depth = 0
        for token in tokens:
            depth += {"{": 1, "}": -1}.get(token, 0)
            assert depth >= 0
        assert depth == 0
        quoted = {dot_unquote(t) for t in tokens if t.startswith('"')}
        assert set(ALL_CHATS) <= quoted

    def test_labels_shapes_and_edges(self, full: DelegationGraph) -> None:
        """Labels are escaped, shapes follow kinds, and each edge's label is its kind."""
        text = to_dot(full)
        assert '\\"boss\\"' in text
        assert "\\\\ {y}" in text
        assert f'"{COORDINATOR}" -> "{WORKERS[0]}" [label="spawned", kind="spawned"];' in text
        assert f'"{COORDINATOR}" -> "{chat("lawyer")}" [label="handoff"' in text
        assert '"approval-1" [label="approval-1: shell\\npending", shape="diamond"' in text
        assert f'"{SESSION}" [label="{SESSION}", shape="tab"' in text
        edges = [line for line in text.splitlines() if " -> " in line]
        assert len(edges) == full.graph.number_of_edges()


MERMAID_NODE = re.compile(
    r'^    ([A-Za-z0-9_]+)(\[\(|\[\[|\(\(|\[|\(|\{)"([^"]*)"(\)\]|\]\]|\)\)|\]|\)|\})$'
)


MERMAID_EDGE = re.compile(r"^    ([A-Za-z0-9_]+) (-->|==>|-\.->)\|([a-z_]+)\| ([A-Za-z0-9_]+)$")


def parse_mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """Node id → label, and (source, kind, target) edges; fails on any other line."""
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    for line in lines[1:]:
        if node := MERMAID_NODE.match(line):
            assert node[1] not in nodes
            nodes[node[1]] = node[3]
        elif edge := MERMAID_EDGE.match(line):
            edges.append((edge[1], edge[3], edge[4]))
        else:
            pytest.fail(f"unexpected mermaid line {line!r}")
    return nodes, edges


class TestMermaid:
    def test_compact(self, full: DelegationGraph) -> None:
        """Chats with agent and status, who spawned whom, the handoff and the approval."""
        nodes, edges = parse_mermaid(to_mermaid(full))
        by_label = {label.split("<br/>")[0]: node_id for node_id, label in nodes.items()}
        lead = by_label["lead #quot;boss#quot; #35;1 #lt;x#gt; \\ {y} #35;1"]
        researcher, writer, checker = (
            by_label["researcher #35;1"],
            by_label["writer #35;1"],
            by_label["checker #35;1"],
        )
        assert nodes[researcher] == "researcher #35;1<br/>running"
        assert (lead, "spawned", researcher) in edges
        assert (lead, "spawned", writer) in edges
        assert (researcher, "spawned", checker) in edges
        assert (lead, "handoff", by_label["legal #35;1"]) in edges
        approval = by_label["approval-1: shell"]
        assert (approval, "requested_by", writer) in edges
        assert (approval, "routed_to", by_label["user"]) in edges
        assert {kind for _, kind, _ in edges} == {"spawned", "handoff", "requested_by", "routed_to"}
        assert len(nodes) == len(ALL_CHATS) + 2

    def test_detail_draws_everything(self, full: DelegationGraph) -> None:
        """detail=True draws every node and edge of the graph."""
        nodes, edges = parse_mermaid(to_mermaid(full, detail=True))
        assert len(nodes) == full.graph.number_of_nodes()
        assert len(edges) == full.graph.number_of_edges()

    def test_ids_stay_unique_after_sanitising(self) -> None:
        """Ids that differ only in unsafe characters still get distinct Mermaid ids."""
        log = FactLog()
        log.chat_added("ahp-chat:/a-b", origin=UserChatOrigin())
        log.chat_added("ahp-chat:/a_b", origin=UserChatOrigin())
        log.chat_added("ahp-chat:/a.b", origin=UserChatOrigin())
        nodes, _ = parse_mermaid(to_mermaid(log.graph()))
        assert len(nodes) == 3


class TestExportDetails:
    def test_chats_are_named_by_agent_and_number(self) -> None:
        """Two chats of one agent are ``analyst #1`` and ``analyst #2`` in DOT and Mermaid,
        and the coordinator an approval is routed to is ``lead #1``: never a chat URI."""
        log = FactLog()
        log.coordinator()
        log.spawn(COORDINATOR, "c1", chat("a1"), agent="analyst")
        log.spawn(COORDINATOR, "c2", chat("a2"), agent="analyst")
        log.tool_call(chat("a2"), "c9")
        log.add(
            SESSION,
            ApprovalRequested(
                approval="approval-1",
                chat=chat("a2"),
                turn_id="turn-1",
                tool_call_id="c9",
                tool_name="deploy",
                requested_by="analyst",
                routed_to=COORDINATOR,
                policy_scope="analyst.needs_approval",
                summary="region=south",
            ),
        )
        graph = log.graph()
        dot = to_dot(graph)
        assert f'"{chat("a1")}" [label="analyst #1\\n' in dot
        assert f'"{chat("a2")}" [label="analyst #2\\n' in dot
        nodes, edges = parse_mermaid(to_mermaid(graph))
        by_label = {label.split("<br/>")[0]: node_id for node_id, label in nodes.items()}
        approval = by_label["approval-1: deploy"]
        assert (approval, "requested_by", by_label["analyst #35;2"]) in edges
        assert (approval, "routed_to", by_label["lead #35;1"]) in edges

    def test_finished_waits_are_drawn_dashed(self) -> None:
        """A wait that ended is dashed in DOT and dotted in Mermaid."""
        log = FactLog()
        log.coordinator()
        task = log.spawn(COORDINATOR, "c1", chat("w"))
        log.finish(COORDINATOR, "c1", chat("w"), task)
        graph = log.graph()
        assert '[label="waits_on", kind="waits_on", style="dashed"]' in to_dot(graph)
        assert "-.->|waits_on|" in to_mermaid(graph, detail=True)

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (True, True),
            (3, 3),
            (1.5, 1.5),
            (NodeKind.CHAT, "chat"),
            (("a", 1), '["a", 1]'),
            ({"b": 1, "a": 2}, '{"a": 2, "b": 1}'),
        ],
    )
    def test_graphml_values(self, value: object, expected: object) -> None:
        """GraphML gets plain scalars; anything else becomes a JSON string."""
        converted = _graphml_value(value)
        assert converted == expected
        assert type(converted) is type(expected)
