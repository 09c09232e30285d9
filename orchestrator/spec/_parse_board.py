"""The checks of a team file's ``[board]`` table, each naming the key path it refuses.

:class:`_BoardChecks` reads ``[board]`` and its ``[[board.items]]`` after the agents' names are
known (an item's assignee may name one). Each item is checked on its own, so one
``teams check`` reports every problem; the rules across items (ids unique, dependencies
declared and without a cycle) come after.

Pure: no trio and no IO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from orchestrator.base import TeamFileError

from ._board import PERSON_PREFIX, AssigneeKind, BoardItemSpec, BoardSpec, Priority
from ._checks import _ValueChecks
from ._wording import _did_you_mean, _one_of

__all__: list[str] = []

_BOARD_KEYS: Final = ("items",)
_ITEM_KEYS: Final = ("id", "title", "description", "priority", "depends_on", "assignee")
_PRIORITIES: Final = {p.value: p for p in Priority}


class _BoardChecks(_ValueChecks):
    """The ``[board]`` checks; ``agent_names`` are the team's agents."""

    def board(self, value: object, agent_names: Sequence[str]) -> BoardSpec:
        data = self.table(value, "board", "a [board] table with [[board.items]]")
        self.check_keys(data, "board", _BOARD_KEYS)
        entries = data.get("items", [])
        if isinstance(entries, dict):
            raise self.error(
                "board.items",
                "expected [[board.items]] tables, got a table: write each item under "
                "[[board.items]], with double brackets",
            )
        problems: list[TeamFileError] = []
        items: list[BoardItemSpec] = []
        for index, entry in enumerate(self.array(entries, "board.items", "[[board.items]]")):
            try:
                items.append(self.board_item(entry, f"board.items[{index}]", agent_names))
            except TeamFileError as exc:
                problems.extend(exc.problems)
        if problems:
            raise TeamFileError.of(problems)
        self.check_items(items)
        return BoardSpec(items=tuple(items))

    def board_item(self, value: object, path: str, agent_names: Sequence[str]) -> BoardItemSpec:
        data = self.table(value, path, "a [[board.items]] table")
        self.check_keys(data, path, _ITEM_KEYS, required=("id", "title"))
        item_id = self.name(data["id"], f"{path}.id", "item id")
        title = self.string(data["title"], f"{path}.title")
        description = ""
        if "description" in data:
            description = self.string(data["description"], f"{path}.description", empty_ok=True)
        priority = Priority.NORMAL
        if "priority" in data:
            priority = self.choice(data["priority"], f"{path}.priority", _PRIORITIES, "priority")
        depends_on: tuple[str, ...] = ()
        if "depends_on" in data:
            depends_on = self.names(data["depends_on"], f"{path}.depends_on", "item id")
        assignee = kind = None
        if "assignee" in data:
            assignee, kind = self.assignee(data["assignee"], f"{path}.assignee", agent_names)
        return BoardItemSpec(
            id=item_id,
            title=title,
            description=description,
            priority=priority,
            depends_on=depends_on,
            assignee=assignee,
            assignee_kind=kind,
        )

    def assignee(
        self, value: object, path: str, agent_names: Sequence[str]
    ) -> tuple[str, AssigneeKind]:
        """An agent of the team by name, or a person as ``@principal``."""
        text = self.string(value, path)
        if text.startswith(PERSON_PREFIX):
            return self.name(text[1:], path, "person's principal name"), AssigneeKind.PERSON
        if text not in agent_names:
            raise self.error(
                path,
                f"{text!r} is not an agent of this team{_did_you_mean(text, agent_names)} "
                f"(agents: {_one_of(agent_names)}); write a person as "
                f'"{PERSON_PREFIX}<principal name>", e.g. "{PERSON_PREFIX}{text}"',
            )
        return text, AssigneeKind.AGENT

    def check_items(self, items: Sequence[BoardItemSpec]) -> None:
        """Ids unique; each dependency declared, not the item itself; no cycle."""
        problems: list[TeamFileError] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(items):
            if item.id in seen:
                problems.append(
                    self.error(
                        f"board.items[{index}].id",
                        f"{item.id!r} is already the id of board.items[{seen[item.id]}]; "
                        "ids must be unique",
                    )
                )
            seen.setdefault(item.id, index)
        for index, item in enumerate(items):
            for position, dependency in enumerate(item.depends_on):
                where = f"board.items[{index}].depends_on[{position}]"
                if dependency == item.id:
                    problems.append(self.error(where, "an item cannot depend on itself"))
                elif dependency not in seen:
                    problems.append(
                        self.error(
                            where,
                            f"no item {dependency!r} on the board"
                            f"{_did_you_mean(dependency, seen)}; items: {_one_of(seen)}",
                        )
                    )
        if problems:
            raise TeamFileError.of(problems)
        cycle = _cycle({item.id: item.depends_on for item in items})
        if cycle:
            raise self.error(
                f"board.items[{seen[cycle[0]]}].depends_on",
                "the dependencies go round in a circle: " + " -> ".join([*cycle, cycle[0]]),
            )


def _cycle(edges: Mapping[str, Sequence[str]]) -> list[str]:
    """A circle of dependencies, in order, or [] (a depth-first walk)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, ()):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in edges:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []
