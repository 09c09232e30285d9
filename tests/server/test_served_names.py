"""The names the daemon answers to (DNS rebinding): the rule as a pure function, the
``server_names`` key, and a real daemon on loopback sent exactly what a rebinding browser
sends, on HTTP and on each WebSocket endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import trio
import wsproto
import wsproto.events
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import ConfigError
from orchestrator.server import ServeConfig, host_name, is_served, parse_serve_config
from tests.support.daemon import RunningDaemon, running_daemon
from tests.support.teams import ECHO

TEAMS = {"echo": ECHO}


class TestRule:
    @pytest.mark.parametrize(
        "host",
        [
            "127.0.0.1:8765",
            "127.0.0.1",
            "127.9.9.9:1",
            "[::1]:8765",
            "[::1]",
            "localhost:8765",
            "LOCALHOST",
            "app.localhost:5173",
            "192.168.1.20:8765",  # an IP literal is never a rebinding name
            "[2001:db8::1]:443",
        ],
    )
    def test_ip_literals_and_localhost_are_always_answered(self, host: str) -> None:
        assert is_served(host, frozenset())

    @pytest.mark.parametrize(
        "host",
        [
            "evil.example:8765",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "localhost:notaport",
            "[::1",
            "[::1]x",
            "::1",  # an IPv6 literal must be bracketed in Host
            "",
            "evil.example:8765:1",
        ],
    )
    def test_other_names_are_refused(self, host: str) -> None:
        assert not is_served(host, frozenset())

    def test_configured_names_are_answered_in_any_case_and_port(self) -> None:
        names = frozenset({"orch.example.com"})
        assert is_served("Orch.Example.COM:443", names)
        assert is_served("orch.example.com", names)
        assert not is_served("evil.example", names)
        assert is_served("evil.example", frozenset({"*"}))

    def test_no_host_header_is_not_a_browser(self) -> None:
        assert is_served(None, frozenset())

    @given(st.text(max_size=80))
    def test_any_host_text_is_judged_without_error(self, host: str) -> None:
        name = host_name(host)
        assert name is None or name == name.lower()
        assert is_served(host, frozenset({"orch.example.com"})) in (True, False)


class TestConfig:
    def _parse(self, value: object) -> ServeConfig:
        return parse_serve_config({"server_names": value}, file="daemon.toml", environ={})

    def test_names_are_kept_in_lower_case(self) -> None:
        config = self._parse(["Orch.Example.com", "*"])
        assert config.server_names == ("orch.example.com", "*")

    @pytest.mark.parametrize(
        ("value", "key"),
        [
            ("orch.example.com", "server_names"),
            ([""], "server_names[0]"),
            (["ok.example", "http://orch.example.com"], "server_names[1]"),
            (["orch.example.com:8765"], "server_names[0]"),
            ([3], "server_names[0]"),
            (["a..b"], "server_names[0]"),
        ],
    )
    def test_a_bad_name_is_refused_naming_it(self, value: object, key: str) -> None:
        with pytest.raises(ConfigError) as refused:
            self._parse(value)
        assert refused.value.key_path == key

    def test_a_bind_host_that_is_a_name_is_served(self) -> None:
        assert ServeConfig(host="orch.internal").served_names == ("orch.internal",)
        assert ServeConfig(host="0.0.0.0", server_names=("a.example",)).served_names == (
            "a.example",
        )
        assert ServeConfig().served_names == ()


async def _handshake(daemon: RunningDaemon, target: str, host: str) -> int:
    """The status a WebSocket handshake for ``target`` gets when it says ``Host: host`` and
    comes from the page of that name (what a rebinding browser sends); 101 if accepted."""
    port = int(daemon.url.rsplit(":", 1)[1])
    client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        request = wsproto.events.Request(
            host=host, target=target, extra_headers=[(b"origin", f"http://{host}".encode())]
        )
        await stream.send_all(client.send(request))
        with trio.fail_after(10):
            while True:
                data = await stream.receive_some()
                client.receive_data(data or None)
                for event in client.events():
                    if isinstance(event, wsproto.events.AcceptConnection):
                        return 101
                    if isinstance(event, wsproto.events.RejectConnection):
                        return event.status_code
                if not data:
                    raise AssertionError("the daemon closed the handshake without an answer")


@pytest.mark.daemon
class TestRebindingBrowser:
    """A page at ``http://attacker.test:PORT`` whose name now resolves to 127.0.0.1."""

    async def test_it_is_refused_on_every_route_and_changes_nothing(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams=TEAMS) as daemon,
            httpx.AsyncClient(base_url=daemon.url, timeout=10) as http,
        ):
            port = daemon.url.rsplit(":", 1)[1]
            attacker = f"attacker.test:{port}"
            page = {"host": attacker}  # a same-origin GET carries no Origin
            posting = {"host": attacker, "origin": f"http://{attacker}"}
            for path in ("/api/me", "/api/sessions", "/metrics", "/", "/healthz"):
                answer = await http.get(path, headers=page)
                assert answer.status_code == 421, path
                assert "attacker.test" in answer.json()["error"]
                assert "server_names" in answer.json()["error"]
            agui = await http.post("/agui", headers=posting, content=b"{}")
            assert agui.status_code == 421
            for target in ("/ws?team=echo", "/ahp", "/teammates"):
                assert await _handshake(daemon, target, attacker) == 421, target
            # Nothing was opened: the daemon's own page still sees no session.
            sessions = await http.get("/api/sessions")
            assert sessions.status_code == 200
            assert sessions.json()["sessions"] == []

    async def test_the_daemons_own_names_are_answered(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams=TEAMS) as daemon,
            httpx.AsyncClient(base_url=daemon.url, timeout=10) as http,
        ):
            port = daemon.url.rsplit(":", 1)[1]
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
                answer = await http.get(
                    "/api/me", headers={"host": host, "origin": f"http://{host}"}
                )
                assert answer.status_code == 200, host
                assert await _handshake(daemon, "/teammates", host) == 101, host

    async def test_a_configured_name_is_answered(self, tmp_path: Path) -> None:
        config = ServeConfig(server_names=("orch.test",))
        async with (
            running_daemon(tmp_path, teams=TEAMS, config=config) as daemon,
            httpx.AsyncClient(base_url=daemon.url, timeout=10) as http,
        ):
            port = daemon.url.rsplit(":", 1)[1]
            named = f"orch.test:{port}"
            answer = await http.get("/api/me", headers={"host": named})
            assert answer.status_code == 200
            assert json.loads(answer.text)["name"] == "local"
            assert await _handshake(daemon, "/teammates", named) == 101
            refused = await http.get("/api/me", headers={"host": f"other.test:{port}"})
            assert refused.status_code == 421
