"""The board's fold: the item lifecycle table, one test per refused move, claims racing
through the team state's door, and the property that every fold of the same facts (the pure
reducer, the team state the runtime and daemon hold, the JSON clients read) is one board."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import IllegalTransitionError
from orchestrator.core import (
    ITEM_TRANSITIONS,
    Action,
    Board,
    BoardAction,
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCommented,
    BoardItemCreated,
    BoardItemDone,
    BoardItemStarted,
    BoardItemUnblocked,
    BoardItemUpdated,
    Fact,
    ItemStatus,
    RunStarted,
    TeamState,
    board_refusal,
    fold_board,
    reduce_board,
)
from orchestrator.protocols import board_from_json, board_to_json, project_facts, team_view
from tests.support.examples import examples

SESSION = "ahp-session:/s"
NOW = "2026-12-07T15:00:00.000Z"


def created(
    item: str, *, depends_on: tuple[str, ...] = (), assignee: str | None = None
) -> BoardItemCreated:
    return BoardItemCreated(
        item=item,
        title=item.title(),
        depends_on=depends_on,
        assignee=assignee,
        assignee_kind=None if assignee is None else "agent",
        by="team",
        by_kind="agent",
    )


def fold(*actions: BoardAction) -> Board:
    return fold_board((a, NOW) for a in actions)


RUN = RunStarted(
    run="run-1", team="t", topology="human_agent_board", parallel_budget=2,
    coordinator="lead", prompt="go", task="task-1",
)  # fmt: skip


def state_with(*actions: Action) -> TeamState:
    state = TeamState(SESSION)
    for sequence, action in enumerate((RUN, *actions), start=1):
        state.apply(
            Fact(sequence=sequence, session=SESSION, channel=SESSION, at=NOW, action=action)
        )
    return state


class TestLifecycle:
    def test_an_item_moves_open_claimed_running_reviewing_done(self) -> None:
        board = fold(
            created("a"),
            BoardItemClaimed(item="a", by="writer", by_kind="agent"),
            BoardItemStarted(item="a", task="task-2", by="writer"),
            BoardItemUpdated(item="a", by="writer", by_kind="agent", reviewing=True),
            BoardItemDone(item="a", by="alice", by_kind="person", summary="shipped"),
        )
        item = board.items["a"]
        assert item.status == ItemStatus.DONE
        assert item.summary == "shipped"
        assert [(e.event, e.by, e.status) for e in item.history] == [
            ("create", "team", ItemStatus.OPEN),
            ("claim", "writer", ItemStatus.CLAIMED),
            ("start", "writer", ItemStatus.RUNNING),
            ("review", "writer", ItemStatus.REVIEWING),
            ("done", "alice", ItemStatus.DONE),
        ]

    def test_a_block_names_whom_it_waits_for_and_an_unblock_returns_where_it_stood(self) -> None:
        blocked = fold(
            created("a"),
            BoardItemClaimed(item="a", by="writer", by_kind="agent"),
            BoardItemBlocked(
                item="a", by="writer", by_kind="agent", reason="which tone?",
                waiting_for="alice", waiting_for_kind="person",
            ),
        )  # fmt: skip
        item = blocked.items["a"]
        assert (item.status, item.waiting_for, item.waiting_for_kind) == (
            ItemStatus.BLOCKED, "alice", "person",
        )  # fmt: skip
        unblocked = reduce_board(
            reduce_board(
                blocked,
                BoardItemCommented(item="a", by="alice", by_kind="person", text="friendly"),
                now=NOW,
            ),
            BoardItemUnblocked(item="a", by="alice", by_kind="person"),
            now=NOW,
        ).items["a"]
        assert unblocked.status == ItemStatus.CLAIMED
        assert (unblocked.waiting_for, unblocked.blocked_reason) == (None, "")
        assert [c.text for c in unblocked.comments] == ["friendly"]

    def test_an_update_changes_only_what_it_names(self) -> None:
        item = fold(
            created("a"),
            BoardItemUpdated(item="a", by="bob", by_kind="person", priority="urgent",
                             assignee="carol", assignee_kind="person"),
        ).items["a"]  # fmt: skip
        assert (item.title, item.priority, item.assignee, item.assignee_kind) == (
            "A", "urgent", "carol", "person",
        )  # fmt: skip

    def test_the_fold_is_total(self) -> None:
        """A stored log folds whatever it holds: an unknown item changes nothing."""
        board = fold(created("a"), BoardItemDone(item="zz", by="x", by_kind="agent"))
        assert list(board.items) == ["a"]

    def test_ready_items_wait_for_their_dependencies(self) -> None:
        board = fold(created("a", assignee="w"), created("b", depends_on=("a",), assignee="w"))
        assert [i.id for i in board.ready_for_agents()] == ["a"]
        board = reduce_board(
            reduce_board(board, BoardItemStarted(item="a", task="t", by="w"), now=NOW),
            BoardItemDone(item="a", by="w", by_kind="agent"),
            now=NOW,
        )
        assert [i.id for i in board.ready_for_agents()] == ["b"]


class TestRefusals:
    """One test per refused move: the reason names the item and why."""

    def test_a_second_claim(self) -> None:
        board = fold(created("a"), BoardItemClaimed(item="a", by="writer", by_kind="agent"))
        assert board_refusal(board, BoardItemClaimed(item="a", by="bob", by_kind="person")) == (
            "item 'a' is already claimed by agent 'writer'",
            ItemStatus.CLAIMED,
        )

    def test_starting_an_item_someone_else_claimed(self) -> None:
        board = fold(created("a"), BoardItemClaimed(item="a", by="bob", by_kind="person"))
        assert board_refusal(board, BoardItemStarted(item="a", task="t", by="writer")) == (
            "item 'a' is already claimed by person 'bob'",
            ItemStatus.CLAIMED,
        )

    def test_done_before_the_dependencies(self) -> None:
        board = fold(created("a"), created("b", depends_on=("a",)))
        assert board_refusal(board, BoardItemDone(item="b", by="w", by_kind="agent")) == (
            "item 'b' depends on 'a', not done yet",
            ItemStatus.OPEN,
        )

    def test_an_unknown_item(self) -> None:
        board = fold(created("a"))
        assert board_refusal(board, BoardItemClaimed(item="b", by="w", by_kind="agent")) == (
            "no item 'b' on the board (items: a)",
            "unknown",
        )

    def test_an_item_created_twice(self) -> None:
        assert board_refusal(fold(created("a")), created("a")) == (
            "item 'a' is already on the board",
            ItemStatus.OPEN,
        )

    def test_unblocking_what_is_not_blocked(self) -> None:
        board = fold(created("a"))
        assert board_refusal(board, BoardItemUnblocked(item="a", by="w", by_kind="agent")) == (
            "item 'a' is not blocked (it is open)",
            ItemStatus.OPEN,
        )

    def test_claiming_a_done_item(self) -> None:
        board = fold(created("a"), BoardItemDone(item="a", by="w", by_kind="agent"))
        assert board_refusal(board, BoardItemClaimed(item="a", by="w", by_kind="agent")) == (
            "item 'a' is done: it cannot take a claim",
            ItemStatus.DONE,
        )

    @pytest.mark.parametrize("status", list(ItemStatus))
    def test_every_row_of_the_table_names_only_known_events(self, status: ItemStatus) -> None:
        events = {"claim", "start", "update", "review", "comment", "block", "unblock", "done"}
        assert set(ITEM_TRANSITIONS[status]) <= events


class TestClaimsRace:
    def test_of_three_claims_in_flight_the_first_wins_and_the_others_are_told(self) -> None:
        """The runtime's door (TeamState.prepare) checks each batch against those in flight:
        two agents and a person claim at once, the first batch wins, the others are refused
        naming who holds the item, and nothing of theirs is applied."""
        state = state_with(created("a"))
        first = state.prepare(
            [(SESSION, BoardItemClaimed(item="a", by="w1", by_kind="agent"))], now=NOW
        )
        state.push(first)
        refused = []
        for by, kind in (("w2", "agent"), ("alice", "person")):
            with pytest.raises(IllegalTransitionError) as info:
                state.prepare([(SESSION, BoardItemClaimed(item="a", by=by, by_kind=kind))], now=NOW)
            refused.append(info.value.reason)
        assert refused == ["item 'a' is already claimed by agent 'w1'"] * 2
        state.commit(first, 3)
        assert state.run is not None
        assert state.run.board.items["a"].claimed_by == "w1"

    def test_a_board_action_before_the_run_is_refused(self) -> None:
        state = TeamState(SESSION)
        with pytest.raises(IllegalTransitionError, match="there is no board yet"):
            state.prepare([(SESSION, created("a"))], now=NOW)


# ── property: one board, whoever folds it ─────────────────────────────────────

ITEMS = ("a", "b", "c")
WHO = st.sampled_from([("w1", "agent"), ("w2", "agent"), ("alice", "person")])


@st.composite
def board_actions(draw: st.DrawFn) -> BoardAction:
    item = draw(st.sampled_from(ITEMS))
    by, kind = draw(WHO)
    text = draw(st.text(min_size=1, max_size=8))
    choices: list[BoardAction] = [
                BoardItemClaimed(item=item, by=by, by_kind=kind),
                BoardItemStarted(item=item, task=f"task-{text}", by=by),
                BoardItemUpdated(item=item, by=by, by_kind=kind, title=text),
                BoardItemUpdated(item=item, by=by, by_kind=kind, reviewing=True),
                BoardItemCommented(item=item, by=by, by_kind=kind, text=text),
                BoardItemBlocked(item=item, by=by, by_kind=kind, reason=text,
                                 waiting_for="alice", waiting_for_kind="person"),
                BoardItemUnblocked(item=item, by=by, by_kind=kind),
                BoardItemDone(item=item, by=by, by_kind=kind, summary=text),
    ]  # fmt: skip
    return draw(st.sampled_from(choices))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(board_actions(), max_size=25))
def test_every_client_shows_the_board_the_facts_fold_to(actions: list[BoardAction]) -> None:
    """The actions the runtime's door lets through, folded three ways: the pure reducer, the
    team state (what the runtime, the daemon and the Python API read), and the JSON every
    client (CLI, web view, daemon endpoint) reads back: one board."""
    state = state_with(created("a"), created("b", depends_on=("a",)), created("c"))
    recorded: list[BoardAction] = [created("a"), created("b", depends_on=("a",)), created("c")]
    sequence = state.last_sequence
    for action in actions:
        try:
            tr = state.prepare([(SESSION, action)], now=NOW)
        except IllegalTransitionError:
            assert state.run is not None
            assert board_refusal(state.run.board, action) is not None
            continue
        state.push(tr)
        sequence += 1
        state.commit(tr, sequence)
        recorded.append(action)
    assert state.run is not None
    folded = fold(*recorded)
    assert state.run.board == folded
    assert board_from_json(board_to_json(folded)) == folded
    # The Agent UI's work items and the AG-UI state's board say the same statuses.
    facts = [
        Fact(sequence=n, session=SESSION, channel=SESSION, at=NOW, action=action)
        for n, action in enumerate((RUN, *recorded), start=1)
    ]
    shown: dict[str, str] = {}
    for envelope in project_facts(SESSION, facts):
        payload = envelope.payload or {}
        if payload.get("runtimeEntity") == "work_item":
            shown[payload["workItemId"]] = payload["status"]
    statuses = {item.id: item.status.value for item in folded.items.values()}
    assert shown == statuses
    view = team_view(TeamState.fold(SESSION, facts))
    assert {entry["id"]: entry["status"] for entry in view["board"]} == statuses
    for item in folded.items.values():
        # A claimed, running or reviewing item has a holder; a done one's dependencies are done.
        if item.status in {ItemStatus.CLAIMED, ItemStatus.RUNNING}:
            assert item.claimed_by is not None
        if item.status == ItemStatus.DONE:
            assert folded.dependencies_done(item)


def test_a_running_item_unblocked_is_open_again_for_its_agent() -> None:
    """Its agent's turn ended when it blocked the item: unblocked, the runtime starts it anew."""
    board = fold(
        created("a", assignee="w"),
        BoardItemStarted(item="a", task="task-2", by="w"),
        BoardItemBlocked(item="a", by="w", by_kind="agent", reason="?", waiting_for="alice",
                         waiting_for_kind="person"),
    )  # fmt: skip
    assert board.ready_for_agents() == ()
    board = reduce_board(board, BoardItemUnblocked(item="a", by="alice", by_kind="person"), now=NOW)
    assert board.items["a"].status == ItemStatus.OPEN
    assert [i.id for i in board.ready_for_agents()] == ["a"]
