"""systemd's notify protocol (``server/_sd_notify``): where to send, what is sent, the
watchdog's pace (the daemon under a fake systemd: tests/e2e/test_systemd.py)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog.testing
import trio
import trio.testing

from orchestrator.server._sd_notify import SystemdNotifier


class TestFromEnvironment:
    def test_not_under_systemd_nothing_is_sent(self) -> None:
        notifier = SystemdNotifier.from_environment({})
        assert (notifier.address, notifier.watchdog_usec) == (None, None)
        notifier.notify("READY=1")  # does nothing, raises nothing

    def test_a_path_is_kept_and_an_abstract_name_gets_its_nul(self) -> None:
        path = SystemdNotifier.from_environment({"NOTIFY_SOCKET": "/run/systemd/notify"})
        assert path.address == "/run/systemd/notify"
        abstract = SystemdNotifier.from_environment({"NOTIFY_SOCKET": "@/org/systemd/x"})
        assert abstract.address == "\0/org/systemd/x"
        assert SystemdNotifier.from_environment({"NOTIFY_SOCKET": ""}).address is None

    @pytest.mark.parametrize(
        ("environ", "usec"),
        [
            ({"WATCHDOG_USEC": "30000000"}, 30_000_000),
            ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30_000_000),
            ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # another process's
            ({"WATCHDOG_USEC": "soon"}, None),
            ({"WATCHDOG_USEC": "-5"}, None),
            ({}, None),
        ],
    )
    def test_the_watchdog_interval_is_this_process_s_only(
        self, environ: dict[str, str], usec: int | None
    ) -> None:
        notifier = SystemdNotifier.from_environment({"NOTIFY_SOCKET": "/x", **environ})
        assert notifier.watchdog_usec == usec


async def test_no_watchdog_interval_means_the_watchdog_returns_at_once() -> None:
    with trio.fail_after(1):
        await SystemdNotifier("/x", None).watchdog()
        await SystemdNotifier(None, 1_000_000).watchdog()


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[socket.socket]:
    """A datagram socket where systemd would listen."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify"))
        sock.setblocking(False)
        yield sock


def received(sock: socket.socket) -> list[str]:
    messages = []
    while True:
        try:
            messages.append(sock.recv(4096).decode())
        except BlockingIOError:
            return messages


@pytest.mark.daemon
class TestOnASocket:
    def test_each_message_is_one_datagram(self, systemd: socket.socket) -> None:
        notifier = SystemdNotifier(systemd.getsockname())
        notifier.notify("READY=1")
        notifier.notify("STATUS=serving 2 teams — é")
        assert received(systemd) == ["READY=1", "STATUS=serving 2 teams — é"]

    def test_a_socket_that_is_gone_is_logged_not_raised(self, tmp_path: Path) -> None:
        with structlog.testing.capture_logs() as logged:
            SystemdNotifier(str(tmp_path / "nobody")).notify("READY=1")
        (entry,) = logged
        assert entry["event"] == "systemd notification failed"
        assert entry["log_level"] == "warning"
        assert "No such file or directory" in entry["error"]

    async def test_the_watchdog_pings_at_half_the_interval(
        self, systemd: socket.socket, autojump_clock: trio.testing.MockClock
    ) -> None:
        notifier = SystemdNotifier(systemd.getsockname(), watchdog_usec=10_000_000)
        with trio.move_on_after(12):
            await notifier.watchdog()
        assert received(systemd) == ["WATCHDOG=1"] * 3  # at 0, 5 and 10 s
