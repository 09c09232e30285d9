"""Following another node's session: :class:`FollowedRuntime`, a runtime that runs nothing.

Theory of operation
-------------------
Several daemons on one PostgreSQL journal (issue 21): a client may ask any node for any
session, and the node holding the session's lease runs it. Any other node asked for it
*follows* it. :meth:`SessionFinder.find <orchestrator.sessions.SessionFinder.find>` gives the
client a :class:`~orchestrator.sessions._live_session.LiveSession` as for a session it runs.
That LiveSession is over a :class:`FollowedRuntime` instead of a
:class:`~orchestrator.runtime.TeamRuntime`. So every client protocol (the /ws agent and team
channels, AHP, AG-UI, the web view) works unchanged.

Reading: the state is opened from the journal (the latest snapshot and the facts after it).
Then :meth:`FollowedRuntime.follow` reads the facts after the state's last sequence. It folds
them (:meth:`TeamState.apply`, as the journal's reader does). It publishes them on a real
:class:`~orchestrator.runtime.FactBus`, in order and only contiguous (a fact after a gap waits
for the gap to fill). It reads:

- whenever the owner's writer notifies that it committed facts of the session (:meth:`wake`:
  see :mod:`orchestrator.journal.postgres._notify`);
- after the listening connection came back (notifications were missed);
- every :data:`FOLLOW_POLL` seconds anyway.

The numbers are the journal's, so the sequence numbers, cursors and replay are the owner's, with
no gap and no duplicate.

Writing: what would change the session is forwarded to the owner (see
:mod:`orchestrator.sessions._forwarding`) and answered as the owner answered. The owner says
which sequence its state had reached after carrying a command out. The follower returns only
once it has read that far. So a client sees the facts its request made before or with the
answer, as on the owner.

The end: when the run's end is read (its ``team/runFinished``), the followed session ends
as it does on the owner (clients' streams end, no reason given). The session's lease may
become free: its owner died and the lease expired, or it put the session away. Then the followed
session ends with a reason saying so, and its clients reattach. The node they reach then takes
the session up (the take-over scan, or :meth:`SessionFinder.find`), or follows whoever did. It
is not turned into the owned session in place. Taking up reads the journal under the new lease
(the fence orders it after the old owner's last write). It starts a new runtime with its own
bus. The follower's bus and state cannot become that runtime's. A client that
reattaches with its cursor loses nothing and sees nothing twice. A session another node
took over meanwhile needs nothing: the log is one log, and following goes on.

Another process on a SQLite journal (an ``orchestrator run`` beside the daemon) is followed
the same way (see :mod:`._sqlite_following`), with three differences:

- it is woken when the file changed;
- its owner is the process that holds the session's lock;
- nothing is forwarded to it: a :class:`Refusal` says who runs the session, and where to answer
  it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs
import structlog
import trio

from orchestrator.ahp.actions import ActionOrigin
from orchestrator.ahp.state import ChatInputResponseKind, SideChatSelection
from orchestrator.base import FactLogError, OrchestratorError, RunError
from orchestrator.core import USER, Action, Fact, TeamState, ViewUpdated
from orchestrator.journal import JournalReader
from orchestrator.runtime import FactBus, Ids, RunOutcome

from ._expected_action import ExpectedAction
from ._forwarding import Command, Origin, encode_selection

if TYPE_CHECKING:
    from ._live_session import LiveSession

__all__ = ["CommandRoute", "FollowedRuntime", "Refusal", "follow_session"]

log = structlog.get_logger("orchestrator.daemon")

#: Seconds between reads of a followed session when no notification came.
FOLLOW_POLL: Final = 2.0
#: Seconds a forwarded command's answer waits for the follower to read the facts it made.
CATCH_UP_LIMIT: Final = 5.0


class CommandRoute(Protocol):
    """Where a followed session's commands go: the owner (a :class:`Forwarder`), or
    nowhere (a :class:`Refusal`)."""

    async def call(self, session: str, command: Command, *, owner: str) -> Any:
        """Carry ``command`` out for ``session`` (run by ``owner``); its answer."""


@attrs.frozen
class Refusal:
    """The route of a session whose owner takes no commands from this daemon (a process
    on its SQLite file): every command is refused with ``why``, which says where to turn."""

    why: str

    async def call(self, session: str, command: Command, *, owner: str) -> Any:
        raise RunError(f"session {session} is run by {owner}: {self.why}")


def _node_gone(session: str, owner: str) -> str:
    return (
        f"session {session}: node {owner}, which ran it, stopped (its lease expired or was "
        "given up); reattach with your cursor: the node you reach takes the session up"
    )


class FollowedRecorder:
    """What a LiveSession asks of a recorder, for a followed session: view updates are
    forwarded, and an AHP client's expected origins wait for the command they go with."""

    def __init__(self, runtime: FollowedRuntime) -> None:
        self._runtime = runtime
        self.failed: FactLogError | None = None
        self._origins: list[Origin] = []

    async def record(self, actions: Sequence[tuple[str, Action]]) -> list[Fact]:
        for _, action in actions:
            if not isinstance(action, ViewUpdated):
                raise RunError(f"{action.type} is not forwarded to the session's node")
            await self._runtime.forward(
                Command(kind="view", view_type=action.view_type, content=dict(action.content))
            )
        return []

    def expect_origin(
        self, channel: str, matches: Callable[[Action], bool], origin: ActionOrigin
    ) -> None:
        if isinstance(matches, ExpectedAction):
            self._origins.append(Origin(chat=channel, expected=matches, origin=origin))
        else:  # only ExpectedAction can travel (see _expected_action)
            log.warning("an expected origin cannot be forwarded", session=self._runtime.session)

    def forget_origin(self, origin: ActionOrigin) -> None:
        self._origins = [o for o in self._origins if o.origin != origin]

    def take_origins(self) -> tuple[Origin, ...]:
        """The origins expected since the last command: they go with the next one."""
        origins, self._origins = tuple(self._origins), []
        return origins

    def fail(self, error: FactLogError) -> None:
        """The journal failed here: following ends, its clients told why."""
        self.failed = error
        self._runtime.end(error.message)


