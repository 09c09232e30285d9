"""The board's model: priorities in the order a board lists them, items found by id."""

from __future__ import annotations

from orchestrator.spec import BOARD_TOOLS, BoardItemSpec, BoardSpec, Priority, function_name


def test_items_are_found_by_id() -> None:
    spec = BoardSpec(items=(BoardItemSpec(id="a", title="A"),))
    assert spec.item("a") == BoardItemSpec(id="a", title="A")
    assert spec.item("b") is None


def test_the_urgent_rank_first() -> None:
    assert [p.rank for p in (Priority.URGENT, Priority.HIGH, Priority.NORMAL, Priority.LOW)] == [
        0,
        1,
        2,
        3,
    ]


def test_a_model_is_offered_the_board_tools_without_the_dot() -> None:
    """A dot is no legal function name in the model APIs: board.claim is offered as
    board_claim, the project's rule for names that are not (see spec._tools)."""
    assert [function_name(t) for t in BOARD_TOOLS] == [
        "board_list",
        "board_claim",
        "board_update",
        "board_comment",
        "board_block",
        "board_done",
    ]
