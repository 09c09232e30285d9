"""A delegation graph's log written fact by fact, for the graph's tests."""

from __future__ import annotations

from orchestrator.ahp.actions import (
    ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction,
    ChatToolCallStartAction,
    SessionChatAddedAction,
)
from orchestrator.ahp.state import (
    ChatInteractivity,
    ChatOrigin,
    ChatSummary,
    SessionStatus,
    ToolCallResult,
    ToolChatOrigin,
    ToolResultContent,
    ToolResultSubagentContent,
    ToolResultTextContent,
    UserChatOrigin,
)
from orchestrator.core import (
    Action,
    DelegationGraph,
    Fact,
    MemberJoined,
    RunStarted,
    TaskCreated,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    build_graph,
)

SESSION = "ahp-session:/0b7c1a52-0000-4000-8000-000000000000"


COORDINATOR = "ahp-chat:/coordinator"


def chat(name: str) -> str:
    """A chat URI."""
    return f"ahp-chat:/{name}"


class FactLog:
    """Builds a fact log by hand: consecutive sequences, one session, the spawn batch shape."""

    def __init__(self, session: str = SESSION) -> None:
        self.session = session
        self.facts: list[Fact] = []
        self._tasks = 0

    def add(self, channel: str, action: Action) -> Fact:
        fact = Fact(
            sequence=len(self.facts) + 1,
            session=self.session,
            channel=channel,
            at=f"2026-11-22T21:00:{len(self.facts) % 60:02d}.000Z",
            action=action,
        )
        self.facts.append(fact)
        return fact

    def chat_added(
        self,
        uri: str,
        *,
        origin: ChatOrigin | None,
        title: str = "",
        agent: str = "",
        task: str = "",
    ) -> None:
        summary = ChatSummary(
            resource=uri,
            title=title or uri.rsplit("/", 1)[-1],
            status=SessionStatus.IDLE,
            modified_at="2026-11-22T21:00:00.000Z",
            origin=origin,
            interactivity=None
            if isinstance(origin, UserChatOrigin)
            else ChatInteractivity.READ_ONLY,
        )
        self.add(self.session, SessionChatAddedAction(summary=summary))
        if agent:
            role = "coordinator" if isinstance(origin, UserChatOrigin | None) else "worker"
            self.add(self.session, MemberJoined(chat=uri, agent=agent, role=role, task=task))

    def coordinator(self, uri: str = COORDINATOR, *, agent: str = "lead") -> None:
        """The run starts and its coordinator chat (origin user) joins on the root task."""
        self.add(
            self.session,
            RunStarted(
                run="run-1",
                team="demo",
                topology="coordinator",
                parallel_budget=2,
                coordinator=agent,
                prompt="Write a report",
                task=ROOT_TASK,
            ),
        )
        self.chat_added(uri, origin=UserChatOrigin(), agent=agent, task=ROOT_TASK)

    def tool_call(
        self, uri: str, call: str, *, tool: str = "delegate", turn: str = "turn-1"
    ) -> None:
        self.add(
            uri,
            ChatToolCallStartAction(
                turn_id=turn, tool_call_id=call, tool_name=tool, display_name=tool.title()
            ),
        )

    def create_task(
        self, parent: str, call: str, *, agent: str, queued: bool = False, parent_task: str = ""
    ) -> str:
        self._tasks += 1
        task = f"task-{self._tasks}"
        self.add(
            self.session,
            TaskCreated(
                task=task,
                title=f"work for {agent}",
                agent=agent,
                requested_by=parent,
                tool_call_id=call,
                parent_task=parent_task or ROOT_TASK,
                status=TaskStatus.QUEUED if queued else TaskStatus.RUNNING,
            ),
        )
        return task

    def subagent_content(self, parent: str, call: str, worker: str, *, agent: str) -> None:
        content = (
            ToolResultSubagentContent(resource=worker, title=f"{agent} worker", agent_name=agent),
        )
        self.add(
            parent,
            ChatToolCallContentChangedAction(turn_id="turn-1", tool_call_id=call, content=content),
        )

    def start_worker(self, parent: str, call: str, worker: str, task: str, *, agent: str) -> None:
        """The spawn's atomic append: chatAdded, memberJoined, subagent content, taskStarted."""
        self.chat_added(
            worker, origin=ToolChatOrigin(chat=parent, tool_call_id=call), agent=agent, task=task
        )
        self.subagent_content(parent, call, worker, agent=agent)
        self.add(self.session, TaskStarted(task=task, chat=worker))

    def spawn(
        self,
        parent: str,
        call: str,
        worker: str,
        *,
        agent: str = "researcher",
        parent_task: str = "",
    ) -> str:
        """A delegate tool call of ``parent`` that starts ``worker`` at once; returns the task."""
        self.tool_call(parent, call)
        task = self.create_task(parent, call, agent=agent, parent_task=parent_task)
        self.start_worker(parent, call, worker, task, agent=agent)
        return task

    def finish(
        self, parent: str, call: str, worker: str, task: str, *, agent: str = "researcher"
    ) -> None:
        """The worker's task ends; the parent's tool call completes with the subagent content."""
        self.add(
            self.session,
            TaskFinished(
                task=task, status=TaskStatus.COMPLETED, summary="done", duration_ms=5, chat=worker
            ),
        )
        content: tuple[ToolResultContent, ...] = (
            ToolResultTextContent(text="done"),
            ToolResultSubagentContent(resource=worker, title=f"{agent} worker", agent_name=agent),
        )
        self.add(
            parent,
            ChatToolCallCompleteAction(
                turn_id="turn-1",
                tool_call_id=call,
                result=ToolCallResult(
                    success=True, past_tense_message="Delegated", content=content
                ),
            ),
        )

    def graph(self) -> DelegationGraph:
        return build_graph(self.facts)


ROOT_TASK = "task-0"
