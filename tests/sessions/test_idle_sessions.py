"""Idle sessions on a daemon on loopback: put away once idle with no client, and taken up
again, from the journal, by the next client that asks (see
:class:`~orchestrator.sessions.IdleSessions`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator.core import build_graph
from orchestrator.journal import JournalReader
from orchestrator.protocols import envelope_to_json_line, project_facts
from orchestrator.server import ServeConfig
from orchestrator.sessions import Limits
from tests.support.ahp_client import connect_ahp
from tests.support.daemon import RunningDaemon, connect, running_daemon
from tests.support.teams import ECHO

# Its tests start the daemon (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestIdleSessions:
    async def test_an_idle_session_is_put_away_and_taken_up_when_a_client_asks(
        self, tmp_path: Path
    ) -> None:
        config = ServeConfig(limits=Limits(idle_session=0.2, shutdown_grace=0.5))
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon:
            async with connect(daemon) as first:
                init = await first.until_type("init")
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")
                await trio.sleep(0.5)
                assert await live_sessions(daemon) == 1, "a session with a client stays"
            with trio.fail_after(10):
                while await live_sessions(daemon):  # noqa: ASYNC110 (polls over HTTP)
                    await trio.sleep(0.1)
            async with connect(daemon, f"session={init['sessionId']}") as again:
                await again.until_type("init")
                history = await again.until_type("history")
                assert [m for m in history["messages"] if m.get("type") == "result"] == [
                    {"channel": "agent", "type": "result", "summary": "first answer"}
                ]
                await again.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                result = await again.until_type("result")
        assert result["summary"] == "second answer", "the conversation goes on where it was"
        facts = JournalReader(daemon.db).facts("ahp-session:/" + init["sessionId"])
        assert build_graph(facts).check() == []

    async def test_an_ahp_subscription_takes_a_put_away_session_up_and_keeps_it(
        self, tmp_path: Path
    ) -> None:
        config = ServeConfig(limits=Limits(idle_session=0.2, shutdown_grace=0.5))
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon:
            async with connect(daemon) as first:
                init = await first.until_type("init")
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")
            with trio.fail_after(10):
                while await live_sessions(daemon):  # noqa: ASYNC110 (polls over HTTP)
                    await trio.sleep(0.1)
            uri = "ahp-session:/" + init["sessionId"]
            async with connect_ahp(daemon) as ahp:
                result = await ahp.initialize(subscriptions=(uri,))
                (snapshot,) = result["snapshots"]
                assert snapshot["resource"] == uri
                await trio.sleep(0.6)  # three idle periods: a followed session stays
                assert await live_sessions(daemon) == 1

    async def test_a_session_s_envelopes_are_folded_once_across_put_away_and_take_up(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A session put away keeps nothing in memory, its log included; the web view's
        read of it folds it once, into the web view's cache, and the team channel of the
        session taken up again goes on from that fold, reading only the facts after it
        (not the whole session again), and sends what a projection of the whole session
        gives."""
        reads: list[tuple[str, int]] = []
        facts_of = JournalReader.facts

        def spied(self: JournalReader, session: str, *, after: int = 0) -> list[Any]:
            reads.append((session, after))
            return facts_of(self, session, after=after)

        monkeypatch.setattr(JournalReader, "facts", spied)
        config = ServeConfig(limits=Limits(idle_session=0.2, shutdown_grace=0.5))
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon:
            async with connect(daemon) as first:
                init = await first.until_type("init")
                await first.send({"channel": "team", "type": "subscribe"})
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")
            uri = "ahp-session:/" + init["sessionId"]
            assert (uri, 0) in reads, "the log's first fold"
            with trio.fail_after(10):
                while await live_sessions(daemon):  # noqa: ASYNC110 (polls over HTTP)
                    await trio.sleep(0.1)
            put_away = JournalReader(daemon.db).session(uri).last_sequence
            reads.clear()
            async with daemon.http() as http:
                answer = await http.get(f"/api/sessions/{init['sessionId']}/envelopes")
            assert answer.status_code == 200
            read_back = answer.json()["envelopes"]
            assert (uri, 0) in reads, "nothing was kept of the session put away"
            reads.clear()
            async with connect(daemon, f"session={init['sessionId']}") as again:
                await again.until_type("init")
                await again.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                await again.until_type("done")
                await again.send({"channel": "team", "type": "subscribe"})
                facts = facts_of(JournalReader(daemon.db), uri)
                projected = project_facts(uri, facts)
                team = [
                    (await again.until(lambda e: e.get("channel") == "team"))["event"]
                    for _ in projected
                ]
        assert [after for session, after in reads if session == uri and after < put_away] == []
        whole = [json.loads(envelope_to_json_line(e)) for e in projected]
        assert team == whole
        assert read_back == whole[: len(read_back)]
        assert len(read_back) < len(whole)  # the second prompt's came after


async def live_sessions(daemon: RunningDaemon) -> int:
    async with daemon.http() as http:
        text = (await http.get("/metrics")).text
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("orchestrator_sessions{")
    )
