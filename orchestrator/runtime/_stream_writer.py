"""A model round's streamed text as facts, at the model's pace.

Theory of operation
-------------------
A model streams its answer in small chunks (a word, often less). Each chunk recorded as its
own durable fact, waited for before the next is read, holds the model back by one write per
chunk: with a journal that syncs to disk, a stream is seen at half its speed. The
:class:`StreamWriter` reads the stream as fast as it arrives and records it in fewer facts:

- the first chunk after a quiet spell is submitted at once (nothing waits for it);
- chunks that arrive while the chat's previous text write is in flight, or within ``window``
  seconds of it, are merged into the next write: one fact per part (a ``chat/delta``,
  ``chat/reasoning`` or ``chat/toolCallDelta`` with their content concatenated; a new part's
  ``chat/responsePart`` carries all it gathered), in the order the parts began, one batch;
- the session's *flusher* (:class:`StreamFlusher`, one task beside the run's chats) writes
  what every chat gathered in one batch, once the previous such batch is durable and the
  window since it has passed, and waits for it: so text is published within the window plus
  one write of the model sending it, and a stream that pauses is not held back. One write per
  window for the whole team, not one per chat: with 200 workers streaming, each write holds
  200 facts (one per chat, as before) instead of each chat waking, submitting and waiting on
  its own. A round outside a running session flusher (a runtime's parts used alone) runs a
  flusher of its own;
- anything else the round records (a tool call starting, a tool call requested, the turn's
  end) first submits what its chat gathered, so the chat's facts keep the order the model
  sent them in.

The project's rule stands: no reader sees a fact before it is durable. A crash loses at most
the text gathered in the window of a turn that the crash cuts off anyway: the stored text is a
prefix of what the model sent, and what a client was shown a prefix of what is stored. Replays
equal the live stream in content, not in chunking (a client sees the same text in fewer, larger
pieces). A runtime that stops with its process (``TeamRuntime.stop``) drops what gathered:
the journal holds what a crash would.

``window = 0`` keeps one fact per chunk, each durable before the next chunk is read (the
behaviour before the window; tests that count chunks ask for it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final, Literal

import structlog
import trio

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatReasoningAction,
    ChatResponsePartAction,
    ChatToolCallDeltaAction,
)
from orchestrator.ahp.state import MarkdownResponsePart, ReasoningResponsePart
from orchestrator.base import FactLogError, IllegalTransitionError, leaf_exceptions
from orchestrator.core import Action

from ._ids import Ids
from ._recorder import PendingBatch, Recorder

__all__ = [
    "DEFAULT_DELTA_WINDOW",
    "StreamFlusher",
    "StreamWriter",
    "open_stream_writer",
]

log = structlog.get_logger("orchestrator.runtime")

#: Seconds a chat's streamed chunks are gathered for at most before they are written
#: (daemon.toml's ``delta_window``, ``run --delta-window``, ``open_run(delta_window=...)``);
#: 0 writes each chunk alone.
DEFAULT_DELTA_WINDOW: Final = 0.05

TextKind = Literal["markdown", "reasoning"]


class _Gathered:
    """Chunks of one part (or one tool call's input) not yet submitted."""

    __slots__ = ("chunks", "key", "kind", "new_part")

    def __init__(self, kind: str, key: str, *, new_part: bool) -> None:
        self.kind = kind  # "markdown", "reasoning" or "toolInput"
        self.key = key  # the part's id, or the tool call's
        self.new_part = new_part  # the first write of the part is its chat/responsePart
        self.chunks: list[str] = []


class StreamWriter:
    """One model round's text, tool-call input and the part it is in (see module docstring).

    Made by :func:`open_stream_writer`, which runs its flusher around the reading of the
    stream.
    """

    def __init__(self, flusher: StreamFlusher, ids: Ids, chat: str, turn_id: str) -> None:
        self.flusher = flusher
        self.recorder = flusher.recorder
        self.ids = ids
        self.chat = chat
        self.turn_id = turn_id
        self.window = flusher.window
        # (kind, part id) of the part text is appended to; None after a tool call starts.
        self._open_part: tuple[TextKind, str] | None = None
        # What gathered since the last write, by part id (or tool call id), in the order
        # each began: the next write holds all of it, one fact each.
        self._gathered: dict[str, _Gathered] = {}
        # The latest write that holds this chat's text (the flusher's, or its own).
        self._last: PendingBatch | None = None
        # Why the flusher could not submit this chat's text: the round raises it (at its
        # next chunk, or as it ends), as if it had submitted the text itself.
        self.error: Exception | None = None

    # ── what the round reads ────────────────────────────────────────────────────────

    async def text(self, kind: TextKind, chunk: str) -> None:
        """A chunk of answer (``markdown``) or reasoning text."""
        part = self._open_part
        new_part = part is None or part[0] != kind
        if new_part:
            # The new part's first write (its chat/responsePart) goes after what the part
            # before gathered: both in the next write, in that order.
            part = self._open_part = (kind, self.ids.numbered("part"))
        assert part is not None
        await self._add(kind, part[1], chunk, new_part=new_part)

    async def tool_input(self, tool_call_id: str, chunk: str) -> None:
        """A chunk of a started tool call's input (parallel calls' chunks may interleave:
        each call's gather apart, and are written in the order each began)."""
        await self._add("toolInput", tool_call_id, chunk, new_part=False)

    def close_part(self) -> None:
        """The next text starts a new part (a tool call came between): what gathered is
        submitted first, as everything the round records after it must be."""
        self.submit_gathered()
        self._open_part = None

    def submit_gathered(self) -> PendingBatch | None:
        """Submit what gathered as one batch now (no wait); the flusher or a later record
        makes it durable and published. Call before recording anything else of the round."""
        if not self._gathered:
            return None
        self.flusher.forget(self)
        self._last = self.recorder.submit(self.take())
        return self._last

    def take(self) -> list[tuple[str, Action]]:
        """What gathered, as the chat's facts to record (one per part or tool call, in the
        order each began); nothing is left gathered."""
        gathered, self._gathered = self._gathered, {}
        return [(self.chat, self._action(g)) for g in gathered.values()]

    async def durable(self) -> None:
        """Return once the chat's text written so far is durable (raises as
        :meth:`PendingBatch.wait`)."""
        last = self._last
        while last is not None:
            await last.wait()
            if self._last is last:  # no newer write went in meanwhile
                return
            last = self._last

    # ── internals ───────────────────────────────────────────────────────────────────

    async def _add(self, kind: str, key: str, chunk: str, *, new_part: bool) -> None:
        if self.error is not None:
            raise self.error
        if self.window <= 0:
            single = _Gathered(kind, key, new_part=new_part)
            single.chunks.append(chunk)
            await self.recorder.record([(self.chat, self._action(single))])
            return
        if not self._gathered:
            self.flusher.gathering(self)
        gathered = self._gathered.get(key)
        if gathered is None:
            gathered = self._gathered[key] = _Gathered(kind, key, new_part=new_part)
        gathered.chunks.append(chunk)

    def _action(self, gathered: _Gathered) -> Action:
        content = "".join(gathered.chunks)
        if gathered.kind == "toolInput":
            return ChatToolCallDeltaAction(
                turn_id=self.turn_id, tool_call_id=gathered.key, content=content
            )
        if gathered.new_part:
            part = (
                MarkdownResponsePart(id=gathered.key, content=content)
                if gathered.kind == "markdown"
                else ReasoningResponsePart(id=gathered.key, content=content)
            )
            return ChatResponsePartAction(turn_id=self.turn_id, part=part)
        if gathered.kind == "markdown":
            return ChatDeltaAction(turn_id=self.turn_id, part_id=gathered.key, content=content)
        return ChatReasoningAction(turn_id=self.turn_id, part_id=gathered.key, content=content)

    def close(self, *, failing: bool) -> None:
        """The stream ended: submit what gathered (the caller waits for :meth:`durable`).
        What gathered goes in ahead of whatever the turn records next (its error, its
        cancellation): a prefix of the model's text is kept, however the round ended."""
        self.flusher.forget(self)
        if self.error is not None and not failing:
            raise self.error
        if failing and (self.recorder.failed is not None or self.flusher.stopping()):
            return
        try:
            self.submit_gathered()
        except Exception:
            if not failing:
                raise
            # The round is failing already (its turn may be over): its error is the one told.


class StreamFlusher:
    """Writes what a session's rounds gathered, every chat's in one batch, one write in
    flight at a time and at most one per window (see module docstring).

    :meth:`run` is its task: the runtime runs one beside the run's chats; a round that finds
    none running runs one of its own for as long as it reads its stream.
    """

    def __init__(
        self, recorder: Recorder, *, window: float, stopping: Callable[[], bool] = lambda: False
    ) -> None:
        self.recorder = recorder
        self.window = window
        # The runtime is stopping: what gathered is dropped, as a crash would (RunContext).
        self.stopping = stopping
        self.running = False
        # The writers with text gathered, in the order they began gathering it.
        self._waiting: dict[StreamWriter, None] = {}
        self._last: PendingBatch | None = None  # the latest write submitted
        self._last_at = float("-inf")  # when it was submitted (trio's clock)
        self._wake = trio.Event()  # set when a writer has something gathered

    def gathering(self, writer: StreamWriter) -> None:
        """``writer`` has text gathered: the next write takes it."""
        self._waiting[writer] = None
        self._wake.set()

    def forget(self, writer: StreamWriter) -> None:
        """``writer`` submitted what it gathered itself (or closed)."""
        self._waiting.pop(writer, None)

    def start_soon_in(self, nursery: trio.Nursery) -> None:
        """Run in ``nursery``; rounds count on it from now on."""
        self.running = True
        nursery.start_soon(self.run)

    async def run(self) -> None:
        """Write what gathers until cancelled (or the fact log fails: the runtime ends the
        session then, and each round learns it at its next record)."""
        self.running = True
        try:
            while True:
                last = self._last
                if last is not None:
                    try:
                        # Durable, committed and published; chunks arriving meanwhile gather.
                        await last.wait()
                    except FactLogError:
                        return
                    if self._last is not last:
                        continue
                    self._last = None
                if not self._waiting:
                    self._wake = trio.Event()
                    await self._wake.wait()
                    continue
                due = self._last_at + self.window
                if trio.current_time() < due:
                    await trio.sleep_until(due)
                if self.stopping() or self.recorder.failed is not None:
                    return  # what gathered is dropped, as a crash would
                try:
                    self._submit()
                except FactLogError:
                    return
        finally:
            self.running = False

    def _submit(self) -> None:
        writers, self._waiting = list(self._waiting), {}
        if not writers:
            return  # they submitted what they gathered themselves meanwhile
        taken = [(writer, writer.take()) for writer in writers]
        try:
            batch = self.recorder.submit([fact for _, facts in taken for fact in facts])
        except FactLogError:
            raise
        except Exception:
            # One chat's text refused: its turn ended meanwhile, by a fact not durable yet
            # (a client's cancel), say. Each chat's text alone: a refusal is that chat's.
            batch = None
            for writer, facts in taken:
                try:
                    writer._last = batch = self.recorder.submit(facts)
                except FactLogError:
                    raise
                except IllegalTransitionError as exc:
                    log.warning("streamed text dropped", chat=writer.chat, reason=str(exc))
                except Exception as exc:
                    writer.error = exc  # the round's error, as its own submit's would be
            if batch is None:
                return
        else:
            for writer, _ in taken:
                writer._last = batch
        self._last, self._last_at = batch, trio.current_time()


@asynccontextmanager
async def open_stream_writer(
    flusher: StreamFlusher, ids: Ids, chat: str, turn_id: str
) -> AsyncIterator[StreamWriter]:
    """A :class:`StreamWriter` for the block that reads one round's stream, written by
    ``flusher`` (run here, for as long as the block, when it is not running already);
    leaving the block waits until the text is durable.

    An error of the block (or of the flusher) comes out as it was, not in a group: the turn
    records it as the round's error.
    """
    writer = StreamWriter(flusher, ids, chat, turn_id)
    if flusher.window <= 0:
        yield writer
        return
    try:
        async with _running(flusher) as running:
            writer.flusher = running
            try:
                yield writer
            except BaseException:
                writer.close(failing=True)
                raise
            writer.close(failing=False)
            await writer.durable()
    except BaseExceptionGroup as group:
        raise _alone(group) from None


@asynccontextmanager
async def _running(flusher: StreamFlusher) -> AsyncIterator[StreamFlusher]:
    """``flusher`` if it runs (the session's); else a flusher of the block's own, run for
    as long as the block (a round outside a runtime's run: nothing else shares it)."""
    if flusher.running:
        yield flusher
        return
    own = StreamFlusher(flusher.recorder, window=flusher.window, stopping=flusher.stopping)
    async with trio.open_nursery() as nursery:
        own.start_soon_in(nursery)
        yield own
        nursery.cancel_scope.cancel()


def _alone(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error a group of the block and the flusher holds (cancellations aside); a
    cancellation when it holds only those (callers catch ``trio.Cancelled``); else the
    group."""
    errors, cancellations = leaf_exceptions(group, setting_aside=trio.Cancelled)
    if len(errors) == 1:
        return errors[0]
    if not errors and cancellations:
        return cancellations[0]
    return group
