"""The delegation graph's vocabulary: node ids, and the attributes every node of a kind carries
from the moment it exists, placeholders included, so exports and readers never meet a missing
key."""

from __future__ import annotations

import pytest

from orchestrator.ahp.actions import ChatResponsePartAction
from orchestrator.ahp.state import SystemNotificationResponsePart
from orchestrator.core import (
    REMOTE_TASK_META,
    USER_NODE,
    DelegationGraph,
    EdgeKind,
    NodeKind,
    remote_task_node,
    tool_call_node,
)
from orchestrator.core._graph_schema import _NODE_TEMPLATES
from tests.support.delegation_log import COORDINATOR, SESSION, FactLog, chat
from tests.support.graph_logs import request_approval

URL = "http://127.0.0.1:9/"


def every_kind() -> DelegationGraph:
    """A graph with a node of every kind, and placeholders: a worker named by subagent content
    but never added, and a queued task's parent task that was never created."""
    log = FactLog()
    log.coordinator()
    log.spawn(COORDINATOR, "call-1", chat("worker"))
    log.tool_call(COORDINATOR, "call-2")
    log.subagent_content(COORDINATOR, "call-2", chat("ghost"), agent="researcher")
    log.tool_call(COORDINATOR, "call-3")
    log.create_task(COORDINATOR, "call-3", agent="writer", queued=True, parent_task="task-99")
    request_approval(log, chat("worker"))
    log.add(chat("worker"), remote_part("rt-1", "working"))
    return log.graph()


def remote_part(remote_id: str, state: str, *, url: str = URL) -> ChatResponsePartAction:
    """A remote teammate's record of its remote task's state, as its backend writes it."""
    meta = {
        "agent": "far",
        "url": url,
        "remoteTaskId": remote_id,
        "state": state,
        "rawState": "TASK_STATE_" + state.upper(),
        "card": {"name": "Far Agent", "version": "1.0", "skills": []},
    }
    part = SystemNotificationResponsePart(content=state, meta={REMOTE_TASK_META: meta})
    return ChatResponsePartAction(turn_id="turn-1", part=part)


class TestRemoteTasks:
    def test_a_remote_task_is_its_own_node_linked_from_its_chat(self) -> None:
        log = FactLog()
        log.coordinator()
        log.spawn(COORDINATOR, "call-1", chat("far"))
        for state in ("submitted", "working", "completed"):
            log.add(chat("far"), remote_part("rt-1", state))
        graph = log.graph()
        node = remote_task_node(URL, "rt-1")
        assert graph.nodes_of_kind(NodeKind.REMOTE_TASK) == [node]
        data = graph.graph.nodes[node]
        assert data["status"] == "completed"
        assert data["raw_state"] == "TASK_STATE_COMPLETED"
        assert data["card_name"] == "Far Agent"
        assert data["chat"] == chat("far")
        remote = [(v, k) for _, v, k in graph.graph.out_edges(chat("far"), keys=True)]
        assert [(v, k) for v, k in remote if k == "remote"] == [(node, "remote")]
        assert graph.check() == []

    def test_a_part_without_a_remote_task_id_makes_no_node(self) -> None:
        log = FactLog()
        log.coordinator()
        log.add(COORDINATOR, remote_part("", "sending"))
        assert log.graph().nodes_of_kind(NodeKind.REMOTE_TASK) == []


def test_a_tool_call_s_node_is_its_chat_and_its_id() -> None:
    assert tool_call_node("ahp-chat:/a", "call-1") == "ahp-chat:/a#call-1"


def test_the_user_is_one_node() -> None:
    graph = every_kind()
    assert graph.nodes_of_kind(NodeKind.USER) == [USER_NODE]


def test_the_graph_has_a_node_of_every_kind() -> None:
    graph = every_kind()
    assert {kind for kind in NodeKind if graph.nodes_of_kind(kind)} == set(NodeKind)
    assert set(_NODE_TEMPLATES) == set(NodeKind)


@pytest.mark.parametrize("kind", list(NodeKind))
def test_every_node_carries_its_kind_s_template_in_order(kind: NodeKind) -> None:
    """Kind, then sequence, then the kind's attributes, whether the node was seen in full or
    only named (the placeholders keep None where nothing was said)."""
    graph = every_kind()
    template = list(_NODE_TEMPLATES[kind])
    assert template[:2] == ["kind", "sequence"]
    for node in graph.nodes_of_kind(kind):
        data = graph.graph.nodes[node]
        assert list(data)[: len(template)] == template, node
        assert data["kind"] == kind
        assert isinstance(data["sequence"], int)


def test_placeholders_are_nodes_with_their_defaults() -> None:
    graph = every_kind().graph
    ghost = graph.nodes[chat("ghost")]
    assert (ghost["added"], ghost["agent"], ghost["origin"]) == (False, None, None)
    assert graph.nodes["task-99"]["title"] is None
    assert SESSION in graph


def test_edges_carry_their_kind() -> None:
    graph = every_kind()
    kinds = {data["kind"] for _, _, data in graph.graph.edges(data=True)}
    assert kinds <= set(EdgeKind)
    assert {EdgeKind.CONTAINS, EdgeKind.SPAWNED, EdgeKind.SUBAGENT, EdgeKind.GATES} <= kinds
