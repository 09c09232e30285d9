"""The daemon under load and abuse: many clients of one session, a client that stops
reading, bursts past the rate limit, malformed frames. Real daemon on loopback."""

from __future__ import annotations

import json
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from trio_websocket import ConnectionClosed, wrap_client_stream

from orchestrator.base import ConfigError, PeerProtocolError
from orchestrator.journal import JournalReader
from orchestrator.protocols import parse_client_message, project_facts, unstructure_envelope
from orchestrator.runtime import DEFAULT_DELTA_WINDOW
from orchestrator.server import ServeConfig, _outbox, parse_serve_config
from orchestrator.sessions import Limits
from tests.support import teams
from tests.support.daemon import Client, RunningDaemon, connect, running_daemon
from tests.support.examples import examples
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

TASK = "release-1"
#: A client's probe: a well-formed request the session refuses, answered by one event.
PROBE = {"channel": "agent", "type": "abort", "taskId": "probe"}


def agent_events(client: Client) -> list[dict[str, Any]]:
    return [e for e in client.received if e.get("channel") != "team"]


def team_envelopes(client: Client) -> list[dict[str, Any]]:
    return [e["event"] for e in client.received if e.get("channel") == "team"]


def journal_envelopes(daemon: RunningDaemon, session_id: str) -> list[dict[str, Any]]:
    """What ``orchestrator events SESSION --format agent-ui`` prints, as JSON objects."""
    uri = "ahp-session:/" + session_id
    facts = JournalReader(daemon.db).facts(uri)
    return [unstructure_envelope(e) for e in project_facts(uri, facts)]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["content"] for e in events if e["type"] == "text")


def calls(events: list[dict[str, Any]], kind: str) -> list[str]:
    return [e["toolCallId"] for e in events if e["type"] == kind]


async def team_until(client: Client, count: int) -> None:
    """Receive until the client holds ``count`` team envelopes."""
    while len(team_envelopes(client)) < count:
        await client.receive()


async def prompt_and_approve(operator: Client) -> None:
    """Prompt the delivery team; approve the publish request; wait for the turn's done."""
    await operator.send(
        {"channel": "agent", "type": "prompt", "prompt": "Ship 2.0", "taskId": TASK}
    )
    request = await operator.until_type("permission_request")
    await operator.send({"channel": "agent", "type": "approve", "requestId": request["requestId"]})
    await operator.until_type("done")


async def metric(daemon: RunningDaemon, name: str) -> float:
    async with daemon.http() as http:
        text = (await http.get("/metrics")).text
    for line in text.splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no metric {name} in:\n{text}")


def limits(*, delta_window: float = DEFAULT_DELTA_WINDOW, **changes: Any) -> ServeConfig:
    return ServeConfig(
        limits=attrs.evolve(Limits(shutdown_grace=0.5), **changes), delta_window=delta_window
    )


#: The STREAM team's 1,000 chunks come at once: without a delta window each is its own fact
#: (and frame), so a client that stops reading fills its queue and its socket.
ONE_FACT_PER_CHUNK: Final = 0.0


