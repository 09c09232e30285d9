"""The client side of ``orchestrator teammates`` (``cli/_teammates_client``): the daemon's
address, the token, and what is printed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from trio_websocket import ConnectionRejected

from orchestrator.base import ConfigError, redact_text
from orchestrator.cli._teammates_client import print_answer, read_token, rejection, teammates_url
from tests.support.examples import examples


@pytest.mark.daemon
async def test_the_cli_says_when_no_daemon_answers(tmp_path: Path) -> None:
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "teammates", "list", "--url", "http://127.0.0.1:9"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 3  # unavailable, not bad input
    assert b"no daemon answers at ws://127.0.0.1:9/teammates: all attempts" in done.stderr


@pytest.mark.daemon
@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:99999", "ftp://127.0.0.1:8765"])
async def test_an_address_that_is_not_one_is_a_usage_error(url: str) -> None:
    """``--url notaurl`` is bad input (exit 2, what was expected), not a daemon that is down
    (exit 3)."""
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "teammates", "list", "--url", url],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 2
    assert b"--url: expected the daemon's address, like http://127.0.0.1:8765" in (done.stderr)
    assert f"got {url!r}".encode() in done.stderr


class TestTeammatesUrl:
    @pytest.mark.parametrize(
        ("base", "url"),
        [
            ("http://127.0.0.1:8765", "ws://127.0.0.1:8765/teammates"),
            ("https://daemon.example", "wss://daemon.example/teammates"),
            ("ws://[::1]:9000/ignored?x=1", "ws://[::1]:9000/teammates"),
            ("wss://daemon.example:443", "wss://daemon.example:443/teammates"),
            ("127.0.0.1:8765", "ws://127.0.0.1:8765/teammates"),
            ("localhost:1", "ws://localhost:1/teammates"),
        ],
    )
    def test_an_address_becomes_the_teammates_socket(self, base: str, url: str) -> None:
        assert teammates_url(base) == url

    @pytest.mark.parametrize(
        "base", ["daemon", "ftp://host:21", "http://:8765", "host:99999", "host:port", ""]
    )
    def test_anything_else_is_refused_naming_the_option_and_what_it_got(self, base: str) -> None:
        with pytest.raises(ConfigError) as refused:
            teammates_url(base)
        assert str(refused.value) == (
            "--url: expected the daemon's address, like http://127.0.0.1:8765 or "
            f"127.0.0.1:8765; got {base!r}"
        )

    @settings(max_examples=examples(80))
    @given(
        st.sampled_from(["http", "https", "ws", "wss"]),
        st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5})?", fullmatch=True),
        st.integers(min_value=1, max_value=65535),
    )
    def test_the_socket_is_on_the_same_host_and_port_over_the_matching_scheme(
        self, scheme: str, host: str, port: int
    ) -> None:
        url = teammates_url(f"{scheme}://{host}:{port}")
        secure = scheme in ("https", "wss")
        assert url == f"{'wss' if secure else 'ws'}://{host}:{port}/teammates"


class TestReadToken:
    def test_the_file_wins_and_is_stripped(self, tmp_path: Path) -> None:
        token_file = tmp_path / "token"
        token_file.write_text("  file-token-0123456789\n")
        environ = {"ORCHESTRATOR_TOKEN": "env-token-0123456789"}
        assert read_token(token_file, environ) == "file-token-0123456789"
        assert read_token(None, environ) == "env-token-0123456789"
        assert read_token(None, {}) is None
        assert read_token(None, {"ORCHESTRATOR_TOKEN": ""}) is None

    def test_a_token_read_is_redacted_from_what_is_logged(self) -> None:
        token = "a-token-no-log-line-shows-0123"
        read_token(None, {"ORCHESTRATOR_TOKEN": token})
        assert token not in redact_text(f"sent {token}")

    def test_a_file_that_cannot_be_read_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError) as refused:
            read_token(tmp_path / "missing", {})
        assert str(refused.value) == (
            f"{tmp_path / 'missing'}: cannot read the token: No such file or directory"
        )


class TestRejection:
    def test_the_status_and_the_daemon_s_error(self) -> None:
        refused = ConnectionRejected(403, (), b'{"error": "victor may not pause"}')
        assert rejection(refused) == "HTTP 403: victor may not pause"

    @pytest.mark.parametrize("body", [None, b"", b"not json", b"[1]", b'{"other": 1}'])
    def test_a_body_without_an_error_leaves_the_status(self, body: bytes | None) -> None:
        assert rejection(ConnectionRejected(401, (), body)) == "HTTP 401"


def printed(command: str, answer: dict[str, Any], *, as_json: bool = False) -> str:
    out = io.StringIO()
    print_answer(command, answer, out, as_json=as_json)
    return out.getvalue()


POLLER = {
    "team": "slow",
    "name": "poller",
    "state": "sleeping",
    "schedule": "every 1d",
    "nextWake": "2026-12-08T03:00:00Z",
    "lastRun": {"outcome": "completed", "start": "s", "end": "2026-12-07T03:00:05Z"},
}


class TestPrintAnswer:
    def test_list_is_a_table_with_a_header(self) -> None:
        waking = {**POLLER, "name": "a-much-longer-name", "nextWake": None, "lastRun": None}
        running = {**POLLER, "lastRun": {"outcome": None, "start": "t0", "end": None}}
        said = printed("list", {"teammates": [POLLER, waking, running]}).splitlines()
        assert said[0].split() == ["TEAMMATE", "STATE", "SCHEDULE", "NEXT", "WAKE", "LAST", "RUN"]
        assert said[1].split("  ")[0] == "slow/poller"
        assert said[1].endswith("completed at 2026-12-07T03:00:05Z")
        assert said[2].startswith("slow/a-much-longer-name  sleeping")
        assert said[2].endswith("-")
        assert said[3].endswith("running at t0")
        columns = {line.index("sleeping") for line in said[1:]}
        assert columns == {said[0].index("STATE")}, "the columns line up"

    def test_nothing_to_list_or_no_run_yet_is_said(self) -> None:
        assert printed("list", {"teammates": []}) == (
            "no background teammates (add [[background]] to a team file)\n"
        )
        assert printed("history", {"teammate": "slow/poller", "runs": []}) == (
            "slow/poller has not run yet\n"
        )

    def test_history_is_a_table_of_runs(self) -> None:
        runs = [
            {"start": "t0", "end": "t1", "outcome": "failed", "reason": "wake", "session": "s1"},
            {"start": "t2", "end": None, "outcome": None, "reason": "trigger", "session": "s2"},
        ]
        said = printed("history", {"teammate": "slow/poller", "runs": runs}).splitlines()
        assert [line.split() for line in said] == [
            ["START", "END", "OUTCOME", "REASON", "SESSION"],
            ["t0", "t1", "failed", "wake", "s1"],
            ["t2", "-", "running", "trigger", "s2"],
        ]

    @pytest.mark.parametrize(
        ("command", "answer", "line"),
        [
            ("trigger", {"decision": "start"}, "slow/poller: a run started"),
            ("trigger", {"decision": "queue"}, "slow/poller: a run is going; this one runs after"),
            ("trigger", {"decision": "skip"}, "slow/poller: a run is going (overlap = skip): no"),
            ("pause", {"changed": True}, "slow/poller: paused"),
            ("pause", {"changed": False}, "slow/poller: was paused already"),
            ("resume", {"changed": False}, "slow/poller: was not paused"),
            ("stop", {"changed": True}, "slow/poller: run stopped"),
            ("stop", {"changed": False}, "slow/poller: no run was going"),
        ],
    )
    def test_a_command_s_outcome_is_one_line(
        self, command: str, answer: dict[str, Any], line: str
    ) -> None:
        teammate = {"team": "slow", "name": "poller"}
        said = printed(command, {**answer, "teammate": teammate})
        assert said.startswith(line)
        assert said.count("\n") == 1

    @pytest.mark.parametrize(
        ("command", "answer", "shown"),
        [
            ("list", {"teammates": [POLLER]}, [POLLER]),
            ("history", {"teammate": "slow/poller", "runs": []}, []),
            ("pause", {"teammate": {"team": "slow"}, "changed": True}, None),
        ],
    )
    def test_json_is_what_the_daemon_said(
        self, command: str, answer: dict[str, Any], shown: object
    ) -> None:
        assert json.loads(printed(command, answer, as_json=True)) == (
            answer if shown is None else shown
        )
