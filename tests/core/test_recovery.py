"""Recovery after a stop: the run is taken up from its log, at every point it can stop.

A run's facts reach the log in batches (each one atomic in the journal), so a stop leaves
some prefix of the batches. Here a real team runs to the end on a memory log that notes
the batch boundaries; then, for each boundary, a new runtime gets the state folded from
that prefix and resumes it, as ``orchestrator resume`` does after ``kill -9``. Each
recovery must finish the run, keep the log consistent (the graph check, live state equal
to a fold), mark cut-off turns interrupted, carry parked turns on, and keep every approval
and question that survived answerable. The subprocess crash test (real SIGKILL, SQLite)
is in ``test_crash.py``.

The stops that matter most are also recovered through a real journal, on each database
(``journal_db``): the prefix written batch by batch (snapshots included), the session
opened from the journal as ``orchestrator resume`` opens it, the run resumed onto the
journal, and the log read back checked as above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatInputRequestedAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ForkChatOrigin,
    InputRequestResponsePart,
    MarkdownResponsePart,
    SystemNotificationResponsePart,
    ToolCallResponsePart,
    Turn,
    TurnState,
)
from orchestrator.base import RunError
from orchestrator.core import (
    INTERRUPTED,
    USER,
    ApprovalDecision,
    ApprovalRequested,
    Fact,
    MemberJoined,
    RoundContext,
    RunResumed,
    RunStatus,
    TaskStatus,
    TeamState,
    build_graph,
    conversation,
    forked_chats,
    interrupted_turns,
    is_forked_chat,
    is_interrupted,
    plan_recovery,
    resume_point,
)
from orchestrator.journal import Journal, open_journal, open_reader
from orchestrator.runtime import Ids, MemoryFactLog, RunOutcome, TeamRuntime, Ticket
from orchestrator.runtime.backends import ScriptedBackend, tool_call_id
from orchestrator.spec import RestartPolicy, TeamSpec, parse_team
from tests.support.teams import RESTART_MIX, side_team

NOW = "2026-11-23T00:00:00.000Z"
LATER = "2026-11-23T00:05:00.000Z"


def team(policy: RestartPolicy = RestartPolicy.RESUME) -> TeamSpec:
    return parse_team(
        RESTART_MIX.replace('on_restart = "resume"', f'on_restart = "{policy}"'),
        file="recovery.toml",
    )


class BatchLog(MemoryFactLog):
    """A memory log that remembers where each batch ended (what one journal write holds)."""

    def __init__(self, facts: Sequence[Fact] = ()) -> None:
        super().__init__()
        self.facts.extend(facts)
        self.boundaries: list[int] = []

    def submit(
        self, facts: Sequence[Fact], *, ended_turns: Mapping[int, Turn] | None = None
    ) -> Ticket:
        ticket = super().submit(facts, ended_turns=ended_turns)
        self.boundaries.append(len(self.facts))
        return ticket


async def answer_everything(
    runtime: TeamRuntime, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Approve what is routed to the user and answer every question "yes": those asked
    before a stop (``waiting_for_user``) and those asked from now on (the bus)."""
    subscription = runtime.bus.subscribe("answers", buffer_size=float("inf"))
    handled: set[str] = set()
    task_status.started()

    async def approve(request: ApprovalRequested) -> None:
        if request.approval not in handled:
            handled.add(request.approval)
            await runtime.resolve_approval(request.approval, approved=True)

    async def answer(chat: str, request_id: str) -> None:
        if request_id not in handled:
            handled.add(request_id)
            await runtime.answer_input(chat, request_id, "yes")

    async with trio.open_nursery() as nursery:
        approvals, questions = runtime.waiting_for_user()
        for request in approvals:
            nursery.start_soon(approve, request)
        for chat, question in questions:
            nursery.start_soon(answer, chat, question.id)
        async for fact in subscription:
            action = fact.action
            if isinstance(action, ApprovalRequested) and action.routed_to == USER:
                nursery.start_soon(approve, action)
            elif isinstance(action, ChatInputRequestedAction):
                nursery.start_soon(answer, fact.channel, action.request.id)


