"""Runs whose facts the trace tests fold, and what a trace must say of them.

:func:`delivery_run` plays the delivery team (teams/delivery.toml) in memory, approving its
approval when it comes. :func:`delegation_tree` reads the delegation tree from the facts
(the truth the spans must mirror), and :func:`span_tree` reads the same shape from spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import trio

from orchestrator.core import (
    ApprovalRequested,
    Fact,
    MemberJoined,
    RunStarted,
    SpanFold,
    TaskCreated,
    task_started,
)
from orchestrator.spec import load_team
from tests.support.paths import PROJECT_ROOT
from tests.support.runtime import Harness

DELIVERY = PROJECT_ROOT / "teams" / "delivery.toml"


def fold_in_a_turn(session: str, chat: str) -> SpanFold:
    """A span fold of ``session`` whose run has started and whose coordinator ``chat`` has
    joined: code running in that chat's turn has a span to name."""
    fold = SpanFold(session)
    at = "2026-12-07T10:00:00.000Z"
    started = RunStarted(
        run="run-1",
        team="t",
        topology="coordinator-workers",
        parallel_budget=1,
        coordinator="lead",
        prompt="p",
        task="task-1",
    )
    joined = MemberJoined(chat=chat, agent="lead", role="coordinator", task="task-1")
    fold.apply(Fact(sequence=1, session=session, channel=session, at=at, action=started))
    fold.apply(Fact(sequence=2, session=session, channel=session, at=at, action=joined))
    return fold


async def delivery_run(harness: Harness | None = None) -> Harness:
    """The delivery team run to its end in memory, its approval given by the user."""
    harness = harness or Harness(load_team(DELIVERY))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(harness.runtime.run, "Ship the release notes")
            decided: set[str] = set()
            while harness.runtime.state.run is None or harness.runtime.state.run.status is None:
                for request in harness.actions(ApprovalRequested):
                    if request.approval not in decided:
                        decided.add(request.approval)
                        await harness.runtime.resolve_approval(request.approval, approved=True)
                await trio.sleep(0.001)
    return harness


def delegation_tree(facts: Iterable[Fact]) -> set[tuple[str, str, str]]:
    """(delegating chat, delegate call id, worker chat) for every delegation the facts hold."""
    created: dict[str, TaskCreated] = {}
    edges: set[tuple[str, str, str]] = set()
    for fact in facts:
        action = fact.action
        if isinstance(action, TaskCreated) and action.requested_by is not None:
            created[action.task] = action
        elif (started := task_started(action)) is not None and started.task in created:
            request = created[started.task]
            assert request.requested_by is not None
            assert request.tool_call_id is not None
            edges.add((request.requested_by, request.tool_call_id, started.chat))
    return edges


class SpanLike(Protocol):
    """A span as the fold records it or the receiver decodes it."""

    @property
    def name(self) -> str: ...
    @property
    def span_id(self) -> Any: ...
    @property
    def parent_id(self) -> Any: ...
    @property
    def attributes(self) -> Mapping[str, Any]: ...


def span_delegations(spans: Iterable[SpanLike]) -> set[tuple[str, str, str]]:
    """(delegating chat, delegate call id, worker chat) as the spans nest: a worker's
    ``invoke_agent`` under an ``execute_tool delegate`` under its coordinator's
    ``invoke_agent``. Works on the fold's records and on the receiver's spans alike."""
    by_id = {span.span_id: span for span in spans}
    edges: set[tuple[str, str, str]] = set()
    for span in by_id.values():
        if not span.name.startswith("invoke_agent "):
            continue
        call = by_id.get(span.parent_id)
        if call is None or call.name != "execute_tool delegate":
            continue
        delegator = by_id.get(call.parent_id)
        assert delegator is not None, "a delegate call's span has its agent's turn as parent"
        edges.add(
            (
                str(delegator.attributes["gen_ai.agent.id"]),
                str(call.attributes["gen_ai.tool.call.id"]),
                str(span.attributes["gen_ai.agent.id"]),
            )
        )
    return edges
