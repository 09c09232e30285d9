"""The delegation graph's fold as it was before it kept indexes of its own (reference).

:class:`ReferenceGraph` is ``DelegationGraph``'s fold as it stood before the fold wrote
through its own indexes of nodes and edges and looked folds up by action type (kept here
verbatim, but for its name, so that the property tests in ``test_graph_properties`` can
prove the faster fold builds the very same ``networkx`` graph: nodes, edges, keys,
attributes, and their order).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from orchestrator.ahp.actions import (
    ChatErrorAction,
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
from orchestrator.core import Fact
from orchestrator.core._graph import _TERMINAL_TOOL_STATUSES, _str_or_none
from orchestrator.core._graph_schema import (
    _NODE_DEFAULTS,
    USER_NODE,
    EdgeKind,
    NodeKind,
    tool_call_node,
)
from orchestrator.core._team_actions import (
    ApprovalRequested,
    ApprovalResolved,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunStarted,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
)


class ReferenceGraph:
    """A ``networkx.MultiDiGraph`` of a team run, folded from its facts one at a time."""

    def __init__(self) -> None:
        self._g: Any = nx.MultiDiGraph()
        self.last_sequence: int | None = None
        # task -> the (u, v) of its waits_on edges, so a finished task ends them in O(1).
        self._waits: dict[str, list[tuple[str, str]]] = {}
        # Every prompt's root task (the run's, then a conversation's later prompts'), in order.
        self._root_tasks: list[str] = []

    # ── folding ─────────────────────────────────────────────────────────────

    def apply(self, fact: Fact) -> None:
        """Fold one fact; facts that say nothing about delegation change nothing."""
        self.last_sequence = fact.sequence
        seq = fact.sequence
        action = fact.action
        match action:
            case SessionChatAddedAction():
                self._chat_added(fact.session, action, seq)
            case SessionChatUpdatedAction():
                self._chat_updated(action, seq)
            case SessionChatRemovedAction():
                if self._is(action.chat, NodeKind.CHAT):
                    self._g.nodes[action.chat]["removed"] = True
            case ChatToolCallStartAction():
                node = self._tool_call(fact.channel, action.tool_call_id, seq)
                self._g.nodes[node].update(
                    turn_id=action.turn_id,
                    tool_name=action.tool_name,
                    display_name=action.display_name,
                    status="streaming",
                )
            case ChatToolCallReadyAction():
                status = "pending-confirmation" if action.confirmed is None else "running"
                self._tool_status(fact.channel, action.tool_call_id, status, seq)
            case ChatToolCallApprovedAction():
                self._tool_status(fact.channel, action.tool_call_id, "running", seq)
            case ChatToolCallDeniedAction():
                self._tool_status(fact.channel, action.tool_call_id, "cancelled", seq)
            case ChatToolCallContentChangedAction():
                node = self._tool_call(fact.channel, action.tool_call_id, seq)
                self._subagents(node, action.content, seq)
            case ChatToolCallCompleteAction():
                pending = bool(action.requires_result_confirmation)
                status = "pending-result-confirmation" if pending else "completed"
                node = self._tool_status(fact.channel, action.tool_call_id, status, seq)
                self._g.nodes[node]["success"] = action.result.success
                self._subagents(node, action.result.content, seq)
            case ChatToolCallResultConfirmedAction():
                status = "completed" if action.approved else "cancelled"
                self._tool_status(fact.channel, action.tool_call_id, status, seq)
            case ChatTurnCancelledAction() | ChatErrorAction():
                self._turn_cancelled(fact.channel, action.turn_id)
            case RunStarted():
                self._run_started(fact.session, action, seq)
            case RunFinished():
                self._run_finished(action)
            case MemberJoined():
                self._member_joined(action, seq)
                if action.starts:  # also its task's start (issue 35)
                    self._task_started(TaskStarted(task=action.task, chat=action.chat), seq)
            case TaskCreated():
                self._task_created(action, seq)
            case TaskStarted():
                self._task_started(action, seq)
            case TaskFinished():
                self._task_finished(action)
            case HandoffRecorded():
                self._handoff(action, seq)
            case ApprovalRequested():
                self._approval_requested(action, seq)
            case ApprovalResolved():
                self._approval_resolved(action, seq)
            case _:
                pass

    # ── fold helpers ────────────────────────────────────────────────────────

    def _is(self, node: str, kind: NodeKind) -> bool:
        return node in self._g and self._g.nodes[node]["kind"] == kind

    def _node(self, node: str, kind: NodeKind, seq: int) -> str:
        # Invariant: a node keeps the kind it was first mentioned as (ids of different
        # kinds never collide: URIs, "<URI>#<id>", "task-<n>", "approval-<n>", "user").
        if node not in self._g:
            self._g.add_node(node, kind=kind.value, sequence=seq, **_NODE_DEFAULTS[kind])
        return node

    def _party(self, party: str, seq: int) -> str:
        """The node of a decider or routing target: the user, or a chat."""
        if party == USER_NODE:
            return self._node(USER_NODE, NodeKind.USER, seq)
        return self._node(party, NodeKind.CHAT, seq)

    def _edge(
        self, u: str, v: str, kind: EdgeKind, seq: int, *, key: str | None = None, **data: Any
    ) -> None:
        key = kind.value if key is None else key
        if self._g.has_edge(u, v, key):
            self._g.edges[u, v, key].update(data)
        else:
            self._g.add_edge(u, v, key=key, kind=kind.value, sequence=seq, **data)

    def _tool_call(self, chat: str, tool_call_id: str, seq: int) -> str:
        self._node(chat, NodeKind.CHAT, seq)
        node = tool_call_node(chat, tool_call_id)
        if node not in self._g:
            self._node(node, NodeKind.TOOL_CALL, seq)
            self._g.nodes[node].update(chat=chat, tool_call_id=tool_call_id)
        # Invariant: every tool call node has exactly one in-edge of kind "invoked",
        # from the chat named in its id.
        self._edge(chat, node, EdgeKind.INVOKED, seq)
        return node

    def _tool_status(self, chat: str, tool_call_id: str, status: str, seq: int) -> str:
        node = self._tool_call(chat, tool_call_id, seq)
        self._g.nodes[node]["status"] = status
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
        if chat not in self._g:
            return
        for _, node, data in self._g.out_edges(chat, data=True):
            attrs_ = self._g.nodes[node]
            if (
                data["kind"] == EdgeKind.INVOKED
                and attrs_["turn_id"] == turn_id
                and attrs_["status"] not in _TERMINAL_TOOL_STATUSES
            ):
                attrs_["status"] = "cancelled"

    def _set_origin(self, chat: str, origin: ChatOrigin | None, seq: int) -> None:
        # session/chatAdded upserts: drop the edges of a previous origin before adding the new.
        old = [
            (u, k)
            for u, _, k, d in self._g.in_edges(chat, keys=True, data=True)
            if d["kind"] in (EdgeKind.SPAWNED, EdgeKind.FORKED)
        ]
        for u, k in old:
            self._g.remove_edge(u, chat, k)
        node = self._g.nodes[chat]
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

    def _chat_added(self, session: str, action: SessionChatAddedAction, seq: int) -> None:
        summary = action.summary
        chat = self._node(summary.resource, NodeKind.CHAT, seq)
        self._g.nodes[chat].update(
            added=True,
            removed=False,
            title=summary.title,
            interactivity=_str_or_none(summary.interactivity),
        )
        self._set_origin(chat, summary.origin, seq)
        self._node(session, NodeKind.SESSION, seq)
        self._edge(session, chat, EdgeKind.CONTAINS, seq)

    def _chat_updated(self, action: SessionChatUpdatedAction, seq: int) -> None:
        if not self._is(action.chat, NodeKind.CHAT):
            return  # AHP: a no-op when no entry matches
        changes = action.changes
        node = self._g.nodes[action.chat]
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
        self._g.nodes[task].update(
            title=action.prompt, agent=action.coordinator, status=TaskStatus.RUNNING.value
        )
        self._root_tasks.append(task)

    def _run_finished(self, action: RunFinished) -> None:
        self._g.graph["status"] = action.status.value
        root = self._root_tasks[-1] if self._root_tasks else None
        if root is None or root not in self._g:
            return
        if self._g.nodes[root]["status"] == TaskStatus.RUNNING.value:
            self._g.nodes[root]["status"] = action.status.value
        for chat, _, data in self._g.in_edges(root, data=True):
            if data["kind"] == EdgeKind.WORKS_ON:
                self._g.nodes[chat]["status"] = action.status.value

    def _set_owner(self, task: str, chat: str, seq: int) -> None:
        # Invariant: len([e for e in in_edges(task) if e.kind == "owns"]) <= 1, and its
        # source == nodes[task]["owner"].
        old = [
            (u, k)
            for u, _, k, d in self._g.in_edges(task, keys=True, data=True)
            if d["kind"] == EdgeKind.OWNS
        ]
        for u, k in old:
            self._g.remove_edge(u, task, k)
        self._g.nodes[task]["owner"] = chat
        self._edge(chat, task, EdgeKind.OWNS, seq)

    def _task_status(self, task: str, status: str, chat: str | None) -> None:
        self._g.nodes[task]["status"] = status
        if chat is not None:
            self._g.nodes[chat]["status"] = status

    def _member_joined(self, action: MemberJoined, seq: int) -> None:
        chat = self._node(action.chat, NodeKind.CHAT, seq)
        task = self._node(action.task, NodeKind.TASK, seq)
        node = self._g.nodes[chat]
        node.update(agent=action.agent, role=action.role)
        if node["status"] is None:
            node["status"] = self._g.nodes[task]["status"] or "joined"
        self._edge(chat, task, EdgeKind.WORKS_ON, seq)
        if self._g.nodes[task]["owner"] is None:
            self._set_owner(task, chat, seq)

    def _task_created(self, action: TaskCreated, seq: int) -> None:
        task = self._node(action.task, NodeKind.TASK, seq)
        self._g.nodes[task].update(
            title=action.title,
            agent=action.agent,
            requested_by=action.requested_by,
            tool_call_id=action.tool_call_id,
            parent_task=action.parent_task,
            status=action.status.value,
        )
        if action.requested_by is None or action.parent_task is None:
            self._root_tasks.append(task)  # a conversation's next prompt
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
                key=f"{EdgeKind.WAITS_ON.value}:{task}",
                active=True,
                task=task,
            )
            self._waits.setdefault(task, []).append((action.requested_by, task))

    def _delegator(self, task: str, worker: str) -> str | None:
        requested_by: str | None = self._g.nodes[task]["requested_by"]
        if requested_by is not None:
            return requested_by
        origin_chat: str | None = self._g.nodes[worker]["origin_chat"]
        return origin_chat

    def _task_started(self, action: TaskStarted, seq: int) -> None:
        task = self._node(action.task, NodeKind.TASK, seq)
        chat = self._node(action.chat, NodeKind.CHAT, seq)
        self._task_status(task, TaskStatus.RUNNING.value, chat)
        self._edge(chat, task, EdgeKind.WORKS_ON, seq)
        if self._g.nodes[task]["owner"] is None:
            self._set_owner(task, chat, seq)
        delegator = self._delegator(task, chat)
        if delegator is None:
            return
        key = f"{EdgeKind.WAITS_ON.value}:{task}"
        if self._g.has_edge(delegator, task, key):  # it waited in the queue until now
            self._g.edges[delegator, task, key]["active"] = False
        # Invariant: edges[delegator, worker, "waits_on:<task>"]["active"] is True exactly
        # while nodes[task]["status"] == "running".
        self._edge(delegator, chat, EdgeKind.WAITS_ON, seq, key=key, active=True, task=task)
        self._waits.setdefault(task, []).append((delegator, chat))

    def _task_finished(self, action: TaskFinished) -> None:
        if not self._is(action.task, NodeKind.TASK):
            return
        chat = (
            action.chat
            if action.chat is not None and self._is(action.chat, NodeKind.CHAT)
            else None
        )
        self._task_status(action.task, action.status.value, chat)
        running = self._g.graph.get("status") == TaskStatus.RUNNING.value
        if chat is not None and action.task in self._root_tasks and running:
            self._g.nodes[chat]["status"] = "idle"  # the conversation goes on
        # Every wait on the task ends: on the task while it was queued, then on its worker.
        key = f"{EdgeKind.WAITS_ON.value}:{action.task}"
        for u, v in self._waits.get(action.task, ()):
            self._g.edges[u, v, key]["active"] = False

    def _handoff(self, action: HandoffRecorded, seq: int) -> None:
        source = self._node(action.from_chat, NodeKind.CHAT, seq)
        target = self._node(action.to_chat, NodeKind.CHAT, seq)
        task = self._node(action.task, NodeKind.TASK, seq)
        if self._g.nodes[target]["agent"] is None:
            self._g.nodes[target]["agent"] = action.to_agent
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
        self._g.nodes[source]["status"] = "handed-off"
        self._g.nodes[target]["status"] = TaskStatus.RUNNING.value

    def _approval_requested(self, action: ApprovalRequested, seq: int) -> None:
        approval = self._node(action.approval, NodeKind.APPROVAL, seq)
        tool_call = self._tool_call(action.chat, action.tool_call_id, seq)
        self._g.nodes[approval].update(
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
        self._g.nodes[approval]["status"] = action.decision.value
        self._edge(approval, self._party(action.resolved_by, seq), EdgeKind.RESOLVED_BY, seq)


def build_reference(facts: Iterable[Fact]) -> ReferenceGraph:
    graph = ReferenceGraph()
    for fact in facts:
        graph.apply(fact)
    return graph
