"""The reclaimer collects what sessions that left held: soon after they leave, once for a
burst, and at most every so often."""

from __future__ import annotations

import trio
import trio.testing

from orchestrator.sessions import Reclaimer, ReclaimStatistics
from orchestrator.sessions._reclaim import RECLAIM_AFTER, RECLAIM_EVERY
from tests.support.teammates import HeldClock


class TestReclaimer:
    async def test_collects_after_sessions_leave_once_a_burst_and_at_most_every_so_often(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Nothing is collected while no session leaves; three that leave together are
        collected once, RECLAIM_AFTER seconds after the first; one that leaves soon after
        waits until RECLAIM_EVERY seconds after that collection; the pages freed are handed
        back after each."""
        record: list[tuple[str, float]] = []

        def collect() -> int:
            record.append(("collect", trio.current_time()))
            return 7

        def release() -> None:  # in a worker thread
            record.append(("release", 0.0))

        reclaimer = Reclaimer(collect=collect, release=release)
        # The mock clock stands while the release runs in its thread.
        with HeldClock(autojump_clock).holding_threads():
            await self.leave_and_collect(reclaimer)
        start = 100.0
        assert [what for what, _ in record] == ["collect", "release"] * 2
        assert record[0][1] == start + RECLAIM_AFTER
        assert record[2][1] == record[0][1] + RECLAIM_EVERY
        assert reclaimer.statistics() == ReclaimStatistics(
            collections=2, sessions=4, waiting=0, objects=14
        )

    async def leave_and_collect(self, reclaimer: Reclaimer) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(reclaimer.serve)
            await trio.sleep(100)
            assert reclaimer.statistics().collections == 0
            for _ in range(3):
                reclaimer.session_left()
                await trio.sleep(0.1)
            await trio.sleep(RECLAIM_AFTER)
            reclaimer.session_left()
            assert reclaimer.statistics() == ReclaimStatistics(
                collections=1, sessions=4, waiting=1, objects=7
            )
            await trio.sleep(RECLAIM_EVERY + 1)
            nursery.cancel_scope.cancel()
