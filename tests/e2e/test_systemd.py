"""The service as systemd runs it: the unit file verifies, and the daemon speaks the notify
protocol (READY, STATUS, WATCHDOG, STOPPING) on the socket systemd names."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.paths import PROJECT_ROOT

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

UNIT = PROJECT_ROOT / "systemd" / "orchestrator.service"
NODE_UNIT = PROJECT_ROOT / "systemd" / "orchestrator-node@.service"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_unit_file_verifies(tmp_path: Path) -> None:
    # verify checks that ExecStart's program exists: point it at this checkout's.
    program = Path(sys.executable).with_name("orchestrator")
    unit = tmp_path / "orchestrator.service"
    unit.write_text(
        UNIT.read_text().replace("/opt/orchestrator/.venv/bin/orchestrator", str(program))
    )
    result = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    problems = [
        line
        for line in result.stderr.splitlines()
        # A container without systemd as PID 1 cannot load the unit's dependencies; that is
        # the machine, not the file.
        if "orchestrator.service" in line
    ]
    assert problems == [], result.stderr
    text = UNIT.read_text()
    for setting in (
        "Type=notify",
        "DynamicUser=yes",
        "StateDirectory=orchestrator",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "WatchdogSec=",
    ):
        assert setting in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_cluster_node_template_verifies(tmp_path: Path) -> None:
    """The template unit of a cluster's node, as an instance (``@a``): it verifies, takes
    the database from its EnvironmentFile and the node's name from the instance, and gives
    a stop time that covers the hand-over."""
    program = Path(sys.executable).with_name("orchestrator")
    text = NODE_UNIT.read_text()
    instance = tmp_path / "orchestrator-node@a.service"
    instance.write_text(text.replace("/opt/orchestrator/.venv/bin/orchestrator", str(program)))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(instance)], capture_output=True, text=True, timeout=60
    )
    problems = [line for line in result.stderr.splitlines() if "orchestrator-node@" in line]
    assert problems == [], result.stderr
    (exec_start,) = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert "--db ${ORCHESTRATOR_DB}" in exec_start
    assert "--node %i" in exec_start
    for setting in (
        "EnvironmentFile=/etc/orchestrator/cluster.env",
        "KillSignal=SIGTERM",
        "TimeoutStopSec=30",
        "Restart=always",
        "Type=notify",
        "DynamicUser=yes",
        "ProtectSystem=strict",
    ):
        assert setting in text


def test_the_daemon_notifies_ready_watchdog_and_stopping(tmp_path: Path) -> None:
    # A socket path has a short limit (108 bytes): pytest's tmp_path can be longer.
    with (
        tempfile.TemporaryDirectory(prefix="sd-") as short,
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener,
    ):
        address = os.path.join(short, "notify")
        listener.bind(address)
        listener.settimeout(20)
        teams = tmp_path / "teams"
        teams.mkdir()
        shutil.copy(PROJECT_ROOT / "teams" / "delivery.toml", teams)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "serve",
                "--port",
                "0",
                "--teams",
                str(teams),
                "--db",
                str(tmp_path / "journal.db"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "NOTIFY_SOCKET": address, "WATCHDOG_USEC": "200000"},
        )
        try:
            messages: list[str] = []

            def until(prefix: str) -> str:
                while True:
                    message = listener.recv(4096).decode()
                    messages.append(message)
                    if message.startswith(prefix):
                        return message

            ready = until("READY=1")
            assert "STATUS=listening on http://127.0.0.1:" in ready
            until("WATCHDOG=1")
            began = time.monotonic()
            process.send_signal(signal.SIGTERM)
            until("STOPPING=1")
            assert process.wait(timeout=15) == 0
            assert time.monotonic() - began < 10
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
