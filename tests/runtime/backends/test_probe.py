"""``teams check`` probes the model servers a team uses: ``GET {base_url}/models``.

Against real servers on loopback: tests/support/fake_openai.py (the models list, 401, 503), a port
bound then closed (nothing listens), and a listener that takes connections and never answers
(under the autojump clock, so its timeout costs no time). Then the command itself, as a user
runs it: a subprocess, its output asserted line by line.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.runtime.backends import (
    PROBE_TIMEOUT,
    ModelServer,
    model_servers,
    probe_model_servers,
    served_models,
    serves_model,
)
from orchestrator.spec import TeamSpec, parse_team
from tests.support.fake_openai import Answer, Refusal, Stream, fake_openai, text
from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

KEY = "sk-probe-key-do-not-leak"

TEAM = """
[team]
name = "probed"
coordinator = "lead"

[openai]
model = "fake-model"
base_url = "{url}"
api_key_env = "FAKE_KEY"

[agents.lead]
role = "coordinator"
backend = "openai"
tools = ["delegate"]
delegates_to = ["writer"]

[agents.writer]
role = "writes"
backend = "openai"
model = "{writer_model}"
"""


def team_of(url: str, *, writer_model: str = "fake-model") -> TeamSpec:
    return parse_team(TEAM.format(url=url, writer_model=writer_model), file="probed.toml")


def closed_port() -> int:
    """A port of 127.0.0.1 where nothing listens: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def never(request: dict[str, Any]) -> Answer:
    raise AssertionError("a probe asks for no completion")


async def probe(team: TeamSpec, environ: dict[str, str]) -> list[str | None]:
    with trio.fail_after(30):
        return await probe_model_servers(model_servers(team, environ))


class TestModelServers:
    def test_agents_of_one_server_and_key_are_probed_together(self) -> None:
        team = team_of("http://127.0.0.1:9/v1", writer_model="other-model")
        [server] = model_servers(team, {"FAKE_KEY": KEY})
        assert server == ModelServer(
            base_url="http://127.0.0.1:9/v1",
            key_env="FAKE_KEY",
            key=KEY,
            headers={"authorization": f"Bearer {KEY}"},
            models=("fake-model", "other-model"),
            agents=("lead", "writer"),
        )
        assert KEY not in repr(server)

    def test_an_agent_without_its_key_for_the_hosted_api_is_not_probed(self) -> None:
        """That agent is warned about already (its key is not set)."""
        team = parse_team(
            TEAM.replace('base_url = "{url}"\n', "").format(writer_model="m"), file="t.toml"
        )
        assert model_servers(team, {}) == []


