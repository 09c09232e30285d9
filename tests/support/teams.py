"""Named team documents for the tests: the TOML text of each, and what it is for."""

from __future__ import annotations

APPROVER = """
[team]
name = "approver"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "user"
[agents.lead.tool_results]
publish = "published"
[[agents.lead.turns]]
steps = [ { tool = "publish", input = { target = "release page" } },
          { say = "The release notes are ready." } ]
"""
"""A coordinator whose one tool call waits for the user's approval, with nothing else going:
once the request is out, the node writes nothing until it is decided."""


ECHO = """
[team]
name = "echo"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "first answer", chunks = 2 } ]
[[agents.lead.turns]]
steps = [ { say = "second answer" } ]
"""
"""A coordinator that answers every prompt at once (turns beyond the script: a default reply)."""


def fan_team(prompts: int) -> str:
    """A team whose coordinator hands three tasks to workers on each of ``prompts`` prompts,
    then sums them up (the memory test and benchmarks run it)."""
    turn = """
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "one" }, { agent = "worker", task = "two" },
                         { agent = "worker", task = "three" } ] },
          { say = "done: {outcomes}", chunks = 2 } ]
"""
    return (
        """
[team]
name = "fan"
coordinator = "lead"
parallel_budget = 3
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[agents.worker]
role = "works"
[[agents.worker.turns]]
steps = [ { say = "finished {task}", chunks = 3 } ]
"""
        + turn * prompts
    )


def fanout(
    *, budget: int = 3, worker_steps: str = '{ say = "did {task}" }', worker_extra: str = ""
) -> str:
    """A coordinator that delegates three tasks (alpha, beta, gamma) to workers at once under
    ``budget``, then sums up their outcomes; ``worker_steps`` is the workers' script,
    ``worker_extra`` more keys of their agent table."""
    return f"""
[team]
name = "fanout"
parallel_budget = {budget}
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]

[[agents.lead.turns]]
steps = [
  {{ delegate = [ {{ agent = "worker", task = "alpha" }}, {{ agent = "worker", task = "beta" }},
                 {{ agent = "worker", task = "gamma" }} ] }},
  {{ say = "All done:\\n{{outcomes}}" }},
]

[agents.worker]
role = "researcher"
{worker_extra}

[[agents.worker.turns]]
steps = [ {worker_steps} ]
"""


def approvals(*, approver: str = "user", lead_extra: str = "") -> str:
    """A coordinator that delegates one task to a worker whose ``publish`` call needs the
    approval of ``approver`` (``user`` or ``coordinator``); ``lead_extra``: more keys of the
    coordinator's agent table (``approves = [...]``)."""
    return f"""
[team]
name = "approvals"
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
{lead_extra}

[[agents.lead.turns]]
steps = [
  {{ delegate = [ {{ agent = "worker", task = "publish it" }} ] }},
  {{ say = "{{outcomes}}" }},
]

[agents.worker]
role = "publisher"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "{approver}"

[agents.worker.tool_results]
publish = "published"

[[agents.worker.turns]]
steps = [ {{ tool = "publish", input = {{ target = "site" }} }}, {{ say = "after: {{outcomes}}" }} ]
"""


ASK = """
[team]
name = "asking"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask"]
[[agents.lead.turns]]
steps = [ { ask = "Which version?" }, { say = "Releasing {outcomes}" } ]
"""
"""A coordinator that asks the user which version, then releases what it was told."""


def slow_delegation(*, worker_role: str = "builder") -> str:
    """A coordinator that delegates two workers taking two (real) seconds each; a restart
    takes the run up again (``on_restart = "resume"``)."""
    return f"""
[team]
name = "slow"
coordinator = "lead"
on_restart = "resume"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ {{ delegate = [ {{ agent = "worker", task = "one" }},
                          {{ agent = "worker", task = "two" }} ] }},
          {{ say = "both done: {{outcomes}}" }} ]
[agents.worker]
role = "{worker_role}"
[[agents.worker.turns]]
steps = [ {{ sleep = 2 }}, {{ say = "finished {{task}}" }} ]
"""


def slow_answer(*, seconds: float, answer: str) -> str:
    """A coordinator whose turn sleeps ``seconds`` (real ones, unless the clock is mocked)
    before it says ``answer``."""
    return f"""
[team]
name = "slow"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ {{ sleep = {seconds} }}, {{ say = "{answer}" }} ]
"""


