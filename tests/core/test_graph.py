"""The delegation graph: a fold over facts, its nodes, edges and queries."""

from __future__ import annotations

import pytest

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatSummaryChanges,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallResultConfirmedAction,
    ChatTurnCancelledAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ChatInteractivity,
    ForkChatOrigin,
    SideChatOrigin,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
    ToolCallResult,
    ToolChatOrigin,
    UserChatOrigin,
)
from orchestrator.core import (
    USER_NODE,
    ApprovalDecision,
    ApprovalResolved,
    DelegationGraph,
    EdgeKind,
    HandoffRecorded,
    MemberJoined,
    NodeKind,
    RunFinished,
    RunStatus,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    ViolationKind,
    to_json,
    tool_call_node,
)
from tests.support.delegation_log import COORDINATOR, ROOT_TASK, SESSION, FactLog, chat
from tests.support.graph_logs import WORKERS, edge_set, kinds, request_approval


@pytest.fixture
def team() -> FactLog:
    """A coordinator that delegated to three workers in parallel, all finished."""
    log = FactLog()
    log.coordinator()
    tasks = [
        log.spawn(COORDINATOR, f"call-{i}", worker, agent=f"agent-{i}")
        for i, worker in enumerate(WORKERS)
    ]
    for i, (worker, task) in enumerate(zip(WORKERS, tasks, strict=True)):
        log.finish(COORDINATOR, f"call-{i}", worker, task, agent=f"agent-{i}")
    log.add(SESSION, RunFinished(run="run-1", status=RunStatus.COMPLETED, result="report"))
    return log


