"""The daemon's sessions are bounded: one never prompted is forgotten on time, each token
holds a few of those at most, and the daemon opens no more than ``max_sessions``. On a mock
clock (the journal's thread calls hold it, see :class:`tests.support.teammates.HeldClock`), so the
times asserted are exact."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
import trio.testing

from orchestrator.base import FactLogError, RunError, SessionExistsError, SessionLimitError
from orchestrator.core import Fact, TeamState
from orchestrator.server import assemble
from orchestrator.sessions import Daemon, Limits, LiveSession
from orchestrator.spec import parse_team
from tests.support.teammates import HeldClock
from tests.support.teams import ECHO


@asynccontextmanager
async def serving(tmp_path: Path, limits: Limits) -> AsyncIterator[Daemon]:
    """A daemon (no HTTP server) of the echo team, with ``limits``, on the test's mock clock;
    stopped as SIGTERM stops it when the block ends."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "use the autojump_clock fixture"
    held = HeldClock(clock)
    journal = held.journal(tmp_path / "journal.db")
    teams = {"echo": parse_team(ECHO, file="echo.toml")}
    with held.holding_threads():
        async with trio.open_nursery() as services, httpx.AsyncClient() as http:
            await services.start(journal.serve)
            async with trio.open_nursery() as nursery:
                daemon = Daemon(
                    teams=teams, journal=journal, http=http, shutdown_grace=0.5, limits=limits
                )
                assemble(daemon)
                await nursery.start(daemon.serve)
                try:
                    yield daemon
                finally:
                    with trio.CancelScope(shield=True):
                        await daemon.stop()
                    nursery.cancel_scope.cancel()
            services.cancel_scope.cancel()


class EndedSink:
    """A client of a session that notes when it is told the session ended."""

    def __init__(self) -> None:
        self.ended_at: float | None = None
        self.reason: str | None = None

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


