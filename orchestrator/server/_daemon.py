"""The daemon's sessions: every team session a nursery task, reachable by id.

Theory of operation
-------------------
:class:`Daemon` owns the journal, the teams (one per ``*.toml`` of its teams directory,
named by its ``[team] name``, the file's stem accepted too), one HTTP client for the model
backends, the MCP tool servers of each team (one connection per server per team, shared by
its sessions), and a nursery in which every live session runs. A session is a
:class:`~orchestrator.runtime._team_runtime.TeamRuntime` in *conversation* mode: it exists
(with its URI) as soon as a client opens it, its run starts with the first prompt, and each
later prompt is queued to the coordinator as its next turn (a root task of its own; between
prompts the coordinator is idle). The conversation ends when a client ends it
(:meth:`Daemon.dispose`: AHP ``disposeSession``, ``end`` on ``/ws``) or when it has waited
``idle_conversation`` seconds for a prompt (:meth:`Daemon.expire_conversations`).

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

Any node serves any client: :meth:`Daemon.find` asked for a session another node holds
*follows* it (its :attr:`Daemon.cluster`, see :mod:`._cluster` and :mod:`._followed`): a
LiveSession over a :class:`~._followed.FollowedRuntime` in :attr:`Daemon.sessions` like
any, whose commands are forwarded to the owner (:mod:`._forwarding`); the cluster also
carries out the commands forwarded to this node. When the lease of a session this node
follows expires (its owner died), the take-over scan ends the followed session first (its
clients are told to reattach) and takes the session up; a followed session nobody watches
is dropped by :meth:`Daemon.evict_idle`. On a SQLite journal, a session that another process
on the file runs (an ``orchestrator run`` beside the daemon) is followed the same way, read-only
(:attr:`Daemon.following`, see :mod:`._sqlite_following`), and :meth:`Daemon.run_by` says
which process runs it.

Bounds: a session opened but never prompted holds memory and nothing else; it is forgotten
``unprompted_session`` seconds after it was opened or its last client left (at most
``idle_session`` with a client on it), and each principal may hold
``max_unprompted_per_token`` of them; no more than ``max_sessions`` sessions are opened.
"""

from __future__ import annotations

import contextlib
import datetime
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
    timestamp,
    utc_now,
)
from orchestrator.core import TeamState
from orchestrator.journal import (
    HeldElsewhere,
    Journal,
    PostgresLeases,
    SessionLocks,
    SessionOwnership,
)
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
from ._followed import FollowedRuntime
from ._live_session import LiveSession, SessionObserver, _busy, session_uri
from ._reclaim import Reclaimer, ReclaimStatistics
from ._root_channel import RootChannel, agents_of
from ._session_folds import EnvelopeCache
from ._sqlite_following import SqliteFollowing
from ._team_log import TeamLog

__all__ = [
    "Daemon",
    "DaemonStatistics",
]

log = structlog.get_logger("orchestrator.daemon")


@attrs.frozen(kw_only=True)
class TeamFiles:
    """The team files of a directory: those that load, by their ``[team] name``, the file
    each was read from, and why the others do not load."""

    teams: Mapping[str, TeamSpec]
    files: Mapping[str, str]  # [team] name → the team file's name (``handoff.toml``)
    invalid: Mapping[str, str]  # file stem → the file's problems


