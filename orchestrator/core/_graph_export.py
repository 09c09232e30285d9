"""Exports of the delegation graph: node-link JSON, GraphML, Graphviz DOT and Mermaid.

Each exporter is a pure function of a :class:`~orchestrator.core._graph.DelegationGraph` returning
text. It reads the graph through its read-only view and never changes it. The diagram exporters
(DOT, Mermaid) caption a node by its kind (:func:`_node_caption`). A chat's caption is its agent by
name and number (``analyst #2``) and its status; a tool call's is a tool name; and so on. The data
exporters (JSON, GraphML) keep every attribute. The module is pure: no trio, no sockets, no files.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx

from ._graph import DelegationGraph
from ._graph_schema import EdgeKind, NodeKind

__all__ = [
    "to_dot",
    "to_graphml",
    "to_json",
    "to_mermaid",
]


def to_json(graph: DelegationGraph, *, indent: int | None = None) -> str:
    """networkx node-link data (``nodes``/``edges``, with edge ``key``s) as JSON, keys sorted."""
    # edges= is passed explicitly: networkx 3.4-3.5 warned about its changing default.
    data = nx.node_link_data(graph.graph, edges="edges")
    return json.dumps(data, sort_keys=True, indent=indent)


def _graphml_value(value: object) -> str | int | float | bool:
    # GraphML knows scalars only; StrEnum and friends become their plain value.
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return json.dumps(value, sort_keys=True, default=str)


def _graphml_attrs(data: Mapping[str, Any]) -> dict[str, str | int | float | bool]:
    return {str(k): _graphml_value(v) for k, v in data.items() if v is not None}


def to_graphml(graph: DelegationGraph) -> str:
    """GraphML text (networkx ``generate_graphml``); ``None`` attributes are left out."""
    source = graph.graph
    clean = nx.MultiDiGraph(**_graphml_attrs(source.graph))
    for node, data in source.nodes(data=True):
        clean.add_node(node, **_graphml_attrs(data))
    for u, v, key, data in source.edges(keys=True, data=True):
        clean.add_edge(u, v, key=key, **_graphml_attrs(data))
    return "\n".join(nx.generate_graphml(clean)) + "\n"


def _chat_names(g: Any) -> dict[str, str]:
    """Each chat that runs an agent as people are shown it: ``analyst #2``, the n-th chat
    (from 1, in the order the log first mentions them) that runs that agent, as an Agent
    UI ``agentId`` numbers it."""
    joined: Counter[str] = Counter()
    names: dict[str, str] = {}
    for node, data in g.nodes(data=True):
        if data["kind"] == NodeKind.CHAT and data["agent"]:
            joined[data["agent"]] += 1
            names[node] = f"{data['agent']} #{joined[data['agent']]}"
    return names


def _node_caption(
    node: str, data: Mapping[str, Any], names: Mapping[str, str]
) -> tuple[str, str | None]:
    """A node's name and status, for diagram labels; ``names``: see :func:`_chat_names`."""
    match data["kind"]:
        case NodeKind.CHAT:
            return names.get(node) or data["title"] or node, data["status"]
        case NodeKind.TOOL_CALL:
            return data["tool_name"] or data["tool_call_id"] or node, data["status"]
        case NodeKind.TASK:
            return f"{node}: {data['title']}" if data["title"] else node, data["status"]
        case NodeKind.APPROVAL:
            name = f"{node}: {data['tool_name']}" if data["tool_name"] else node
            return name, data["status"]
        case NodeKind.REMOTE_TASK:
            # The remote agent's own name (its card's) and its task's state, in words.
            card = data["card_name"] or data["agent"] or node
            status = data["status"].replace("_", " ") if data["status"] else None
            return f"{card} (remote): {data['remote_task_id']}", status
        case _:
            return node, None


_DOT_SHAPES: Mapping[str, str] = {
    NodeKind.SESSION: "tab",
    NodeKind.CHAT: "box",
    NodeKind.TOOL_CALL: "ellipse",
    NodeKind.TASK: "note",
    NodeKind.APPROVAL: "diamond",
    NodeKind.USER: "doublecircle",
    NodeKind.REMOTE_TASK: "component",
}


def _dot_string(text: object) -> str:
    """A DOT double-quoted string: ``\\`` and ``"`` escaped, line breaks as ``\\n``."""
    escaped = (
        str(text)
        .replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\r\n", "\\n")
        .replace("\n", "\\n")
        .replace("\r", "\\n")
    )
    return f'"{escaped}"'