async def drive(runtime: TeamRuntime, *, resume: bool) -> RunOutcome:
    outcome: list[RunOutcome] = []
    done = trio.Event()

    async def go(*, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        if resume:
            outcome.append(await runtime.resume(task_status=task_status))
        else:
            outcome.append(await runtime.run("Ship the release", task_status=task_status))
        done.set()

    with trio.fail_after(3600):
        async with trio.open_nursery() as nursery:
            if resume:
                # The answers start once recovery is recorded: they see what survived it.
                await nursery.start(go)
                await nursery.start(answer_everything, runtime)
            else:
                await nursery.start(answer_everything, runtime)
                nursery.start_soon(go)
            await done.wait()
            runtime.bus.close()
    return outcome[0]


@attrs.frozen
class Recovery:
    before: TeamState  # the state the stop left
    facts: list[Fact]  # the whole log after recovery ran the run to its end
    outcome: RunOutcome
    after: TeamState
    boundaries: list[int]  # where the batches recovery wrote end (into ``facts``)


async def full_run(policy: RestartPolicy = RestartPolicy.RESUME) -> BatchLog:
    log = BatchLog()
    runtime = TeamRuntime(
        team(policy),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True),
        clock=lambda: NOW,
    )
    outcome = await drive(runtime, resume=False)
    assert outcome.status is RunStatus.COMPLETED, outcome
    return log


async def recover(prefix: Sequence[Fact], policy: RestartPolicy, *, restart: int = 1) -> Recovery:
    session = prefix[0].session
    before = TeamState.fold(session, prefix)
    log = BatchLog(prefix)
    runtime = TeamRuntime(
        team(policy),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True, restart=restart),
        clock=lambda: LATER,
        state=TeamState.fold(session, prefix),
    )
    outcome = await drive(runtime, resume=True)
    return Recovery(before, log.facts, outcome, runtime.state, log.boundaries)


def check_recovery(recovery: Recovery, policy: RestartPolicy) -> None:
    """What every recovery must leave, wherever the stop came."""
    facts, before, after = recovery.facts, recovery.before, recovery.after
    assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
    assert build_graph(facts).check() == []
    folded = TeamState.fold(before.session_uri, facts)
    assert folded.chats == after.chats, "live state must equal a fold of the log"
    assert folded.tasks == after.tasks

    resumed_at = [f.sequence for f in facts if isinstance(f.action, RunResumed)]
    resumed = [f.action for f in facts if isinstance(f.action, RunResumed)]
    assert len(resumed) == 1
    assert resumed_at == [before.last_sequence + 1], "recovery is the first thing done"

    assert after.run is not None
    assert after.run.status is not None, "the run ends"
    assert after.run.restarts == 1
    if policy is RestartPolicy.RESUME:
        assert recovery.outcome.status is RunStatus.COMPLETED, recovery.outcome
    assert all(chat.active_turn is None for chat in after.chats.values())
    assert not any(record.decision is None for record in after.approvals.values())
    assert all(task.status is not TaskStatus.RUNNING for task in after.tasks.values())

    for chat_uri, chat in before.chats.items():
        turn = chat.active_turn
        if turn is None:
            continue
        ended = _turn(after, chat_uri, turn.id)
        if resume_point(before, chat_uri) is None:
            assert is_interrupted(ended), f"a cut-off turn of {chat_uri} ends interrupted"
            assert chat_uri in resumed[0].interrupted
        else:
            assert not is_interrupted(ended), f"a parked turn of {chat_uri} goes on"
            assert chat_uri not in resumed[0].interrupted

    for approval, record in before.approvals.items():
        if record.decision is not None:
            continue
        decided = after.approvals[approval].decision
        parked = resume_point(before, record.request.chat) is not None
        if parked and record.request.chat not in resumed[0].interrupted:
            assert decided is ApprovalDecision.APPROVED, "a surviving approval is answered"
        else:
            assert decided is ApprovalDecision.WITHDRAWN


def _turn(state: TeamState, chat: str, turn_id: str) -> Turn:
    return next(t for t in state.chats[chat].turns if t.id == turn_id)


# ── every stop point ──────────────────────────────────────────────────────


