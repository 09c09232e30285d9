"""The delegation graph's consistency check: what :meth:`DelegationGraph.check
<orchestrator.core._graph.DelegationGraph.check>` finds wrong with a log.

The fold never refuses a fact (see :mod:`._graph`): a log that contradicts itself folds to a
graph that shows the contradiction, and this check names it. It checks:

- the spawn edge is recorded twice by one atomic append, so its two views must agree in both
  directions (a worker's tool origin, the tool call's subagent content);
- spawns form a forest;
- every chat descends from a root chat;
- every approval names a known requester.

Each finding is a :class:`Violation` whose message says what is wrong, and with which nodes. Pure:
no trio, no IO.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import networkx as nx

from ._graph_schema import EdgeKind, NodeKind, tool_call_node

__all__ = ["Violation", "ViolationKind"]


class ViolationKind(enum.StrEnum):
    """What :meth:`DelegationGraph.check <orchestrator.core._graph.DelegationGraph.check>`
    can find wrong with a log."""

    #: (a) a worker's tool origin names a tool call without subagent content for it
    ORIGIN_WITHOUT_SUBAGENT = "origin-without-subagent"
    #: (b) subagent content names a chat whose origin is not that tool call (or no chat)
    SUBAGENT_WITHOUT_ORIGIN = "subagent-without-origin"
    #: (c) chats that spawned each other in a circle
    SPAWN_CYCLE = "spawn-cycle"
    #: (d) a chat no root chat reaches through spawned/forked/handoff edges
    UNREACHABLE_CHAT = "unreachable-chat"
    #: (e) an approval with no requesting chat, or one that was never added
    APPROVAL_WITHOUT_REQUESTER = "approval-without-requester"


@attrs.frozen(kw_only=True)
class Violation:
    """One inconsistency of the delegation graph; ``nodes`` are the node ids involved."""

    kind: ViolationKind
    message: str
    nodes: tuple[str, ...]


# Edges along which a chat descends from a root chat, for check (d).
_DESCENT_EDGES = frozenset({EdgeKind.SPAWNED, EdgeKind.FORKED, EdgeKind.HANDOFF})


def find_violations(g: Any) -> list[Violation]:
    """Every inconsistency of the delegation graph ``g`` (its ``networkx.MultiDiGraph``),
    grouped by :class:`ViolationKind` in its order."""
    return [
        *_origins_without_subagent(g),
        *_subagents_without_origin(g),
        *_spawn_cycles(g),
        *_unreachable_chats(g),
        *_approvals_without_requester(g),
    ]


def _nodes_of_kind(g: Any, kind: NodeKind) -> list[str]:
    return [n for n, k in g.nodes(data="kind") if k == kind]


def _edges_of_kind(g: Any, kind: EdgeKind) -> list[tuple[str, str, dict[str, Any]]]:
    return [(u, v, dict(d)) for u, v, d in g.edges(data=True) if d["kind"] == kind]


def _chats(g: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for node, data in g.nodes(data=True):
        if data["kind"] == NodeKind.CHAT:
            yield node, data


def _origins_without_subagent(g: Any) -> Iterator[Violation]:
    for chat, data in _chats(g):
        if data["origin"] != "tool":
            continue
        tool_call = tool_call_node(data["origin_chat"], data["origin_tool_call_id"])
        if not g.has_edge(tool_call, chat, EdgeKind.SUBAGENT.value):
            yield Violation(
                kind=ViolationKind.ORIGIN_WITHOUT_SUBAGENT,
                message=(
                    f"worker {chat} has origin tool call {data['origin_tool_call_id']!r} "
                    f"of {data['origin_chat']}, whose content has no subagent entry for it"
                ),
                nodes=(chat, tool_call),
            )


def _subagents_without_origin(g: Any) -> Iterator[Violation]:
    for tool_call, chat, _ in _edges_of_kind(g, EdgeKind.SUBAGENT):
        call = g.nodes[tool_call]
        target = g.nodes[chat]
        if not target["added"]:
            problem = "which was never added"
        elif (target["origin"], target["origin_chat"], target["origin_tool_call_id"]) != (
            "tool",
            call["chat"],
            call["tool_call_id"],
        ):
            problem = f"whose origin is {_describe_origin(target)}"
        else:
            continue
        yield Violation(
            kind=ViolationKind.SUBAGENT_WITHOUT_ORIGIN,
            message=(
                f"tool call {call['tool_call_id']!r} of {call['chat']} has subagent "
                f"content for {chat}, {problem}"
            ),
            nodes=(tool_call, chat),
        )


def _spawn_cycles(g: Any) -> Iterator[Violation]:
    spawns = nx.DiGraph((u, v) for u, v, _ in _edges_of_kind(g, EdgeKind.SPAWNED))
    order = {node: i for i, node in enumerate(g.nodes)}
    cycles = [_rotate(cycle, order) for cycle in nx.simple_cycles(spawns)]
    for cycle in sorted(cycles, key=lambda c: [order[n] for n in c]):
        path = " -> ".join([*cycle, cycle[0]])
        yield Violation(
            kind=ViolationKind.SPAWN_CYCLE,
            message=f"chats spawn each other in a cycle: {path}",
            nodes=tuple(cycle),
        )


def _unreachable_chats(g: Any) -> Iterator[Violation]:
    roots = [c for c, d in _chats(g) if d["added"] and d["origin"] in (None, "user")]
    # A fork's copies descend from their sources, chats of another session: the lineage's
    # forked edges (those naming the source session) reach them.
    roots += [
        v
        for _, v, d in g.edges(data=True)
        if d["kind"] == EdgeKind.FORKED and d.get("session") is not None
    ]
    descent = nx.DiGraph()
    descent.add_nodes_from(g.nodes)
    descent.add_edges_from((u, v) for u, v, d in g.edges(data=True) if d["kind"] in _DESCENT_EDGES)
    reached: set[str] = set(roots)
    for root in roots:
        reached |= nx.descendants(descent, root)
    for chat, data in _chats(g):
        if data["added"] and chat not in reached:
            yield Violation(
                kind=ViolationKind.UNREACHABLE_CHAT,
                message=(
                    f"chat {chat} (origin {_describe_origin(data)}) is not reachable from "
                    "a root chat through spawned, forked or handoff edges"
                ),
                nodes=(chat,),
            )


def _approvals_without_requester(g: Any) -> Iterator[Violation]:
    for approval in _nodes_of_kind(g, NodeKind.APPROVAL):
        requesters = [
            v for _, v, d in g.out_edges(approval, data=True) if d["kind"] == EdgeKind.REQUESTED_BY
        ]
        if not requesters:
            yield Violation(
                kind=ViolationKind.APPROVAL_WITHOUT_REQUESTER,
                message=f"approval {approval} was never requested (no requesting chat)",
                nodes=(approval,),
            )
        for chat in requesters:
            if not g.nodes[chat]["added"]:
                yield Violation(
                    kind=ViolationKind.APPROVAL_WITHOUT_REQUESTER,
                    message=(
                        f"approval {approval} was requested by chat {chat}, which was never added"
                    ),
                    nodes=(approval, chat),
                )


def _describe_origin(chat: Mapping[str, Any]) -> str:
    match chat["origin"]:
        case None:
            return "absent"
        case "tool":
            return f"tool call {chat['origin_tool_call_id']!r} of {chat['origin_chat']}"
        case "user":
            return "user"
        case kind:
            return f"{kind} of {chat['origin_chat']}"


def _rotate(cycle: list[str], order: Mapping[str, int]) -> list[str]:
    """A cycle starting at its earliest-mentioned node, so reports are deterministic."""
    start = min(range(len(cycle)), key=lambda i: order[cycle[i]])
    return cycle[start:] + cycle[:start]
