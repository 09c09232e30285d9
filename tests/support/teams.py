"""Named team documents for the tests: the TOML text of each, and what it is for."""

from __future__ import annotations

import json
import sys

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


APPROVAL_TIMES_OUT = """
[team]
name = "slow"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "publish" } ] }, { say = "{outcomes}" } ]
[agents.worker]
role = "publisher"
tools = ["publish"]
needs_approval = ["publish"]
timeout = 30
[[agents.worker.turns]]
steps = [ { tool = "publish" }, { say = "done" } ]
"""
"""A coordinator that delegates to a worker whose ``publish`` call needs the user's approval
and whose turn times out after 30 s: unanswered, the approval is withdrawn."""


TOOL_CALLS = """
[team]
name = "calls"
coordinator = "lead"
[tools.probe]
command = ["python3", "-c", "pass"]
description = "Probe a query"
[tools.probe.parameters]
type = "object"
required = ["query"]
additionalProperties = false
[tools.probe.parameters.properties.query]
type = "string"
[agents.lead]
role = "coordinator"
tools = ["delegate", "search_web", "probe"]
delegates_to = ["worker"]
needs_approval = ["probe"]
[agents.lead.tool_results]
search_web = "three hits"
[[agents.lead.turns]]
steps = [
  { tool = "search_web", input = { query = "launch" } },
  { tool = "probe", input = { limt = 3 } },
  { delegate = [ { agent = "worker", task = "dig" } ] },
  { say = "{outcomes}" },
]
[agents.worker]
role = "researcher"
[[agents.worker.turns]]
steps = [ { say = "found it" } ]
"""
"""A coordinator that calls a plain tool, a command tool with input its schema refuses (the
program never runs, and the call needs no approval), then delegates to a worker."""


SLOW_SIBLING = """
[team]
name = "slow"
coordinator = "lead"
parallel_budget = 2
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["publisher", "researcher"]
[[agents.lead.turns]]
steps = [
  { say = "On it." },
  { delegate = [
      { agent = "publisher", task = "publish" }, { agent = "researcher", task = "dig" },
  ] },
  { say = "{outcomes}" },
]
[agents.publisher]
role = "publisher"
tools = ["publish"]
needs_approval = ["publish"]
timeout = 30
[[agents.publisher.turns]]
steps = [ { sleep = 2 }, { tool = "publish" }, { say = "published" } ]
[agents.researcher]
role = "researcher"
[[agents.researcher.turns]]
steps = [
  { think = "first thought" }, { sleep = 5 }, { think = ", second thought" },
  { say = "found" }, { sleep = 5 }, { say = " it" },
]
"""
"""A publisher that needs approval, and a researcher still at work while the approval waits
(its reasoning and its text are cut by the interrupt, mid-part)."""


NESTED_APPROVAL = """
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
delegates_to = ["helper"]
[[agents.manager.turns]]
steps = [ { delegate = [ { agent = "helper", task = "help" } ] }, { say = "managed" } ]
[agents.helper]
role = "helper"
tools = ["publish"]
needs_approval = ["publish"]
[[agents.helper.turns]]
steps = [ { tool = "publish" }, { say = "helped" } ]
"""
"""A coordinator that delegates to a manager who delegates to a helper whose ``publish``
needs approval: an approval three levels down."""


FAILING_WORKER = """
[team]
name = "failing"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "try" } ] }, { say = "{outcomes}" } ]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [ { say = "trying" }, { fail = "the disk is full" } ]
"""
"""A coordinator whose one worker says something, then fails ("the disk is full")."""


FAILING_LEAD = """
[team]
name = "failing"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "let me see" }, { fail = "out of ideas" } ]
"""
"""A coordinator that says something, then fails ("out of ideas")."""


TWO_TURNS = """
[team]
name = "chatty"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "first answer" }, { sleep = 1 } ]
[[agents.lead.turns]]
steps = [ { say = "second answer" } ]
"""
"""A coordinator with two turns: the first answers, then sleeps a second."""


FAILS_FIRST = """
[team]
name = "fails-first"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { fail = "model unavailable" } ]
[[agents.lead.turns]]
steps = [ { say = "back again" } ]
"""
"""A coordinator whose first turn fails ("model unavailable") and whose second answers."""


