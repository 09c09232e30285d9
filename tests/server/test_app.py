"""The app assembly (``server/_app``) on loopback, with a real hypercorn, journal and clients:
``/callback``'s view updates, ``/healthz`` when the journal fails, how the daemon stops, and
bodies that lie about their length.

A failed journal is here and not beside the sessions' code: what is tested is what every
endpoint the app assembles (``/ws``, ``/agui``, ``/healthz``) tells its clients."""

from __future__ import annotations

import gc
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from orchestrator.journal import JournalReader, SqliteJournal
from orchestrator.server._app import BODY_TIMEOUT
from tests.support.agent_channel import of_type
from tests.support.ahp_client import ROOT, AhpClient, connect_ahp
from tests.support.daemon import RunningDaemon, connect, running_daemon
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestViewUpdates:
    async def test_a_view_reaches_clients_is_replayed_and_can_be_cleared(
        self, tmp_path: Path
    ) -> None:
        diff = {"patch": "diff --git a/x b/x\n+hello", "nested": {"kept": [1, None, "as is"]}}
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            daemon.http() as http,
        ):
            async with connect(daemon) as watcher:
                init = await watcher.until_type("init")
                await watcher.send({"channel": "agent", "type": "prompt", "prompt": "hi"})
                await watcher.until_type("done")
                update = {
                    "type": "view_update",
                    "group_id": init["sessionId"],
                    "view_type": "diff",
                    "content": diff,
                }
                posted = await http.post("/callback", json=update)
                assert posted.status_code == 200, posted.text
                seen = await watcher.until_type("view_update", channel="views")
            assert seen == {
                "channel": "views",
                "type": "view_update",
                "view_type": "diff",
                "content": diff,
            }
            async with connect(daemon, f"session={init['sessionId']}") as late:
                replayed = await late.until_type("view_update", channel="views")
            assert replayed == seen, "a connecting client gets the active views"
            cleared = await http.post("/callback", json={**update, "content": {}})
            assert cleared.status_code == 200
            async with connect(daemon, f"session={init['sessionId']}") as later:
                await later.until_type("history")
                await later.send({"channel": "agent", "type": "prompt", "prompt": "again"})
                await later.until_type("done")
            assert not of_type(later.received, "view_update"), "a cleared view is not replayed"

    @pytest.mark.parametrize(
        ("body", "status", "names"),
        [
            (b"not json", 400, "not JSON"),
            (b"[1, 2]", 400, "JSON object"),
            (
                b'{"type": "view_upd", "group_id": "g", "view_type": "d", "content": {}}',
                400,
                "type",
            ),
            (b'{"type": "view_update", "view_type": "d", "content": {}}', 400, "group_id"),
            (b'{"type": "view_update", "group_id": "g", "content": {}}', 400, "view_type"),
            (
                b'{"type": "view_update", "group_id": "g", "view_type": "d", "content": "x"}',
                400,
                "content",
            ),
            (
                b'{"type": "view_update", "group_id": "unknown", "view_type": "d", "content": {}}',
                404,
                "group_id",
            ),
            (
                b'{"type": "view_update", "group_id": "g", "view_type": "d", "content": {"p": "'
                + b"x" * 2_000_000
                + b'"}}',
                413,
                "limit",
            ),
        ],
    )
    # An oversize body is refused before it is read: httpx's upload generator, left
    # unfinished under trio, warns when collected. Collect it here, where that is expected.
    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_a_bad_view_update_is_refused_with_a_clear_error(
        self, tmp_path: Path, body: bytes, status: int, names: str
    ) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with daemon.http() as http:
                answer = await http.post(
                    "/callback", content=body, headers={"content-type": "application/json"}
                )
                assert answer.status_code == status
                assert names in answer.json()["error"]
                assert (await http.get("/healthz")).status_code == 200, "still serving"
            gc.collect()


