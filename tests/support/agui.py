"""Helpers of the AG-UI tests: run a real team through the projector as the daemon's endpoint
will, validate every event against the official models and the spec's draft schema, and check
that each run's stream is well formed."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import jsonpatch
import jsonschema
import pydantic
import pytest
import trio
import trio.testing
from ag_ui import core
from hypothesis import strategies as st

from orchestrator.base import RunError
from orchestrator.core import Backend, Fact
from orchestrator.protocols import AguiProjector, AguiRunStatus, Event
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, TeamSpec, parse_team
from tests.support.paths import PROJECT_ROOT, PROTOCOLS

THREAD = "thread-1"

#: An approval decision for an interrupt id: (approved, reason).
Decide = Callable[[str], bool]

_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(core.Event)


@functools.cache
def _draft_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((PROTOCOLS / "ag-ui" / "draft" / "schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _extras(model: object, path: str = "$") -> list[str]:
    """Fields a model kept that its class does not declare (the models allow extras)."""
    found: list[str] = []
    if isinstance(model, pydantic.BaseModel):
        found += [f"{path}.{key}" for key in model.model_extra or {}]
        for name in type(model).model_fields:
            found += _extras(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for index, item in enumerate(model):
            found += _extras(item, f"{path}[{index}]")
    return found


def validate_event(event: Event) -> None:
    """``event`` is an AG-UI event for the official ``ag-ui-protocol`` models (no field they do
    not declare, and it dumps back to exactly itself) and for the spec's draft schema."""
    assert json.loads(json.dumps(event)) == event, "not plain JSON"
    model = _EVENT.validate_python(event)
    assert _extras(model) == [], f"undeclared fields in {event}"
    assert model.model_dump(mode="json", by_alias=True) == event
    errors = [e.message for e in _draft_validator().iter_errors(event)]
    assert errors == [], f"{event['type']}: {errors}"


