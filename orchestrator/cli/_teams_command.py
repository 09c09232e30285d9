"""``orchestrator teams check``: team files validated as ``run`` and ``serve`` load them.

Paths may be files or directories (their ``*.toml``, not recursive); none means ``teams/``.
A ``module:attr`` names a team defined in Python (see
:func:`~orchestrator.sessions.load_team_reference`), checked as a file is.
Each file's problems are printed together, one per line, then ``ok: FILE`` for a good one.
``--json`` prints one array instead: ``[{"file", "ok", "problems"}, ...]``. The exit status
is 1 when any file has problems, as ``graph --check`` does for violations.

Each model server an OpenAI-compatible agent asks is probed (``GET {base_url}/models``, all at
once, 2 s a step): a server that is not there, refuses the key or does not list the model is a
warning, as an unset key is. Warnings leave the exit status alone (the server may be up when the
team runs); ``--offline`` skips the probes.

``--tools`` also does, for each good file, what a run does before its first model round. It
starts its MCP servers and resolves its Python tools. Then it lists the tools each agent is
offered with their parameters (:mod:`._tool_listing`; ``"tools"`` in the JSON). A server that
cannot be reached is one of the file's problems.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from orchestrator.base import TeamFileError
from orchestrator.runtime.backends import backend_problems
from orchestrator.sessions import is_team_reference, load_team_reference
from orchestrator.spec import lint_team

from ._conventions import EXIT_FAILED, EXIT_OK

__all__: list[str] = []

DEFAULT_DIRECTORY = Path("teams")


def check(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator teams check``."""
    paths: Sequence[Path] = args.paths
    files = team_files(paths or [DEFAULT_DIRECTORY])
    results = [(path, *_findings(path)) for path in files]
    if not getattr(args, "offline", False):
        _probe_model_servers(results)
    listings: dict[Path, Any] = {}
    if getattr(args, "tools", False):
        import trio  # the runtime and trio: only when asked

        from ._tool_listing import offered_tools

        for path, problems, _ in results:
            if not problems:
                listings[path] = listing = trio.run(offered_tools, load_team_reference(path))
                problems.extend(f"{path}: {problem}" for problem in listing.problems)
    if args.json:
        from ._tool_listing import listing_json

        report = [
            {
                "file": str(path),
                "ok": not problems,
                "problems": problems,
                "warnings": warnings,
                **({"tools": listing_json(listings[path])} if path in listings else {}),
            }
            for path, problems, warnings in results
        ]
        json.dump(report, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for path, problems, warnings in results:
            for problem in problems:
                print(problem, file=out)
            if not problems:
                print(f"ok: {path}", file=out)
            for warning in warnings:
                print(f"warning: {path}: {warning}", file=out)
            if path in listings:
                from ._tool_listing import listing_lines

                for line in listing_lines(listings[path]):
                    print(line, file=out)
    return EXIT_FAILED if any(problems for _, problems, _ in results) else EXIT_OK


def _findings(path: Path) -> tuple[list[str], list[str]]:
    """The file's problems, and warnings about what it needs that this machine lacks.

    A file that parses has its plugin backends looked up too (imported, not made: see
    ``runtime.backends.backend_problems``). Its Python tools are resolved (imported, their
    schemas derived: see ``runtime.python_tool_problems``). A warning names an agent that
    cannot reach its model here (an unset API key), which the file itself does not make
    wrong.
    """
    try:
        team = load_team_reference(path)
    except TeamFileError as exc:
        return [str(problem) for problem in exc.problems], []
    problems = lint_team(team) or backend_problems(team)
    if team.python_tools:
        # Imported here: trio and structlog come with it, and a team without Python tools
        # (most) checks without them.
        from orchestrator.runtime import python_tool_problems

        problems += python_tool_problems(team)
    warnings: list[str] = []
    if any(agent.openai is not None for agent in team.agents):
        from orchestrator.runtime.backends import missing_key  # httpx: only when needed

        for agent in team.agents:
            missing = missing_key(team, agent, os.environ)
            if missing is not None:
                warnings.append(f"cannot run here: {missing}")
    return problems, warnings


def _probe_model_servers(results: list[tuple[Path, list[str], list[str]]]) -> None:
    """Add to each good file's warnings what the probes of its model servers found."""
    teams = [
        (load_team_reference(path), warnings)
        for path, problems, warnings in results
        if not problems
    ]
    if not any(agent.openai is not None for team, _ in teams for agent in team.agents):
        return
    import trio  # httpx and trio: only for a team on the OpenAI-compatible backend

    from orchestrator.runtime.backends import model_servers, probe_model_servers

    asked = [
        (server, warnings) for team, warnings in teams for server in model_servers(team, os.environ)
    ]
    found = trio.run(probe_model_servers, [server for server, _ in asked])
    for (_, warnings), warning in zip(asked, found, strict=True):
        if warning is not None:
            warnings.append(warning)


def team_files(paths: Iterable[Path]) -> list[Path]:
    """The team files ``paths`` name: files as given, directories' ``*.toml`` sorted.

    :class:`TeamFileError` for a path that does not exist or a directory without any."""
    files: list[Path] = []
    for path in paths:
        if is_team_reference(path):
            files.append(path)  # module:attr, a team defined in Python
        elif path.is_dir():
            found = sorted(path.glob("*.toml"))
            if not found:
                raise TeamFileError("no team files (*.toml) in this directory", file=str(path))
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise TeamFileError("no such file or directory", file=str(path))
    return files
