"""Running a team from asyncio: :func:`open_run`, :func:`run_team`, :func:`fork` and
:class:`TeamRun`, as
:mod:`orchestrator` has them for trio, awaitable from ``asyncio.run``, a FastAPI endpoint or
a Jupyter cell::

    from orchestrator import aio

    outcome = await aio.run_team("teams/delivery.toml", "Ship the release notes")

    async with aio.open_run(team, prompt, on_approval=decide) as run:
        async for update in run.updates():
            ...
        outcome = await run.outcome()

Theory of operation. The orchestrator is trio code; here trio runs as a *guest* on the
running asyncio loop (:func:`trio.lowlevel.start_guest_run`): its scheduler ticks are callbacks
of the asyncio loop, on the same thread, and it waits for I/O in a helper thread only while it
has nothing to run. So there is one process, one event loop thread, and no copy of any state.

One guest run per asyncio loop hosts every run of that loop, for as long as one is open:
trio keeps its run in a thread-local, so a thread holds one trio run at a time, and several
runs in one loop must share it. The first :func:`open_run` of a loop starts the guest; the
last one to end stops it, and waits until it has stopped. So nothing of trio outlives the
runs, and ``asyncio.run`` closes its loop with no trio thread left to call it.

Each :func:`open_run` is a trio task of the guest (its *holder*) that enters the trio
:func:`orchestrator.open_run` and keeps the block open until the asyncio block leaves. The
:class:`TeamRun` it hands out forwards each call to trio: an awaitable method is run as a
trio task inside the block (as trio code in the block would be), and its result or
exception is set on an asyncio future the caller awaits. An iterator is read by one trio
task that hands each item over (see :class:`_Iterator`). The approval and question
callbacks run on the trio side; one that returns an awaitable (an ``async def``) has it run
as an asyncio task, which trio waits for. :func:`run_team` is :func:`open_run` whose block
reads the updates for ``on_update``, as the trio one is.

Cancellation crosses both ways:

* asyncio to trio: an exception in the asyncio block (``CancelledError`` too) is raised in
  the trio block, so the run is cancelled as the trio API cancels it, and comes out of the
  block unchanged. A cancelled wait at the block's end cancels the trio block, so the run,
  and waits for it to end. A cancelled awaited call cancels its trio task.
* trio to asyncio: when the run fails (a callback raised, the journal broke), the task in
  the block is cancelled, as :class:`asyncio.TaskGroup` cancels its body, and the block
  raises the run's exception. A call that the failure cut off raises it too: nothing waits
  for a run that has ended.

The trio API called under asyncio, or this one under trio, fails at once and names the other
(found with :mod:`sniffio`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, cast, overload

import attrs
import sniffio
import trio

from orchestrator import _embed
from orchestrator._embed import (
    ApprovalHandler,
    Backends,
    Question,
    QuestionHandler,
    RunUpdate,
)
from orchestrator._streams import FactUpdate, MessageDelta, MessageEnd, TeamSnapshot
from orchestrator.core import USER, ApprovalRequested, Board, BoardItem
from orchestrator.protocols import Envelope
from orchestrator.runtime import DEFAULT_DELTA_WINDOW, FactLog, RunOutcome, TeamRuntime
from orchestrator.spec import Team, TeamSpec

__all__ = ["RunBoard", "TeamRun", "fork", "open_run", "run_team"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _require_asyncio(call: str) -> None:
    """Refuse ``call`` (``"run_team"``) outside asyncio, naming the trio API under trio."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library == "asyncio":
        return
    if library == "trio":
        raise RuntimeError(
            f"orchestrator.aio.{call} is for asyncio, and this is trio: "
            f"use orchestrator.{call}, the same call for trio"
        )
    raise RuntimeError(
        f"orchestrator.aio.{call} runs under asyncio (asyncio.run, FastAPI, Jupyter), "
        f"and no asyncio loop is running here ({library or 'no async library'})"
    )


# ── the guest run ───────────────────────────────────────────────────────────


