"""The daemon's limits on sessions and connections, met by real clients on loopback."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from trio_websocket import ConnectionRejected

from orchestrator.server import Role, ServeConfig, Token
from orchestrator.sessions import Limits
from tests.support.ahp_client import connect_ahp
from tests.support.daemon import RunningDaemon, connect, running_daemon, websocket
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


ALICE, BOB = "alice-operator-token-0123", "bob-operator-token-01234"
TWO_OPERATORS = ServeConfig(
    tokens=(
        Token(name="alice", role=Role.OPERATOR, secret=ALICE),
        Token(name="bob", role=Role.OPERATOR, secret=BOB),
    ),
    limits=Limits(shutdown_grace=0.5, max_unprompted_per_token=2),
)


async def refused_at(daemon: RunningDaemon, path: str, token: str | None) -> tuple[int, Any]:
    """The status and JSON body of a refused WebSocket handshake on ``path``."""
    with pytest.raises(ConnectionRejected) as rejection:
        async with websocket(f"{daemon.ws_url}{path}", token=token):
            pass
    status, body = rejection.value.status_code, rejection.value.body or b""
    del rejection
    gc.collect()  # trio-websocket leaves the refused socket to the collector
    return status, json.loads(body)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
class TestLimits:
    async def test_a_token_holds_a_few_sessions_without_a_prompt(self, tmp_path: Path) -> None:
        """The next /ws?team= of that token is refused (429, naming the limit); another
        token is served; a prompt frees the place."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=TWO_OPERATORS) as daemon,
            connect(daemon, token=ALICE) as first,
            connect(daemon, token=ALICE) as second,
        ):
            await first.until_type("init")
            await second.until_type("init")
            status, body = await refused_at(daemon, "/ws", ALICE)
            assert status == 429
            assert body["limit"] == "max_unprompted_per_token"
            assert "alice holds 2 sessions with no prompt yet" in body["error"]
            async with connect(daemon, token=BOB) as other:
                await other.until_type("init")
            await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await first.until_type("done")
            async with connect(daemon, token=ALICE) as third:
                await third.until_type("init")

    async def test_connections_beyond_max_connections_are_refused_503(self, tmp_path: Path) -> None:
        """Every long-lived endpoint refuses one more with a JSON reason; /healthz and
        /metrics answer; a place freed is taken again."""
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_connections=2))
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            daemon.http() as http,
            connect(daemon) as first,
        ):
            await first.until_type("init")
            async with connect_ahp(daemon) as ahp:
                await ahp.initialize()
                for path in ("/ws", "/ahp", "/teammates"):
                    status, body = await refused_at(daemon, path, None)
                    assert (status, path) == (503, path)
                    assert "its limit (max_connections)" in body["error"]
                agui = await http.post("/agui?team=echo", json={"threadId": "t"})
                assert agui.status_code == 503
                assert "max_connections" in agui.json()["error"]
                assert (await http.get("/healthz")).status_code == 200
                assert (await http.get("/metrics")).status_code == 200
                await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
                await first.until_type("done")  # those connected are served on
            async with connect(daemon) as again:
                await again.until_type("init")

    async def test_no_session_is_opened_beyond_max_sessions(self, tmp_path: Path) -> None:
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_sessions=1))
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            connect(daemon) as first,
        ):
            await first.until_type("init")
            status, body = await refused_at(daemon, "/ws", None)
            assert status == 503
            assert body["limit"] == "max_sessions"
            await first.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await first.until_type("done")
