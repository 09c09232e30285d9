"""A running session's one door: what clients may ask of it and what they are told. A real
runtime of the echo team on an in-memory journal, on a mock clock; the daemon's part (start
the run in its nursery) is the test's."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import RunError
from orchestrator.core import Fact, RunStatus
from orchestrator.runtime import MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.sessions import SESSION_PREFIX, LiveSession, SharedText, session_id, session_uri
from orchestrator.spec import parse_team
from tests.support.examples import examples
from tests.support.teams import ECHO


class Daemon:
    """The daemon as a session sees it: runs a session's run in its nursery."""

    subscriber_buffer = 64

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.waited: list[float] = []

    @property
    def observer(self) -> Daemon:
        return self

    def approval_waited(self, seconds: float) -> None:
        self.waited.append(seconds)

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        await self.nursery.start(functools.partial(live.run, prompt))


class Sink:
    """A client of the session: the facts pushed to it, and whether and why it was told the
    session ended."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.ended_because: list[str | None] = []

    every_fact = True

    def deliver(self, fact: Fact, frames: tuple[str, ...], team: Sequence[str]) -> None:
        self.facts.append(fact)

    def published(self) -> None:
        pass

    def failed(self) -> None:
        raise AssertionError("a feed that does not raise never fails")

    def ended(self, reason: str | None = None) -> None:
        self.ended_because.append(reason)


def turns_completed(sink: Sink) -> int:
    return sum(fact.type == "chat/turnComplete" for fact in sink.facts)


def echo_session(daemon: Daemon) -> LiveSession:
    runtime = TeamRuntime(
        parse_team(ECHO, file="echo.toml"),
        backends=ScriptedBackend,
        factlog=MemoryFactLog(),
        conversation=True,
    )
    return LiveSession(daemon, "echo", runtime)


class TestIds:
    @settings(max_examples=examples(50))
    @given(short=st.text(min_size=1).filter(lambda s: not s.startswith(SESSION_PREFIX)))
    def test_an_id_and_its_uri_name_one_session(self, short: str) -> None:
        uri = session_uri(short)
        assert uri == SESSION_PREFIX + short
        assert session_uri(uri) == uri, "a URI is taken as it is"
        assert session_id(uri) == short


class TestConversation:
    async def test_prompts_run_as_turns_until_the_conversation_ends(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with trio.open_nursery() as nursery:
            live = echo_session(Daemon(nursery))
            sink = Sink()
            live.attach(sink)
            before = (live.started, live.unprompted)
            await live.prompt("hello", task_id="task-a")
            assert before == (False, True)
            assert (live.started, live.unprompted) == (True, False)
            await live.idle.wait()
            await live.prompt("again", task_id="task-b")
            assert live.task_of(None) == "task-a", "the first prompt starts the run"
            with trio.fail_after(60):  # the queued prompt's turn, started and answered
                while turns_completed(sink) < 2:  # noqa: ASYNC110 (the runtime's tasks)
                    await trio.sleep(1)
            await live.end()
        run = live.state.run
        assert run is not None
        assert run.status is RunStatus.COMPLETED
        assert [f.sequence for f in sink.facts] == list(range(1, live.state.last_sequence + 1))
        assert turns_completed(sink) == 2
        with pytest.raises(RunError, match=f"session {live.id} has ended: open a new one"):
            await live.prompt("more", task_id=None)
        with pytest.raises(RunError, match="has ended already"):
            await live.end()

    async def test_what_names_nothing_is_refused_naming_it(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with trio.open_nursery() as nursery:
            live = echo_session(Daemon(nursery))
            sink = Sink()
            live.attach(sink)
            await live.prompt("hello", task_id="task-a")
            with trio.fail_after(60):  # its turn answered: task-a is no longer running
                while turns_completed(sink) < 1:  # noqa: ASYNC110 (the runtime's tasks)
                    await trio.sleep(1)
            with pytest.raises(RunError, match=f"no task 'task-z' in session {live.id}"):
                await live.abort("task-z")
            with pytest.raises(RunError, match="task 'task-a' is not running"):
                await live.abort("task-a")
            with pytest.raises(RunError, match="no open question for tool call 'call-9'"):
                await live.answer("call-9", "yes")
            await live.end()


class TestClients:
    async def test_a_client_that_comes_after_the_end_is_told_at_once_and_why(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with trio.open_nursery() as nursery:
            live = echo_session(Daemon(nursery))
            early = Sink()
            live.attach(early)
            assert live.sinks == 1
            live.end_sinks("the daemon is stopping")
            live.finished.set()
            late = Sink()
            live.attach(late)
        assert early.ended_because == late.ended_because == ["the daemon is stopping"]
        assert live.sinks == 0

    async def test_alone_once_the_last_client_leaves(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        async with trio.open_nursery() as nursery:
            live = echo_session(Daemon(nursery))
            with live.attached(), live.attached():
                assert live.clients == 2
                with trio.move_on_after(5) as waited:
                    await live.wait_alone_or_prompted()
                assert waited.cancelled_caught, "two clients, not prompted: it waits"
            left_at = trio.current_time()
            with trio.fail_after(1):
                await live.wait_alone_or_prompted()
            assert live.clients == 0
            assert live.alone_since == left_at

    async def test_one_set_of_action_frames_a_fact_for_every_client(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Made by the first client that delivers the fact; every other is handed the same."""
        async with trio.open_nursery() as nursery:
            live = echo_session(Daemon(nursery))
            sink = Sink()
            live.attach(sink)
            await live.prompt("hello", task_id=None)
            await live.idle.wait()
            await live.end()
        fact = next(f for f in sink.facts if f.type == "chat/turnStarted")
        frames = live.action_frames(fact, fact.channel)
        assert frames, "a turn's start is an action of its chat"
        assert live.action_frames(fact, fact.channel) is frames
        assert all(isinstance(text, SharedText) for _, text in frames)
        assert [seq for seq, _ in frames] == sorted(seq for seq, _ in frames)
        assert live.action_frames(fact, "ahp-chat:/elsewhere") == ()
