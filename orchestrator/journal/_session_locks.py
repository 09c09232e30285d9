"""Which process runs each session of a SQLite journal: one at a time.

Several processes may write one SQLite journal: three ``orchestrator run`` of different
sessions, a daemon and a ``run`` beside it. They must not run the *same* session: a daemon
that takes up a session an ``orchestrator resume`` is running (or a second daemon on the
file, or a second ``resume``) runs its turns again (a tool call runs twice), and the
slower one's next batch fails on the facts' unique key, ending its session there. A
PostgreSQL journal has leases for this (:mod:`._pg_leases`); a SQLite file, which lives on
one machine, has the kernel's record locks.

Each session is one byte of a lock file beside the journal (``<journal>-sessions.lock``),
at an offset hashed from its URI (56 bits: two URIs meet with odds of one in 2**56), locked
by the process that runs the session. The kernel lets go of a process's locks when it
ends, however it ends, so a crashed ``run`` frees its session at once: no expiry to wait
for, no stale owner to tell apart.

POSIX record locks belong to a process, not to a descriptor, and closing any descriptor of
the file lets go of all of them: so a process keeps one descriptor per lock file
(:data:`_FILES`), open while it holds a session of that file. Nor do they exclude each
other within a process, so the sessions this process holds are also kept here
(:data:`_HELD`): two :class:`SessionLocks` of one file in one process (a test's daemon and
its ``resume``) refuse each other as two processes would.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
from pathlib import Path

import attrs

from orchestrator.base import FactLogError

__all__ = ["SessionLocks", "lock_path"]

#: The lock file of each journal this process holds a session of (see the module docstring:
#: closed once it holds none), by its resolved path: its descriptor, and how many sessions
#: of it this process holds.
_FILES: dict[Path, _LockFile] = {}
#: (lock file, session URI) of every session this process holds.
_HELD: set[tuple[Path, str]] = set()
_GUARD = threading.Lock()  # the journal's threads and trio's both call in


@attrs.define
class _LockFile:
    descriptor: int
    held: int = 0


def lock_path(journal: Path) -> Path:
    """The lock file of the SQLite journal at ``journal``."""
    return journal.with_name(journal.name + "-sessions.lock")


def _offset(session: str) -> int:
    return int.from_bytes(hashlib.blake2b(session.encode(), digest_size=7).digest(), "big")


class SessionLocks:
    """The sessions of one SQLite journal that this process runs (see the module docstring)."""

    def __init__(self, journal: Path) -> None:
        self.path = lock_path(journal)
        self._file = self.path.resolve()  # one key however the journal's path is spelt
        self._held: set[str] = set()

    def acquire(self, session: str) -> bool:
        """Lock ``session`` for this process: True once it holds it (at once if it did);
        False if another process, or another holder in this one, runs it. Never waits.
        :class:`FactLogError` if the lock file cannot be opened."""
        with _GUARD:
            if session in self._held:
                return True
            if (self._file, session) in _HELD:
                return False
            lock_file = self._open()
            try:
                fcntl.lockf(
                    lock_file.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _offset(session)
                )
            except OSError as exc:
                self._close_if_unused(lock_file)
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    return False
                raise FactLogError(
                    f"cannot lock the session's byte of {self.path}: {exc.strerror}",
                    source=str(self.path),
                ) from exc
            _HELD.add((self._file, session))
            lock_file.held += 1
            self._held.add(session)
            return True

    def release(self, session: str) -> None:
        """Let go of ``session`` (nothing if this does not hold it)."""
        with _GUARD:
            if session not in self._held:
                return
            self._held.discard(session)
            _HELD.discard((self._file, session))
            lock_file = _FILES[self._file]
            lock_file.held -= 1
            if lock_file.held:
                fcntl.lockf(lock_file.descriptor, fcntl.LOCK_UN, 1, _offset(session))
            else:
                self._close_if_unused(lock_file)

    def holds(self, session: str) -> bool:
        return session in self._held

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def _open(self) -> _LockFile:
        lock_file = _FILES.get(self._file)
        if lock_file is None:
            try:
                descriptor = os.open(self._file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise FactLogError(
                    f"cannot open the journal's lock file {self.path}: {exc.strerror}",
                    source=str(self.path),
                ) from exc
            lock_file = _FILES[self._file] = _LockFile(descriptor)
        return lock_file

    def _close_if_unused(self, lock_file: _LockFile) -> None:
        """Close the file's descriptor once this process holds nothing of it: that lets go
        of its last lock too, and a long-lived process (a daemon, a test run) keeps no
        descriptor per journal it ever touched."""
        if not lock_file.held:
            del _FILES[self._file]
            os.close(lock_file.descriptor)
