"""Helpers for the Agent UI projection's tests: the envelopes of a hand-built fact log, by
fact or by type, and the agent ids the projection gives; a real team's run, projected."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import trio

from orchestrator.protocols import AgentUiProjector, Envelope, EventType, project_facts
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import parse_team
from tests.support.scenarios import SESSION, TEAM, Log


def feed_all(log: Log) -> tuple[list[Envelope], dict[int, list[Envelope]]]:
    """All envelopes, and the envelopes of each fact by the fact's sequence."""
    projector = AgentUiProjector(SESSION)
    by_fact = {fact.sequence: projector.feed(fact) for fact in log.facts}
    return [e for fact in log.facts for e in by_fact[fact.sequence]], by_fact


def types(envelopes: Sequence[Envelope]) -> list[str]:
    return [e.type for e in envelopes]


def described(envelopes: Sequence[Envelope]) -> list[str]:
    """``type`` plus the subject's status, when the payload has one: ``agent.changed:running``."""
    out = []
    for e in envelopes:
        status = (e.payload or {}).get("teamPhase") or (e.payload or {}).get("status")
        out.append(f"{e.type}:{status}" if status else e.type)
    return out


def only(envelopes: Sequence[Envelope], event: str) -> list[Envelope]:
    return [e for e in envelopes if e.type == event]


def agent_id(agent: str, n: int = 1) -> str:
    return f"{agent}@{TEAM}#{n}"


async def run(
    team_text: str, during: Callable[[TeamRuntime], Awaitable[None]] | None = None
) -> list[Envelope]:
    """Run a team to its end (``during`` acts on it meanwhile); its envelopes, projected."""
    log = MemoryFactLog()
    runtime = TeamRuntime(
        parse_team(team_text, file="t.toml"),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True),
    )
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "Ship it")
            if during is not None:
                await during(runtime)
    return project_facts(runtime.session, log.facts)


def of_type(envelopes: list[Envelope], event: EventType) -> list[Envelope]:
    return [e for e in envelopes if e.type == event]


A = TypeVar("A")


async def first(runtime: TeamRuntime, wanted: type[A]) -> tuple[str, A]:
    """The channel and action of the first fact recorded from now on with a ``wanted`` action."""
    subscription = runtime.bus.subscribe("test")
    async for fact in subscription:
        if isinstance(fact.action, wanted):
            runtime.bus.unsubscribe(subscription)
            return fact.channel, fact.action
    raise AssertionError(f"the run ended without a {wanted.__name__}")


#: The events the spec lists for a remote protocol task (runtimeEntity=external_task), with
#: the roster's own agent.spawned and agent.completed.
REMOTE_EVENTS = frozenset(
    {
        "agent.spawned",
        "agent.changed",
        "agent.completed",
        "task.changed",
        "artifact.changed",
        "action.required",
    }
)
REMOTE_STATUSES = frozenset(
    {
        "submitted",
        "working",
        "input_required",
        "auth_required",
        "completed",
        "failed",
        "canceled",
        "rejected",
    }
)
REMOTE_TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})


def check_remote_teammate(envelopes: Sequence[Envelope]) -> list[Envelope]:
    """The Agent UI checker of the ``remote_teammate`` topology; the external-task envelopes.

    The spec's rules: a remote protocol task is projected as agent.changed, task.changed,
    artifact.changed and action.required with ``runtimeEntity=external_task``, carrying
    agentId, remoteTaskId, the card ref and runtimeStatus (one of the remote task states);
    its remote truth is kept (a terminal state is never left); and one idle tick is not a
    terminal completion (the member completes only after its remote task reached a terminal
    state, or its delegation was stopped).
    """
    external = [e for e in envelopes if (e.payload or {}).get("runtimeEntity") == "external_task"]
    assert external, "no envelope of runtimeEntity external_task"
    status: dict[str, str] = {}  # remoteTaskId -> its last status
    ended: set[str] = set()  # agent ids whose remote task reached a terminal state
    for e in external:
        payload = e.payload or {}
        assert e.type in REMOTE_EVENTS, e.type
        assert e.agent_id, e
        assert e.thread_id, e
        assert payload.get("agentName") or payload.get("requestedBy"), e
        assert payload.get("cardRef", "").endswith("/.well-known/agent-card.json") or (
            e.type == "artifact.changed"
        ), e
        if e.type in {"task.changed", "artifact.changed", "action.required"}:
            assert e.topology == "remote_teammate", e
        if e.type == "task.changed":
            remote = payload["remoteTaskId"]
            assert remote, e
            runtime_status = payload["runtimeStatus"]
            assert runtime_status in REMOTE_STATUSES, e
            before = status.get(remote)
            assert before not in REMOTE_TERMINAL, f"{remote} left {before} for {runtime_status}"
            status[remote] = runtime_status
            if runtime_status in REMOTE_TERMINAL:
                ended.add(e.agent_id)
            needs = {"input_required": "input", "auth_required": "auth"}.get(runtime_status)
            assert payload.get("needs") == needs, e
        if e.type == "artifact.changed":
            assert e.topology == "remote_teammate", e
            assert e.artifact_id, e
            assert payload.get("remoteTaskId") in status, e
            assert payload.get("remoteTaskId") not in {
                r for r, s in status.items() if s in REMOTE_TERMINAL
            }, "an artifact after its task ended"
        if e.type == "agent.completed" and payload.get("status") == "completed":
            assert e.agent_id in ended, f"{e.agent_id} completed before its remote task did"
    return external


#: The work-item statuses and board statuses of the human_agent_board topology.
WORK_ITEM_STATUSES = frozenset({"open", "claimed", "running", "blocked", "reviewing", "done"})
BOARD_STATUSES = frozenset({"assigned", "claimed", "blocked", "commented", "done"})