def load_teams(directory: Path) -> TeamFiles:
    """Every team file of ``directory`` by its ``[team] name`` (the name sessions record).
    A file that cannot be used is reported (the daemon serves the others, says which at
    start and in ``/healthz``), and so is a second file of a name already taken;
    :class:`ConfigError` only when the directory is not there or no file in it can be used."""
    init = "orchestrator init" + ("" if directory == Path("teams") else f" {directory}")
    if not directory.is_dir():
        # Said once (not "teams: teams: ..."), with what to do about it.
        raise ConfigError(
            "not a directory of team files: name the directory of your team files with "
            f"--teams DIR (or `teams =` in the config file), or run `{init}` to write "
            "starter teams there",
            file=str(directory),
        )
    teams: dict[str, TeamSpec] = {}
    files: dict[str, str] = {}
    invalid: dict[str, str] = {}
    for path in sorted(directory.glob("*.toml")):
        try:
            team = load_team(path)
        except TeamFileError as exc:
            invalid[path.stem] = str(exc)
            continue
        if team.name in teams:
            invalid[path.stem] = (
                f"{path}: [team] name {team.name!r} is already that of {files[team.name]}: "
                "give one of them another name"
            )
            continue
        teams[team.name] = team
        files[team.name] = path.name
    if not teams:
        why = (
            f"no team files (*.toml) here: run `{init}` to write starter teams"
            if not invalid
            else "no team file here can be used:"
        )
        raise ConfigError(
            "\n".join([why, *invalid.values()]), file=str(directory), key_path="teams"
        )
    return TeamFiles(teams=teams, files=files, invalid=invalid)


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
        team_files: Mapping[str, str] | None = None,
    ) -> None:
        """``limits``: the sessions' bounds (unprompted sessions, per token and in all);
        the other limits are the server's. Its observer and companions (the metrics, the
        scheduler) are the app assembly's to set (see :mod:`orchestrator.server._app`).
        ``node``: this daemon's node id (default: its journal's ownership's node, by
        default ``HOSTNAME:PID``). Leases are reckoned in the database's clock. ``teams`` are
        named by their ``[team] name``; ``team_files``: the file each was read from, whose
        stem a client may name too (as clients did before teams were named by name)."""
        self.teams = dict(teams)
        self.team_files = dict(team_files or {})
        # File stem → [team] name, for a stem that is not itself a team's name.
        self._stems = {
            Path(file).stem: name
            for name, file in self.team_files.items()
            if Path(file).stem not in teams
        }
        if default_team is not None:
            default_team = self._stems.get(default_team, default_team)
        if default_team is not None and default_team not in teams:
            raise ConfigError(
                f"no team {default_team!r} (teams: {self.team_list()})",
                file="<config>",
                key_path="default_team",
            )
        # Team files that did not load (stem → why): served by nobody, named when asked for.
        self.invalid_teams = dict(invalid_teams or {})
        for name, problems in self.invalid_teams.items():
            log.error("team file cannot be used", team=name, error=problems)
        self.default_team = default_team or (next(iter(teams)) if len(teams) == 1 else None)
        self.journal = journal
        self.reader = journal.reader  # checked as the journal opened: not again
        # Sessions' Agent UI envelopes, kept between reads: the web view's, and each live
        # session's log once the session is put away or ends (see team_log).
        self.envelopes = EnvelopeCache(self.reader)
        # The sessions this node owns (see the module docstring). Counted for /metrics:
        # sessions taken over from a dead node.
        self.ownership: SessionOwnership = journal.ownership
        self.node = node or self.ownership.node
        self.taken_over = 0
        # Following the other nodes' sessions and serving their commands (see _cluster):
        # made once the daemon's own parts are.
        self.cluster: Cluster | None = None
        # Following the sessions other processes on a SQLite file run (see
        # _sqlite_following): made once the daemon's own parts are.
        self.following: SqliteFollowing | None = None
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
        # How this node follows a session another runs: the cluster's notifications on a
        # PostgreSQL journal, the locks' holders on a SQLite file.
        if isinstance(self.ownership, PostgresLeases):
            self.cluster = Cluster(
                self,
                leases=self.ownership,
                node=self.node,
                reader=self.reader,
                add=self._add_session,
                remove=self._remove_session,
                owned=self._owned,
            )
        elif isinstance(self.ownership, SessionLocks):
            self.following = SqliteFollowing(
                self,
                locks=self.ownership,
                reader=self.reader,
                add=self._add_session,
                remove=self._remove_session,
                take_up=self._take_up_orphan,
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
            nursery.start_soon(self._keep_owned)
            nursery.start_soon(self._take_over)
            if self.cluster is not None:
                await nursery.start(self.cluster.serve)
            if self.following is not None:
                await nursery.start(self.following.serve)
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
        """Take ``uri`` up if it was doing something and no other node runs it (claimed
        first, so the state read is all its previous owner wrote)."""
        async with self._finding.hold(uri):
            if uri in self.sessions:
                return None
            if await self._claim(uri) is not None:
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

    async def _take_up_orphan(self, uri: str) -> None:
        """Take ``uri`` up if it was doing something: the process on the SQLite file that
        ran it (and that this daemon followed it from) died before its run ended. Never
        raises: what cannot be taken up is logged (a client asking tries again)."""
        if not self.accepting:
            return  # stopping: the next start takes it up
        try:
            live = await self._take_up_if_busy(uri)
        except (OrchestratorError, OSError) as exc:
            log.error("session not taken up", session=uri, error=str(exc))
            return
        except Exception as exc:  # a bug: the daemon's other sessions go on
            log.error("session not taken up", session=uri, error=str(exc), exc_info=exc)
            return
        if live is not None:
            log.info("session taken up: its process stopped", session=uri)

    # ── who runs which session (the journal's ownership) ──────────────────

    def owned_sessions(self) -> list[str]:
        """The sessions this node owns: those it holds the lease (PostgreSQL) or the lock
        (SQLite) of."""
        return sorted(self.ownership.held)

    def followed_sessions(self) -> list[str]:
        """The sessions this node follows (another node of the journal runs them, or
        another process of its SQLite file)."""
        if self.cluster is not None:
            return sorted(self.cluster.followed)
        return sorted(self.following.followed) if self.following is not None else []

    def run_by(self, uri: str) -> dict[str, object] | None:
        """Who runs ``uri`` when this daemon does not: on SQLite the process holding it
        (``{"program": "orchestrator run", "pid": 4242}``, either None where unknown), on
        PostgreSQL the node it is followed from (``{"node": ...}``); None when this daemon
        runs it or nobody does (as far as it knows without asking the database).
        Blocking (a system call, a file of /proc): cheap, but not a checkpoint."""
        if self.following is not None:
            try:
                holder = self.following.holder(uri)
            except FactLogError:
                return None
            return None if holder is None else holder.to_json()
        followed = self.cluster.follows(uri) if self.cluster is not None else None
        return None if followed is None else {"node": followed.owner}

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
        """Renew what this node holds every :attr:`~SessionOwnership.renew_every` seconds
        (a lock: never); a session another node took ends here, recording nothing ("lease
        lost"), and so does every session held once renewals have failed for a whole TTL
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
        """Every :attr:`~SessionOwnership.renew_every` seconds (a lock: never), take up the
        running sessions whose owner let them lapse (their node died, or gave them up with
        work left) by the start-up's rules; a session this node followed ends first (its
        clients reattach to the one taken up). Now and then, deletes the old forwarded
        commands."""
        scans = 0
        while True:
            await trio.sleep(self.ownership.renew_every)
            if not self.accepting:
                continue
            try:
                expired = await trio.to_thread.run_sync(self.ownership.expired)
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
                # Not in the journal yet: opened on another node, and not prompted (or its
                # first facts not yet written), that node holds its lease. Followed at once,
                # so any node serves a session from the moment its opener knows its id.
                if self.cluster is not None and await self.cluster.runs_elsewhere(uri):
                    return await self.cluster.follow(uri, new=True)
                return None
            if info.status != "running":
                return None
            elsewhere = await self._claim(uri)
            if elsewhere is not None:
                if self.following is not None:
                    return await self.following.follow(uri)
                if self.cluster is None:
                    raise RunError(_elsewhere(uri, elsewhere))
                return await self.cluster.follow(uri)
            try:
                state = await trio.to_thread.run_sync(self.reader.open, uri)
                return await self._take_up(uri, state)
            except BaseException:
                if uri not in self.sessions:
                    await self._release(uri, keep=False)
                raise

    async def watch(self, session: str) -> LiveSession | None:
        """The live session ``session`` (an id or URI) without taking it up: the one this
        daemon runs, or one it follows because another process of its SQLite file or
        another node of its PostgreSQL journal runs it (see :meth:`find`, which also takes
        up a session nobody runs). None otherwise. What a page that reads a session asks
        for: reading takes nothing up."""
        uri = session_uri(session)
        live = self.sessions.get(uri)
        if live is not None and not live.put_away:
            return live
        if self.following is None and self.cluster is None:
            return None
        async with self._finding.hold(uri):
            live = self.sessions.get(uri)
            if live is not None:
                return None if live.put_away else live
            try:
                if not await trio.to_thread.run_sync(self._run_elsewhere, uri):
                    return None
                info = await trio.to_thread.run_sync(self.reader.session, uri)
            except (OrchestratorError, OSError):
                return None  # cannot tell: not followed (a client's find says why)
            if info.status != "running":
                return None
            if self.following is not None:
                return await self.following.follow(uri)
            assert self.cluster is not None
            return await self.cluster.follow(uri)

    def _run_elsewhere(self, uri: str) -> bool:
        """Whether another process of the SQLite file, or another node of the PostgreSQL
        journal, runs ``uri`` now. Blocking (a system call, or a query)."""
        if self.following is not None:
            return self.following.holder(uri) is not None
        if self.cluster is None:
            return False
        owner = self.cluster.commands.live_owner(uri)
        return owner is not None and owner != self.node

    def _follower(self, uri: str) -> FollowedRuntime | None:
        """How this daemon follows ``uri`` (another node or process runs it), if it does."""
        if self.cluster is not None:
            return self.cluster.follows(uri)
        return self.following.follows(uri) if self.following is not None else None

    def _followed(self, uri: str) -> bool:
        """Whether this daemon follows ``uri`` (another node or process runs it)."""
        return self._follower(uri) is not None

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
        name = team.name  # the name it ran under, as its journal's sessions row says
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
                followed = self._follower(live.uri)
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

    async def expire_conversations(self, after: float) -> None:
        """Every so often, end the conversations that have waited ``after`` seconds for their
        next prompt (the ``idle_conversation`` limit): each is recorded ``completed`` as if
        a client ended it (:meth:`dispose`), so ``prune`` can remove it in time.

        A live session counts from the end of its last turn; one not in memory (put away,
        or left idle by the daemon before a restart) from the journal's last write of it,
        and is taken up to be ended. A session at work (a turn running, an approval or a
        question waiting, a prompt queued) never expires.
        """
        # Sessions this node could not take up to end (no team file recorded, run by another
        # process): said once, not every round.
        refused: set[str] = set()
        while True:
            await trio.sleep(min(max(after / 4, 0.05), 60.0))
            if not self.accepting:
                continue
            now = trio.current_time()
            for live in list(self.sessions.values()):
                if (
                    live.started
                    and not live.put_away
                    and not self._followed(live.uri)
                    and not live.finished.is_set()
                    and not _needs_running(live.state)
                    and now - live.idle_since >= after
                ):
                    await self._expire(live, after)
            try:
                infos = await trio.to_thread.run_sync(
                    functools.partial(self.reader.sessions, status="running")
                )
            except FactLogError as exc:
                log.warning("idle conversations not read", error=str(exc))
                continue
            cutoff = timestamp(utc_now() - datetime.timedelta(seconds=after))
            for info in infos:
                if info.updated_at >= cutoff or info.session in self.sessions:
                    continue
                if info.session in refused:
                    continue
                try:
                    found = await self.find(info.session)
                except (OrchestratorError, OSError) as exc:
                    refused.add(info.session)
                    log.warning(
                        "idle conversation not taken up", session=info.session, error=str(exc)
                    )
                    continue
                if found is not None and not _needs_running(found.state):
                    await self._expire(found, after)

    async def _expire(self, live: LiveSession, after: float) -> None:
        log.info("idle conversation ended", session=live.uri, after=after)
        try:
            await self.dispose(live)
        except (OrchestratorError, OSError) as exc:
            log.warning("idle conversation not ended", session=live.uri, error=str(exc))

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
        # What this node still holds (background teammates' streams, sessions that did not
        # end in time) is due for another node at once, not after the TTL.
        for uri in sorted(self.ownership.held):
            await self._release(uri, keep=True)
        self.stopped.set()  # connections not tied to a session (AHP) close now

    # ── sessions ───────────────────────────────────────────────────────────

    def team_list(self) -> str:
        """The teams a client may name, each with its file: ``support (handoff.toml)``."""
        return ", ".join(
            f"{name} ({self.team_files[name]})" if name in self.team_files else name
            for name in sorted(self.teams)
        )

    def team_name(self, name: str) -> str:
        """The name of the team a client names ``name``: its ``[team] name``, or the stem of
        its file (``handoff`` for ``handoff.toml``), which names the same team."""
        return name if name in self.teams else self._stems.get(name, name)

    def team_stem(self, name: str) -> str | None:
        """The stem of team ``name``'s file, when it is not the team's name."""
        file = self.team_files.get(name)
        return Path(file).stem if file is not None and Path(file).stem != name else None

    def team_of(self, name: str | None) -> tuple[str, TeamSpec]:
        """The team a client asks for (by ``[team] name`` or file stem; None: the default
        team), and its name; :class:`RunError` saying which teams there are otherwise."""
        wanted = self.team_name(name) if name else self.default_team
        if wanted is None:
            raise RunError(f"name a team with ?team= (teams: {self.team_list()})")
        team = self.teams.get(wanted)
        if team is None and wanted in self.invalid_teams:
            problems = self.invalid_teams[wanted]
            raise RunError(f"team {wanted!r} cannot be used: its file has problems ({problems})")
        if team is None:
            raise RunError(f"no team {wanted!r} (teams: {self.team_list()})")
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
            elsewhere = await self._claim(uri)
            if elsewhere is not None:
                raise SessionExistsError(
                    f"session {uri} is being opened elsewhere: it {elsewhere.description}",
                    uri=uri,
                    ended=False,
                )
            # It is this node's from now on, before any client is told its id: another
            # node asked for it (the journal has nothing of it before its first prompt)
            # finds who runs it there, and follows it.
            try:
                runtime = self._runtime(
                    name,
                    team,
                    session=uri,
                    ids=ids,
                    background=None if background is None else background.name,
                )
            except BaseException:
                await self._drop_unused(uri)
                raise
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
        """Start ``live``'s run on ``prompt``; returns once its first facts are recorded (or,
        when another node opened it and runs it, read here)."""
        followed = self.cluster.follows(live.uri) if self.cluster is not None else None
        if followed is not None:
            await followed.start(prompt)
            if followed.state.run is not None:
                live.team_name = followed.state.run.team  # unknown here before its run
            return
        elsewhere = await self._claim(live.uri)
        if elsewhere is not None:
            raise RunError(_elsewhere(live.uri, elsewhere))

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
        """End ``live`` for good (AHP ``disposeSession``; ``end`` on ``/ws``, which the web
        view and ``orchestrator end`` send): a conversation waiting for its next message is
        recorded ``completed``, one at work has its turns cancelled and is recorded
        ``cancelled`` (:meth:`LiveSession.end`); a session never prompted is dropped.
        Returns once it has left :attr:`sessions`."""
        async with live.start_lock:
            if not live.started:
                self._drop_unprompted(live, "the session was disposed")
                return
        run = live.state.run
        if not live.finished.is_set() and (run is None or run.status is None):
            await live.end()
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


def _needs_running(state: TeamState) -> bool:
    """An unfinished session that was doing something when the process stopped."""
    coordinator = state.coordinator_chat()
    chat = state.chats.get(coordinator) if coordinator is not None else None
    return _busy(state) or bool(chat is not None and chat.queued_messages)