class TestCaps:
    async def test_each_token_holds_a_few_sessions_never_prompted(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The next one is refused naming the limit; other tokens are not affected; a
        prompted session does not count, and one forgotten frees its place."""
        async with serving(tmp_path, LIMITS) as daemon:
            first = [await daemon.open_session("echo", principal="alice") for _ in range(3)]
            with pytest.raises(SessionLimitError, match="max_unprompted_per_token") as refused:
                await daemon.open_session("echo", principal="alice")
            assert refused.value.limit == "max_unprompted_per_token"
            assert refused.value.per_principal
            await daemon.open_session("echo", principal="bob")
            await daemon.open_session("echo")  # the daemon's own (a teammate's run)
            await first[0].prompt("hello", task_id=None)
            await daemon.open_session("echo", principal="alice")
            with pytest.raises(SessionLimitError):
                await daemon.open_session("echo", principal="alice")
            await first[1].finished.wait()
            await daemon.open_session("echo", principal="alice")

    async def test_no_more_than_max_sessions_are_opened(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with serving(tmp_path, Limits(max_sessions=2)) as daemon:
            kept = [await daemon.open_session("echo", principal=name) for name in ("a", "b")]
            with pytest.raises(SessionLimitError, match="max_sessions") as refused:
                await daemon.open_session("echo", principal="c")
            assert not refused.value.per_principal
            await daemon.dispose(kept[0])
            await daemon.open_session("echo", principal="c")


class TestIdentity:
    async def test_an_id_that_exists_or_existed_is_refused_before_anything_is_written(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with serving(tmp_path, LIMITS) as daemon:
            live = await daemon.open_session("echo", session="thread-1")
            with pytest.raises(SessionExistsError, match="exists already") as live_one:
                await daemon.open_session("echo", session="thread-1")
            assert not live_one.value.ended
            await live.prompt("hello", task_id=None)
            await live.idle.wait()
            await daemon.dispose(live)
            facts = daemon.journal.reader.facts(live.uri)
            with pytest.raises(SessionExistsError, match="is in the journal") as ended:
                await daemon.open_session("echo", session="thread-1")
            assert ended.value.ended
            assert ended.value.uri == live.uri
            assert daemon.journal.reader.facts(live.uri) == facts

    async def test_a_journal_that_cannot_be_read_opens_nothing(
        self,
        tmp_path: Path,
        autojump_clock: trio.testing.MockClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Whether an id is taken cannot be told: no session is made on a guess, and the
        id is not left reserved."""

        def unreadable(session: str) -> bool:
            raise FactLogError("cannot read the journal: disk I/O error", source="journal.db")

        async with serving(tmp_path, LIMITS) as daemon:
            monkeypatch.setattr(daemon.reader, "has_session", unreadable)
            with pytest.raises(FactLogError, match="disk I/O error"):
                await daemon.open_session("echo", session="thread-1")
            assert daemon.live("thread-1") is None
            monkeypatch.undo()
            await daemon.open_session("echo", session="thread-1")

    async def test_two_clients_opening_one_id_at_once_do_not_both_get_it(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with serving(tmp_path, LIMITS) as daemon:
            opened: list[LiveSession] = []
            refused: list[SessionExistsError] = []

            async def open_one() -> None:
                try:
                    opened.append(await daemon.open_session("echo", session="same"))
                except SessionExistsError as exc:
                    refused.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(open_one)
                nursery.start_soon(open_one)
            assert len(opened) == 1
            assert len(refused) == 1
            assert not refused[0].ended

    async def test_chat_uris_are_claimed_across_sessions(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with serving(tmp_path, LIMITS) as daemon:
            await daemon.claim_chat("ahp-chat:/c1")
            with pytest.raises(SessionExistsError, match="exists"):
                await daemon.claim_chat("ahp-chat:/c1")  # being claimed by another request
            daemon.release_chat("ahp-chat:/c1")
            await daemon.claim_chat("ahp-chat:/c1")  # released: nothing was made
            daemon.release_chat("ahp-chat:/c1")


class TestTakingUp:
    async def test_sessions_are_taken_up_side_by_side_and_each_once(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Sessions put away are taken up again when clients ask: while one is being read
        from the journal (held here), another is taken up without waiting for it (a dead
        node's clients reattach at once), and two clients asking for one session at once
        get the one session, taken up once."""
        limits = Limits(unprompted_session=30.0, idle_session=5.0, max_unprompted_per_token=3)
        async with serving(tmp_path, limits) as daemon:
            uris = []
            for text in ("one", "two"):
                live = await daemon.open_session("echo", principal="alice")
                await live.prompt(text, task_id=None)
                await live.idle.wait()
                uris.append(live.uri)
            async with trio.open_nursery() as evicting:
                evicting.start_soon(daemon.evict_idle, 5.0)
                with trio.fail_after(60):
                    while any(daemon.live(uri) for uri in uris):  # noqa: ASYNC110 (put away)
                        await trio.sleep(1.0)
                evicting.cancel_scope.cancel()
            slow, quick = uris
            reading, quick_found = trio.Event(), trio.Event()
            release = threading.Event()  # real time: the mock clock stands while it is held
            opened: list[str] = []
            open_state = daemon.reader.open

            def held_open(session: str) -> TeamState:
                opened.append(session)
                if session == slow:
                    trio.from_thread.run_sync(reading.set)
                    release.wait(timeout=10)  # then the assertion below says what went wrong
                return open_state(session)

            daemon.reader.open = held_open  # type: ignore[method-assign]
            found: dict[str, list[LiveSession | None]] = {slow: [], quick: []}

            async def find(uri: str) -> None:
                found[uri].append(await daemon.find(uri))
                if uri == quick:
                    quick_found.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(find, slow)
                nursery.start_soon(find, slow)
                await reading.wait()
                nursery.start_soon(find, quick)
                await quick_found.wait()  # a lock for all would wait for the slow one forever
                assert found[slow] == [], "still being read"
                release.set()
        assert sorted(opened) == sorted(uris), "each read once"
        first, second = found[slow]
        assert first is not None
        assert first is second
        (taken_up,) = found[quick]
        assert taken_up is not None
        assert taken_up.uri == quick
        assert daemon.statistics().session_locks == 0, "no lock kept for sessions nobody asks for"


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
