"""``orchestrator teams check --tools``: the tools each agent of a team is offered, as a model
would see them.

:func:`offered_tools` does what a run does before its first model round:

- it starts the team's MCP servers (:class:`~orchestrator.runtime.McpServers`: each listed, or
  failed with why, within its ``start_timeout``);
- it resolves its Python tools;
- it makes each agent's definitions with :func:`~orchestrator.spec.tool_definitions`, the
  function the turn loop uses;
- it stops the servers.

A server that cannot be reached is a problem of the file's check (the team would run without its
tools).

:func:`listing_lines` renders it for a person:

- each tool as the function a model calls;
- its parameters as a short signature read from the JSON Schema: ``name: type`` for a required
  one, ``name?: type`` for an optional one, an enum as its values;
- the team file's name where it differs (``notes__add_note(...)  mcp.notes/add_note``).

:func:`listing_json` gives the schemas whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import trio

from orchestrator.runtime import McpServers, resolve_python_tools
from orchestrator.spec import TeamSpec, ToolDefinition, tool_definitions

__all__: list[str] = []


@attrs.frozen(kw_only=True)
class ToolListing:
    """What ``teams check --tools`` found for one team."""

    # Each MCP server: how many tools it listed, or why it could not be reached.
    servers: Mapping[str, int | str]
    # Each agent's tools, in the order it is offered them.
    agents: Mapping[str, tuple[ToolDefinition, ...]]

    @property
    def problems(self) -> list[str]:
        return [f"mcp.{name}: {why}" for name, why in self.servers.items() if isinstance(why, str)]


async def offered_tools(team: TeamSpec) -> ToolListing:
    """Start ``team``'s MCP servers, resolve its Python tools, and make every agent's tool
    definitions (:class:`~orchestrator.base.TeamFileError` for a Python tool that does not
    resolve)."""
    discovered = {name: r.definition for name, r in resolve_python_tools(team).items()}
    servers: dict[str, int | str] = {}
    if team.mcp_servers:
        mcp = McpServers(team.mcp_servers)
        async with trio.open_nursery() as nursery:
            await nursery.start(mcp.run)
            listed = mcp.definitions()
            errors = mcp.errors()
            nursery.cancel_scope.cancel()
        discovered.update(listed)
        for server in team.mcp_servers:
            prefix = f"mcp.{server.name}/"
            servers[server.name] = errors.get(server.name) or sum(
                1 for name in listed if name.startswith(prefix)
            )
    agents = {agent.name: tool_definitions(team, agent, discovered) for agent in team.agents}
    return ToolListing(servers=servers, agents=agents)


def listing_lines(listing: ToolListing) -> list[str]:
    """The listing for a person, indented under the file's ``ok:`` line."""
    lines: list[str] = []
    for name, found in listing.servers.items():
        if isinstance(found, str):
            lines.append(f"  mcp.{name}: not reached, so none of its tools are offered")
        else:
            lines.append(f"  mcp.{name}: {found} tool{'' if found == 1 else 's'} listed")
    for agent, definitions in listing.agents.items():
        count = len(definitions)
        lines.append(
            f"  {agent} is offered {count or 'no'} tool{'' if count == 1 else 's'}"
            + (":" if count else "")
        )
        calls = [f"{d.function_name}({signature(d.parameters)})" for d in definitions]
        width = max((len(c) for c in calls), default=0)
        for call, definition in zip(calls, definitions, strict=True):
            if definition.function_name != definition.name:
                call = f"{call:<{width}}  {definition.name}"
            lines.append(f"    {call}")
    return lines


def listing_json(listing: ToolListing) -> dict[str, Any]:
    """The listing as JSON: the servers, and each agent's tools with their whole schemas."""
    return {
        "servers": {
            name: {"ok": False, "error": found}
            if isinstance(found, str)
            else {"ok": True, "tools": found}
            for name, found in listing.servers.items()
        },
        "agents": {
            agent: [
                {
                    "name": d.name,
                    "function_name": d.function_name,
                    "description": d.description,
                    "parameters": d.parameters,
                }
                for d in definitions
            ]
            for agent, definitions in listing.agents.items()
        },
    }


def signature(schema: Mapping[str, Any]) -> str:
    """A short rendering of an object schema's parameters: ``text: string, limit?: integer``;
    ``...`` when it names none and takes any object."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return "..." if schema.get("additionalProperties", True) is not False else ""
    required = schema.get("required", [])
    return ", ".join(
        f"{name}{'' if name in required else '?'}: {_type(value)}"
        for name, value in properties.items()
    )


def _type(schema: object) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(_literal(v) for v in schema["enum"])
    if "const" in schema:
        return _literal(schema["const"])
    kind = schema.get("type")
    if kind == "array":
        return f"{_type(schema.get('items'))}[]"
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return " | ".join(_type(o) for o in options)
    return "any"


def _literal(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)
