"""What the web view reads of a session, folded from its facts and kept between reads.

A session's Agent UI envelopes and its delegation graph are each a fold of its facts (see
:mod:`orchestrator.protocols._project_agentui` and :mod:`orchestrator.core._graph`). So they
can be kept and extended rather than made again. An entry holds a fold fed up to some fact,
and a read feeds it only the facts recorded since. A page that reconnects, or a second page on
the same session, costs what is new, not the whole log. For a 1,000-worker session's 18,000
facts, on a quiet machine:

- reading them from the journal takes about 2 s;
- folding them takes a fifth of that;
- answering from a kept fold takes a few milliseconds.

A live session keeps its envelopes in its own log (:mod:`._team_log`). The log starts from the
entry kept of the session, if any (:meth:`EnvelopeCache.take`). It is kept here when the
session stops being live (:meth:`EnvelopeCache.keep`). So a session taken up, put away and read
again is folded once, not once per reader or per take-up.

Entries are kept most recently read first, up to a capacity in the fold's own measure
(bytes of encoded envelopes; facts folded into a graph); the oldest go first. One read of
an entry at a time (its lock): the fold is fed, and read, in a worker thread, and never by
two at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, Protocol, TypeVar

import attrs
import trio

from orchestrator.core import DelegationGraph, Fact, to_json
from orchestrator.journal import JournalReader
from orchestrator.protocols import AgentUiProjector, envelope_to_json_line

__all__ = ["EnvelopeCache", "EnvelopeFold", "GraphCache", "SessionFolds"]

#: Bytes of encoded envelopes kept across sessions (about ten 1,000-worker sessions).
ENVELOPE_CAPACITY: Final = 64 * 1024 * 1024
#: Facts folded into the delegation graphs kept across sessions (about ten 1,000-worker
#: sessions of 18,000 facts: some 50 MB of networkx).
GRAPH_CAPACITY: Final = 200_000


class _Fold(Protocol):
    @property
    def last_sequence(self) -> int: ...

    @property
    def size(self) -> int: ...

    def feed(self, fact: Fact) -> None: ...


F = TypeVar("F", bound=_Fold)
T = TypeVar("T")


@attrs.define
class _Entry(Generic[F]):
    fold: F
    lock: trio.Lock = attrs.Factory(trio.Lock)


class SessionFolds(Generic[F]):
    """Folds of sessions' facts (``make(session)`` a new one), kept between reads."""

    def __init__(self, reader: JournalReader, make: Callable[[str], F], *, capacity: int) -> None:
        self._reader = reader
        self._make = make
        self._capacity = capacity
        self._entries: OrderedDict[str, _Entry[F]] = OrderedDict()

    @property
    def size(self) -> int:
        """What the kept folds hold, in their own measure."""
        return sum(entry.fold.size for entry in self._entries.values())

    async def read(self, session: str, look: Callable[[F], T]) -> T:
        """``look`` at ``session``'s fold once it is fed every fact recorded so far (both in
        a worker thread; what ``look`` returns must not share the fold's mutable parts)."""
        entry = self._entries.get(session)
        if entry is None:
            entry = self._entries[session] = _Entry(self._make(session))
        self._entries.move_to_end(session)
        async with entry.lock:
            seen = await trio.to_thread.run_sync(self._catch_up, session, entry.fold, look)
        self._evict(keep=session)
        return seen

    def _catch_up(self, session: str, fold: F, look: Callable[[F], T]) -> T:
        for fact in self._reader.facts(session, after=fold.last_sequence):
            fold.feed(fact)
        return look(fold)

    def _evict(self, *, keep: str) -> None:
        total = self.size
        for session in list(self._entries):
            if total <= self._capacity:
                return
            if session != keep:
                total -= self._entries.pop(session).fold.size


#: A session's envelopes so far: the projector that made them (folding its own state) and
#: their encoded lines, in order.
EnvelopeFold = tuple[AgentUiProjector, list[str]]


class _Envelopes:
    """A session's envelopes, each encoded as one JSON text, in order."""

    def __init__(self, session: str, kept: EnvelopeFold | None = None) -> None:
        self.projector, self.lines = kept if kept is not None else (AgentUiProjector(session), [])
        self.size = sum(len(line) for line in self.lines)

    @property
    def last_sequence(self) -> int:
        return self.projector.state.last_sequence

    def feed(self, fact: Fact) -> None:
        for envelope in self.projector.feed(fact):
            line = envelope_to_json_line(envelope)
            self.lines.append(line)
            self.size += len(line)


class _Graph:
    """A session's delegation graph."""

    def __init__(self, session: str) -> None:
        self.graph = DelegationGraph()
        self.size = 0  # facts folded: what a graph grows by, and cheap to count

    @property
    def last_sequence(self) -> int:
        return self.graph.last_sequence or 0

    def feed(self, fact: Fact) -> None:
        self.graph.apply(fact)
        self.size += 1


class EnvelopeCache(SessionFolds[_Envelopes]):
    """Sessions' Agent UI envelopes, projected and encoded, kept between reads."""

    def __init__(self, reader: JournalReader, *, capacity: int = ENVELOPE_CAPACITY) -> None:
        super().__init__(reader, _Envelopes, capacity=capacity)

    async def envelopes(self, session: str) -> list[str]:
        """Every envelope of ``session`` so far, each encoded as one JSON text, in order."""
        return await self.read(session, lambda fold: fold.lines[:])

    async def take(self, session: str) -> EnvelopeFold | None:
        """Hand over the fold kept of ``session`` (None if none is): a live session's log
        goes on from it instead of folding the session again. It is no longer kept here."""
        entry = self._entries.get(session)
        if entry is None:
            return None
        async with entry.lock:  # not while a read feeds it
            if self._entries.get(session) is not entry:
                return None
            del self._entries[session]
        return entry.fold.projector, entry.fold.lines


class GraphCache(SessionFolds[_Graph]):
    """Sessions' delegation graphs, kept between reads."""

    def __init__(self, reader: JournalReader, *, capacity: int = GRAPH_CAPACITY) -> None:
        super().__init__(reader, _Graph, capacity=capacity)

    async def graph_json(self, session: str) -> str:
        """``session``'s delegation graph so far as node-link JSON (``core.to_json``)."""
        return await self.read(session, lambda fold: to_json(fold.graph))