class TestManyClients:
    async def test_200_clients_of_one_session_receive_identical_ordered_streams(
        self, tmp_path: Path
    ) -> None:
        """200 viewers attach to one session before its first prompt and subscribe to
        the team channel from 0: after the replay (init, an empty history) every viewer's
        agent events are the operator's, in the same order, ending with result and done;
        every viewer's envelopes are those the journal's facts project to, in order."""
        viewers: list[Client] = []
        late: list[Client] = []
        with trio.fail_after(120):
            async with (
                running_daemon(tmp_path) as daemon,
                connect(daemon, "team=delivery") as operator,
                trio.open_nursery() as nursery,
            ):
                init = await operator.until_type("init")
                session = init["sessionId"]
                all_done, everyone_done = trio.Event(), trio.Event()
                done: list[Client] = []
                expected: list[dict[str, Any]] = []

                async def view(*, task_status: trio.TaskStatus[None]) -> None:
                    async with connect(daemon, f"session={session}") as viewer:
                        viewers.append(viewer)
                        await viewer.send({"channel": "team", "type": "subscribe"})
                        assert await viewer.receive() == init
                        assert await viewer.receive() == {
                            "channel": "agent",
                            "type": "history",
                            "messages": [],
                        }
                        task_status.started()
                        await viewer.until_type("done")
                        done.append(viewer)
                        if len(done) == len(viewers):
                            all_done.set()
                        await everyone_done.wait()
                        await team_until(viewer, len(expected))

                async def join_late(*, task_status: trio.TaskStatus[None]) -> None:
                    async with connect(daemon, f"session={session}") as viewer:
                        late.append(viewer)
                        await viewer.send({"channel": "team", "type": "subscribe"})
                        await viewer.until_type("history")
                        task_status.started()
                        await viewer.until_type("done")
                        await everyone_done.wait()
                        await team_until(viewer, len(expected))

                for _ in range(200):
                    await nursery.start(view)
                await operator.send(
                    {"channel": "agent", "type": "prompt", "prompt": "Ship 2.0", "taskId": TASK}
                )
                for _ in range(20):  # while the turn runs: it waits for the approval
                    await nursery.start(join_late)
                request = await operator.until_type("permission_request")
                await operator.send(
                    {"channel": "agent", "type": "approve", "requestId": request["requestId"]}
                )
                await operator.until_type("done")
                await all_done.wait()
                expected[:] = journal_envelopes(daemon, session)
                everyone_done.set()
        reference = agent_events(operator)[1:]  # after init
        assert [e["type"] for e in reference[-2:]] == ["result", "done"]
        assert reference[-1] == {"channel": "agent", "type": "done", "taskId": TASK}
        for viewer in viewers:
            assert agent_events(viewer)[2:] == reference
            assert team_envelopes(viewer) == expected
        assert [e["sequence"] for e in expected] == list(range(1, len(expected) + 1))
        assert journal_envelopes(daemon, session) == expected, "no fact came after"
        # Late joiners: the running turn so far is replayed, the rest comes live; together
        # the same text and each tool call once, and the same envelopes from 0.
        for viewer in late:
            events = agent_events(viewer)[2:]
            assert events[-2:] == reference[-2:]
            assert text_of(events) == text_of(reference)
            for kind in ("tool_invocation", "tool_result"):
                assert sorted(calls(events, kind)) == sorted(calls(reference, kind))
            assert team_envelopes(viewer) == expected


class TestTeamChannel:
    async def test_subscribing_from_n_sends_the_envelopes_after_n_then_live_ones(
        self, tmp_path: Path
    ) -> None:
        """A client that subscribes mid-run from sequence N gets exactly the envelopes
        after N (from the journal, then live): no gap, no duplicate."""
        with trio.fail_after(30):
            async with (
                running_daemon(tmp_path) as daemon,
                connect(daemon, "team=delivery") as operator,
            ):
                session = (await operator.until_type("init"))["sessionId"]
                await operator.send(
                    {"channel": "agent", "type": "prompt", "prompt": "Ship 2.0", "taskId": TASK}
                )
                request = await operator.until_type("permission_request")
                so_far = journal_envelopes(daemon, session)
                n = len(so_far) // 2
                assert n > 5
                async with connect(daemon, f"session={session}") as late:
                    await late.send({"channel": "team", "type": "subscribe", "fromSequence": n})
                    await late.until(lambda e: e.get("channel") == "team")
                    await operator.send(
                        {
                            "channel": "agent",
                            "type": "approve",
                            "requestId": request["requestId"],
                        }
                    )
                    await operator.until_type("done")
                    await late.until_type("done")
                    expected = journal_envelopes(daemon, session)
                    await team_until(late, len(expected) - n)
        assert len(expected) > len(so_far)
        assert team_envelopes(late) == expected[n:]
        assert team_envelopes(late)[0]["sequence"] == n + 1

    async def test_a_replay_longer_than_the_buffer_is_sent_at_the_clients_pace(
        self, tmp_path: Path
    ) -> None:
        """A client that subscribes from 0 to a session with more envelopes than its buffer
        holds gets every one of them, in order, then live ones: the replay waits for it to
        read, where it used to close the client at once as having "fallen behind"."""
        config = limits(subscriber_buffer=6)
        with trio.fail_after(60):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
                connect(daemon) as operator,
            ):
                session = (await operator.until_type("init"))["sessionId"]
                for n in range(6):
                    await operator.send({"channel": "agent", "type": "prompt", "prompt": f"{n}"})
                    await operator.until_type("done")
                so_far = journal_envelopes(daemon, session)
                assert len(so_far) > 2 * 6
                async with connect(daemon, f"session={session}") as late:
                    await late.until_type("history")
                    await late.send({"channel": "team", "type": "subscribe", "fromSequence": 0})
                    await team_until(late, len(so_far))
                    await operator.send({"channel": "agent", "type": "prompt", "prompt": "more"})
                    await late.until_type("done")
                    expected = journal_envelopes(daemon, session)
                    await team_until(late, len(expected))
        assert team_envelopes(late) == expected


