"""A node's part in a cluster: following the other nodes' sessions, serving their commands.

Theory of operation
-------------------
Several daemons on one PostgreSQL journal (issue 21). :class:`Cluster` is what a
:class:`~orchestrator.sessions._daemon.Daemon` holds for it beside its leases:

- one listening connection (:class:`~orchestrator.journal.PostgresListener`), whose
  notifications it hands on (:meth:`Cluster.heard`): committed facts to the sessions this node
  follows, forwarded commands to its :class:`~._forwarding.CommandServer`, answers to its
  :class:`~._forwarding.Forwarder`;
- the sessions this node follows (:meth:`Cluster.follow`, see :mod:`._followed`).

A followed session is a :class:`~._live_session.LiveSession` among the daemon's sessions like
any. It is added and removed through the daemon's hands, so that its root channel hears of it.
Its task runs in the cluster's nursery and ends it as the owner's ends it: clients' streams
closed, sinks told why (nothing when the run finished).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import structlog
import trio

from orchestrator.base import OrchestratorError
from orchestrator.core import TeamState
from orchestrator.journal import (
    ANSWERS_CHANNEL,
    COMMANDS_CHANNEL,
    FACTS_CHANNEL,
    JournalReader,
    PostgresCommands,
    PostgresLeases,
    PostgresListener,
    read_facts_payload,
)
from orchestrator.spec import parse_team

from ._followed import FollowedRuntime, follow_session
from ._following import FollowingStatistics
from ._forwarding import CommandServer, Forwarder
from ._live_session import LiveSession, SessionHost

__all__ = ["Cluster"]

log = structlog.get_logger("orchestrator.daemon")

#: Take-over scans between two deletions of old forwarded commands (see :meth:`Cluster.tidy`).
OLD_COMMANDS_EVERY: Final = 100


class Cluster:
    """Following and forwarding for a node holding ``leases`` (see the module docstring);
    start it with ``await nursery.start(cluster.serve)``."""

    def __init__(
        self,
        host: SessionHost,
        *,
        leases: PostgresLeases,
        node: str,
        reader: JournalReader,
        add: Callable[[LiveSession], None],
        remove: Callable[[LiveSession], None],
        owned: Callable[[str], Awaitable[LiveSession | None]],
    ) -> None:
        """``add`` and ``remove``: the daemon's hands on its sessions; ``owned``: a session
        this node runs (a forwarded command's target)."""
        self._host = host
        self._leases = leases
        self._reader = reader
        self._add = add
        self._remove = remove
        self.listener = PostgresListener(leases.url)
        self.commands = PostgresCommands(leases.url, node=node)
        self.forwarder = Forwarder(self.commands)
        self.command_server = CommandServer(self.commands, held=lambda: leases.held, find=owned)
        self.followed: dict[str, FollowedRuntime] = {}
        self._nursery: trio.Nursery | None = None
        self._scans = 0  # take-over scans (see tidy)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen, carry out forwarded commands and run the followed sessions' tasks,
        until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.listener.serve, self.heard, self.listening)
                nursery.start_soon(self.command_server.serve)
                task_status.started()
        finally:
            self.commands.close()  # its connection (the listener's closes in its thread)

    # ── following ──────────────────────────────────────────────────────────

    def runs_elsewhere(self, uri: str) -> bool:
        """Whether another node holds the lease of ``uri`` now. Blocking (a query)."""
        owner = self.commands.live_owner(uri)
        return owner is not None and owner != self._leases.node

    def run_by(self, uri: str) -> dict[str, object] | None:
        """The node ``uri`` is followed from (``{"node": ...}``); None when it is not."""
        followed = self.followed.get(uri)
        return None if followed is None else {"node": followed.owner}

    async def follow_unrecorded(self, uri: str) -> LiveSession | None:
        """Follow ``uri``, which the journal has nothing of yet, if another node holds its
        lease (it opened it, and has not started its run or written its first facts)."""
        if not await trio.to_thread.run_sync(self.runs_elsewhere, uri):
            return None
        return await self.follow(uri, new=True)

    async def follow(self, uri: str, *, new: bool = False) -> LiveSession:
        """Follow ``uri``, which another node runs (see :mod:`._followed`); its clients
        reach it as any live session. ``new``: the journal has nothing of it yet (its
        owner opened it and has not started its run): followed from its first fact."""
        assert self._nursery is not None, "the cluster is not serving"
        owner = await trio.to_thread.run_sync(self.commands.live_owner, uri)
        if new:
            state = TeamState(uri)
            name = ""  # said by its run's first facts (a client here learns it from them)
        else:
            state = await trio.to_thread.run_sync(self._reader.open, uri)
            name = await trio.to_thread.run_sync(self._team_name, uri, state)
        runtime = FollowedRuntime(
            state,
            owner=owner or "another node",
            reader=self._reader,
            forwarder=self.forwarder,
            live_owner=self.commands.live_owner,
            lease_check=self._leases.ttl / 3,
        )
        live = LiveSession(self._host, name, runtime)
        self.followed[uri] = runtime
        self._add(live)
        await self._nursery.start(self._run_followed, live, runtime)
        log.info("following session", session=uri, owner=runtime.owner)
        return live

    async def _run_followed(
        self,
        live: LiveSession,
        runtime: FollowedRuntime,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            await follow_session(live, runtime, task_status=task_status)
        finally:
            self._remove(live)
            if self.followed.get(live.uri) is runtime:
                del self.followed[live.uri]
            log.info("session no longer followed", session=live.uri, why=runtime.end_reason)

    async def unfollow(self, live: LiveSession, why: str | None) -> None:
        """End following ``live`` (its clients told ``why``); returns once it has ended."""
        runtime = self.followed.get(live.uri)
        if runtime is not None:
            runtime.end(why)
            await live.finished.wait()

    def _team_name(self, uri: str, state: TeamState) -> str:
        """The ``[team] name`` a session runs (as the daemon names teams), from its run, or
        its recorded team file before its run started (in a thread: it reads the journal)."""
        if state.run is not None:
            return state.run.team
        _, team_toml = self._reader.team_toml(uri)
        try:
            return parse_team(team_toml, file="<journal>").name if team_toml else ""
        except OrchestratorError:
            return ""

    def follows(self, uri: str) -> FollowedRuntime | None:
        return self.followed.get(uri)

    # ── what the node hears ────────────────────────────────────────────────

    def heard(self, channel: str, payload: str) -> None:
        """A notification of the cluster (see orchestrator.journal.postgres._notify)."""
        if channel == FACTS_CHANNEL:
            session, sequence = read_facts_payload(payload)
            followed = self.followed.get(session) if session is not None else None
            if session is None:
                for runtime in self.followed.values():
                    runtime.wake()
            elif followed is not None:
                followed.wake(sequence)
        elif channel == COMMANDS_CHANNEL:
            self.command_server.wake()
        elif channel == ANSWERS_CHANNEL:
            self.forwarder.answered(payload)

    def listening(self) -> None:
        """Listening (again): notifications may have been missed, everything is read."""
        for runtime in self.followed.values():
            runtime.wake()
        self.command_server.wake()
        self.forwarder.wake_all()

    # ── now and then ───────────────────────────────────────────────────────

    async def tidy(self) -> None:
        """After a take-over scan: every :data:`OLD_COMMANDS_EVERY` scans, delete the old
        forwarded commands (never raises)."""
        self._scans += 1
        if self._scans % OLD_COMMANDS_EVERY == 0:
            await self.delete_old_commands()

    def statistics(self) -> FollowingStatistics:
        return FollowingStatistics(followed=len(self.followed), journal_looks=0)

    async def delete_old_commands(self) -> None:
        """Delete the forwarded commands older than an hour (never raises)."""
        try:
            deleted = await trio.to_thread.run_sync(self.commands.delete_old)
        except (OrchestratorError, OSError) as exc:
            log.warning("old forwarded commands not deleted", error=str(exc))
            return
        if deleted:
            log.info("old forwarded commands deleted", count=deleted)
