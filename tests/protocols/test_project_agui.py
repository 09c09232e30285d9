"""The AG-UI projection of real team runs.

Teams run for real (scripted backend, autojump clock); a projector is fed their facts live, the
way the daemon's endpoint will feed it, and every event it emits is validated with the official
``ag-ui-protocol`` models and the spec's draft schema.
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings, target
from hypothesis import event as note_event
from hypothesis import strategies as st

from orchestrator.ahp.actions import ChatErrorAction, ChatTurnStartedAction
from orchestrator.base import RunError
from orchestrator.core import ApprovalRequested, TeamState
from orchestrator.protocols import (
    ARTIFACT_EVENT,
    REMOTE_TASK_EVENT,
    AguiProjector,
    AguiRunStatus,
    Event,
    json_patch,
    team_view,
)
from orchestrator.spec import load_team
from tests.support import teams
from tests.support.agui import (
    THREAD,
    Session,
    check_run,
    of_type,
    run_team,
    team,
    team_runs,
    validate_event,
)
from tests.support.examples import examples
from tests.support.paths import PROJECT_ROOT
from tests.support.remote_replay import replayed_backends
from tests.support.teams import remote as remote_team

DELIVERY = load_team(PROJECT_ROOT / "teams" / "delivery.toml")


def validated(session: Session) -> Session:
    """Every event of ``session`` is valid AG-UI and every run is well formed."""
    for event in session.events:
        validate_event(event)
    for run in session.runs:
        check_run(run)
    return session


def outcome(run: list[Event]) -> dict[str, Any]:
    finished = run[-1]
    assert finished["type"] == "RUN_FINISHED"
    result: dict[str, Any] = finished.get("outcome", {"type": "success"})
    return result


def coordinator_text(run: list[Event]) -> str:
    """The coordinator's last text message of ``run``, as its deltas build it."""
    own = [e for e in run if e["type"].startswith("TEXT_MESSAGE") and "subagentRunId" not in e]
    last = own[-1]["messageId"]
    return "".join(e["delta"] for e in own if e["messageId"] == last and "delta" in e)