class _Guest:
    """The trio run hosted by one asyncio loop while it has runs open (see the module's
    docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.users = 0
        self.started: asyncio.Future[None] = loop.create_future()
        # Set by trio's done callback: the guest has stopped, trio's thread-local is free.
        self.stopped: asyncio.Future[None] = loop.create_future()
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._idle = trio.Event()

    def start(self) -> None:
        """Start the guest run; :attr:`started` is set once it takes tasks."""
        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=self.loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=self.loop.call_soon,
            done_callback=self._done,
            # asyncio's own SIGINT handling stays; trio takes no signal of the host's.
            host_uses_signal_set_wakeup_fd=True,
        )

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.started.set_result(None)
            await self._idle.wait()

    def _done(self, outcome: Any) -> None:
        if not self.stopped.done():
            try:
                outcome.unwrap()
            except BaseException as exc:  # a trio internal error: the next run says so
                self.stopped.set_exception(exc)
            else:
                self.stopped.set_result(None)

    def soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` in trio's next tick (waking trio if it waits for I/O)."""
        assert self._token is not None
        self._token.run_sync_soon(fn)

    def spawn(self, fn: Callable[[], Awaitable[object]], nursery: trio.Nursery | None) -> None:
        """Start ``fn`` as a trio task in ``nursery``, or in the guest's own: when None, or
        when ``nursery`` has closed meanwhile (a run's block that has just ended)."""

        def start() -> None:
            assert self._nursery is not None
            try:
                (nursery or self._nursery).start_soon(fn)
            except RuntimeError:  # closed to new arrivals
                self._nursery.start_soon(fn)

        self.soon(start)

    def stop(self) -> None:
        if not self.stopped.done():  # (a guest that went down by itself has no token left)
            self.soon(self._idle.set)


_guests: dict[asyncio.AbstractEventLoop, _Guest] = {}
# A loop's guest that is stopping: the next one starts once it has stopped.
_stopping: dict[asyncio.AbstractEventLoop, _Guest] = {}


@contextlib.asynccontextmanager
async def _hosted() -> AsyncIterator[_Guest]:
    """The running loop's guest run, started if it has none, stopped after its last user."""
    loop = asyncio.get_running_loop()
    while (guest := _guests.get(loop)) is None:
        stopping = _stopping.get(loop)
        if stopping is None:
            guest = _Guest(loop)
            guest.start()
            _guests[loop] = guest
            break
        await _uncancelled(stopping.stopped)
    guest.users += 1
    try:
        await asyncio.shield(guest.started)
        yield guest
    finally:
        guest.users -= 1
        if guest.users == 0:
            # The next run of this loop starts a guest of its own, once this one has gone.
            del _guests[loop]
            _stopping[loop] = guest
            try:
                await _uncancelled(guest.started)
                guest.stop()
                await _uncancelled(guest.stopped)
            finally:
                if _stopping.get(loop) is guest:
                    del _stopping[loop]


async def _uncancelled(future: asyncio.Future[Any]) -> None:
    """Wait for ``future``, which ends soon whatever happens; a cancellation meanwhile is
    raised after it."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                cancelled = True
        except BaseException:
            break
    if cancelled:
        raise asyncio.CancelledError


# ── crossing from asyncio to trio ───────────────────────────────────────────


class _CutOffError(Exception):
    """The trio side of a call was cancelled by trio (its run ended), not by its caller."""


async def _in_trio(
    guest: _Guest,
    nursery: trio.Nursery | None,
    fn: Callable[[], Awaitable[_T]],
) -> _T:
    """Await ``fn()`` as a trio task in ``nursery``; the asyncio caller's cancellation
    cancels it, and is raised once it has ended."""
    result: asyncio.Future[_T] = guest.loop.create_future()
    scope = trio.CancelScope()

    async def call() -> None:
        try:
            with scope:
                value = await fn()
        except trio.Cancelled:
            if not result.done():
                result.set_exception(_CutOffError())
            raise
        except BaseException as exc:
            # Delivered: the caller raises it; trio's nursery must not fail for it.
            if not result.done():
                result.set_exception(exc)
        else:
            if scope.cancelled_caught:
                if not result.done():
                    result.set_exception(_CutOffError())
            elif not result.done():
                result.set_result(value)

    guest.spawn(call, nursery)
    try:
        return await asyncio.shield(result)
    except asyncio.CancelledError:
        if result.done() and not result.cancelled():
            raise
        guest.soon(scope.cancel)
        with contextlib.suppress(BaseException):
            await _uncancelled(result)
        raise


async def _on_asyncio(guest: _Guest, awaitable: Awaitable[_T]) -> _T:
    """From trio: run ``awaitable`` as an asyncio task and wait for it; trio's cancellation
    cancels the task."""
    task = asyncio.ensure_future(awaitable, loop=guest.loop)
    finished = trio.Event()
    task.add_done_callback(lambda _: guest.soon(finished.set))
    try:
        await finished.wait()
    except trio.Cancelled:
        task.cancel()
        raise
    return task.result()


def _from_asyncio(guest: _Guest, handler: Callable[[Any], Any] | None) -> Any:
    """``handler`` as trio calls it: called in trio's tick; an awaitable it returns (an
    ``async def``'s coroutine) runs on the asyncio loop."""
    if handler is None:
        return None

    async def called(argument: Any) -> Any:
        result = handler(argument)
        if inspect.isawaitable(result):
            return await _on_asyncio(guest, result)
        return result

    return called


