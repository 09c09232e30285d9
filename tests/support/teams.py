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


# --- the journal's and the sessions' teams ---
