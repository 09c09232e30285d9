"""systemd's notify protocol (``Type=notify``): READY, STOPPING, STATUS and the watchdog.

The protocol is one datagram per message to the socket named by ``$NOTIFY_SOCKET``; with no
such variable (not under systemd) every call does nothing.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

import structlog
import trio

__all__: list[str] = []

log = structlog.get_logger("orchestrator.systemd")


class SystemdNotifier:
    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        self.address = address
        self.watchdog_usec = watchdog_usec

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SystemdNotifier:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET") or None
        if address is not None and address.startswith("@"):
            address = "\0" + address[1:]  # an abstract socket
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        return cls(address, int(usec) if usec.isdigit() and mine else None)

    def notify(self, message: str) -> None:
        if self.address is None:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.connect(self.address)
                sock.sendall(message.encode("utf-8"))
        except OSError as exc:
            log.warning("systemd notification failed", error=str(exc))

    async def watchdog(self) -> None:
        """Tell systemd we are alive at half its watchdog interval (if it set one)."""
        if self.address is None or not self.watchdog_usec:
            return
        interval = self.watchdog_usec / 1_000_000 / 2
        while True:
            self.notify("WATCHDOG=1")
            await trio.sleep(interval)
