"""The MCP team file (two servers, agents naming their tools and wildcards) and the helpers
that parse variants of it: what the MCP parse tests and the tool definitions' tests share."""

from __future__ import annotations

from orchestrator.spec import (
    TeamSpec,
    parse_team,
)
from tests.support import teams

FILE = "teams/mcp.toml"


VALID = teams.MCP_TOOLS


def parse(text: str) -> TeamSpec:
    return parse_team(text, file=FILE)


def replaced(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new)