@attrs.frozen
class _Forwarded:
    """A forwarded cancel, awaited by whoever wants its answer (a coroutine only once
    awaited: one never awaited is not a coroutine left unawaited)."""

    start: Callable[[], Awaitable[None]]

    def __await__(self) -> Generator[Any, None, None]:
        return self.start().__await__()


class FollowedRuntime:
    """Another node's session, read from the journal (see the module docstring)."""

    def __init__(
        self,
        state: TeamState,
        *,
        owner: str,
        reader: JournalReader,
        forwarder: CommandRoute,
        live_owner: Callable[[str], str | None],
        lease_check: float,
        poll: float = FOLLOW_POLL,
        gone: Callable[[str, str], str] = _node_gone,
        blocking: Callable[[Callable[[], Any]], Awaitable[Any]] = trio.to_thread.run_sync,
    ) -> None:
        """Follow the session whose state ``state`` is, as read from the journal.

        Args:
            state: The session's state, opened from the journal.
            owner: The node holding the lease when following began.
            reader: Reads the session's facts from the journal.
            forwarder: Where what would change the session is forwarded.
            live_owner: The node whose lease has not expired, None when nobody's (blocking).
            lease_check: Seconds between two asks of ``live_owner``.
            poll: The follower reads every ``poll`` seconds anyway.
            gone: ``gone(session, owner)`` is what clients are told when the owner let go of an
                unfinished session.
            blocking: Runs a blocking call (the journal's reads, ``live_owner``) off the trio
                thread; a test whose reader is a list runs them inline, so that an autojump
                clock never jumps while a read is under way in a thread it cannot see.
        """
        self._state = state
        self.owner = owner
        self.bus = FactBus()
        self.ids = Ids()
        self.recorder = FollowedRecorder(self)
        self._reader = reader
        self._forwarder = forwarder
        self._live_owner = live_owner
        self._lease_check = lease_check
        self._poll = poll
        self._gone = gone
        self._blocking = blocking
        self._wake = trio.Event()
        self._progress = trio.Event()
        self._ending = False
        # Why following ended, when clients must be told (None: the run ended, as on the
        # owner).
        self.end_reason: str | None = None
        self.read_facts = 0

    @property
    def session(self) -> str:
        return self._state.session_uri

    @property
    def state(self) -> TeamState:
        return self._state

    # ── reading ────────────────────────────────────────────────────────────

    def wake(self, sequence: int | None = None) -> None:
        """Facts up to ``sequence`` were committed (None: perhaps, read to see)."""
        if sequence is None or sequence > self._state.last_sequence:
            self._wake.set()

    def end(self, reason: str | None) -> None:
        """Stop following; clients are told ``reason``."""
        if not self._ending:
            self._ending = True
            self.end_reason = reason
        self._wake.set()
        self._progress.set()

    def stop(self) -> None:
        """Stop following (the daemon stops, or the session is put away)."""
        self.end(self.end_reason)

    async def follow(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Read and publish the session's facts until its run ends or :meth:`end`."""
        task_status.started()
        check_at = trio.current_time() + self._lease_check
        while not self._ending:
            self._wake = trio.Event()  # before the read: a notification during it counts
            await self._catch_up()
            if self._finished() or self._ending:
                return
            if trio.current_time() >= check_at:
                owner = await self._blocking(lambda: self._live_owner(self.session))
                check_at = trio.current_time() + self._lease_check
                if owner is None:
                    await self._catch_up()  # what the last owner wrote before it went
                    if self._finished():
                        return
                    self.end(self._gone(self.session, self.owner))
                    return
                self.owner = owner
            with trio.move_on_at(min(trio.current_time() + self._poll, check_at)):
                await self._wake.wait()

    async def _catch_up(self) -> None:
        after = self._state.last_sequence
        try:
            facts = await self._blocking(lambda: self._reader.facts(self.session, after=after))
        except (OrchestratorError, OSError) as exc:
            log.warning("followed session not read", session=self.session, error=str(exc))
            return
        contiguous: list[Fact] = []
        for fact in facts:
            if fact.sequence != after + len(contiguous) + 1:
                break  # a gap: read again at the next wake
            contiguous.append(fact)
        if not contiguous or self._state.last_sequence != after:
            return
        try:
            for fact in contiguous:
                self._state.apply(fact)
        except Exception as exc:  # a fact this node cannot fold: it cannot follow
            log.exception("followed session cannot be folded", session=self.session)
            self.end(f"session {self.session} cannot be followed here: {exc}")
            return
        self.read_facts += len(contiguous)
        self.bus.publish_nowait(contiguous)
        self._progress.set()
        self._progress = trio.Event()

    def _finished(self) -> bool:
        run = self._state.run
        return run is not None and run.status is not None

    async def caught_up(self, sequence: int) -> None:
        """Return once the facts up to ``sequence`` are read (or following ended), waiting
        :data:`CATCH_UP_LIMIT` seconds at most."""
        with trio.move_on_after(CATCH_UP_LIMIT):
            while self._state.last_sequence < sequence and not self._ending:
                progress = self._progress
                self._wake.set()
                await progress.wait()

    # ── writing: forwarded to the owner ────────────────────────────────────

    async def forward(self, command: Command) -> Any:
        """Forward ``command`` (with the origins expected since the last) to the owner;
        its value once this node has read the facts it made."""
        origins = self.recorder.take_origins()
        if self._ending:
            raise RunError(self.end_reason or f"session {self.session} has ended here")
        answer = await self._forwarder.call(
            self.session, attrs.evolve(command, origins=origins), owner=self.owner
        )
        value, sequence = _answer(answer)
        await self.caught_up(sequence)
        return value

    async def queue(self, chat: str, text: str, *, message_id: str | None = None) -> str:
        command = Command(kind="queue", chat=chat, text=text, message=message_id or "")
        return _message(await self.forward(command))

    async def steer(self, chat: str, text: str, *, principal: str | None = None) -> str:
        command = Command(kind="steer", chat=chat, text=text, principal=principal)
        return _message(await self.forward(command))

    async def board_request(
        self, op: str, item: str, fields: Mapping[str, Any], *, by: str
    ) -> None:
        """A person's board request, carried out by the owner (which refuses it as its
        board would); returns once this node has read the facts it made."""
        command = Command(kind="board", request=op, text=item, content=dict(fields), principal=by)
        await self.forward(command)

    async def answer_input(
        self,
        chat: str,
        request_id: str,
        answer: str,
        *,
        response: ChatInputResponseKind = ChatInputResponseKind.ACCEPT,
    ) -> None:
        await self.forward(
            Command(
                kind="answer_input",
                chat=chat,
                request=request_id,
                text=answer,
                response=str(response.value),
            )
        )

    async def resolve_approval(
        self, approval: str, *, approved: bool, by: str = USER, principal: str | None = None
    ) -> None:
        if by != USER:
            raise RunError(f"only the user's decisions are forwarded, not {by}'s")
        await self.forward(
            Command(kind="decide", approval=approval, approved=approved, principal=principal)
        )

    def cancel_turn(self, chat: str) -> Awaitable[None]:
        return _Forwarded(lambda: self._forward_none(Command(kind="cancel_turn", chat=chat)))

    def cancel_worker(self, chat: str) -> Awaitable[None]:
        return _Forwarded(lambda: self._forward_none(Command(kind="cancel_worker", chat=chat)))

    def cancel(self) -> Awaitable[None]:
        return _Forwarded(lambda: self._forward_none(Command(kind="cancel")))

    async def fork_chat(
        self,
        chat: str,
        *,
        source: str,
        turn_id: str,
        side: bool = False,
        selection: SideChatSelection | None = None,
    ) -> None:
        """Open a forked chat or side chat on the owner (see :meth:`TeamRuntime.fork_chat`);
        returns once this node has read the facts that add it."""
        await self.forward(
            Command(
                kind="side_chat" if side else "fork_chat",
                chat=chat,
                request=source,
                approval=turn_id,
                content={} if selection is None else encode_selection(selection),
            )
        )

    async def prompt_chat(self, chat: str, text: str) -> None:
        await self.forward(Command(kind="prompt_chat", chat=chat, text=text))

    async def dispose_chat(self, chat: str) -> None:
        await self.forward(Command(kind="dispose_chat", chat=chat))

    def end_conversation(self) -> Awaitable[None]:
        return _Forwarded(lambda: self._forward_none(Command(kind="end")))

    async def _forward_none(self, command: Command) -> None:
        await self.forward(command)

    async def start(self, prompt: str) -> None:
        """Start the run of a session its owner opened and nobody has prompted yet (or
        queue ``prompt`` there, if someone did meanwhile); returns once its first facts are
        read here."""
        await self.forward(Command(kind="prompt", text=prompt))

    async def run(
        self, prompt: str, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
    ) -> RunOutcome:
        raise RunError(f"session {self.session} runs on node {self.owner}: this node follows it")


def _answer(answer: Any) -> tuple[Any, int]:
    """An owner's answer: its value and the sequence its state had reached."""
    if isinstance(answer, dict):
        sequence = answer.get("sequence")
        return answer.get("value"), sequence if isinstance(sequence, int) else 0
    return None, 0


def _message(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    raise RunError(f"the session's node answered with no message id: {value!r:.200}")


async def follow_session(
    live: LiveSession,
    runtime: FollowedRuntime,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Follow ``live``'s session with ``runtime`` until it ends, then close ``live`` for its
    clients (told why). The error barrier of one followed session: a failure to follow it
    ends the following, saying so, and never reaches the daemon's other sessions."""
    structlog.contextvars.bind_contextvars(session=live.uri, team=live.team_name)
    try:
        await runtime.follow(task_status=task_status)
    except Exception as exc:
        log.error("following failed", session=live.uri, error=str(exc), exc_info=exc)
        runtime.end(f"session {live.uri} cannot be followed here: {exc}")
    finally:
        live.close_streams()
        live.end_sinks(runtime.end_reason)
        live.finished.set()
