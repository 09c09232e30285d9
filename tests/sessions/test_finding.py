"""Finding a session for a client: the one in memory, one of the journal taken up once this
node claims it, or one another node or process runs, followed. A real SQLite journal is read;
the daemon's claim, release and following are recorded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from orchestrator.core import TeamState
from orchestrator.journal import HeldElsewhere, JournalReader, open_journal
from orchestrator.sessions import Limits, LiveSession, NoFollowing, SessionFinder, SessionLocks
from orchestrator.sessions._finding import needs_running
from orchestrator.spec import load_team
from tests.support.daemon import serving
from tests.support.journal import HANDOFF, A, run_team, started, wait_all

B_URI = "ahp-session:/b"


class Following(NoFollowing):
    """Follows whatever it is asked to, and says what it was asked."""

    def __init__(self, *, elsewhere: bool = False) -> None:
        self.asked: list[tuple[str, str]] = []
        self.elsewhere = elsewhere

    def runs_elsewhere(self, uri: str) -> bool:
        self.asked.append(("runs_elsewhere", uri))
        return self.elsewhere

    async def follow(self, uri: str) -> LiveSession:
        self.asked.append(("follow", uri))
        return FOLLOWED

    async def follow_unrecorded(self, uri: str) -> LiveSession | None:
        self.asked.append(("follow_unrecorded", uri))
        return None


FOLLOWED = cast(LiveSession, object())
"""What the recorded following hands back for a session it follows."""


class Daemon:
    """What the finder reads of the daemon: its sessions, its journal, its following."""

    subscriber_buffer = 16
    accepting = True
    node = "node-a"
    runtimes: Any = None  # a session is never run here: taking one up is not reached

    def __init__(self, reader: JournalReader, following: Following) -> None:
        self.sessions: dict[str, LiveSession] = {}
        self.reader = reader
        self.following = following

    @property
    def observer(self) -> Any:
        raise AssertionError("not asked")

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        raise AssertionError("not asked")


class Hands:
    """The daemon's claim and release, recorded; ``held``: who holds what."""

    def __init__(self, held: dict[str, str] | None = None) -> None:
        self.held = held or {}
        self.calls: list[tuple[str, str]] = []

    async def claim(self, uri: str, *, quiet: bool = False) -> HeldElsewhere | None:
        self.calls.append(("claim", uri))
        owner = self.held.get(uri)
        return None if owner is None else HeldElsewhere(owner=owner, description="elsewhere")

    async def release(self, uri: str, *, keep: bool) -> None:
        self.calls.append(("release" + (" kept" if keep else ""), uri))

    async def launch(self, live: LiveSession, start: Any) -> None:
        raise AssertionError("no session is taken up in these tests")


def finder(
    reader: JournalReader, following: Following | None = None, hands: Hands | None = None
) -> tuple[SessionFinder, Daemon, Hands]:
    daemon = Daemon(reader, following or Following())
    hands = hands or Hands()
    found = SessionFinder(
        daemon,  # type: ignore[arg-type]
        claim=hands.claim,
        release=hands.release,
        launch=hands.launch,
    )
    return found, daemon, hands


async def a_started_run(path: Path) -> JournalReader:
    """A journal with one session, ``A``: its run started, nothing else (idle, unfinished)."""
    journal = open_journal(path)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        await wait_all(journal.submit([started(A)]))
        services.cancel_scope.cancel()
    return JournalReader(path)


