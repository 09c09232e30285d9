"""``orchestrator serve`` (the daemon in this process) and ``teammates`` (a client of a
running daemon's background teammates)."""

from __future__ import annotations

import argparse
import functools
import os
from typing import TextIO

import attrs
import trio

from orchestrator import server
from orchestrator.base import ConfigError, OrchestratorError
from orchestrator.runtime import TracingSettings, traced
from orchestrator.server import ServeConfig, load_serve_config

from ._conventions import EXIT_OK, default_db
from ._teammates_client import print_answer, read_token, request, teammates_url

__all__: list[str] = []


def serve(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator serve``."""
    config = load_serve_config(args.config) if args.config is not None else ServeConfig()
    overrides = {
        key: value
        for key, value in (
            ("host", args.host),
            ("port", args.port),
            ("teams", args.teams),
            ("node", args.node),
        )
        if value is not None
    }
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ConfigError("expected a port number from 0 to 65535", file="--port")
    if args.node is not None and not 0 < len(args.node) <= 200:
        raise ConfigError("expected 1 to 200 characters", file="--node")
    config = attrs.evolve(config, **overrides)
    if args.team:
        config = attrs.evolve(config, team_references=tuple(args.team))
    db = args.db or config.db or default_db()
    try:
        with traced(TracingSettings.from_environ(os.environ, config.tracing)):
            trio.run(functools.partial(server.serve, config, db=db))
    except BaseExceptionGroup as group:
        # A problem found while starting (a port in use, a journal refused) is bad input
        # like any other: say it in one line.
        first = _first_leaf(group)
        if isinstance(first, OrchestratorError):
            raise first from None
        raise
    return EXIT_OK


def teammates(args: argparse.Namespace, out: TextIO) -> int:
    """``orchestrator teammates ...``."""
    return trio.run(_teammates, args, out)


def daemon_base(args: argparse.Namespace) -> str:
    """The running daemon's address: ``--url``, else ``--config``'s host and port, else the
    default ones."""
    if args.url is not None:
        return str(args.url)
    config = load_serve_config(args.config) if args.config is not None else ServeConfig()
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
    return f"http://[{host}]:{config.port}" if ":" in host else f"http://{host}:{config.port}"


async def _teammates(args: argparse.Namespace, out: TextIO) -> int:
    action = args.teammates_command
    base = daemon_base(args)
    message: dict[str, object] = {"type": action}
    if action != "list":
        message["name"] = args.name
    if action == "history":
        message["limit"] = args.limit
    answer = await request(teammates_url(base), message, token=read_token(args.token_file))
    print_answer(action, answer, out, as_json=args.json)
    return EXIT_OK


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