class TestProbe:
    async def test_a_server_that_lists_the_models_is_fine(self) -> None:
        async with fake_openai(never, models=["fake-model", "other"]) as server:
            assert await probe(team_of(server.url), {"FAKE_KEY": KEY}) == [None]
        [asked] = server.model_requests  # one request for both agents
        assert asked["authorization"] == f"Bearer {KEY}"

    async def test_nothing_listening_is_a_warning_naming_the_address(self) -> None:
        port = closed_port()
        [warning] = await probe(team_of(f"http://127.0.0.1:{port}/v1"), {})
        assert warning == (
            f"model server http://127.0.0.1:{port}/v1 (lead, writer): "
            f"nothing listens on 127.0.0.1:{port}"
        )

    async def test_a_refused_key_is_said_and_never_shown(self) -> None:
        refusal = Refusal(401, f"Incorrect API key provided: {KEY}")
        async with fake_openai(never, models=refusal) as server:
            [warning] = await probe(team_of(server.url), {"FAKE_KEY": KEY})
        assert warning == (
            f"model server {server.url} (lead, writer): the key in FAKE_KEY is refused "
            "(401 Unauthorized: Incorrect API key provided: [api key] (fake_error))"
        )

    async def test_a_server_that_wants_a_key_says_which_variable(self) -> None:
        async with fake_openai(never, models=Refusal(401, "no key")) as server:
            [warning] = await probe(team_of(server.url), {})
        assert warning == (
            f"model server {server.url} (lead, writer): it asks for a key "
            "(401 Unauthorized: no key (fake_error)): set FAKE_KEY"
        )
        assert "authorization" not in server.model_requests[0]

    async def test_an_error_answer_is_quoted(self) -> None:
        async with fake_openai(never, models=Refusal(503, "loading the model")) as server:
            [warning] = await probe(team_of(server.url), {})
        assert warning == (
            f"model server {server.url} (lead, writer): GET {server.url}/models: "
            "503 Service Unavailable: loading the model (fake_error)"
        )

    async def test_a_base_url_without_v1_is_suspected(self) -> None:
        async with fake_openai(never) as server:
            base = server.url.removesuffix("/v1")
            [warning] = await probe(team_of(base), {})
        assert warning is not None
        assert warning.startswith(f"model server {base} (lead, writer): GET {base}/models: 404")
        assert warning.endswith("(is base_url right? it often ends in /v1)")

    async def test_a_model_the_server_does_not_list_is_named(self) -> None:
        async with fake_openai(never, models=["llama3:8b", "qwen2.5:latest"]) as server:
            found = await probe(team_of(server.url, writer_model="qwen2.5"), {})
        assert found == [
            f"model server {server.url} (lead, writer): it does not list model 'fake-model' "
            "(it lists llama3:8b, qwen2.5:latest)"
        ]

    async def test_https_to_a_plain_http_server_is_said(self) -> None:
        async with fake_openai(never) as server:
            url = server.url.replace("http://", "https://")
            [warning] = await probe(team_of(url), {})
        port = url.split(":")[2].split("/")[0]
        assert warning == (
            f"model server {url} (lead, writer): TLS with 127.0.0.1:{port} failed "
            "(WRONG_VERSION_NUMBER): does it speak http://, not https://?"
        )

    async def test_servers_that_never_answer_are_probed_at_once_within_the_timeout(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Two silent servers take one timeout, not two: the probes run concurrently."""

        async def silent(stream: trio.SocketStream) -> None:
            await trio.sleep_forever()

        async with trio.open_nursery() as nursery:
            ports = []
            for _ in range(2):
                [listener] = await nursery.start(
                    functools.partial(trio.serve_tcp, silent, 0, host="127.0.0.1")
                )
                ports.append(listener.socket.getsockname()[1])
            servers = [
                ModelServer(
                    base_url=f"http://127.0.0.1:{port}/v1",
                    key_env="",
                    key="",
                    models=("m",),
                    agents=(f"agent{index}",),
                )
                for index, port in enumerate(ports)
            ]
            started = trio.current_time()
            found = await probe_model_servers(servers)
            assert trio.current_time() - started == pytest.approx(PROBE_TIMEOUT)
            nursery.cancel_scope.cancel()
        assert found == [
            f"model server http://127.0.0.1:{port}/v1 (agent{index}): 127.0.0.1:{port} took "
            f"the connection but did not answer within {PROBE_TIMEOUT:g} s"
            for index, port in enumerate(ports)
        ]


class TestModelsList:
    @pytest.mark.parametrize(
        ("body", "served"),
        [
            (b'{"object": "list", "data": [{"id": "a"}, {"id": "b:7b"}]}', ["a", "b:7b"]),
            (b'{"data": [{"id": "a"}, {"name": "b"}, "c", {"id": 3}]}', ["a"]),
            (b'{"data": []}', []),
            (b'{"models": ["a"]}', None),
            (b"<html>not json</html>", None),
            (b"[1, 2]", None),
        ],
    )
    def test_the_ids_listed(self, body: bytes, served: list[str] | None) -> None:
        assert served_models(body) == served

    @given(st.lists(st.text(st.characters(exclude_categories=["Cs"]))))
    def test_every_listed_id_is_read_back_in_order(self, ids: list[str]) -> None:
        """Whatever the ids (any text JSON escapes), the ids come back as listed, whatever
        else an entry holds, and each is served."""
        entries = [{"id": model, "created": index} for index, model in enumerate(ids)]
        body = json.dumps({"object": "list", "data": entries}).encode()
        served = served_models(body)
        assert served == ids
        assert all(serves_model(served, model) for model in ids)

    @pytest.mark.parametrize(
        ("model", "listed"),
        [("qwen2.5:7b", True), ("qwen2.5", False), ("llama3", True), ("llama3:8b", False)],
    )
    def test_a_name_without_a_tag_means_latest(self, model: str, listed: bool) -> None:
        """Ollama serves ``llama3`` as ``llama3:latest``."""
        assert serves_model(["qwen2.5:7b", "llama3:latest"], model) is listed


# ─── the command ─────────────────────────────────────────────────────────────


async def teams_check(
    *args: str, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(environ or {})
    with trio.fail_after(60):
        return await trio.run_process(
            [sys.executable, "-m", "orchestrator", "teams", "check", *args],
            env=env,
            cwd=PROJECT_ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


class TestTeamsCheck:
    async def test_a_refused_key_is_a_warning_and_the_exit_status_stays_0(
        self, tmp_path: Path
    ) -> None:
        team = tmp_path / "probed.toml"
        async with fake_openai(never, models=Refusal(401, "bad key")) as server:
            team.write_text(TEAM.format(url=server.url, writer_model="fake-model"))
            done = await teams_check(str(team), environ={"FAKE_KEY": KEY})
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().splitlines() == [
            f"ok: {team}",
            f"warning: {team}: model server {server.url} (lead, writer): the key in FAKE_KEY "
            "is refused (401 Unauthorized: bad key (fake_error))",
        ]

    async def test_the_shipped_team_on_a_local_server_that_is_not_running(self) -> None:
        """What the README's Ollama line leads to when Ollama is not started."""
        port = closed_port()
        shipped = "teams/openai-delivery.toml"
        done = await teams_check(
            shipped, "--json", environ={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        )
        assert done.returncode == 0, done.stderr.decode()
        [report] = json.loads(done.stdout)
        assert report["ok"] is True
        assert report["warnings"] == [
            f"model server http://127.0.0.1:{port}/v1 (lead, researcher): "
            f"nothing listens on 127.0.0.1:{port}"
        ]

    async def test_offline_sends_no_probe(self, tmp_path: Path) -> None:
        team = tmp_path / "probed.toml"
        async with fake_openai(lambda request: Stream(text("x")), models=[]) as server:
            team.write_text(TEAM.format(url=server.url, writer_model="fake-model"))
            done = await teams_check(str(team), "--offline")
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().splitlines() == [f"ok: {team}"]
        assert server.model_requests == []