def check_human_agent_board(envelopes: Sequence[Envelope]) -> list[Envelope]:
    """The Agent UI checker of the ``human_agent_board`` topology; the work items' envelopes.

    The spec's rules: the board's facts are ``task.changed`` with ``runtimeEntity=work_item``,
    each naming its item (``workItemId``, ``taskId``), its status (a work-item status) and,
    when the fact stands for one, its board status; who did it (``by``, ``byKind``); in the
    run and session of the topology (lineage). A done item stays done; a blocked item names
    whom it waits for when it waits for someone; board counts travel on ``team.changed``. The
    envelopes are numbered without gaps.
    """
    assert [e.sequence for e in envelopes] == list(range(1, len(envelopes) + 1))
    items = [e for e in envelopes if (e.payload or {}).get("runtimeEntity") == "work_item"]
    assert items, "no envelope of runtimeEntity work_item"
    runs = {e.run_id for e in envelopes if e.type == "run.started"}
    last: dict[str, str] = {}
    for e in items:
        payload = e.payload or {}
        assert e.type == "task.changed", e
        assert e.topology == "human_agent_board", e
        assert e.session_id, e
        assert e.run_id in runs, e
        item = payload["workItemId"]
        assert e.task_id == f"work-item:{item}", e
        status = payload["status"]
        assert status in WORK_ITEM_STATUSES, e
        assert payload.get("boardStatus") in BOARD_STATUSES | {None}, e
        assert payload["by"], e
        assert payload["byKind"] in {"agent", "person", "team"}, e
        assert last.get(item) != "done" or status == "done", f"{item} left done for {status}"
        if status == "blocked" and payload.get("waitingFor"):
            assert payload["waitingForKind"] in {"agent", "person"}, e
        if payload.get("boardStatus") == "commented":
            assert payload.get("comment"), e
        if status == "running":
            assert payload.get("taskRef"), e
            assert e.thread_id, e
            assert e.agent_id, e
        last[item] = status
    counts = [
        (e.payload or {})["boardItemCounts"]
        for e in envelopes
        if "boardItemCounts" in (e.payload or {})
    ]
    assert counts, "no team.changed with the board's counts"
    final = dict.fromkeys(WORK_ITEM_STATUSES, 0)
    for status in last.values():
        final[status] += 1
    assert counts[-1] == final, (counts[-1], final)
    return items


REVIEW_EVENTS = frozenset({"review.requested", "review.completed", "evidence.changed"})
REVIEW_STATUSES = frozenset({"requested", "reviewing", "passed", "changes_requested", "failed"})
VERDICTS = frozenset({"passed", "changes_requested", "failed"})


def check_review_team(envelopes: Sequence[Envelope]) -> list[Envelope]:
    """The Agent UI checker of the ``review_team`` topology; the review envelopes.

    The spec's rules: review.requested, review.completed and evidence.changed carry the
    evidence id (the review), the task, the reviewer's agent id and thread, its lineage (the
    coordinator's thread and call), the review teammate's status and the target; a completed
    review has its verdict, fixes and evidence refs; each review is requested, then (after
    its reviewer's ``reviewing``) completed once, and its evidence comes with its verdict.
    Every envelope of a review_team run says so (topology), and sequences run without gaps.
    """
    assert [e.sequence for e in envelopes] == list(range(1, len(envelopes) + 1))
    reviews = [e for e in envelopes if e.type in REVIEW_EVENTS]
    assert reviews, "no review envelope"
    state: dict[str, str] = {}  # evidenceId -> its last status
    agents = {e.agent_id: e for e in envelopes if e.type == "agent.spawned"}
    for e in envelopes:
        assert e.topology == "review_team", e
        payload = e.payload or {}
        if e.type == "agent.changed" and "reviewStatus" in payload:
            assert payload["reviewStatus"] == "reviewing"
            assert state.get(payload["reviewId"]) == "requested", e
            state[payload["reviewId"]] = "reviewing"
        if e.type not in REVIEW_EVENTS:
            continue
        assert e.owner == "evidence", e
        assert e.scope == "evidence", e
        assert e.evidence_id, e
        assert e.task_id, e
        assert e.thread_id, e
        assert e.agent_id in agents, f"{e.agent_id} was never spawned"
        spawned = agents[e.agent_id]
        assert e.parent_thread_id == spawned.parent_thread_id, "lineage of the reviewer"
        assert e.tool_call_id, e
        assert payload["status"] in REVIEW_STATUSES, e
        assert payload["reviewer"], e
        assert payload["target"], e
        assert payload["targetChat"], e
        before = state.get(e.evidence_id)
        if e.type == "review.requested":
            assert e.surface == "review_lane", e
            assert before is None, f"{e.evidence_id} requested twice"
            assert payload["status"] == "requested", e
            state[e.evidence_id] = "requested"
        elif e.type == "evidence.changed":
            assert before in {"requested", "reviewing"}, f"{e.evidence_id}: evidence after {before}"
            assert payload["verdict"] in VERDICTS, e
            assert isinstance(payload.get("evidence"), list), e
        else:
            assert e.surface == "review_lane", e
            assert before in {"requested", "reviewing"}, f"{e.evidence_id} completed after {before}"
            assert payload["verdict"] in VERDICTS, e
            assert payload["status"] == payload["verdict"], e
            assert isinstance(payload.get("fixes"), list), e
            state[e.evidence_id] = payload["verdict"]
    assert all(s in VERDICTS for s in state.values()), f"a review never completed: {state}"
    return reviews
