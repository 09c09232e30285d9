"""The delegation graph: who spawned, handed work to, waits on and asked approval of whom.

Theory of operation
-------------------
The graph is one more reducer over the fact log. :meth:`DelegationGraph.apply` folds one
:class:`~orchestrator.core._facts.Fact` into a ``networkx.MultiDiGraph``; :func:`build_graph` folds
a whole log. There is no other way to build it. The graph of a live run, of a restarted daemon
and of last Tuesday's session are the same fold over the same facts the chat and session
reducers fold. So they cannot disagree with what clients were shown. Facts the graph does not
care about (deltas, usage, turn bookkeeping, unknown actions) fold to nothing.

Nodes are keyed by the ids the facts already use, so a node can be looked up from any fact:

=============  =========================================  =====================================
kind           node id                                    from
=============  =========================================  =====================================
``session``    the session URI (``ahp-session:/...``)     ``session/chatAdded``, ``team/run*``
``chat``       the chat URI (``ahp-chat:/...``)           ``session/chatAdded``, team actions
``tool_call``  ``"<chat URI>#<toolCallId>"``              ``chat/toolCall*``
``task``       the task id (``task-<n>``)                 ``team/task*``, ``team/memberJoined``
``approval``   the approval id (``approval-<n>``)         ``team/approval*``
``user``       ``"user"``                                 an approval routed to/decided by a person
``remote_task``  ``"<agent URL>#task/<remoteTaskId>"``    a remote teammate's ``chat/responsePart``
=============  =========================================  =====================================

A fact may mention a node before the fact that describes it (an approval naming a chat that
was never added, a worker whose parent chat is unknown). The fold then creates a *placeholder*
node of the right kind (a chat with ``added == False``) rather than dropping the reference: the
graph records what the log says, and :meth:`DelegationGraph.check` reports what is wrong with
it. Folding therefore never fails, whatever the order of the facts.

The delegation edge is recorded twice, on purpose, by the one atomic append of a spawn: the
worker's ``ChatOrigin {kind: tool, chat, toolCallId}`` (→ a ``spawned`` edge parent → worker)
and the parent tool call's ``ToolResultSubagentContent {resource: worker}`` (→ a ``subagent``
edge tool call → worker). :meth:`~DelegationGraph.check` proves the two views agree in both
directions, that spawns form a forest, that every chat descends from a root chat, and that
every approval names a known requester. A ``subagent`` edge, once folded, stays even when a
later ``chat/toolCallContentChanged`` replaces the content array: the log is history, and the
tool call did spawn that worker.

The graph's vocabulary (node and edge kinds, node ids, each kind's attributes) is
:mod:`._graph_schema`; the check is :mod:`._graph_check`. Exports to node-link JSON, GraphML,
DOT and Mermaid are pure functions of the graph returning text; they live in
:mod:`._graph_export`. The module is pure: no trio, no sockets, no files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs
import networkx as nx

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallResultConfirmedAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
)
from orchestrator.ahp.state import (
    ChatOrigin,
    ToolChatOrigin,
    ToolResultContent,
    ToolResultSubagentContent,
    UnknownChatOrigin,
    UserChatOrigin,
)
from orchestrator.base import resolve_subclass

from ._facts import Fact
from ._graph_check import Violation, find_violations
from ._graph_schema import (
    _NODE_TEMPLATES,
    USER_NODE,
    EdgeKind,
    NodeKind,
    remote_task_node,
    tool_call_node,
)
from ._remote_tasks import remote_task_of
from ._review_actions import ReviewCompleted, ReviewRequested, ReviewStarted
from ._team_actions import (
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunStarted,
    SessionForked,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
)

__all__ = ["DelegationGraph", "GraphStatistics", "build_graph"]


@attrs.frozen(kw_only=True)
class GraphStatistics:
    """Node and edge counts by kind (keys sorted), and totals."""

    nodes_by_kind: Mapping[str, int]
    edges_by_kind: Mapping[str, int]
    node_count: int
    edge_count: int


# The plain strings the fold writes and compares, looked up once rather than per fact.
_EDGE_VALUES: Mapping[EdgeKind, str] = {kind: kind.value for kind in EdgeKind}
_CHAT: Final = NodeKind.CHAT.value
_TASK: Final = NodeKind.TASK.value
_SPAWNED: Final = EdgeKind.SPAWNED.value
_FORKED: Final = EdgeKind.FORKED.value
_OWNS: Final = EdgeKind.OWNS.value
_WAITS_ON: Final = EdgeKind.WAITS_ON.value
_RUNNING: Final = TaskStatus.RUNNING.value

# Tool call statuses after which nothing but a new tool call happens.
_TERMINAL_TOOL_STATUSES = frozenset({"completed", "cancelled"})


class DelegationGraph:
    """A ``networkx.MultiDiGraph`` of a team run, folded from its facts one at a time."""

    def __init__(self) -> None:
        self._g: Any = nx.MultiDiGraph()
        self.last_sequence: int | None = None
        # task -> the (u, v) of its waits_on edges, so a finished task ends them in O(1).
        self._waits: dict[str, list[tuple[str, str]]] = {}
        # Indexes into self._g, kept by the fold helpers as they change its structure.
        # Invariant: self._nodes[n] is self._g.nodes[n] for every node n of self._g (and
        # no other key); self._edges[u, v, key] is self._g.edges[u, v, key] likewise.
        self._nodes: dict[str, dict[str, Any]] = {}
        self._edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        # chat -> (source, key) of its spawned or forked edge, while it has one.
        self._origins: dict[str, tuple[str, str]] = {}
        # The root task of each prompt (team/runStarted's, then a conversation's later
        # prompts', see TaskCreated), and the latest: the one the run's end ends.
        self._root_tasks: set[str] = set()
        # Reviews requested and not yet started: review id -> (worker chat, round, task).
        self._reviews_asked: dict[str, tuple[str, int, str]] = {}
        # Reviews started: review id -> the key of its reviewed edge.
        self._review_edges: dict[str, tuple[str, str, str]] = {}
        self._prompt_task: str | None = None

    # ── reading ─────────────────────────────────────────────────────────────

    @property
    def graph(self) -> Any:
        """A read-only view of the underlying ``networkx.MultiDiGraph``.

        The view refuses structural changes; its attribute dicts are the graph's own, so
        readers must not write to them either.
        """
        return self._g.copy(as_view=True)

    def nodes_of_kind(self, kind: NodeKind) -> list[str]:
        """Node ids of ``kind``, in the order the log first mentioned them."""
        return [n for n, k in self._g.nodes(data="kind") if k == kind]

    def edges_of_kind(self, kind: EdgeKind) -> list[tuple[str, str, dict[str, Any]]]:
        """``(source, target, attributes)`` of every edge of ``kind``, grouped by source node."""
        return [(u, v, dict(d)) for u, v, d in self._g.edges(data=True) if d["kind"] == kind]

    def workers_of(self, chat: str) -> list[str]:
        """The chats ``chat`` spawned (by their tool origin), in the order the log added them."""
        if chat not in self._g:
            return []
        return [
            v for _, v, d in self._g.out_edges(chat, data=True) if d["kind"] == EdgeKind.SPAWNED
        ]

    def owner_of(self, task: str) -> str | None:
        """The chat currently owning ``task`` (moved by handoffs), or ``None``."""
        if task not in self._g:
            return None
        owner: str | None = self._g.nodes[task].get("owner")
        return owner

    def statistics(self) -> GraphStatistics:
        """Node and edge counts by kind."""
        nodes = Counter(str(k) for _, k in self._g.nodes(data="kind"))
        edges = Counter(str(d["kind"]) for _, _, d in self._g.edges(data=True))
        return GraphStatistics(
            nodes_by_kind=dict(sorted(nodes.items())),
            edges_by_kind=dict(sorted(edges.items())),
            node_count=self._g.number_of_nodes(),
            edge_count=self._g.number_of_edges(),
        )

    def check(self) -> list[Violation]:
        """Every inconsistency of the graph, grouped by :class:`ViolationKind` in its order
        (see :mod:`._graph_check`).

        Meant for a whole log (or a prefix ending between appends): in the middle of a spawn's
        atomic append, the worker's origin is legitimately ahead of its subagent content.
        """
        return find_violations(self._g)

    # ── folding ─────────────────────────────────────────────────────────────

    def apply(self, fact: Fact) -> None:
        """Fold one fact; facts that say nothing about delegation change nothing."""
        self.last_sequence = fact.sequence
        action = fact.action
        fold = _FOLDS.get(type(action), _UNRESOLVED)
        if fold is _UNRESOLVED:
            fold = resolve_subclass(_FOLDS, _FOLDED_TYPES, type(action), None)
        if fold is not None:
            fold(self, fact, action)

    # One method per action type the graph folds, looked up by the action's type (_FOLDS):
    # a fact costs one dict lookup to find its fold, or to learn it has none.

    def _fold_chat_added(self, fact: Fact, action: SessionChatAddedAction) -> None:
        self._chat_added(fact.session, action, fact.sequence)

    def _fold_chat_updated(self, fact: Fact, action: SessionChatUpdatedAction) -> None:
        self._chat_updated(action, fact.sequence)

    def _fold_chat_removed(self, fact: Fact, action: SessionChatRemovedAction) -> None:
        if self._is(action.chat, _CHAT):
            self._nodes[action.chat]["removed"] = True

    def _fold_tool_call_start(self, fact: Fact, action: ChatToolCallStartAction) -> None:
        self._nodes[self._tool_call(fact.channel, action.tool_call_id, fact.sequence)].update(
            turn_id=action.turn_id,
            tool_name=action.tool_name,
            display_name=action.display_name,
            status="streaming",
        )

    def _fold_tool_call_ready(self, fact: Fact, action: ChatToolCallReadyAction) -> None:
        status = "pending-confirmation" if action.confirmed is None else "running"
        self._tool_status(fact.channel, action.tool_call_id, status, fact.sequence)

    def _fold_tool_call_approved(self, fact: Fact, action: ChatToolCallApprovedAction) -> None:
        self._tool_status(fact.channel, action.tool_call_id, "running", fact.sequence)

    def _fold_tool_call_denied(self, fact: Fact, action: ChatToolCallDeniedAction) -> None:
        self._tool_status(fact.channel, action.tool_call_id, "cancelled", fact.sequence)

    def _fold_tool_call_content(self, fact: Fact, action: ChatToolCallContentChangedAction) -> None:
        node = self._tool_call(fact.channel, action.tool_call_id, fact.sequence)
        self._subagents(node, action.content, fact.sequence)

    def _fold_tool_call_complete(self, fact: Fact, action: ChatToolCallCompleteAction) -> None:
        pending = bool(action.requires_result_confirmation)
        status = "pending-result-confirmation" if pending else "completed"
        node = self._tool_status(fact.channel, action.tool_call_id, status, fact.sequence)
        self._nodes[node]["success"] = action.result.success
        self._subagents(node, action.result.content, fact.sequence)

    def _fold_tool_call_result_confirmed(
        self, fact: Fact, action: ChatToolCallResultConfirmedAction
    ) -> None:
        status = "completed" if action.approved else "cancelled"
        self._tool_status(fact.channel, action.tool_call_id, status, fact.sequence)

    def _fold_turn_cancelled(
        self, fact: Fact, action: ChatTurnCancelledAction | ChatErrorAction
    ) -> None:
        self._turn_cancelled(fact.channel, action.turn_id)

    def _fold_response_part(self, fact: Fact, action: ChatResponsePartAction) -> None:
        # Only a remote teammate's record of its remote task makes a node; other parts
        # (text, reasoning, notifications) are no part of the delegation story.
        remote = remote_task_of(action.part)
        if remote is not None and remote.get("remoteTaskId") and remote.get("url"):
            self._remote_task(fact.channel, remote, fact.sequence)

    def _fold_run_started(self, fact: Fact, action: RunStarted) -> None:
        self._run_started(fact.session, action, fact.sequence)

    def _fold_run_finished(self, fact: Fact, action: RunFinished) -> None:
        self._run_finished(action)

    def _fold_member_joined(self, fact: Fact, action: MemberJoined) -> None:
        self._member_joined(action, fact.sequence)
        if action.starts:
            self._task_started(action.started(), fact.sequence)

    def _fold_task_created(self, fact: Fact, action: TaskCreated) -> None:
        self._task_created(action, fact.sequence)

    def _fold_task_started(self, fact: Fact, action: TaskStarted) -> None:
        self._task_started(action, fact.sequence)

    def _fold_task_finished(self, fact: Fact, action: TaskFinished) -> None:
        self._task_finished(action)

    def _fold_handoff(self, fact: Fact, action: HandoffRecorded) -> None:
        self._handoff(action, fact.sequence)

    def _fold_review_requested(self, fact: Fact, action: ReviewRequested) -> None:
        self._reviews_asked[action.review] = (action.worker_chat, action.round, action.task)

    def _fold_review_started(self, fact: Fact, action: ReviewStarted) -> None:
        asked = self._reviews_asked.pop(action.review, None)
        if asked is None:
            return
        worker_chat, round_, task = asked
        reviewer = self._node(action.chat, NodeKind.CHAT, fact.sequence)
        worker = self._node(worker_chat, NodeKind.CHAT, fact.sequence)
        key = f"{EdgeKind.REVIEWED.value}@{action.review}"
        self._edge(
            reviewer,
            worker,
            EdgeKind.REVIEWED,
            fact.sequence,
            key=key,
            review=action.review,
            round=round_,
            task=task,
            status="reviewing",
            verdict=None,
        )
        self._review_edges[action.review] = (reviewer, worker, key)

    def _fold_review_completed(self, fact: Fact, action: ReviewCompleted) -> None:
        self._reviews_asked.pop(action.review, None)
        edge = self._review_edges.get(action.review)
        if edge is None or edge not in self._edges:
            return
        self._edges[edge].update(
            status=action.verdict,
            verdict=action.verdict,
            fixes=list(action.fixes),
            summary=action.summary,
        )

    def _fold_approval_requested(self, fact: Fact, action: ApprovalRequested) -> None:
        self._approval_requested(action, fact.sequence)

    def _fold_approval_resolved(self, fact: Fact, action: ApprovalResolved) -> None:
        self._approval_resolved(action, fact.sequence)

    def _fold_session_forked(self, fact: Fact, action: SessionForked) -> None:
        # Lineage: a forked edge from each source chat (a node of another session, so a
        # placeholder here) to its copy. A copied root chat's fork origin drew the same edge.
        for source, copy in action.chats.items():
            self._node(source, NodeKind.CHAT, fact.sequence)
            self._node(copy, NodeKind.CHAT, fact.sequence)
            self._edge(
                source,
                copy,
                EdgeKind.FORKED,
                fact.sequence,
                origin="fork",
                turn_id=action.turn_id,
                session=action.source,
            )

    # ── fold helpers ────────────────────────────────────────────────────────
    # They write through self._nodes and self._edges (the graph's own attribute dicts, by
    # node and by (u, v, key)) rather than through networkx's views: a fact touches a few
    # nodes and edges, and a view lookup costs more than the write it serves. Structure
    # changes (nodes and edges added or removed) go through networkx, and into the indexes.

    def _is(self, node: str, kind: str) -> bool:
        data = self._nodes.get(node)
        return data is not None and data["kind"] == kind

    def _node(self, node: str, kind: NodeKind, seq: int) -> str:
        # Invariant: a node keeps the kind it was first mentioned as (ids of different
        # kinds never collide: URIs, "<URI>#<id>", "task-<n>", "approval-<n>", "user").
        if node not in self._nodes:
            self._g.add_node(node)
            data = self._g.nodes[node]
            data.update(_NODE_TEMPLATES[kind])  # kind, sequence, then the kind's defaults
            data["sequence"] = seq
            self._nodes[node] = data
        return node

    def _party(self, party: str, seq: int) -> str:
        """The node of a decider or routing target: the user, or a chat."""
        if party == USER_NODE:
            return self._node(USER_NODE, NodeKind.USER, seq)
        return self._node(party, NodeKind.CHAT, seq)

    def _edge(
        self, u: str, v: str, kind: EdgeKind, seq: int, *, key: str | None = None, **data: Any
    ) -> None:
        value = _EDGE_VALUES[kind]
        if key is None:
            key = value
        found = self._edges.get((u, v, key))
        if found is not None:
            if data:
                found.update(data)
        else:
            # Invariant: u in self._nodes and v in self._nodes (every caller makes both ends
            # first), so add_edge adds no node behind self._nodes' back.
            self._g.add_edge(u, v, key=key, kind=value, sequence=seq, **data)
            self._edges[u, v, key] = self._g.edges[u, v, key]

    def _remove_edge(self, u: str, v: str, key: str) -> None:
        self._g.remove_edge(u, v, key)
        del self._edges[u, v, key]

    def _tool_call(self, chat: str, tool_call_id: str, seq: int) -> str:
        self._node(chat, NodeKind.CHAT, seq)
        node = tool_call_node(chat, tool_call_id)
        if node not in self._nodes:
            self._node(node, NodeKind.TOOL_CALL, seq)
            self._nodes[node].update(chat=chat, tool_call_id=tool_call_id)
        # Invariant: every tool call node has exactly one in-edge of kind "invoked",
        # from the chat named in its id.
        self._edge(chat, node, EdgeKind.INVOKED, seq)
        return node

    def _tool_status(self, chat: str, tool_call_id: str, status: str, seq: int) -> str:
        node = self._tool_call(chat, tool_call_id, seq)
        self._nodes[node]["status"] = status
        return node

    def _subagents(
        self, tool_call: str, content: Iterable[ToolResultContent] | None, seq: int
    ) -> None:
        for item in content or ():
            if isinstance(item, ToolResultSubagentContent):
                self._node(item.resource, NodeKind.CHAT, seq)
                self._edge(
                    tool_call,
                    item.resource,
                    EdgeKind.SUBAGENT,
                    seq,
                    title=item.title,
                    agent_name=item.agent_name,
                )

    def _turn_cancelled(self, chat: str, turn_id: str) -> None:
        if chat not in self._nodes:
            return
        for _, node, data in self._g.out_edges(chat, data=True):
            attrs_ = self._nodes[node]
            if (
                data["kind"] == EdgeKind.INVOKED
                and attrs_["turn_id"] == turn_id
                and attrs_["status"] not in _TERMINAL_TOOL_STATUSES
            ):
                attrs_["status"] = "cancelled"

    def _set_origin(self, chat: str, origin: ChatOrigin | None, seq: int) -> None:
        # session/chatAdded upserts: drop the edge of a previous origin before adding the new.
        # Invariant: self._origins[chat] is the (source, key) of the one spawned or forked
        # edge into chat, when there is one (only this method draws them).
        old = self._origins.pop(chat, None)
        if old is not None:
            self._remove_edge(old[0], chat, old[1])
        node = self._nodes[chat]
        node.update(origin=None, origin_chat=None, origin_tool_call_id=None, origin_turn_id=None)
        match origin:
            case None | UnknownChatOrigin():
                pass  # an origin of a kind we do not model draws no edge
            case UserChatOrigin():
                node["origin"] = origin.kind
            case ToolChatOrigin():
                # Invariant: node["origin"] == "tool" implies the edge
                # (node["origin_chat"], chat, key="spawned") exists.
                node.update(
                    origin=origin.kind,
                    origin_chat=origin.chat,
                    origin_tool_call_id=origin.tool_call_id,
                )
                self._node(origin.chat, NodeKind.CHAT, seq)
                self._edge(
                    origin.chat, chat, EdgeKind.SPAWNED, seq, tool_call_id=origin.tool_call_id
                )
                self._origins[chat] = (origin.chat, _SPAWNED)
            case _:  # ForkChatOrigin | SideChatOrigin: the rest of the union, narrowed by mypy
                node.update(
                    origin=origin.kind, origin_chat=origin.chat, origin_turn_id=origin.turn_id
                )
                self._node(origin.chat, NodeKind.CHAT, seq)
                self._edge(
                    origin.chat,
                    chat,
                    EdgeKind.FORKED,
                    seq,
                    origin=origin.kind,
                    turn_id=origin.turn_id,
                )
                self._origins[chat] = (origin.chat, _FORKED)

    def _chat_added(self, session: str, action: SessionChatAddedAction, seq: int) -> None:
        summary = action.summary
        chat = self._node(summary.resource, NodeKind.CHAT, seq)
        self._nodes[chat].update(
            added=True,
            removed=False,
            title=summary.title,
            interactivity=_str_or_none(summary.interactivity),
        )
        self._set_origin(chat, summary.origin, seq)
        self._node(session, NodeKind.SESSION, seq)
        self._edge(session, chat, EdgeKind.CONTAINS, seq)

    def _chat_updated(self, action: SessionChatUpdatedAction, seq: int) -> None:
        if not self._is(action.chat, _CHAT):
            return  # AHP: a no-op when no entry matches
        changes = action.changes
        node = self._nodes[action.chat]
        if changes.title is not None:
            node["title"] = changes.title
        if changes.interactivity is not None:
            node["interactivity"] = str(changes.interactivity)
        if changes.origin is not None:
            self._set_origin(action.chat, changes.origin, seq)

    def _run_started(self, session: str, action: RunStarted, seq: int) -> None:
        self._node(session, NodeKind.SESSION, seq)
        self._g.graph.update(
            session=session,
            run=action.run,
            team=action.team,
            topology=action.topology,
            root_task=action.task,
            status="running",
        )
        task = self._node(action.task, NodeKind.TASK, seq)
        self._nodes[task].update(title=action.prompt, agent=action.coordinator, status=_RUNNING)
        self._root_tasks.add(task)
        self._prompt_task = task

    def _run_finished(self, action: RunFinished) -> None:
        self._g.graph["status"] = action.status.value
        root = self._prompt_task
        if root is None or root not in self._nodes:
            return
        if self._nodes[root]["status"] == _RUNNING:
            # A prompt answered already keeps how it ended (a conversation ended idle).
            self._nodes[root]["status"] = action.status.value
        for chat, _, data in self._g.in_edges(root, data=True):
            if data["kind"] == EdgeKind.WORKS_ON:
                self._nodes[chat]["status"] = action.status.value

    def _set_owner(self, task: str, chat: str, seq: int) -> None:
        # Invariant: len([e for e in in_edges(task) if e.kind == "owns"]) <= 1, and its
        # source == nodes[task]["owner"] (only this method draws owns edges).
        data = self._nodes[task]
        old = data["owner"]
        if old is not None:
            self._remove_edge(old, task, _OWNS)
        data["owner"] = chat
        self._edge(chat, task, EdgeKind.OWNS, seq)

    def _task_status(self, task: str, status: str, chat: str | None) -> None:
        self._nodes[task]["status"] = status
        if chat is not None:
            self._nodes[chat]["status"] = status

    def _member_joined(self, action: MemberJoined, seq: int) -> None:
        chat = self._node(action.chat, NodeKind.CHAT, seq)
        task = self._node(action.task, NodeKind.TASK, seq)
        node = self._nodes[chat]
        node.update(agent=action.agent, role=action.role)
        if node["status"] is None:
            node["status"] = self._nodes[task]["status"] or "joined"
        self._edge(chat, task, EdgeKind.WORKS_ON, seq)
        if self._nodes[task]["owner"] is None:
            self._set_owner(task, chat, seq)

    def _remote_task(self, chat: str, remote: Mapping[str, Any], seq: int) -> None:
        url, remote_id = str(remote["url"]), str(remote["remoteTaskId"])
        node = self._node(remote_task_node(url, remote_id), NodeKind.REMOTE_TASK, seq)
        card = remote.get("card")
        card = card if isinstance(card, Mapping) else {}
        self._nodes[node].update(
            chat=chat,
            agent=_str_or_none(remote.get("agent")),
            url=url,
            remote_task_id=remote_id,
            card_name=_str_or_none(card.get("name")),
            card_version=_str_or_none(card.get("version")),
            status=_str_or_none(remote.get("state")),
            raw_state=_str_or_none(remote.get("rawState")),
        )
        self._edge(self._node(chat, NodeKind.CHAT, seq), node, EdgeKind.REMOTE, seq)

    def _task_created(self, action: TaskCreated, seq: int) -> None:
        task = self._node(action.task, NodeKind.TASK, seq)
        self._nodes[task].update(
            title=action.title,
            agent=action.agent,
            requested_by=action.requested_by,
            tool_call_id=action.tool_call_id,
            parent_task=action.parent_task,
            status=action.status.value,
        )
        if action.requested_by is None or action.parent_task is None:
            # A conversation's next prompt: a root task, which its turn's chat works on.
            self._root_tasks.add(task)
            self._prompt_task = task
            return
        self._node(action.parent_task, NodeKind.TASK, seq)
        self._edge(task, action.parent_task, EdgeKind.SUBTASK_OF, seq)
        self._node(action.requested_by, NodeKind.CHAT, seq)
        if action.status == TaskStatus.QUEUED:
            self._edge(
                action.requested_by,
                task,
                EdgeKind.WAITS_ON,
                seq,
                key=_WAITS_ON + ":" + task,
                active=True,
                task=task,
            )
            self._waits.setdefault(task, []).append((action.requested_by, task))

    def _delegator(self, task: str, worker: str) -> str | None:
        requested_by: str | None = self._nodes[task]["requested_by"]
        if requested_by is not None:
            return requested_by
        origin_chat: str | None = self._nodes[worker]["origin_chat"]
        return origin_chat

    def _task_started(self, action: TaskStarted, seq: int) -> None:
        task = self._node(action.task, NodeKind.TASK, seq)
        chat = self._node(action.chat, NodeKind.CHAT, seq)
        self._task_status(task, _RUNNING, chat)
        self._edge(chat, task, EdgeKind.WORKS_ON, seq)
        if self._nodes[task]["owner"] is None:
            self._set_owner(task, chat, seq)
        delegator = self._delegator(task, chat)
        if delegator is None:
            return
        key = _WAITS_ON + ":" + task
        queued = self._edges.get((delegator, task, key))
        if queued is not None:  # it waited in the queue until now
            queued["active"] = False
        # Invariant: edges[delegator, worker, "waits_on:<task>"]["active"] is True exactly
        # while nodes[task]["status"] == "running".
        self._edge(delegator, chat, EdgeKind.WAITS_ON, seq, key=key, active=True, task=task)
        self._waits.setdefault(task, []).append((delegator, chat))

    def _task_finished(self, action: TaskFinished) -> None:
        if not self._is(action.task, _TASK):
            return
        chat = action.chat if action.chat is not None and self._is(action.chat, _CHAT) else None
        self._task_status(action.task, action.status.value, chat)
        if (
            chat is not None
            and action.task in self._root_tasks
            and self._g.graph.get("status") == _RUNNING
        ):
            # A prompt answered in a conversation that goes on: its coordinator waits for
            # the next message.
            self._nodes[chat]["status"] = "idle"
        # Every wait on the task ends: on the task while it was queued, then on its worker.
        key = _WAITS_ON + ":" + action.task
        for u, v in self._waits.get(action.task, ()):
            self._edges[u, v, key]["active"] = False

    def _handoff(self, action: HandoffRecorded, seq: int) -> None:
        source = self._node(action.from_chat, NodeKind.CHAT, seq)
        target = self._node(action.to_chat, NodeKind.CHAT, seq)
        task = self._node(action.task, NodeKind.TASK, seq)
        if self._nodes[target]["agent"] is None:
            self._nodes[target]["agent"] = action.to_agent
        self._edge(
            source,
            target,
            EdgeKind.HANDOFF,
            seq,
            key=f"{EdgeKind.HANDOFF.value}@{seq}",
            task=task,
            reason=action.reason,
            resume_target=action.resume_target,
            to_agent=action.to_agent,
            tool_call_id=action.tool_call_id,
        )
        self._edge(target, task, EdgeKind.WORKS_ON, seq)
        self._set_owner(task, target, seq)
        # Labels show who holds the task now; the task's own status is untouched.
        self._nodes[source]["status"] = "handed-off"
        self._nodes[target]["status"] = _RUNNING

    def _approval_requested(self, action: ApprovalRequested, seq: int) -> None:
        approval = self._node(action.approval, NodeKind.APPROVAL, seq)
        tool_call = self._tool_call(action.chat, action.tool_call_id, seq)
        self._nodes[approval].update(
            status="pending",
            chat=action.chat,
            tool_call=tool_call,
            tool_name=action.tool_name,
            agent=action.requested_by,
            policy_scope=action.policy_scope,
            summary=action.summary,
        )
        self._edge(approval, action.chat, EdgeKind.REQUESTED_BY, seq)
        self._edge(approval, self._party(action.routed_to, seq), EdgeKind.ROUTED_TO, seq)
        self._edge(approval, tool_call, EdgeKind.GATES, seq)

    def _approval_resolved(self, action: ApprovalResolved, seq: int) -> None:
        approval = self._node(action.approval, NodeKind.APPROVAL, seq)
        self._nodes[approval]["status"] = action.decision.value
        self._edge(approval, self._party(action.resolved_by, seq), EdgeKind.RESOLVED_BY, seq)


#: The fold of each action type the graph folds (the types of ``DelegationGraph.apply``).
_FOLDS: dict[type, Callable[[DelegationGraph, Fact, Any], None] | None] = {
    SessionChatAddedAction: DelegationGraph._fold_chat_added,
    SessionChatUpdatedAction: DelegationGraph._fold_chat_updated,
    SessionChatRemovedAction: DelegationGraph._fold_chat_removed,
    ChatToolCallStartAction: DelegationGraph._fold_tool_call_start,
    ChatToolCallReadyAction: DelegationGraph._fold_tool_call_ready,
    ChatToolCallApprovedAction: DelegationGraph._fold_tool_call_approved,
    ChatToolCallDeniedAction: DelegationGraph._fold_tool_call_denied,
    ChatToolCallContentChangedAction: DelegationGraph._fold_tool_call_content,
    ChatToolCallCompleteAction: DelegationGraph._fold_tool_call_complete,
    ChatToolCallResultConfirmedAction: DelegationGraph._fold_tool_call_result_confirmed,
    ChatTurnCancelledAction: DelegationGraph._fold_turn_cancelled,
    ChatErrorAction: DelegationGraph._fold_turn_cancelled,
    ChatResponsePartAction: DelegationGraph._fold_response_part,
    RunStarted: DelegationGraph._fold_run_started,
    RunFinished: DelegationGraph._fold_run_finished,
    MemberJoined: DelegationGraph._fold_member_joined,
    TaskCreated: DelegationGraph._fold_task_created,
    TaskStarted: DelegationGraph._fold_task_started,
    TaskFinished: DelegationGraph._fold_task_finished,
    HandoffRecorded: DelegationGraph._fold_handoff,
    ApprovalRequested: DelegationGraph._fold_approval_requested,
    ApprovalResolved: DelegationGraph._fold_approval_resolved,
    SessionForked: DelegationGraph._fold_session_forked,
    ReviewRequested: DelegationGraph._fold_review_requested,
    ReviewStarted: DelegationGraph._fold_review_started,
    ReviewCompleted: DelegationGraph._fold_review_completed,
}
_FOLDED_TYPES: Final = tuple(_FOLDS)
_UNRESOLVED: Final[Any] = object()


def build_graph(facts: Iterable[Fact]) -> DelegationGraph:
    """Fold ``facts`` (in log order) into a new :class:`DelegationGraph`."""
    graph = DelegationGraph()
    for fact in facts:
        graph.apply(fact)
    return graph


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)
