"""The team runtime: every flow, asserted through the facts it recorded.

Each scenario runs a real team (scripted backend) on trio's autojump clock,
then checks the fact log: order, ids, the spawn batch, notifications, and the
delegation graph's consistency check (run on every scenario by ``finished``).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.ahp import summary_of
from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    SessionChatAddedAction,
    SessionChatUpdatedAction,
)
from orchestrator.ahp.state import UserChatOrigin
from orchestrator.base import RunError
from orchestrator.core import (
    MemberJoined,
    RunFinished,
    RunStarted,
    RunStatus,
    TaskFinished,
    TaskStatus,
    task_started,
)
from orchestrator.runtime import (
    RunOutcome,
)
from orchestrator.spec import parse_team
from tests.support.runtime import Harness, fanout, run_to_end, wait_for
from tests.support.teams import NESTED, SLOW_WORKERS

# After every test, each run it made passes Harness.finished (tests/support/runtime.py).
pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


class TestCancellation:
    async def test_cancelling_one_worker_kills_it_and_spares_its_sibling(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(
                h, lambda f: len([x for x in h.facts if task_started(x.action) is not None]) == 2
            )
            victim = h.worker_chats()[0]
            await trio.sleep(10)
            h.runtime.cancel_worker(victim)
        finished = {f.chat: f for f in h.actions(TaskFinished)}
        assert finished[victim].status is TaskStatus.KILLED
        other = h.worker_chats()[1]
        assert finished[other].status is TaskStatus.COMPLETED
        cancelled = h.facts_of(ChatTurnCancelledAction)
        assert [f.channel for f in cancelled] == [victim]
        assert h.runtime.state.run.status is RunStatus.COMPLETED  # type: ignore[union-attr]
        h.finished()

    async def test_cancelling_the_team_cancels_every_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"))
        outcomes: list[RunOutcome] = []

        async def run() -> None:
            outcomes.append(await run_to_end(h))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await wait_for(
                h, lambda f: len([x for x in h.facts if task_started(x.action) is not None]) == 2
            )
            h.runtime.cancel()
        assert outcomes[0].status is RunStatus.CANCELLED
        assert len(h.actions(ChatTurnCancelledAction)) == 3  # coordinator + two workers
        assert sorted(f.status for f in h.actions(TaskFinished)) == [TaskStatus.KILLED] * 2
        # Why, in words that do not repeat the status ("killed: cancelled").
        assert {f.summary for f in h.actions(TaskFinished)} == {
            "the run, or the task that delegated it, ended first"
        }
        assert isinstance(h.facts[-1].action, RunFinished)
        assert h.facts[-1].action.status is RunStatus.CANCELLED
        h.finished()

    async def test_cancelling_a_worker_cancels_its_subtree(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A worker that delegated is cancelled with its own workers; the coordinator goes on
        and reports the cancelled task as killed."""
        h = Harness(parse_team(NESTED, file="nested.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(
                h, lambda f: len([x for x in h.facts if task_started(x.action) is not None]) == 3
            )
            manager = next(a.chat for a in h.actions(MemberJoined) if a.agent == "manager")
            h.runtime.cancel_worker(manager)
        finished = {h.runtime.state.members[str(f.chat)].agent: f for f in h.actions(TaskFinished)}
        statuses = sorted(
            (h.runtime.state.members[str(f.chat)].agent, f.status) for f in h.actions(TaskFinished)
        )
        assert statuses == [
            ("manager", TaskStatus.KILLED),
            ("worker", TaskStatus.KILLED),
            ("worker", TaskStatus.KILLED),
        ]
        assert finished["manager"].summary == "stopped at a client's request"
        workers = [f.summary for f in h.actions(TaskFinished) if f.chat != manager]
        assert workers == ["the run, or the task that delegated it, ended first"] * 2
        cancelled = {f.channel for f in h.facts_of(ChatTurnCancelledAction)}
        assert manager in cancelled
        assert len(cancelled) == 3  # the manager and both of its workers
        assert h.runtime.state.run is not None
        assert h.runtime.state.run.status is RunStatus.COMPLETED
        assert "manager, killed" in h.runtime.state.run.result

    async def test_a_cancelled_worker_cannot_be_cancelled_twice(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        await run_to_end(h)
        with pytest.raises(RunError, match="no running worker"):
            h.runtime.cancel_worker(h.worker_chats()[0])


class TestRecording:
    async def test_the_coordinator_chat_and_text_stream(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The run opens with runStarted + the coordinator's chat; text streams as deltas
        (with no delta window, each chunk its own fact)."""
        h = Harness(fanout(), delta_window=0)
        await run_to_end(h)
        opening = [type(f.action) for f in h.facts[:3]]
        assert opening == [RunStarted, SessionChatAddedAction, MemberJoined]
        added = h.facts[1].action
        assert isinstance(added, SessionChatAddedAction)
        assert added.summary.origin == UserChatOrigin()
        deltas = h.actions(ChatDeltaAction)
        assert deltas, "text is streamed in chunks"
        parts = h.actions(ChatResponsePartAction)
        assert all(
            any(p.part.id == d.part_id for p in parts if hasattr(p.part, "id")) for d in deltas
        )
        assert not h.actions(SessionChatUpdatedAction), "summaries are derived, not recorded"
        state = h.runtime.state
        assert state.session is not None
        for entry in state.session.chats:
            assert entry == summary_of(state.chats[entry.resource]), "...and follow the chats"
        assert any(state.summary_update(f.sequence) for f in h.facts)
        assert h.actions(ChatTurnCompleteAction)

    async def test_an_empty_prompt_is_refused(self) -> None:
        h = Harness(fanout())
        with pytest.raises(RunError, match="prompt is empty"):
            await h.runtime.run("   ")
        assert h.facts == []
