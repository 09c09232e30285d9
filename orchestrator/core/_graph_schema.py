"""The delegation graph's vocabulary: its node and edge kinds, node ids, and the attributes
every node of a kind carries.

The fold (:mod:`._graph`), its consistency check (:mod:`._graph_check`) and its exports
(:mod:`._graph_export`) all speak it; the table of node ids and the facts that make each kind
is in :mod:`._graph`'s docstring. Pure: no trio, no IO.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from ._team_actions import USER

__all__ = ["USER_NODE", "EdgeKind", "NodeKind", "remote_task_node", "tool_call_node"]

#: The node id of the person who decides approvals routed to the user.
USER_NODE = USER


class NodeKind(enum.StrEnum):
    """The ``kind`` attribute of every node."""

    SESSION = "session"
    CHAT = "chat"
    TOOL_CALL = "tool_call"
    TASK = "task"
    APPROVAL = "approval"
    USER = "user"
    REMOTE_TASK = "remote_task"  # a remote teammate's task at its A2A agent


class EdgeKind(enum.StrEnum):
    """The ``kind`` attribute of every edge (also its key, unless several may join two nodes)."""

    CONTAINS = "contains"  # session → chat
    SPAWNED = "spawned"  # parent chat → worker chat (the worker's tool origin)
    FORKED = "forked"  # source chat → fork or side chat (their fork/sideChat origin)
    INVOKED = "invoked"  # chat → tool call
    SUBAGENT = "subagent"  # tool call → worker chat (ToolResultSubagentContent)
    HANDOFF = "handoff"  # from chat → to chat
    WORKS_ON = "works_on"  # chat → task
    OWNS = "owns"  # current owner chat → task
    SUBTASK_OF = "subtask_of"  # task → parent task
    WAITS_ON = "waits_on"  # delegating chat → worker chat, or requesting chat → queued task
    REQUESTED_BY = "requested_by"  # approval → requesting chat
    ROUTED_TO = "routed_to"  # approval → deciding chat or user
    RESOLVED_BY = "resolved_by"  # approval → the chat or user that decided
    GATES = "gates"  # approval → the tool call waiting for it
    REMOTE = "remote"  # remote teammate's chat → its task at the remote agent
    REVIEWED = "reviewed"  # reviewer chat → the worker chat it reviewed (one per review)


def remote_task_node(url: str, remote_task_id: str) -> str:
    """The node id of a remote teammate's task: ``"<agent URL>#task/<remoteTaskId>"`` (the
    agent's URL is http(s), so it never collides with a chat's URI or another kind's id)."""
    return f"{url}#task/{remote_task_id}"


def tool_call_node(chat: str, tool_call_id: str) -> str:
    """The node id of tool call ``tool_call_id`` of ``chat``: ``"<chat URI>#<toolCallId>"``."""
    return f"{chat}#{tool_call_id}"


# Attributes every node of a kind carries from the moment it exists (placeholders included),
# so exports and readers never meet a missing key.
_NODE_DEFAULTS: Mapping[NodeKind, Mapping[str, Any]] = {
    NodeKind.SESSION: {},
    NodeKind.CHAT: {
        "added": False,
        "removed": False,
        "title": None,
        "agent": None,
        "role": None,
        "status": None,
        "interactivity": None,
        "origin": None,
        "origin_chat": None,
        "origin_tool_call_id": None,
        "origin_turn_id": None,
    },
    NodeKind.TOOL_CALL: {
        "chat": None,
        "tool_call_id": None,
        "turn_id": None,
        "tool_name": None,
        "display_name": None,
        "status": None,
        "success": None,
    },
    NodeKind.TASK: {
        "title": None,
        "status": None,
        "agent": None,
        "owner": None,
        "requested_by": None,
        "tool_call_id": None,
        "parent_task": None,
    },
    NodeKind.APPROVAL: {
        "status": None,
        "chat": None,
        "tool_call": None,
        "tool_name": None,
        "agent": None,
        "policy_scope": None,
        "summary": None,
    },
    NodeKind.USER: {},
    NodeKind.REMOTE_TASK: {
        "chat": None,
        "agent": None,
        "url": None,
        "remote_task_id": None,
        "card_name": None,
        "card_version": None,
        "status": None,  # the remote state, in the taxonomy's words
        "raw_state": None,
    },
}

# Every node of a kind starts as its template: kind, sequence (set per node), then the
# kind's defaults, in that order (the attribute order exports show).
_NODE_TEMPLATES: Mapping[NodeKind, Mapping[str, Any]] = {
    kind: {"kind": kind.value, "sequence": None, **defaults}
    for kind, defaults in _NODE_DEFAULTS.items()
}