class TestDeliveryRun:
    """The delivery team: three researchers in parallel, one of them asks to publish."""

    async def test_the_approval_interrupts_the_run_and_the_resume_continues_the_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(DELIVERY))
        first, second = session.runs
        assert (first[0], second[0]) == (
            {"type": "RUN_STARTED", "threadId": THREAD, "runId": "run-1"},
            {"type": "RUN_STARTED", "threadId": THREAD, "runId": "run-2"},
        )
        (request,) = [f.action for f in session.facts if isinstance(f.action, ApprovalRequested)]
        worker = request.chat
        (interrupt,) = outcome(first)["interrupts"]
        assert outcome(first)["type"] == "interrupt"
        wire_call = f"{request.tool_call_id}@{worker}"
        assert interrupt == {
            "id": request.approval,
            "reason": "tool_approval",
            "message": (
                "researcher #3 (task: Publish the release notes to the release page) asks to "
                f"run publish: {request.summary}"
            ),
            "toolCallId": wire_call,
            "subagentRunId": worker,
            "responseSchema": {
                "type": "object",
                "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
                "required": ["approved"],
            },
            "metadata": {
                "approval": "approval-1",
                "toolName": "publish",
                "agent": "researcher",
                "chat": worker,
                "summary": request.summary,
                "agentName": "researcher #3",
                "agentNumber": 3,
                "task": "task-4",
                "taskTitle": "Publish the release notes to the release page",
            },
        }
        (gated,) = [e for e in of_type(first, "TOOL_CALL_START") if e["toolCallId"] == wire_call]
        assert (gated["toolCallName"], gated["subagentRunId"]) == ("publish", worker)
        # The worker's segment ends suspended on its own interrupt, before the run's end.
        assert first[-2] == {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": worker,
            "outcome": {"type": "suspended", "interruptIds": ["approval-1"]},
        }
        # The continuation: a fresh snapshot, the worker announced again, its result.
        assert second[1]["type"] == "STATE_SNAPSHOT"
        (again,) = of_type(second, "SUBAGENT_STARTED")
        (before,) = [e for e in of_type(first, "SUBAGENT_STARTED") if e["subagentRunId"] == worker]
        assert again == before
        (published,) = [
            e for e in of_type(second, "TOOL_CALL_RESULT") if e["toolCallId"] == wire_call
        ]
        assert published["content"] == "published to https://example.invalid/releases/latest"
        run = session.runtime.state.run
        assert run is not None
        assert outcome(second) == {"type": "success"}
        assert second[-1]["result"] == run.result == coordinator_text(second)
        assert session.projector.status is AguiRunStatus.FINISHED

    async def test_each_worker_is_a_subagent_of_its_delegate_call(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(DELIVERY))
        events = session.events
        delegates = [
            e for e in of_type(events, "TOOL_CALL_START") if e["toolCallName"] == "delegate"
        ]
        assert all("subagentRunId" not in e for e in delegates)
        first_started = of_type(session.runs[0], "SUBAGENT_STARTED")
        assert [e["parentToolCallId"] for e in first_started] == [
            e["toolCallId"] for e in delegates
        ]
        assert {e["name"] for e in first_started} == {"researcher"}
        assert [e["description"] for e in first_started] == [
            "Summarise the changelog since the last release",
            "List the known issues reported against this version",
            "Publish the release notes to the release page",
        ]
        # Each delegate call's result follows its worker's end.
        for started in first_started:
            worker = started["subagentRunId"]
            (end,) = [
                e
                for e in of_type(events, "SUBAGENT_FINISHED")
                if e["subagentRunId"] == worker and "result" in e
            ]
            (result,) = [
                e
                for e in of_type(events, "TOOL_CALL_RESULT")
                if e["toolCallId"] == started["parentToolCallId"]
            ]
            assert events.index(end) < events.index(result)
            task = started["description"]
            assert result["content"] == f"[researcher, completed] (task: {task}) {end['result']}"
            assert started["metadata"]["task"] in {
                m["id"] for m in team_view(session.runtime.state)["tasks"]
            }

    async def test_the_coordinator_streams_reasoning_text_and_tool_calls_with_its_ids(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(DELIVERY))
        first = session.runs[0]
        own = [
            e
            for e in first
            if "subagentRunId" not in e
            and e["type"] not in ("RUN_STARTED", "RUN_FINISHED", "STATE_SNAPSHOT", "STATE_DELTA")
        ]
        assert [e["type"] for e in own[:7]] == [
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
        ]
        text = [e for e in own if e["type"].startswith("TEXT_MESSAGE")]
        assert {e["messageId"] for e in text} == {text[0]["messageId"]}
        assert "".join(e.get("delta", "") for e in text) == (
            "I'll split this into three tasks and run them in parallel."
        )
        started = [
            f.action
            for f in session.facts
            if f.action.type == "chat/toolCallStart"
            and f.channel == session.runtime.state.coordinator_chat()
        ]
        calls = of_type(own, "TOOL_CALL_START")
        assert [e["toolCallId"] for e in calls] == [a.tool_call_id for a in started]  # type: ignore[union-attr]
        assert {e["parentMessageId"] for e in calls} == {text[0]["messageId"]}

    async def test_the_state_follows_the_team(self, autojump_clock: trio.testing.MockClock) -> None:
        """Snapshot plus deltas equal the team's state at the end of each run."""
        session = validated(await run_team(DELIVERY))
        first, second = session.runs
        state = jsonpatch.apply_patch(
            first[1]["snapshot"], [op for e in of_type(first, "STATE_DELTA") for op in e["delta"]]
        )
        assert [a["id"] for a in state["pendingApprovals"]] == ["approval-1"]
        # Who asks and who decides, by the names every client shows (not chat URIs).
        [pending] = state["pendingApprovals"]
        assert (pending["requestedByName"], pending["routedToName"]) == ("researcher #3", "user")
        assert pending["routedTo"] == "user"
        assert [m["status"] for m in state["members"]] == [
            "waiting",
            "completed",
            "completed",
            "needs_approval",
        ]
        final = jsonpatch.apply_patch(
            second[1]["snapshot"], [op for e in of_type(second, "STATE_DELTA") for op in e["delta"]]
        )
        coordinator = session.runtime.state.coordinator_chat()
        end = next(
            i
            for i, f in enumerate(session.facts)
            if f.type == "chat/turnComplete" and f.channel == coordinator
        )
        folded = TeamState.fold(session.runtime.session, session.facts[: end + 1])
        assert final == team_view(folded) | {"reviews": []}  # no review in this team
        assert final["pendingApprovals"] == []
        assert {t["status"] for t in final["tasks"][1:]} == {"completed"}

    async def test_a_denied_approval_is_the_tool_calls_result(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(DELIVERY, decide=lambda _: False))
        _, second = session.runs
        (denied,) = [e for e in of_type(second, "TOOL_CALL_RESULT") if "@" in e["toolCallId"]]
        assert denied["content"] == "denied by user"
        assert outcome(second) == {"type": "success"}