HANDOFF = """
[team]
name = "desk"
topology = "specialist_handoff"
coordinator = "triage"
[agents.triage]
role = "coordinator"
tools = ["handoff"]
delegates_to = ["billing"]
[[agents.triage.turns]]
steps = [ { handoff = "billing", reason = "a billing question", resume = "triage" },
          { say = "Billing said: {outcomes}" } ]
[agents.billing]
role = "specialist"
[[agents.billing.turns]]
steps = [ { say = "refund issued" } ]
"""
"""A triage coordinator that hands the task off to a billing specialist, who answers and
hands it back."""


def structured(
    *, answer: str, retry: str | None = None, lead_says: str = "Scored: {outcomes}"
) -> str:
    """A coordinator that delegates one task to an analyst whose answer must fit a schema:
    ``{ score: integer >= 0, notes?: string }``, nothing else. ``answer`` is the analyst's
    answer (a TOML string), ``retry`` the answer it gives when asked again (None: it answers
    the same again). The coordinator
    then says ``lead_says``; a coordinator whose ``lead_says`` starts with ``{`` has an
    output_schema too (``{ approved: boolean }``)."""
    score_schema = (
        '{ type = "object", properties = { score = { type = "integer", minimum = 0 }, '
        'notes = { type = "string" } }, required = ["score"], additionalProperties = false }'
    )
    retry_line = f"retry = [ {{ say = {retry} }} ]" if retry is not None else ""
    lead_schema = (
        'output_schema = { type = "object", properties = { approved = { type = "boolean" } }, '
        'required = ["approved"] }'
        if lead_says.startswith("{")
        else ""
    )
    return f"""
[team]
name = "structured"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["analyst"]
{lead_schema}
[[agents.lead.turns]]
steps = [
  {{ delegate = [ {{ agent = "analyst", task = "Score the draft" }} ] }},
  {{ say = '{lead_says}' }},
]
[agents.analyst]
role = "analyst"
output_schema = {score_schema}
[[agents.analyst.turns]]
steps = [ {{ say = {answer} }} ]
{retry_line}
"""


# --- the CLI's and the server's teams ---

FAILING = """
[team]
name = "failing"
coordinator = "lead"

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [{ delegate = [{ agent = "worker", task = "do it" }] }, { fail = "gave up" }]

[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [{ fail = "the disk is full" }]
"""
"""A coordinator that delegates a worker that fails (the disk is full), then fails itself
(gave up): a run that ends failed."""


ASK_THEN_SLOW_WORKER = """
[team]
name = "asks"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask", "delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { ask = "Which database?" }, { say = "Using {outcomes}." } ]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "slow work" } ] }, { say = "{outcomes}" } ]
[agents.worker]
role = "r"
[[agents.worker.turns]]
steps = [ { sleep = 60 }, { say = "never" } ]
"""
"""A coordinator that asks the user which database, then, on the next prompt, delegates a
worker that sleeps 60 s: a question to answer and a turn to abort."""


HIDDEN_HELPER = """
[team]
name = "hidden"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["helper"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "helper", task = "look it up" } ] }, { say = "done" } ]
[agents.helper]
role = "helper"
interactivity = "hidden"
[[agents.helper.turns]]
steps = [ { say = "found it" } ]
"""
"""A coordinator that delegates a helper whose chat is hidden (``interactivity = "hidden"``)."""


STREAM = """
[team]
name = "stream"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "%s", chunks = 1000 } ]
""" % ("0123456789" * 100_000)
"""A coordinator that streams about 1 MB of text in 1000 chunks: far more than the socket
buffers between the daemon and a client that stopped reading hold."""


# --- the journal's and the sessions' teams ---


TICKING_TEAMMATE = """
[team]
name = "ticker"
coordinator = "lead"
[[background]]
name = "tick"
every = "1s"
prompt = "tick"
agent = "lead"
overlap = "skip"
catch_up = "latest"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "tock" } ]
"""
"""A background teammate that wakes every second and answers at once (two nodes share
its schedule)."""


DELEGATING_CONVERSATION = """
[team]
name = "conversation"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "part a" } ] }, { say = "Done: {outcomes}" } ]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "part b" } ] }, { say = "Done: {outcomes}" } ]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "part c" } ] }, { say = "Done: {outcomes}" } ]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [ { say = "{task} is done" } ]
"""
"""A conversation whose every turn delegates to a worker: a turn of several facts, started
at once when a prompt is queued to the idle coordinator."""