@pytest.mark.parametrize("policy", list(RestartPolicy))
async def test_a_stop_at_any_batch_boundary_is_recovered(
    policy: RestartPolicy, autojump_clock: trio.testing.MockClock
) -> None:
    log = await full_run(policy)
    facts = log.facts
    assert len(log.boundaries) > 50  # the scenario is rich enough to stop in many places
    seen: dict[str, int] = {"parked": 0, "cut off": 0, "approval": 0, "question": 0}
    for boundary in log.boundaries[:-1]:
        recovery = await recover(facts[:boundary], policy)
        check_recovery(recovery, policy)
        before = recovery.before
        for chat in before.chats:
            if before.chats[chat].active_turn is not None:
                kind = "parked" if resume_point(before, chat) else "cut off"
                seen[kind] += 1
        seen["approval"] += any(r.decision is None for r in before.approvals.values())
        seen["question"] += any(
            isinstance(p, InputRequestResponsePart) and p.response is None
            for chat in before.chats.values()
            if chat.active_turn is not None
            for p in chat.active_turn.response_parts
        )
    # The stops covered every kind of recovery, not only the easy ones.
    assert all(count > 0 for count in seen.values()), seen


async def test_a_resumed_run_answers_as_an_uninterrupted_one_when_only_waits_were_cut(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    facts = log.facts
    uninterrupted = TeamState.fold(facts[0].session, facts)
    assert uninterrupted.run is not None
    # Stop while the coordinator's question is open: everything else had finished.
    asked = next(i for i, f in enumerate(facts) if isinstance(f.action, ChatInputRequestedAction))
    recovery = await recover(facts[: asked + 1], RestartPolicy.RESUME)
    check_recovery(recovery, RestartPolicy.RESUME)
    assert recovery.outcome.result == uninterrupted.run.result
    assert recovery.before.chats != {}
    (resumed,) = [f.action for f in recovery.facts if isinstance(f.action, RunResumed)]
    assert resumed.interrupted == ()


# ── what a stop cuts off, and how each policy goes on ───────────────────────


def _stop_mid_stream(facts: Sequence[Fact], log: BatchLog) -> int:
    """The boundary just after the coordinator's first text part: its round 0 streams."""
    coordinator = facts[0].session
    state = TeamState(coordinator)
    for boundary in log.boundaries:
        state = TeamState.fold(coordinator, facts[:boundary])
        lead = state.coordinator_chat()
        turn = state.chats[lead].active_turn if lead else None
        if turn is not None and any(
            isinstance(p, MarkdownResponsePart) for p in turn.response_parts
        ):
            return boundary
    raise AssertionError("the coordinator never streamed")


async def test_a_coordinator_cut_off_mid_stream_runs_its_turn_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    stop = _stop_mid_stream(log.facts, log)
    recovery = await recover(log.facts[:stop], RestartPolicy.RESUME)
    check_recovery(recovery, RestartPolicy.RESUME)
    lead = recovery.after.coordinator_chat()
    assert lead is not None
    first, second = recovery.after.chats[lead].turns
    assert first.state is TurnState.ERROR
    assert first.error is not None
    assert first.error.error_type == INTERRUPTED
    assert second.state is TurnState.COMPLETE
    assert second.message == first.message, "the turn runs again from the same message"
    # The model does not see the interrupted attempt; its tool calls are told apart.
    assert conversation(recovery.after.chats[lead])[0] == ("user", second.message.text)
    assert interrupted_turns(recovery.after.chats[lead]) == 1
    calls = [
        p.tool_call.tool_call_id
        for p in second.response_parts
        if isinstance(p, ToolCallResponsePart)
    ]
    assert calls
    assert all(call.endswith("-a1") for call in calls)


async def test_under_fail_a_cut_off_coordinator_fails_the_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run(RestartPolicy.FAIL)
    stop = _stop_mid_stream(log.facts, log)
    recovery = await recover(log.facts[:stop], RestartPolicy.FAIL)
    check_recovery(recovery, RestartPolicy.FAIL)
    assert recovery.outcome.status is RunStatus.FAILED
    assert "interrupted" in recovery.outcome.error


def _stop_with_a_worker_mid_turn(log: BatchLog) -> tuple[int, str]:
    """A boundary where a researcher has thought but not yet called a tool (cut off)."""
    facts = log.facts
    session = facts[0].session
    for boundary in log.boundaries:
        state = TeamState.fold(session, facts[:boundary])
        for chat, member in state.members.items():
            turn = state.chats[chat].active_turn
            if (
                member.agent == "researcher"
                and turn is not None
                and resume_point(state, chat) is None
                and state.tasks[member.task].requested_by == state.coordinator_chat()
            ):
                return boundary, chat
    raise AssertionError("no researcher was ever cut off")


async def test_under_resume_a_cut_off_worker_runs_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    stop, worker = _stop_with_a_worker_mid_turn(log)
    recovery = await recover(log.facts[:stop], RestartPolicy.RESUME)
    check_recovery(recovery, RestartPolicy.RESUME)
    turns = recovery.after.chats[worker].turns
    assert [is_interrupted(t) for t in turns] == [True, False]
    task = recovery.after.tasks[recovery.after.members[worker].task]
    assert task.status is TaskStatus.COMPLETED


async def test_under_fail_a_cut_off_worker_is_reported_failed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run(RestartPolicy.FAIL)
    stop, worker = _stop_with_a_worker_mid_turn(log)
    recovery = await recover(log.facts[:stop], RestartPolicy.FAIL)
    check_recovery(recovery, RestartPolicy.FAIL)
    (turn,) = recovery.after.chats[worker].turns
    assert is_interrupted(turn)
    task = recovery.after.tasks[recovery.after.members[worker].task]
    assert task.status is TaskStatus.FAILED
    assert "interrupted" in task.summary
    # The delegating coordinator got a worker notification and went on to the end.
    assert recovery.outcome.status is RunStatus.COMPLETED
    lead = recovery.after.coordinator_chat()
    assert lead is not None
    notes = [
        p.meta
        for t in recovery.after.chats[lead].turns
        for p in t.response_parts
        if isinstance(p, SystemNotificationResponsePart)
    ]
    assert any(n and n["workerNotification"]["task"] == task.task for n in notes)


async def test_a_pending_approval_survives_and_is_decided_after_the_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    facts = log.facts
    requested = next(i for i, f in enumerate(facts) if isinstance(f.action, ApprovalRequested))
    recovery = await recover(facts[: requested + 1], RestartPolicy.RESUME)
    check_recovery(recovery, RestartPolicy.RESUME)
    approval = facts[requested].action
    assert isinstance(approval, ApprovalRequested)
    record = recovery.after.approvals[approval.approval]
    assert record.decision is ApprovalDecision.APPROVED
    # The same approval, not a second one: the tool call it gates ran once.
    gated = [
        a
        for a in recovery.after.approvals.values()
        if a.request.tool_call_id == approval.tool_call_id
    ]
    assert gated == [record]


async def test_an_approval_can_be_decided_as_soon_as_resume_reports_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    facts = log.facts
    requested = next(i for i, f in enumerate(facts) if isinstance(f.action, ApprovalRequested))
    prefix = facts[: requested + 1]
    runtime = TeamRuntime(
        team(),
        backends=ScriptedBackend,
        factlog=BatchLog(prefix),
        ids=Ids(deterministic=True, restart=1),
        clock=lambda: LATER,
        state=TeamState.fold(prefix[0].session, prefix),
    )
    approval = prefix[-1].action
    assert isinstance(approval, ApprovalRequested)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.resume)
        # Before the worker's turn has been taken up again: the decision waits for it.
        await runtime.resolve_approval(approval.approval, approved=False)
        nursery.cancel_scope.cancel()
    assert runtime.state.approvals[approval.approval].decision is ApprovalDecision.DENIED