class TestFold:
    def test_parallel_workers_are_nodes_and_edges(self, team: FactLog) -> None:
        """Every chat, tool call and task becomes a node; the spawn edges point both ways."""
        graph = team.graph()
        assert graph.nodes_of_kind(NodeKind.SESSION) == [SESSION]
        assert graph.nodes_of_kind(NodeKind.CHAT) == [COORDINATOR, *WORKERS]
        calls = [tool_call_node(COORDINATOR, f"call-{i}") for i in range(3)]
        assert graph.nodes_of_kind(NodeKind.TOOL_CALL) == calls
        assert graph.nodes_of_kind(NodeKind.TASK) == [ROOT_TASK, "task-1", "task-2", "task-3"]
        assert edge_set(graph, EdgeKind.CONTAINS) == {(SESSION, c) for c in [COORDINATOR, *WORKERS]}
        assert edge_set(graph, EdgeKind.SPAWNED) == {(COORDINATOR, w) for w in WORKERS}
        assert edge_set(graph, EdgeKind.INVOKED) == {(COORDINATOR, c) for c in calls}
        assert edge_set(graph, EdgeKind.SUBAGENT) == set(zip(calls, WORKERS, strict=True))
        assert edge_set(graph, EdgeKind.SUBTASK_OF) == {(f"task-{i}", ROOT_TASK) for i in (1, 2, 3)}
        assert graph.workers_of(COORDINATOR) == WORKERS
        assert graph.workers_of(chat("unknown")) == []
        assert graph.check() == []

    def test_spawned_and_subagent_edges_agree(self, team: FactLog) -> None:
        """Each spawned edge's tool call carries a subagent edge to the same worker, and back."""
        graph = team.graph()
        spawned = {
            (tool_call_node(u, d["tool_call_id"]), v)
            for u, v, d in graph.edges_of_kind(EdgeKind.SPAWNED)
        }
        assert spawned == edge_set(graph, EdgeKind.SUBAGENT)

    def test_node_attributes(self, team: FactLog) -> None:
        """Chats carry agent, role, title, interactivity, origin; tool calls and tasks status."""
        g = team.graph().graph
        coordinator = g.nodes[COORDINATOR]
        assert coordinator["kind"] == NodeKind.CHAT
        assert (coordinator["agent"], coordinator["role"], coordinator["origin"]) == (
            "lead",
            "coordinator",
            "user",
        )
        assert coordinator["status"] == "completed"  # the root task ended with the run
        worker = g.nodes[WORKERS[0]]
        assert (worker["agent"], worker["role"], worker["origin"]) == ("agent-0", "worker", "tool")
        assert (worker["origin_chat"], worker["origin_tool_call_id"]) == (COORDINATOR, "call-0")
        assert (worker["interactivity"], worker["status"], worker["added"]) == (
            "read-only",
            "completed",
            True,
        )
        call = g.nodes[tool_call_node(COORDINATOR, "call-0")]
        assert (call["tool_name"], call["status"], call["success"]) == (
            "delegate",
            "completed",
            True,
        )
        assert g.nodes["task-1"]["status"] == "completed"
        assert g.nodes["task-1"]["owner"] == WORKERS[0]
        assert g.graph["status"] == "completed"

    def test_irrelevant_facts_change_nothing(self, team: FactLog) -> None:
        """Deltas and actions the project does not model fold to nothing."""
        before = team.graph().statistics()
        team.add(COORDINATOR, ChatDeltaAction(turn_id="turn-1", part_id="p", content="hello"))
        team.add(SESSION, UnknownAction(raw={"type": "root/agentsChanged", "agents": []}))
        assert team.graph().statistics() == before

    def test_apply_one_by_one_equals_build(self, team: FactLog) -> None:
        """build_graph is apply() in log order, nothing more."""
        graph = DelegationGraph()
        for fact in team.facts:
            graph.apply(fact)
        assert graph.last_sequence == len(team.facts)
        assert to_json(graph) == to_json(team.graph())

    def test_chat_added_again_replaces_its_origin(self) -> None:
        """session/chatAdded upserts: a new origin moves the spawned edge, it does not add one."""
        log = FactLog()
        log.coordinator()
        log.chat_added(chat("other"), origin=UserChatOrigin())
        log.spawn(COORDINATOR, "call-1", chat("w"))
        log.chat_added(chat("w"), origin=ToolChatOrigin(chat=chat("other"), tool_call_id="call-9"))
        assert edge_set(log.graph(), EdgeKind.SPAWNED) == {(chat("other"), chat("w"))}

    def test_chat_updated_and_removed(self) -> None:
        """chatUpdated rewrites the fields it carries; chatRemoved marks, the history stays."""
        log = FactLog()
        log.coordinator()
        log.add(
            SESSION,
            SessionChatUpdatedAction(
                chat=COORDINATOR,
                changes=ChatSummaryChanges(title="Renamed", interactivity=ChatInteractivity.HIDDEN),
            ),
        )
        log.add(
            SESSION,
            SessionChatUpdatedAction(chat=chat("nobody"), changes=ChatSummaryChanges(title="x")),
        )
        log.add(SESSION, SessionChatRemovedAction(chat=COORDINATOR))
        g = log.graph().graph
        assert (g.nodes[COORDINATOR]["title"], g.nodes[COORDINATOR]["interactivity"]) == (
            "Renamed",
            "hidden",
        )
        assert g.nodes[COORDINATOR]["removed"] is True
        assert chat("nobody") not in g

    def test_fork_is_a_descendant_of_its_source(self) -> None:
        """A forked chat hangs under its source by a forked edge and is not an orphan."""
        log = FactLog()
        log.coordinator()
        log.chat_added(chat("fork"), origin=ForkChatOrigin(chat=COORDINATOR, turn_id="turn-1"))
        graph = log.graph()
        assert edge_set(graph, EdgeKind.FORKED) == {(COORDINATOR, chat("fork"))}
        assert graph.check() == []

    def test_unknown_reference_makes_a_placeholder(self) -> None:
        """A chat named before it is added is a node with added == False, kind chat."""
        log = FactLog()
        log.add(SESSION, TaskStarted(task="task-9", chat=chat("ghost")))
        g = log.graph().graph
        assert g.nodes[chat("ghost")]["kind"] == NodeKind.CHAT
        assert g.nodes[chat("ghost")]["added"] is False
        assert log.graph().check() == []  # never added: nothing to reach

    def test_origin_can_change_by_update_and_side_chats_hang_under_their_source(self) -> None:
        """chatUpdated with an origin re-homes the chat; a side chat is forked from its source."""
        log = FactLog()
        log.coordinator()
        log.chat_added(chat("side"), origin=None)
        log.add(
            SESSION,
            SessionChatUpdatedAction(
                chat=chat("side"),
                changes=ChatSummaryChanges(
                    origin=SideChatOrigin(chat=COORDINATOR, turn_id="turn-1")
                ),
            ),
        )
        graph = log.graph()
        [(u, v, data)] = graph.edges_of_kind(EdgeKind.FORKED)
        assert (u, v, data["origin"], data["turn_id"]) == (
            COORDINATOR,
            chat("side"),
            "sideChat",
            "turn-1",
        )
        assert graph.graph.nodes[chat("side")]["title"] == "side"  # untouched by the update
        assert graph.check() == []

    def test_facts_about_unknown_things_are_no_ops(self) -> None:
        """Removing, cancelling or finishing what the log never mentioned changes nothing."""
        log = FactLog()
        log.add(SESSION, SessionChatRemovedAction(chat=chat("nobody")))
        log.add(chat("nobody"), ChatTurnCancelledAction(turn_id="t", duration=0))
        log.add(
            SESSION,
            TaskFinished(task="task-9", status=TaskStatus.FAILED, summary="", duration_ms=0),
        )
        log.add(SESSION, RunFinished(run="run-1", status=RunStatus.FAILED))
        graph = log.graph()
        assert graph.statistics().node_count == 0
        assert graph.graph.graph == {"status": "failed"}

    def test_a_second_task_keeps_the_chat_status(self) -> None:
        """A chat that joins a second task keeps the status it already has."""
        log = FactLog()
        log.coordinator()
        log.add(
            SESSION, MemberJoined(chat=COORDINATOR, agent="lead", role="coordinator", task="t2")
        )
        graph = log.graph()
        assert graph.graph.nodes[COORDINATOR]["status"] == "running"
        assert graph.owner_of("t2") == COORDINATOR
        fresh = FactLog()
        fresh.add(SESSION, MemberJoined(chat=chat("x"), agent="a", role="worker", task="t9"))
        assert fresh.graph().graph.nodes[chat("x")]["status"] == "joined"