# ── the run ─────────────────────────────────────────────────────────────────


def _awaited(
    method: Callable[Concatenate[_embed.TeamRun, _P], Awaitable[_T]],
) -> Callable[Concatenate[TeamRun, _P], Coroutine[Any, Any, _T]]:
    """The trio method ``method`` as an asyncio coroutine function: run in the run's block."""

    @functools.wraps(method)
    async def awaited(self: TeamRun, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await self._block.call(lambda: method(self._run, *args, **kwargs))

    return awaited


def _iterated(
    method: Callable[Concatenate[_embed.TeamRun, _P], AsyncIterator[_T]],
) -> Callable[Concatenate[TeamRun, _P], AsyncIterator[_T]]:
    """The trio method ``method``, which returns an async iterator, as one returning an
    asyncio async iterator: each step (and ``aclose``) runs in the run's block."""

    @functools.wraps(method)
    def iterated(self: TeamRun, /, *args: _P.args, **kwargs: _P.kwargs) -> AsyncIterator[_T]:
        return _Iterator(self._block, method(self._run, *args, **kwargs))

    return iterated


def _scheduled(
    method: Callable[Concatenate[_embed.TeamRun, _P], None],
) -> Callable[Concatenate[TeamRun, _P], None]:
    """The trio method ``method``, which neither blocks nor returns anything, done in trio's
    next tick."""

    @functools.wraps(method)
    def scheduled(self: TeamRun, /, *args: _P.args, **kwargs: _P.kwargs) -> None:
        self._block.soon(lambda: method(self._run, *args, **kwargs))

    return scheduled


class _Iterator(AsyncIterator[_T]):
    """A trio async iterator read from asyncio.

    Crossing to trio for each step costs a wake-up of the guest (a byte on its wake-up
    socket, and often a thread hop: 3.5 times the trio iteration's cost, measured).
    So while the run's block is open, one trio task (the *pump*) reads the trio iterator
    from the first step on, and hands each item to asyncio on the loop's thread, with no
    wake-up. It reads ahead of the asyncio reader, unbounded, as the trio iterators here
    do themselves (``updates()`` buffers every fact for its reader). After the block, each
    step crosses on its own.
    """

    def __init__(self, block: _RunBlock, inner: AsyncIterator[_T]) -> None:
        self._block = block
        self._inner = inner
        # What the pump read: (True, an item) or (False, what the trio step raised).
        self._items: collections.deque[tuple[bool, Any]] = collections.deque()
        self._arrived: asyncio.Future[None] | None = None
        self._pumping = False

    def __aiter__(self) -> _Iterator[_T]:
        return self

    async def __anext__(self) -> _T:
        if not self._pumping and not self._block.pump(self._pump):
            return await self._block.call(self._inner.__anext__)
        self._pumping = True
        while not self._items:
            # One future for every reader waiting (each shielded: one cancelled reader
            # leaves the others waiting).
            if self._arrived is None or self._arrived.done():
                self._arrived = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._arrived)
        read, item = self._items[0]
        if read:
            self._items.popleft()
            return cast(_T, item)
        raise item  # (it stays: each step after the end ends too)

    async def _pump(self) -> None:
        """The trio side: read every item, and hand each over at once."""
        while True:
            try:
                item = await self._inner.__anext__()
            except trio.Cancelled:
                self._hand_over(False, asyncio.CancelledError())
                raise
            except BaseException as exc:  # the end (StopAsyncIteration) or a failure
                self._hand_over(False, exc)
                return
            self._hand_over(True, item)

    def _hand_over(self, read: bool, item: Any) -> None:
        self._items.append((read, item))
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None and not self._pumping:
            await self._block.call(close)


