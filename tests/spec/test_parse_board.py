"""The ``[board]`` table: work items checked one by one, each error naming the file, the item
and the field; the rules across items (unique ids, declared dependencies, no cycle)."""

from __future__ import annotations

import pytest

from orchestrator import Agent, Item, Team
from orchestrator.base import TeamFileError
from orchestrator.spec import AssigneeKind, BoardItemSpec, Priority, parse_team

HEAD = """
[team]
name = "b"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["board.list", "board.claim"]
[agents.writer]
role = "writes"
"""


def board(items: str) -> str:
    return HEAD + "[board]\n" + items


def problems(text: str) -> list[str]:
    with pytest.raises(TeamFileError) as info:
        parse_team(text, file="board.toml")
    return [str(p) for p in info.value.problems]


class TestItems:
    def test_an_item_reads_every_field(self) -> None:
        spec = parse_team(
            board(
                '[[board.items]]\nid = "a"\ntitle = "A"\n'
                '[[board.items]]\nid = "b"\ntitle = "B"\ndescription = "more"\n'
                'priority = "urgent"\ndepends_on = ["a"]\nassignee = "writer"\n'
                '[[board.items]]\nid = "c"\ntitle = "C"\nassignee = "@alice"\n'
            ),
            file="board.toml",
        )
        assert spec.board is not None
        a, b, c = spec.board.items
        assert a == BoardItemSpec(id="a", title="A")
        assert b == BoardItemSpec(
            id="b",
            title="B",
            description="more",
            priority=Priority.URGENT,
            depends_on=("a",),
            assignee="writer",
            assignee_kind=AssigneeKind.AGENT,
        )
        assert (c.assignee, c.assignee_kind) == ("alice", AssigneeKind.PERSON)
        assert spec.board.item("c") == c
        assert spec.board.item("zz") is None

    def test_no_board_is_none(self) -> None:
        text = HEAD.replace('tools = ["board.list", "board.claim"]', "")
        assert parse_team(text, file="board.toml").board is None

    def test_priorities_rank_the_urgent_first(self) -> None:
        ranked = sorted(Priority, key=lambda p: p.rank)
        assert ranked == [Priority.URGENT, Priority.HIGH, Priority.NORMAL, Priority.LOW]


class TestErrorsNameFileItemAndField:
    def test_every_bad_item_is_reported_at_once(self) -> None:
        found = problems(
            board(
                '[[board.items]]\nid = "a"\ntitle = ""\n'
                '[[board.items]]\nid = "b"\ntitle = "B"\npriority = "hgh"\n'
                '[[board.items]]\nid = "c"\ntitle = "C"\nassignee = "writr"\n'
                '[[board.items]]\nid = "d"\ntitle = "D"\nowner = "x"\n'
            )
        )
        assert found == [
            "board.toml: board.items[0].title: must not be empty",
            "board.toml: board.items[1].priority: unknown priority 'hgh' (did you mean "
            "'high'?); allowed: low, normal, high, urgent",
            "board.toml: board.items[2].assignee: 'writr' is not an agent of this team (did "
            "you mean 'writer'?) (agents: 'lead', 'writer'); write a person as "
            '"@<principal name>", e.g. "@writr"',
            "board.toml: board.items[3].owner: unknown key 'owner'; allowed keys: id, title, "
            "description, priority, depends_on, assignee",
        ]

    def test_a_missing_title(self) -> None:
        assert problems(board('[[board.items]]\nid = "a"\n')) == [
            "board.toml: board.items[0].title: missing required key 'title'"
        ]

    def test_a_bad_person_name(self) -> None:
        found = problems(board('[[board.items]]\nid = "a"\ntitle = "A"\nassignee = "@a b"\n'))
        assert found == [
            "board.toml: board.items[0].assignee: person's principal name 'a b' must be 1-64 "
            "letters, digits, '_' or '-'"
        ]

    def test_ids_are_unique(self) -> None:
        found = problems(board('[[board.items]]\nid = "a"\ntitle = "A"\n' * 2))
        assert found == [
            "board.toml: board.items[1].id: 'a' is already the id of board.items[0]; ids must "
            "be unique"
        ]

    def test_dependencies_are_declared_and_not_the_item_itself(self) -> None:
        found = problems(
            board(
                '[[board.items]]\nid = "a"\ntitle = "A"\ndepends_on = ["a"]\n'
                '[[board.items]]\nid = "b"\ntitle = "B"\ndepends_on = ["c"]\n'
            )
        )
        assert found == [
            "board.toml: board.items[0].depends_on[0]: an item cannot depend on itself",
            "board.toml: board.items[1].depends_on[0]: no item 'c' on the board; items: 'a', 'b'",
        ]

    def test_a_circle_of_dependencies_is_named(self) -> None:
        found = problems(
            board(
                '[[board.items]]\nid = "a"\ntitle = "A"\ndepends_on = ["c"]\n'
                '[[board.items]]\nid = "b"\ntitle = "B"\ndepends_on = ["a"]\n'
                '[[board.items]]\nid = "c"\ntitle = "C"\ndepends_on = ["b"]\n'
            )
        )
        assert found == [
            "board.toml: board.items[0].depends_on: the dependencies go round in a circle: "
            "a -> c -> b -> a"
        ]

    def test_items_as_a_table_says_to_use_double_brackets(self) -> None:
        found = problems(board('[board.items]\nid = "a"\n'))
        assert found == [
            "board.toml: board.items: expected [[board.items]] tables, got a table: write "
            "each item under [[board.items]], with double brackets"
        ]

    def test_a_board_tool_without_a_board(self) -> None:
        assert problems(HEAD) == [
            "board.toml: agents.lead.tools[0]: 'board.list' works on the team's board, and "
            "this file declares none: add a [board] table with [[board.items]]",
            "board.toml: agents.lead.tools[1]: 'board.claim' works on the team's board, and "
            "this file declares none: add a [board] table with [[board.items]]",
        ]


class TestCodeFirst:
    def test_items_in_python_equal_the_file(self) -> None:
        writer = Agent("writer", role="writes")
        notes = Item("notes", "Notes", assignee=writer, priority="high")
        team = Team(
            "b",
            coordinator=Agent("lead", role="coordinator", tools=["board.list", "board.claim"]),
            agents=[writer],
            board=[notes, Item("draft", "Draft", depends_on=[notes], assignee="@alice")],
        )
        text = board(
            '[[board.items]]\nid = "notes"\ntitle = "Notes"\npriority = "high"\n'
            'assignee = "writer"\n'
            '[[board.items]]\nid = "draft"\ntitle = "Draft"\ndepends_on = ["notes"]\n'
            'assignee = "@alice"\n'
        )
        file_spec = parse_team(text, file=team.spec.file)
        assert team.spec == file_spec
        assert parse_team(team.to_toml(), file=team.spec.file) == team.spec

    def test_an_error_names_the_python_call(self) -> None:
        with pytest.raises(TeamFileError) as info:
            Team(
                "b",
                coordinator=Agent("lead", role="coordinator"),
                board=[Item("a", "A", assignee="nobody")],
            )
        assert [p.key_path for p in info.value.problems] == ["board[0].assignee"]