async def test_resume_refuses_a_team_file_that_no_longer_fits_before_writing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    prefix = next(  # the first stop after the editor was started
        log.facts[:end]
        for end in log.boundaries
        if any(
            isinstance(f.action, MemberJoined) and f.action.agent == "editor"
            for f in log.facts[:end]
        )
    )
    changed = parse_team(
        RESTART_MIX.replace("editor", "reviser").replace(
            'coordinator = "lead"', 'coordinator = "planner"'
        ),
        file="changed.toml",
    )
    state = TeamState.fold(prefix[0].session, prefix)
    assert "editor" in {m.agent for m in state.members.values()} | {
        t.agent for t in state.tasks.values()
    }, "the stop must come after the editor was started for this test to mean anything"
    written = BatchLog(prefix)
    runtime = TeamRuntime(changed, backends=ScriptedBackend, factlog=written, state=state)
    with pytest.raises(RunError) as caught:
        await runtime.resume()
    assert str(caught.value) == (
        f"{state.session_uri} cannot be resumed with changed.toml: it has no agent 'editor'; "
        "its coordinator is 'planner', the run's was 'lead' (resume with the team file the "
        "run started with: leave out --team)"
    )
    assert written.facts == list(prefix)  # nothing was written


async def test_resume_refuses_a_finished_run(autojump_clock: trio.testing.MockClock) -> None:
    log = await full_run()
    facts = log.facts
    runtime = TeamRuntime(
        team(),
        backends=ScriptedBackend,
        factlog=BatchLog(facts),
        state=TeamState.fold(facts[0].session, facts),
    )
    with pytest.raises(RunError, match="already completed"):
        await runtime.resume()
    with pytest.raises(ValueError, match="no unfinished run"):
        plan_recovery(runtime.state, RestartPolicy.RESUME, now=LATER)