class RunBoard:
    """:class:`orchestrator.RunBoard`'s calls, awaitable from asyncio (``run.board``)."""

    def __init__(self, board: _embed.RunBoard, block: _RunBlock) -> None:
        self._board = board
        self._block = block

    @property
    def items(self) -> Mapping[str, BoardItem]:
        return self._board.items

    async def claim(self, item: str, *, by: str = USER) -> Board:
        return await self._block.call(lambda: self._board.claim(item, by=by))

    async def comment(self, item: str, text: str, *, by: str = USER) -> Board:
        return await self._block.call(lambda: self._board.comment(item, text, by=by))

    async def block(
        self, item: str, reason: str, *, waiting_for: str | None = None, by: str = USER
    ) -> Board:
        board = self._board
        return await self._block.call(
            lambda: board.block(item, reason, waiting_for=waiting_for, by=by)
        )

    async def unblock(self, item: str, *, by: str = USER) -> Board:
        return await self._block.call(lambda: self._board.unblock(item, by=by))

    async def done(self, item: str, *, summary: str = "", by: str = USER) -> Board:
        return await self._block.call(lambda: self._board.done(item, summary=summary, by=by))

    async def assign(self, item: str, assignee: str, *, by: str = USER) -> Board:
        return await self._block.call(lambda: self._board.assign(item, assignee, by=by))


class TeamRun:
    """A run in progress, as :func:`open_run` hands it out: :class:`orchestrator.TeamRun`'s
    calls, awaitable from asyncio."""

    def __init__(self, run: _embed.TeamRun, block: _RunBlock) -> None:
        self._run = run
        self._block = block

    @property
    def runtime(self) -> TeamRuntime:
        """The trio runtime underneath: its ``async`` methods are trio's, not awaitable here."""
        return self._run.runtime

    @property
    def session(self) -> str:
        """The session's URI (its facts' ``session``; ``orchestrator events`` takes it)."""
        return self._run.session

    @property
    def team(self) -> TeamSpec:
        return self._run.team

    def pending_approvals(self) -> list[ApprovalRequested]:
        """The approvals waiting for the user's decision."""
        return self._run.pending_approvals()

    @property
    def board(self) -> RunBoard:
        """The team's board (:class:`RunBoard`); :class:`RunError` if its file has none."""
        return RunBoard(self._run.board, self._block)

    def _unsubscribe_updates(self) -> None:
        self._block.soon(lambda: self.runtime.bus.unsubscribe(self._run._subscription))

    def open_questions(self) -> list[Question]:
        """The agents' questions waiting for an answer."""
        return self._run.open_questions()

    # Each trio method, wrapped by what it is: a new one of the trio TeamRun is one line here.
    updates = _iterated(_embed.TeamRun.updates)
    outcome = _awaited(_embed.TeamRun.outcome)
    approve = _awaited(_embed.TeamRun.approve)
    deny = _awaited(_embed.TeamRun.deny)
    answer = _awaited(_embed.TeamRun.answer)
    cancel = _scheduled(_embed.TeamRun.cancel)

    @overload
    def stream(self, mode: Literal["messages"]) -> AsyncIterator[MessageDelta | MessageEnd]: ...
    @overload
    def stream(self, mode: Literal["updates"]) -> AsyncIterator[FactUpdate]: ...
    @overload
    def stream(self, mode: Literal["values"]) -> AsyncIterator[TeamSnapshot]: ...
    @overload
    def stream(self, mode: Literal["events"]) -> AsyncIterator[Envelope]: ...
    @overload
    def stream(self, mode: Literal["agui"]) -> AsyncIterator[dict[str, Any]]: ...
    @overload
    def stream(self, mode: str) -> AsyncIterator[Any]: ...

    def stream(self, mode: str) -> AsyncIterator[Any]:
        # The trio method's, read from asyncio (typed by mode, so not made by _iterated).
        return _Iterator(self._block, self._run.stream(mode))

    stream.__doc__ = _embed.TeamRun.stream.__doc__


