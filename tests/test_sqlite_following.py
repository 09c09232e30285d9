"""A daemon follows the sessions that other processes on its SQLite file run
(``server/_sqlite_following``): an ``orchestrator run`` beside the daemon is watched live,
read-only, to its end, and the daemon says who runs it.

Against a real process: a real ``orchestrator run`` parked on its approval, a real daemon on
loopback, real clients (``/ws``, HTTP). With the clock in the test's hands: the run is
recorded by the code the CLI runs (a :class:`TeamRuntime` on its own journal of the same
file, holding the session's lock), and the facts reach the daemon's client within one look
at the file (``PRAGMA data_version``, one per interval for the whole journal).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing

from orchestrator.core import ApprovalRequested
from orchestrator.journal import JournalReader

from .daemon import connect, running_daemon
from .test_crash import TEAM, acknowledged, orchestrator


def parking_run(db: Path, mirror: Path) -> subprocess.Popen[str]:
    """``orchestrator run`` of the delivery team, parked on its publish approval until the
    test answers on its stdin."""
    return orchestrator(
        "run", TEAM, "Ship the release notes", "--db", db, "--plain", "--facts", mirror,
        stdin=subprocess.PIPE,
    )  # fmt: skip


def parked(mirror: Path) -> tuple[str, str]:
    """The session of a run parked on its approval, and the approval's id."""
    deadline = time.monotonic() + 60
    while True:
        asked = [f for f in acknowledged(mirror) if isinstance(f.action, ApprovalRequested)]
        if asked:
            action = asked[0].action
            assert isinstance(action, ApprovalRequested)
            return asked[0].session, action.approval
        assert time.monotonic() < deadline, "no approval was asked for"
        time.sleep(0.01)  # another process's progress: no clock to jump here


def is_team(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e.get("channel") == "team" and e.get("event", {}).get("type") == kind


class TestARunBesideTheDaemon:
    async def test_its_clients_see_the_runs_facts_live_and_its_end(self, tmp_path: Path) -> None:
        """The web view's path: ``GET /api/sessions/ID`` says the session is live and who
        runs it (before: not live, and the page said "the daemon is unreachable"); a /ws
        client subscribed from there gets each fact the run records after it, once, in
        order, up to ``run.finished``; a decision sent to the daemon is refused naming the
        process; then the session ends, and reads ``completed``, run by nobody."""
        db, mirror = tmp_path / "journal.db", tmp_path / "facts.jsonl"
        run = parking_run(db, mirror)
        try:
            uri, approval = await trio.to_thread.run_sync(parked, mirror)
            session = uri.removeprefix("ahp-session:/")
            async with running_daemon(tmp_path, db=db) as daemon, daemon.http() as http:
                listed = (await http.get("/api/sessions")).json()["sessions"]
                runner = {"program": "orchestrator run", "pid": run.pid}
                assert [(s["uri"], s["live"], s["runBy"]) for s in listed] == [
                    (uri, False, runner)
                ], "listed as the run's, not followed for a list"
                page = (await http.get(f"/api/sessions/{session}/envelopes")).json()
                assert page["session"]["live"] is True, "its page attaches"
                assert page["session"]["runBy"] == runner
                start = len(page["envelopes"])
                assert (await http.get("/healthz")).json()["followed_sessions"] == [uri]
                async with connect(daemon, f"session={session}") as client:
                    await client.until_type("init")
                    await client.send(
                        {"channel": "team", "type": "subscribe", "fromSequence": start}
                    )
                    await client.send(
                        {"channel": "agent", "type": "approve", "requestId": approval}
                    )
                    refused = await client.until_type("error")
                    assert f"is run by `orchestrator run`, pid {run.pid}" in refused["message"]
                    assert run.stdin is not None
                    run.stdin.write("y\n")  # the run's own console decides
                    run.stdin.flush()
                    finished = await client.until(is_team("run.finished"))
                    ended = await client.until_type("session_ended")
                team = [e["event"] for e in client.received if e.get("channel") == "team"]
                summary = (await http.get(f"/api/sessions/{session}")).json()
            _, err = await trio.to_thread.run_sync(lambda: run.communicate(timeout=60))
            assert run.returncode == 0, err
        finally:
            if run.returncode is None:
                run.kill()
                run.communicate()
        sequences = [e["sequence"] for e in team]
        assert sequences == list(range(start + 1, start + 1 + len(team))), "no gap, none twice"
        assert team[-1] == finished["event"]
        assert finished["event"]["payload"]["status"] == "completed"
        assert "reason" not in ended, "it ended as runs end"
        assert (summary["status"], summary["live"], summary["runBy"]) == ("completed", False, None)
        facts = JournalReader(db).facts(uri)
        assert not any(f.action.type == "team/runResumed" for f in facts), "only followed"