def to_dot(graph: DelegationGraph) -> str:
    """Graphviz DOT text: node shapes by kind, edge labels = edge kind, every id quoted."""
    g = graph.graph
    names = _chat_names(g)
    lines = ["digraph delegation {", "  node [fontname=Helvetica];", "  edge [fontsize=10];"]
    for node, data in g.nodes(data=True):
        name, status = _node_caption(node, data, names)
        label = name if status is None else f"{name}\n{status}"
        attributes = {
            "label": label,
            "shape": _DOT_SHAPES[data["kind"]],
            "kind": data["kind"],
            "tooltip": node,
        }
        if data["kind"] == NodeKind.CHAT:
            attributes["style"] = "rounded" if data["added"] else "rounded,dashed"
        rendered = ", ".join(f"{k}={_dot_string(v)}" for k, v in attributes.items())
        lines.append(f"  {_dot_string(node)} [{rendered}];")
    for u, v, data in g.edges(data=True):
        attributes = {"label": data["kind"], "kind": data["kind"]}
        if data["kind"] == EdgeKind.WAITS_ON and not data["active"]:
            attributes["style"] = "dashed"
        elif data["kind"] == EdgeKind.HANDOFF:
            attributes["style"] = "bold"
        elif data["kind"] == EdgeKind.REVIEWED:
            attributes["label"] = f"reviewed: {data.get('verdict') or data.get('status')}"
        rendered = ", ".join(f"{k}={_dot_string(v)}" for k, v in attributes.items())
        lines.append(f"  {_dot_string(u)} -> {_dot_string(v)} [{rendered}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# Mermaid: which nodes and edges the compact diagram keeps (the delegation story), and
# the bracket pair drawing each node kind.
_MERMAID_COMPACT_NODES = frozenset(
    {NodeKind.CHAT, NodeKind.APPROVAL, NodeKind.USER, NodeKind.REMOTE_TASK}
)
_MERMAID_COMPACT_EDGES = frozenset(
    {
        EdgeKind.SPAWNED,
        EdgeKind.FORKED,
        EdgeKind.HANDOFF,
        EdgeKind.REQUESTED_BY,
        EdgeKind.ROUTED_TO,
        EdgeKind.RESOLVED_BY,
        EdgeKind.REMOTE,
        EdgeKind.REVIEWED,
    }
)
_MERMAID_SHAPES: Mapping[str, tuple[str, str]] = {
    NodeKind.SESSION: ("[(", ")]"),
    NodeKind.CHAT: ("[", "]"),
    NodeKind.TOOL_CALL: ("(", ")"),
    NodeKind.TASK: ("[[", "]]"),
    NodeKind.APPROVAL: ("{", "}"),
    NodeKind.USER: ("((", "))"),
    NodeKind.REMOTE_TASK: (">", "]"),
}
_MERMAID_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_MERMAID_ENTITIES = {
    "#": "#35;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "`": "#96;",
    "\n": " ",
    "\r": " ",
}


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for the characters that are not)."""
    return "".join(_MERMAID_ENTITIES.get(ch, ch) for ch in text)


def _mermaid_ids(nodes: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Node id → a Mermaid id of ``[A-Za-z0-9_]`` led by its kind, unique after sanitising."""
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for node, kind in nodes:
        base = f"{kind}_{_MERMAID_UNSAFE.sub('_', node)}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        ids[node] = candidate
    return ids


def to_mermaid(graph: DelegationGraph, *, detail: bool = False) -> str:
    """A Mermaid ``flowchart TD``; edge labels are edge kinds.

    By default it draws the delegation story: chats (labelled with agent and status),
    approvals and the user, with ``spawned``, ``forked``, ``handoff`` and approval edges.
    ``detail=True`` draws every node and edge.
    """
    g = graph.graph
    shown = [
        (node, data)
        for node, data in g.nodes(data=True)
        if detail or data["kind"] in _MERMAID_COMPACT_NODES
    ]
    ids = _mermaid_ids((node, data["kind"]) for node, data in shown)
    names = _chat_names(g)
    lines = ["flowchart TD"]
    for node, data in shown:
        name, status = _node_caption(node, data, names)
        label = _mermaid_text(name)
        if status is not None:
            label += "<br/>" + _mermaid_text(status)
        opening, closing = _MERMAID_SHAPES[data["kind"]]
        lines.append(f'    {ids[node]}{opening}"{label}"{closing}')
    for u, v, data in g.edges(data=True):
        if u not in ids or v not in ids:
            continue
        if not detail and data["kind"] not in _MERMAID_COMPACT_EDGES:
            continue
        kind = data["kind"]
        if kind == EdgeKind.HANDOFF:
            arrow = "==>"
        elif kind == EdgeKind.WAITS_ON and not data["active"]:
            arrow = "-.->"
        else:
            arrow = "-->"
        label = kind
        if kind == EdgeKind.REVIEWED:
            label = f"reviewed: {data.get('verdict') or data.get('status')}"
        lines.append(f"    {ids[u]} {arrow}|{label}| {ids[v]}")
    return "\n".join(lines) + "\n"
