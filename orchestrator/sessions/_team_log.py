"""A live session's Agent UI envelopes, projected once for every reader (issue 17, item 2).

Before, each team-channel subscriber read the session's whole journal and projected it with a
projector of its own. Then it projected every live fact again for itself. So N subscribers
meant N projections of every fact. A page that subscribed from envelope 9,000 of a
1,000-worker session still cost the daemon 2 s to project the 9,000 it skipped. Now the
session keeps one log. It is made when a reader first asks (a team subscription, or the web
view's ``/envelopes``). It is fed each fact as it is published. Every envelope is projected
and encoded once. A reader takes a slice of the encoded lines (its cursor), and then the frames
:meth:`TeamLog.feed` returns for each new fact.

Catching up:

- first the log is made empty, and from then on every published fact is kept aside;
- next the journal is read and projected in a worker thread; facts are durable before they are
  published, so each fact is in the read or kept aside, maybe both;
- then, with no checkpoint, the facts kept aside are fed (the projector ignores what it has
  folded), and the log is ready.

Until then, readers wait on :meth:`TeamLog.ready`.

A log may start from a fold kept of the session: the web view's, or the log of an earlier
take-up of it (see :mod:`._session_folds`). It then catches up with the facts after that
fold's. The session is not folded again from its first fact. When the session stops
being live, its log's fold is kept for the next (:meth:`TeamLog.fold`).

One fold per session: the log's state is folded from the journal while catching up. From then
on it follows the runtime's reductions: each published fact comes with what it wrote
(:meth:`~orchestrator.core.TeamState.follow`). So a live fact is reduced once, by the runtime.
The projector reads the state as the fact left it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import trio

from orchestrator.core import Fact, FactChange, TeamState
from orchestrator.protocols import AgentUiProjector, envelope_to_json_line

from ._session_folds import EnvelopeFold

__all__ = ["ReadFacts", "TeamLog", "team_frame"]


class ReadFacts(Protocol):
    """Reads a session's facts after a sequence (``JournalReader.facts``)."""

    def __call__(self, session: str, *, after: int = 0) -> list[Fact]: ...


def team_frame(line: str) -> str:
    """The team channel's frame of one encoded envelope."""
    return f'{{"channel":"team","type":"event","event":{line}}}'


class TeamLog:
    def __init__(self, session: str, read: ReadFacts, start: EnvelopeFold | None = None) -> None:
        """``start``: a fold kept of the session to go on from (its facts are not read)."""
        self.session = session
        self._read = read
        #: Every envelope so far, encoded; the N-th (they are numbered from 1) at N - 1.
        self.lines: list[str]
        if start is None:
            # Folded from the journal while catching up, then following the runtime's state.
            self._state = TeamState(session)
            self._projector = AgentUiProjector(session, self._state)
            self.lines = []
        else:
            self._projector, self.lines = start
            self._state = self._projector.state
            # From here the log brings the state to each fact itself (see _add).
            self._projector.follows = True
        # Published while catching up, with what each wrote (None: ready).
        self._aside: list[tuple[Fact, FactChange | None]] | None = []
        self._lock = trio.Lock()

    async def ready(self) -> None:
        """Wait until the log holds every envelope of the facts published so far. The first
        caller reads the journal (``FactLogError`` if it cannot; the next call tries
        again, from where the read stopped)."""
        async with self._lock:
            if self._aside is None:
                return
            await trio.to_thread.run_sync(self._catch_up)
            # No checkpoint from here: no fact is published between these lines.
            for fact, change in self._aside:
                self._add(fact, change)
            self._aside = None

    def feed(
        self, facts: Sequence[Fact], changes: Sequence[FactChange | None] | None = None
    ) -> list[list[str]]:
        """Take facts as they are published, with what each wrote (``changes``; without
        them, the facts are folded); the new envelopes' lines of each (none until the log
        is ready: they are kept aside for it)."""
        written: Sequence[FactChange | None] = [None] * len(facts) if changes is None else changes
        if self._aside is not None:
            self._aside.extend(zip(facts, written, strict=True))
            return [[] for _ in facts]
        return [self._add(fact, change) for fact, change in zip(facts, written, strict=True)]

    def _catch_up(self) -> None:
        """Project what the journal holds after what the log has (in a worker thread; the
        log is not ready yet, so nothing else touches the projector)."""
        for fact in self._read(self.session, after=self._state.last_sequence):
            self._add(fact, None)

    def _add(self, fact: Fact, change: FactChange | None) -> list[str]:
        if fact.sequence > self._state.last_sequence:  # else folded already: projects nothing
            if change is None:
                self._state.apply(fact)
            else:
                self._state.follow(change, fact.sequence)
        new = [envelope_to_json_line(e) for e in self._projector.feed(fact)]
        self.lines.extend(new)
        return new