NIGHTLY_PUBLISHER = """
[team]
name = "publisher"
coordinator = "lead"
[[background]]
name = "nightly"
every = "1s"
prompt = "publish the notes"
agent = "lead"
overlap = "skip"
catch_up = "latest"
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
"""A background teammate whose run waits for the user's approval (``publish``)."""


GATED_DEPLOYER = """
[team]
name = "gated"
topology = "background_teammate"
coordinator = "lead"

[[background]]
name = "deployer"
every = "1d"
prompt = "Deploy the nightly build"

[agents.lead]
role = "coordinator"
backend = "scripted"
instructions = "You deploy."
tools = ["deploy"]
needs_approval = ["deploy"]

[agents.lead.tool_results]
deploy = "deployed"

[[agents.lead.turns]]
steps = [{ tool = "deploy", input = { build = "nightly" } }, { say = "Deployed." }]
"""
"""A background teammate (waking daily) whose one tool call, ``deploy``, waits for an
approval: its run is blocked until someone decides."""


PARKS = """
[team]
name = "parks"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "user"
[[agents.lead.turns]]
steps = [
  { say = "asking to publish" },
  { tool = "publish", input = { target = "page" } },
  { say = "published" },
]
"""
"""A coordinator whose one turn says it asks to publish, asks, and waits for the decision:
a run parked on its approval."""


# --- the Python API's teams (orchestrator/_embed.py, _streams.py) ---

STREAMED = """
[team]
name = "streamed"
coordinator = "lead"
parallel_budget = 2

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["writer", "publisher"]

[[agents.lead.turns]]
steps = [
  { think = "Two tasks: a draft and a release.", chunks = 2 },
  { delegate = [ { agent = "writer", task = "draft the notes" },
                 { agent = "publisher", task = "publish them" } ] },
  { say = "Both done:\\n{outcomes}", chunks = 3 },
]

[agents.writer]
role = "writer"

[[agents.writer.turns]]
steps = [ { say = "Notes drafted for {task}.", chunks = 4 } ]

[agents.publisher]
role = "publisher"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "user"

[agents.publisher.tool_results]
publish = "published"

[[agents.publisher.turns]]
steps = [ { say = "Publishing now.", chunks = 2 },
          { tool = "publish", input = { target = "site" } },
          { say = "after: {outcomes}" } ]
"""
"""A coordinator that reasons, delegates to two workers at once (a writer, and a publisher whose
``publish`` call waits for the user's approval), then sums up: text, reasoning, tool calls and
an approval from several chats at once, for the stream modes."""


def remote(urls: dict[str, str], *, tasks: dict[str, str] | None = None, local: bool = True) -> str:
    """A coordinator that delegates, in parallel, one task to each remote teammate of
    ``urls`` (name -> its A2A agent's URL) and one to a local ``helper``, then sums them up.

    ``tasks``: the task of each remote teammate (default: ``"hello <name>"``).
    """
    tasks = tasks or {}
    calls = [
        f'{{ agent = "{name}", task = "{tasks.get(name, "hello " + name)}" }}' for name in urls
    ]
    if local:
        calls.append('{ agent = "helper", task = "tidy up" }')
    targets = ", ".join(f'"{name}"' for name in [*urls, *(["helper"] if local else [])])
    agents = "".join(
        f'\n[agents.{name}]\nrole = "a remote {name} agent"\na2a = "{url}"\n'
        f'headers = {{ X-Team = "remote", Authorization = "env:REMOTE_TOKEN" }}\n'
        for name, url in urls.items()
    )
    helper = """
[agents.helper]
role = "a local helper"
[[agents.helper.turns]]
steps = [ { say = "tidied {task}" } ]
"""
    return f"""
[team]
name = "remote"
coordinator = "lead"
parallel_budget = 4
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = [{targets}]
[[agents.lead.turns]]
steps = [ {{ delegate = [ {", ".join(calls)} ] }}, {{ say = "All done:\\n{{outcomes}}" }} ]
{helper if local else ""}{agents}"""


