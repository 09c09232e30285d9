"""The MCP team file (two servers, agents naming their tools and wildcards) and the helpers
that parse variants of it: what the MCP parse tests and the tool definitions' tests share."""

from __future__ import annotations

from orchestrator.spec import (
    TeamSpec,
    parse_team,
)

FILE = "teams/mcp.toml"


VALID = """\
[team]
name = "mcp"
coordinator = "lead"

[mcp.time]
command = ["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]
env = { TZ = "UTC" }
env_passthrough = ["GITHUB_TOKEN"]
timeout = "20s"

[mcp.tracker]
url = "http://127.0.0.1:9100/mcp"
headers = { Authorization = "env:TRACKER_TOKEN", X-Team = "alpha" }
start_timeout = "5s"

[agents.lead]
role = "coordinator"
tools = ["delegate", "mcp.time/get_current_time", "mcp.tracker/*"]
delegates_to = ["worker"]
needs_approval = ["mcp.tracker/create_issue"]

[[agents.lead.turns]]
steps = [
  { tool = "mcp.time/get_current_time", input = { timezone = "UTC" } },
  { tool = "mcp.tracker/create_issue", input = { title = "x" } },
  { say = "done" },
]

[agents.worker]
role = "worker"
tools = ["mcp.tracker/list_issues"]

[[agents.worker.turns]]
steps = [{ say = "ok" }]
"""


def parse(text: str) -> TeamSpec:
    return parse_team(text, file=FILE)


def replaced(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new)
