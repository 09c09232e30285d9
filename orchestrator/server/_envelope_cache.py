"""The Agent UI envelopes of sessions the web view reads, kept projected between reads.

A session's envelopes are a function of its facts (see
:mod:`orchestrator.protocols._project_agentui`), so they can be kept and extended rather than
made again: each entry holds a projector fed up to some fact and the envelopes it made, as
encoded JSON. A read feeds it only the facts recorded since, so a page that reconnects, or a
second page on the same session, costs what is new, not the whole log (a 1,000-worker
session is 18,000 facts and 9,000 envelopes: about 2 s to read and project from scratch).

Entries are kept most recently read first, up to :data:`CAPACITY` bytes of encoded
envelopes; the oldest go first. One read of an entry at a time (its lock): the projector is
fed in a worker thread and is never touched by two at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

import attrs
import trio

from orchestrator.journal import JournalReader
from orchestrator.protocols import AgentUiProjector, envelope_to_json_line

__all__ = ["EnvelopeCache"]

#: Bytes of encoded envelopes kept across sessions (about ten 1,000-worker sessions).
CAPACITY: Final = 64 * 1024 * 1024


@attrs.define
class _Entry:
    projector: AgentUiProjector
    lines: list[str] = attrs.Factory(list)
    size: int = 0
    lock: trio.Lock = attrs.Factory(trio.Lock)


class EnvelopeCache:
    def __init__(self, reader: JournalReader, *, capacity: int = CAPACITY) -> None:
        self._reader = reader
        self._capacity = capacity
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    @property
    def size(self) -> int:
        """Bytes of encoded envelopes held."""
        return sum(entry.size for entry in self._entries.values())

    async def envelopes(self, session: str) -> list[str]:
        """Every envelope of ``session`` so far, each encoded as one JSON text, in order."""
        entry = self._entries.get(session)
        if entry is None:
            entry = self._entries[session] = _Entry(AgentUiProjector(session))
        self._entries.move_to_end(session)
        async with entry.lock:
            await trio.to_thread.run_sync(self._catch_up, session, entry)
            lines = entry.lines[:]  # what this read saw, whatever later reads add
        self._evict(keep=session)
        return lines

    def _catch_up(self, session: str, entry: _Entry) -> None:
        """Feed ``entry`` the facts recorded since it was last fed (in a worker thread)."""
        facts = self._reader.facts(session, after=entry.projector.state.last_sequence)
        for fact in facts:
            for envelope in entry.projector.feed(fact):
                line = envelope_to_json_line(envelope)
                entry.lines.append(line)
                entry.size += len(line)

    def _evict(self, *, keep: str) -> None:
        total = self.size
        for session in list(self._entries):
            if total <= self._capacity:
                return
            if session != keep:
                total -= self._entries.pop(session).size
