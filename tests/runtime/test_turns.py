"""The turn loop: a chat's turns, their model rounds, steering and queued messages."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

import pytest
import trio
import trio.testing

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatPendingMessageRemovedAction,
    ChatPendingMessageSetAction,
    ChatResponsePartAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatTurnStartedAction,
)
from orchestrator.ahp.state import MarkdownResponsePart, SystemNotificationResponsePart
from orchestrator.base import RunError
from orchestrator.core import (
    OUTPUT_RETRY_META,
    PRINCIPAL_META,
    STEERING_META,
    USER,
    ApprovalRequested,
    ApprovalResolved,
    Backend,
    ModelEvent,
    RoundContext,
    RunFinished,
    RunStatus,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TeamState,
    TextDelta,
    ToolCallRequest,
    UsageReport,
    task_started,
)
from orchestrator.runtime import (
    Ids,
    RunOutcome,
    TeamRuntime,
)
from orchestrator.runtime.backends import (
    AssistantMessage,
    ScriptedBackend,
    UserMessage,
    transcript,
)
from orchestrator.spec import AgentSpec, parse_team
from tests.support.runtime import Harness, fanout, run_to_end, wait_for
from tests.support.teams import FAILS_FIRST, SLOW_WORKERS, approvals, structured

pytestmark = pytest.mark.usefixtures("every_scenario_is_checked")


class TestSteeringAndQueue:
    async def test_steering_is_consumed_at_the_next_round(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A steering message is recorded, then removed when the chat's next round starts."""
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: task_started(f.action) is not None)
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.steer(coordinator, "focus on security")
        set_fact = h.facts_of(ChatPendingMessageSetAction)[0]
        removed = h.facts_of(ChatPendingMessageRemovedAction)[0]
        assert removed.action.id == set_fact.action.id
        assert removed.sequence > set_fact.sequence
        h.finished()

    async def test_steering_keeps_who_sent_it_in_the_message_and_the_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The principal a steering message came from is in its pending message's ``_meta``
        and in the part the turn takes it in as; a message with none names nobody."""
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: task_started(f.action) is not None)
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.steer(coordinator, "focus on security", principal="alice")
        (set_fact,) = h.facts_of(ChatPendingMessageSetAction)
        assert set_fact.action.message.meta == {PRINCIPAL_META: "alice"}
        (turn,) = h.runtime.state.chats[coordinator].turns
        (note,) = [
            p
            for p in turn.response_parts
            if isinstance(p, SystemNotificationResponsePart) and STEERING_META in (p.meta or {})
        ]
        assert note.meta == {STEERING_META: set_fact.action.id, PRINCIPAL_META: "alice"}
        assert note.content == "focus on security"
        h.finished()

    async def test_steering_text_reaches_the_model(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """The model's next round sees the steering message (not just its removal)."""
        seen: list[tuple[str, ...]] = []

        class Listening:
            async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
                seen.append(tuple(context.steering))
                if context.round_index == 0:
                    await trio.sleep(5)
                    yield ToolCallRequest(tool_call_id="c1", tool_name="lookup", arguments={})
                else:
                    yield TextDelta(text="done")

        team = parse_team(
            '[team]\nname = "t"\ncoordinator = "lead"\n'
            '[agents.lead]\nrole = "coordinator"\ntools = ["lookup"]\n'
            '[[agents.lead.turns]]\nsteps = [ { say = "x" } ]\n',
            file="t.toml",
        )
        h = Harness(team, backends=lambda agent: Listening())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnStartedAction))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.steer(coordinator, "use the staging data")
        assert seen == [(), ("use the staging data",)]

    async def test_a_queued_message_starts_the_next_turn(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: task_started(f.action) is not None)
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.queue(coordinator, "and then?")
        turns = h.facts_of(ChatTurnStartedAction)
        coordinator_turns = [f.action for f in turns if f.channel == coordinator]
        assert len(coordinator_turns) == 2
        queued_id = h.actions(ChatPendingMessageSetAction)[0].id
        assert coordinator_turns[1].queued_message_id == queued_id
        assert coordinator_turns[1].message.text == "and then?"
        assert h.runtime.state.run.result == "second turn"  # type: ignore[union-attr]
        h.finished()

    async def test_steering_a_finished_chat_is_refused(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        await run_to_end(h)
        with pytest.raises(RunError, match="is not running"):
            await h.runtime.steer(h.worker_chats()[0], "late")


def coordinator_turn_ends(h: Harness) -> list[type]:
    chat = h.runtime.state.coordinator_chat()
    ends = (ChatTurnCompleteAction, ChatTurnCancelledAction, ChatErrorAction)
    return [type(f.action) for f in h.facts if f.channel == chat and isinstance(f.action, ends)]


class TestConversation:
    """The daemon's sessions: one run, a coordinator turn per prompt, until closed."""

    async def test_each_queued_prompt_is_a_turn_and_close_ends_the_run(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"), conversation=True)
        outcome: list[RunOutcome] = []
        async with trio.open_nursery() as nursery:

            async def converse() -> None:
                outcome.append(await run_to_end(h))

            nursery.start_soon(converse)
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnCompleteAction))
            await trio.sleep(200)  # idle: the run does not end with the turn
            assert h.runtime.state.run is not None
            assert h.runtime.state.run.status is None
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            message_id = await h.runtime.queue(coordinator, "and then?")
            await wait_for(h, lambda f: len(h.actions(ChatTurnCompleteAction)) == 4)
            h.runtime.close()
        turns = [f.action for f in h.facts_of(ChatTurnStartedAction) if f.channel == coordinator]
        assert [t.message.text for t in turns] == ["Ship it", "and then?"]
        assert turns[1].queued_message_id == message_id
        assert outcome == [
            RunOutcome(session=h.runtime.session, status=RunStatus.COMPLETED, result="second turn")
        ]
        assert isinstance(h.facts[-1].action, RunFinished)
        h.finished()

    async def test_a_failed_turn_ends_only_itself(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(FAILS_FIRST, file="f.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, ChatErrorAction))
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            await h.runtime.queue(coordinator, "try again")
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnCompleteAction))
            h.runtime.close()
        assert coordinator_turn_ends(h) == [ChatErrorAction, ChatTurnCompleteAction]
        assert h.runtime.state.run is not None
        assert (h.runtime.state.run.status, h.runtime.state.run.result) == (
            RunStatus.COMPLETED,
            "back again",
        )
        h.finished()

    async def test_cancel_turn_cancels_the_turn_and_its_workers_not_the_run(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: task_started(f.action) is not None)
            coordinator = h.runtime.state.coordinator_chat()
            assert coordinator is not None
            h.runtime.cancel_turn(coordinator)
            await wait_for(
                h,
                lambda f: (
                    isinstance(f.action, ChatTurnCancelledAction) and f.channel == coordinator
                ),
            )
            with pytest.raises(RunError, match="no running turn"):
                h.runtime.cancel_turn(coordinator)
            await h.runtime.queue(coordinator, "again, smaller")
            await wait_for(
                h,
                lambda f: isinstance(f.action, ChatTurnCompleteAction) and f.channel == coordinator,
            )
            h.runtime.close()
        assert coordinator_turn_ends(h) == [ChatTurnCancelledAction, ChatTurnCompleteAction]
        tasks = h.runtime.state.tasks
        delegated = {task for task, record in tasks.items() if record.requested_by is not None}
        assert {a.status for a in h.actions(TaskFinished) if a.task in delegated} == {
            TaskStatus.KILLED
        }
        # Each prompt is a root task: the cancelled turn's killed, the next one's completed.
        assert [a.status for a in h.actions(TaskFinished) if a.task not in delegated] == [
            TaskStatus.KILLED,
            TaskStatus.COMPLETED,
        ]
        assert h.runtime.state.run is not None
        assert h.runtime.state.run.status is RunStatus.COMPLETED
        h.finished()

    async def test_stop_records_nothing_and_leaves_the_run_to_resume(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        """A stop leaves what a crash would: turns active, no cancel facts, run unfinished;
        a new runtime resumes it (cut-off turns run again) and the conversation goes on."""
        h = Harness(parse_team(SLOW_WORKERS, file="slow.toml"), conversation=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: len(h.actions(TaskStarted)) == 2)
            before = len(h.facts)
            h.runtime.stop()
        assert len(h.facts) == before, "a stop records nothing"
        state = TeamState.fold(h.runtime.session, h.facts)
        assert state.run is not None
        assert state.run.status is None
        coordinator = state.coordinator_chat()
        assert coordinator is not None
        assert state.chats[coordinator].active_turn is not None
        resumed = TeamRuntime(
            parse_team(SLOW_WORKERS, file="slow.toml"),
            backends=ScriptedBackend,
            factlog=h.log,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            state=state,
            conversation=True,
        )
        h.runtime = resumed  # the scenario check compares the live state: the resumed one's
        async with trio.open_nursery() as nursery:
            nursery.start_soon(resumed.resume)
            await wait_for(
                h,
                lambda f: isinstance(f.action, ChatTurnCompleteAction) and f.channel == coordinator,
            )
            resumed.close()
        assert resumed.state.run is not None
        assert resumed.state.run.status is RunStatus.COMPLETED
        assert "finished one" in resumed.state.run.result
        h.finished()

    async def test_an_approval_records_who_decided(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(parse_team(approvals(approver="user"), file="a.toml"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            fact = await wait_for(h, lambda f: isinstance(f.action, ApprovalRequested))
            assert isinstance(fact.action, ApprovalRequested)
            await h.runtime.resolve_approval(fact.action.approval, approved=True, principal="ops")
        resolved = h.actions(ApprovalResolved)[0]
        assert (resolved.resolved_by, resolved.principal) == (USER, "ops")
        h.finished()


class _Answers:
    """A worker's model: its rounds' usage as given; each round but the last asks for a tool
    the worker does not have (the call fails, the next round goes on), the last answers."""

    def __init__(self, *usage: tuple[int, int]) -> None:
        self.usage = usage

    async def stream_round(self, context: RoundContext) -> AsyncGenerator[ModelEvent, None]:
        await trio.lowlevel.checkpoint()
        if context.round_index < len(self.usage) - 1:
            yield ToolCallRequest(
                tool_call_id=f"c{context.round_index}", tool_name="nope", arguments={}
            )
        else:
            yield TextDelta(text="done")
        used = self.usage[context.round_index]
        yield UsageReport(input_tokens=used[0], output_tokens=used[1])


def _workers_answer(*usage: tuple[int, int]) -> Callable[[AgentSpec], Backend]:
    def backends(spec: AgentSpec) -> Backend:
        return _Answers(*usage) if spec.name == "worker" else ScriptedBackend(spec)

    return backends


class TestLastRoundUsage:
    async def test_the_last_rounds_usage_is_written_with_the_turns_end(self) -> None:
        """A round that asks for no tool ends its turn: its chat/usage and the
        chat/turnComplete that follows are one batch; the facts are as they were."""
        h = Harness(fanout(), backends=_workers_answer((3, 4)))
        batches: list[list[tuple[str, str]]] = []
        h.runtime.bus.observe(lambda facts: batches.append([(f.channel, f.type) for f in facts]))
        await run_to_end(h)
        for chat in h.worker_chats():
            assert [f.type for f in h.facts if f.channel == chat] == [
                "chat/turnStarted",
                "chat/responsePart",
                "chat/usage",
                "chat/turnComplete",
            ]
            ended = [b for b in batches if (chat, "chat/turnComplete") in b]
            assert [t for _, t in ended[0]] == ["chat/usage", "chat/turnComplete"]

    async def test_a_round_that_asks_for_tools_writes_its_usage_before_they_run(self) -> None:
        """The first round's usage is a batch of its own, before the tool call completes;
        the last round's (the same totals: chat/usage is idempotent) goes with the turn's
        end, and the turn completes."""
        h = Harness(fanout(), backends=_workers_answer((3, 4), (3, 4)))
        batches: list[list[tuple[str, str]]] = []
        h.runtime.bus.observe(lambda facts: batches.append([(f.channel, f.type) for f in facts]))
        await run_to_end(h)
        for chat in h.worker_chats():
            mine = [[t for c, t in b if c == chat] for b in batches]
            mine = [b for b in mine if b]
            assert mine[-4:] == [
                ["chat/usage"],
                ["chat/toolCallComplete"],
                ["chat/responsePart"],
                ["chat/usage", "chat/turnComplete"],
            ]
        finished = h.actions(TaskFinished)
        assert [t.status for t in finished] == [TaskStatus.COMPLETED] * 3


def _structured(
    *, answer: str, retry: str | None = None, lead_says: str = "Scored: {outcomes}"
) -> Harness:
    text = structured(answer=answer, retry=retry, lead_says=lead_says)
    return Harness(parse_team(text, file="structured.toml"))


def _retry_parts(h: Harness) -> list[SystemNotificationResponsePart]:
    return [
        a.part
        for a in h.actions(ChatResponsePartAction)
        if isinstance(a.part, SystemNotificationResponsePart)
        and OUTPUT_RETRY_META in (a.part.meta or {})
    ]


class TestStructuredOutput:
    """An agent with an output_schema: its final answer must fit, with one retry."""

    async def test_a_fitting_answer_reaches_the_coordinator_as_json(self) -> None:
        """The worker's task carries the parsed value; the coordinator's model reads it as
        compact JSON in the delegate call's result; nothing is asked again."""
        h = _structured(answer="""'{ "score" : 3,  "notes": "clear" }'""")
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.COMPLETED
        [finished] = h.actions(TaskFinished)
        assert finished.status is TaskStatus.COMPLETED
        assert finished.value == {"score": 3, "notes": "clear"}
        assert _retry_parts(h) == []
        assert outcome.result == (
            'Scored: [analyst, completed] (task: Score the draft) {"score":3,"notes":"clear"}'
        )
        # No schema on the coordinator: no value for the run.
        assert outcome.result_value is None
        assert h.actions(RunFinished)[0].value is None

    async def test_an_answer_that_does_not_fit_is_asked_for_again_once(self) -> None:
        """The invalid answer stays recorded; the model is told where and what was wrong
        (a user message of its conversation); the fixed answer's value is the task's."""
        h = _structured(
            answer="""'{"score": "three"}'""",
            retry='''"```json\\n{\\"score\\": 3}\\n```"''',
        )
        outcome = await run_to_end(h)
        [part] = _retry_parts(h)
        assert part.meta == {
            OUTPUT_RETRY_META: {"path": "$.score", "problem": "'three' is not of type 'integer'"}
        }
        assert isinstance(part.content, str)
        assert part.content.startswith(
            "Your answer does not fit the required output schema: at $.score: "
            "'three' is not of type 'integer'."
        )
        worker = h.worker_chats()[0]
        messages = transcript(h.runtime.state.chats[worker])
        assert [type(m).__name__ for m in messages] == [
            "UserMessage",
            "AssistantMessage",
            "UserMessage",
            "AssistantMessage",
        ]
        assert messages[1] == AssistantMessage(text='{"score": "three"}')
        assert messages[2] == UserMessage(text=part.content)
        [finished] = h.actions(TaskFinished)
        assert finished.status is TaskStatus.COMPLETED
        assert finished.value == {"score": 3}
        assert outcome.result.endswith('(task: Score the draft) {"score":3}')

    async def test_a_second_answer_that_does_not_fit_fails_the_task(self) -> None:
        """Asked again, the scripted model answers the same: the worker's turn ends in
        error naming the agent and the problem, its task failed, its text kept."""
        h = _structured(answer="""'{"score": -1}'""")
        outcome = await run_to_end(h)
        message = (
            "agent 'analyst' answered twice with output that does not fit its output_schema; "
            "the second answer: at $.score: -1 is less than the minimum of 0"
        )
        assert len(_retry_parts(h)) == 1
        [error] = h.actions(ChatErrorAction)
        assert error.error.error_type == "OutputSchemaError"
        assert error.error.message == message
        [finished] = h.actions(TaskFinished)
        assert (finished.status, finished.summary, finished.value) == (
            TaskStatus.FAILED,
            message,
            None,
        )
        worker = h.worker_chats()[0]
        [turn] = h.runtime.state.chats[worker].turns
        said = [p.content for p in turn.response_parts if isinstance(p, MarkdownResponsePart)]
        assert said == ['{"score": -1}', '{"score": -1}']
        # The coordinator goes on with the failure, as with any failed worker.
        assert outcome.status is RunStatus.COMPLETED
        assert f"[analyst, failed] (task: Score the draft) {message}" in outcome.result

    async def test_the_coordinators_value_is_the_runs(self) -> None:
        """A coordinator with a schema: its parsed answer is RunFinished's value and the
        RunOutcome's result_value."""
        h = _structured(answer="""'{"score": 3}'""", lead_says='{"approved": true}')
        outcome = await run_to_end(h)
        assert outcome.result_value == {"approved": True}
        assert h.actions(RunFinished)[0].value == {"approved": True}

    async def test_a_coordinator_that_answers_twice_wrong_fails_the_run(self) -> None:
        """The run fails with the error naming the coordinator and the problem."""
        h = _structured(answer="""'{"score": 3}'""", lead_says="{approved: yes}")
        outcome = await run_to_end(h)
        assert outcome.status is RunStatus.FAILED
        assert outcome.result_value is None
        assert outcome.error == (
            "lead: agent 'lead' answered twice with output that does not fit its "
            "output_schema; the second answer: at $: the answer is not one JSON value: not "
            "JSON: Expecting property name enclosed in double quotes (line 1, column 2)"
        )

    async def test_a_conversations_prompt_task_carries_the_value(self) -> None:
        """In a conversation each prompt's root task ends with the coordinator's value."""
        h = Harness(
            parse_team(
                structured(answer="""'{"score": 3}'""", lead_says='{"approved": false}'),
                file="structured.toml",
            ),
            conversation=True,
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_to_end, h)
            await wait_for(h, lambda f: isinstance(f.action, ChatTurnCompleteAction))
            await wait_for(
                h,
                lambda f: (
                    isinstance(f.action, ChatTurnCompleteAction)
                    and f.channel == h.runtime.state.coordinator_chat()
                ),
            )
            h.runtime.close()
        values = {a.task: a.value for a in h.actions(TaskFinished)}
        assert values == {"task-1": {"approved": False}, "task-2": {"score": 3}}

    async def test_a_worker_that_answered_before_a_restart_reports_its_value(self) -> None:
        """A worker whose turn completed (after its retry) before the process stopped, its
        task not yet reported: the resumed run reads the value from its recorded answer."""
        text = structured(answer="""'{"score": "x"}'""", retry="""'{"score": 5}'""")
        done = _structured(answer="""'{"score": "x"}'""", retry="""'{"score": 5}'""")
        await run_to_end(done)
        worker = done.worker_chats()[0]
        cut = next(
            index
            for index, fact in enumerate(done.facts)
            if isinstance(fact.action, ChatTurnCompleteAction) and fact.channel == worker
        )
        # The process stopped after the turn's end (its summary update is derived).
        assert done.facts[cut + 1].type == "team/taskFinished"
        h = Harness(parse_team(text, file="structured.toml"))
        h.log.facts.extend(done.facts[: cut + 1])
        state = TeamState.fold(done.runtime.session, h.log.facts)
        h.runtime = TeamRuntime(
            parse_team(text, file="structured.toml"),
            backends=ScriptedBackend,
            factlog=h.log,
            ids=Ids(deterministic=True, restart=1),
            clock=lambda: "2026-11-22T00:00:00.000Z",
            state=state,
        )
        with trio.fail_after(60):
            outcome = await h.runtime.resume()
        [finished] = h.actions(TaskFinished)
        assert (finished.status, finished.value) == (TaskStatus.COMPLETED, {"score": 5})
        assert outcome.result.endswith('(task: Score the draft) {"score":5}')
