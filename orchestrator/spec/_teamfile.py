"""Team definition files: TOML text in, validated frozen models out.

The entry points: :func:`load_team` (a file), :func:`parse_team` (its text),
:func:`team_from_mapping` (a decoded document), :func:`lint_team` (what parses but cannot
work as written) and :func:`check_team` (both, for ``orchestrator teams check``).

Where the rest lives:

* :mod:`._model`: the team, its agents and command tools (frozen attrs classes);
* :mod:`._script`: the scripted turns and their steps;
* :mod:`._parse`: the walk over the decoded TOML, and its theory of operation (each check
  names the key path of the value it refuses);
* :mod:`._checks`: the checks of single values the walk is made of;
* :mod:`._wording`: key paths and "did you mean" hints, shared by all of them;
* :mod:`._schedule`: the ``[[background]]`` teammates' schedules.

Pure: no trio and no IO, except :func:`load_team` / :func:`check_team`, which
read the file they are given.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from orchestrator.base import TeamFileError

from ._model import TEAM_TOOLS, TeamSpec, mcp_tool_ref
from ._parse import _Parser
from ._wording import _did_you_mean, _join

__all__ = [
    "check_team",
    "lint_team",
    "load_team",
    "parse_team",
    "team_from_mapping",
]

_TOML_POSITION_RE: Final = re.compile(r"\(at line (\d+), column (\d+)\)")


def load_team(path: str | Path) -> TeamSpec:
    """Read and parse the team file at ``path``."""
    file = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as exc:
        raise TeamFileError(f"cannot read the file: {exc.strerror or exc}", file=file) from exc
    except UnicodeDecodeError as exc:
        raise TeamFileError(
            f"the file is not UTF-8 (byte {exc.start}): TOML files must be UTF-8", file=file
        ) from exc
    return parse_team(text, file=file)


def parse_team(text: str, *, file: str) -> TeamSpec:
    """Parse team-file TOML ``text``; ``file`` names it in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION_RE.search(message)
        if position is not None:
            reason = message[: position.start()].rstrip()
            line, column = position.groups()
            message = f"invalid TOML at line {line}, column {column}: {reason}"
        else:
            message = f"invalid TOML: {message}"
        raise TeamFileError(message, file=file) from exc
    return attrs.evolve(team_from_mapping(data, file=file), source=text)


def team_from_mapping(data: Mapping[str, Any], *, file: str) -> TeamSpec:
    """Validate an already-decoded TOML document (what :func:`tomllib.loads` returns)."""
    return _Parser(file).team(data)


def lint_team(team: TeamSpec) -> list[str]:
    """Problems of a team that parses but cannot work as written, as messages.

    Pure. These are not parse errors, because each agent is valid on its own:

    - an agent nothing can start;
    - a ``delegates_to`` no tool can use;
    - a team tool with nobody to reach;
    - a scripted agent without turns;
    - a command tool no agent lists;
    - a tool name one typo away from a command tool's.
    """
    problems: list[str] = []

    def problem(key_path: str, message: str) -> None:
        problems.append(str(TeamFileError(message, file=team.file, key_path=key_path)))

    # Background and remote teammates may be started by a schedule or a peer.
    if team.topology not in {"background_teammate", "remote_teammate"}:
        # A [[background]] entry starts its agent as the coordinator starts its own.
        roots = [team.coordinator, *(b.agent for b in team.background)]
        # A board item assigned to an agent starts it when the item is ready.
        if team.board is not None:
            roots += [
                i.assignee for i in team.board.items if i.assignee_kind == "agent" and i.assignee
            ]
        reachable = set(roots)
        frontier = list(reachable)
        while frontier:
            name = frontier.pop()
            # A reviewer starts when the worker it reviews has done its work.
            reviewer = team.reviewer_of(name)
            starts = (*team.agent(name).delegates_to, *([reviewer.name] if reviewer else []))
            for target in starts:
                if target not in reachable:
                    reachable.add(target)
                    frontier.append(target)
        for agent in team.agents:
            if agent.name not in reachable:
                problem(
                    _join("agents", agent.name),
                    f"not reachable from the coordinator {team.coordinator!r} through "
                    "delegates_to (or reviews), so nothing can start it",
                )
    for agent in team.agents:
        path = _join("agents", agent.name)
        routes = {"delegate", "handoff"} & set(agent.tools)
        if agent.delegates_to and not routes:
            problem(
                f"{path}.delegates_to",
                "lists agents but tools has neither 'delegate' nor 'handoff', "
                "so it can never reach them",
            )
        if routes and not agent.delegates_to:
            tools = ", ".join(repr(t) for t in sorted(routes))
            problem(f"{path}.tools", f"has {tools} but delegates_to is empty")
        commands = list(team.tool_table_names)
        for index, tool in enumerate(agent.tools):
            if (
                tool in TEAM_TOOLS
                or tool in commands
                or tool in agent.tool_results
                or mcp_tool_ref(tool) is not None
            ):
                continue
            # A near miss of a command tool's name would quietly answer "ok" instead.
            hint = _did_you_mean(tool, commands)
            if hint:
                problem(
                    f"{path}.tools[{index}]",
                    f"{tool!r} is no [tools] command{hint}, so it answers a scripted result",
                )
        if agent.backend == "scripted" and not agent.turns:
            problem(
                f"{path}.turns",
                "a scripted agent without turns only answers a default text; "
                "add [[" + path + ".turns]] with steps",
            )
    listed = {tool for agent in team.agents for tool in agent.tools}
    for tool_name in team.tool_table_names:
        if tool_name not in listed:
            problem(
                _join("tools", tool_name),
                f"no agent lists {tool_name!r} in its tools, so nothing can call it",
            )
    for server in team.mcp_servers:
        if not any(
            (ref := mcp_tool_ref(tool)) is not None and ref.server == server.name
            for agent in team.agents
            for tool in agent.tools
        ):
            problem(
                _join("mcp", server.name),
                f"no agent lists a tool of {server.name!r} (mcp.{server.name}/<tool> or "
                f"mcp.{server.name}/*) in its tools, so nothing can call it",
            )
    return problems


def check_team(path: str | Path) -> list[str]:
    """Every problem with the team file at ``path``, as human-readable lines.

    Empty when the file is fine. A file that does not parse yields its parse errors: the
    first of the team table, or the first of each agent; one that parses yields
    :func:`lint_team`.
    """
    try:
        team = load_team(path)
    except TeamFileError as exc:
        return [str(problem) for problem in exc.problems]
    return lint_team(team)