def check_run(events: list[Event]) -> None:
    """One AG-UI run is well formed: RUN_STARTED first, exactly one terminal event, last;
    every message, reasoning span and tool call streamed between its start and end; every
    subagent's events inside its STARTED / FINISHED (or ERROR); nothing left open at a
    RUN_FINISHED; state deltas apply to the state they follow."""

    assert events, "an empty run"
    assert events[0]["type"] == "RUN_STARTED"
    terminal = [i for i, e in enumerate(events) if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    assert terminal == [len(events) - 1], f"terminal events at {terminal} of {len(events)}"
    text: set[str] = set()
    reasoning: set[str] = set()
    spans: set[str] = set()
    calls: set[str] = set()
    subagents: set[str] = set()
    done_subagents: set[str] = set()
    state: Any = None
    for event in events[1:]:
        kind = event["type"]
        owner = event.get("subagentRunId")
        if owner is not None and not kind.startswith("SUBAGENT_"):
            assert owner in subagents, f"{kind} of subagent {owner} outside its segment"
        if kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in text
            text.add(event["messageId"])
        elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            assert event["messageId"] in text, f"{kind} outside its message"
            if kind == "TEXT_MESSAGE_END":
                text.remove(event["messageId"])
        elif kind == "REASONING_START":
            spans.add(event["messageId"])
        elif kind == "REASONING_MESSAGE_START":
            assert event["messageId"] in spans
            reasoning.add(event["messageId"])
        elif kind in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            assert event["messageId"] in reasoning, f"{kind} outside its reasoning message"
            if kind == "REASONING_MESSAGE_END":
                reasoning.remove(event["messageId"])
        elif kind == "REASONING_END":
            assert event["messageId"] not in reasoning
            spans.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            assert event["toolCallId"] not in calls
            calls.add(event["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert event["toolCallId"] in calls, f"{kind} outside its tool call"
            if kind == "TOOL_CALL_END":
                calls.remove(event["toolCallId"])
        elif kind == "TOOL_CALL_RESULT":
            assert event["toolCallId"] not in calls, "a result before the call's end"
        elif kind == "SUBAGENT_STARTED":
            run_id = event["subagentRunId"]
            assert run_id not in subagents | done_subagents
            parent = event.get("parentSubagentRunId")
            assert parent is None or parent in subagents
            subagents.add(run_id)
        elif kind in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            assert event["subagentRunId"] in subagents, f"{kind} of a subagent not started"
            subagents.remove(event["subagentRunId"])
            done_subagents.add(event["subagentRunId"])
        elif kind == "STATE_SNAPSHOT":
            state = event["snapshot"]
        elif kind == "STATE_DELTA":
            assert state is not None, "a delta before any snapshot"
            state = jsonpatch.apply_patch(state, event["delta"])
    if events[-1]["type"] == "RUN_FINISHED":
        assert not (text | reasoning | spans | calls | subagents), "left open at RUN_FINISHED"


@attrs.define
class Session:
    """What a team run gave: its AG-UI runs (events per run), facts and the runtime."""

    runs: list[list[Event]]
    facts: list[Fact]
    runtime: TeamRuntime
    projector: AguiProjector
    refused: list[str]  # decisions the runtime refused (the approval was no longer pending)

    @property
    def events(self) -> list[Event]:
        return [event for run in self.runs for event in run]


def team(text: str) -> TeamSpec:
    return parse_team(text, file="t.toml")


async def run_team(
    spec: TeamSpec,
    *,
    decide: Decide | None = None,
    delay: float = 0.0,
    prompt: str = "Ship it",
    backends: Callable[[AgentSpec], Backend] = ScriptedBackend,
) -> Session:
    """Run ``spec`` to its end with a projector fed live from the bus, the way the endpoint
    will: on an interrupt, ``delay`` seconds later (the team goes on meanwhile), the next
    run resumes it answering every interrupt as ``decide`` says (default: approve)."""
    decide = decide or (lambda _approval: True)
    log = MemoryFactLog()
    # Each streamed chunk its own fact (no delta window): the projection of chunked text is
    # what is checked, and a scripted team's chunks would otherwise join in one fact.
    runtime = TeamRuntime(
        spec, backends=backends, factlog=log, ids=Ids(deterministic=True), delta_window=0
    )
    projector = AguiProjector(runtime.session, thread_id=THREAD, run_id="run-1")
    runs = [projector.start()]
    refused: list[str] = []
    subscription = runtime.bus.subscribe("agui")

    answering = False  # one answering task at a time, as one client answers at a time
    fed = [trio.Event()]  # set, and replaced, each time the projector was fed a fact

    async def answer() -> None:
        nonlocal answering
        await trio.sleep(delay)
        while projector.status is AguiRunStatus.INTERRUPTED:
            decisions = {approval: decide(approval) for approval in projector.interrupts}
            runs.append(projector.resume(f"run-{len(runs) + 1}", answering=decisions))
            # As the endpoint will: decide, then wait until the projector has seen it, before
            # another interrupt is answered.
            for approval, approved in decisions.items():
                await resolve(approval, approved)
            while any(
                projector.state.approvals[approval].decision is None for approval in decisions
            ):
                await fed[0].wait()
        answering = False

    async def resolve(approval: str, approved: bool) -> None:
        try:
            await runtime.resolve_approval(approval, approved=approved)
        except RunError as exc:  # withdrawn while the client was away: the run says so
            refused.append(str(exc))

    with trio.fail_after(3600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, prompt)
            async for fact in subscription:
                was = projector.status
                runs[-1] += projector.feed(fact)
                fed[0].set()
                fed[0] = trio.Event()
                interrupted = projector.status is AguiRunStatus.INTERRUPTED
                if interrupted and was is AguiRunStatus.RUNNING and not answering:
                    answering = True
                    nursery.start_soon(answer)
                if fact.type == "team/runFinished":
                    break
    return Session(
        runs=runs, facts=list(log.facts), runtime=runtime, projector=projector, refused=refused
    )


def of_type(events: Iterable[Event], *kinds: str) -> list[Event]:
    return [e for e in events if e["type"] in kinds]


def sse(runs: Iterable[Iterable[Mapping[str, Any]]]) -> list[bytes]:
    """Each run's events as one ``text/event-stream`` body."""
    return [b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in run) for run in runs]


@st.composite
def team_runs(draw: st.DrawFn) -> tuple[str, list[bool], float]:
    """A team whose coordinator delegates to 1 to 3 workers at once, each of which may think,
    sleep, ask for approval, fail or delegate to a helper that asks; a parallel budget that
    may queue them; approval decisions; how long the client takes to answer an interrupt."""
    count = draw(st.integers(1, 3))
    budget = draw(st.integers(1, 3))
    names = ", ".join(f'"w{i}"' for i in range(count))
    lines = [
        "[team]",
        'name = "any"',
        'coordinator = "lead"',
        f"parallel_budget = {budget}",
        "[agents.lead]",
        'role = "coordinator"',
        'tools = ["delegate"]',
        f"delegates_to = [{names}]",
        "[[agents.lead.turns]]",
        "steps = [",
        f'  {{ think = "plan", chunks = {draw(st.integers(1, 2))} }},',
        '  { say = "delegating" },',
        "  { delegate = ["
        + ", ".join(f'{{ agent = "w{i}", task = "job {i}" }}' for i in range(count))
        + "] },",
        '  { say = "{outcomes}", chunks = 2 },',
        "]",
        "[agents.helper]",
        'role = "helper"',
        'tools = ["publish"]',
        'needs_approval = ["publish"]',
        "timeout = 8",
        "[[agents.helper.turns]]",
        'steps = [ { tool = "publish" }, { say = "helped" } ]',
    ]
    for i in range(count):
        kind = draw(st.sampled_from(["plain", "approval", "fails", "nested"]))
        steps = []
        if draw(st.booleans()):
            steps.append(f'{{ think = "thinking {i}", chunks = 2 }}')
        steps.append(f"{{ sleep = {draw(st.sampled_from([0, 1, 3]))} }}")
        tools = []
        if kind == "approval":
            tools = ['"publish"']
            steps.append('{ tool = "publish" }')
        elif kind == "fails":
            steps.append('{ fail = "broken" }')
        elif kind == "nested":
            tools = ['"delegate"']
            steps.append('{ delegate = [ { agent = "helper", task = "help" } ] }')
        steps.append(f'{{ say = "done {i}", chunks = {draw(st.integers(1, 3))} }}')
        lines += [
            f"[agents.w{i}]",
            'role = "worker"',
            "tools = [" + ", ".join(tools) + "]",
            'needs_approval = ["publish"]' if kind == "approval" else "",
            'delegates_to = ["helper"]' if kind == "nested" else "",
            "timeout = 8",
            f"[[agents.w{i}.turns]]",
            "steps = [ " + ", ".join(steps) + " ]",
        ]
    decisions = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    delay = draw(st.sampled_from([0.0, 2.0, 10.0]))
    return "\n".join(lines), decisions, delay


CLIENT = PROJECT_ROOT / "tests" / "agui_client"


@pytest.fixture(scope="session")
def run_mjs() -> Path:
    """The harness, its packages installed with ``npm ci`` from the committed lock (again
    only when the lock changed)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not on PATH: the official AG-UI client cannot run")
    digest = hashlib.sha256((CLIENT / "package-lock.json").read_bytes()).hexdigest()
    stamp = CLIENT / "node_modules" / ".installed-from-lock"
    if not stamp.exists() or stamp.read_text() != digest:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=CLIENT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            if any(code in done.stderr for code in NETWORK_ERRORS):
                pytest.skip(f"npm ci could not reach the registry:\n{done.stderr[-2000:]}")
            pytest.fail(f"npm ci failed in {CLIENT}:\n{done.stderr[-4000:]}")
        stamp.write_text(digest)
    return CLIENT / "run.mjs"


async def client(run_mjs: Path, url: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    node = shutil.which("node")
    assert node is not None
    with trio.fail_after(120):
        return await trio.run_process(
            [node, str(run_mjs), url, *args], capture_stdout=True, capture_stderr=True, check=False
        )


def printed(done: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


#: What npm says when the registry cannot be reached (then the harness cannot be installed).
NETWORK_ERRORS = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ENETUNREACH",
)