class TestToolCallStatus:
    def test_confirmation_flow(self) -> None:
        """streaming → pending-confirmation → running → completed."""
        log = FactLog()
        log.coordinator()
        log.tool_call(COORDINATOR, "c1", tool="shell")
        node = tool_call_node(COORDINATOR, "c1")
        statuses = [log.graph().graph.nodes[node]["status"]]
        log.add(
            COORDINATOR,
            ChatToolCallReadyAction(turn_id="turn-1", tool_call_id="c1", invocation_message="run"),
        )
        statuses.append(log.graph().graph.nodes[node]["status"])
        log.add(
            COORDINATOR,
            ChatToolCallApprovedAction(
                turn_id="turn-1",
                tool_call_id="c1",
                confirmed=ToolCallConfirmationReason.USER_ACTION,
            ),
        )
        statuses.append(log.graph().graph.nodes[node]["status"])
        log.add(
            COORDINATOR,
            ChatToolCallCompleteAction(
                turn_id="turn-1",
                tool_call_id="c1",
                result=ToolCallResult(success=False, past_tense_message="Ran"),
            ),
        )
        statuses.append(log.graph().graph.nodes[node]["status"])
        assert statuses == ["streaming", "pending-confirmation", "running", "completed"]
        assert log.graph().graph.nodes[node]["success"] is False

    def test_denied_and_cancelled(self) -> None:
        """A denied call is cancelled; a cancelled turn cancels its unfinished calls only."""
        log = FactLog()
        log.coordinator()
        for call in ("c1", "c2", "c3"):
            log.tool_call(COORDINATOR, call)
        log.add(
            COORDINATOR,
            ChatToolCallDeniedAction(
                turn_id="turn-1", tool_call_id="c1", reason=ToolCallCancellationReason.DENIED
            ),
        )
        log.add(
            COORDINATOR,
            ChatToolCallCompleteAction(
                turn_id="turn-1",
                tool_call_id="c2",
                result=ToolCallResult(success=True, past_tense_message="Done"),
            ),
        )
        log.tool_call(COORDINATOR, "c4", turn="turn-2")
        log.add(COORDINATOR, ChatTurnCancelledAction(turn_id="turn-1", duration=3))
        g = log.graph().graph
        status = {
            c: g.nodes[tool_call_node(COORDINATOR, c)]["status"] for c in ("c1", "c2", "c3", "c4")
        }
        assert status == {
            "c1": "cancelled",
            "c2": "completed",
            "c3": "cancelled",
            "c4": "streaming",
        }

    def test_result_confirmation(self) -> None:
        """A result waiting for confirmation completes when approved, is cancelled if not."""
        log = FactLog()
        log.coordinator()
        for call, approved in (("c1", True), ("c2", False)):
            log.tool_call(COORDINATOR, call)
            log.add(
                COORDINATOR,
                ChatToolCallCompleteAction(
                    turn_id="turn-1",
                    tool_call_id=call,
                    result=ToolCallResult(success=True, past_tense_message="Done"),
                    requires_result_confirmation=True,
                ),
            )
            node = tool_call_node(COORDINATOR, call)
            assert log.graph().graph.nodes[node]["status"] == "pending-result-confirmation"
            log.add(
                COORDINATOR,
                ChatToolCallResultConfirmedAction(
                    turn_id="turn-1", tool_call_id=call, approved=approved
                ),
            )
        g = log.graph().graph
        assert g.nodes[tool_call_node(COORDINATOR, "c1")]["status"] == "completed"
        assert g.nodes[tool_call_node(COORDINATOR, "c2")]["status"] == "cancelled"