class _SmallDisk(SqliteJournal):
    """The real journal on a file SQLite may not grow past 96 KiB: a disk that fills up."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(path, max_bytes=96 * 1024, **options)


async def test_a_full_journal_turns_healthz_503_and_the_daemon_keeps_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("orchestrator.server._app.open_journal", _SmallDisk)
    async with running_daemon(tmp_path) as daemon, daemon.http() as http:
        assert (await http.get("/healthz")).status_code == 200
        async with connect(daemon, "team=delivery") as client:
            await client.until_type("init")
            for n in range(30):
                await client.send(
                    {"channel": "agent", "type": "prompt", "prompt": f"Ship {n} " + "x" * 3000}
                )
            ended = await client.until(lambda e: e["type"] in ("session_ended", "error"))
        health = await http.get("/healthz")
        assert health.status_code == 503, ended
        assert health.json()["status"] == "journal failed"
        assert "full" in health.json()["error"]
        assert (await http.get("/metrics")).status_code == 200, "still answering"


async def receive_until_closed(client: AhpClient) -> None:
    while True:
        await client.receive()


class TestShutdown:
    async def test_ahp_clients_get_a_going_away_close_frame(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            async with connect_ahp(daemon) as ahp:
                await ahp.initialize(subscriptions=(ROOT,))
                daemon.stop.set()
                with pytest.raises(ConnectionClosed) as closed:
                    await receive_until_closed(ahp)
            with trio.fail_after(10):
                await daemon.stopped.wait()
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1001
        assert closed.value.reason.reason == "the daemon is stopping"


async def raw_request(daemon: RunningDaemon, request: bytes, *, then: str) -> bytes:
    """Send ``request`` on a new TCP connection; ``then``: "close" at once, "eof" (a half
    close) or "wait" for the answer. What came back before the server closed."""
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    answer = b""
    with trio.fail_after(60):
        try:
            await stream.send_all(request)
            if then == "eof":
                await stream.send_eof()
            if then != "close":
                while chunk := await stream.receive_some(65_536):
                    answer += chunk
                    if then == "wait" and b"}" in answer:
                        break
        finally:
            await stream.aclose()
    return answer


class TestLyingContentLength:
    @pytest.mark.parametrize("path", ["/callback", "/agui"])
    async def test_a_body_shorter_or_longer_than_declared_is_answered_cleanly(
        self, tmp_path: Path, path: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Declared more than sent (the client then goes, or half-closes): the connection
        is closed (hypercorn answers a half-closed one 400) and nothing is logged as an
        error. Declared fewer: the body is what was declared, answered 400 JSON; the rest
        is the next request on the connection."""
        body = b'{"type": "view_update", "group_id": "g", "view_type": "d", "content": {}}'

        def request(declared: int) -> bytes:
            head = (
                f"POST {path}?team=echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
            )
            return head.encode() + body

        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            assert await raw_request(daemon, request(len(body) + 50), then="close") == b""
            half_closed = await raw_request(daemon, request(len(body) + 50), then="eof")
            assert half_closed.startswith(b"HTTP/1.1 400 ")
            fewer = await raw_request(daemon, request(len(body) - 10), then="wait")
            assert fewer.startswith(b"HTTP/1.1 400 ")
            assert b": not JSON: Unterminated string" in fewer
            async with daemon.http() as http:
                assert (await http.get("/healthz")).status_code == 200
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == []

    @pytest.mark.parametrize("path", ["/callback", "/agui"])
    async def test_a_huge_declared_body_and_a_half_close_is_answered_413_every_time(
        self, tmp_path: Path, path: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A Content-Length far over the limit is refused from the headers; a client that
        half-closes right after sending a little of the body still reads the whole 413,
        every time, and nothing is logged as an error (hypercorn used to close the socket
        under the answer: an empty reply, and a BusyResourceError logged, about one in two)."""
        request = (
            f"POST {path}?team=echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 99999999999999\r\n\r\n"
            '{"type": "view_update"'
        ).encode()
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            answers = [await raw_request(daemon, request, then="eof") for _ in range(30)]
            async with daemon.http() as http:
                assert (await http.get("/healthz")).status_code == 200
        for answer in answers:
            head, _, text = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 413 "), answer
            assert json.loads(text) == {
                "error": "the body is 99999999999999 bytes; the limit is 1048576"
            }
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []

    async def test_a_body_that_never_comes_is_answered_408_on_time(
        self, tmp_path: Path, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A client that declares more than it sends and waits holds its request
        BODY_TIMEOUT seconds, then gets 408 JSON and the connection is closed."""
        body = b'{"type": "view_update"'
        request = (
            b"POST /callback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" + body
        )
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
            asked = trio.current_time()
            answer = await raw_request(daemon, request, then="wait")
            assert trio.current_time() - asked == pytest.approx(BODY_TIMEOUT, abs=0.01)
        head, _, text = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 ")
        assert b"connection: close" in head
        assert json.loads(text) == {
            "error": f"the body did not arrive within 30 s ({len(body)} of 100 bytes declared came)"
        }


class TestJournalFaults:
    async def test_a_session_that_cannot_record_ends_its_clients_told_why_others_go_on(
        self, tmp_path: Path
    ) -> None:
        """A batch the journal cannot store (here: its sequence is taken, by a row written
        behind the daemon's back) ends that session only: its clients get
        ``session_ended`` with the reason; another session goes on, /healthz stays 200."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as first,
            connect(daemon) as second,
            daemon.http() as http,
        ):
            for client in (first, second):
                await client.until_type("init")
                await client.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await client.until_type("done")
            session = "ahp-session:/" + first.received[0]["sessionId"]
            last = JournalReader(daemon.db).session(session).last_sequence
            raw = sqlite3.connect(daemon.db, timeout=10)
            raw.executemany(
                "INSERT INTO facts (session, sequence, channel, at, type, fact, checksum) "
                "VALUES (?, ?, ?, '', '', '{}', 0)",
                [(session, last + n, session) for n in range(1, 100)],
            )
            raw.commit()
            raw.close()
            await first.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            ended = await first.until_type("session_ended")
            assert "can record nothing more" in ended["reason"]
            assert "UNIQUE constraint failed" in ended["reason"]
            assert session in ended["reason"]
            await second.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            result = await second.until_type("result")
            assert result["summary"] == "second answer"
            health = await http.get("/healthz")
            assert health.status_code == 200, health.text

    async def test_a_failed_journal_ends_every_session_its_clients_told_why(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A full disk ends every live session at once, the idle ones too (not only the one
        whose batch found the disk full): each client gets ``session_ended`` saying so."""
        monkeypatch.setattr("orchestrator.server._app.open_journal", _SmallDisk)
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect(daemon) as idle,
            connect(daemon) as busy,
            connect(daemon) as unprompted,
        ):
            await idle.until_type("init")
            await idle.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await idle.until_type("done")
            await busy.until_type("init")
            await unprompted.until_type("init")
            for n in range(40):
                await busy.send(
                    {"channel": "agent", "type": "prompt", "prompt": f"{n} " + "x" * 5000}
                )
            for client in (busy, idle, unprompted):
                ended = await client.until_type("session_ended")
                assert ended["reason"].startswith("the journal failed: database or disk is full")

    async def test_an_agui_run_ended_by_a_full_disk_says_so_in_its_run_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An AG-UI client streaming a run when the journal fails gets ``RUN_ERROR`` with
        the journal's reason, not a bare "the session ended"."""
        monkeypatch.setattr("orchestrator.server._app.open_journal", _SmallDisk)
        sleepy = ECHO.replace(
            'steps = [ { say = "first answer", chunks = 2 } ]', "steps = [ { sleep = 60 } ]"
        ).replace('name = "echo"', 'name = "sleepy"')
        body = {
            "threadId": "slow-thread",
            "runId": "run-1",
            "messages": [{"id": "m1", "role": "user", "content": "take your time"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        events: list[dict[str, Any]] = []
        with trio.fail_after(30):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO, "sleepy": sleepy}) as daemon,
                daemon.http() as http,
                http.stream("POST", "/agui?team=sleepy", json=body) as stream,
                connect(daemon, "team=echo") as busy,
            ):
                lines = stream.aiter_lines()
                async for line in lines:
                    if line.startswith("data: "):
                        events.append(json.loads(line.removeprefix("data: ")))
                        if events[-1]["type"] == "RUN_STARTED":
                            break
                await busy.until_type("init")
                for n in range(40):
                    await busy.send(
                        {"channel": "agent", "type": "prompt", "prompt": f"{n} " + "x" * 5000}
                    )
                events += [
                    json.loads(line.removeprefix("data: "))
                    async for line in lines
                    if line.startswith("data: ")
                ]
        error = events[-1]
        assert error["type"] == "RUN_ERROR"
        assert error["code"] == "session_ended"
        assert error["message"].startswith("the journal failed: database or disk is full")

    async def test_a_dead_journal_writer_turns_healthz_503_and_the_daemon_still_stops(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The journal's writer thread ending on what it cannot contain (a bug) does not
        leave sessions hanging: /healthz says why with 503, clients are told, and the daemon
        stops when asked."""

        def broken(*args: object) -> None:
            raise _WriterBug("a bug in the writer")

        with trio.fail_after(20):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
                daemon.http() as http,
                connect(daemon) as client,
            ):
                await client.until_type("init")
                await client.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await client.until_type("done")
                monkeypatch.setattr("orchestrator.journal._group_commit._write_group", broken)
                await client.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                ended = await client.until_type("session_ended")
                assert "the journal's writer stopped: _WriterBug" in ended["reason"]
                health = await http.get("/healthz")
                assert health.status_code == 503
                assert "writer stopped" in health.json()["error"]
            assert daemon.stopped.is_set()


class _WriterBug(BaseException):
    """What no error barrier catches as an ``Exception``."""
