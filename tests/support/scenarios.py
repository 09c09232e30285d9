"""Team runs written fact by fact (fixed scenarios) or drawn by hypothesis."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatDeltaAction,
    ChatErrorAction,
    ChatResponsePartAction,
    ChatToolCallApprovedAction,
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallDeltaAction,
    ChatToolCallDeniedAction,
    ChatToolCallReadyAction,
    ChatToolCallStartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatInteractivity,
    ChatOrigin,
    ChatSummary,
    ErrorInfo,
    MarkdownResponsePart,
    Message,
    MessageKind,
    MessageOrigin,
    SessionStatus,
    SystemNotificationResponsePart,
    ToolCallCancellationReason,
    ToolCallConfirmationReason,
    ToolCallResult,
    ToolChatOrigin,
    ToolResultSubagentContent,
    ToolResultTextContent,
    UserChatOrigin,
)
from orchestrator.core import (
    USER,
    Action,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Fact,
    HandoffRecorded,
    MemberJoined,
    RunFinished,
    RunStarted,
    RunStatus,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    output_retry,
)

SESSION = "ahp-session:/5d0f3e2a-0000-4000-8000-000000000001"


LEAD = "ahp-chat:/lead"


@st.composite
def scenarios(draw: st.DrawFn) -> list[Fact]:
    """A valid run: n workers under a budget (queued beyond it), each maybe asking an
    approval, each ending completed, failed or killed, the lead maybe handing off; the run
    ends completed, failed or cancelled, or is cut short."""
    log = Log()
    budget = draw(st.integers(1, 3))
    log.run_started(budget=budget)
    log.turn(LEAD)
    workers = [f"ahp-chat:/worker-{i}" for i in range(draw(st.integers(0, 4)))]
    agents = [draw(st.sampled_from(["researcher", "writer"])) for _ in workers]
    delegations = []
    for i, agent in enumerate(agents):
        call, task = log.delegate(LEAD, agent, queued=i >= budget)
        if i < budget:
            log.start_worker(LEAD, call, task, workers[i], agent)
        delegations.append((call, task))
    started = min(budget, len(workers))
    for i, worker in enumerate(workers):
        call, task = delegations[i]
        log.turn(worker)
        if draw(st.booleans()):
            routed = draw(st.sampled_from([USER, LEAD]))
            approval_call, _ = log.approval(
                worker, "web_search", routed_to=routed, approved=draw(st.booleans())
            )
            log.complete_call(worker, approval_call)
        outcome = draw(st.sampled_from(list(TaskStatus)[2:]))
        # A worker with an output_schema: maybe asked again, its answer's value reported.
        structured = draw(st.booleans())
        if structured and draw(st.booleans()):
            log.ask_again(worker)
        if outcome is TaskStatus.COMPLETED:
            log.end_turn(worker)
        elif outcome is TaskStatus.FAILED:
            log.fail_turn(worker)
        else:
            log.cancel_turn(worker)
        value = {"score": i} if structured and outcome is TaskStatus.COMPLETED else None
        log.finish_worker(LEAD, call, task, worker, outcome, value=value)
        if started < len(workers):
            next_call, next_task = delegations[started]
            log.start_worker(LEAD, next_call, next_task, workers[started], agents[started])
            started += 1
    if draw(st.booleans()):
        call = log.tool_call(LEAD, "handoff")
        log._chat_added(SPECIALIST, "legal", ToolChatOrigin(chat=LEAD, tool_call_id=call))
        log.add(
            SESSION,
            MemberJoined(chat=SPECIALIST, agent="legal", role="specialist", task=ROOT_TASK),
        )
        log.handoff(ROOT_TASK, LEAD, SPECIALIST, "legal", call, "review")
        log.turn(SPECIALIST)
        log.end_turn(SPECIALIST)
        log.handoff(ROOT_TASK, SPECIALIST, LEAD, "lead", call, "legal completed")
        log.complete_call(LEAD, call)
    log.end_turn(LEAD)
    status = draw(st.sampled_from(list(RunStatus)))
    approved = status is RunStatus.COMPLETED and draw(st.booleans())
    log.run_finished(status, value={"approved": True} if approved else None)
    return log.facts[: draw(st.integers(0, len(log.facts)))]


ROOT_TASK = "task-0"


SPECIALIST = "ahp-chat:/specialist"


class Log:
    """A hand-built fact log of one run, recorded in the runtime's batch order."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self._counters: dict[str, int] = {}
        self.active_turn: dict[str, str] = {}

    def _next(self, kind: str) -> str:
        self._counters[kind] = self._counters.get(kind, 0) + 1
        return f"{kind}-{self._counters[kind]}"

    def add(self, channel: str, action: Action) -> Fact:
        n = len(self.facts) + 1
        fact = Fact(
            sequence=n,
            session=SESSION,
            channel=channel,
            at=f"2026-11-22T21:{n // 60:02d}:{n % 60:02d}.000Z",
            action=action,
        )
        self.facts.append(fact)
        return fact

    def at(self, fact_type: str, nth: int = 1) -> Fact:
        """The ``nth`` fact of ``fact_type`` (from 1)."""
        return [f for f in self.facts if f.type == fact_type][nth - 1]

    # ── the run and its chats ──────────────────────────────────────────────

    def _chat_added(self, chat: str, agent: str, origin: ChatOrigin) -> None:
        summary = ChatSummary(
            resource=chat,
            title=f"{agent}: work",
            status=SessionStatus.IDLE,
            modified_at="2026-11-22T21:00:00.000Z",
            origin=origin,
            interactivity=ChatInteractivity.FULL
            if isinstance(origin, UserChatOrigin)
            else ChatInteractivity.READ_ONLY,
        )
        self.add(SESSION, SessionChatAddedAction(summary=summary))

    def run_started(self, *, topology: str = "parallel_workers", budget: int = 2) -> None:
        self.add(
            SESSION,
            RunStarted(
                run=RUN,
                team=TEAM,
                topology=topology,
                parallel_budget=budget,
                coordinator="lead",
                prompt="Write the launch report",
                task=ROOT_TASK,
            ),
        )
        self._chat_added(LEAD, "lead", UserChatOrigin())
        self.add(SESSION, MemberJoined(chat=LEAD, agent="lead", role="coordinator", task=ROOT_TASK))

    def run_finished(self, status: RunStatus = RunStatus.COMPLETED, value: Any = None) -> None:
        result = "the report" if status is RunStatus.COMPLETED else ""
        error = "" if status is RunStatus.COMPLETED else f"the run {status}"
        finished = RunFinished(run=RUN, status=status, result=result, error=error, value=value)
        self.add(SESSION, finished)

    # ── turns and tool calls ───────────────────────────────────────────────

    def turn(self, chat: str, text: str = "go") -> str:
        turn = self._next("turn")
        self.active_turn[chat] = turn
        message = Message(text=text, origin=MessageOrigin(kind=MessageKind.USER))
        self.add(
            chat,
            ChatTurnStartedAction(
                turn_id=turn, started_at="2026-11-22T21:00:00.000Z", message=message
            ),
        )
        return turn

    def say(self, chat: str, text: str) -> None:
        turn = self.active_turn[chat]
        part = self._next("part")
        self.add(
            chat,
            ChatResponsePartAction(turn_id=turn, part=MarkdownResponsePart(id=part, content="")),
        )
        for word in text.split():
            self.add(chat, ChatDeltaAction(turn_id=turn, part_id=part, content=word + " "))

    def ask_again(self, chat: str) -> None:
        """The answer did not fit the agent's output_schema: the model is asked again."""
        channel, action = output_retry(
            chat, self.active_turn[chat], "Answer again", path="$.score", problem="not a number"
        )
        self.add(channel, action)

    def end_turn(self, chat: str) -> None:
        self.add(chat, ChatTurnCompleteAction(turn_id=self.active_turn.pop(chat), duration=5))

    def fail_turn(self, chat: str) -> None:
        error = ErrorInfo(error_type="BackendError", message="model unavailable")
        turn = self.active_turn.pop(chat)
        self.add(chat, ChatErrorAction(turn_id=turn, duration=5, error=error))

    def cancel_turn(self, chat: str) -> None:
        self.add(chat, ChatTurnCancelledAction(turn_id=self.active_turn.pop(chat), duration=5))

    def tool_call(self, chat: str, tool: str, *, needs_approval: bool = False) -> str:
        turn = self.active_turn[chat]
        call = self._next("call")
        self.add(
            chat,
            ChatToolCallStartAction(
                turn_id=turn, tool_call_id=call, tool_name=tool, display_name=tool
            ),
        )
        self.add(chat, ChatToolCallDeltaAction(turn_id=turn, tool_call_id=call, content="{}"))
        self.add(
            chat,
            ChatToolCallReadyAction(
                turn_id=turn,
                tool_call_id=call,
                invocation_message=f"Running {tool}",
                tool_input="{}",
                confirmed=None if needs_approval else ToolCallConfirmationReason.NOT_NEEDED,
            ),
        )
        return call

    def complete_call(self, chat: str, call: str, *, success: bool = True) -> None:
        result = ToolCallResult(
            success=success,
            past_tense_message="Ran it",
            content=(ToolResultTextContent(text="done"),),
        )
        self.add(
            chat,
            ChatToolCallCompleteAction(
                turn_id=self.active_turn[chat], tool_call_id=call, result=result
            ),
        )

    # ── team actions ───────────────────────────────────────────────────────

    def delegate(
        self, parent: str, agent: str, title: str | None = None, *, queued: bool = False
    ) -> tuple[str, str]:
        """A delegate call of ``parent``; returns (tool call id, task id)."""
        call = self.tool_call(parent, "delegate")
        task = f"task-{len([f for f in self.facts if f.type == 'team/taskCreated']) + 1}"
        self.add(
            SESSION,
            TaskCreated(
                task=task,
                title=title or f"{agent} work",
                agent=agent,
                requested_by=parent,
                tool_call_id=call,
                parent_task=ROOT_TASK,
                status=TaskStatus.QUEUED if queued else TaskStatus.RUNNING,
            ),
        )
        return call, task

    def start_worker(self, parent: str, call: str, task: str, worker: str, agent: str) -> None:
        """The spawn batch: chatAdded, memberJoined, subagent content, taskStarted."""
        self._chat_added(worker, agent, ToolChatOrigin(chat=parent, tool_call_id=call))
        self.add(SESSION, MemberJoined(chat=worker, agent=agent, role="worker", task=task))
        subagent = ToolResultSubagentContent(resource=worker, title="work", agent_name=agent)
        self.add(
            parent,
            ChatToolCallContentChangedAction(
                turn_id=self.active_turn[parent], tool_call_id=call, content=(subagent,)
            ),
        )
        self.add(SESSION, TaskStarted(task=task, chat=worker))

    def finish_worker(
        self,
        parent: str,
        call: str,
        task: str,
        worker: str | None,
        status: TaskStatus = TaskStatus.COMPLETED,
        value: Any = None,
    ) -> None:
        """The report batch: taskFinished (with a structured answer's ``value``), the
        notification part, the delegate call's result."""
        self.add(
            SESSION,
            TaskFinished(
                task=task,
                status=status,
                summary=f"{status}: findings",
                duration_ms=1200,
                input_tokens=300,
                output_tokens=40,
                chat=worker,
                value=value,
            ),
        )
        note = SystemNotificationResponsePart(content=f"worker {status}")
        self.add(parent, ChatResponsePartAction(turn_id=self.active_turn[parent], part=note))
        self.complete_call(parent, call, success=status is TaskStatus.COMPLETED)

    def approval(
        self,
        chat: str,
        tool: str,
        *,
        routed_to: str = USER,
        approved: bool = True,
        principal: str | None = None,
    ) -> tuple[str, str]:
        """A tool call needing confirmation, routed, decided and applied; (call, approval)."""
        call = self.tool_call(chat, tool, needs_approval=True)
        approval = self._next("approval")
        turn = self.active_turn[chat]
        self.add(
            SESSION,
            ApprovalRequested(
                approval=approval,
                chat=chat,
                turn_id=turn,
                tool_call_id=call,
                tool_name=tool,
                requested_by="researcher",
                routed_to=routed_to,
                policy_scope="researcher.needs_approval",
                summary='query="launch"',
            ),
        )
        confirm: Action
        if approved:
            confirm = ChatToolCallApprovedAction(
                turn_id=turn, tool_call_id=call, confirmed=ToolCallConfirmationReason.USER_ACTION
            )
        else:
            confirm = ChatToolCallDeniedAction(
                turn_id=turn, tool_call_id=call, reason=ToolCallCancellationReason.DENIED
            )
        self.add(chat, confirm)
        decider = routed_to if routed_to != USER else USER
        self.add(
            SESSION,
            ApprovalResolved(
                approval=approval,
                decision=ApprovalDecision.APPROVED if approved else ApprovalDecision.DENIED,
                resolved_by=decider,
                principal=principal,
            ),
        )
        return call, approval

    def handoff(
        self, task: str, from_chat: str, to_chat: str, to_agent: str, call: str, reason: str
    ) -> None:
        self.add(
            SESSION,
            HandoffRecorded(
                task=task,
                from_chat=from_chat,
                to_chat=to_chat,
                to_agent=to_agent,
                reason=reason,
                resume_target="lead",
                tool_call_id=call,
            ),
        )