async def test_a_stop_during_a_resumed_run_is_recovered_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = await full_run()
    stop, _ = _stop_with_a_worker_mid_turn(log)
    first = await recover(log.facts[:stop], RestartPolicy.RESUME)
    # Stop the resumed run a few batches after its recovery batch, and recover again.
    later = first.facts[: first.boundaries[4]]
    second = await recover(later, RestartPolicy.RESUME, restart=2)
    assert second.after.run is not None
    assert second.after.run.restarts == 2
    assert second.outcome.status is RunStatus.COMPLETED
    assert build_graph(second.facts).check() == []
    # Each process numbers its ids apart: no turn id is used twice in a chat.
    started = [
        (f.channel, f.action.turn_id)
        for f in second.facts
        if isinstance(f.action, ChatTurnStartedAction)
    ]
    assert len(started) == len(set(started))
    started_now = [
        f.action.turn_id
        for f in second.facts[len(later) :]
        if isinstance(f.action, ChatTurnStartedAction)
    ]
    assert started_now
    assert all(turn.startswith("turn-r2-") for turn in started_now)


def test_tool_calls_record_the_round_that_asked_for_them() -> None:
    context = RoundContext(chat="ahp-chat:/00000000-aaaa", agent="a", task="t", round_index=2)
    assert tool_call_id(context, 0, 1) == "00000000-t0-r2-c1"
    retried = attrs.evolve(context, attempt=1)
    assert tool_call_id(retried, 0, 1) == "00000000-t0-r2-c1-a1"


# ── the same stops, through a real journal on each database ─────────────────


@pytest.fixture
def fast_clock() -> trio.testing.MockClock:
    """Virtual time 20 times real time: the scripted agents' sleeps pass quickly, while the
    journal's writer thread, which an autojump clock would take for idleness (and jump to
    the next deadline), works in real time."""
    return trio.testing.MockClock(rate=20)


async def recover_from_journal(
    db: Path | str, log: BatchLog, stop: int, policy: RestartPolicy
) -> Recovery:
    """Write the run's batches up to ``stop`` into the journal ``db`` names (with a snapshot
    every few facts), open the session from it, resume the run onto it, and read it back."""
    prefix = log.facts[:stop]
    session = prefix[0].session
    journal: Journal = open_journal(db, snapshot_every=5, drain_limit=3600.0)
    async with trio.open_nursery() as services:
        await services.start(journal.serve)
        state = TeamState(session)
        start = 0
        for end in (boundary for boundary in log.boundaries if boundary <= stop):
            batch = prefix[start:end]
            ticket = journal.submit(batch)
            await ticket.wait()
            assert ticket.error is None
            for fact in batch:
                state.apply(fact)
            journal.committed(state)
            start = end
        opened = await trio.to_thread.run_sync(journal.reader.open, session)
        assert opened.last_sequence == stop
        assert opened.chats == state.chats, "the journal opens the state the stop left"
        assert opened.tasks == state.tasks
        assert opened.approvals == state.approvals
        runtime = TeamRuntime(
            team(policy),
            backends=ScriptedBackend,
            factlog=journal,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: LATER,
            state=opened,
        )
        outcome = await drive(runtime, resume=True)
        services.cancel_scope.cancel()
    assert journal.statistics().snapshots > 0
    facts = await trio.to_thread.run_sync(open_reader(db).facts, session)
    return Recovery(TeamState.fold(session, prefix), facts, outcome, runtime.state, [])


