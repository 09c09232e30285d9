"""The official AG-UI client (``@ag-ui/client``'s HttpAgent, in tests/agui_client/run.mjs)
accepts what the projector emits, and answers an interrupt with the resume it expects.

The daemon's endpoint does not exist yet, so a tiny ASGI app on 127.0.0.1 port 0 replays, one
run per POST, the SSE streams the projector made of a real delivery run with an approval. The
client's own verifier checks every event's order; the harness prints each event it accepted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import jsonpatch
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from orchestrator.protocols import ResumeDecision, RunRequest, parse_run_input
from orchestrator.spec import load_team
from tests.support import teams
from tests.support.agui import client, printed, run_team, sse, team
from tests.support.paths import PROJECT_ROOT


@attrs.define
class Replay:
    """An AG-UI endpoint that answers the n-th POST with the n-th canned SSE body."""

    bodies: list[bytes]
    url: str = ""
    requests: list[dict[str, Any]] = attrs.Factory(list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(json.loads(body))
        index = len(self.requests) - 1
        status = 200 if index < len(self.bodies) else 409
        headers = [(b"content-type", b"text/event-stream" if status == 200 else b"text/plain")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        answer = self.bodies[index] if status == 200 else b"no more canned runs"
        await send({"type": "http.response.body", "body": answer})


@asynccontextmanager
async def replaying(bodies: list[bytes]) -> AsyncIterator[Replay]:
    server = Replay(bodies)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, server, config)
        server.url = binds[0].rstrip("/") + "/agui?team=delivery"
        yield server
        nursery.cancel_scope.cancel()


class TestOfficialClient:
    @pytest.mark.parametrize("deny", [False, True])
    async def test_a_delivery_run_with_an_approval_end_to_end(
        self, run_mjs: Path, deny: bool
    ) -> None:
        """The client accepts both runs event by event, and its second request resumes the
        interrupt with the decision, addressed by the approval id."""
        session = await run_team(load_team(PROJECT_ROOT / "teams" / "delivery.toml"))
        async with replaying(sse(session.runs)) as server:
            done = await client(run_mjs, server.url, *(["--deny"] if deny else []))
        assert done.returncode == 0, done.stderr.decode()
        assert printed(done) == session.events
        first, second = (parse_run_input(body) for body in server.requests)
        assert first == RunRequest(
            thread_id="thread-1",
            run_id="thread-1-run-1",
            user_message="Ship the release notes",
            user_message_id="user-1",
            new_user_message=True,
            last_role="user",
        )
        assert second.resume == (ResumeDecision(approval="approval-1", approved=not deny),)
        assert (second.thread_id, second.run_id) == ("thread-1", "thread-1-run-2")
        # The client sends the conversation back: its last message is no longer the user's.
        assert (second.user_message_id, second.new_user_message) == ("user-1", False)
        # It kept the team state the snapshot and the deltas built.
        assert server.requests[1]["state"]["pendingApprovals"][0]["id"] == "approval-1"

    async def test_a_run_error_is_a_failure_with_its_message(self, run_mjs: Path) -> None:
        session = await run_team(team(teams.FAILING_LEAD))
        async with replaying(sse(session.runs)) as server:
            done = await client(run_mjs, server.url)
        assert done.returncode == 1
        assert "run 1 failed (ScriptedFailure)" in done.stderr.decode()
        assert "out of ideas" in done.stderr.decode()
        assert printed(done) == session.events
        assert len(server.requests) == 1

    async def test_a_stream_the_client_refuses_is_a_failure(self, run_mjs: Path) -> None:
        """The harness is not a rubber stamp: content outside its message is refused."""
        bad = [
            {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "r"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "orphan"},
            {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "r"},
        ]
        async with replaying(sse([bad])) as server:
            done = await client(run_mjs, server.url)
        assert done.returncode == 1
        assert "TEXT_MESSAGE_CONTENT" in done.stderr.decode()


class TestOfficialClientOnTheBoard:
    async def test_the_board_team_s_run_with_its_state_deltas(self, run_mjs: Path) -> None:
        """The shipped board team: the client accepts every event, the board's STATE_DELTAs
        among them, and keeps the board the deltas built."""
        session = await run_team(load_team(PROJECT_ROOT / "teams" / "board.toml"))
        async with replaying(sse(session.runs)) as server:
            done = await client(run_mjs, server.url)
        assert done.returncode == 0, done.stderr.decode()
        assert printed(done) == session.events
        deltas = [
            op["path"]
            for run in session.runs
            for event in run
            if event["type"] == "STATE_DELTA"
            for op in event["delta"]
        ]
        assert any(path.startswith("/board") for path in deltas)


class TestReviewLane:
    async def test_the_review_team_s_lane_end_to_end(self, run_mjs: Path) -> None:
        """teams/review.toml: the client accepts the run event by event, and the state the
        snapshot and the deltas build has the review lane: one fix, then passed, with the
        verdict's fixes and evidence."""
        session = await run_team(load_team(PROJECT_ROOT / "teams" / "review.toml"))
        async with replaying(sse(session.runs)) as server:
            done = await client(run_mjs, server.url)
        assert done.returncode == 0, done.stderr.decode()
        assert printed(done) == session.events
        (run,) = session.runs
        state: Any = None
        for event in run:
            if event["type"] == "STATE_SNAPSHOT":
                state = event["snapshot"]
            elif event["type"] == "STATE_DELTA":
                state = jsonpatch.apply_patch(state, event["delta"])
        assert state["reviews"] == session.projector.view()["reviews"]
        assert {m["agent"]: m["status"] for m in state["members"]}["reviewer"] == "completed"
        first, second = state["reviews"]
        assert (first["round"], first["status"], first["reviewer"]) == (
            1,
            "changes_requested",
            "reviewer",
        )
        assert first["fixes"] == ["Name the breaking change: review.toml became structured.toml."]
        assert first["evidence"][1]["ref"] == "https://example.invalid/changelog"
        assert (second["round"], second["status"]) == (2, "passed")
        assert second["reviewerChat"] == first["reviewerChat"]