class TestRateLimit:
    async def test_a_burst_past_the_limit_is_answered_rate_limited_then_frames_pass_again(
        self, tmp_path: Path
    ) -> None:
        """With bursts of 5 at 2 a second, 8 frames at once: 5 are handled (here: refused,
        there is no such task), 3 answered ``rate_limited`` and dropped; half a second
        later a frame is handled again."""
        config = limits(messages_per_second=2.0, burst=5)
        with trio.fail_after(30):
            async with running_daemon(tmp_path, config=config) as daemon, connect(daemon) as client:
                await client.until_type("init")
                for _ in range(8):
                    await client.send(PROBE)
                answers = [await client.receive() for _ in range(8)]
                await trio.sleep(0.6)
                await client.send(PROBE)
                later = await client.receive()
        assert [(a["type"], a["code"]) for a in answers] == [("error", "refused")] * 5 + [
            ("error", "rate_limited")
        ] * 3
        assert "2 messages a second" in answers[-1]["message"]
        assert (later["type"], later["code"]) == ("error", "refused")


@asynccontextmanager
async def stalled_viewer(daemon: RunningDaemon, session: str) -> AsyncIterator[Client]:
    """A viewer with a 4 KB receive buffer, so that it stops taking data from the socket
    soon after it stops asking trio-websocket for messages."""
    host, port = daemon.url.removeprefix("http://").split(":")
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4_096)
    await sock.connect((host, int(port)))
    stream = trio.SocketStream(sock)
    async with stream, trio.open_nursery() as nursery:
        connection = await wrap_client_stream(nursery, stream, host, f"/ws?session={session}")
        try:
            yield Client(connection)
        finally:
            await connection.aclose()


