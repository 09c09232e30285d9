"""The root channel ``ahp-root://``: what every AHP client hears of the daemon's sessions.

Theory of operation
-------------------
:class:`RootChannel` is the one place root subscribers hear from. The daemon owns one. It tells
it, synchronously, whenever its table of live sessions changes:

- :meth:`RootChannel.session_added` as a session enters :attr:`Daemon.sessions`: created by
  ``createSession``, a ``/ws`` or AG-UI prompt, a background teammate's run, or taken up from
  the journal;
- :meth:`RootChannel.session_removed` as it leaves: disposed, ended, put away when idle, or
  forgotten unprompted.

The channel follows each session's facts as they are published (a bus observer, run before any
subscriber reads the facts). From these it keeps:

* the root state, :class:`~orchestrator.ahp.RootState` (the teams as agents, the number of
  active sessions), changed **only** by reducing a ``root/*`` action with
  :func:`~orchestrator.ahp.reduce_root` and broadcasting that same action, numbered by the
  channel's own sequence: so a snapshot (state and sequence, :meth:`RootChannel.snapshot`)
  plus the actions numbered after it is always a fresh snapshot;
* each live session's :class:`~orchestrator.ahp.SessionSummary` as subscribers were last told
  it, announced by ``root/sessionAdded`` and ``root/sessionRemoved``, and kept up to date by
  ``root/sessionSummaryChanged`` carrying only the fields that changed. ``listSessions``
  answers from the same table (:meth:`RootChannel.summaries`), so a client that folds the
  notifications holds what ``listSessions`` says.

A summary is made in one place, :func:`session_summary`. It is made from the session channel's
state as a client's ``ahp-session:`` snapshot shows it (:func:`session_channel_state`):

- its provider, title, status, activity and working directories are that state's;
- ``modifiedAt`` is the latest ``modifiedAt`` of its chats;
- ``createdAt`` is when the daemon first had the session (its run's start, for one taken up
  from the journal).

The session channel's provider is the team the session runs, the ``provider`` of the root
state's agents and of ``createSession``.

Coalescing: a change to ``modifiedAt`` alone (a chat streaming) is held back and sent, with
every other one held back, :data:`COALESCE` seconds after the first of them; any other change
goes at once and carries the latest ``modifiedAt``. ``listSessions`` and a new root subscription
send what is held back first. A field that becomes absent (``activity`` cleared) cannot be said
by a partial summary, whose absent fields mean "unchanged": the whole summary is sent again in
a ``root/sessionAdded``, which replaces the entry a client has.

Work per fact batch: one summary, when somebody listens; with no root subscriber a session is
only marked stale, and made up when one subscribes or ``listSessions`` asks.

Bounds: each subscriber (:class:`RootSubscription`) holds at most ``buffer_size`` frames not yet
taken by its connection. Publishing never waits. A subscriber that lets its buffer fill is
dropped on the spot; its connection then closes with 1008, as for a full outbox. So a slow
client never holds the daemon or another client up.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs
import structlog
import trio

from orchestrator.ahp import reduce_root, session_status
from orchestrator.ahp.actions import ActionEnvelope, RootAction, RootActiveSessionsChangedAction
from orchestrator.ahp.commands import (
    ROOT,
    SESSION_ADDED,
    SESSION_REMOVED,
    SESSION_SUMMARY_CHANGED,
    PartialSessionSummary,
    SessionAddedParams,
    SessionRemovedParams,
    SessionSummaryChangedParams,
)
from orchestrator.ahp.state import (
    AgentCapabilities,
    AgentInfo,
    ChatInteractivity,
    MultipleChatsCapability,
    RootState,
    SessionState,
    SessionSummary,
)
from orchestrator.base import evolve, now_timestamp
from orchestrator.core import Fact, TeamState
from orchestrator.protocols import (
    notification_frame,
    session_snapshot_state,
)
from orchestrator.spec import TeamSpec

__all__ = [
    "RootChannel",
    "RootSubscription",
    "session_channel_state",
]

log = structlog.get_logger("orchestrator.ahp")

#: Seconds a ``modifiedAt``-only change of a session's summary may be held back.
COALESCE: Final = 1.0

#: The SessionSummary fields a ``root/sessionSummaryChanged`` may carry: all but the identity
#: fields (``resource``, ``provider``, ``createdAt``), which never change.
_MUTABLE_FIELDS: Final = (
    "title",
    "status",
    "activity",
    "project",
    "working_directories",
    "annotations",
    "modified_at",
    "changes",
    "meta",
)


# ─── A session as the root channel shows it ──────────────────────────────────


def agents_of(
    teams: Mapping[str, TeamSpec], unavailable: Mapping[str, str]
) -> tuple[AgentInfo, ...]:
    """The root state's agents: one per team that can run, its provider the team's name.

    Each can fork a chat at a turn, and open a side chat from one (``createChat`` with a
    ``source``): ``capabilities.multipleChats.{fork, sideChat}``."""
    return tuple(
        AgentInfo(
            provider=name,
            display_name=team.name,
            description=f"team {team.name}: {team.topology}, coordinator {team.coordinator}",
            models=(),
            # A chat of a session can be forked, or a side chat opened from it, at a turn.
            capabilities=AgentCapabilities(
                multiple_chats=MultipleChatsCapability(fork=True, side_chat=True)
            ),
        )
        for name, team in sorted(teams.items())
        if name not in unavailable
    )


def session_channel_state(state: TeamState, provider: str) -> SessionState:
    """The session channel's state as a client's snapshot shows it: hidden chats left out,
    and the provider the session runs (its team)."""
    channel = session_snapshot_state(state.session)
    return channel if channel.provider == provider else evolve(channel, provider=provider)


# Invariant: summary.{provider, title, status, activity, project, working_directories,
#   annotations} == the same fields of session_channel_state(state, provider), and
#   summary.modified_at == max of its chats' modified_at (created_at when it has none).
def session_summary(
    uri: str, state: TeamState, *, provider: str, created_at: str
) -> SessionSummary:
    """The catalog entry of the session ``uri``, made from its channel's state.

    Read from the state as it is (the channel's state differs only by leaving hidden chats
    out, and by its provider), without building the channel's state: this runs for every
    batch of facts while somebody follows the root channel.
    """
    session = state.session or session_snapshot_state(None)  # before its first prompt
    modified = max(
        (c.modified_at for c in session.chats if c.interactivity is not ChatInteractivity.HIDDEN),
        default=created_at,
    )
    forked = state.run.forked_from if state.run is not None else None
    lineage = None
    if forked is not None:
        # A fork's lineage: which session, up to which fact, at which turn (its _meta).
        origin = {"session": forked.session, "sequence": forked.sequence}
        lineage = {"forkedFrom": origin | ({"turnId": forked.turn_id} if forked.turn_id else {})}
    return SessionSummary(
        resource=uri,
        provider=provider,
        title=session.title,
        status=session_status(session),
        activity=session.activity,
        project=session.project,
        working_directories=session.working_directories,
        annotations=session.annotations,
        created_at=created_at,
        modified_at=modified,
        meta=lineage,
    )


class FollowedSession(Protocol):
    """What the root channel reads of a live session (a :class:`LiveSession`)."""

    @property
    def uri(self) -> str: ...

    @property
    def team_name(self) -> str: ...

    @property
    def state(self) -> TeamState: ...

    def observe(self, observer: Callable[[Sequence[Fact]], None]) -> None: ...


def _summary_of(live: FollowedSession, created_at: str) -> SessionSummary:
    return session_summary(live.uri, live.state, provider=live.team_name, created_at=created_at)


# ─── Subscribers ─────────────────────────────────────────────────────────────


@attrs.frozen
class RootFrame:
    """A JSON-RPC notification for root subscribers, encoded once for all of them.
    ``seq``: the root sequence of a ``root/*`` action (None: a session notification)."""

    text: str
    seq: int | None = None


class RootSubscription:
    """One connection's place on the root channel: the frames published since it subscribed,
    bounded; :meth:`drain` takes them, :meth:`wait` waits for some."""

    def __init__(self, name: str, buffer_size: int) -> None:
        self.name = name
        self.buffer_size = buffer_size
        self._frames: deque[RootFrame] = deque()
        self._waiting = trio.lowlevel.ParkingLot()  # whoever waits for frames (its forwarder)
        self.closed = False
        self.dropped_reason: str | None = None

    def put(self, frame: RootFrame) -> bool:
        """Queue ``frame``; False (and the subscription dropped) if the buffer is full."""
        if self.closed:
            return False
        if len(self._frames) >= self.buffer_size:
            self.dropped_reason = (
                f"root subscriber {self.name!r} fell behind: its buffer of "
                f"{self.buffer_size} notifications was full"
            )
            self.close()
            return False
        self._frames.append(frame)
        self._waiting.unpark_all()
        return True

    def drain(self) -> list[RootFrame]:
        """Every frame waiting, in order (none once dropped: its connection is closing)."""
        frames = [] if self.dropped_reason is not None else list(self._frames)
        self._frames.clear()
        return frames

    async def wait(self) -> None:
        """Wait until a frame waits, or the subscription is closed."""
        if not self._frames and not self.closed:
            await self._waiting.park()

    def close(self) -> None:
        self.closed = True
        self._waiting.unpark_all()


# ─── The channel ─────────────────────────────────────────────────────────────


@attrs.define(eq=False)
class _Entry:
    """A live session on the root channel."""

    live: FollowedSession
    created_at: str
    sent: SessionSummary  # the summary subscribers were last told (listSessions gives it)
    stale: bool = False  # facts came since ``sent`` was made (held back, or nobody listened)


class RootChannel:
    """The root state, the sessions' summaries, and the subscribers who hear of them."""

    def __init__(
        self, agents: Sequence[AgentInfo], *, buffer_size: int, coalesce: float = COALESCE
    ) -> None:
        self._state = RootState(agents=tuple(agents), active_sessions=0)
        self._seq = 0
        self._buffer_size = buffer_size
        self._coalesce = coalesce
        self._sessions: dict[str, _Entry] = {}
        self._subscribers: list[RootSubscription] = []
        self._held_back = trio.Event()  # a modifiedAt-only change waits to be sent
        self.dropped = 0  # subscribers dropped for falling behind

    # ── what clients read ───────────────────────────────────────────────────

    def snapshot(self) -> tuple[RootState, int]:
        """The root state and the sequence of the last action in it."""
        return self._state, self._seq

    def summaries(self) -> list[SessionSummary]:
        """Every live session's summary, as up to date as its state (what was held back is
        sent to subscribers first)."""
        self.flush()
        return [entry.sent for entry in self._sessions.values()]

    def flush(self) -> None:
        """Send every change held back (or not yet made up) now."""
        self._refresh_stale()

    def subscribe(self, name: str) -> RootSubscription:
        """A subscription to every root frame published from now on."""
        self._refresh_stale()  # before: what a newcomer is told later is news to it
        subscription = RootSubscription(name, self._buffer_size)
        self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: RootSubscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)
        subscription.close()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @property
    def sessions(self) -> int:
        """The sessions it follows (the daemon's live ones)."""
        return len(self._sessions)

    # ── the daemon's hand ───────────────────────────────────────────────────

    def session_added(self, live: FollowedSession) -> None:
        """``live`` entered the daemon's sessions; follow its facts."""
        if live.uri in self._sessions:
            return
        run = live.state.run
        created_at = run.started_at if run is not None else now_timestamp()
        summary = _summary_of(live, created_at)
        self._sessions[live.uri] = _Entry(live=live, created_at=created_at, sent=summary)
        live.observe(functools.partial(self._observed, live))
        self._publish(SESSION_ADDED, SessionAddedParams(channel=ROOT, summary=summary))
        self._act(RootActiveSessionsChangedAction(active_sessions=len(self._sessions)))

    def session_removed(self, live: FollowedSession) -> None:
        """``live`` left the daemon's sessions (a later session of the same URI is another)."""
        entry = self._sessions.get(live.uri)
        if entry is None or entry.live is not live:
            return
        del self._sessions[live.uri]
        self._publish(SESSION_REMOVED, SessionRemovedParams(channel=ROOT, session=live.uri))
        self._act(RootActiveSessionsChangedAction(active_sessions=len(self._sessions)))

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Send what was held back, :data:`COALESCE` seconds after the first of it."""
        task_status.started()
        while True:
            await self._held_back.wait()
            await trio.sleep(self._coalesce)
            self._held_back = trio.Event()
            self._refresh_stale()

    # ── inside ──────────────────────────────────────────────────────────────

    def _observed(self, live: FollowedSession, facts: Sequence[Fact]) -> None:
        """A batch of ``live``'s facts was published (it runs inside the recorder's commit:
        quick, and never raises)."""
        entry = self._sessions.get(live.uri)
        if entry is None or entry.live is not live:
            return
        if not self._subscribers:
            entry.stale = True
            return
        try:
            self._refresh(entry, hold_back_modified=True)
        except Exception:  # an error barrier: the session's recording goes on
            log.exception("root summary not updated", session=live.uri)

    def _refresh_stale(self) -> None:
        for entry in list(self._sessions.values()):
            if entry.stale:
                self._refresh(entry, hold_back_modified=False)

    def _refresh(self, entry: _Entry, *, hold_back_modified: bool) -> None:
        """Tell subscribers how ``entry``'s summary changed since they were last told."""
        summary = _summary_of(entry.live, entry.created_at)
        changed = {
            name: getattr(summary, name)
            for name in _MUTABLE_FIELDS
            if getattr(summary, name) != getattr(entry.sent, name)
        }
        if hold_back_modified and changed.keys() == {"modified_at"}:
            entry.stale = True
            self._held_back.set()
            return
        entry.stale = False
        if not changed:
            return
        entry.sent = summary
        if any(value is None for value in changed.values()):
            # A cleared field: a partial summary cannot say so; the whole one replaces it.
            self._publish(SESSION_ADDED, SessionAddedParams(channel=ROOT, summary=summary))
            return
        params = SessionSummaryChangedParams(
            channel=ROOT, session=summary.resource, changes=PartialSessionSummary(**changed)
        )
        self._publish(SESSION_SUMMARY_CHANGED, params)

    def _act(self, action: RootAction) -> None:
        """Change the root state by ``action``, and send the action to every subscriber."""
        state = reduce_root(self._state, action)
        if state is self._state:
            return
        self._state = state
        self._seq += 1
        envelope = ActionEnvelope(channel=ROOT, action=action, server_seq=self._seq)
        self._broadcast(RootFrame(notification_frame("action", envelope), seq=self._seq))

    def _publish(self, method: str, params: Any) -> None:
        self._broadcast(RootFrame(notification_frame(method, params)))

    def _broadcast(self, frame: RootFrame) -> None:
        if not self._subscribers:
            return
        for subscription in list(self._subscribers):
            if not subscription.put(frame):
                self.dropped += 1
                self._subscribers.remove(subscription)
