"""The board at run time: agents started on ready items in dependency order, claims racing
between two agents and a person, a blocked item unblocked by a person's comment, board tools
under the approval rules of any tool; each checked by the facts it recorded."""

from __future__ import annotations

import pytest
import trio

from orchestrator.ahp.actions import ChatToolCallCompleteAction
from orchestrator.core import (
    BoardAction,
    BoardItemBlocked,
    BoardItemClaimed,
    BoardItemCommented,
    BoardItemCreated,
    BoardItemDone,
    BoardItemStarted,
    BoardItemUnblocked,
    ItemStatus,
    TaskFinished,
    TeamState,
)
from orchestrator.runtime import BoardRefusedError, Ids, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import load_team, parse_team
from tests.support.paths import TEAMS
from tests.support.runtime import Harness, run_to_end, wait_for
from tests.support.teams import BOARD_BLOCK, BOARD_RACE

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


def board_types(h: Harness) -> list[tuple[str, str, str]]:
    """(type, item, by) of each board fact, in order."""
    return [
        (f.action.type.removeprefix("team/boardItem"), f.action.item, f.action.by)
        for f in h.facts
        if isinstance(f.action, BoardAction)
    ]


def tool_results(h: Harness) -> list[str]:
    return [
        str(getattr(content, "text", ""))
        for a in h.actions(ChatToolCallCompleteAction)
        for content in a.result.content or ()
    ]


class TestTheShippedBoard:
    async def test_agents_work_their_items_in_dependency_order_and_the_person_s_wait(
        self,
    ) -> None:
        h = Harness(load_team(TEAMS / "board.toml"))
        outcome = await run_to_end(h, "Ship the release notes")
        assert outcome.status == "completed"
        assert board_types(h) == [
            ("Created", "notes", "board"),
            ("Created", "draft", "board"),
            ("Created", "approve", "board"),
            ("Created", "publish", "board"),
            ("Started", "notes", "researcher"),
            ("Commented", "notes", "researcher"),
            ("Done", "notes", "researcher"),
            ("Started", "draft", "writer"),
            ("Done", "draft", "writer"),
        ]
        board = h.runtime.board
        assert board is not None
        statuses = {i.id: i.status for i in board.board.items.values()}
        assert statuses == {
            "notes": ItemStatus.DONE,
            "draft": ItemStatus.DONE,
            "approve": ItemStatus.OPEN,  # waits for @user
            "publish": ItemStatus.OPEN,  # waits for approve
        }
        # Each item's worker ran as a task of the team, reported finished.
        assert [a.status for a in h.actions(TaskFinished)] == ["completed", "completed"]


class TestClaimsRace:
    async def test_two_agents_and_a_person_claim_at_once_one_wins_the_others_are_told(
        self,
    ) -> None:
        h = Harness(parse_team(BOARD_RACE, file="race.toml"))
        person: list[str] = []

        async def alice() -> None:
            # The moment the first agent's claim is recorded as a running tool call.
            await wait_for(h, lambda f: f.type == "chat/toolCallReady")
            board = h.runtime.board
            assert board is not None
            try:
                await board.request("claim", "x", {}, by="alice")
                person.append("won")
            except BoardRefusedError as exc:
                person.append(str(exc))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(alice)
            await run_to_end(h)
        claims = h.actions(BoardItemClaimed)
        assert len(claims) == 1
        winner = claims[0]
        refusals = [r for r in tool_results(h) if r.startswith("refused")]
        told = [*refusals, *(p for p in person if p != "won")]
        assert len(told) == 2
        holder = f"{winner.by_kind} {winner.by!r}"
        for message in told:
            assert message.endswith(f"item 'x' is already claimed by {holder}")