class TestFind:
    async def test_a_session_the_journal_has_not_yet_is_followed_unrecorded(
        self, tmp_path: Path
    ) -> None:
        """Opened on another node and not yet written: followed at once, nothing claimed."""
        reader = await a_started_run(tmp_path / "journal.db")
        sessions, daemon, hands = finder(reader)
        assert await sessions.find(B_URI) is None
        assert daemon.following.asked == [("follow_unrecorded", B_URI)]
        assert hands.calls == []
        assert len(sessions) == 0, "its lock forgotten"

    async def test_an_ended_session_is_not_taken_up(self, tmp_path: Path) -> None:
        _, runtime, _ = await run_team(tmp_path / "journal.db", load_team(HANDOFF))
        sessions, daemon, hands = finder(JournalReader(tmp_path / "journal.db"))
        assert await sessions.find(runtime.session) is None
        assert hands.calls == []
        assert daemon.following.asked == []

    async def test_a_session_another_holds_is_followed(self, tmp_path: Path) -> None:
        reader = await a_started_run(tmp_path / "journal.db")
        hands = Hands(held={A: "node-b"})
        sessions, daemon, _ = finder(reader, hands=hands)
        assert await sessions.find(A.removeprefix("ahp-session:/")) is FOLLOWED  # an id will do
        assert hands.calls == [("claim", A)]
        assert daemon.following.asked == [("follow", A)]

    async def test_a_session_in_memory_is_handed_back_as_it_is(self, tmp_path: Path) -> None:
        sessions, daemon, hands = finder(JournalReader(tmp_path / "journal.db"))
        live: Any = type("Live", (), {"put_away": False, "resuming": None})()
        daemon.sessions[A] = live
        assert await sessions.find(A) is live
        assert await sessions.watch(A) is live
        assert hands.calls == []


class TestTakeUp:
    async def test_an_idle_unfinished_session_is_claimed_then_let_go(self, tmp_path: Path) -> None:
        """Idle (nothing running, nothing waiting): whoever a client asks takes it up."""
        reader = await a_started_run(tmp_path / "journal.db")
        sessions, daemon, hands = finder(reader)
        assert await sessions.take_up_if_busy(A) is None
        assert hands.calls == [("claim", A), ("release", A)]
        assert daemon.sessions == {}

    async def test_a_session_another_holds_is_not_read(self, tmp_path: Path) -> None:
        reader = await a_started_run(tmp_path / "journal.db")
        sessions, _, hands = finder(reader, hands=Hands(held={A: "node-b"}))
        assert await sessions.take_up_if_busy(A) is None
        assert hands.calls == [("claim", A)], "not released: never held"

    async def test_at_start_only_unfinished_sessions_are_looked_at(self, tmp_path: Path) -> None:
        db = tmp_path / "journal.db"
        _, runtime, _ = await run_team(db, load_team(HANDOFF))
        reader = await a_started_run(db)
        sessions, _, hands = finder(reader)
        await sessions.take_up_unfinished()
        assert hands.calls == [("claim", A), ("release", A)]
        assert runtime.session not in {uri for _, uri in hands.calls}

    def test_a_run_that_only_started_needs_no_running(self) -> None:
        assert not needs_running(TeamState(A))


class TestWatch:
    async def test_a_session_nobody_runs_is_not_taken_up_to_be_read(self, tmp_path: Path) -> None:
        reader = await a_started_run(tmp_path / "journal.db")
        sessions, daemon, hands = finder(reader)
        assert await sessions.watch(A) is None
        assert daemon.following.asked == [("runs_elsewhere", A)]
        assert hands.calls == []

    async def test_a_running_session_another_runs_is_followed(self, tmp_path: Path) -> None:
        reader = await a_started_run(tmp_path / "journal.db")
        sessions, daemon, hands = finder(reader, Following(elsewhere=True))
        assert await sessions.watch(A) is FOLLOWED
        assert daemon.following.asked == [("runs_elsewhere", A), ("follow", A)]
        assert hands.calls == []


class TestSessionLocks:
    async def test_one_session_is_held_by_one_at_a_time_others_side_by_side(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        locks = SessionLocks()
        log: list[str] = []

        async def hold(uri: str, name: str) -> None:
            async with locks.hold(uri):
                log.append(f"{name} in")
                await trio.sleep(1)
                log.append(f"{name} out")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold, A, "first")
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(hold, A, "second")
            nursery.start_soon(hold, B_URI, "other")
            await trio.testing.wait_all_tasks_blocked()
            assert log == ["first in", "other in"], "the second waits; the other does not"
            assert len(locks) == 2
        assert log.index("second in") > log.index("first out")
        assert len(locks) == 0, "a lock nobody holds or waits for is forgotten"

    async def test_a_waiter_cancelled_leaves_no_lock_behind(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        locks = SessionLocks()

        async def wait_a_second() -> None:
            with trio.move_on_after(1):
                async with locks.hold(A):
                    pytest.fail("held twice")

        async with locks.hold(A):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_a_second)
            assert len(locks) == 1
        assert len(locks) == 0


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