# ── open_run, run_team ──────────────────────────────────────────────────────


@attrs.define
class _Arguments:
    """What :func:`open_run` passes on to the trio one."""

    team: Team | TeamSpec | str | os.PathLike[str]
    prompt: str
    backends: Backends
    journal: str | os.PathLike[str] | FactLog | None
    on_approval: ApprovalHandler | None
    on_question: QuestionHandler | None
    environ: Mapping[str, str] | None
    delta_window: float
    # orchestrator.fork's own arguments (session, journal, at_turn...): the block forks a
    # session and runs the fork on, instead of starting ``team`` on ``prompt``.
    fork: Mapping[str, Any] | None = None


class _RunBlock:
    """The async context manager :func:`open_run` returns (see the module's docstring)."""

    def __init__(self, arguments: _Arguments) -> None:
        self._arguments = arguments
        self._hosting: contextlib.AbstractAsyncContextManager[_Guest] | None = None
        self._guest: _Guest | None = None
        self._entered: asyncio.Future[_embed.TeamRun] | None = None
        # The holder's end: its exception is the run's, or the block's passed through.
        self._ended: asyncio.Future[None] | None = None
        self._scope = trio.CancelScope()
        self._calls: trio.Nursery | None = None  # the trio block's nursery, while open
        self._run: _embed.TeamRun | None = None
        self._leave = trio.Event()
        self._leaving = False  # the asyncio block has left (the trio one is told)
        self._raised: BaseException | None = None  # what the asyncio block raised
        self._task: asyncio.Task[Any] | None = None  # the task in the block
        self._cancelled_task = False  # the run's failure cancelled that task

    async def __aenter__(self) -> TeamRun:
        _require_asyncio("open_run" if self._arguments.fork is None else "fork")
        self._hosting = _hosted()
        guest = self._guest = await self._hosting.__aenter__()
        self._entered = guest.loop.create_future()
        self._ended = guest.loop.create_future()
        guest.spawn(self._hold, None)
        try:
            run = await asyncio.shield(self._entered)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and not self._entered.done():
                guest.soon(self._scope.cancel)
            with contextlib.suppress(BaseException):
                await _uncancelled(self._ended)
            await self._hosting.__aexit__(None, None, None)
            raise
        self._task = asyncio.current_task()
        return TeamRun(run, self)

    async def _hold(self) -> None:
        """The trio side: the trio block, open until the asyncio block leaves."""
        assert self._entered is not None
        assert self._ended is not None
        guest = self._guest
        assert guest is not None
        a = self._arguments
        handlers = {
            "on_approval": _from_asyncio(guest, a.on_approval),
            "on_question": _from_asyncio(guest, a.on_question),
        }
        opened = (
            _embed.open_run(
                a.team,
                a.prompt,
                backends=a.backends,
                journal=a.journal,
                environ=a.environ,
                delta_window=a.delta_window,
                **handlers,
            )
            if a.fork is None
            else _embed.fork(**a.fork, backends=a.backends, environ=a.environ, **handlers)
        )
        try:
            with self._scope:
                async with opened as run:
                    self._run = run
                    try:
                        async with trio.open_nursery() as calls:
                            self._calls = calls
                            self._entered.set_result(run)
                            await self._leave.wait()
                            if self._raised is not None:
                                raise self._raised
                    finally:
                        self._calls = None
        except BaseException as exc:
            # Cancelled from outside the holder (only cancellations, maybe in a group): the
            # guest itself is going down (a KeyboardInterrupt in trio, say). The asyncio
            # side is cancelled, not told that the run ended.
            cancelled = isinstance(exc, trio.Cancelled) or (
                isinstance(exc, BaseExceptionGroup) and exc.split(trio.Cancelled)[1] is None
            )
            self._end(asyncio.CancelledError("the trio guest ended") if cancelled else exc)
            if cancelled:
                raise
        else:
            self._end(None)

    def _end(self, exc: BaseException | None) -> None:
        assert self._entered is not None
        assert self._ended is not None
        if exc is None:  # the run ended, or the asyncio side cancelled the holder
            if not self._entered.done():
                self._entered.cancel()
            self._ended.set_result(None)
            return
        if not self._entered.done():
            self._entered.set_exception(exc)
        self._ended.set_exception(exc)
        self._ended.exception()  # retrieved: a run cut off before entering raises it there
        # The run failed while the asyncio block runs: cancel it, as trio would.
        task = self._task
        if task is not None and not self._leaving and not task.done():
            self._cancelled_task = True
            task.cancel()

    def soon(self, fn: Callable[[], object]) -> None:
        assert self._guest is not None
        self._guest.soon(fn)

    def pump(self, fn: Callable[[], Awaitable[object]]) -> bool:
        """Start ``fn`` in the run's block if it is open (else False): it ends with the
        block."""
        assert self._ended is not None
        if self._calls is None or self._ended.done() or self._leaving:
            return False
        assert self._guest is not None
        self._guest.spawn(fn, self._calls)
        return True

    async def call(self, fn: Callable[[], Awaitable[_T]]) -> _T:
        """``fn()`` in trio, in the run's block while it is open, else on its own."""
        assert self._ended is not None
        if self._calls is not None and not self._ended.done():
            assert self._guest is not None
            try:
                return await _in_trio(self._guest, self._calls, fn)
            except _CutOffError:
                # The run ended under the call (it failed): the call raises how.
                await _uncancelled(self._ended)
                raise self._ended.exception() or asyncio.CancelledError() from None
        async with _hosted() as guest:  # after the block: a guest for this call
            try:
                return await _in_trio(guest, None, fn)
            except _CutOffError:
                raise asyncio.CancelledError from None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert self._ended is not None
        assert self._hosting is not None
        try:
            self._leaving = True
            if not self._ended.done():
                self._raised = exc
                self.soon(self._leave.set)
                await self._wait_for_the_end()
        finally:
            await self._hosting.__aexit__(None, None, None)
        failure = self._ended.exception()
        if self._cancelled_task and isinstance(exc, asyncio.CancelledError):
            assert self._task is not None
            if self._task.uncancel() == 0 and failure is not None:
                raise failure
            return False
        if failure is None:
            return exc is None  # (the trio block never swallows what it was given)
        if failure is exc:
            return False
        raise failure

    async def _wait_for_the_end(self) -> None:
        """Wait for the trio side; cancelled, cancel it (the trio block cancels the run,
        which records that it ended), and re-raise the cancellation once it has ended."""
        assert self._ended is not None
        cancelled = False
        while not self._ended.done():
            try:
                await asyncio.shield(self._ended)
            except asyncio.CancelledError:
                if not self._ended.done():
                    cancelled = True
                    self.soon(self._scope.cancel)
            except BaseException:
                break
        if cancelled:
            raise asyncio.CancelledError


