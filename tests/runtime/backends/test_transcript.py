"""The transcript a chat comes to for a model: every tool call followed by its result, in
the order the chat made them."""

from __future__ import annotations

import json
from typing import Any

import trio.testing
from hypothesis import given

from orchestrator.ahp.state import (
    SystemNotificationResponsePart,
    ToolCallCompletedState,
    ToolCallResponsePart,
)
from orchestrator.core import STEERING_META, is_interrupted
from orchestrator.runtime.backends import (
    AssistantMessage,
    ToolMessage,
    UserMessage,
    request_body,
    tool_call_ids,
    transcript,
)
from orchestrator.spec import OpenAISettings
from tests.support import strategies
from tests.support.runtime import Harness, fanout, run_to_end


class TestTranscript:
    @given(strategies.chat_states())
    def test_every_tool_call_is_followed_by_its_result(self, chat: Any) -> None:
        messages = transcript(chat)
        turns = [t for t in chat.turns if not is_interrupted(t)]
        if chat.active_turn is not None:
            turns.append(chat.active_turn)
        steering = [
            p
            for t in turns
            for p in t.response_parts
            if isinstance(p, SystemNotificationResponsePart) and STEERING_META in (p.meta or {})
        ]
        # One user message per turn, plus one per steering message injected into it.
        expected_users = len(turns) + len(steering)
        assert sum(isinstance(m, UserMessage) for m in messages) == expected_users
        for index, message in enumerate(messages):
            if isinstance(message, AssistantMessage):
                ids = [c.tool_call_id for c in message.tool_calls]
                after = messages[index + 1 : index + 1 + len(ids)]
                assert [m.tool_call_id for m in after if isinstance(m, ToolMessage)] == ids
        shown = {
            c.tool_call_id
            for m in messages
            if isinstance(m, AssistantMessage)
            for c in m.tool_calls
        }
        assert shown <= tool_call_ids(chat)
        body = request_body(OpenAISettings(model="m"), system="s", messages=messages)
        json.dumps(body)  # the whole request is JSON

    def test_steering_follows_the_conversation_as_user_messages(self) -> None:
        body = request_body(
            OpenAISettings(model="m", temperature=0.3),
            system="who you are",
            messages=[UserMessage(text="task"), UserMessage(text="focus on tests")],
        )
        assert body["messages"] == [
            {"role": "system", "content": "who you are"},
            {"role": "user", "content": "task"},
            {"role": "user", "content": "focus on tests"},
        ]
        assert body["temperature"] == 0.3

    async def test_a_coordinators_rounds_and_results_in_order(
        self, autojump_clock: trio.testing.MockClock
    ) -> None:
        h = Harness(fanout())
        await run_to_end(h)
        coordinator = h.runtime.state.coordinator_chat()
        assert coordinator is not None
        chat = h.runtime.state.chats[coordinator]
        messages = transcript(chat)
        [turn] = chat.turns
        calls = [
            p.tool_call
            for p in turn.response_parts
            if isinstance(p, ToolCallResponsePart)
            and isinstance(p.tool_call, ToolCallCompletedState)
        ]
        assert isinstance(messages[0], UserMessage)
        assert messages[0].text == "Ship it"
        assistant = messages[1]
        assert isinstance(assistant, AssistantMessage)
        assert [c.tool_call_id for c in assistant.tool_calls] == [c.tool_call_id for c in calls]
        results = messages[2 : 2 + len(calls)]
        assert all(isinstance(m, ToolMessage) for m in results)
        for message, task in zip(results, ("alpha", "beta", "gamma"), strict=True):
            assert isinstance(message, ToolMessage)
            assert message.content.startswith("[worker, completed] (task: "), message.content
            assert message.content.endswith(f") did {task}"), message.content
        assert isinstance(messages[-1], AssistantMessage)
        assert messages[-1].tool_calls == ()