class TestSlowSubscriber:
    async def test_a_client_that_stops_reading_is_dropped_and_nobody_else_is_slowed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With room for 50 events per client, a viewer that stops reading is closed with
        1008 and a reason saying it fell behind; the operator of the same session gets
        every event and the run completes; /metrics counts the drop."""
        # The viewer reads again only once the run is over. On a loaded machine that can be
        # past CLOSE_TIMEOUT, when its socket is closed under the blocked write and the close
        # frame never arrives (1006): test_hypercorn_ws covers that timeout; here it waits.
        monkeypatch.setattr(_outbox, "CLOSE_TIMEOUT", 60.0)
        config = limits(subscriber_buffer=50, delta_window=ONE_FACT_PER_CHUNK)
        with trio.fail_after(60):
            async with running_daemon(
                tmp_path, teams={"stream": teams.STREAM}, config=config
            ) as daemon:
                before = await metric(daemon, "orchestrator_dropped_subscribers_total")
                async with connect(daemon) as operator:
                    session = (await operator.until_type("init"))["sessionId"]
                    async with stalled_viewer(daemon, session) as slow:
                        await slow.until_type("history")
                        await operator.send(
                            {"channel": "agent", "type": "prompt", "prompt": "stream"}
                        )
                        result = await operator.until_type("result")
                        await operator.until_type("done")
                        # It fell behind ~900 facts ago and still reads nothing: it is
                        # dropped, and the session no longer feeds it (left: the
                        # operator's subscription).
                        dropped = await metric(daemon, "orchestrator_dropped_subscribers_total")
                        assert dropped == before + 1
                        assert await metric(daemon, "orchestrator_subscribers") == 1
                        # Now read what the stalled viewer was sent, up to its close.
                        with pytest.raises(ConnectionClosed) as closed:
                            await slow.until(lambda _: False)
        texts = [e for e in operator.received if e["type"] == "text"]
        assert len(texts) == 1_000
        assert "".join(e["content"] for e in texts) == result["summary"]
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1008
        assert "fell behind" in (closed.value.reason.reason or "")
        assert not [e for e in slow.received if e["type"] in ("result", "done")]

    async def test_the_daemon_stops_while_a_client_has_stopped_reading(
        self, tmp_path: Path
    ) -> None:
        """A viewer that stopped reading mid-stream (its socket full, a frame half written)
        does not hold the daemon up: stopping ends within the shutdown grace and
        hypercorn's graceful timeout, and the viewer's connection is closed."""
        # Never dropped: its socket is what is full.
        config = limits(subscriber_buffer=100_000, delta_window=ONE_FACT_PER_CHUNK)
        with trio.fail_after(60):
            async with (
                running_daemon(tmp_path, teams={"stream": teams.STREAM}, config=config) as daemon,
                connect(daemon) as operator,
            ):
                session = (await operator.until_type("init"))["sessionId"]
                async with stalled_viewer(daemon, session) as slow:
                    await slow.until_type("history")
                    await operator.send({"channel": "agent", "type": "prompt", "prompt": "stream"})
                    await operator.until_type("done")
                    asked = trio.current_time()
                    daemon.stop.set()
                    with trio.fail_after(10):
                        await daemon.stopped.wait()
                    took = trio.current_time() - asked
                    # What it was sent before the daemon gave up on it, then the end.
                    with pytest.raises(ConnectionClosed):
                        await slow.until(lambda _: False)
                # The operator, who read everything, was told the daemon is going.
                with pytest.raises(ConnectionClosed) as closed:
                    await operator.until(lambda _: False)
        assert took < 10, took
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1001
        assert not [e for e in slow.received if e["type"] in ("result", "done")]

    async def test_the_daemon_stops_while_an_agui_client_has_stopped_reading(
        self, tmp_path: Path
    ) -> None:
        """The same for an AG-UI client: its SSE response is a megabyte of text events
        that it stops reading after the headers; stopping the daemon still ends in time."""
        body = json.dumps(
            {
                "threadId": "stalled",
                "runId": "run-1",
                "messages": [{"id": "m1", "role": "user", "content": "stream"}],
                "tools": [],
                "context": [],
                "state": {},
                "forwardedProps": {},
            }
        ).encode()
        with trio.fail_after(60):
            async with running_daemon(
                tmp_path,
                teams={"stream": teams.STREAM},
                config=limits(delta_window=ONE_FACT_PER_CHUNK),
            ) as daemon:
                host, port = daemon.url.removeprefix("http://").split(":")
                sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
                sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4_096)
                await sock.connect((host, int(port)))
                async with trio.SocketStream(sock) as stream:
                    await stream.send_all(
                        b"POST /agui?team=stream HTTP/1.1\r\nHost: %s\r\n"
                        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                        % (host.encode(), len(body), body)
                    )
                    assert (await stream.receive_some(4_096)).startswith(b"HTTP/1.1 200")
                    # It reads nothing more; the run goes on until its text is all written
                    # (seen from outside, as an operator would: in /metrics).
                    while await metric(daemon, "orchestrator_facts_appended_total") < 1_000:  # noqa: ASYNC110
                        await trio.sleep(0.05)
                    asked = trio.current_time()
                    daemon.stop.set()
                    with trio.fail_after(10):
                        await daemon.stopped.wait()
                    took = trio.current_time() - asked
        assert took < 10, took


FRAME_LIMIT = 8_192
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
wrong_fields = st.fixed_dictionaries(
    {
        "channel": st.sampled_from(["agent", "team", "views", "AGENT", ""]) | json_values,
        "type": st.sampled_from(["prompt", "abort", "subscribe", "approve", "tool_response"])
        | json_values,
    },
    optional=dict.fromkeys(("prompt", "taskId", "requestId", "fromSequence"), json_values),
)
text = st.text(st.characters(codec="utf-8"), max_size=100)
bad_frames: st.SearchStrategy[str | bytes] = (
    text
    | json_values.map(json.dumps)
    | wrong_fields.map(json.dumps)
    | st.binary(max_size=100)
    # Past the daemon's limit, within what hypercorn reads (4 x the limit).
    | st.integers(FRAME_LIMIT + 1, 3 * FRAME_LIMIT).map(lambda n: json.dumps({"p": "x" * n}))
    | st.just("[" * 1_000)
    | st.just("1" * 5_000)  # an integer past int()'s 4300 digits
).filter(lambda frame: not parses(frame))


def parses(frame: str | bytes) -> bool:
    try:
        parse_client_message(frame, max_bytes=FRAME_LIMIT)
    except PeerProtocolError:
        return False
    return True


class TestMalformedFrames:
    async def test_every_bad_frame_is_answered_and_the_connection_stays_usable(
        self, tmp_path: Path
    ) -> None:
        """Each bad frame gets one ``error`` event with code ``bad_request``, and a valid
        request right after it is handled; a second client of the session sees none of
        it and is served as before."""
        config = limits(max_frame_bytes=FRAME_LIMIT, messages_per_second=1e6, burst=1_000_000)
        answers: list[dict[str, Any]] = []
        with trio.fail_after(120):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
                connect(daemon) as client,
            ):
                session = (await client.until_type("init"))["sessionId"]
                async with connect(daemon, f"session={session}") as other:
                    await other.until_type("history")

                    async def exchange(frame: str | bytes) -> tuple[dict[str, Any], dict[str, Any]]:
                        await client.connection.send_message(frame)
                        answer = await client.receive()
                        await client.send(PROBE)
                        return answer, await client.receive()

                    @settings(max_examples=examples(50), deadline=None, database=None)
                    @given(bad_frames)
                    def throw(frame: str | bytes) -> None:
                        answer, probe = trio.from_thread.run(exchange, frame)
                        answers.append(answer)
                        assert (answer["type"], answer["code"]) == ("error", "bad_request")
                        assert answer["message"].startswith("$")
                        assert (probe["type"], probe["code"]) == ("error", "refused")

                    await trio.to_thread.run_sync(throw)
                    # Still a working client: a prompt runs a turn.
                    await client.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                    await client.until_type("done")
                    await other.until_type("done")
        assert len(answers) >= 50
        assert not [e for e in other.received if e["type"] == "error"]
        # (The answer's two chunks come at once: one fact, one text event.)
        assert [e["type"] for e in other.received] == [
            "init",
            "history",
            "prompt",
            "text",
            "result",
            "done",
        ]


class TestNumbersPastWhatPythonReads:
    async def test_a_callback_body_with_a_5000_digit_number_is_a_400(self, tmp_path: Path) -> None:
        """An integer of thousands of digits is refused by the input gate, naming the field
        and the limit: a 400, not a 500."""
        with trio.fail_after(30):
            async with running_daemon(tmp_path) as daemon, daemon.http() as http:
                answer = await http.post(
                    "/callback", content=b'{"type": "view_update", "n": ' + b"1" * 5_000 + b"}"
                )
        assert answer.status_code == 400
        assert answer.json()["error"] == "n: an integer of 5000 digits; the limit is 32"

    def test_a_nan_limit_is_refused_by_the_config(self) -> None:
        """TOML reads ``nan``: a NaN rate would have turned the rate limit off."""
        with pytest.raises(ConfigError, match=r"limits\.messages_per_second"):
            parse_serve_config(
                tomllib.loads("[limits]\nmessages_per_second = nan"), file="x", environ={}
            )