class TestInterruptGap:
    """The team goes on while the client decides; the next run tells what happened."""

    async def test_what_happened_meanwhile_opens_the_next_run(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(team(teams.SLOW_SIBLING), delay=20))
        first, second = session.runs
        state = session.runtime.state
        researcher = next(c for c, m in state.members.items() if m.agent == "researcher")
        # Its reasoning was cut at the interrupt and goes on, same message, in the next run.
        (thought,) = {e["messageId"] for e in of_type(first, "REASONING_MESSAGE_START")}
        assert [e["type"] for e in second if e.get("messageId") == thought][:2] == [
            "REASONING_START",
            "REASONING_MESSAGE_START",
        ]
        deltas = [
            e["delta"]
            for e in of_type(first + second, "REASONING_MESSAGE_CONTENT")
            if e["messageId"] == thought
        ]
        assert "".join(deltas) == "first thought, second thought"
        # It finished while the client was away: its segment opens again, then ends.
        mine = [
            e["type"]
            for e in second
            if e.get("subagentRunId") == researcher and e["type"].startswith("SUBAGENT")
        ]
        assert mine == ["SUBAGENT_STARTED", "SUBAGENT_FINISHED"]
        assert outcome(second) == {"type": "success"}
        assert second[-1]["runId"] == "run-2"

    async def test_an_approval_withdrawn_meanwhile_ends_its_worker_in_error(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The publisher times out (30 s) before the answer (60 s): the decision is refused,
        and the next run reports the worker's failure and the turn's end."""
        session = validated(await run_team(team(teams.SLOW_SIBLING), delay=60))
        _, second = session.runs
        assert len(session.refused) == 1
        assert "approval-1" in session.refused[0]
        (error,) = of_type(second, "SUBAGENT_ERROR")
        assert (error["message"], error["code"]) == ("timed out after 30s", "failed")
        assert second[-1] == {
            "type": "RUN_FINISHED",
            "threadId": THREAD,
            "runId": "run-2",
            "result": session.runtime.state.run.result,  # type: ignore[union-attr]
        }


class TestNesting:
    async def test_a_workers_worker_names_its_parent_subagent(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(team(teams.NESTED_APPROVAL)))
        first, second = session.runs
        manager, helper = of_type(first, "SUBAGENT_STARTED")
        assert "parentSubagentRunId" not in manager
        assert helper["parentSubagentRunId"] == manager["subagentRunId"]
        (spawning,) = [
            e
            for e in of_type(first, "TOOL_CALL_START")
            if e.get("subagentRunId") == manager["subagentRunId"]
        ]
        assert helper["parentToolCallId"] == spawning["toolCallId"]
        # Both segments end suspended, the child first; only the helper raised the interrupt.
        assert [
            (e["subagentRunId"], e.get("outcome")) for e in of_type(first, "SUBAGENT_FINISHED")
        ] == [
            (helper["subagentRunId"], {"type": "suspended", "interruptIds": ["approval-1"]}),
            (manager["subagentRunId"], {"type": "suspended"}),
        ]
        # Announced again parent first, then both finish, child first.
        assert [e["subagentRunId"] for e in of_type(second, "SUBAGENT_STARTED")] == [
            manager["subagentRunId"],
            helper["subagentRunId"],
        ]
        assert [e["subagentRunId"] for e in of_type(second, "SUBAGENT_FINISHED")] == [
            helper["subagentRunId"],
            manager["subagentRunId"],
        ]


class TestHandoff:
    async def test_a_specialist_is_a_subagent_until_it_hands_back(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(load_team(PROJECT_ROOT / "teams" / "handoff.toml")))
        (run,) = session.runs
        (started,) = of_type(run, "SUBAGENT_STARTED")
        (finished,) = of_type(run, "SUBAGENT_FINISHED")
        (handoff,) = [e for e in of_type(run, "TOOL_CALL_START") if e["toolCallName"] == "handoff"]
        assert started["parentToolCallId"] == handoff["toolCallId"]
        assert started["name"] == "billing"
        assert finished["subagentRunId"] == started["subagentRunId"]
        assert outcome(run) == {"type": "success"}


class TestFailures:
    async def test_a_failed_worker_is_a_subagent_error_and_the_run_goes_on(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(team(teams.FAILING_WORKER)))
        (run,) = session.runs
        (error,) = of_type(run, "SUBAGENT_ERROR")
        assert error["code"] == "failed"
        assert "the disk is full" in error["message"]
        assert outcome(run) == {"type": "success"}

    async def test_a_failed_coordinator_turn_is_a_run_error(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        session = validated(await run_team(team(teams.FAILING_LEAD)))
        (run,) = session.runs
        (failed,) = [f.action for f in session.facts if isinstance(f.action, ChatErrorAction)]
        assert run[-1] == {
            "type": "RUN_ERROR",
            "message": failed.error.message,
            "code": "ScriptedFailure",
        }
        assert failed.error.message.endswith("out of ideas")
        assert session.projector.status is AguiRunStatus.FAILED

    async def test_a_cancelled_turn_is_a_run_error_that_says_so(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        log_projector: list[Event] = []
        spec = team(teams.SLOW_SIBLING)
        from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
        from orchestrator.runtime.backends import ScriptedBackend

        runtime = TeamRuntime(
            spec, backends=ScriptedBackend, factlog=MemoryFactLog(), ids=Ids(deterministic=True)
        )
        projector = AguiProjector(runtime.session, thread_id=THREAD, run_id="run-1")
        log_projector += projector.start()
        subscription = runtime.bus.subscribe("agui")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "go")
            async for fact in subscription:
                log_projector += projector.feed(fact)
                if fact.type == "chat/toolCallStart":
                    runtime.cancel()
                if fact.type == "team/runFinished":
                    break
        for event in log_projector:
            validate_event(event)
        check_run(log_projector)
        assert log_projector[-1] == {
            "type": "RUN_ERROR",
            "message": "the coordinator's turn was cancelled before it answered",
            "code": "cancelled",
        }


class TestFollowing:
    async def test_a_projector_follows_the_next_turn_that_starts(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Started after the first turn began, it follows the second (a queued message)."""
        from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
        from orchestrator.runtime.backends import ScriptedBackend

        log = MemoryFactLog()
        runtime = TeamRuntime(
            team(teams.TWO_TURNS),
            backends=ScriptedBackend,
            factlog=log,
            ids=Ids(deterministic=True),
        )
        subscription = runtime.bus.subscribe("test")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.run, "hello")
            async for fact in subscription:
                if isinstance(fact.action, ChatTurnStartedAction):
                    await runtime.queue(fact.channel, "and then?")
                    break
        projector = AguiProjector(runtime.session, thread_id=THREAD, run_id="run-2")
        started = [f for f in log.facts if isinstance(f.action, ChatTurnStartedAction)]
        events: list[Event] = []
        for fact in log.facts:
            events += projector.feed(fact)
            if fact is started[0]:
                events += projector.start()
        for event in events:
            validate_event(event)
        check_run(events)
        assert projector.turn_id == started[1].action.turn_id  # type: ignore[union-attr]
        assert events[-1]["result"] == coordinator_text(events) == "second answer"
        assert "first answer" not in json.dumps(events)

    async def test_a_projector_joining_after_reviews_has_their_lane_in_its_snapshot(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A run opened mid-session (the daemon builds its projector from the live state):
        its first snapshot's review lane has the reviews recorded before it joined, as the
        projector that followed from the start had them then."""
        session = await run_team(load_team(PROJECT_ROOT / "teams" / "review.toml"))
        facts = session.facts
        last = max(i for i, f in enumerate(facts) if f.type == "team/reviewCompleted")
        state = TeamState.fold(session.runtime.session, facts[: last + 1])
        late = AguiProjector(session.runtime.session, thread_id=THREAD, run_id="late", state=state)
        snapshot = late.start()[1]["snapshot"]
        lane = snapshot["reviews"]
        assert [(r["round"], r["status"]) for r in lane] == [
            (1, "changes_requested"),
            (2, "passed"),
        ]
        assert lane == session.projector.view()["reviews"]

    async def test_a_projector_joining_an_interrupted_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """Made fresh from the state (no buffer): it announces the subagents at work, and
        interrupts at once unless the approvals pending are being answered."""
        session = await run_team(DELIVERY)
        facts = session.facts
        cut = next(i for i, f in enumerate(facts) if isinstance(f.action, ApprovalRequested)) + 1
        state = TeamState.fold(session.runtime.session, facts[:cut])
        turn = state.chats[state.coordinator_chat() or ""].active_turn
        assert turn is not None
        waiting = AguiProjector(
            state.session_uri, thread_id=THREAD, run_id="run-x", state=state, turn_id=turn.id
        )
        events = waiting.start()
        assert waiting.status is AguiRunStatus.INTERRUPTED
        assert [e["type"] for e in events] == [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "SUBAGENT_STARTED",
            "SUBAGENT_FINISHED",
            "RUN_FINISHED",
        ]
        assert waiting.interrupts == ("approval-1",)

        joined = AguiProjector(
            state.session_uri, thread_id=THREAD, run_id="run-y", state=state, turn_id=turn.id
        )
        events = joined.start(answering={"approval-1"})
        for fact in facts[cut:]:
            events += joined.feed(fact)
        for event in events:
            validate_event(event)
        check_run(events)
        assert (
            of_type(events, "SUBAGENT_STARTED")[0]["subagentRunId"]
            == session.runs[0][-1]["outcome"]["interrupts"][0]["subagentRunId"]
        )
        assert events[-1]["result"] == session.runs[-1][-1]["result"]

    def test_start_and_resume_are_refused_out_of_turn(self) -> None:
        projector = AguiProjector("ahp-session:/s", thread_id=THREAD, run_id="run-1")
        with pytest.raises(RunError, match="not interrupted"):
            projector.resume("run-2")
        projector.start()
        with pytest.raises(RunError, match="already started"):
            projector.start()


# ── json_patch ────────────────────────────────────────────────────────────────

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "a/b", "~", "~1", ""]), inner, max_size=4)
    ),
    max_leaves=12,
)


class TestJsonPatch:
    @given(old=JSON, new=JSON)
    def test_the_patch_turns_old_into_new(self, old: Any, new: Any) -> None:
        """Checked with an independent RFC 6902 implementation (jsonpatch)."""
        patch = json_patch(old, new)
        patched = jsonpatch.apply_patch(old, patch)
        assert json.dumps(patched, sort_keys=True) == json.dumps(new, sort_keys=True)

    @given(value=JSON)
    def test_no_change_no_patch(self, value: Any) -> None:
        assert json_patch(value, json.loads(json.dumps(value))) == []

    def test_types_are_told_apart(self) -> None:
        assert json_patch({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
        assert json_patch([1, 2, 3], [1]) == [
            {"op": "remove", "path": "/2"},
            {"op": "remove", "path": "/1"},
        ]
        assert json_patch({"a/b": 1}, {}) == [{"op": "remove", "path": "/a~1b"}]


# ── any team run ──────────────────────────────────────────────────────────────


class TestAnyTeamRun:
    @settings(
        max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(case=team_runs())
    def test_every_stream_is_well_formed_valid_ag_ui(
        self, case: tuple[str, list[bool], float]
    ) -> None:
        """Whatever the team does: every event is valid AG-UI; every run starts with
        RUN_STARTED and has one terminal event, last, with nothing left open at a
        RUN_FINISHED; every run but the last ends on an interrupt; the last one finishes with
        the team's answer; every subagent names a tool call streamed before it; every tool
        call gets its result."""
        text, decisions, delay = case

        def decide(approval: str) -> bool:
            return decisions[(int(approval.rsplit("-", 1)[1]) - 1) % len(decisions)]

        session = trio.run(
            lambda: run_team(team(text), decide=decide, delay=delay),
            clock=trio.testing.MockClock(autojump_threshold=0),
        )
        validated(session)
        note_event(f"AG-UI runs: {len(session.runs)}")
        note_event(f"withdrawn approvals: {len(session.refused)}")
        target(len(session.runs), label="AG-UI runs")
        for run in session.runs[:-1]:
            assert outcome(run)["type"] == "interrupt"
        run_record = session.runtime.state.run
        assert run_record is not None
        assert outcome(session.runs[-1]) == {"type": "success"}
        assert session.runs[-1][-1]["result"] == run_record.result
        events = session.events
        seen_calls: set[str] = set()
        for event in events:
            if event["type"] == "TOOL_CALL_START":
                seen_calls.add(event["toolCallId"])
            elif event["type"] == "SUBAGENT_STARTED":
                assert event["parentToolCallId"] in seen_calls
        assert {e["toolCallId"] for e in of_type(events, "TOOL_CALL_RESULT")} == seen_calls
        workers = set(session.runtime.state.members) - {session.runtime.state.coordinator_chat()}
        assert {e["subagentRunId"] for e in of_type(events, "SUBAGENT_STARTED")} == workers


class TestRemoteTeammate:
    async def test_a_remote_task_s_states_and_artifacts_are_custom_events_of_its_subagent(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """AG-UI has no event for a remote task: its states and artifact chunks are CUSTOM
        events (a2a.remoteTask, a2a.artifact) inside the remote teammate's subagent segment."""
        spec = team(remote_team({"far": "http://127.0.0.1:9/"}))
        session = validated(await run_team(spec, backends=replayed_backends))
        events = session.events
        custom = of_type(events, "CUSTOM")
        assert [(e["name"], e["value"].get("state")) for e in custom] == [
            (REMOTE_TASK_EVENT, "sending"),
            (REMOTE_TASK_EVENT, "submitted"),
            (REMOTE_TASK_EVENT, "working"),
            (ARTIFACT_EVENT, None),
            (ARTIFACT_EVENT, None),
            (REMOTE_TASK_EVENT, "completed"),
        ]
        (started,) = [e for e in of_type(events, "SUBAGENT_STARTED") if e["name"] == "far"]
        assert {e["subagentRunId"] for e in custom} == {started["subagentRunId"]}
        assert custom[3]["value"]["parts"] == [{"text": "alpha "}]
        assert custom[-1]["value"]["remoteTaskId"] == "rt-1"


class TestToolArtifacts:
    async def test_a_tool_s_artifact_and_a_worker_s_report_are_custom_events(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A coordinator that lists ``search_web`` and ``delegate`` in ``artifacts``: the
        plain tool's result and the delegation's outcome (the worker's report) are each a
        CUSTOM ``a2a.artifact`` event, in the order of the calls, outside any subagent."""
        text = teams.TOOL_CALLS.replace(
            'needs_approval = ["probe"]',
            'needs_approval = ["probe"]\nartifacts = ["search_web", "delegate"]',
        )
        session = validated(await run_team(team(text)))
        custom = [e for e in of_type(session.events, "CUSTOM") if e["name"] == ARTIFACT_EVENT]
        assert [(e["value"]["name"], e["value"]["mediaType"]) for e in custom] == [
            ("search_web", "text/plain"),
            ("worker report", "text/plain"),
        ]
        assert custom[0]["value"]["parts"] == [{"text": "three hits"}]
        (report,) = custom[1]["value"]["parts"]
        assert report["text"].startswith("[worker, completed] (task: dig) found it")
        assert all("subagentRunId" not in e for e in custom)
        # Each names the call whose result it is.
        by_name = {
            e["toolCallName"]: e["toolCallId"] for e in of_type(session.events, "TOOL_CALL_START")
        }
        assert [e["value"]["toolCallId"] for e in custom] == [
            by_name["search_web"],
            by_name["delegate"],
        ]
