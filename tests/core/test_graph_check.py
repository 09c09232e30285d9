"""The delegation graph's consistency check (:meth:`DelegationGraph.check`): each kind of
contradiction a log can hold is named, with the nodes it involves and a message saying what.
"""

from __future__ import annotations

from orchestrator.ahp.state import (
    ToolChatOrigin,
)
from orchestrator.core import (
    USER_NODE,
    ApprovalDecision,
    ApprovalResolved,
    ViolationKind,
    tool_call_node,
)
from tests.support.delegation_log import COORDINATOR, SESSION, FactLog, chat
from tests.support.graph_logs import kinds, request_approval


class TestCheck:
    def test_origin_without_subagent_content(self) -> None:
        """(a) A worker whose origin names a tool call that never listed it."""
        log = FactLog()
        log.coordinator()
        log.tool_call(COORDINATOR, "c1")
        log.chat_added(chat("w"), origin=ToolChatOrigin(chat=COORDINATOR, tool_call_id="c1"))
        [violation] = log.graph().check()
        assert violation.kind == ViolationKind.ORIGIN_WITHOUT_SUBAGENT
        assert violation.nodes == (chat("w"), tool_call_node(COORDINATOR, "c1"))
        assert chat("w") in violation.message
        assert "'c1'" in violation.message

    def test_subagent_content_for_a_chat_with_another_origin(self) -> None:
        """(b) Subagent content pointing at a chat that another tool call spawned."""
        log = FactLog()
        log.coordinator()
        log.spawn(COORDINATOR, "c1", chat("w"))
        log.tool_call(COORDINATOR, "c2")
        log.subagent_content(COORDINATOR, "c2", chat("w"), agent="researcher")
        [violation] = log.graph().check()
        assert violation.kind == ViolationKind.SUBAGENT_WITHOUT_ORIGIN
        assert violation.nodes == (tool_call_node(COORDINATOR, "c2"), chat("w"))
        assert "'c2'" in violation.message
        assert "'c1'" in violation.message  # the origin the worker really has

    def test_subagent_content_for_a_chat_that_does_not_exist(self) -> None:
        """(b) Subagent content pointing at a chat that was never added."""
        log = FactLog()
        log.coordinator()
        log.tool_call(COORDINATOR, "c1")
        log.subagent_content(COORDINATOR, "c1", chat("nowhere"), agent="researcher")
        [violation] = log.graph().check()
        assert violation.kind == ViolationKind.SUBAGENT_WITHOUT_ORIGIN
        assert "never added" in violation.message

    def test_spawn_cycle(self) -> None:
        """(c) Two chats each spawned by the other's tool call."""
        log = FactLog()
        log.coordinator()
        b, c = chat("b"), chat("c")
        log.chat_added(b, origin=ToolChatOrigin(chat=c, tool_call_id="from-c"))
        log.chat_added(c, origin=ToolChatOrigin(chat=b, tool_call_id="from-b"))
        log.subagent_content(c, "from-c", b, agent="x")
        log.subagent_content(b, "from-b", c, agent="x")
        violations = log.graph().check()
        cycles = [v for v in violations if v.kind == ViolationKind.SPAWN_CYCLE]
        assert [v.nodes for v in cycles] == [(b, c)]
        assert f"{b} -> {c} -> {b}" in cycles[0].message
        # Neither descends from the coordinator either; nothing else is wrong.
        assert kinds(violations) == [
            ViolationKind.SPAWN_CYCLE,
            ViolationKind.UNREACHABLE_CHAT,
            ViolationKind.UNREACHABLE_CHAT,
        ]

    def test_self_spawn_is_a_cycle(self) -> None:
        """(c) A chat cannot be its own parent."""
        log = FactLog()
        log.chat_added(chat("me"), origin=ToolChatOrigin(chat=chat("me"), tool_call_id="c"))
        log.subagent_content(chat("me"), "c", chat("me"), agent="x")
        assert ViolationKind.SPAWN_CYCLE in kinds(log.graph().check())

    def test_orphan_chat(self) -> None:
        """(d) A worker whose parent chat does not exist is not reachable from any root."""
        log = FactLog()
        log.coordinator()
        log.chat_added(
            chat("orphan"), origin=ToolChatOrigin(chat=chat("missing"), tool_call_id="c1")
        )
        violations = log.graph().check()
        assert kinds(violations) == [
            ViolationKind.ORIGIN_WITHOUT_SUBAGENT,
            ViolationKind.UNREACHABLE_CHAT,
        ]
        assert violations[1].nodes == (chat("orphan"),)
        assert chat("missing") in violations[1].message

    def test_approval_from_an_unknown_chat(self) -> None:
        """(e) An approval whose requesting chat was never added."""
        log = FactLog()
        log.coordinator()
        request_approval(log, chat("stranger"))
        [violation] = log.graph().check()
        assert violation.kind == ViolationKind.APPROVAL_WITHOUT_REQUESTER
        assert violation.nodes == ("approval-1", chat("stranger"))

    def test_approval_resolved_but_never_requested(self) -> None:
        """(e) A decision for an approval nobody asked for."""
        log = FactLog()
        log.coordinator()
        log.add(
            SESSION,
            ApprovalResolved(
                approval="approval-7", decision=ApprovalDecision.APPROVED, resolved_by=USER_NODE
            ),
        )
        [violation] = log.graph().check()
        assert violation.kind == ViolationKind.APPROVAL_WITHOUT_REQUESTER
        assert violation.nodes == ("approval-7",)

    def test_subagent_content_for_a_root_chat(self) -> None:
        """(b) The message names the origin the chat really has (user, or none)."""
        log = FactLog()
        log.coordinator()
        log.chat_added(chat("loose"), origin=None)
        log.tool_call(COORDINATOR, "c1")
        log.subagent_content(COORDINATOR, "c1", COORDINATOR, agent="x")
        log.subagent_content(COORDINATOR, "c1", chat("loose"), agent="x")
        messages = [v.message for v in log.graph().check()]
        assert len(messages) == 2
        assert messages[0].endswith("whose origin is user")
        assert messages[1].endswith("whose origin is absent")
