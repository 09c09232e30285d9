"""Running a team from a program: :func:`open_run`, :func:`run_team`, :func:`run_team_sync`.

The layer packages give the parts (a :class:`~orchestrator.runtime.TeamRuntime`, a fact
log, the backends, the bus, the Agent UI projector); the CLI's ``run`` puts them together
with a console. This module puts them together for a program instead, and owns every
resource it opens: the HTTP client the team file's backends share, the SQLite journal when
given a path, the run's task. Leaving :func:`open_run`'s block waits for the run to end
(or cancels it, if the block raised), stops the journal (which drains what was submitted),
then closes the HTTP client.

What a program sees is what the CLI's outputs see: every fact once it is durable, in order,
with its Agent UI envelopes (:class:`RunUpdate`). Approvals routed to the user and the
agents' questions are answered through :class:`TeamRun` (the runtime's own doors:
``resolve_approval`` and ``answer_input``), or by the callbacks given to :func:`open_run`.
:meth:`TeamRun.stream` tells the run in the form asked for (the items and their projections
are :mod:`orchestrator._streams`); for it, the run keeps every durable batch.

Nothing here writes to stdout or configures logging: the library's loggers go to the
standard library's ``logging`` (quiet unless the program configures it; see
:func:`orchestrator.runtime.library_logging`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast, overload

import attrs
import sniffio
import trio

from orchestrator._streams import (
    FactUpdate,
    MessageDelta,
    MessageEnd,
    Projection,
    TeamSnapshot,
    projection,
)
from orchestrator.ahp.actions import ChatInputRequestedAction
from orchestrator.ahp.state import ChatInputRequest, ChatInputResponseKind
from orchestrator.base import RunError, leaf_exceptions
from orchestrator.core import (
    USER,
    ApprovalRequested,
    Backend,
    Board,
    BoardItem,
    Fact,
    MemberName,
    member_name,
)
from orchestrator.journal import open_journal
from orchestrator.protocols import AgentUiProjector, Envelope
from orchestrator.runtime import (
    DEFAULT_DELTA_WINDOW,
    BoardKeeper,
    FactLog,
    MemoryFactLog,
    RunOutcome,
    Subscription,
    TeamRuntime,
    library_logging,
    require_prompt,
)
from orchestrator.runtime.backends import backend_factory, http_client
from orchestrator.spec import AgentSpec, Team, TeamSpec, load_team

__all__ = [
    "ApprovalHandler",
    "Backends",
    "Question",
    "QuestionHandler",
    "RunBoard",
    "RunUpdate",
    "TeamRun",
    "fork",
    "open_run",
    "run_team",
    "run_team_sync",
]

#: Which backend answers each agent: None (what the team file says), one :class:`Backend`
#: for every agent, a mapping of agent names to backends (the others as the file says), or
#: a factory called once per agent.
Backends: TypeAlias = Backend | Mapping[str, Backend] | Callable[[AgentSpec], Backend] | None


@attrs.frozen(kw_only=True)
class Question:
    """An agent's question to the user (its ``ask`` tool), open until answered."""

    chat: str  # the asking chat's URI
    agent: str  # the asking agent's name
    request: ChatInputRequest  # the question(s) as the protocol has them
    # Who asks as people are shown it (``researcher #3``) and the task it works on; None
    # only for a chat that is no member of the team.
    asked_by: MemberName | None = None

    @property
    def name(self) -> str:
        """``"researcher #3"``: the asking agent's name and number (its name alone when the
        chat is no member)."""
        return self.asked_by.label if self.asked_by is not None else self.agent

    @property
    def id(self) -> str:
        return self.request.id

    @property
    def message(self) -> str:
        return self.request.message or ""


#: Decides an approval: True approves, False denies (may be a coroutine function).
ApprovalHandler: TypeAlias = Callable[[ApprovalRequested], bool | Awaitable[bool]]
#: Answers a question: the answer text, or None to decline it (may be a coroutine function).
QuestionHandler: TypeAlias = Callable[[Question], str | Awaitable[str | None] | None]


@attrs.frozen(kw_only=True)
class RunUpdate:
    """One recorded fact of the run and the Agent UI envelopes it projects to."""

    fact: Fact
    envelopes: tuple[Envelope, ...]
    # Set when this fact asks the user something: an approval routed to the user, or an
    # agent's question. Answer through TeamRun.approve / deny / answer.
    approval: ApprovalRequested | None = None
    question: Question | None = None


