"""Which process runs each session of a SQLite journal: one at a time.

Several processes may write one SQLite journal: three ``orchestrator run`` of different
sessions, a daemon and a ``run`` beside it. They must not run the *same* session. Say a daemon
takes up a session an ``orchestrator resume`` is running (or a second daemon on the file, or a
second ``resume`` does). It runs its turns again, so a tool call runs twice. The slower one's
next batch fails on the facts' unique key, ending its session there. A PostgreSQL journal has
leases for this (:mod:`.postgres._leases`). A SQLite file, which lives on one machine, has the
kernel's record locks.

Each session is one byte of a lock file beside the journal (``<journal>-sessions.lock``),
at an offset hashed from its URI (56 bits: two URIs meet with odds of one in 2**56), locked
by the process that runs the session. The kernel lets go of a process's locks when it
ends, however it ends, so a crashed ``run`` frees its session at once: no expiry to wait
for, no stale owner to tell apart.

POSIX record locks belong to a process, not to a descriptor. Closing any descriptor of the
file lets go of all of them. So a process keeps one descriptor per lock file (:data:`_FILES`),
open while it holds a session of that file. Nor do they exclude each other within a process.
So the sessions this process holds are also kept here (:data:`_HELD`). Two
:class:`SessionLocks` of one file in one process (a test's daemon and its ``resume``) refuse
each other as two processes would.

Who holds a session (:meth:`SessionLocks.holder`) is the kernel's word too: ``F_GETLK`` on
its byte names the process (its pid), and that process's command line says what it is
(``orchestrator run``, ``resume`` or ``serve``), read from ``/proc`` on Linux. Nothing is
stored for it, so nothing can go stale: a process that ends, however it ends, holds
nothing. A daemon asks this of the sessions it follows (it says who runs them).

:class:`SessionLocks` is the SQLite journal's :class:`~._ownership.SessionOwnership`: a lock
is never lost while it is held and never expires, so it is never renewed either.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import math
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from orchestrator.base import FactLogError

from ._ownership import HeldElsewhere, OwnershipStatistics, default_node

__all__ = ["Holder", "SessionLocks", "lock_path"]

#: The commands whose process may hold a session (what :class:`Holder` names).
_COMMANDS: Final = ("run", "resume", "serve")

#: The lock file of each journal this process holds a session of (see the module docstring:
#: closed once it holds none), by its resolved path: its descriptor, and how many sessions
#: of it this process holds.
_FILES: dict[Path, _LockFile] = {}
#: (lock file, session URI) of every session this process holds.
_HELD: set[tuple[Path, str]] = set()
_GUARD = threading.Lock()  # the journal's threads and trio's both call in
#: Seconds between two tries to take a session another process holds, for a node that waits
#: for it (a background teammate's stream another daemon on the file runs).
RETRY_EVERY: Final = 1.0


@attrs.define
class _LockFile:
    descriptor: int
    held: int = 0


@attrs.frozen(kw_only=True)
class Holder:
    """The process that holds a session: its pid (None where the kernel does not say: not
    Linux, or another pid namespace) and its command (``"orchestrator run"``; None when
    its command line cannot be read or is not the orchestrator's)."""

    pid: int | None
    program: str | None

    def __str__(self) -> str:
        r"""``\`orchestrator run\`, pid 4242`` (as far as it is known)."""
        named = f"`{self.program}`" if self.program is not None else None
        pid = f"pid {self.pid}" if self.pid is not None else None
        return ", ".join(part for part in (named, pid) if part) or "another process"

    def to_json(self) -> dict[str, object]:
        return {"program": self.program, "pid": self.pid}


class _Flock(ctypes.Structure):
    """Linux's ``struct flock`` on a 64-bit machine (what ``F_GETLK`` fills in)."""

    _fields_ = (
        ("l_type", ctypes.c_short),
        ("l_whence", ctypes.c_short),
        ("l_start", ctypes.c_int64),
        ("l_len", ctypes.c_int64),
        ("l_pid", ctypes.c_int32),
    )


#: Whether ``F_GETLK`` answers with :class:`_Flock`'s layout here (elsewhere a holder's pid
#: is not asked for: its lock is still seen, by a lock attempt).
_GETLK: Final = sys.platform == "linux" and ctypes.sizeof(ctypes.c_void_p) == 8


def _locker(descriptor: int, offset: int) -> int | None:
    """The pid of the process that holds byte ``offset`` of the lock file (0: one does, its
    pid not known here), None when it is free."""
    if not _GETLK:
        try:  # a lock this process can take is free (it lets go at once)
            fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return 0
            raise
        fcntl.lockf(descriptor, fcntl.LOCK_UN, 1, offset)
        return None
    query = _Flock(l_type=fcntl.F_WRLCK, l_whence=os.SEEK_SET, l_start=offset, l_len=1)
    answer = _Flock.from_buffer_copy(fcntl.fcntl(descriptor, fcntl.F_GETLK, bytes(query)))
    if answer.l_type == fcntl.F_UNLCK:
        return None
    return max(int(answer.l_pid), 0)


def program_of(pid: int) -> str | None:
    """What process ``pid`` runs, when it is the orchestrator: ``"orchestrator run"`` (its
    command), ``"orchestrator"`` (another); None when it is not, or it cannot be told
    (not Linux, the process is gone). Only these words are ever returned, never what else
    its command line holds (a prompt, a path)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read(64 * 1024).split(b"\0")
    except OSError:
        return None
    return command_of([word.decode("utf-8", "replace") for word in argv])


def command_of(argv: Sequence[str]) -> str | None:
    """What the command line ``argv`` runs, when it is the orchestrator (see :func:`program_of`).

    That is the first word named ``orchestrator`` (its console script, or ``python -m
    orchestrator``), then its command. The command is the first word after it that is one. No
    option's value is a command: they are levels and formats."""
    for index, word in enumerate(argv):
        if os.path.basename(word) == "orchestrator":
            command = next((w for w in argv[index + 1 :] if w in _COMMANDS), None)
            return "orchestrator" if command is None else f"orchestrator {command}"
    return None


def lock_path(journal: Path) -> Path:
    """The lock file of the SQLite journal at ``journal``."""
    return journal.with_name(journal.name + "-sessions.lock")


def _offset(session: str) -> int:
    return int.from_bytes(hashlib.blake2b(session.encode(), digest_size=7).digest(), "big")


class SessionLocks:
    """The sessions of one SQLite journal that this process runs (see the module docstring);
    ``node`` names this process (default ``HOSTNAME:PID``)."""

    renew_every = math.inf
    ttl = math.inf
    retry_every = RETRY_EVERY

    def __init__(self, journal: Path, *, node: str | None = None) -> None:
        self.journal = Path(journal)
        self.path = lock_path(journal)
        self.node = node or default_node()
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

    def claim(self, session: str, *, replacing: str = "") -> HeldElsewhere | None:
        """:meth:`acquire`, saying who holds ``session`` when it is refused (a lock of a
        process that died is free already: ``replacing`` changes nothing)."""
        if self.acquire(session):
            return None
        return HeldElsewhere(
            owner="another process",
            description=(
                f"is being run by another process on {self.journal} (a daemon, or another "
                "`orchestrator run` or `resume`)"
            ),
        )

    def release(self, session: str, *, keep: bool = False) -> None:
        """Let go of ``session`` (nothing if this does not hold it). ``keep`` changes
        nothing: a process that wants it takes it up as soon as it asks."""
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

    def holder(self, session: str) -> Holder | None:
        """The process that runs ``session``, when it is not this holder: another process
        (its pid from the kernel), or this one through another holder; None when nobody
        holds it, or this holder does. Never waits. :class:`FactLogError` if the lock file
        cannot be read."""
        with _GUARD:
            if session in self._held:
                return None
            if (self._file, session) in _HELD:
                return Holder(pid=os.getpid(), program=program_of(os.getpid()))
            # This process's own descriptor if it has one: closing another descriptor of
            # the file would let go of every lock this process holds on it.
            lock_file = _FILES.get(self._file)
            try:
                if lock_file is not None:
                    pid = _locker(lock_file.descriptor, _offset(session))
                else:
                    pid = self._ask_unopened(session)
            except OSError as exc:
                raise FactLogError(
                    f"cannot read the session's lock in {self.path}: {exc.strerror}",
                    source=str(self.path),
                ) from exc
        if pid is None:
            return None
        known = pid or None
        return Holder(pid=known, program=None if known is None else program_of(known))

    def _ask_unopened(self, session: str) -> int | None:
        """:func:`_locker` through a descriptor of its own (this process holds nothing of
        the file, so closing it lets go of nothing); None if there is no lock file yet."""
        try:
            descriptor = os.open(self._file, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            return _locker(descriptor, _offset(session))
        finally:
            os.close(descriptor)

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def drop_unused(self, session: str) -> None:
        self.release(session)

    def renew(self) -> list[str]:
        return []  # a lock lasts as long as its process

    def expired(self) -> list[str]:
        return []  # a process that ended let go of its locks: nothing to take over

    def forget(self, session: str, *, why: str) -> None:
        self.release(session)

    def lost_error(self, session: str) -> FactLogError:
        return FactLogError(
            f"session {session} is not locked to this process any more", source=str(self.path)
        )

    def epoch(self, session: str) -> int | None:
        return None  # the file's writes are not fenced: one process runs each session

    def statistics(self) -> OwnershipStatistics:
        return OwnershipStatistics(node=self.node, held=len(self._held), lost=0)

    def close(self) -> None:
        pass  # the lock file closes once nothing of it is held

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