SLOW_WORKERS = """
[team]
name = "slow"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "one" }, { agent = "worker", task = "two" } ] },
          { say = "{outcomes}" } ]
[[agents.lead.turns]]
steps = [ { say = "second turn" } ]
[agents.worker]
role = "r"
[[agents.worker.turns]]
steps = [ { sleep = 100 }, { say = "finished {task}" } ]
"""
"""A coordinator that delegates two workers who sleep 100 s (on a mock clock: until a test
cancels, steers or ends them), and has a second turn."""


NESTED = """
[team]
name = "nested"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["manager"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "manager", task = "organise" } ] }, { say = "{outcomes}" } ]
[agents.manager]
role = "manager"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.manager.turns]]
steps = [ { delegate = [ { agent = "worker", task = "a" }, { agent = "worker", task = "b" } ] },
          { say = "{outcomes}" } ]
[agents.worker]
role = "r"
[[agents.worker.turns]]
steps = [ { sleep = 100 }, { say = "finished {task}" } ]
"""
"""A coordinator that delegates to a manager who delegates two sleeping workers: a tree
three levels deep to cancel."""


# --- the pure layers' teams (ahp, base, core, spec) ---


DELEGATE_AND_PUBLISH = """\
[team]
name = "example"
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate", "ask"]
delegates_to = ["researcher"]

[[agents.lead.turns]]
steps = [
  { say = "On it." },
  { delegate = [{ agent = "researcher", task = "Look it up" }] },
  { say = "{outcomes}" },
]

[agents.researcher]
role = "researcher"
tools = ["web_search", "publish"]
needs_approval = ["publish"]

[[agents.researcher.turns]]
steps = [{ tool = "web_search", input = { query = "{task}" } }, { say = "Found it." }]
"""
"""A coordinator that delegates to a researcher who searches and publishes (publishing needs
approval): the valid team file the spec tests change one key of."""


MCP_TOOLS = """\
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
"""Two MCP servers (a stdio one, an HTTP one) and agents that name their tools, a wildcard and
an approval among them: the valid team file the MCP parse and tool definition tests change."""


RESTART_MIX = """
[team]
name = "recovery"
parallel_budget = 2
coordinator = "lead"
on_restart = "resume"

[agents.lead]
role = "coordinator"
tools = ["delegate", "ask"]
delegates_to = ["researcher", "planner"]

[[agents.lead.turns]]
steps = [
  { think = "Three pieces of work, two at a time." },
  { say = "Splitting the work." },
  { delegate = [ { agent = "researcher", task = "alpha" },
                 { agent = "researcher", task = "publish beta" },
                 { agent = "planner", task = "gamma" } ] },
  { say = "Workers said: {outcomes}" },
  { ask = "Ship it?", kind = "boolean" },
  { say = "Shipping: {outcomes}", chunks = 2 },
]

[agents.researcher]
role = "researcher"
tools = ["web_search", "publish"]
needs_approval = ["publish"]

[[agents.researcher.turns]]
steps = [
  { think = "Looking into {task}." },
  { sleep = 1 },
  { tool = "web_search", input = { query = "{task}" } },
  { tool = "publish", input = { target = "notes" }, when_task_contains = "publish" },
  { say = "Done: {task}", chunks = 2 },
]

[agents.planner]
role = "planner"
tools = ["delegate", "handoff"]
delegates_to = ["researcher", "editor"]

[[agents.planner.turns]]
steps = [
  { delegate = [ { agent = "researcher", task = "sub-{task}" } ] },
  { handoff = "editor", reason = "needs an edit", resume = "planner" },
  { say = "Planned {task}: {outcomes}" },
]

[agents.editor]
role = "editor"

[[agents.editor.turns]]
steps = [ { sleep = 0.5 }, { say = "Edited." } ]
"""
"""Three delegations two at a time, a handoff, an approval and a question, with
``on_restart = "resume"``: the run the recovery tests cut at every fact boundary."""


LONE_COORDINATOR = """
[team]
name = "chatty"
coordinator = "lead"
[agents.lead]
role = "coordinator"
"""
"""A coordinator with no script and no tools: a test's own backend answers for it."""


# --- the protocols' and the runtime's teams ---


# --- the CLI's and the server's teams ---


# --- the journal's and the sessions' teams ---