class TestBlocked:
    async def test_a_person_s_comment_unblocks_the_item_and_its_agent_starts_anew(
        self,
    ) -> None:
        h = Harness(parse_team(BOARD_BLOCK, file="block.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            await nursery.start(h.runtime.run, "Announce it")
            board = h.runtime.board
            assert board is not None
            await wait_for(h, lambda f: isinstance(f.action, BoardItemBlocked))
            blocked = board.board.items["tone"]
            assert (blocked.status, blocked.waiting_for, blocked.waiting_for_kind) == (
                ItemStatus.BLOCKED,
                "alice",
                "person",
            )
            # Someone else's comment does not lift it.
            await board.request("comment", "tone", {"text": "hm"}, by="bob")
            assert board.board.items["tone"].status == ItemStatus.BLOCKED
            await board.request("comment", "tone", {"text": "friendly"}, by="alice")
            # The writer starts anew; its board.done waits for the user's approval.
            request = await wait_for(h, lambda f: f.type == "team/approvalRequested")
            await h.runtime.resolve_approval(request.action.approval, approved=True)  # type: ignore[union-attr]
            await wait_for(h, lambda f: isinstance(f.action, BoardItemDone))
            h.runtime.end_conversation()
        assert board_types(h) == [
            ("Created", "tone", "blocker"),
            ("Created", "ship", "blocker"),
            ("Started", "tone", "writer"),
            ("Blocked", "tone", "writer"),
            ("Commented", "tone", "bob"),
            ("Commented", "tone", "alice"),
            ("Unblocked", "tone", "alice"),
            ("Started", "tone", "writer"),
            ("Done", "tone", "writer"),
        ]
        item = board.board.items["tone"]
        assert [(c.by, c.text) for c in item.comments] == [("bob", "hm"), ("alice", "friendly")]
        # Ship is a person's: it waits for alice, now that its dependency is done.
        assert board.board.items["ship"].status == ItemStatus.OPEN
        assert h.actions(BoardItemUnblocked)[0].by_kind == "person"
        assert isinstance(h.actions(BoardItemCommented)[1], BoardItemCommented)
        assert [a.item for a in h.actions(BoardItemStarted)] == ["tone", "tone"]
        assert len(h.actions(BoardItemCreated)) == 2

    async def test_a_refused_request_names_the_reason_and_records_nothing(self) -> None:
        h = Harness(parse_team(BOARD_BLOCK, file="block.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            await nursery.start(h.runtime.run, "Announce it")
            board = h.runtime.board
            assert board is not None
            before = len(h.facts)
            with pytest.raises(BoardRefusedError, match="depends on 'tone', not done yet"):
                await board.request("done", "ship", {}, by="alice")
            with pytest.raises(BoardRefusedError, match="no item 'nope' on the board"):
                await board.request("claim", "nope", {}, by="alice")
            with pytest.raises(BoardRefusedError, match="'zed' is not an agent"):
                await board.request("assign", "ship", {"assignee": "zed"}, by="alice")
            assert (
                len(h.facts) == before
                or all(
                    not f.type.startswith("team/boardItem") or f.action.by != "alice"  # type: ignore[union-attr]
                    for f in h.facts[before:]
                )
            )
            h.runtime.end_conversation()


BUDGET = """
[team]
name = "budget"
topology = "human_agent_board"
coordinator = "lead"
parallel_budget = 1
[board]
[[board.items]]
id = "a"
title = "A"
assignee = "w"
[[board.items]]
id = "b"
title = "B"
assignee = "w"
[[board.items]]
id = "c"
title = "C"
assignee = "w"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "ok" } ]
[agents.w]
role = "works"
[[agents.w.turns]]
steps = [ { sleep = 1 }, { say = "did {task}" } ]
"""


class TestBudget:
    async def test_ready_items_start_within_the_parallel_budget(
        self, autojump_clock: trio.abc.Clock
    ) -> None:
        """Three items ready at once, a budget of one: each agent starts after the last one
        ended, and every item is done by the run's end."""
        h = Harness(parse_team(BUDGET, file="budget.toml"))
        await run_to_end(h)
        kinds = [
            f.action.type.removeprefix("team/")
            for f in h.facts
            if f.action.type in {"team/boardItemStarted", "team/taskFinished"}
        ]
        assert kinds == ["boardItemStarted", "taskFinished"] * 3
        board = h.runtime.board
        assert board is not None
        assert {i.status for i in board.board.items.values()} == {ItemStatus.DONE}


class TestRestart:
    async def test_an_item_whose_agent_a_stop_cut_off_is_started_anew(
        self, autojump_clock: trio.abc.Clock
    ) -> None:
        """The process stops while the researcher works on its item; the resumed run ends
        the cut-off turn, reports its task killed, reopens the item (blocked and unblocked by
        the team, in one batch) and starts the researcher on it again, to done."""
        text = (TEAMS / "board.toml").read_text(encoding="utf-8")
        # The researcher takes a while: long enough for the stop to cut it off.
        slow = text.replace(
            '{ tool = "board.comment", input = { item = "notes"',
            '{ sleep = 5 },\n  { tool = "board.comment", input = { item = "notes"',
        )
        assert slow != text
        team = parse_team(slow, file="board.toml")
        first = Harness(team)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first.runtime.run, "Ship it")
            await wait_for(first, lambda f: isinstance(f.action, BoardItemStarted))
            first.runtime.stop()
        assert not first.actions(BoardItemDone)
        h = Harness(team)
        h.log.facts.extend(first.facts)
        h.runtime = TeamRuntime(
            team,
            backends=ScriptedBackend,
            factlog=h.log,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            state=TeamState.fold(first.runtime.session, first.facts),
        )
        with trio.fail_after(60):
            outcome = await h.runtime.resume()
        assert outcome.status == "completed"
        after = board_types(h)[len(board_types(first)) :]
        assert after[:3] == [
            ("Blocked", "notes", "board"),
            ("Unblocked", "notes", "board"),
            ("Started", "notes", "researcher"),
        ]
        killed = [a for a in h.actions(TaskFinished) if a.status == "killed"]
        assert [a.summary for a in killed] == ["interrupted by a restart"]
        board = h.runtime.board
        assert board is not None
        notes = board.board.items["notes"]
        assert notes.status == ItemStatus.DONE
        # The item's history reads back whole from the journal's facts.
        assert [e.event for e in notes.history] == [
            "create", "start", "block", "unblock", "start", "comment", "done",
        ]  # fmt: skip
