"""The replay backend: a team run again on a recorded run's rounds does what it did."""

from __future__ import annotations

import pytest
import trio

from orchestrator.core import Fact, ReplayScript, diff_sessions, recorded_rounds
from orchestrator.runtime import TeamRuntime
from orchestrator.runtime.backends import ReplayBackend
from tests.support.runtime import fanout
from tests.support.team_state import fanout_facts


async def _run(backend: ReplayBackend) -> tuple[list[Fact], str]:
    runtime = TeamRuntime(fanout(budget=2), backends=lambda agent: backend)
    subscription = runtime.bus.subscribe("test", buffer_size=float("inf"))
    facts: list[Fact] = []

    async def read() -> None:
        facts.extend([fact async for fact in subscription])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        outcome = await runtime.run("Ship it")
        runtime.bus.close()
    return facts, outcome.error


@pytest.fixture
def recorded() -> list[Fact]:
    """A three-worker fan-out's facts (recorded by a trio run of their own, before the test's)."""
    return list(fanout_facts())


class TestReplayBackend:
    async def test_a_replay_does_what_the_recorded_run_did(self, recorded: list[Fact]) -> None:
        replayed, error = await _run(ReplayBackend(ReplayScript(recorded_rounds(recorded))))
        assert error == ""
        found = diff_sessions(recorded, replayed)
        assert found.chats == ()

    async def test_a_round_past_the_recording_fails_its_turn_or_waits(
        self, recorded: list[Fact], autojump_clock: trio.testing.MockClock
    ) -> None:
        first_round = recorded_rounds(recorded)[0].turns[0][0].last_sequence
        cut = ReplayScript(recorded_rounds(recorded, until=first_round))
        _, error = await _run(ReplayBackend(cut))
        assert "round 2: no such round was recorded" in error
        waiting = ReplayBackend(
            ReplayScript(recorded_rounds(recorded, until=first_round)), wait_past_end=True
        )
        with trio.move_on_after(60) as scope:
            await _run(waiting)
        assert scope.cancelled_caught
        assert trio.current_time() == pytest.approx(60)