class TestHandoff:
    @pytest.fixture
    def handoff(self) -> FactLog:
        log = FactLog()
        log.coordinator()
        log.chat_added(
            chat("specialist"), origin=ToolChatOrigin(chat=COORDINATOR, tool_call_id="h1")
        )
        log.tool_call(COORDINATOR, "h1", tool="handoff")
        log.subagent_content(COORDINATOR, "h1", chat("specialist"), agent="legal")
        log.add(
            SESSION,
            HandoffRecorded(
                task=ROOT_TASK,
                from_chat=COORDINATOR,
                to_chat=chat("specialist"),
                to_agent="legal",
                reason="needs a lawyer",
                resume_target="lead",
                tool_call_id="h1",
            ),
        )
        return log

    def test_handoff_edge_and_owner_move(self, handoff: FactLog) -> None:
        """A handoff is an edge with reason, resume target and task; the task's owner moves."""
        graph = handoff.graph()
        [(u, v, data)] = graph.edges_of_kind(EdgeKind.HANDOFF)
        assert (u, v) == (COORDINATOR, chat("specialist"))
        assert (data["reason"], data["resume_target"], data["task"]) == (
            "needs a lawyer",
            "lead",
            ROOT_TASK,
        )
        assert edge_set(graph, EdgeKind.OWNS) == {(chat("specialist"), ROOT_TASK)}
        assert graph.owner_of(ROOT_TASK) == chat("specialist")
        assert (chat("specialist"), ROOT_TASK) in edge_set(graph, EdgeKind.WORKS_ON)
        assert (COORDINATOR, ROOT_TASK) in edge_set(graph, EdgeKind.WORKS_ON)  # history stays
        assert graph.graph.nodes[chat("specialist")]["agent"] == "legal"
        assert graph.graph.nodes[COORDINATOR]["status"] == "handed-off"
        assert graph.graph.nodes[chat("specialist")]["status"] == "running"
        assert graph.check() == []

    def test_handoff_back_keeps_one_owns_edge(self, handoff: FactLog) -> None:
        """Handing the task back moves ownership again; each handoff is its own edge."""
        handoff.add(
            SESSION,
            HandoffRecorded(
                task=ROOT_TASK,
                from_chat=chat("specialist"),
                to_chat=COORDINATOR,
                to_agent="lead",
                reason="done",
                resume_target="lead",
                tool_call_id="h2",
            ),
        )
        graph = handoff.graph()
        assert edge_set(graph, EdgeKind.OWNS) == {(COORDINATOR, ROOT_TASK)}
        assert len(graph.edges_of_kind(EdgeKind.OWNS)) == 1
        assert edge_set(graph, EdgeKind.HANDOFF) == {
            (COORDINATOR, chat("specialist")),
            (chat("specialist"), COORDINATOR),
        }
        assert graph.owner_of(ROOT_TASK) == COORDINATOR
        assert graph.owner_of("task-404") is None
        statuses = {c: graph.graph.nodes[c]["status"] for c in (COORDINATOR, chat("specialist"))}
        assert statuses == {COORDINATOR: "running", chat("specialist"): "handed-off"}

    def test_handoff_makes_the_target_reachable(self) -> None:
        """A specialist added without an origin under a handoff is reachable through it."""
        log = FactLog()
        log.coordinator()
        log.chat_added(chat("s"), origin=ForkChatOrigin(chat=chat("missing"), turn_id="t"))
        assert kinds(log.graph().check()) == [ViolationKind.UNREACHABLE_CHAT]
        log.add(
            SESSION,
            HandoffRecorded(
                task=ROOT_TASK,
                from_chat=COORDINATOR,
                to_chat=chat("s"),
                to_agent="x",
                reason="r",
                resume_target="lead",
                tool_call_id="h",
            ),
        )
        assert log.graph().check() == []


