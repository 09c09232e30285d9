"""Opening a session: each token holds a few never prompted, the daemon no more than
``max_sessions``, and an id (of a session or a chat) is taken once, never on a guess. On a
mock clock, through a daemon without an HTTP server."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.base import FactLogError, SessionExistsError, SessionLimitError
from orchestrator.sessions import Limits, LiveSession
from tests.support.daemon import serving

LIMITS = Limits(unprompted_session=30.0, idle_session=600.0, max_unprompted_per_token=3)


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
