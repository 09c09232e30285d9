"""The daemon's sessions: every team session a nursery task, reachable by id.

Theory of operation
-------------------
:class:`Daemon` owns:

- the journal;
- the teams: one per ``*.toml`` of its teams directory, named by its ``[team] name``, the
  file's stem accepted too;
- one HTTP client for the model backends;
- the MCP tool servers of each team: one connection per server per team, shared by its
  sessions;
- a nursery in which every live session runs.

A session is a :class:`~orchestrator.runtime._team_runtime.TeamRuntime` in *conversation* mode.
It exists (with its URI) as soon as a client opens it. Its run starts with the first prompt.
Each later prompt is queued to the coordinator as its next turn (a root task of its own; between
prompts the coordinator is idle). The conversation ends when a client ends it (AHP
``disposeSession``, ``end`` on ``/ws``: see :mod:`._runs`). It also ends when it has waited
``idle_conversation`` seconds for a prompt (:mod:`._idle_sessions`).

At start the daemon takes up every unfinished session of its journal (``resume``, with the
team file the session recorded): a session is a conversation that outlives a restart. On
SIGTERM it stops each runtime without recording (:meth:`TeamRuntime.stop`), after running
turns had ``shutdown_grace`` seconds to end: the journal then holds what a crash would, and
the next start applies each team's ``on_restart``. Clients reach a session only through its
:class:`~orchestrator.sessions._live_session.LiveSession` (see that module).

The daemon imports neither the metrics nor the background teammates' scheduler (both read
it). The app assembly (:func:`orchestrator.server._app.assemble`) builds them and wires them in.
The metrics are the :class:`SessionObserver` its sessions report to. The scheduler is a
:class:`Companion` service it starts after the take-up and stops with itself.

Identity: a session's URI (and a chat's, over AHP) names it for good (see :mod:`._opening`).

Its parts, each a module of this package:

- the teams clients name (:mod:`._teams`);
- the sessions' runtimes and shared tool servers (:mod:`._team_runtimes`);
- new sessions and their bounds (:mod:`._opening`);
- finding, taking up and following sessions (:mod:`._finding`);
- starting and ending runs (:mod:`._runs`);
- the timers of idle sessions (:mod:`._idle_sessions`).

The daemon keeps which sessions are its own and which node owns each; its methods that clients call
(``find``, ``open_session``, ``dispose``, ...) are its parts'.

The root channel: :attr:`Daemon.root` (:mod:`orchestrator.sessions._root_channel`) hears of
every session that enters or leaves :attr:`Daemon.sessions` (only :meth:`Daemon._add_session`
and :meth:`Daemon._remove_session` change it) and follows their facts: what AHP clients
subscribed to ``ahp-root://`` are told of the daemon's sessions comes from there.

Who runs a session: each daemon is a *node* (its :attr:`Daemon.node` id) and runs a
session only while it owns it, through its journal's
:class:`~orchestrator.journal.SessionOwnership` (:attr:`Daemon.ownership`). On a SQLite
file that is a record lock per session; on a PostgreSQL journal several daemons share
(issue 21), a lease per session. A session is claimed when it is opened, and before an
unfinished session is read to be taken up (so the state read is the one the previous owner
left: the journal's fence orders them). What the node holds is renewed every
:attr:`~orchestrator.journal.SessionOwnership.renew_every` seconds, a lease every third of
its TTL and a lock never (:meth:`Daemon._keep_owned`); a session found taken ends here,
recording nothing ("lease lost"). It is given up when the session ends or is put away (kept
due for take-over when it still has work, e.g. on SIGTERM). As often, each node takes up
the sessions whose owner let them lapse (:meth:`Daemon._take_over`: their node died) by the
start-up's rules; a lock never lapses (the kernel frees a dead process's locks).

Any node serves any client. A node asked for a session another node holds (:mod:`._finding`)
*follows* it: see its :attr:`Daemon.following`, :mod:`._following`, :mod:`._cluster` and
:mod:`._followed`. The followed session is a LiveSession over a
:class:`~._followed.FollowedRuntime` in :attr:`Daemon.sessions` like any. Its commands are
forwarded to the owner (:mod:`._forwarding`). The cluster also carries out the commands
forwarded to this node. The lease of a session this node follows may expire (its owner died).
Then the take-over scan ends the followed session first (its clients are told to reattach) and
takes the session up. A followed session nobody watches is dropped by the idle sessions' timer.
On a SQLite journal, a session that another process on the file runs (an ``orchestrator run``
beside the daemon) is followed the same way, read-only (see :mod:`._sqlite_following`).
``run_by`` says which process runs it. Which way a
daemon follows is chosen once, from its journal's ownership
(:func:`~._following_for.following_for`): the daemon and its parts see only the protocol.

Bounds: see :mod:`._opening` and :mod:`._idle_sessions`.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from typing import Any, Final, Protocol

import attrs
import httpx
import structlog
import trio

from orchestrator.base import (
    OrchestratorError,
)
from orchestrator.journal import (
    HeldElsewhere,
    Journal,
    SessionOwnership,
)
from orchestrator.runtime import (
    DEFAULT_DELTA_WINDOW,
    ToolCallback,
)
from orchestrator.spec import TeamSpec

from ._finding import SessionFinder
from ._following import Following
from ._following_for import following_for
from ._idle_sessions import IdleSessions
from ._limits import Limits
from ._live_session import LiveSession, SessionObserver, session_uri
from ._opening import SessionOpener
from ._reclaim import Reclaimer, ReclaimStatistics
from ._root_channel import RootChannel, agents_of
from ._runs import SessionRuns
from ._session_folds import EnvelopeCache
from ._team_log import TeamLog
from ._team_runtimes import TeamRuntimes
from ._teams import TeamCatalog

__all__ = [
    "Companion",
    "Daemon",
    "DaemonStatistics",
    "default_node",
]

log = structlog.get_logger("orchestrator.daemon")


#: Seconds stopped sessions get to be done after ``shutdown_grace``: a command tool's process
#: group gets SIGKILL 2 s after SIGTERM, and the journal drains for its ``drain_limit`` (2 s)
#: within it. With hypercorn's 1.5 s after it, SIGTERM exits within ``shutdown_grace`` + 4 s:
#: 9 s with the default grace, under the 10 s a service manager commonly allows.
STOP_AFTER_GRACE: Final = 2.5
#: Seconds a session's end waits to give its lease up (a lease not given up expires).
RELEASE_LIMIT: Final = 2.0


def default_node() -> str:
    """A node id when none is configured: ``HOSTNAME:PID``, unique among running daemons.

    A restarted daemon is a new node. It takes up the sessions its predecessor left with work
    at once, as they are released. It takes up those of a crash once their leases expired. A
    stable ``node =`` takes the latter up at once too."""
    return f"{socket.gethostname()}:{os.getpid()}"


@attrs.frozen(kw_only=True)
class DaemonStatistics:
    """The daemon's per-session structures, counted (see :meth:`Daemon.statistics`)."""

    sessions: int  # live sessions
    opening: int  # URIs being opened
    claimed_chats: int  # chat URIs being claimed
    session_locks: int  # sessions being taken up or followed
    root_sessions: int  # sessions the root channel follows
    journal_sessions: int  # sessions the journal keeps something of between batches
    reclaim: ReclaimStatistics


