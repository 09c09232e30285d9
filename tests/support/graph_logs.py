"""Helpers over delegation graphs and their checks: what the graph's, its check's and its
exports' tests share."""

from __future__ import annotations

from orchestrator.core import (
    USER_NODE,
    ApprovalRequested,
    DelegationGraph,
    EdgeKind,
    Violation,
    ViolationKind,
)
from tests.support.delegation_log import SESSION, FactLog, chat


def kinds(violations: list[Violation]) -> list[ViolationKind]:
    return [v.kind for v in violations]


def request_approval(log: FactLog, requester: str, *, routed_to: str = USER_NODE) -> None:
    """An approval of a ``shell`` call of ``requester``, routed to ``routed_to``."""
    log.tool_call(requester, "c9", tool="shell")
    log.add(
        SESSION,
        ApprovalRequested(
            approval="approval-1",
            chat=requester,
            turn_id="turn-1",
            tool_call_id="c9",
            tool_name="shell",
            requested_by="researcher",
            routed_to=routed_to,
            policy_scope="shell",
            summary="rm -rf build/",
        ),
    )


def edge_set(graph: DelegationGraph, kind: EdgeKind) -> set[tuple[str, str]]:
    return {(u, v) for u, v, _ in graph.edges_of_kind(kind)}


WORKERS = [chat("worker-a"), chat("worker-b"), chat("worker-c")]
