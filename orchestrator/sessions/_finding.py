"""Finding a session for a client: the one in memory, one of the journal taken up, or one
another process or node runs, followed (:class:`SessionFinder`).

The daemon takes up, at start, the unfinished sessions that were doing something
(:meth:`SessionFinder.take_up_unfinished`); an idle one is taken up when a client asks for it
(:meth:`SessionFinder.find`), so a restart costs what is busy, not all. A session is taken up
only once this node owns it (the daemon's acquire: the SQLite record lock, the PostgreSQL
lease). So the state read is all its previous owner wrote. A session that another process of
the SQLite file or another node of the PostgreSQL journal runs is followed (the daemon's
``following``, see :mod:`._following`).
Two clients asking for one session at once take it up once (:class:`SessionLocks`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

import attrs
import structlog
import trio

from orchestrator.base import FactLogError, OrchestratorError, RunError
from orchestrator.core import TeamState
from orchestrator.journal import HeldElsewhere, JournalReader
from orchestrator.runtime import RunOutcome
from orchestrator.spec import parse_team, with_model

from ._followed import FollowedRuntime
from ._following import Following
from ._live_session import LiveSession, SessionHost, _busy, session_uri
from ._team_runtimes import TeamRuntimes

__all__ = [
    "SessionFinder",
    "SessionLocks",
]

log = structlog.get_logger("orchestrator.daemon")

#: What starts a session's run or resume (see :meth:`SessionRuns.launch`).
Start = Callable[..., Awaitable[RunOutcome]]


class Claim(Protocol):
    """Claim ``uri`` for this node: None once it holds it, else who does (see the daemon's)."""

    async def __call__(self, uri: str, *, quiet: bool = False) -> HeldElsewhere | None: ...


class Release(Protocol):
    """Give ``uri`` up (``keep``: due for another node to take up at once)."""

    async def __call__(self, uri: str, *, keep: bool) -> None: ...


class FinderHost(SessionHost, Protocol):
    """What the finder reads of the daemon: its sessions and journal, who follows the
    sessions others run, and how its sessions' runtimes are made."""

    sessions: dict[str, LiveSession]
    reader: JournalReader
    following: Following
    accepting: bool
    node: str
    runtimes: TeamRuntimes


class SessionLocks:
    """One lock per session URI, held while the session is taken up or followed.

    Two clients asking for a session at once take it up once. Different sessions are taken up
    side by side. The clients of a dead node's hundred sessions reattach at once; one lock for
    all made the last wait for the ninety-nine before it. A lock that nobody holds or waits for
    is forgotten."""

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


class SessionFinder:
    """Finds, takes up and follows a daemon's sessions (see the module)."""

    def __init__(
        self,
        daemon: FinderHost,
        *,
        claim: Claim,
        release: Release,
        launch: Callable[[LiveSession, Start], Awaitable[None]],
    ) -> None:
        """``launch`` runs a session taken up in the daemon's nursery."""
        self._daemon = daemon
        self._claim = claim
        self._release = release
        self._launch = launch
        self._locks = SessionLocks()

    def __len__(self) -> int:
        """Sessions being taken up or followed now."""
        return len(self._locks)

    def followed_sessions(self) -> list[str]:
        """The sessions this node follows (another node of the journal runs them, or
        another process of its SQLite file)."""
        return sorted(self._daemon.following.followed)

    def run_by(self, uri: str) -> dict[str, object] | None:
        """Who runs ``uri`` when this daemon does not.

        - On SQLite: the process holding it (``{"program": "orchestrator run", "pid": 4242}``,
          either None where unknown).
        - On PostgreSQL: the node it is followed from (``{"node": ...}``).
        - None when this daemon runs it or nobody does (as far as it knows without asking the
          database).

        Blocking (a system call, a file of /proc): cheap, but not a checkpoint."""
        return self._daemon.following.run_by(uri)

    async def find(self, session: str) -> LiveSession | None:
        """The live session ``session`` (an id or URI), taking an unfinished one up from the
        journal if it is not in memory, or following it if another node runs it (see
        :mod:`._followed`); None if there is no such unfinished session."""
        uri = session_uri(session)
        live = self._daemon.sessions.get(uri)
        if live is not None and not live.put_away:
            if live.resuming is not None:
                await live.resuming.wait()  # being taken up: its approvals reopened first
            return live
        async with self._locks.hold(uri):  # two clients asking at once take it up once
            live = self._daemon.sessions.get(uri)
            if live is not None and live.put_away:
                await live.finished.wait()  # being put away: take it up again after
                live = None
            if live is not None:
                return live
            try:
                info = await trio.to_thread.run_sync(self._daemon.reader.session, uri)
            except FactLogError:
                # Not in the journal yet: opened on another node, and not prompted (or its
                # first facts not yet written), that node holds its lease. Followed at once,
                # so any node serves a session from the moment its opener knows its id.
                return await self._daemon.following.follow_unrecorded(uri)
            if info.status != "running":
                return None
            held = await self._claim(uri)
            if held is not None:
                return await self._daemon.following.follow(uri)
            try:
                state = await trio.to_thread.run_sync(self._daemon.reader.open, uri)
                return await self._take_up(uri, state)
            except BaseException:
                if uri not in self._daemon.sessions:
                    await self._release(uri, keep=False)
                raise

    async def watch(self, session: str) -> LiveSession | None:
        """The live session ``session`` (an id or URI) without taking it up.

        That is the one this daemon runs, or one it follows. It follows a session that another
        process of its SQLite file or another node of its PostgreSQL journal runs. See
        :meth:`find`, which also takes up a session nobody runs. None otherwise. What a page
        that reads a session asks for: reading takes nothing up."""
        uri = session_uri(session)
        live = self._daemon.sessions.get(uri)
        if live is not None and not live.put_away:
            return live
        async with self._locks.hold(uri):
            live = self._daemon.sessions.get(uri)
            if live is not None:
                return None if live.put_away else live
            try:
                if not await trio.to_thread.run_sync(self._daemon.following.runs_elsewhere, uri):
                    return None
                info = await trio.to_thread.run_sync(self._daemon.reader.session, uri)
            except (OrchestratorError, OSError):
                return None  # cannot tell: not followed (a client's find says why)
            if info.status != "running":
                return None
            return await self._daemon.following.follow(uri)

    async def take_up_unfinished(self) -> None:
        """Take up the unfinished sessions that were doing something.

        Doing something means a turn running, an approval or a question waiting, or a prompt
        queued. Idle ones are taken up when a client asks for them (:meth:`find`). So a restart
        costs what is busy, not all."""
        infos = await trio.to_thread.run_sync(self._daemon.reader.sessions)
        for info in infos:
            if info.status != "running":
                continue
            try:
                await self.take_up_if_busy(info.session)
            except (OrchestratorError, OSError) as exc:
                log.error("session not taken up", session=info.session, error=str(exc))

    async def take_up_if_busy(self, uri: str) -> LiveSession | None:
        """Take ``uri`` up if it was doing something and no other node runs it (claimed
        first, so the state read is all its previous owner wrote)."""
        async with self._locks.hold(uri):
            if uri in self._daemon.sessions:
                return None
            if await self._claim(uri) is not None:
                return None
            try:
                state = await trio.to_thread.run_sync(self._daemon.reader.open, uri)
                if not needs_running(state):
                    await self._release(uri, keep=False)  # idle: whoever is asked takes it
                    return None
                return await self._take_up(uri, state)
            except BaseException:
                # Not due again at once: a session that cannot be taken up here (no team
                # file recorded) cannot elsewhere either; a client asking tries again.
                if uri not in self._daemon.sessions:
                    await self._release(uri, keep=False)
                raise

    async def take_up_orphan(self, uri: str) -> None:
        """Take ``uri`` up if it was doing something: the process on the SQLite file that
        ran it (and that this daemon followed it from) died before its run ended. Never
        raises: what cannot be taken up is logged (a client asking tries again)."""
        if not self._daemon.accepting:
            return  # stopping: the next start takes it up
        try:
            live = await self.take_up_if_busy(uri)
        except (OrchestratorError, OSError) as exc:
            log.error("session not taken up", session=uri, error=str(exc))
            return
        except Exception as exc:  # a bug: the daemon's other sessions go on
            log.error("session not taken up", session=uri, error=str(exc), exc_info=exc)
            return
        if live is not None:
            log.info("session taken up: its process stopped", session=uri)

    async def _take_up(self, uri: str, state: TeamState) -> LiveSession:
        team_file, team_toml = await trio.to_thread.run_sync(self._daemon.reader.team_toml, uri)
        if not team_toml:
            raise RunError(f"{uri} did not record its team file: it cannot be taken up")
        team = parse_team(team_toml, file=team_file or "<journal>")
        name = team.name  # the name it ran under, as its journal's sessions row says
        run = state.run
        if run is not None and run.coordinator != team.coordinator:
            # A background teammate's run: its agent was the run's coordinator.
            team = attrs.evolve(team, coordinator=run.coordinator)
        if run is not None and run.model is not None:
            # The model chosen when it was opened (the team file recorded has the file's).
            team = with_model(team, run.model)
        runtime = self._daemon.runtimes.runtime(
            name, team, state=state, background=None if run is None else run.background
        )
        live = LiveSession(self._daemon, name, runtime)
        live.resuming = resuming = trio.Event()
        try:
            await self._launch(live, runtime.resume)
        finally:
            resuming.set()
        log.info("session taken up", session=uri, team=name)
        return live

    def follower(self, uri: str) -> FollowedRuntime | None:
        """How this daemon follows ``uri`` (another node or process runs it), if it does."""
        return self._daemon.following.follows(uri)

    def followed(self, uri: str) -> bool:
        """Whether this daemon follows ``uri`` (another node or process runs it)."""
        return self.follower(uri) is not None

    async def owned(self, uri: str) -> LiveSession | None:
        """The session ``uri`` as this node runs it (a forwarded command's target)."""
        live = self._daemon.sessions.get(uri)
        if live is None or self.followed(uri) or live.put_away:
            return None
        if live.resuming is not None:
            await live.resuming.wait()
        return live


def needs_running(state: TeamState) -> bool:
    """An unfinished session that was doing something when the process stopped."""
    coordinator = state.coordinator_chat()
    chat = state.chats.get(coordinator) if coordinator is not None else None
    return _busy(state) or bool(chat is not None and chat.queued_messages)