class _Unobserved:
    """The observer of a daemon that nobody counts for."""

    def approval_waited(self, seconds: float) -> None:
        pass


class Companion(Protocol):
    """A service that runs beside the sessions (the background teammates' scheduler): the
    daemon starts it in its nursery once the journal's unfinished sessions are taken up
    (so it finds them live), and sets its ``stopping`` when the daemon stops. The app
    assembly adds it to :attr:`Daemon.companions`."""

    @property
    def stopping(self) -> trio.Event:
        """Set when the daemon stops: the companion starts nothing new."""

    async def serve(self, *, task_status: trio.TaskStatus[Any] = ...) -> None:
        """Run until cancelled; report ``task_status.started`` once ready."""


class Daemon:
    """The sessions of one daemon process; start it with ``await nursery.start(d.serve)``."""

    def __init__(
        self,
        *,
        teams: Mapping[str, TeamSpec],
        journal: Journal,
        http: httpx.AsyncClient,
        default_team: str | None = None,
        subscriber_buffer: int | None = None,
        shutdown_grace: float | None = None,
        environ: Mapping[str, str] | None = None,
        callback: ToolCallback | None = None,
        limits: Limits | None = None,
        invalid_teams: Mapping[str, str] | None = None,
        node: str | None = None,
        team_files: Mapping[str, str] | None = None,
        delta_window: float = DEFAULT_DELTA_WINDOW,
    ) -> None:
        """Make the daemon's sessions; nothing runs before :meth:`serve`.

        Args:
            teams: The teams, named by their ``[team] name``.
            journal: Where every session's facts are recorded.
            http: The one HTTP client for the model backends.
            default_team: The team of a client that names none (default: the only team).
            subscriber_buffer: Overrides the limit of that name in ``limits``.
            shutdown_grace: Overrides the limit of that name in ``limits``.
            environ: Where the teams' backends and MCP servers read their environment.
            callback: Where the teams' command tools post view updates.
            limits: The daemon's limits.
            invalid_teams: The team files that did not load (stem → why).
            node: This daemon's node id (default: its journal's ownership's node, by default
                ``HOSTNAME:PID``). Leases are reckoned in the database's clock.
            team_files: The file each team was read from. A client may name a team by its
                file's stem too, as clients did before teams were named by name.
            delta_window: Seconds a chat's streamed chunks gather for before they are
                written as one fact (daemon.toml's ``delta_window``).

        Its observer and companions (the metrics, the scheduler) are the app assembly's to set
        (see :mod:`orchestrator.server._app`).
        """
        self.catalog = TeamCatalog(
            teams, files=team_files, default=default_team, invalid=invalid_teams
        )
        self.journal = journal
        self.reader = journal.reader  # checked as the journal opened: not again
        # Sessions' Agent UI envelopes, kept between reads: the web view's, and each live
        # session's log once the session is put away or ends (see team_log).
        self.envelopes = EnvelopeCache(self.reader)
        # Several daemons on one PostgreSQL journal: the sessions this node owns (None: the
        # only node, SQLite's). Counted for /metrics: sessions taken over from a dead node.
        self.ownership: SessionOwnership = journal.ownership
        self.node = node or self.ownership.node
        self.taken_over = 0
        self.limits = limits = limits or Limits()
        buffer, grace = limits.subscriber_buffer, limits.shutdown_grace
        self.subscriber_buffer = buffer if subscriber_buffer is None else subscriber_buffer
        self.shutdown_grace = grace if shutdown_grace is None else shutdown_grace
        # Given to every session's command tools; the server sets its URL once it listens.
        self.callback = callback or ToolCallback()
        self.runtimes = TeamRuntimes(
            teams,
            journal=journal,
            http=http,
            environ=environ,
            callback=self.callback,
            delta_window=delta_window,
        )
        # The live sessions; changed only by _add_session and _remove_session, which tell
        # the root channel (what AHP root subscribers hear of the sessions).
        self.sessions: dict[str, LiveSession] = {}
        self.root = RootChannel(
            agents_of(self.catalog.teams, self.runtimes.unavailable),
            buffer_size=self.subscriber_buffer,
        )
        # Collects what the sessions that left memory held (their objects are in cycles).
        self.reclaimer = Reclaimer()
        self._nursery: trio.Nursery | None = None
        self.observer: SessionObserver = _Unobserved()
        self.companions: list[Companion] = []
        self.accepting = False
        self.stopped = trio.Event()  # set once stop() has stopped every session
        claim, release, elsewhere = self._claim, self._release, _elsewhere
        add, remove, drop = self._add_session, self._remove_session, self._drop_unprompted
        self.runs = SessionRuns(
            self,
            claim=claim,
            release=release,
            elsewhere=elsewhere,
            add=add,
            remove=remove,
            drop=drop,
        )
        launch = self.runs.launch
        self.finder = SessionFinder(self, claim=claim, release=release, launch=launch)
        self.idle = IdleSessions(self, drop=drop)
        self.opener = SessionOpener(self, claim=claim, drop_unused=self._drop_unused, add=add)
        # The daemon's API to its clients, carried out by its parts.
        self.find, self.watch = self.finder.find, self.finder.watch
        self.start_run = self.runs.start_run
        self.open_session, self.journal_knows = self.opener.open_session, self.opener.journal_knows
        self.claim_chat, self.release_chat = self.opener.claim_chat, self.opener.release_chat
        self.followed_sessions, self.run_by = self.finder.followed_sessions, self.finder.run_by
        self.dispose = self.runs.dispose
        self.evict_idle = self.idle.evict_idle
        self.expire_conversations = self.idle.expire_conversations
        self._take_up_if_busy = self.finder.take_up_if_busy
        # How this node follows a session another node or process runs (and, in a cluster,
        # serves the commands forwarded to it): chosen once, by the journal's ownership.
        self.following: Following = following_for(
            self,
            self.ownership,
            node=self.node,
            reader=self.reader,
            add=add,
            remove=remove,
            owned=self.finder.owned,
            take_up=self.finder.take_up_orphan,
        )

    # ── the service ────────────────────────────────────────────────────────

    @property
    def nursery(self) -> trio.Nursery | None:
        """Where the sessions run: set once the daemon serves."""
        return self._nursery

    async def serve(
        self, *, task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the sessions until cancelled; take up the journal's unfinished ones first."""
        async with trio.open_nursery() as nursery:
            self._nursery = self.runtimes.nursery = nursery
            nursery.start_soon(self._end_sessions_if_the_journal_fails)
            await nursery.start(self.root.serve)
            await nursery.start(self.reclaimer.serve)
            await self.finder.take_up_unfinished()
            self.accepting = True
            nursery.start_soon(self._keep_owned)
            nursery.start_soon(self._take_over)
            await nursery.start(self.following.serve)
            # After the take-up: a teammate's run that was going is followed where it is.
            for companion in self.companions:
                await nursery.start(companion.serve)
            task_status.started(self)
            await trio.sleep_forever()

    # ── who runs which session (the journal's ownership) ──────────────────

    def owned_sessions(self) -> list[str]:
        """The sessions this node owns: those it holds the lease (PostgreSQL) or the lock
        (SQLite) of."""
        return sorted(self.ownership.held)

    async def _claim(self, uri: str, *, quiet: bool = False) -> HeldElsewhere | None:
        """Claim ``uri`` for this node: None once it holds it, else who does (on SQLite
        another process on the file, an ``orchestrator run`` or ``resume`` or another
        daemon; on PostgreSQL another node, whose lease has not expired)."""
        if self.ownership.holds(uri):
            return None
        elsewhere = await trio.to_thread.run_sync(self.ownership.claim, uri)
        if elsewhere is not None and not quiet:
            log.info("session owned elsewhere", session=uri, owner=elsewhere.owner)
        return elsewhere

    async def claim(self, uri: str) -> bool:
        """Claim ``uri`` for this node without waiting: whether it holds it now (a
        background teammate's stream, claimed before it is read)."""
        return await self._claim(uri, quiet=True) is None

    async def release(self, uri: str) -> None:
        """Give ``uri`` up (a stream claimed that is not the teammate's); never raises."""
        await self._release(uri, keep=False)

    async def wait_owned(self, uri: str) -> None:
        """Return once this node holds ``uri`` (a background teammate's stream: one node
        runs the teammate, the others wait to take it over); at once when nobody else
        holds it. Tries again every :attr:`~SessionOwnership.retry_every` seconds."""
        while True:
            if await self.claim(uri):
                return
            await trio.sleep(self.ownership.retry_every)

    async def _release(self, uri: str, *, keep: bool) -> None:
        """Give up ``uri`` (``keep``: due for take-over at once); never raises, and never
        holds a stop up for long (a lease not released expires)."""
        if not self.ownership.holds(uri):
            return
        with trio.CancelScope(shield=True), trio.move_on_after(RELEASE_LIMIT):
            try:
                await trio.to_thread.run_sync(
                    functools.partial(self.ownership.release, uri, keep=keep),
                    abandon_on_cancel=True,
                )
            except OrchestratorError as exc:
                log.warning("lease not released", session=uri, error=str(exc))

    async def _keep_owned(self) -> None:
        """Renew what this node holds every :attr:`~SessionOwnership.renew_every` seconds.

        A lock is never renewed. A session another node took ends here, recording nothing
        ("lease lost"). So does every session held once renewals have failed for a whole TTL
        (others may have taken them)."""
        ownership = self.ownership
        renewed = trio.current_time()
        while True:
            await trio.sleep(ownership.renew_every)
            try:
                lost = await trio.to_thread.run_sync(ownership.renew)
            except (OrchestratorError, OSError) as exc:
                log.warning("leases not renewed", node=self.node, error=str(exc))
                if trio.current_time() - renewed < ownership.ttl:
                    continue
                lost = sorted(ownership.held)
                for uri in lost:
                    ownership.forget(uri, why="not renewed for a whole TTL")
            else:
                renewed = trio.current_time()
            for uri in lost:
                live = self.sessions.get(uri)
                if live is not None:
                    self._ownership_lost(live)

    def _ownership_lost(self, live: LiveSession) -> None:
        error = self.ownership.lost_error(live.uri)
        log.error("session stopped: lease lost", session=live.uri, node=self.node)
        if live.started:
            live.fail(error)  # its runtime ends, recording nothing; clients told why
        else:
            self._drop_unprompted(live, error.message)

    async def _take_over(self) -> None:
        """Take up the running sessions whose owner let them lapse.

        This runs every :attr:`~SessionOwnership.renew_every` seconds (a lock: never). A lapsed
        session's node died, or gave it up with work left. It is taken up by the start-up's
        rules. A session this node followed ends first (its clients reattach to the one taken
        up). After each scan, the following tidies up
        (a cluster deletes the old forwarded commands now and then)."""
        while True:
            await trio.sleep(self.ownership.renew_every)
            if not self.accepting:
                continue
            try:
                expired = await trio.to_thread.run_sync(self.ownership.expired)
            except (OrchestratorError, OSError) as exc:
                log.warning("expired leases not read", node=self.node, error=str(exc))
                continue
            await self.following.tidy()
            for uri in expired:
                followed = self.following.follows(uri)
                live = self.sessions.get(uri)
                if followed is not None and live is not None:
                    await self.following.unfollow(live, _owner_gone(uri, followed.owner))
                if uri in self.sessions or self.journal.session_failed(uri) is not None:
                    continue
                try:
                    live = await self._take_up_if_busy(uri)
                except (OrchestratorError, OSError) as exc:
                    log.error("session not taken over", session=uri, error=str(exc))
                    continue
                if live is not None:
                    self.taken_over += 1
                    log.info("session taken over", session=uri, node=self.node)

    async def _end_sessions_if_the_journal_fails(self) -> None:
        """Once the journal can take nothing more (a full disk, a damaged file), every live
        session ends at once, its clients told why; not only those that try to record."""
        error = await self.journal.wait_failed()
        for live in list(self.sessions.values()):
            if live.started:
                live.fail(error)  # its runtime ends: see TeamRuntime._lost
            else:
                self._drop_unprompted(live, error.message)

    async def stop(self) -> None:
        """SIGTERM: give running turns ``shutdown_grace`` to end, then stop every session
        without recording (see :meth:`TeamRuntime.stop`), waiting :data:`STOP_AFTER_GRACE`
        seconds at most for them to be done."""
        self.accepting = False
        for companion in self.companions:
            companion.stopping.set()
        with trio.move_on_after(self.shutdown_grace):
            for live in list(self.sessions.values()):
                if not self.finder.followed(live.uri):  # another node's turns: not ours to wait
                    await live.idle.wait()
        stopping = list(self.sessions.values())
        for live in stopping:
            if live.started:
                live.stop()
            else:
                self._drop_unprompted(live, "the daemon is stopping")
        deadline = trio.current_time() + STOP_AFTER_GRACE
        # A stopped session may still wait for batches it submitted: a backlog the journal
        # cannot write in its drain limit fails (never acknowledged), so nothing waits on it.
        with trio.move_on_at(min(deadline, trio.current_time() + self.journal.drain_limit)):
            for live in stopping:
                await live.finished.wait()
        if not all(live.finished.is_set() for live in stopping):
            self.journal.stop_writing()
        # Each session's clients are told it ended once its tasks are done (no facts follow).
        with trio.move_on_at(deadline):
            for live in stopping:
                await live.finished.wait()
        # What this node still holds (background teammates' streams, sessions that did not
        # end in time) is due for another node at once, not after the TTL.
        for uri in sorted(self.ownership.held):
            await self._release(uri, keep=True)
        self.stopped.set()  # connections not tied to a session (AHP) close now

    # ── sessions ───────────────────────────────────────────────────────────

    def _drop_unprompted(self, live: LiveSession, why: str) -> None:
        """Forget a session with no run (nothing of it was recorded); its clients are told.
        It is given up (on PostgreSQL its lease's row deleted: no fact was written under it,
        and nobody would ever delete it)."""
        live.put_away = True
        self._remove_session(live)
        live.close_streams()
        live.finished.set()
        live.end_sinks(why)
        if self.ownership.holds(live.uri) and self._nursery is not None:
            self._nursery.start_soon(self._drop_unused, live.uri)

    async def _drop_unused(self, uri: str) -> None:
        """Give up ``uri``, a session never prompted; never raises."""
        if not self.ownership.holds(uri):
            return
        with trio.CancelScope(shield=True), trio.move_on_after(RELEASE_LIMIT):
            try:
                await trio.to_thread.run_sync(
                    self.ownership.drop_unused, uri, abandon_on_cancel=True
                )
            except OrchestratorError as exc:
                log.warning("lease not released", session=uri, error=str(exc))

    def _add_session(self, live: LiveSession) -> None:
        """``live`` is one of the daemon's sessions (again, when its run starts)."""
        if self.sessions.get(live.uri) is not live:
            self.sessions[live.uri] = live
            self.root.session_added(live)

    def _remove_session(self, live: LiveSession) -> None:
        """``live`` is no longer one of the daemon's sessions (its URI may be taken up again
        by another)."""
        if self.sessions.get(live.uri) is live:
            del self.sessions[live.uri]
            self.root.session_removed(live)
            # Its log goes with it, not into the web view's cache: what a session that left
            # memory leaves behind must not grow with the sessions run (the soak: +10 MB
            # kept of eight put-away sessions). A read of it refolds it once, into the cache.
            live.release_team_log()
            # What the journal keeps of a session (its last snapshot's values: the whole
            # state then) goes with it, or every session ever run stays in memory.
            self.journal.forget_session(live.uri)
            self.reclaimer.session_left()

    async def team_log(self, live: LiveSession) -> TeamLog:
        """``live``'s Agent UI envelopes, ready: its log, made by the first reader from the
        fold kept of the session if there is one (then only the facts after it are read)."""
        return await live.team_log(self.reader.facts, self.envelopes.take)

    def live(self, session: str) -> LiveSession | None:
        return self.sessions.get(session_uri(session))

    def statistics(self) -> DaemonStatistics:
        """What the daemon holds for sessions now: with no session live, every count but
        the reclaimer's is 0 (what outlived a session was a leak)."""
        return DaemonStatistics(
            sessions=len(self.sessions),
            opening=len(self.opener.opening),
            claimed_chats=len(self.opener.claimed_chats),
            session_locks=len(self.finder),
            root_sessions=self.root.sessions,
            journal_sessions=self.journal.kept_sessions(),
            reclaim=self.reclaimer.statistics(),
        )


def _elsewhere(uri: str, elsewhere: HeldElsewhere) -> str:
    return (
        f"session {uri} {elsewhere.description}: ask for it again once it has stopped "
        "there, or ask the daemon that runs it"
    )


def _owner_gone(uri: str, owner: str) -> str:
    return (
        f"session {uri}: node {owner}, which ran it, is gone (its lease expired); this node "
        "takes it over: reattach with your cursor"
    )
