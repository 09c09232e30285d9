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


# --- the protocols' and the runtime's teams ---


# --- the CLI's and the server's teams ---


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