def two_workers_with_approval() -> Log:
    """Lead delegates to a researcher and a writer in parallel; the researcher's search
    needs the user's approval; both report; the lead answers."""
    log = Log()
    log.run_started(budget=2)
    log.turn(LEAD, "Write the launch report")
    call1, task1 = log.delegate(LEAD, "researcher")
    log.start_worker(LEAD, call1, task1, W1, "researcher")
    call2, task2 = log.delegate(LEAD, "writer")
    log.start_worker(LEAD, call2, task2, W2, "writer")
    log.turn(W1)
    log.turn(W2)
    search, _ = log.approval(W1, "web_search")
    log.complete_call(W1, search)
    log.say(W1, "three competitors found")
    log.end_turn(W1)
    log.finish_worker(LEAD, call1, task1, W1)
    log.say(W2, "draft written")
    log.end_turn(W2)
    log.finish_worker(LEAD, call2, task2, W2)
    log.say(LEAD, "here is the report")
    log.end_turn(LEAD)
    log.run_finished()
    return log


def queued_task() -> Log:
    """Budget 1: the second delegation waits in the queue until the first worker reports."""
    log = Log()
    log.run_started(budget=1)
    log.turn(LEAD)
    call1, task1 = log.delegate(LEAD, "researcher")
    log.start_worker(LEAD, call1, task1, W1, "researcher")
    call2, task2 = log.delegate(LEAD, "writer", queued=True)
    log.turn(W1)
    log.end_turn(W1)
    log.finish_worker(LEAD, call1, task1, W1)
    log.start_worker(LEAD, call2, task2, W2, "writer")
    log.turn(W2)
    log.end_turn(W2)
    log.finish_worker(LEAD, call2, task2, W2)
    log.end_turn(LEAD)
    log.run_finished()
    return log


