"""Starting a session's run in the daemon's nursery behind an error barrier: a run that fails
before its first facts is the caller's :class:`RunError`, one that fails later is logged and
never takes the daemon down, and either way the session is let go. A session held elsewhere
is not started here; one another node runs is started there."""

from __future__ import annotations

from typing import Any, cast

import pytest
import trio
import trio.testing

from orchestrator.base import RunError
from orchestrator.core import TeamState
from orchestrator.journal import HeldElsewhere
from orchestrator.runtime import RunOutcome
from orchestrator.sessions import Following, LiveSession, NoFollowing, SessionRuns
from orchestrator.sessions._runs import _message

URI = "ahp-session:/run-1"


class Live:
    """A live session as far as starting and ending it goes: what was done to it."""

    def __init__(self, *, started: bool = True) -> None:
        self.uri = URI
        self.id = "run-1"
        self.team_name = "echo"
        self.state = TeamState(URI)
        self.finished = trio.Event()
        self.start_lock = trio.Lock()
        self.started = started
        self.done: list[str] = []
        self.end_reason: str | None = None
        self.stop = trio.Event()  # its run goes on until this is set

    def close_streams(self) -> None:
        self.done.append("streams closed")

    def end_sinks(self, reason: str | None = None) -> None:
        self.done.append(f"sinks ended ({reason})")

    async def run(self, prompt: str, *, task_status: Any) -> RunOutcome:
        self.done.append(f"run {prompt!r}")
        task_status.started()
        await self.stop.wait()
        return cast(RunOutcome, type("Outcome", (), {"status": "completed"})())


class Daemon:
    def __init__(self, nursery: trio.Nursery, following: Following | None = None) -> None:
        self.nursery = nursery
        self.following: Following = following or NoFollowing()
        self.calls: list[str] = []
        self.held: HeldElsewhere | None = None

    async def claim(self, uri: str, *, quiet: bool = False) -> HeldElsewhere | None:
        self.calls.append(f"claim {uri}")
        return self.held

    async def release(self, uri: str, *, keep: bool) -> None:
        self.calls.append(f"release {uri}" + (" kept" if keep else ""))

    def runs(self) -> SessionRuns:
        return SessionRuns(
            self,
            claim=self.claim,
            release=self.release,
            elsewhere=lambda uri, held: f"{uri} runs on {held.owner}",
            add=lambda live: self.calls.append(f"add {live.uri}"),
            remove=lambda live: self.calls.append(f"remove {live.uri}"),
            drop=lambda live, why: self.calls.append(f"drop {live.uri}: {why}"),
        )


def as_live(live: Live) -> LiveSession:
    return cast(LiveSession, live)


class TestLaunch:
    async def test_a_run_is_added_then_let_go_once_it_ends(self) -> None:
        live = Live()
        async with trio.open_nursery() as nursery:
            daemon = Daemon(nursery)
            await daemon.runs().start_run(as_live(live), "hello")
            assert daemon.calls == [f"claim {URI}", f"add {URI}"]
            assert not live.finished.is_set()
            live.stop.set()
        assert live.done == ["run 'hello'", "streams closed", "sinks ended (None)"]
        assert daemon.calls[2:] == [f"release {URI}", f"remove {URI}"]
        assert live.finished.is_set()

    async def test_a_run_that_fails_before_its_first_facts_is_the_caller_s_error(
        self,
    ) -> None:
        live = Live()

        async def start(*, task_status: Any) -> RunOutcome:
            raise ExceptionGroup("run", [ValueError("the journal is full")])

        async with trio.open_nursery() as nursery:
            daemon = Daemon(nursery)
            with pytest.raises(RunError, match="session run-1 could not start: the journal is"):
                await daemon.runs().launch(as_live(live), start)
        assert daemon.calls == [f"add {URI}", f"release {URI}", f"remove {URI}"]
        assert live.finished.is_set()

    async def test_a_run_that_fails_later_never_takes_the_daemon_down(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        live = Live()

        async def start(*, task_status: Any) -> RunOutcome:
            task_status.started()
            await trio.sleep(1)
            raise RuntimeError("a bug in the run")

        async with trio.open_nursery() as nursery:
            daemon = Daemon(nursery)
            await daemon.runs().launch(as_live(live), start)
            await live.finished.wait()
            assert daemon.calls[-1] == f"remove {URI}"
            assert live.done == ["streams closed", "sinks ended (None)"]
        # the nursery, the daemon's, ended without the run's error


class TestStartRun:
    async def test_a_session_held_elsewhere_is_refused_naming_who_holds_it(self) -> None:
        live = Live()
        async with trio.open_nursery() as nursery:
            daemon = Daemon(nursery)
            daemon.held = HeldElsewhere(owner="node-b", description="runs on node b")
            with pytest.raises(RunError, match=f"{URI} runs on node-b"):
                await daemon.runs().start_run(as_live(live), "hello")
        assert daemon.calls == [f"claim {URI}"], "nothing added"
        assert live.done == []

    async def test_a_session_another_node_runs_is_started_there(self) -> None:
        started: list[str] = []

        class Followed:
            state = TeamState(URI)

            async def start(self, prompt: str) -> None:
                started.append(prompt)

        class Follows(NoFollowing):
            def follows(self, uri: str) -> Any:
                return Followed()

        live = Live()
        async with trio.open_nursery() as nursery:
            daemon = Daemon(nursery, Follows())
            await daemon.runs().start_run(as_live(live), "hello")
        assert started == ["hello"]
        assert daemon.calls == [], "not claimed, not run here"


class TestDispose:
    async def test_a_session_never_prompted_is_dropped(self) -> None:
        live = Live(started=False)
        async with trio.open_nursery() as nursery:
            daemon = Daemon(nursery)
            await daemon.runs().dispose(as_live(live))
        assert daemon.calls == [f"drop {URI}: the session was disposed"]

    async def test_a_session_that_ended_is_waited_for_only(self) -> None:
        live = Live()
        live.finished.set()
        async with trio.open_nursery() as nursery:
            await Daemon(nursery).runs().dispose(as_live(live))
        assert live.done == []


class TestMessage:
    def test_the_first_leaf_of_a_group_or_the_type_of_a_silent_error(self) -> None:
        group = BaseExceptionGroup("outer", [ExceptionGroup("inner", [KeyError("chat-1")])])
        assert _message(group) == "'chat-1'"
        assert _message(RuntimeError()) == "RuntimeError"
        assert _message(RunError("no such chat")) == "no such chat"