COUNTED = """
[team]
name = "counted"
coordinator = "lead"
description = "A lead and a writer whose model calls report the tokens they used."
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["writer"]
[[agents.lead.turns]]
steps = [ { usage = [100, 10] },
          { delegate = [ { agent = "writer", task = "write the release note" } ] },
          { usage = [200, 40] }, { say = "The answer: {outcomes}", chunks = 3 } ]
[[agents.lead.turns]]
steps = [ { usage = [50, 5] }, { say = "Follow-up answered." } ]
[agents.writer]
role = "writer"
[[agents.writer.turns]]
steps = [ { usage = [30, 7] }, { say = "note written" } ]
"""
"""A coordinator and one worker whose rounds report tokens: lead 100/10 then 200/40 for the
first prompt and 50/5 for the next, the writer 30/7."""


def remote_approvals(urls: dict[str, str]) -> str:
    """A coordinator that delegates, in parallel, to the remote ``deployer`` and ``mailer``
    (each asks for approval: ``input_required``) and to a local ``publisher`` whose
    ``publish`` call needs the user's approval: three approvals pending at once."""
    agents = "".join(
        f'\n[agents.{name}]\nrole = "a remote {name}"\na2a = "{url}"\n'
        for name, url in urls.items()
    )
    return f"""
[team]
name = "remote-approvals"
coordinator = "lead"
parallel_budget = 3
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["deployer", "mailer", "publisher"]
[[agents.lead.turns]]
steps = [ {{ delegate = [ {{ agent = "deployer", task = "deploy v2" }},
                         {{ agent = "mailer", task = "mail the team" }},
                         {{ agent = "publisher", task = "publish the notes" }} ] }},
          {{ say = "All done:\\n{{outcomes}}" }} ]
[agents.publisher]
role = "a local publisher"
tools = ["publish"]
needs_approval = ["publish"]
approved_by = "user"
[agents.publisher.tool_results]
publish = "published"
[[agents.publisher.turns]]
steps = [ {{ tool = "publish", input = {{ target = "site" }} }}, {{ say = "after: {{outcomes}}" }} ]
{agents}"""


def artifact_tools(*, mcp_server: str = "tests/support/mcp_servers.py") -> str:
    """A coordinator that delegates to an ``analyst`` whose tools' results are artifacts
    (``artifacts``): a command tool printing JSON, a Python tool returning text, an MCP
    tool answering structured content only (the test server, ``mcp_server``, run by this
    Python), and a plain scripted one; and a plain tool that is not an artifact."""
    return f"""
[team]
name = "artifacts"
coordinator = "lead"
[mcp.calc]
command = [{json.dumps(sys.executable)}, {json.dumps(mcp_server)}]
[tools.count_rows]
command = ["python3", "-c", "print('{{\\"rows\\": 3, \\"table\\": \\"users\\"}}')"]
[tools.shout]
python = "tests.support.python_tools:shout"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["analyst"]
[[agents.lead.turns]]
steps = [ {{ delegate = [ {{ agent = "analyst", task = "count the users" }} ] }},
          {{ say = "Counted: {{outcomes}}" }} ]
[agents.analyst]
role = "analyst"
tools = ["count_rows", "shout", "mcp.calc/only_structured", "note", "lookup"]
artifacts = ["count_rows", "shout", "mcp.calc/only_structured", "note"]
[agents.analyst.tool_results]
note = "a plain note"
lookup = "looked up"
[[agents.analyst.turns]]
steps = [ {{ tool = "count_rows", input = {{}} }},
          {{ tool = "shout", input = {{ text = "done", times = 2 }} }},
          {{ tool = "mcp.calc/only_structured", input = {{ n = 4 }} }},
          {{ tool = "note", input = {{}} }},
          {{ tool = "lookup", input = {{}} }},
          {{ say = "counted" }} ]
"""


BOARD_RACE = """
[team]
name = "race"
topology = "human_agent_board"
coordinator = "lead"
parallel_budget = 2
[board]
[[board.items]]
id = "x"
title = "The one item everyone wants"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["w1", "w2"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "w1", task = "claim x" }, { agent = "w2", task = "claim x" } ] },
          { say = "{outcomes}" } ]
[agents.w1]
role = "claims"
tools = ["board.claim"]
[[agents.w1.turns]]
steps = [ { tool = "board.claim", input = { item = "x" } }, { say = "w1 tried" } ]
[agents.w2]
role = "claims"
tools = ["board.claim"]
[[agents.w2.turns]]
steps = [ { tool = "board.claim", input = { item = "x" } }, { say = "w2 tried" } ]
"""
"""Two agents claim the same board item in one round, while a person may claim it too."""


