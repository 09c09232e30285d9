"""Every endpoint of the daemon takes its JSON through the input gate: what the gate refuses
is answered as bad input naming the field, nothing is recorded, and the daemon goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator.journal import JournalReader
from orchestrator.server import ServeConfig
from orchestrator.sessions import Limits
from tests.support.ahp_client import ROOT, connect_ahp
from tests.support.daemon import RunningDaemon, connect, running_daemon, websocket
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

#: Frames the gate refuses, the field it names, and words of its message.
REFUSED = [
    ('"\\ud800"', "text that cannot be encoded as UTF-8: a lone surrogate \\ud800"),
    ("NaN", "NaN is not a JSON number"),
    ("1e400", "too large for a float"),
    ("1" * 40, "an integer of 40 digits; the limit is 32"),
]


async def healthy(daemon: RunningDaemon) -> None:
    """The daemon answers ``/healthz`` ok and a new session runs a turn to its end."""
    async with daemon.http() as http:
        answer = await http.get("/healthz")
    assert answer.json()["status"] == "ok"
    async with connect(daemon) as client:
        await client.until_type("init")
        await client.send({"channel": "agent", "type": "prompt", "prompt": "still there?"})
        assert (await client.until_type("result"))["type"] == "result"


def stored_texts(db: Path | str) -> list[str]:
    reader = JournalReader(db)
    return [
        json.dumps(fact.action.prompt)
        for info in reader.sessions()
        for fact in reader.facts(info.session)
        if hasattr(fact.action, "prompt")
    ]


class TestAgentChannel:
    @pytest.mark.parametrize(("value", "words"), REFUSED)
    async def test_a_prompt_the_gate_refuses_is_a_bad_request_naming_the_field(
        self, tmp_path: Path, value: str, words: str
    ) -> None:
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with connect(daemon) as client:
                    await client.until_type("init")
                    await client.send(
                        '{"channel": "agent", "type": "prompt", "prompt": ' + value + "}"
                    )
                    error = await client.until_type("error")
                    assert error["code"] == "bad_request"
                    assert error["message"].startswith("$.prompt: ")
                    assert words in error["message"]
                    # The connection stays usable.
                    await client.send({"channel": "agent", "type": "prompt", "prompt": "ok"})
                    await client.until_type("done")
                await healthy(daemon)
        assert stored_texts(daemon.db) == ['"ok"', '"still there?"']

    async def test_nesting_past_the_configured_depth_is_refused(self, tmp_path: Path) -> None:
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_json_depth=8))
        with trio.fail_after(30):
            async with (
                running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
                connect(daemon) as client,
            ):
                await client.until_type("init")
                deep = "[" * 8 + "]" * 8
                await client.send('{"channel": "agent", "type": "prompt", "prompt": ' + deep + "}")
                error = await client.until_type("error")
                assert error["message"] == (
                    "$.prompt[0][0][0][0][0][0][0]: nested deeper than 8 levels"
                )


class TestHttpEndpoints:
    @pytest.mark.parametrize(("value", "words"), REFUSED)
    async def test_a_view_update_the_gate_refuses_is_a_400_naming_the_field(
        self, tmp_path: Path, value: str, words: str
    ) -> None:
        body = (
            '{"type": "view_update", "group_id": "g", "view_type": "d", '
            '"content": {"rows": [1, ' + value + "]}}"
        )
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with daemon.http() as http:
                    answer = await http.post("/callback", content=body.encode())
                assert answer.status_code == 400
                assert answer.json()["error"].startswith("content.rows[1]: ")
                assert words in answer.json()["error"]
                await healthy(daemon)

    async def test_a_view_type_with_a_lone_surrogate_is_a_400(self, tmp_path: Path) -> None:
        body = b'{"type": "view_update", "group_id": "g", "view_type": "\\udfff", "content": {}}'
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with daemon.http() as http:
                    answer = await http.post("/callback", content=body)
                assert answer.status_code == 400
                assert answer.json()["error"].startswith("view_type: text that cannot be encoded")
                await healthy(daemon)

    @pytest.mark.parametrize(("value", "words"), REFUSED)
    async def test_an_agui_message_the_gate_refuses_is_a_400_before_any_stream(
        self, tmp_path: Path, value: str, words: str
    ) -> None:
        body = (
            '{"threadId": "t-1", "runId": "r-1", "tools": [], "context": [], "state": {}, '
            '"forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": '
            + value
            + "}]}"
        )
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with daemon.http() as http:
                    answer = await http.post("/agui?team=echo", content=body.encode())
                assert answer.status_code == 400
                assert answer.headers["content-type"] == "application/json"
                error = answer.json()["error"]
                assert "$.messages[0].content: " in error
                assert words in error
                await healthy(daemon)
        assert not [i for i in JournalReader(daemon.db).sessions() if i.session.endswith("t-1")]

    async def test_a_deep_callback_body_is_answered_at_once(self, tmp_path: Path) -> None:
        """The finding: ~500 levels made a RecursionError deep in the converter whose
        traceback froze the daemon. Now: a 400 from the gate, the daemon unbothered."""
        deep = "[" * 500 + "]" * 500
        body = '{"type": "view_update", "group_id": "g", "view_type": "d", "content": {"x": '
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with daemon.http() as http:
                    answer = await http.post("/callback", content=(body + deep + "}}").encode())
                assert answer.status_code == 400
                assert "nested deeper than 64 levels" in answer.json()["error"]
                await healthy(daemon)


class TestWebSocketProtocols:
    @pytest.mark.parametrize(("value", "words"), REFUSED)
    async def test_an_ahp_frame_the_gate_refuses_is_a_parse_error(
        self, tmp_path: Path, value: str, words: str
    ) -> None:
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with connect_ahp(daemon) as ahp:
                    await ahp.initialize()
                    await ahp.send(
                        '{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": '
                        + value
                        + "}}"
                    )
                    answer: dict[str, Any] = await ahp.receive()
                    assert answer["error"]["code"] == -32700
                    assert answer["error"]["message"].startswith("$.params.x: ")
                    assert words in answer["error"]["message"]
                    assert await ahp.request("ping", {"channel": ROOT}) is None
                await healthy(daemon)

    @pytest.mark.parametrize(("value", "words"), REFUSED)
    async def test_a_teammates_frame_the_gate_refuses_is_a_bad_request(
        self, tmp_path: Path, value: str, words: str
    ) -> None:
        with trio.fail_after(30):
            async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon:
                async with websocket(f"{daemon.ws_url}/teammates") as connection:
                    await connection.send_message('{"type": "list", "id": ' + value + "}")
                    answer = json.loads(await connection.get_message())
                    assert answer["code"] == "bad_request"
                    assert answer["message"].startswith("$.id: ")
                    assert words in answer["message"]
                await healthy(daemon)
