"""The Agent UI projection of real runs: queues, and the roster's statuses.

Where ``test_project_agentui.py`` builds fact logs by hand, these run real teams (scripted
backend, autojump clock) and project what they recorded, as a client of the daemon would.
"""

from __future__ import annotations

import trio
import trio.testing

from orchestrator.ahp.actions import ChatInputRequestedAction
from orchestrator.core import ApprovalRequested
from orchestrator.protocols import (
    Control,
    EventType,
    TeammateStatus,
)
from orchestrator.runtime import TeamRuntime
from tests.support import teams
from tests.support.agentui import first, of_type, run
from tests.support.paths import PROJECT_ROOT


class TestQueues:
    async def test_steering_and_queued_messages_are_queue_changes(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A queued message: queued, then started as the next turn; the count follows."""

        async def queue_one(runtime: TeamRuntime) -> None:
            chat, asked = await first(runtime, ChatInputRequestedAction)
            await runtime.queue(chat, "and then?")
            await runtime.answer_input(chat, asked.request.id, "2.0")

        envelopes = await run(teams.ASK, queue_one)
        queue = of_type(envelopes, EventType.QUEUE_CHANGED)
        assert [(e.payload or {}).get("status") for e in queue] == ["queued", "started"]
        assert [(e.payload or {}).get("queuedTurnCount") for e in queue] == [1, 0]
        assert all(e.control is Control.QUEUE for e in queue)


class TestRosterStatuses:
    async def test_every_roster_status_is_a_teammate_status_of_the_spec(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        allowed = {status.value for status in TeammateStatus}
        team = (PROJECT_ROOT / "teams" / "delivery.toml").read_text()

        async def approve(runtime: TeamRuntime) -> None:
            _, request = await first(runtime, ApprovalRequested)
            await runtime.resolve_approval(request.approval, approved=True)

        for text, during in ((team, approve), (teams.APPROVAL_TIMES_OUT, None)):
            envelopes = await run(text, during)
            statuses = {
                (e.payload or {}).get("status")
                for e in envelopes
                if e.type in (EventType.AGENT_SPAWNED, EventType.AGENT_CHANGED)
            }
            assert statuses <= allowed, statuses - allowed