class TestWaitsOn:
    def waits(self, graph: DelegationGraph) -> dict[tuple[str, str], bool]:
        return {(u, v): d["active"] for u, v, d in graph.edges_of_kind(EdgeKind.WAITS_ON)}

    def test_active_while_the_task_runs(self) -> None:
        """The delegating chat waits on the worker until team/taskFinished."""
        log = FactLog()
        log.coordinator()
        task = log.spawn(COORDINATOR, "c1", chat("w"))
        assert self.waits(log.graph()) == {(COORDINATOR, chat("w")): True}
        log.finish(COORDINATOR, "c1", chat("w"), task)
        assert self.waits(log.graph()) == {(COORDINATOR, chat("w")): False}

    def test_queued_task_then_worker(self) -> None:
        """A queued task is waited on as a task; when it starts, the wait moves to the worker."""
        log = FactLog()
        log.coordinator()
        log.tool_call(COORDINATOR, "c1")
        task = log.create_task(COORDINATOR, "c1", agent="researcher", queued=True)
        assert self.waits(log.graph()) == {(COORDINATOR, task): True}
        assert log.graph().graph.nodes[task]["status"] == "queued"
        log.start_worker(COORDINATOR, "c1", chat("w"), task, agent="researcher")
        assert self.waits(log.graph()) == {
            (COORDINATOR, task): False,
            (COORDINATOR, chat("w")): True,
        }
        log.finish(COORDINATOR, "c1", chat("w"), task)
        assert self.waits(log.graph()) == {
            (COORDINATOR, task): False,
            (COORDINATOR, chat("w")): False,
        }
        assert log.graph().check() == []

    def test_killed_while_queued(self) -> None:
        """A task killed in the queue ends the wait without any worker."""
        log = FactLog()
        log.coordinator()
        task = log.create_task(COORDINATOR, "c1", agent="researcher", queued=True)
        log.add(
            SESSION, TaskFinished(task=task, status=TaskStatus.KILLED, summary="", duration_ms=0)
        )
        assert self.waits(log.graph()) == {(COORDINATOR, task): False}
        assert log.graph().graph.nodes[task]["status"] == "killed"


class TestApprovals:
    def test_routed_to_the_user(self) -> None:
        """An approval names its requester, the user it is routed to, and the gated tool call."""
        log = FactLog()
        log.coordinator()
        log.spawn(COORDINATOR, "c1", chat("w"))
        request_approval(log, chat("w"))
        graph = log.graph()
        assert graph.graph.nodes["approval-1"]["status"] == "pending"
        assert graph.nodes_of_kind(NodeKind.USER) == [USER_NODE]
        assert edge_set(graph, EdgeKind.REQUESTED_BY) == {("approval-1", chat("w"))}
        assert edge_set(graph, EdgeKind.ROUTED_TO) == {("approval-1", USER_NODE)}
        assert edge_set(graph, EdgeKind.GATES) == {("approval-1", tool_call_node(chat("w"), "c9"))}
        log.add(
            SESSION,
            ApprovalResolved(
                approval="approval-1", decision=ApprovalDecision.APPROVED, resolved_by=USER_NODE
            ),
        )
        graph = log.graph()
        assert graph.graph.nodes["approval-1"]["status"] == "approved"
        assert edge_set(graph, EdgeKind.RESOLVED_BY) == {("approval-1", USER_NODE)}
        assert graph.check() == []

    def test_routed_to_the_coordinator(self) -> None:
        """Where policy grants it, the coordinator chat decides; no user node appears."""
        log = FactLog()
        log.coordinator()
        log.spawn(COORDINATOR, "c1", chat("w"))
        request_approval(log, chat("w"), routed_to=COORDINATOR)
        log.add(
            SESSION,
            ApprovalResolved(
                approval="approval-1", decision=ApprovalDecision.DENIED, resolved_by=COORDINATOR
            ),
        )
        graph = log.graph()
        assert graph.nodes_of_kind(NodeKind.USER) == []
        assert edge_set(graph, EdgeKind.ROUTED_TO) == {("approval-1", COORDINATOR)}
        assert edge_set(graph, EdgeKind.RESOLVED_BY) == {("approval-1", COORDINATOR)}
        assert graph.graph.nodes["approval-1"]["status"] == "denied"


class TestStatistics:
    def test_counts_by_kind(self, team: FactLog) -> None:
        """statistics() counts nodes and edges per kind."""
        stats = team.graph().statistics()
        assert stats.nodes_by_kind == {"chat": 4, "session": 1, "task": 4, "tool_call": 3}
        assert stats.edges_by_kind["spawned"] == 3
        assert stats.edges_by_kind["subagent"] == 3
        assert stats.edges_by_kind["owns"] == 4
        assert stats.node_count == 12
        assert stats.edge_count == sum(stats.edges_by_kind.values())
