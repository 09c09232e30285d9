"""A team's board: the work items a team file declares under ``[board]``.

A board is a queue of work shared by agents and people. Each item has a title, a description,
a priority, the items it depends on and an assignee: an agent of the team (by its name) or a
person (by the principal name a client signs in with, written ``@name`` in the file). The
runtime starts an agent on an item assigned to it once its dependencies are done; an item for a
person waits for them. What happens to the items afterwards is facts
(:mod:`orchestrator.core._board`); this is only what the file declares.

The tools an agent lists to work on the board are :data:`BOARD_TOOLS` (``board.list``,
``board.claim``...). A model is offered them under the project's function-name rule
(:func:`~._tools.function_name`): ``board_claim``, since a dot is not a legal function name in
the model APIs.

Pure: no trio and no IO.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

__all__ = [
    "BOARD_TOOLS",
    "PERSON_PREFIX",
    "AssigneeKind",
    "BoardItemSpec",
    "BoardSpec",
    "Priority",
]

#: How a team file writes a person as an item's assignee: ``assignee = "@alice"``.
PERSON_PREFIX: Final = "@"

#: The board tools an agent may list in its ``tools`` (the runtime implements them).
BOARD_TOOLS: Final = (
    "board.list",
    "board.claim",
    "board.update",
    "board.comment",
    "board.block",
    "board.done",
)


class Priority(enum.StrEnum):
    """How urgent an item is; a board lists the urgent first."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"

    @property
    def rank(self) -> int:
        """0 for the most urgent: the order a board lists items in."""
        return _RANKS[self]


_RANKS: Final = {Priority.URGENT: 0, Priority.HIGH: 1, Priority.NORMAL: 2, Priority.LOW: 3}


class AssigneeKind(enum.StrEnum):
    """Who an item is assigned to, or who did something on the board."""

    AGENT = "agent"
    PERSON = "person"


@attrs.frozen(kw_only=True)
class BoardItemSpec:
    """One ``[[board.items]]`` entry.

    Invariant: (self.assignee is None) == (self.assignee_kind is None)
    Invariant: self.id not in self.depends_on
    """

    id: str
    title: str
    description: str = ""
    priority: Priority = Priority.NORMAL
    # The items that must be done before this one starts, by id (declared, no cycle).
    depends_on: tuple[str, ...] = ()
    # An agent's name or a person's principal name (without the file's "@").
    assignee: str | None = None
    assignee_kind: AssigneeKind | None = None


@attrs.frozen(kw_only=True)
class BoardSpec:
    """The ``[board]`` table: its items, in file order.

    Invariant: len({i.id for i in items}) == len(items)
    """

    items: tuple[BoardItemSpec, ...] = ()

    def item(self, item_id: str) -> BoardItemSpec | None:
        """The item called ``item_id``, or None."""
        return next((i for i in self.items if i.id == item_id), None)