class _Updates:
    """The iterator :meth:`TeamRun.updates` returns (a plain iterator: breaking out of the
    loop leaves no generator to finalize)."""

    def __init__(self, run: TeamRun, subscription: Subscription) -> None:
        self._run = run
        self._subscription = subscription
        # Projected from the runtime's state as the subscription follows it (one fold).
        self._projector = AgentUiProjector(run.session, subscription.state)

    def __aiter__(self) -> _Updates:
        return self

    async def __anext__(self) -> RunUpdate:
        fact = await self._subscription.__anext__()
        return RunUpdate(
            fact=fact,
            envelopes=tuple(self._projector.feed(fact)),
            approval=_approval_of(fact),
            question=self._run._question_of(fact),
        )


class _Stream:
    """The iterator :meth:`TeamRun.stream` returns: the run's batches from the first, each
    through the mode's projection (a plain iterator, as :class:`_Updates`)."""

    def __init__(self, run: TeamRun, projection: Projection) -> None:
        self._run = run
        self._projection = projection
        self._read = 0  # batches of the run projected so far
        self._items: deque[Any] = deque()

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> Any:
        run = self._run
        while not self._items:
            if self._read < len(run._batches):
                self._items.extend(self._projection.feed(run._batches[self._read]))
                self._read += 1
            elif run._done.is_set():
                raise StopAsyncIteration
            else:
                await run._batch_recorded.wait()
        return self._items.popleft()


class RunBoard:
    """The board of a run, as a person works it (``TeamRun.board``).

    Each method records the board's facts attributed to ``by`` (a person's name: ``"user"``
    unless given), and returns the board after them. A change the board refuses (an item
    someone else claimed, a dependency not done) raises
    :class:`~orchestrator.runtime.BoardRefusedError`, saying why; nothing is recorded then.
    """

    def __init__(self, keeper: BoardKeeper) -> None:
        self._keeper = keeper

    @property
    def items(self) -> Mapping[str, BoardItem]:
        """The items, in the order they were created, as the facts leave them."""
        return self._keeper.board.items

    async def claim(self, item: str, *, by: str = USER) -> Board:
        return await self._keeper.request("claim", item, {}, by=by)

    async def comment(self, item: str, text: str, *, by: str = USER) -> Board:
        """Comment; a comment by whom a blocked item waits for lifts the block."""
        return await self._keeper.request("comment", item, {"text": text}, by=by)

    async def block(
        self, item: str, reason: str, *, waiting_for: str | None = None, by: str = USER
    ) -> Board:
        """Block ``item``; ``waiting_for``: an agent's name, or a person as ``@name``."""
        fields = {"reason": reason} | ({"waitingFor": waiting_for} if waiting_for else {})
        return await self._keeper.request("block", item, fields, by=by)

    async def unblock(self, item: str, *, by: str = USER) -> Board:
        return await self._keeper.request("unblock", item, {}, by=by)

    async def done(self, item: str, *, summary: str = "", by: str = USER) -> Board:
        return await self._keeper.request("done", item, {"summary": summary}, by=by)

    async def assign(self, item: str, assignee: str, *, by: str = USER) -> Board:
        """Give ``item`` to an agent (its name) or a person (``@name``)."""
        return await self._keeper.request("assign", item, {"assignee": assignee}, by=by)