def open_run(
    team: Team | TeamSpec | str | os.PathLike[str],
    prompt: str,
    *,
    backends: Backends = None,
    journal: str | os.PathLike[str] | FactLog | None = None,
    on_approval: ApprovalHandler | None = None,
    on_question: QuestionHandler | None = None,
    environ: Mapping[str, str] | None = None,
    delta_window: float = DEFAULT_DELTA_WINDOW,
) -> contextlib.AbstractAsyncContextManager[TeamRun]:
    """Start ``team`` on ``prompt`` from asyncio: :func:`orchestrator.open_run`'s calls.

    Args:
        team: A :class:`TeamSpec`, or a team file's path.
        prompt: The user's first message.
        backends: See :data:`orchestrator.Backends` (trio code: a backend runs in trio).
        journal: None keeps the facts in memory; a path (or a ``postgresql://`` URL) opens
            a journal for the run; a :class:`~orchestrator.runtime.FactLog` is used as it is.
        on_approval: Decides approvals as they come: a plain function, or an ``async def``
            run on the asyncio loop. Without it, the block does (:meth:`TeamRun.approve`).
        on_question: Answers questions as they come, as ``on_approval`` decides approvals.
        environ: Where the team file's backends read their keys (default ``os.environ``).
        delta_window: Seconds a chat's streamed text gathers for at most before it is
            written as one fact (default 0.05; 0 writes each chunk alone). A stream is read
            as fast as the model sends it either way.

    Leaving the block waits for the run to end; an exception in it cancels the run first.
    """
    return _RunBlock(
        _Arguments(
            team=team,
            prompt=prompt,
            backends=backends,
            journal=journal,
            on_approval=on_approval,
            on_question=on_question,
            environ=environ,
            delta_window=delta_window,
        )
    )


