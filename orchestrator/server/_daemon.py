"""The daemon's sessions: every team session a nursery task, reachable by id.

Theory of operation
-------------------
:class:`Daemon` owns the journal, the teams (one per ``*.toml`` of its teams directory,
addressed by file stem), one HTTP client for the model backends, the MCP tool servers of
each team (one connection per server per team, shared by its sessions), and a nursery in
which every live session runs. A session is a
:class:`~orchestrator.runtime._team_runtime.TeamRuntime` in *conversation* mode: it exists
(with its URI) as soon as a client opens it, its run starts with the first prompt, and each
later prompt is queued to the coordinator as its next turn.

At start the daemon takes up every unfinished session of its journal (``resume``, with the
team file the session recorded): a session is a conversation that outlives a restart. On
SIGTERM it stops each runtime without recording (:meth:`TeamRuntime.stop`), after running
turns had ``shutdown_grace`` seconds to end: the journal then holds what a crash would, and
the next start applies each team's ``on_restart``. Clients reach a session only through its
:class:`~orchestrator.server._live_session.LiveSession` (see that module).

The daemon imports neither the metrics nor the background teammates' scheduler (both read
it): the app assembly (:func:`orchestrator.server._app.assemble`) builds them and wires
them in, as the :class:`SessionObserver` its sessions report to and a :class:`Companion`
service it starts after the take-up and stops with itself.

Identity: a session's URI (and a chat's, over AHP) names it for good. Every new session goes
through :meth:`Daemon.open_session`, which refuses a URI that is live, being opened, or in
the journal (ended or not) before anything is written, so no client can make a second
session write ``team/runStarted`` at sequence 1 again under a URI the journal holds. The
URI is reserved before the journal is asked (an await), so two clients opening the same
one at once cannot both get it.

The root channel: :attr:`Daemon.root` (:mod:`orchestrator.server._root_channel`) hears of
every session that enters or leaves :attr:`Daemon.sessions` (only :meth:`Daemon._add_session`
and :meth:`Daemon._remove_session` change it) and follows their facts: what AHP clients
subscribed to ``ahp-root://`` are told of the daemon's sessions comes from there.

Several daemons on one PostgreSQL journal (issue 21): each daemon is a *node* (its
:attr:`Daemon.node` id) and runs a session only while its journal's
:class:`~orchestrator.journal.PostgresLeases` hold the session's lease. A lease is acquired
before a session's run starts, and before an unfinished session is read to be taken up (so
the state read is the one the previous owner left: the journal's fence orders them); it is
renewed every third of its TTL (:meth:`Daemon._keep_leases`: a lease found taken ends its
session here, recording nothing, "lease lost"); and it is given up when the session ends or
is put away (kept due for take-over when it still has work, e.g. on SIGTERM). Every third of
the TTL, each node takes up the sessions whose leases expired (:meth:`Daemon._take_over`:
their node died) by the start-up's rules. A SQLite journal has no leases: its one daemon
owns every session.

Any node serves any client: :meth:`Daemon.find` asked for a session another node holds
*follows* it (its :attr:`Daemon.cluster`, see :mod:`._cluster` and :mod:`._followed`): a
LiveSession over a :class:`~._followed.FollowedRuntime` in :attr:`Daemon.sessions` like
any, whose commands are forwarded to the owner (:mod:`._forwarding`); the cluster also
carries out the commands forwarded to this node. When the lease of a session this node
follows expires (its owner died), the take-over scan ends the followed session first (its
clients are told to reattach) and takes the session up; a followed session nobody watches
is dropped by :meth:`Daemon.evict_idle`.

Bounds: a session opened but never prompted holds memory and nothing else; it is forgotten
``unprompted_session`` seconds after it was opened or its last client left (at most
``idle_session`` with a client on it), and each principal may hold
``max_unprompted_per_token`` of them; no more than ``max_sessions`` sessions are opened.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

import attrs
import httpx
import structlog
import trio

from orchestrator.base import (
    ConfigError,
    FactLogError,
    OrchestratorError,
    RunError,
    SessionExistsError,
    SessionLimitError,
    TeamFileError,
)
from orchestrator.core import TeamState
from orchestrator.journal import Journal, PostgresLeases
from orchestrator.runtime import (
    BackendFactory,
    Ids,
    McpServers,
    RunOutcome,
    TeamRuntime,
    ToolCallback,
    resolve_python_tools,
)
from orchestrator.runtime.backends import backend_factory
from orchestrator.spec import BackgroundSpec, McpServer, TeamSpec, load_team, parse_team

from ._cluster import Cluster
from ._config import Limits
from ._live_session import LiveSession, SessionObserver, _busy, session_uri
from ._reclaim import Reclaimer, ReclaimStatistics
from ._root_channel import RootChannel, agents_of

__all__ = [
    "Daemon",
    "DaemonStatistics",
]

log = structlog.get_logger("orchestrator.daemon")


@attrs.frozen(kw_only=True)
class TeamFiles:
    """The team files of a directory: those that load, by stem, and why the others do not."""

    teams: Mapping[str, TeamSpec]
    invalid: Mapping[str, str]  # stem → the file's problems


def load_teams(directory: Path) -> TeamFiles:
    """Every team file of ``directory`` by stem. A file that cannot be used is reported (the
    daemon serves the others, says which at start and in ``/healthz``); :class:`ConfigError`
    only when the directory is not there or no file in it can be used."""
    if not directory.is_dir():
        raise ConfigError("not a directory of team files", file=str(directory), key_path="teams")
    teams: dict[str, TeamSpec] = {}
    invalid: dict[str, str] = {}
    for path in sorted(directory.glob("*.toml")):
        try:
            teams[path.stem] = load_team(path)
        except TeamFileError as exc:
            invalid[path.stem] = str(exc)
    if not teams:
        why = "no team files (*.toml) here" if not invalid else "no team file here can be used:"
        raise ConfigError(
            "\n".join([why, *invalid.values()]), file=str(directory), key_path="teams"
        )
    return TeamFiles(teams=teams, invalid=invalid)


#: Seconds stopped sessions get to be done after ``shutdown_grace``: a command tool's process
#: group gets SIGKILL 2 s after SIGTERM, and the journal drains for its ``drain_limit`` (2 s)
#: within it. With hypercorn's 1.5 s after it, SIGTERM exits within ``shutdown_grace`` + 4 s:
#: 9 s with the default grace, under the 10 s a service manager commonly allows.
STOP_AFTER_GRACE: Final = 2.5
#: Seconds a session's end waits to give its lease up (a lease not given up expires).
RELEASE_LIMIT: Final = 2.0
#: Take-over scans between two deletions of old forwarded commands.
OLD_COMMANDS_EVERY: Final = 100


def default_node() -> str:
    """A node id when none is configured: ``HOSTNAME:PID`` (unique among running daemons;
    a restarted daemon is a new node, which takes up the sessions its predecessor left
    with work at once, as they are released, and those of a crash once their leases
    expired: a stable ``node =`` takes the latter up at once too)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _SessionLocks:
    """One lock per session URI, held while the session is taken up or followed: two
    clients asking for a session at once take it up once, while different sessions are
    taken up side by side (the clients of a dead node's hundred sessions reattach at once;
    one lock for all made the last wait for the ninety-nine before it). A lock that nobody
    holds or waits for is forgotten."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[trio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, uri: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(uri) or (trio.Lock(), 0)
        self._locks[uri] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[uri]
            if users == 1:
                del self._locks[uri]
            else:
                self._locks[uri] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


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
        subscriber_buffer: int = 2_000,
        shutdown_grace: float = 5.0,
        environ: Mapping[str, str] | None = None,
        callback: ToolCallback | None = None,
        limits: Limits | None = None,
        invalid_teams: Mapping[str, str] | None = None,
        node: str | None = None,
    ) -> None:
        """``limits``: the sessions' bounds (unprompted sessions, per token and in all);
        the other limits are the server's. Its observer and companions (the metrics, the
        scheduler) are the app assembly's to set (see :mod:`orchestrator.server._app`).
        ``node``: this daemon's node id (default: its journal's leases' node, or
        ``HOSTNAME:PID``). Leases are reckoned in the database's clock."""
        if default_team is not None and default_team not in teams:
            raise ConfigError(
                f"no team {default_team!r} (teams: {', '.join(sorted(teams))})",
                file="<config>",
                key_path="default_team",
            )
        self.teams = dict(teams)
        # Team files that did not load (stem → why): served by nobody, named when asked for.
        self.invalid_teams = dict(invalid_teams or {})
        for name, problems in self.invalid_teams.items():
            log.error("team file cannot be used", team=name, error=problems)
        self.default_team = default_team or (next(iter(teams)) if len(teams) == 1 else None)
        self.journal = journal
        self.reader = journal.reader  # checked as the journal opened: not again
        # Several daemons on one PostgreSQL journal: the sessions this node owns (None: the
        # only node, SQLite's). Counted for /metrics: sessions taken over from a dead node.
        self.leases: PostgresLeases | None = journal.leases
        self.node = node or (self.leases.node if self.leases is not None else default_node())
        self.taken_over = 0
        # Following the other nodes' sessions and serving their commands (see _cluster):
        # made once the daemon's own parts are.
        self.cluster: Cluster | None = None
        self.limits = limits or Limits()
        self.subscriber_buffer = subscriber_buffer
        self.shutdown_grace = shutdown_grace
        # Made now, so a team that cannot run (an unset API key for a hosted model, a Python
        # tool that does not import) is known at start: it is logged, and opening a session
        # of it says why it cannot.
        self._backends: dict[str, BackendFactory] = {}
        self.unavailable: dict[str, str] = {}
        for name, team in teams.items():
            try:
                resolve_python_tools(team)
                self._backends[name] = backend_factory(team, client=http, environ=environ)
            except (RunError, TeamFileError) as exc:
                self.unavailable[name] = str(exc)
                log.warning("team unavailable", team=name, error=str(exc))
        self._http = http
        self._environ = environ
        # The MCP servers of each team, shared by its sessions: one connection per server
        # per team (see _shared_tool_servers). Keyed by the servers' definitions too, so a session
        # taken up with the team file it recorded does not share an edited file's servers.
        self._tool_servers: dict[tuple[str, tuple[McpServer, ...]], McpServers] = {}
        # The live sessions; changed only by _add_session and _remove_session, which tell
        # the root channel (what AHP root subscribers hear of the sessions).
        self.sessions: dict[str, LiveSession] = {}
        self.root = RootChannel(
            agents_of(self.teams, self.unavailable), buffer_size=subscriber_buffer
        )
        # URIs being opened (asked of the journal) → the principal opening them; and the
        # chat URIs being claimed (see claim_chat). Reserved before the await, so a second
        # client naming the same URI meanwhile is refused.
        self._opening: dict[str, str | None] = {}
        self._claimed_chats: set[str] = set()
        self._finding = _SessionLocks()
        # Collects what the sessions that left memory held (their objects are in cycles).
        self.reclaimer = Reclaimer()
        self._nursery: trio.Nursery | None = None
        self.observer: SessionObserver = _Unobserved()
        self.companions: list[Companion] = []
        self.accepting = False
        self.stopped = trio.Event()  # set once stop() has stopped every session
        # Given to every session's command tools; the server sets its URL once it listens.
        self.callback = callback or ToolCallback()
        if self.leases is not None:
            self.cluster = Cluster(
                self,
                leases=self.leases,
                node=self.node,
                reader=self.reader,
                add=self._add_session,
                remove=self._remove_session,
                owned=self._owned,
            )

    # ── the service ────────────────────────────────────────────────────────

    async def serve(
        self, *, task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the sessions until cancelled; take up the journal's unfinished ones first."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._end_sessions_if_the_journal_fails)
            await nursery.start(self.root.serve)
            await nursery.start(self.reclaimer.serve)
            await self._take_up_unfinished()
            self.accepting = True
            if self.leases is not None:
                nursery.start_soon(self._keep_leases, self.leases)
                nursery.start_soon(self._take_over, self.leases)
            if self.cluster is not None:
                await nursery.start(self.cluster.serve)
            # After the take-up: a teammate's run that was going is followed where it is.
            for companion in self.companions:
                await nursery.start(companion.serve)
            task_status.started(self)
            await trio.sleep_forever()

    async def _take_up_unfinished(self) -> None:
        """Take up the unfinished sessions that were doing something (a turn running, an
        approval or a question waiting, a prompt queued); idle ones are taken up when a
        client asks for them (:meth:`find`), so a restart costs what is busy, not all."""
        infos = await trio.to_thread.run_sync(self.reader.sessions)
        for info in infos:
            if info.status != "running":
                continue
            try:
                await self._take_up_if_busy(info.session)
            except (OrchestratorError, OSError) as exc:
                log.error("session not taken up", session=info.session, error=str(exc))

    async def _take_up_if_busy(self, uri: str) -> LiveSession | None:
        """Take ``uri`` up if it was doing something and no other node runs it (its lease
        acquired first, so the state read is all its previous owner wrote)."""
        async with self._finding.hold(uri):
            if uri in self.sessions:
                return None
            if not await self._acquire(uri):
                return None
            try:
                state = await trio.to_thread.run_sync(self.reader.open, uri)
                if not _needs_running(state):
                    await self._release(uri, keep=False)  # idle: whoever is asked takes it
                    return None
                return await self._take_up(uri, state)
            except BaseException:
                # Not due again at once: a session that cannot be taken up here (no team
                # file recorded) cannot elsewhere either; a client asking tries again.
                if uri not in self.sessions:
                    await self._release(uri, keep=False)
                raise

    # ── leases (several daemons on one PostgreSQL journal) ────────────────

    def owned_sessions(self) -> list[str]:
        """The sessions this node owns: those it holds the lease of (PostgreSQL), or every
        session it runs (SQLite: the only node)."""
        if self.leases is not None:
            return sorted(self.leases.held)
        return sorted(uri for uri, live in self.sessions.items() if live.started)

    def followed_sessions(self) -> list[str]:
        """The sessions this node follows (another node of the journal runs them)."""
        return sorted(self.cluster.followed) if self.cluster is not None else []

    async def _acquire(self, uri: str, *, quiet: bool = False) -> bool:
        """Whether this node may run ``uri``: on SQLite once this process holds the
        session's lock (False: another process on the file runs it, an ``orchestrator
        run`` or ``resume`` or another daemon); on PostgreSQL once it holds the session's
        lease (False: another node's lease has not expired)."""
        leases = self.leases
        if leases is None:
            locks = self.journal.session_locks
            if locks is None or locks.acquire(uri):
                return True
            if not quiet:
                log.info("session run by another process of this journal", session=uri)
            return False
        if leases.holds(uri):
            return True
        lease = await trio.to_thread.run_sync(leases.acquire, uri)
        if lease.owner != self.node:
            if not quiet:
                log.info("session owned by another node", session=uri, owner=lease.owner)
            return False
        return True

    async def wait_lease(self, uri: str) -> None:
        """Return once this node holds the lease of ``uri`` (a background teammate's
        stream: one node runs the teammate, the others wait to take it over); at once on
        SQLite. Tries again every third of the TTL."""
        leases = self.leases
        if leases is None:
            return
        while True:
            if await self._acquire(uri, quiet=True):
                return
            await trio.sleep(leases.ttl / 3)

    async def _release(self, uri: str, *, keep: bool) -> None:
        """Give up ``uri``'s lease (``keep``: due for take-over at once); never raises, and
        never holds a stop up for long (a lease not released expires)."""
        leases = self.leases
        if leases is None:
            if self.journal.session_locks is not None:
                self.journal.session_locks.release(uri)
            return
        if not leases.holds(uri):
            return
        with trio.CancelScope(shield=True), trio.move_on_after(RELEASE_LIMIT):
            try:
                await trio.to_thread.run_sync(
                    functools.partial(leases.release, uri, keep=keep), abandon_on_cancel=True
                )
            except OrchestratorError as exc:
                log.warning("lease not released", session=uri, error=str(exc))

    async def _keep_leases(self, leases: PostgresLeases) -> None:
        """Renew this node's leases every third of their TTL; a session whose lease another
        node took ends here, recording nothing ("lease lost"), and so does every leased
        session once renewals have failed for a whole TTL (others may have taken them)."""
        renewed = trio.current_time()
        while True:
            await trio.sleep(leases.ttl / 3)
            try:
                lost = await trio.to_thread.run_sync(leases.renew)
            except (OrchestratorError, OSError) as exc:
                log.warning("leases not renewed", node=self.node, error=str(exc))
                if trio.current_time() - renewed < leases.ttl:
                    continue
                lost = sorted(leases.held)
                for uri in lost:
                    leases.forget(uri, why="not renewed for a whole TTL")
            else:
                renewed = trio.current_time()
            for uri in lost:
                live = self.sessions.get(uri)
                if live is not None:
                    self._lease_lost(live, leases)

    def _lease_lost(self, live: LiveSession, leases: PostgresLeases) -> None:
        error = leases.lost_error(live.uri)
        log.error("session stopped: lease lost", session=live.uri, node=self.node)
        if live.started:
            live.fail(error)  # its runtime ends, recording nothing; clients told why
        else:
            self._drop_unprompted(live, error.message)

    async def _take_over(self, leases: PostgresLeases) -> None:
        """Every third of the TTL, take up the running sessions whose lease expired (their
        node died, or gave them up with work left) by the start-up's rules; a session this
        node followed ends first (its clients reattach to the one taken up). Now and then,
        deletes the old forwarded commands."""
        scans = 0
        while True:
            await trio.sleep(leases.ttl / 3)
            if not self.accepting:
                continue
            try:
                expired = await trio.to_thread.run_sync(leases.expired)
            except (OrchestratorError, OSError) as exc:
                log.warning("expired leases not read", node=self.node, error=str(exc))
                continue
            scans += 1
            if self.cluster is not None and scans % OLD_COMMANDS_EVERY == 0:
                await self.cluster.delete_old_commands()
            for uri in expired:
                followed = self.cluster.follows(uri) if self.cluster is not None else None
                live = self.sessions.get(uri)
                if followed is not None and live is not None and self.cluster is not None:
                    await self.cluster.unfollow(live, _owner_gone(uri, followed.owner))
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

    async def find(self, session: str) -> LiveSession | None:
        """The live session ``session`` (an id or URI), taking an unfinished one up from the
        journal if it is not in memory, or following it if another node runs it (see
        :mod:`._followed`); None if there is no such unfinished session."""
        uri = session_uri(session)
        live = self.sessions.get(uri)
        if live is not None and not live.put_away:
            if live.resuming is not None:
                await live.resuming.wait()  # being taken up: its approvals reopened first
            return live
        async with self._finding.hold(uri):  # two clients asking at once take it up once
            live = self.sessions.get(uri)
            if live is not None and live.put_away:
                await live.finished.wait()  # being put away: take it up again after
                live = None
            if live is not None:
                return live
            try:
                info = await trio.to_thread.run_sync(self.reader.session, uri)
            except FactLogError:
                return None
            if info.status != "running":
                return None
            if not await self._acquire(uri):
                if self.cluster is None:
                    raise RunError(self._elsewhere(uri))
                return await self.cluster.follow(uri)
            try:
                state = await trio.to_thread.run_sync(self.reader.open, uri)
                return await self._take_up(uri, state)
            except BaseException:
                if uri not in self.sessions:
                    await self._release(uri, keep=False)
                raise

    def _elsewhere(self, uri: str) -> str:
        if self.leases is None:
            return (
                f"session {uri} is being run by another process on this journal (an "
                "`orchestrator run` or `resume`, or another daemon): ask for it again once "
                "that process has stopped"
            )
        return (
            f"session {uri} runs on another node of this journal: ask for it again (this "
            f"node, {self.node}, then follows it) or connect to that node"
        )

    def _followed(self, uri: str) -> bool:
        """Whether this node follows ``uri`` (another node runs it)."""
        return self.cluster is not None and self.cluster.follows(uri) is not None

    async def _owned(self, uri: str) -> LiveSession | None:
        """The session ``uri`` as this node runs it (a forwarded command's target)."""
        live = self.sessions.get(uri)
        if live is None or self._followed(uri) or live.put_away:
            return None
        if live.resuming is not None:
            await live.resuming.wait()
        return live

    async def _take_up(self, uri: str, state: TeamState) -> LiveSession:
        team_file, team_toml = await trio.to_thread.run_sync(self.reader.team_toml, uri)
        if not team_toml:
            raise RunError(f"{uri} did not record its team file: it cannot be taken up")
        team = parse_team(team_toml, file=team_file or "<journal>")
        name = Path(team_file).stem if team_file else team.name
        run = state.run
        if run is not None and run.coordinator != team.coordinator:
            # A background teammate's run: its agent was the run's coordinator.
            team = attrs.evolve(team, coordinator=run.coordinator)
        runtime = self._runtime(
            name, team, state=state, background=None if run is None else run.background
        )
        live = LiveSession(self, name, runtime)
        live.resuming = resuming = trio.Event()
        try:
            await self._launch(live, runtime.resume)
        finally:
            resuming.set()
        log.info("session taken up", session=uri, team=name)
        return live

    async def evict_idle(self, after: float) -> None:
        """Every so often, stop the sessions that have been idle with no client for ``after``
        seconds (recording nothing: :meth:`find` takes them up again when asked), so the
        daemon's memory holds the sessions in use, not every session it ever ran."""
        while True:
            await trio.sleep(max(after / 4, 0.05))
            now = trio.current_time()
            live: LiveSession | None
            for live in list(self.sessions.values()):
                followed = self.cluster.follows(live.uri) if self.cluster is not None else None
                if followed is not None:
                    # Followed, idle or not: dropped once nobody has watched it for a while.
                    if live.clients == 0 and now - live.alone_since >= after:
                        log.info("followed session nobody watches dropped", session=live.uri)
                        followed.end(None)
                    continue
                if not live.started:
                    continue  # never prompted: forget_unprompted's own timer ends it
                if live.clients == 0 and live.idle.is_set() and now - live.idle_since >= after:
                    log.info("idle session put away", session=live.uri)
                    live.put_away = True
                    live.stop()
            live = None  # the last one scanned is not held until the next scan

    async def stop(self) -> None:
        """SIGTERM: give running turns ``shutdown_grace`` to end, then stop every session
        without recording (see :meth:`TeamRuntime.stop`), waiting :data:`STOP_AFTER_GRACE`
        seconds at most for them to be done."""
        self.accepting = False
        for companion in self.companions:
            companion.stopping.set()
        with trio.move_on_after(self.shutdown_grace):
            for live in list(self.sessions.values()):
                if not self._followed(live.uri):  # another node's turns: not ours to wait
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
        if self.leases is not None:
            # What this node still holds (background teammates' streams, sessions that did
            # not end in time) is due for another node at once, not after the TTL.
            for uri in sorted(self.leases.held):
                await self._release(uri, keep=True)
        self.stopped.set()  # connections not tied to a session (AHP) close now

    # ── sessions ───────────────────────────────────────────────────────────

    def team_of(self, name: str | None) -> tuple[str, TeamSpec]:
        wanted = name or self.default_team
        if wanted is None:
            raise RunError(f"name a team with ?team= (teams: {', '.join(sorted(self.teams))})")
        team = self.teams.get(wanted)
        if team is None and wanted in self.invalid_teams:
            problems = self.invalid_teams[wanted]
            raise RunError(f"team {wanted!r} cannot be used: its file has problems ({problems})")
        if team is None:
            raise RunError(f"no team {wanted!r} (teams: {', '.join(sorted(self.teams))})")
        return wanted, team

    async def open_session(
        self,
        team_name: str | None,
        *,
        session: str | None = None,
        ids: Ids | None = None,
        background: BackgroundSpec | None = None,
        principal: str | None = None,
    ) -> LiveSession:
        """A new session of a team (its run starts with the first prompt); ``session``: its
        id, when the client names its thread (AG-UI's threadId); ``ids``: the ids it makes,
        its URI first (AHP's ``createSession`` lets the client choose them). ``background``:
        the session is one run of that background teammate: its agent is the run's
        coordinator, and the run ends with that agent's turn (clients attach to it like to
        any). ``principal``: who opens it, for the per-token limit (None: the daemon).

        Refused, before anything is written: a URI that is live, being opened or in the
        journal (:class:`SessionExistsError`), a session beyond ``max_sessions`` or the
        principal's ``max_unprompted_per_token`` (:class:`SessionLimitError`), and any
        session while the journal cannot be read (:class:`FactLogError`).
        """
        name, team = self.team_of(team_name)
        if name in self.unavailable:
            raise RunError(f"team {name!r} cannot run: {self.unavailable[name]}")
        if background is not None and background.agent != team.coordinator:
            team = attrs.evolve(team, coordinator=background.agent)
        ids = ids or Ids()
        uri = session_uri(session) if session is not None else ids.session()
        if uri in self.sessions or uri in self._opening:
            raise SessionExistsError(f"session {uri} exists already", uri=uri, ended=False)
        self._check_limits(principal)
        self._opening[uri] = principal  # from here on, a second open of ``uri`` is refused
        try:
            # FactLogError if the journal cannot be read: then nobody can tell whether the
            # URI is taken, and a session must not be made on a guess.
            if await trio.to_thread.run_sync(self.reader.has_session, uri):
                raise SessionExistsError(
                    f"session {uri} is in the journal (it ended, or waits there to be taken "
                    "up): its id cannot be used for a new session",
                    uri=uri,
                    ended=True,
                )
            runtime = self._runtime(
                name,
                team,
                session=uri,
                ids=ids,
                background=None if background is None else background.name,
            )
            live = LiveSession(self, name, runtime, owner=principal)
            self._add_session(live)
        finally:
            del self._opening[uri]
        if self._nursery is not None:
            self._nursery.start_soon(self.forget_unprompted, live)
        return live

    def _check_limits(self, principal: str | None) -> None:
        """:class:`SessionLimitError` if one more session would pass ``max_sessions``, or
        ``principal``'s sessions not yet prompted would pass ``max_unprompted_per_token``."""
        limits = self.limits
        if len(self.sessions) + len(self._opening) >= limits.max_sessions:
            raise SessionLimitError(
                f"the daemon holds {limits.max_sessions} sessions, its limit (max_sessions): "
                "try again later",
                limit="max_sessions",
                per_principal=False,
            )
        if principal is None:
            return
        unprompted = sum(
            1 for live in self.sessions.values() if live.owner == principal and live.unprompted
        ) + sum(1 for opener in self._opening.values() if opener == principal)
        if unprompted >= limits.max_unprompted_per_token:
            raise SessionLimitError(
                f"{principal} holds {unprompted} sessions with no prompt yet, the limit "
                "(max_unprompted_per_token): prompt or close one first, or wait "
                f"{limits.unprompted_session:g} s for an unused one to expire",
                limit="max_unprompted_per_token",
                per_principal=True,
            )

    async def forget_unprompted(self, live: LiveSession) -> None:
        """Forget ``live`` if it is never prompted: ``unprompted_session`` seconds after it
        was opened or its last client left, and ``idle_session`` after it was opened even
        with a client on it (who is told the session ended). Nothing of it was recorded."""
        wait = self.limits.unprompted_session
        cap = live.opened_at + max(self.limits.idle_session, wait)
        while True:
            if not live.unprompted:
                return  # prompted, disposed or stopped: not ours any more
            now = trio.current_time()
            expires = max(live.opened_at, live.alone_since) + wait
            if now >= cap or (not live.clients and now >= expires):
                if not live.start_lock.locked():
                    break
                async with live.start_lock:  # a first prompt is starting: see how it ends
                    pass
            elif live.clients:
                with trio.move_on_at(cap):
                    await live.wait_alone()
            else:
                await trio.sleep_until(min(expires, cap))
        log.info("session never prompted forgotten", session=live.uri, after=now - live.opened_at)
        self._drop_unprompted(
            live, f"no prompt within {now - live.opened_at:g} s of opening: open a new session"
        )

    def _drop_unprompted(self, live: LiveSession, why: str) -> None:
        """Forget a session with no run (nothing of it was recorded); its clients are told."""
        live.put_away = True
        self._remove_session(live)
        live.close_streams()
        live.finished.set()
        live.end_sinks(why)

    async def journal_knows(self, session: str) -> bool:
        """Whether the journal has a session ``session`` (an id or URI), ended or not; False
        also when the journal cannot be read (:meth:`open_session` refuses then)."""
        try:
            await trio.to_thread.run_sync(self.reader.session, session_uri(session))
        except FactLogError:
            return False
        return True

    async def claim_chat(self, chat: str) -> None:
        """Claim the chat URI ``chat`` that a client chose for a new chat, until
        :meth:`release_chat`; :class:`SessionExistsError` if any session has, had or is
        claiming a chat of that URI (chat URIs name one chat across every session)."""
        live = next((s for s in self.sessions.values() if chat in s.state.chats), None)
        if live is not None or chat in self._claimed_chats:
            where = f" in {live.uri}" if live is not None else ""
            raise SessionExistsError(f"chat {chat} exists{where}", uri=chat, ended=False)
        self._claimed_chats.add(chat)
        try:
            past = await trio.to_thread.run_sync(self.reader.session_of_chat, chat)
        except BaseException:
            self._claimed_chats.discard(chat)
            raise
        if past is not None:
            self._claimed_chats.discard(chat)
            raise SessionExistsError(
                f"chat {chat} was a chat of {past}: its URI cannot be used again",
                uri=chat,
                ended=True,
            )

    def release_chat(self, chat: str) -> None:
        """The claim of :meth:`claim_chat` is over (the chat is live, or was not made)."""
        self._claimed_chats.discard(chat)

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
            # What the journal keeps of a session (its last snapshot's values: the whole
            # state then) goes with it, or every session ever run stays in memory.
            self.journal.forget_session(live.uri)
            self.reclaimer.session_left()

    def live(self, session: str) -> LiveSession | None:
        return self.sessions.get(session_uri(session))

    def statistics(self) -> DaemonStatistics:
        """What the daemon holds for sessions now: with no session live, every count but
        the reclaimer's is 0 (what outlived a session was a leak)."""
        return DaemonStatistics(
            sessions=len(self.sessions),
            opening=len(self._opening),
            claimed_chats=len(self._claimed_chats),
            session_locks=len(self._finding),
            root_sessions=self.root.sessions,
            journal_sessions=self.journal.kept_sessions(),
            reclaim=self.reclaimer.statistics(),
        )

    def _runtime(
        self,
        name: str,
        team: TeamSpec,
        *,
        state: TeamState | None = None,
        session: str | None = None,
        ids: Ids | None = None,
        background: str | None = None,
    ) -> TeamRuntime:
        """A runtime of ``team``: a conversation (each prompt a coordinator turn), unless it
        runs a ``background`` teammate's wake, which ends with that one turn."""
        factory = self._backends.get(name)
        if factory is None or state is not None:
            # A session taken up after a restart runs the team file it recorded.
            factory = backend_factory(team, client=self._http, environ=self._environ)
        restart = 0 if state is None or state.run is None else state.run.restarts + 1
        return TeamRuntime(
            team,
            backends=factory,
            factlog=self.journal,
            ids=ids or Ids(restart=restart),
            state=state,
            conversation=background is None,
            session=session,
            background=background,
            callback=self.callback,
            tool_servers=self._shared_tool_servers(team),
        )

    def tool_server_status(self) -> dict[str, dict[str, str]]:
        """Each team's MCP servers started so far: ``"connected"``, or why not."""
        status: dict[str, dict[str, str]] = {}
        for (team, specs), servers in self._tool_servers.items():
            errors = servers.errors()
            status.setdefault(team, {}).update(
                {spec.name: errors.get(spec.name, "connected") for spec in specs}
            )
        return status

    def _shared_tool_servers(self, team: TeamSpec) -> McpServers | None:
        """The MCP servers of ``team``, shared by every session of it: started in the
        daemon's nursery for the first session that needs them, kept until the daemon
        stops (a session waits for their first listing before its first model round)."""
        if not team.mcp_servers:
            return None
        key = (team.name, team.mcp_servers)
        servers = self._tool_servers.get(key)
        if servers is None:
            assert self._nursery is not None, "the daemon is not serving"
            servers = self._tool_servers[key] = McpServers(team.mcp_servers, self._environ)
            self._nursery.start_soon(servers.run)
            log.info("mcp servers started for team", team=team.name, servers=len(key[1]))
        return servers

    async def start_run(self, live: LiveSession, prompt: str) -> None:
        """Start ``live``'s run on ``prompt``; returns once its first facts are recorded."""
        if not await self._acquire(live.uri):
            raise RunError(self._elsewhere(live.uri))

        async def run(
            *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
        ) -> RunOutcome:
            return await live.run(prompt, task_status=task_status)

        await self._launch(live, run)

    async def _launch(self, live: LiveSession, start: _Start) -> None:
        """Run ``start`` (the session's run or resume) in the daemon's nursery, behind an
        error barrier: a session that fails is logged and never takes the daemon down.

        Returns once ``start`` reported its first facts recorded; :class:`RunError` if it
        failed before that (nothing was recorded, or the journal failed).
        """
        assert self._nursery is not None, "the daemon is not serving"
        # A new session's lock (SQLite), so that no other process on the file takes it up
        # while it runs here (a session taken up holds its lock already).
        if self.leases is None and not await self._acquire(live.uri):
            raise RunError(self._elsewhere(live.uri))
        self._add_session(live)
        errors: list[str] = []

        async def supervised(
            *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
        ) -> None:
            reported = _Reported(task_status)
            # Every log line of the session's tasks (its chats inherit the context) says
            # which session and team it is about.
            structlog.contextvars.bind_contextvars(session=live.uri, team=live.team_name)
            try:
                try:
                    outcome = await start(task_status=reported)
                    log.info("session ended", session=live.uri, status=str(outcome.status))
                finally:
                    live.close_streams()  # clients' streams end
                    live.end_sinks(live.end_reason)
            except Exception as exc:
                errors.append(_message(exc))
                log.error("session failed", session=live.uri, error=errors[-1], exc_info=exc)
            finally:
                # Its lease given up once it ends (kept due for take-over when it still has
                # work: a stopping daemon's busy session, another node takes it up at
                # once), while it is still in self.sessions: nobody here takes it up again
                # before the lease is given up.
                await self._release(live.uri, keep=_unfinished(live.state))
                live.finished.set()
                self._remove_session(live)
                if not reported.done:
                    reported.started()

        await self._nursery.start(supervised)
        if errors:
            raise RunError(f"session {live.id} could not start: {errors[0]}")

    # ── for the AHP host (clients choose the URIs) ─────────────────────────

    async def dispose(self, live: LiveSession) -> None:
        """End ``live`` for good (AHP ``disposeSession``): its turns are cancelled and its
        run recorded ``cancelled``; a session never prompted is dropped. Returns once it
        has left :attr:`sessions`."""
        async with live.start_lock:
            if not live.started:
                self._drop_unprompted(live, "the session was disposed")
                return
        await live.cancel()
        await live.finished.wait()


_Start = Callable[..., Awaitable[RunOutcome]]


@attrs.define
class _Reported:
    """A task status that remembers whether it was reported."""

    status: trio.TaskStatus[None]
    done: bool = False

    def started(self, value: object = None) -> None:
        self.done = True
        self.status.started()


def _message(exc: BaseException) -> str:
    """The message of ``exc``, or of the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _unfinished(state: TeamState) -> bool:
    """A session that stopped with work left (its run not finished, a turn or a question
    going): another node should take it up."""
    run = state.run
    return run is not None and run.status is None and _needs_running(state)


def _owner_gone(uri: str, owner: str) -> str:
    return (
        f"session {uri}: node {owner}, which ran it, is gone (its lease expired); this node "
        "takes it over: reattach with your cursor"
    )


def _needs_running(state: TeamState) -> bool:
    """An unfinished session that was doing something when the process stopped."""
    coordinator = state.coordinator_chat()
    chat = state.chats.get(coordinator) if coordinator is not None else None
    return _busy(state) or bool(chat is not None and chat.queued_messages)
