"""The board's state: its work items folded from the ``team/boardItem*`` facts.

Theory of operation
-------------------
:class:`Board` is a value: :func:`reduce_board` returns a new one for each board action and
never raises (a stored log always folds). :func:`board_refusal` says, before an action is
recorded, why the board cannot take it (an unknown item, an illegal move, a claim someone
else holds, a dependency not done), or None. The runtime asks it through the team validator
for each batch, against the state the batches in flight will leave: so of two claims made at
once, the second meets the first one's claim and is refused. That is how claims race safely.

**The item lifecycle is a table**, :data:`ITEM_TRANSITIONS`: for each status, the board events
it takes and the status each leads to. ``SAME`` keeps the status; ``BEFORE_BLOCK`` returns
to the status the item had when it was blocked (``open`` for a ``running`` one: its agent's
turn ended when it blocked, and the runtime starts it anew). An event missing from a status's row is
refused, naming the item, the event and the status.

Pure: no trio, no IO.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from orchestrator.base import evolve

from ._board_actions import (
    AGENT,
    BoardAction,
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCommented,
    BoardItemCreated,
    BoardItemDone,
    BoardItemStarted,
    BoardItemUnblocked,
    BoardItemUpdated,
)

__all__ = [
    "ITEM_TRANSITIONS",
    "Board",
    "BoardComment",
    "BoardEvent",
    "BoardItem",
    "ItemStatus",
    "board_event",
    "board_refusal",
    "fold_board",
    "reduce_board",
]


class ItemStatus(enum.StrEnum):
    """Where a work item stands (the Agent UI work-item statuses)."""

    OPEN = "open"
    CLAIMED = "claimed"
    RUNNING = "running"
    BLOCKED = "blocked"
    REVIEWING = "reviewing"
    DONE = "done"


#: The status does not change.
SAME: Final = "same"
#: Back to the status the item had when it was blocked.
BEFORE_BLOCK: Final = "before-block"

_S = ItemStatus
_ANY_TIME: Final = {"update": SAME, "comment": SAME}

ITEM_TRANSITIONS: Final[Mapping[ItemStatus, Mapping[str, str]]] = types.MappingProxyType(
    {
        _S.OPEN: {**_ANY_TIME, "claim": _S.CLAIMED, "start": _S.RUNNING, "block": _S.BLOCKED,
                  "done": _S.DONE},
        _S.CLAIMED: {**_ANY_TIME, "start": _S.RUNNING, "review": _S.REVIEWING,
                     "block": _S.BLOCKED, "done": _S.DONE},
        _S.RUNNING: {**_ANY_TIME, "review": _S.REVIEWING, "block": _S.BLOCKED, "done": _S.DONE},
        _S.BLOCKED: {**_ANY_TIME, "unblock": BEFORE_BLOCK},
        _S.REVIEWING: {**_ANY_TIME, "block": _S.BLOCKED, "done": _S.DONE},
        _S.DONE: {"comment": SAME},
    }
)  # fmt: skip
"""``{status: {event: next status}}``: an event missing from a row is refused."""


def board_event(action: BoardAction) -> str:
    """The lifecycle event of ``action`` (the key of :data:`ITEM_TRANSITIONS`'s rows)."""
    if isinstance(action, BoardItemUpdated):
        return "review" if action.reviewing else "update"
    return _EVENTS[type(action)]


_EVENTS: Final[Mapping[type, str]] = {
    BoardItemCreated: "create",
    BoardItemClaimed: "claim",
    BoardItemStarted: "start",
    BoardItemCommented: "comment",
    BoardItemBlocked: "block",
    BoardItemUnblocked: "unblock",
    BoardItemDone: "done",
}


@attrs.frozen(kw_only=True)
class BoardComment:
    """A comment on an item: who wrote it, when, what."""

    by: str
    by_kind: str
    text: str
    at: str


@attrs.frozen(kw_only=True)
class BoardEvent:
    """One line of an item's history: what happened (the event), who did it, when."""

    event: str
    by: str
    by_kind: str
    at: str
    status: ItemStatus  # the status it left


@attrs.frozen(kw_only=True)
class BoardItem:
    """One work item as the facts left it.

    Invariant: (self.claimed_by is None) == (self.claimed_by_kind is None)
    Invariant: (self.status == ItemStatus.BLOCKED) == (self.before_block is not None)
    """

    id: str
    title: str
    description: str = ""
    priority: str = "normal"
    depends_on: tuple[str, ...] = ()
    assignee: str | None = None
    assignee_kind: str | None = None
    status: ItemStatus = ItemStatus.OPEN
    claimed_by: str | None = None
    claimed_by_kind: str | None = None
    # While blocked: the reason, on whom it waits, and the status it goes back to.
    blocked_reason: str = ""
    waiting_for: str | None = None
    waiting_for_kind: str | None = None
    before_block: ItemStatus | None = None
    task: str | None = None  # the runtime's task once an agent was started on it
    summary: str = ""  # what its done said
    comments: tuple[BoardComment, ...] = ()
    history: tuple[BoardEvent, ...] = ()
    created_at: str = ""
    updated_at: str = ""


@attrs.frozen(kw_only=True)
class Board:
    """A board's items, in the order they were created."""

    items: Mapping[str, BoardItem] = attrs.field(factory=dict)

    def item(self, item_id: str) -> BoardItem | None:
        return self.items.get(item_id)

    def dependencies_done(self, item: BoardItem) -> bool:
        """Whether every item ``item`` depends on is done."""
        return all(
            (d := self.items.get(dep)) is not None and d.status == ItemStatus.DONE
            for dep in item.depends_on
        )

    def ready_for_agents(self) -> tuple[BoardItem, ...]:
        """The items the runtime may start their assignee agent on now: assigned to an
        agent, open (or claimed by that agent), every dependency done."""
        return tuple(
            item
            for item in self.items.values()
            if item.assignee_kind == AGENT
            and (
                item.status == ItemStatus.OPEN
                or (item.status == ItemStatus.CLAIMED and item.claimed_by == item.assignee)
            )
            and self.dependencies_done(item)
        )


def board_refusal(board: Board, action: BoardAction) -> tuple[str, str] | None:
    """Why ``board`` cannot take ``action``, with the item's status (or ``"unknown"``);
    None when it can."""
    existing = board.items.get(action.item)
    if isinstance(action, BoardItemCreated):
        if existing is not None:
            return f"item {action.item!r} is already on the board", existing.status
        return None
    if existing is None:
        known = ", ".join(board.items) or "none"
        return f"no item {action.item!r} on the board (items: {known})", "unknown"
    event = board_event(action)
    status = existing.status
    if event not in ITEM_TRANSITIONS[status]:
        return _illegal(existing, event), status
    if isinstance(action, BoardItemStarted | BoardItemDone) and not board.dependencies_done(
        existing
    ):
        waiting = [
            d
            for d in existing.depends_on
            if (dep := board.items.get(d)) is None or dep.status != ItemStatus.DONE
        ]
        return (
            f"item {action.item!r} depends on {', '.join(map(repr, waiting))}, not done yet",
            status,
        )
    started = isinstance(action, BoardItemStarted)
    if started and status == ItemStatus.CLAIMED and existing.claimed_by != action.by:
        return _claimed(existing), status
    return None


def _illegal(item: BoardItem, event: str) -> str:
    if event == "claim" and item.claimed_by is not None and item.status != ItemStatus.DONE:
        return _claimed(item)
    if event == "unblock":
        return f"item {item.id!r} is not blocked (it is {item.status})"
    return f"item {item.id!r} is {item.status}: it cannot take a {event}"


def _claimed(item: BoardItem) -> str:
    return f"item {item.id!r} is already claimed by {item.claimed_by_kind} {item.claimed_by!r}"


def reduce_board(board: Board, action: BoardAction, *, now: str) -> Board:
    """``board`` after ``action``; an action it cannot take (see :func:`board_refusal`) is
    folded as far as it goes: an unknown item is ignored, an illegal move still moves."""
    if isinstance(action, BoardItemCreated):
        item = BoardItem(
            id=action.item,
            title=action.title,
            description=action.description,
            priority=action.priority,
            depends_on=action.depends_on,
            assignee=action.assignee,
            assignee_kind=action.assignee_kind,
            history=(
                BoardEvent(
                    event="create",
                    by=action.by,
                    by_kind=action.by_kind,
                    at=now,
                    status=ItemStatus.OPEN,
                ),
            ),
            created_at=now,
            updated_at=now,
        )
        return Board(items={**board.items, action.item: item})
    found = board.items.get(action.item)
    if found is None:
        return board
    item = found
    event = board_event(action)
    target = ITEM_TRANSITIONS[item.status].get(event, SAME)
    changes: dict[str, object] = {"updated_at": now}
    if target == BEFORE_BLOCK:
        # A running item's agent ended its turn when it blocked: unblocked, the item is open
        # again, for the runtime to start its assignee anew.
        back = item.before_block or ItemStatus.OPEN
        changes.update(
            status=ItemStatus.OPEN if back == ItemStatus.RUNNING else back,
            before_block=None,
            blocked_reason="",
            waiting_for=None,
            waiting_for_kind=None,
        )
    elif target != SAME:
        changes["status"] = ItemStatus(target)
    match action:
        case BoardItemClaimed():
            changes.update(claimed_by=action.by, claimed_by_kind=action.by_kind)
        case BoardItemStarted():
            changes.update(task=action.task, claimed_by=action.by, claimed_by_kind=action.by_kind)
        case BoardItemUpdated():
            for field in ("title", "description", "priority", "assignee", "assignee_kind"):
                value = getattr(action, field)
                if value is not None:
                    changes[field] = value
        case BoardItemCommented():
            comment = BoardComment(by=action.by, by_kind=action.by_kind, text=action.text, at=now)
            changes["comments"] = (*item.comments, comment)
        case BoardItemBlocked():
            changes.update(
                blocked_reason=action.reason,
                waiting_for=action.waiting_for,
                waiting_for_kind=action.waiting_for_kind,
            )
            if target == ItemStatus.BLOCKED:
                changes["before_block"] = item.status
        case BoardItemDone():
            changes["summary"] = action.summary
    status = changes.get("status", item.status)
    assert isinstance(status, ItemStatus)
    line = BoardEvent(event=event, by=action.by, by_kind=action.by_kind, at=now, status=status)
    changes["history"] = (*item.history, line)
    return Board(items={**board.items, action.item: evolve(item, **changes)})


def fold_board(actions: Iterable[tuple[BoardAction, str]]) -> Board:
    """The board a sequence of ``(action, at)`` leaves, from an empty one."""
    board = Board()
    for action, at in actions:
        board = reduce_board(board, action, now=at)
    return board
