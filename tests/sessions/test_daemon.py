"""The daemon's sessions are bounded: one never prompted is forgotten on time, and the
daemon's own idle session is kept by the idle timer (the caps on opening are tested in
``test_opening``). On a mock clock (the journal's thread calls hold it, see
:class:`tests.support.teammates.HeldClock`), so the times asserted are exact."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.base import RunError
from orchestrator.core import Fact
from orchestrator.sessions import Limits
from tests.support.daemon import serving


class EndedSink:
    """A client of a session that notes when it is told the session ended."""

    def __init__(self) -> None:
        self.ended_at: float | None = None
        self.reason: str | None = None

    every_fact = False

    def deliver(self, fact: Fact, frames: tuple[str, ...], team: Sequence[str]) -> None:
        pass

    def published(self) -> None:
        pass

    def failed(self) -> None:
        pass

    def ended(self, reason: str | None = None) -> None:
        self.ended_at = trio.current_time()
        self.reason = reason


LIMITS = Limits(unprompted_session=30.0, idle_session=600.0, max_unprompted_per_token=3)


class TestUnpromptedSessions:
    async def test_one_never_prompted_is_forgotten_exactly_on_time(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """With no client on it, a session nobody prompts is forgotten ``unprompted_session``
        seconds after it was opened; nothing of it is in the journal."""
        async with serving(tmp_path, LIMITS) as daemon:
            live = await daemon.open_session("echo", principal="alice")
            assert daemon.live(live.uri) is live
            await live.finished.wait()
            assert trio.current_time() == live.opened_at + 30.0
            assert daemon.live(live.uri) is None
            assert await daemon.find(live.uri) is None
            assert not await daemon.journal_knows(live.uri)
            with pytest.raises(RunError, match="has ended: open a new one"):
                await live.prompt("too late", task_id=None)

    async def test_a_client_keeps_it_until_it_leaves_and_at_most_idle_session(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A client on it keeps it: it is forgotten ``unprompted_session`` after the last
        client left, and ``idle_session`` after it was opened even with a client on it
        (who is told it ended)."""
        async with serving(tmp_path, LIMITS) as daemon:
            left = await daemon.open_session("echo", principal="alice")
            with left.attached():
                await trio.sleep(100.0)
                assert not left.finished.is_set()
            await left.finished.wait()
            assert trio.current_time() == left.opened_at + 100.0 + 30.0

            stays = await daemon.open_session("echo", principal="alice")
            sink = EndedSink()
            stays.attach(sink)
            with stays.attached():
                await stays.finished.wait()
                assert trio.current_time() == stays.opened_at + 600.0
            assert sink.ended_at == stays.opened_at + 600.0
            assert sink.reason is not None
            assert "no prompt within 600 s" in sink.reason
            assert stays.ended_because == sink.reason

    async def test_a_prompted_session_is_not_forgotten(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with serving(tmp_path, LIMITS) as daemon:
            live = await daemon.open_session("echo", principal="alice")
            with live.attached():
                await live.prompt("hello", task_id=None)
                await live.idle.wait()
                await trio.sleep(1_000.0)
                assert daemon.live(live.uri) is live
                assert not live.finished.is_set()


class TestLimitsReadOnce:
    async def test_the_idle_timer_keeps_the_daemons_idle_session(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The daemon's limits are given once, as it is made: its idle timer, started with
        no argument (as the app starts it), puts a session idle with no client away after
        the limits' ``idle_session``, not before."""
        limits = Limits(unprompted_session=30.0, idle_session=5.0, max_unprompted_per_token=3)
        async with serving(tmp_path, limits) as daemon:
            live = await daemon.open_session("echo", principal="alice")
            await live.prompt("one", task_id=None)
            await live.idle.wait()
            idle_since = trio.current_time()
            async with trio.open_nursery() as evicting:
                evicting.start_soon(daemon.evict_idle)
                with trio.fail_after(60):
                    while daemon.live(live.uri) is not None:  # noqa: ASYNC110 (put away)
                        await trio.sleep(0.5)
                evicting.cancel_scope.cancel()
            assert trio.current_time() - idle_since >= limits.idle_session
            assert trio.current_time() - idle_since < 2 * limits.idle_session
