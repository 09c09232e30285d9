"""Each session's :class:`~orchestrator.runtime.TeamRuntime`, made the daemon's way.

- One HTTP client for the model backends.
- The MCP tool servers of each team, shared by its sessions: one connection per server per
  team. They are started in the daemon's nursery for the first session that needs them. They
  are kept until the daemon stops.

A team that cannot run (an unset API key for a hosted model, a Python tool that does not
import) is found as the daemon is made. It is logged and kept in
:attr:`TeamRuntimes.unavailable`. Opening a session of it says why it cannot.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
import structlog
import trio

from orchestrator.base import RunError, TeamFileError
from orchestrator.core import TeamState
from orchestrator.runtime import (
    DEFAULT_DELTA_WINDOW,
    BackendFactory,
    FactLog,
    Ids,
    McpServers,
    TeamRuntime,
    ToolCallback,
    resolve_python_tools,
)
from orchestrator.runtime.backends import backend_factory
from orchestrator.spec import McpServer, TeamSpec

__all__ = [
    "TeamRuntimes",
]

log = structlog.get_logger("orchestrator.daemon")


class TeamRuntimes:
    """Makes the runtimes of a daemon's sessions; :attr:`nursery` is the daemon's once it
    serves (the shared tool servers run there)."""

    def __init__(
        self,
        teams: Mapping[str, TeamSpec],
        *,
        journal: FactLog,
        http: httpx.AsyncClient,
        environ: Mapping[str, str] | None,
        callback: ToolCallback,
        delta_window: float = DEFAULT_DELTA_WINDOW,
    ) -> None:
        self._journal = journal
        self._delta_window = delta_window
        self._http = http
        self._environ = environ
        # Given to every session's command tools; the server sets its URL once it listens.
        self.callback = callback
        self.nursery: trio.Nursery | None = None
        self._backends: dict[str, BackendFactory] = {}
        self._agents = {name: team.agents for name, team in teams.items()}  # as loaded
        self.unavailable: dict[str, str] = {}  # team name → why it cannot run
        for name, team in teams.items():
            try:
                resolve_python_tools(team)
                self._backends[name] = backend_factory(team, client=http, environ=environ)
            except (RunError, TeamFileError) as exc:
                self.unavailable[name] = str(exc)
                log.warning("team unavailable", team=name, error=str(exc))
        # The MCP servers of each team, shared by its sessions: one connection per server
        # per team. Keyed by the servers' definitions too, so a session taken up with the
        # team file it recorded does not share an edited file's servers.
        self._tool_servers: dict[tuple[str, tuple[McpServer, ...]], McpServers] = {}

    def runtime(
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
        if factory is None or state is not None or team.agents != self._agents.get(name):
            # A session taken up after a restart runs the team file it recorded; one opened
            # with a model of its own (``/ws?model=``) has agents of its own.
            factory = backend_factory(team, client=self._http, environ=self._environ)
        restart = 0 if state is None or state.run is None else state.run.restarts + 1
        return TeamRuntime(
            team,
            backends=factory,
            factlog=self._journal,
            ids=ids or Ids(restart=restart),
            state=state,
            conversation=background is None,
            session=session,
            background=background,
            callback=self.callback,
            tool_servers=self._shared_tool_servers(team),
            delta_window=self._delta_window,
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
            assert self.nursery is not None, "the daemon is not serving"
            servers = self._tool_servers[key] = McpServers(team.mcp_servers, self._environ)
            self.nursery.start_soon(servers.run)
            log.info("mcp servers started for team", team=team.name, servers=len(key[1]))
        return servers
