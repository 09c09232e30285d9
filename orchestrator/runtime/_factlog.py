"""Where facts go before anyone sees them: the fact log interface and its simple forms.

The runtime hands every batch of facts to a :class:`FactLog` *before* it changes shared
state or tells a subscriber (the write-ahead rule). :meth:`FactLog.submit` takes the batch at
once, in order, and returns a :class:`Ticket` that completes when the batch is durable (as
that log defines it) or failed. Submitting is synchronous so that the order of batches is the
order of submission; waiting is separate so that a log which writes in the background (the
SQLite journal) can commit many batches in one transaction.

Contract:

- tickets complete in submission order;
- once a batch fails, every batch of its session submitted after it fails too (it was
  prepared on top of facts that never became durable);
- later submissions of that session raise :class:`~orchestrator.FactLogError` at once.

A log that fails as a whole (a full disk) does so for every session. One that can tell (the
SQLite journal) fails only the session whose batch it could not store.

Two logs live here:

- :class:`MemoryFactLog` (tests, benchmarks);
- :class:`JsonlFactLog`, the ``--facts FILE`` of ``orchestrator run``. It writes one JSON
  object per line. A batch is written with one ``write`` and flushed to the kernel before its
  ticket completes. So a fact survives the process being killed once acknowledged. It does not
  survive a power loss: that is the SQLite journal's job.

:func:`read_facts` reads such a file back, naming the line of any bad entry.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, Protocol

import trio

from orchestrator.ahp.state import Turn
from orchestrator.base import FactLogError, PeerProtocolError
from orchestrator.core import Fact, fact_from_json, fact_to_json

if TYPE_CHECKING:
    from orchestrator.core import TeamState

__all__ = [
    "DoneTicket",
    "EventTicket",
    "FactLog",
    "JsonlFactLog",
    "MemoryFactLog",
    "Ticket",
    "read_facts",
]


class Ticket(Protocol):
    """The pending outcome of one submitted batch."""

    @property
    def error(self) -> FactLogError | None:
        """Why the batch failed, once it has; None while pending or when it succeeded."""
        ...

    def done(self) -> bool:
        """Whether the batch is durable or has failed."""
        ...

    async def wait(self) -> None:
        """Return once :meth:`done` (a checkpoint only if it has to wait).

        Not cancellable, as if shielded: a submitted batch is never abandoned by its waiter.
        A cancellation that arrives meanwhile is delivered at the caller's next checkpoint.
        """
        ...


class DoneTicket:
    """A ticket of a log that writes synchronously: complete from the start."""

    def __init__(self, error: FactLogError | None = None) -> None:
        self._error = error

    @property
    def error(self) -> FactLogError | None:
        return self._error

    def done(self) -> bool:
        return True

    async def wait(self) -> None:
        return None


#: The ticket of every batch a synchronous log took (a done ticket without error is a value).
_DONE: Final = DoneTicket()


def _cannot_abort(_: object) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED


class EventTicket:
    """A ticket completed later, from the trio thread, by :meth:`complete`.

    Its waiters park on trio's lowlevel wait and refuse to be aborted. That is the
    uncancellable wait the :class:`Ticket` contract asks, without a shielded cancel scope and
    a ``trio.Event`` per batch. The journal makes one ticket per batch, seven per fan-out
    worker, and a scope costs more than the rest of the wait.
    """

    def __init__(self) -> None:
        self._done = False
        self._error: FactLogError | None = None
        self._waiters: list[trio.lowlevel.Task] = []

    @property
    def error(self) -> FactLogError | None:
        return self._error

    def done(self) -> bool:
        return self._done

    def complete(self, error: FactLogError | None = None) -> None:
        self._error = error
        self._done = True
        waiters, self._waiters = self._waiters, []
        for task in waiters:
            trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        if self._done:
            return
        self._waiters.append(trio.lowlevel.current_task())
        await trio.lowlevel.wait_task_rescheduled(_cannot_abort)


class FactLog(Protocol):
    """Takes batches of facts, in order, and makes each durable as a whole or not at all."""

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        """Take ``facts`` (one batch); raises :class:`FactLogError` if the log is broken.

        ``ended_turns``: turns the batch ends, each as the fact at that position in ``facts``
        left it (what the runtime reduced anyway). So a log keeping finished turns need not
        fold them from their facts again. A turn not given there is folded.
        """
        ...

    def describe(self, session: str, *, team_file: str, team_toml: str) -> None:
        """Keep where a session's team came from (a journal resumes sessions with it)."""
        ...

    def committed(self, state: TeamState) -> None:
        """The runtime committed facts up to ``state.last_sequence`` (a journal snapshots)."""
        ...


class _KeepsNothingElse:
    """For logs that keep facts only: the team and the state are not theirs to keep."""

    def describe(self, session: str, *, team_file: str, team_toml: str) -> None:
        return None

    def committed(self, state: TeamState) -> None:
        return None


class MemoryFactLog(_KeepsNothingElse):
    """Keeps facts in a list: for tests and benchmarks."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        self.facts.extend(facts)
        return _DONE


class JsonlFactLog(_KeepsNothingElse):
    """Writes facts as JSON Lines; each batch is one write, flushed before its ticket is done.

    The write is a plain buffered write of a few hundred bytes to the page cache. It does not
    block in practice, so it is done on the trio thread. Handing each batch to a worker thread
    would cost more than the write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None
        self._failed: FactLogError | None = None

    def open(self) -> None:
        try:
            self._file = self.path.open("w", encoding="utf-8")
        except OSError as exc:
            raise FactLogError(
                f"cannot open for writing: {exc.strerror}", source=str(self.path)
            ) from exc

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        if self._failed is not None:
            raise self._failed
        if self._file is None:
            self.open()
        assert self._file is not None
        try:
            self._file.write("".join(fact_to_json(f) + "\n" for f in facts))
            self._file.flush()
        except OSError as exc:
            self._failed = FactLogError(f"cannot write: {exc.strerror}", source=str(self.path))
            raise self._failed from exc
        return DoneTicket()

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


def read_facts(path: str | Path) -> Iterator[Fact]:
    """Facts of a JSON Lines file in order; :class:`FactLogError` names a bad line."""
    source = str(path)
    try:
        handle = Path(path).open("rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise FactLogError(f"cannot read: {exc.strerror}", source=source) from exc
    with handle:
        previous: Fact | None = None
        # Bytes, decoded a line at a time: a file that is not UTF-8 (a journal given as a
        # fact file, a damaged copy) is refused naming the line, not with a traceback.
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FactLogError(
                    f"byte {exc.start + 1} of the line is not UTF-8: not a fact file",
                    source=source,
                    line=number,
                ) from exc
            if not line.strip():
                continue
            try:
                fact = fact_from_json(line)
            except PeerProtocolError as exc:
                raise FactLogError(
                    f"{exc.path}: {exc.message}", source=source, line=number
                ) from exc
            if (
                previous is not None
                and fact.session == previous.session
                and fact.sequence != previous.sequence + 1
            ):
                raise FactLogError(
                    f"sequence {fact.sequence} follows {previous.sequence}: facts are missing "
                    "or out of order",
                    source=source,
                    line=number,
                )
            previous = fact
            yield fact
