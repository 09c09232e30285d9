"""Where facts go before anyone sees them: the fact log interface and its file form.

The runtime appends every batch of facts to a :class:`FactLog` *before* it
changes shared state or tells a subscriber (the write-ahead rule). Two logs
live here: :class:`MemoryFactLog` (tests, benchmarks) and
:class:`JsonlFactLog`, the ``--facts FILE`` of ``orchestrator run``: one JSON
object per line, a batch written with one ``write`` and flushed to the kernel,
so a fact survives the process being killed once ``append`` returned (not a
power loss: the durable SQLite journal comes with the journal issue and takes
the same batches).

:func:`read_facts` reads such a file back, naming the line of any bad entry.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Protocol

from ._errors import FactLogError, PeerProtocolError
from ._facts import Fact
from ._facts_wire import fact_from_json, fact_to_json

__all__ = ["FactLog", "JsonlFactLog", "MemoryFactLog", "read_facts"]


class FactLog(Protocol):
    """Appends batches of facts atomically and in order."""

    async def append(self, facts: Sequence[Fact]) -> None:
        """Make ``facts`` durable (as this log defines it) before returning."""
        ...


class MemoryFactLog:
    """Keeps facts in a list: for tests and benchmarks."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []

    async def append(self, facts: Sequence[Fact]) -> None:
        self.facts.extend(facts)


class JsonlFactLog:
    """Writes facts as JSON Lines; each batch is one write, flushed before returning.

    The write is a plain buffered write of a few hundred bytes to the page
    cache, which does not block in practice, so it is done on the trio thread:
    handing each batch to a worker thread would cost more than the write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def open(self) -> None:
        try:
            self._file = self.path.open("w", encoding="utf-8")
        except OSError as exc:
            raise FactLogError(
                f"cannot open for writing: {exc.strerror}", source=str(self.path)
            ) from exc

    async def append(self, facts: Sequence[Fact]) -> None:
        if self._file is None:
            self.open()
        assert self._file is not None
        try:
            self._file.write("".join(fact_to_json(f) + "\n" for f in facts))
            self._file.flush()
        except OSError as exc:
            raise FactLogError(f"cannot write: {exc.strerror}", source=str(self.path)) from exc

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
        handle = Path(path).open(encoding="utf-8")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise FactLogError(f"cannot read: {exc.strerror}", source=source) from exc
    with handle:
        previous: Fact | None = None
        for number, line in enumerate(handle, start=1):
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
