"""The following of a journal nobody else writes (:class:`NoFollowing`): nothing runs
elsewhere, nothing is followed, and a request to follow is refused saying where to go."""

from __future__ import annotations

import pytest
import trio

from orchestrator.base import RunError
from orchestrator.sessions import Following, FollowingStatistics, NoFollowing

URI = "ahp-session:/elsewhere"


class TestNoFollowing:
    async def test_it_starts_at_once_and_follows_nothing(self) -> None:
        following: Following = NoFollowing()
        with trio.fail_after(1):
            async with trio.open_nursery() as nursery:
                await nursery.start(following.serve)
        assert following.followed == {}
        assert not following.runs_elsewhere(URI)
        assert following.run_by(URI) is None
        assert following.follows(URI) is None
        assert await following.follow_unrecorded(URI) is None
        await following.tidy()
        assert following.statistics() == FollowingStatistics(followed=0, journal_looks=0)

    async def test_a_session_to_follow_is_refused_naming_it_and_where_to_ask(self) -> None:
        with pytest.raises(RunError) as refused:
            await NoFollowing().follow(URI)
        assert str(refused.value).startswith(f"session {URI} runs elsewhere")
        assert "ask the daemon that runs it" in str(refused.value)