def failed_worker() -> Log:
    """The worker's turn errors, it reports failed, and the coordinator's run fails too."""
    log = Log()
    log.run_started(budget=2)
    log.turn(LEAD)
    call, task = log.delegate(LEAD, "researcher")
    log.start_worker(LEAD, call, task, W1, "researcher")
    log.turn(W1)
    log.fail_turn(W1)
    log.finish_worker(LEAD, call, task, W1, TaskStatus.FAILED)
    log.fail_turn(LEAD)
    log.run_finished(RunStatus.FAILED)
    return log


def handoff_and_back() -> Log:
    """The lead hands its task to a specialist, which works and hands it back."""
    log = Log()
    log.run_started(topology="specialist_handoff", budget=1)
    log.turn(LEAD)
    call = log.tool_call(LEAD, "handoff")
    log._chat_added(SPECIALIST, "legal", ToolChatOrigin(chat=LEAD, tool_call_id=call))
    log.add(
        SESSION, MemberJoined(chat=SPECIALIST, agent="legal", role="specialist", task=ROOT_TASK)
    )
    log.handoff(ROOT_TASK, LEAD, SPECIALIST, "legal", call, "needs a legal review")
    log.turn(SPECIALIST)
    log.end_turn(SPECIALIST)
    log.handoff(ROOT_TASK, SPECIALIST, LEAD, "lead", call, "legal completed")
    log.complete_call(LEAD, call)
    log.end_turn(LEAD)
    log.run_finished()
    return log


def killed_while_queued() -> Log:
    """A queued task is killed before it started; then the run is cancelled."""
    log = Log()
    log.run_started(budget=1)
    log.turn(LEAD)
    call1, task1 = log.delegate(LEAD, "researcher")
    log.start_worker(LEAD, call1, task1, W1, "researcher")
    call2, task2 = log.delegate(LEAD, "writer", queued=True)
    log.turn(W1)
    log.finish_worker(LEAD, call2, task2, None, TaskStatus.KILLED)
    log.cancel_turn(W1)
    log.finish_worker(LEAD, call1, task1, W1, TaskStatus.KILLED)
    log.cancel_turn(LEAD)
    log.run_finished(RunStatus.CANCELLED)
    return log


TEAM = "delivery-team"


RUN = "run-1"


W1 = "ahp-chat:/w1"


W2 = "ahp-chat:/w2"


SCENARIOS = {
    "two_workers_with_approval": two_workers_with_approval,
    "queued_task": queued_task,
    "failed_worker": failed_worker,
    "handoff_and_back": handoff_and_back,
    "killed_while_queued": killed_while_queued,
}