class TeamRun:
    """A run in progress, as :func:`open_run` hands it out."""

    def __init__(self, runtime: TeamRuntime) -> None:
        self.runtime = runtime
        # Every durable batch of the run, kept for the streams (each reads from the first)
        # and the state they start from.
        self._batches: list[Sequence[Fact]] = []
        self._batch_recorded = trio.Event()  # set (and replaced) at each batch, and at the end
        self._first_state = runtime.state.copy()
        self._keeping = True  # False once nobody can open a stream (run_team)
        runtime.bus.observe(self._record_batch)
        # Subscribed before the run starts: the first iteration sees the first fact.
        self._subscription = runtime.bus.subscribe(
            "embed", buffer_size=float("inf"), state=runtime.state
        )
        self._iterated = False
        self._outcome: RunOutcome | None = None
        self._ended_by: BaseException | None = None  # what cut the run off, if it was
        self._done = trio.Event()

    @property
    def session(self) -> str:
        """The session's URI (its facts' ``session``; ``orchestrator events`` takes it)."""
        return self.runtime.session

    @property
    def team(self) -> TeamSpec:
        return self.runtime.team

    def updates(self) -> AsyncIterator[RunUpdate]:
        """Every fact from the run's first, with its envelopes, as each becomes durable;
        the iteration ends when the run has ended. One iteration a run: the facts are
        buffered for it from the start, however late it begins."""
        if self._iterated:
            raise RuntimeError("updates() of a run can be iterated once")
        self._iterated = True
        return _Updates(self, self._subscription)

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
        """The run as ``mode`` tells it, from its first fact on; the iteration ends when the
        run has ended.

        - ``"messages"``: what each agent writes as it streams: a :class:`MessageDelta` per
          piece of text (or reasoning, marked so), with who writes it (``researcher #3``), its
          chat, turn and message ids; a :class:`MessageEnd` when a message is complete.
        - ``"updates"``: a :class:`FactUpdate` per fact: the fact and what it changed in the
          team's state (RFC 6902 operations on the team view AG-UI clients hold).
        - ``"values"``: a :class:`TeamSnapshot` after each durable batch of facts: members,
          tasks, pending approvals, the run's status and its final answer.
        - ``"events"``: the Agent UI envelopes of each fact (:class:`Envelope`), as
          :meth:`updates` carries them.
        - ``"agui"``: AG-UI events (JSON-ready dicts) as the daemon's ``/agui`` endpoint sends
          them; a run interrupted by approvals for the user goes on in the next AG-UI run
          (``run-2``...) once they are decided.

        Any number of streams of a run may be open at once, beside :meth:`updates`. Each
        starts from the run's first fact, however late it is opened, and reads at its own
        pace: for them, the :class:`TeamRun` keeps the run's facts in memory. An unknown
        ``mode`` raises :class:`ValueError` listing the modes.
        """
        return _Stream(self, projection(mode, self._first_state))

    async def outcome(self) -> RunOutcome:
        """Wait for the run to end; how it ended (status, the coordinator's answer or the
        error)."""
        await self._done.wait()
        if self._outcome is None:
            # The run was cut off (a callback raised, the journal broke, the block was
            # cancelled): there is no status to give, and the cause is named.
            cause = self._ended_by
            why = "it was cancelled" if isinstance(cause, trio.Cancelled) else repr(cause)
            raise RunError(f"the run ended without an outcome: {why}") from cause
        return self._outcome

    def pending_approvals(self) -> list[ApprovalRequested]:
        """The approvals waiting for the user's decision."""
        return self.runtime.waiting_for_user()[0]

    def open_questions(self) -> list[Question]:
        """The agents' questions waiting for an answer."""
        return [self._question(chat, r) for chat, r in self.runtime.waiting_for_user()[1]]

    async def approve(self, approval: str) -> None:
        """Approve a pending approval (its ``approval`` id); returns once applied."""
        await self.runtime.resolve_approval(approval, approved=True)

    async def deny(self, approval: str) -> None:
        """Deny a pending approval; the tool call fails with the denial."""
        await self.runtime.resolve_approval(approval, approved=False)

    async def answer(self, question: Question, text: str | None) -> None:
        """Answer ``question`` (a number, yes/no, option ids... as it asks); None declines.

        :class:`~orchestrator.base.RunError` says what was expected; the question stays open.
        """
        if text is None:
            await self.runtime.answer_input(
                question.chat, question.id, "", response=ChatInputResponseKind.DECLINE
            )
        else:
            await self.runtime.answer_input(question.chat, question.id, text)

    def cancel(self) -> None:
        """Cancel the whole team: the run ends ``cancelled``."""
        self.runtime.cancel()

    @property
    def board(self) -> RunBoard:
        """The team's board (:class:`RunBoard`); :class:`RunError` if its file has none."""
        keeper = self.runtime.board
        if keeper is None:
            raise RunError(f"team {self.runtime.team.name!r} declares no [board]")
        return RunBoard(keeper)

    # ── inside ──────────────────────────────────────────────────────────────

    def _keep_no_batches(self) -> None:
        """Keep no batch from now on (for a run no stream can be opened of)."""
        self._keeping = False
        self._batches.clear()

    def _record_batch(self, facts: Sequence[Fact]) -> None:
        """Keep a durable batch for the streams and wake those waiting for it."""
        if self._keeping:
            self._batches.append(tuple(facts))
        self._batch_recorded.set()
        self._batch_recorded = trio.Event()

    def _question(self, chat: str, request: ChatInputRequest) -> Question:
        asked_by = member_name(self.runtime.state, chat)
        agent = asked_by.agent if asked_by is not None else ""
        return Question(chat=chat, agent=agent, request=request, asked_by=asked_by)

    def _question_of(self, fact: Fact) -> Question | None:
        if isinstance(fact.action, ChatInputRequestedAction):
            return self._question(fact.channel, fact.action.request)
        return None

    async def _drive(
        self,
        start: Callable[..., Awaitable[RunOutcome]],
        *,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``start`` (the runtime's ``run`` of a prompt, or its ``resume``) to the end."""
        try:
            self._outcome = await start(task_status=task_status)
        except BaseException as exc:
            self._ended_by = exc
            raise
        finally:
            # The readers drain what is buffered for them, then their iteration ends.
            self.runtime.bus.close()
            self._done.set()
            self._batch_recorded.set()

    async def _decide(
        self,
        subscription: Subscription,
        on_approval: ApprovalHandler | None,
        on_question: QuestionHandler | None,
    ) -> None:
        """Hand every approval and question to its callback, each in a task of its own."""
        async with trio.open_nursery() as nursery:
            async for fact in subscription:
                approval = _approval_of(fact)
                if approval is not None and on_approval is not None:
                    nursery.start_soon(self._approval_decided, on_approval, approval)
                question = self._question_of(fact)
                if question is not None and on_question is not None:
                    nursery.start_soon(self._question_answered, on_question, question)

    async def _approval_decided(self, handler: ApprovalHandler, request: ApprovalRequested) -> None:
        approved = handler(request)
        if inspect.isawaitable(approved):
            approved = await approved
        if not self._done.is_set():  # a decision after the end has nothing to decide
            await self.runtime.resolve_approval(request.approval, approved=bool(approved))

    async def _question_answered(self, handler: QuestionHandler, question: Question) -> None:
        text = handler(question)
        if inspect.isawaitable(text):
            text = await text
        if not self._done.is_set():
            await self.answer(question, text)


def _alone(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception ``group`` holds, cancellations aside; None if it holds several,
    or only cancellations."""
    errors, _ = leaf_exceptions(group, setting_aside=trio.Cancelled)
    return errors[0] if len(errors) == 1 else None


def _approval_of(fact: Fact) -> ApprovalRequested | None:
    action = fact.action
    if isinstance(action, ApprovalRequested) and action.routed_to == USER:
        return action
    return None


def _require_trio(call: str) -> None:
    """Refuse ``call`` (``"open_run"``) under asyncio at once, naming the asyncio API:
    trio's own failure there is an ``AttributeError`` deep inside it."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return  # not in an event loop's task: trio says what it needs
    if library == "asyncio":
        raise RuntimeError(
            f"orchestrator.{call} runs under trio, and this is asyncio: use "
            f"orchestrator.aio.{call} (from orchestrator import aio), the same call for asyncio"
        )
    if library != "trio":
        raise RuntimeError(f"orchestrator.{call} runs under trio, and this is {library}")


def _team_of(team: Team | TeamSpec | str | os.PathLike[str]) -> TeamSpec:
    if isinstance(team, Team):
        return team.spec
    return team if isinstance(team, TeamSpec) else load_team(Path(team))


@contextlib.asynccontextmanager
async def open_run(
    team: Team | TeamSpec | str | os.PathLike[str],
    prompt: str,
    *,
    backends: Backends = None,
    journal: str | os.PathLike[str] | FactLog | None = None,
    on_approval: ApprovalHandler | None = None,
    on_question: QuestionHandler | None = None,
    environ: Mapping[str, str] | None = None,
    delta_window: float = DEFAULT_DELTA_WINDOW,
) -> AsyncIterator[TeamRun]:
    """Start ``team`` on ``prompt``; the block gets the :class:`TeamRun` once its first facts
    are recorded.

    Args:
        team: A :class:`Team`, a :class:`TeamSpec`, or a team file's path.
        prompt: The user's first message.
        backends: See :data:`Backends`.
        journal: None keeps the facts in memory. A path (or a ``postgresql://`` URL) opens
            (creating) a journal for the run and closes it after. A
            :class:`~orchestrator.runtime.FactLog` is used as it is; a
            :class:`~orchestrator.journal.SqliteJournal` must then be served by the caller.
        on_approval: Decides approvals as they come. Without it, the block does
            (:meth:`TeamRun.approve`) or the run waits.
        on_question: Answers questions as they come. Without it, the block does
            (:meth:`TeamRun.answer`) or the run waits.
        environ: Where the team file's backends read their keys (default ``os.environ``).
        delta_window: Seconds a chat's streamed text gathers for at most before it is
            written as one fact (default 0.05; 0 writes each chunk alone). A stream is read
            as fast as the model sends it either way.

    Leaving the block waits for the run to end; an exception in it cancels the run first.
    Problems found before the run starts raise here, before any fact is written: an empty
    prompt, a team file that does not parse, a backend that cannot be made. Under asyncio it
    raises at once: :mod:`orchestrator.aio` has the same calls for asyncio.
    """
    _require_trio("open_run")
    library_logging()
    spec = _team_of(team)
    require_prompt(prompt)
    try:
        async with contextlib.AsyncExitStack() as stack:
            factory = await _backend_factory(stack, spec, backends, environ)
            factlog: FactLog
            if journal is None:
                factlog = MemoryFactLog()
            elif isinstance(journal, str | os.PathLike):
                durable = open_journal(journal)  # a SQLite file's path, or postgresql://...
                await trio.to_thread.run_sync(durable.open)  # a refused journal raises here
                services = await stack.enter_async_context(trio.open_nursery())
                # Exits run last first: the run's nursery ends, then this stops the journal.
                stack.callback(services.cancel_scope.cancel)
                await services.start(durable.serve)
                factlog = durable
            else:
                factlog = journal
            runtime = TeamRuntime(
                spec, backends=factory, factlog=factlog, delta_window=delta_window
            )
            run = TeamRun(runtime)
            deciding = runtime.bus.subscribe("embed-decisions", buffer_size=float("inf"))
            async with trio.open_nursery() as nursery:
                if on_approval is not None or on_question is not None:
                    nursery.start_soon(run._decide, deciding, on_approval, on_question)
                else:
                    runtime.bus.unsubscribe(deciding)
                await nursery.start(run._drive, functools.partial(runtime.run, prompt))
                try:
                    yield run
                except BaseException:
                    run.cancel()
                    raise
                await run.outcome()
    except BaseExceptionGroup as group:
        # One error (the block's, or the run's: a fact log that failed to start, say)
        # comes out as it was raised, not in the groups the nurseries (the run's, the
        # journal's) wrap it in with the cancellations it caused: ``except RunError`` works
        # around open_run.
        alone = _alone(group)
        if alone is not None:
            raise alone from None
        raise


@contextlib.asynccontextmanager
async def fork(
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
) -> AsyncIterator[TeamRun]:
    """Fork ``session`` of ``journal`` and run the fork on; the block gets its :class:`TeamRun`.

    The fork is a new session of the same journal. Its first facts copy the source's up to
    the end of turn ``at_turn``, or up to fact ``at`` (default: the source's last fact, its
    run's end left out). Then it is taken up as a resume after a crash takes a run up: what
    was in flight at the fork point goes on, or is cut off and run again, as the team's
    ``on_restart`` says. The source is only read.

    Args:
        session: The source session's URI.
        journal: The journal that has it: a SQLite file's path, or a ``postgresql://`` URL.
        at_turn: Fork where this turn ended.
        at: Fork after this fact.
        prompt: The coordinator's next message, once the fork is taken up.
        team: Run the fork with this team instead of the source's (agents matched by name;
            open work of an agent it lacks is cancelled, with the reason).
        model: The model of the team's OpenAI-compatible agents.
        backends: See :data:`Backends`.
        on_approval: As for :func:`open_run`.
        on_question: As for :func:`open_run`.
        environ: Where the team file's backends read their keys (default ``os.environ``).
    """
    _require_trio("fork")
    library_logging()
    given = None if team is None else _team_of(team)
    if prompt is not None:
        require_prompt(prompt)
    from orchestrator.sessions import fork_session
    from orchestrator.spec import parse_team, with_model

    try:
        async with contextlib.AsyncExitStack() as stack:
            durable = open_journal(journal)
            await trio.to_thread.run_sync(durable.open)
            services = await stack.enter_async_context(trio.open_nursery())
            stack.callback(services.cancel_scope.cancel)
            await services.start(durable.serve)
            made = await fork_session(
                durable,
                session,
                turn_id=at_turn,
                sequence=at,
                runs_on=True,
                team=None if given is None else (given.file, given.source),
            )
            if given is None:
                team_file, team_toml = durable.reader.team_toml(session)
                if not team_toml:
                    raise RunError(f"{session} did not record its team file: pass team=")
                given = parse_team(team_toml, file=team_file or "<journal>")
            if model is not None:
                given = with_model(given, model)
            factory = await _backend_factory(stack, given, backends, environ)
            state = await trio.to_thread.run_sync(durable.reader.open, made.session)
            runtime = TeamRuntime(given, backends=factory, factlog=durable, state=state)
            run = TeamRun(runtime)
            deciding = runtime.bus.subscribe("embed-decisions", buffer_size=float("inf"))
            resume = functools.partial(runtime.resume, prompt=prompt, cancel_removed_work=True)
            async with trio.open_nursery() as nursery:
                if on_approval is not None or on_question is not None:
                    nursery.start_soon(run._decide, deciding, on_approval, on_question)
                else:
                    runtime.bus.unsubscribe(deciding)
                await nursery.start(run._drive, resume)
                # Asked before the fork point, asked again: to the callbacks too.
                if on_approval is not None:
                    for approval in run.pending_approvals():
                        nursery.start_soon(run._approval_decided, on_approval, approval)
                if on_question is not None:
                    for question in run.open_questions():
                        nursery.start_soon(run._question_answered, on_question, question)
                try:
                    yield run
                except BaseException:
                    run.cancel()
                    raise
                await run.outcome()
    except BaseExceptionGroup as group:
        alone = _alone(group)
        if alone is not None:
            raise alone from None
        raise


async def _backend_factory(
    stack: contextlib.AsyncExitStack,
    team: TeamSpec,
    backends: Backends,
    environ: Mapping[str, str] | None,
) -> Callable[[AgentSpec], Backend]:
    """The runtime's factory for ``backends`` (see :data:`Backends`); the team file's
    backends are made now, with an HTTP client the stack closes."""
    if backends is None:
        given: Mapping[str, Backend] = {}
    elif isinstance(backends, Mapping):
        given = backends
    elif callable(getattr(backends, "stream_round", None)):
        only = cast(Backend, backends)
        return lambda agent: only
    else:
        return cast(Callable[[AgentSpec], Backend], backends)
    unknown = sorted(set(given) - set(team.agent_names))
    if unknown:
        raise ValueError(
            f"backends for agents the team {team.name!r} does not have: {', '.join(unknown)}"
        )
    rest = [a.name for a in team.agents if a.name not in given]
    if not rest:
        return lambda agent: given[agent.name]
    client = await stack.enter_async_context(http_client())
    from_file = backend_factory(team, client=client, environ=environ, agents=rest)
    return lambda agent: given[agent.name] if agent.name in given else from_file(agent)


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
    """Run ``team`` on ``prompt`` to the end; how it ended.

    As :func:`open_run`, but unattended, so the run never waits for someone who is not there.

    Args:
        team: A :class:`Team`, a :class:`TeamSpec`, or a team file's path.
        prompt: The user's first message.
        backends: See :data:`Backends`.
        journal: Where the facts go, as for :func:`open_run`.
        on_update: Called with every :class:`RunUpdate`; awaited if it returns an awaitable.
        on_approval: Decides approvals as they come. Without it, an approval is denied.
        on_question: Answers questions as they come. Without it, a question is declined.
        environ: Where the team file's backends read their keys (default ``os.environ``).
        delta_window: Seconds a chat's streamed text gathers for at most before it is
            written as one fact (default 0.05; 0 writes each chunk alone). A stream is read
            as fast as the model sends it either way.
    """
    _require_trio("run_team")
    async with open_run(
        team,
        prompt,
        backends=backends,
        journal=journal,
        on_approval=on_approval or _deny,
        on_question=on_question or _decline,
        environ=environ,
        delta_window=delta_window,
    ) as run:
        run._keep_no_batches()  # the run is not handed out: no stream can be opened
        if on_update is None:
            run.runtime.bus.unsubscribe(run._subscription)  # nobody reads: keep no facts
        else:
            async for update in run.updates():
                result = on_update(update)
                if inspect.isawaitable(result):
                    await result
        return await run.outcome()


def run_team_sync(
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
    """:func:`run_team` for a script with no event loop of its own: runs trio itself.

    The callbacks are called on trio's thread; returning an awaitable is allowed.
    """
    return trio.run(
        lambda: run_team(
            team,
            prompt,
            backends=backends,
            journal=journal,
            on_update=on_update,
            on_approval=on_approval,
            on_question=on_question,
            environ=environ,
            delta_window=delta_window,
        )
    )


def _deny(request: ApprovalRequested) -> bool:
    return False


def _decline(question: Question) -> None:
    return None
