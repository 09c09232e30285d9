"""Following another node's session (issue 21): :class:`FollowedRuntime` reads the facts
after its state, folds them and publishes them in order, contiguous only, when woken and on
its slow poll; it ends when the session's lease is free. The reader is a fake over a list
(the journal's reads are tested in ``journal/test_journal``); between real processes, following is
tested in ``sessions/test_cluster``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio
import trio.testing

from orchestrator.core import Fact, TeamState
from orchestrator.journal import PostgresCommands
from orchestrator.sessions import FollowedRuntime, Forwarder
from orchestrator.sessions._followed import FOLLOW_POLL
from tests.support.facts import SESSION, facts, sequences


class ListReader:
    """The journal's ``facts`` over a list a test appends to (as the owner commits)."""

    def __init__(self, written: list[Fact]) -> None:
        self.written = written
        self.reads = 0

    def facts(self, session: str, *, after: int = 0) -> list[Fact]:
        self.reads += 1
        found = [f for f in self.written if f.session == session and f.sequence > after]
        return sorted(found, key=lambda fact: fact.sequence)  # as the journal orders them


async def inline(call: Callable[[], Any]) -> Any:
    return call()


def follower(reader: ListReader, owner: list[str | None], **kwargs: Any) -> FollowedRuntime:
    state = TeamState.fold(SESSION, [f for f in reader.written if f.sequence <= 3])
    unused = Forwarder(PostgresCommands("postgresql://nobody@127.0.0.1:1/none", node="b"))
    return FollowedRuntime(
        state,
        owner="a",
        reader=reader,  # type: ignore[arg-type]
        forwarder=unused,
        live_owner=lambda session: owner[0],
        lease_check=kwargs.pop("lease_check", 1000.0),
        blocking=inline,  # the reader is a list: no thread for the clock to race
        **kwargs,
    )


async def received(subscription: Any, count: int) -> list[Fact]:
    got: list[Fact] = []
    with trio.fail_after(60):
        while len(got) < count:
            got.extend(await subscription.receive_batch())
    return got


class TestReading:
    async def test_a_notification_brings_the_facts_after_the_state(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        reader = ListReader(facts(1, 3))
        runtime = follower(reader, ["a"])
        subscription = runtime.bus.subscribe("client")
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.follow)
            await trio.sleep(1)  # its first read done: from here on, it waits
            assert reader.reads == 1
            reader.written.extend(facts(4, 3))
            runtime.wake(6)
            assert sequences(await received(subscription, 3)) == [4, 5, 6]
            assert trio.current_time() < FOLLOW_POLL, "woken, not polled"
            assert runtime.state.last_sequence == 6
            runtime.wake(6)  # an old notification: nothing to read
            runtime.stop()
        assert runtime.bus.statistics().published == 3, "each fact once"

    async def test_a_fact_after_a_gap_waits_for_the_gap(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Facts are published contiguous only: 6 waits until 5 is read; none twice."""
        reader = ListReader(facts(1, 4))
        runtime = follower(reader, ["a"])
        subscription = runtime.bus.subscribe("client")
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.follow)
            assert sequences(await received(subscription, 1)) == [4]
            reader.written.extend(facts(6, 1))
            runtime.wake(6)
            await trio.sleep(FOLLOW_POLL * 3)
            assert runtime.state.last_sequence == 4
            reader.written.extend(facts(5, 1))
            runtime.wake(6)
            assert sequences(await received(subscription, 2)) == [5, 6]
            runtime.stop()

    async def test_a_lost_notification_only_delays(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        reader = ListReader(facts(1, 3))
        runtime = follower(reader, ["a"])
        subscription = runtime.bus.subscribe("client")
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.follow)
            await trio.sleep(1)  # its first read done: from here on, it waits
            reader.written.extend(facts(4, 2))  # committed, and never notified
            assert sequences(await received(subscription, 2)) == [4, 5]
            assert trio.current_time() >= FOLLOW_POLL
            runtime.stop()


class TestEnding:
    async def test_a_free_lease_ends_following_and_says_to_reattach(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        reader = ListReader(facts(1, 3))
        owner: list[str | None] = ["a"]
        runtime = follower(reader, owner, lease_check=1.0)
        subscription = runtime.bus.subscribe("client")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.follow)
            await trio.sleep(5)
            assert not runtime.end_reason, "a's lease is live: following goes on"
            reader.written.extend(facts(4, 1))  # a's last write, then it dies
            owner[0] = None
        assert runtime.end_reason is not None
        assert "node a" in runtime.end_reason
        assert "reattach" in runtime.end_reason
        assert sequences(await received(subscription, 1)) == [4], "read before it ended"

    async def test_another_owner_is_followed_on(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        reader = ListReader(facts(1, 3))
        owner: list[str | None] = ["a"]
        runtime = follower(reader, owner, lease_check=1.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.follow)
            owner[0] = "c"  # c took the session over: one log, following goes on
            await trio.sleep(5)
            assert runtime.owner == "c"
            assert runtime.end_reason is None
            runtime.stop()
