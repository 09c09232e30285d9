"""The board's Agent UI envelopes: each board fact is a work item's ``task.changed``.

The human_agent_board topology of the taxonomy: a ``task.changed`` with
``runtimeEntity=work_item`` for the item the fact changed (its status, one of ``open, claimed,
running, blocked, reviewing, done``; the board status the fact stands for, one of ``assigned,
claimed, blocked, commented, done``, when it stands for one; who did it), then the members'
and the team's changes as after any team fact, and a ``team.changed`` carrying the board's
counts by status when they changed. Its ``taskId`` is ``work-item:<id>``: an item is not a
runtime task (the task its agent runs under is ``payload.taskRef``).

:func:`feed_board` is the projection :class:`~._project_agentui.AgentUiProjector` looks up for
every board action. Pure: no trio, no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from orchestrator.core import (
    BoardAction,
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCommented,
    BoardItemCreated,
    BoardItemDone,
    BoardItemStarted,
    BoardItemUpdated,
    Fact,
    ItemStatus,
)

from ._agentui import Envelope, EventType, Owner, Persistence, Phase, RuntimeEntity, Scope, Surface
from ._agentui_envelopes import compact

__all__ = ["WORK_ITEM_PREFIX", "feed_board"]

#: A work item's ``taskId``: ``work-item:<id>``.
WORK_ITEM_PREFIX: Final = "work-item:"

_ITEM_PHASE: Final[Mapping[ItemStatus, Phase]] = {
    ItemStatus.OPEN: Phase.SUBMITTED,
    ItemStatus.CLAIMED: Phase.ACCEPTED,
    ItemStatus.RUNNING: Phase.ACTING,
    ItemStatus.BLOCKED: Phase.WAITING,
    ItemStatus.REVIEWING: Phase.REVIEWING,
    ItemStatus.DONE: Phase.COMPLETED,
}


def board_status(action: BoardAction) -> str | None:
    """The board status a fact stands for (``assigned, claimed, blocked, commented, done``),
    or None (an unblock, a move to review, an edit of the text)."""
    match action:
        case BoardItemCreated() | BoardItemUpdated() if action.assignee is not None:
            return "assigned"
        case BoardItemClaimed() | BoardItemStarted():
            return "claimed"
        case BoardItemBlocked():
            return "blocked"
        case BoardItemCommented():
            return "commented"
        case BoardItemDone():
            return "done"
    return None


def feed_board(projector: Any, fact: Fact, action: BoardAction) -> list[Envelope]:
    """The envelopes of a board fact (``projector``: the session's AgentUiProjector, whose
    state the fact was folded into)."""
    state = projector.state
    run = state.run
    item = run.board.items.get(action.item) if run is not None else None
    if item is None:
        return []  # the fold ignores a fact about an unknown item; so does the projection
    task = state.tasks.get(item.task) if item.task is not None else None
    chat = task.chat if task is not None else None
    head = [
        projector._envelope(
            fact,
            EventType.TASK_CHANGED,
            owner=Owner.TASK,
            scope=Scope.TASK,
            phase=_ITEM_PHASE[item.status],
            surface=Surface.TASK_CAPSULE,
            persistence=Persistence.SNAPSHOT,
            task_id=WORK_ITEM_PREFIX + item.id,
            thread_id=chat,
            agent_id=projector._agent_ids.get(chat) if chat is not None else None,
            payload=compact(
                runtimeEntity=RuntimeEntity.WORK_ITEM.value,
                workItemId=item.id,
                status=item.status.value,
                boardStatus=board_status(action),
                title=item.title,
                priority=item.priority,
                assigneeName=item.assignee,
                assigneeKind=item.assignee_kind,
                claimedBy=item.claimed_by,
                waitingFor=item.waiting_for,
                waitingForKind=item.waiting_for_kind,
                blockedReason=item.blocked_reason or None,
                dependsOn=list(item.depends_on) or None,
                comment=action.text if isinstance(action, BoardItemCommented) else None,
                by=action.by,
                byKind=action.by_kind,
                taskRef=item.task,
            ),
        )
    ]
    envelopes: list[Envelope] = projector._after_team_fact(fact, head, ())
    counts = {s.value: 0 for s in ItemStatus}
    for each in run.board.items.values():
        counts[each.status.value] += 1
    if counts != getattr(projector, "_board_counts", None):
        projector._board_counts = counts
        envelopes.append(
            projector._envelope(
                fact,
                EventType.TEAM_CHANGED,
                owner=Owner.AGENT,
                scope=Scope.TEAM,
                phase=Phase.ACTING if counts["done"] < len(run.board.items) else Phase.COMPLETED,
                surface=Surface.TEAM_ROSTER,
                persistence=Persistence.SNAPSHOT,
                payload={
                    "teamName": run.team,
                    "teamParallelBudget": run.parallel_budget,
                    "teamActiveCount": state.active_count(),
                    "teamQueuedCount": state.queued_count(),
                    "boardItemCounts": counts,
                },
            )
        )
    return envelopes