@pytest.mark.parametrize("policy", list(RestartPolicy))
@pytest.mark.parametrize("where", ["coordinator mid-stream", "worker mid-turn"])
async def test_a_stop_is_recovered_from_the_journal(
    journal_db: Path | str, where: str, policy: RestartPolicy, fast_clock: trio.testing.MockClock
) -> None:
    """As the memory-log tests above: a cut-off coordinator runs again (``resume``) or fails
    the run (``fail``); a cut-off worker runs again, or its task fails and the run goes on."""
    log = await full_run(policy)
    if where == "coordinator mid-stream":
        stop = _stop_mid_stream(log.facts, log)
        recovery = await recover_from_journal(journal_db, log, stop, policy)
        check_recovery(recovery, policy)
        failed = policy is RestartPolicy.FAIL
        assert (recovery.outcome.status is RunStatus.FAILED) is failed
    else:
        stop, worker = _stop_with_a_worker_mid_turn(log)
        recovery = await recover_from_journal(journal_db, log, stop, policy)
        check_recovery(recovery, policy)
        assert recovery.outcome.status is RunStatus.COMPLETED
        task = recovery.after.tasks[recovery.after.members[worker].task]
        expected = TaskStatus.FAILED if policy is RestartPolicy.FAIL else TaskStatus.COMPLETED
        assert task.status is expected


# ── forked chats and side chats ─────────────────────────────────────────────

SIDE_TEAM = side_team('{ say = "first answer" }', '{ sleep = 100 }, { say = "side answer" }')


async def test_a_side_chats_turn_is_cut_off_on_its_own(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """A stop while a side chat's turn streams: the recovery ends that turn interrupted,
    and only it (not its source, not a fork whose turn had ended); the side chat and the
    fork are the session's forked chats, its coordinator is not."""
    log = MemoryFactLog()
    runtime = TeamRuntime(
        parse_team(SIDE_TEAM, file="side.toml"),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True),
        clock=lambda: "2026-11-22T00:00:00.000Z",
        conversation=True,
    )
    nursery.start_soon(runtime.run, "What is up?")
    while not any(isinstance(f.action, ChatTurnCompleteAction) for f in log.facts):  # noqa: ASYNC110
        await trio.sleep(0.01)
    lead = runtime.state.coordinator_chat()
    assert lead is not None
    turn = runtime.state.chats[lead].turns[0].id
    await runtime.fork_chat("ahp-chat:/fork", source=lead, turn_id=turn)
    await runtime.fork_chat("ahp-chat:/side", source=lead, turn_id=turn, side=True)
    await runtime.prompt_chat("ahp-chat:/side", "explain")
    while runtime.state.chats["ahp-chat:/side"].active_turn is None:  # noqa: ASYNC110
        await trio.sleep(0.01)
    state_facts = list(log.facts)
    state = TeamState.fold(runtime.session, state_facts)
    runtime.cancel()
    assert forked_chats(state) == ("ahp-chat:/fork", "ahp-chat:/side")
    assert not is_forked_chat(state, lead)
    active = state.chats["ahp-chat:/side"].active_turn
    assert active is not None
    plan = plan_recovery(state, RestartPolicy.RESUME, now="2026-11-22T00:00:01.000Z")
    assert plan.interrupted == ("ahp-chat:/side",)
    assert not plan.coordinator_cut_off
    [(_, head), *rest] = plan.actions
    assert isinstance(head, RunResumed)
    assert head.interrupted == ("ahp-chat:/side",)
    [(channel, error)] = rest
    assert channel == "ahp-chat:/side"
    assert isinstance(error, ChatErrorAction)
    assert error.turn_id == active.id
    assert error.error.error_type == INTERRUPTED
    # A forked session's coordinator has a fork origin naming the source session's chat.
    origin = ForkChatOrigin(chat="ahp-chat:/elsewhere", turn_id=turn)
    copied = [
        attrs.evolve(
            f, action=attrs.evolve(f.action, summary=attrs.evolve(f.action.summary, origin=origin))
        )
        if isinstance(f.action, SessionChatAddedAction) and f.action.summary.resource == lead
        else f
        for f in log.facts[: len(state_facts)]
    ]
    elsewhere = TeamState.fold(runtime.session, copied)
    assert isinstance(elsewhere.chats[lead].origin, ForkChatOrigin)
    assert not is_forked_chat(elsewhere, lead)
    assert forked_chats(elsewhere) == ("ahp-chat:/fork", "ahp-chat:/side")