BOARD_BLOCK = """
[team]
name = "blocker"
topology = "human_agent_board"
coordinator = "lead"
[board]
[[board.items]]
id = "tone"
title = "Write the announcement"
description = "Ask alice for the tone."
assignee = "writer"
[[board.items]]
id = "ship"
title = "Ship it"
depends_on = ["tone"]
assignee = "@alice"
[agents.lead]
role = "coordinator"
tools = ["board.list"]
[[agents.lead.turns]]
steps = [ { say = "on it" } ]
[agents.writer]
role = "writes"
tools = ["board.block", "board.done"]
needs_approval = ["board.done"]
[[agents.writer.turns]]
[[agents.writer.turns.steps]]
tool = "board.block"
input = { item = "tone", reason = "formal or friendly?", waiting_for = "@alice" }
when_task_contains = "announcement\\n\\nAsk alice"
[[agents.writer.turns.steps]]
say = "asked alice"
when_task_contains = "announcement\\n\\nAsk alice"
[[agents.writer.turns.steps]]
tool = "board.done"
input = { item = "tone" }
when_task_contains = "alice: friendly"
[[agents.writer.turns.steps]]
say = "written, friendly"
when_task_contains = "alice: friendly"
"""
"""A writer started on its item blocks it, waiting for alice; her comment unblocks it, the
writer is started anew, and its ``board.done`` waits for the user's approval."""


def review_team(
    verdicts: list[str], *, max_rounds: int = 2, mode: str | None = None, pause: float = 0
) -> str:
    """A writer reviewed by a checker, whose turn ``i`` answers ``verdicts[i]``: a verdict
    (``passed``, ``changes_requested``, ``failed``) or ``crash`` (its turn fails). The writer
    drafts, then answers each round of fixes with its draft fixed. ``pause``: seconds each
    turn of both sleeps first (a kill lands inside it)."""
    steps = {
        "passed": '{ verdict = "passed", summary = "reads well", evidence = '
        '[{ kind = "quote", text = "the draft", ref = "task-1" }] }',
        "changes_requested": '{ verdict = "changes_requested", summary = "one gap", fixes = '
        '["name the breaking change"], evidence = [{ kind = "quote", text = "it is faster" }] }',
        "failed": '{ verdict = "failed", summary = "off topic" }',
        "crash": '{ fail = "the reviewer fell over" }',
    }
    wait = f"{{ sleep = {pause} }}, " if pause else ""
    turns = "".join(f"[[agents.checker.turns]]\nsteps = [ {wait}{steps[v]} ]\n" for v in verdicts)
    review = f'review = "{mode}"\n' if mode is not None else ""
    tools = '["delegate", "review"]' if mode == "on_request" else '["delegate"]'
    lead_steps = (
        '{ delegate = [{ agent = "writer", task = "Draft the release notes" }] }, '
        '{ review = "task-2" }, { say = "Reviewed: {outcomes}" }'
        if mode == "on_request"
        else '{ delegate = [{ agent = "writer", task = "Draft the release notes" }] }, '
        '{ say = "Done: {outcomes}" }'
    )
    return f"""
[team]
name = "review"
topology = "review_team"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = {tools}
delegates_to = ["writer"]
{review}[[agents.lead.turns]]
steps = [ {lead_steps} ]
[agents.writer]
role = "writer"
[[agents.writer.turns]]
steps = [ {wait}{{ say = "draft: it is faster" }} ]
[[agents.writer.turns]]
steps = [ {wait}{{ say = "draft, fixed once" }} ]
[[agents.writer.turns]]
steps = [ {wait}{{ say = "draft, fixed twice" }} ]
[agents.checker]
role = "reviewer"
reviews = ["writer"]
max_review_rounds = {max_rounds}
{turns}"""


def side_team(*turns: str) -> str:
    """A conversation's lead alone (team ``side``) whose scripted turns are ``turns``, each
    its steps as TOML (``'{ say = "first answer" }'``): a side chat or forked chat of the
    lead takes the lead's next scripted turn as its own."""
    scripted = "".join(f"[[agents.lead.turns]]\nsteps = [ {steps} ]\n" for steps in turns)
    return (
        '\n[team]\nname = "side"\ncoordinator = "lead"\n[agents.lead]\nrole = "coordinator"\n'
        + scripted
    )
