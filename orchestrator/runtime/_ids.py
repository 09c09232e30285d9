"""The ids of one run: sessions, chats and runs (UUIDs), tasks, turns, approvals (numbered).

Numbered ids are unique within a run, across the processes that take it up again after a
stop (see :class:`Ids`); ``deterministic=True`` makes every id reproducible, for tests and
examples.
"""

from __future__ import annotations

import itertools
import os
import uuid

__all__ = ["Ids"]


def uuid4_text(random: bytes) -> str:
    """``str(uuid.UUID(bytes=random, version=4))``, a third of the cost (a fan-out makes one
    per worker): the same bits set (version 4, the RFC 4122 variant), the same text."""
    value = int.from_bytes(random, "big")
    value = (value & ~(0xC000 << 48)) | (0x8000 << 48)
    value = (value & ~(0xF000 << 64)) | (4 << 76)
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


class Ids:
    """Makes the ids of one run; ``deterministic=True`` numbers them (tests, examples).

    ``restart`` is the number of the process taking an unfinished run up again (0 for the
    first): its numbered ids (``task-r1-1``) and deterministic UUIDs cannot meet the ones
    the earlier processes made.
    """

    def __init__(self, *, deterministic: bool = False, restart: int = 0) -> None:
        self._deterministic = deterministic
        self._restart = restart
        self._counters: dict[str, itertools.count[int]] = {}

    def _next(self, kind: str) -> int:
        counter = self._counters.get(kind)
        if counter is None:
            counter = self._counters[kind] = itertools.count(1)
        return next(counter)

    def _uuid(self, kind: str) -> str:
        if self._deterministic:
            return str(uuid.UUID(int=(self._restart << 64) | self._next(kind)))
        return uuid4_text(os.urandom(16))

    def session(self) -> str:
        return f"ahp-session:/{self._uuid('session')}"

    def chat(self) -> str:
        return f"ahp-chat:/{self._uuid('chat')}"

    def run(self) -> str:
        return f"run-{self._uuid('run')}"

    def numbered(self, kind: str) -> str:
        """``task-1``, ``turn-3``, ``approval-2``...: unique within the run."""
        if self._restart:
            return f"{kind}-r{self._restart}-{self._next(kind)}"
        return f"{kind}-{self._next(kind)}"
