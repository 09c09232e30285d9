"""Board actions: the facts of a team's board, one per change, each naming who made it.

A team file's ``[board]`` declares work items (:mod:`orchestrator.spec._board`). From the run's
start on, every change to them is a ``team/boardItem*`` action on the session's channel:

- ``created``: the item as the file declares it (recorded when the run starts);
- ``claimed``: an agent or a person took it;
- ``started``: the runtime started its assignee agent on it (the task it runs under);
- ``updated``: its title, description, priority or assignee changed, or it is ready for review;
- ``commented``, ``blocked`` (on whom it waits, and why), ``unblocked``, ``done``.

Each is attributed to its principal (``by``, ``by_kind``): an agent's name, or the principal
name of the person whose client made it (the token's name, as ``team/approvalResolved``'s
``principal``). The fold of these is :mod:`._board`.
"""

from __future__ import annotations

import attrs

__all__ = [
    "BOARD_ACTION_TYPES",
    "BoardAction",
    "BoardItemBlocked",
    "BoardItemClaimed",
    "BoardItemCommented",
    "BoardItemCreated",
    "BoardItemDone",
    "BoardItemStarted",
    "BoardItemUnblocked",
    "BoardItemUpdated",
]

#: ``by_kind`` / ``assignee_kind`` values (spec's AssigneeKind, as plain text on the wire).
AGENT = "agent"
PERSON = "person"


@attrs.frozen(kw_only=True)
class BoardItemCreated:
    """An item joined the board."""

    type: str = attrs.field(default="team/boardItemCreated", init=False)
    item: str
    title: str
    description: str = ""
    priority: str = "normal"
    depends_on: tuple[str, ...] = ()
    # Invariant: (assignee is None) == (assignee_kind is None)
    assignee: str | None = None
    assignee_kind: str | None = None
    by: str
    by_kind: str


@attrs.frozen(kw_only=True)
class BoardItemClaimed:
    """``by`` took the item: it is theirs until done."""

    type: str = attrs.field(default="team/boardItemClaimed", init=False)
    item: str
    by: str
    by_kind: str


@attrs.frozen(kw_only=True)
class BoardItemStarted:
    """The runtime started agent ``by`` on the item, as ``task``."""

    type: str = attrs.field(default="team/boardItemStarted", init=False)
    item: str
    task: str
    by: str
    by_kind: str = AGENT


@attrs.frozen(kw_only=True)
class BoardItemUpdated:
    """Fields of the item changed (None: unchanged); ``reviewing``: ready for review."""

    type: str = attrs.field(default="team/boardItemUpdated", init=False)
    item: str
    by: str
    by_kind: str
    title: str | None = None
    description: str | None = None
    priority: str | None = None
    # Invariant: (assignee is None) == (assignee_kind is None)
    assignee: str | None = None
    assignee_kind: str | None = None
    reviewing: bool = False


@attrs.frozen(kw_only=True)
class BoardItemCommented:
    """``by`` commented on the item."""

    type: str = attrs.field(default="team/boardItemCommented", init=False)
    item: str
    by: str
    by_kind: str
    text: str


@attrs.frozen(kw_only=True)
class BoardItemBlocked:
    """The item cannot go on until ``waiting_for`` (an agent or a person) acts."""

    type: str = attrs.field(default="team/boardItemBlocked", init=False)
    item: str
    by: str
    by_kind: str
    reason: str
    # Invariant: (waiting_for is None) == (waiting_for_kind is None)
    waiting_for: str | None = None
    waiting_for_kind: str | None = None


@attrs.frozen(kw_only=True)
class BoardItemUnblocked:
    """The block is lifted: the item is back where it stood."""

    type: str = attrs.field(default="team/boardItemUnblocked", init=False)
    item: str
    by: str
    by_kind: str


@attrs.frozen(kw_only=True)
class BoardItemDone:
    """The item is done."""

    type: str = attrs.field(default="team/boardItemDone", init=False)
    item: str
    by: str
    by_kind: str
    summary: str = ""


BoardAction = (
    BoardItemCreated
    | BoardItemClaimed
    | BoardItemStarted
    | BoardItemUpdated
    | BoardItemCommented
    | BoardItemBlocked
    | BoardItemUnblocked
    | BoardItemDone
)

#: Wire ``type`` of every board action, for the converter's tagged union.
BOARD_ACTION_TYPES: dict[str, type[BoardAction]] = {
    "team/boardItemCreated": BoardItemCreated,
    "team/boardItemClaimed": BoardItemClaimed,
    "team/boardItemStarted": BoardItemStarted,
    "team/boardItemUpdated": BoardItemUpdated,
    "team/boardItemCommented": BoardItemCommented,
    "team/boardItemBlocked": BoardItemBlocked,
    "team/boardItemUnblocked": BoardItemUnblocked,
    "team/boardItemDone": BoardItemDone,
}
