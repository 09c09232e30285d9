"""``orchestrator serve`` and ``teammates`` (``cli/_serve_command``): where the running daemon
is, the options checked before anything listens, and serve run as a user runs it, up to where
the daemon would listen."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.base import ConfigError
from orchestrator.cli._main import build_parser
from orchestrator.cli._serve_command import daemon_base, serve


@pytest.mark.daemon
class TestBadInput:
    def test_serve_without_team_files_says_what_to_do(self, tmp_path: Path) -> None:
        """In a directory without ``teams/`` (or with an empty one): exit 2, said once, with
        the way out (``--teams DIR`` or ``orchestrator init``), before anything listens."""
        serve = [sys.executable, "-m", "orchestrator", "serve", "--log-format", "console"]
        done = subprocess.run(
            [*serve, "--db", str(tmp_path / "j.db"), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "orchestrator: teams: not a directory of team files: name the directory of your "
            "team files with --teams DIR (or `teams =` in the config file), or run "
            "`orchestrator init` to write starter teams there\n"
        )
        (tmp_path / "empty").mkdir()
        done = subprocess.run(
            [*serve, "--db", str(tmp_path / "j.db"), "--port", "0", "--teams", "empty"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "orchestrator: empty: teams: no team files (*.toml) here: run "
            "`orchestrator init empty` to write starter teams\n"
        )


class TestDaemonBase:
    def test_the_default_daemon_is_on_loopback_at_the_default_port(self) -> None:
        args = build_parser().parse_args(["teammates", "list"])
        assert daemon_base(args) == "http://127.0.0.1:8765"

    def test_url_wins_over_the_config(self, tmp_path: Path) -> None:
        config = tmp_path / "daemon.toml"
        config.write_text('host = "10.1.2.3"\nport = 9000\n')
        argv = ["teammates", "list", "--config", str(config), "--url", "http://d.example:1"]
        assert daemon_base(build_parser().parse_args(argv)) == "http://d.example:1"

    @pytest.mark.parametrize(
        ("host", "base"),
        [
            ("10.1.2.3", "http://10.1.2.3:9000"),
            ("0.0.0.0", "http://127.0.0.1:9000"),  # every address: this machine's is one
            ("::", "http://127.0.0.1:9000"),
            ("::1", "http://[::1]:9000"),
        ],
    )
    def test_the_config_s_host_and_port_are_where_to_ask(
        self, tmp_path: Path, host: str, base: str
    ) -> None:
        config = tmp_path / "daemon.toml"
        config.write_text(f'host = "{host}"\nport = 9000\n')
        args = build_parser().parse_args(["teammates", "list", "--config", str(config)])
        assert daemon_base(args) == base


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--port", "70000"], "--port: expected a port number from 0 to 65535"),
        (["--port", "-1"], "--port: expected a port number from 0 to 65535"),
        (["--node", ""], "--node: expected 1 to 200 characters"),
        (["--node", "n" * 201], "--node: expected 1 to 200 characters"),
    ],
)
def test_serve_s_options_are_checked_before_anything_starts(
    tmp_path: Path, option: list[str], message: str
) -> None:
    args = build_parser().parse_args(["serve", "--db", str(tmp_path / "j.db"), *option])
    with pytest.raises(ConfigError) as refused:
        serve(args, io.StringIO())
    assert str(refused.value) == message
    assert not (tmp_path / "j.db").exists()