def fork(
    session: str,
    *,
    journal: str | os.PathLike[str],
    at_turn: str | None = None,
    at: int | None = None,
    prompt: str | None = None,
    team: Team | TeamSpec | str | os.PathLike[str] | None = None,
    model: str | None = None,
    backends: Backends = None,
    on_approval: ApprovalHandler | None = None,
    on_question: QuestionHandler | None = None,
    environ: Mapping[str, str] | None = None,
) -> contextlib.AbstractAsyncContextManager[TeamRun]:
    """Fork ``session`` of ``journal`` and run the fork on, from asyncio:
    :func:`orchestrator.fork`'s calls (its arguments are its, and ``on_approval`` and
    ``on_question`` may be ``async def``, as for :func:`open_run`)."""
    arguments = {
        "session": session,
        "journal": journal,
        "at_turn": at_turn,
        "at": at,
        "prompt": prompt,
        "team": team,
        "model": model,
    }
    return _RunBlock(
        _Arguments(
            team=team or "",
            prompt=prompt or "",
            backends=backends,
            journal=journal,
            on_approval=on_approval,
            on_question=on_question,
            environ=environ,
            delta_window=DEFAULT_DELTA_WINDOW,  # a fork runs on with the runtime's default
            fork=arguments,
        )
    )


async def run_team(
    team: Team | TeamSpec | str | os.PathLike[str],
    prompt: str,
    *,
    backends: Backends = None,
    journal: str | os.PathLike[str] | FactLog | None = None,
    on_update: Callable[[RunUpdate], object] | None = None,
    on_approval: ApprovalHandler | None = None,
    on_question: QuestionHandler | None = None,
    environ: Mapping[str, str] | None = None,
    delta_window: float = DEFAULT_DELTA_WINDOW,
) -> RunOutcome:
    """Run ``team`` on ``prompt`` to the end from asyncio: :func:`orchestrator.run_team`.

    Args:
        team: A :class:`TeamSpec`, or a team file's path.
        prompt: The user's first message.
        backends: See :data:`orchestrator.Backends`.
        journal: Where the facts go, as for :func:`open_run`.
        on_update: Called with every :class:`~orchestrator.RunUpdate`; an awaitable it
            returns is awaited on the asyncio loop.
        on_approval: Decides approvals (a plain function or an ``async def``). Without it,
            an approval is denied.
        on_question: Answers questions likewise. Without it, a question is declined.
        environ: Where the team file's backends read their keys (default ``os.environ``).
        delta_window: Seconds a chat's streamed text gathers for at most before it is
            written as one fact (default 0.05; 0 writes each chunk alone). A stream is read
            as fast as the model sends it either way.

    A cancelled task cancels the run, which records that it was cancelled (as an exception
    in :func:`open_run`'s block does).
    """
    _require_asyncio("run_team")
    async with open_run(
        team,
        prompt,
        backends=backends,
        journal=journal,
        on_approval=on_approval or _embed._deny,
        on_question=on_question or _embed._decline,
        environ=environ,
        delta_window=delta_window,
    ) as run:
        if on_update is None:
            run._unsubscribe_updates()  # nobody reads: keep no facts
        else:
            async for update in run.updates():
                result = on_update(update)
                if inspect.isawaitable(result):
                    await result
        return await run.outcome()
