"""The agent channel's wire, pure: client frames read with errors that say where, and a
session's facts projected to the events a finished turn's history also has."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.base import PeerProtocolError
from orchestrator.core import ApprovalRequested, Backend, TeamState
from orchestrator.protocols import (
    Abort,
    AgentChannelProjector,
    Approve,
    ClientMessageError,
    Prompt,
    Reject,
    Settings,
    TeamSubscribe,
    ToolResponse,
    channel_of,
    model_choice,
    parse_client_message,
    turn_messages,
)
from orchestrator.runtime import Ids, MemoryFactLog, TeamRuntime
from orchestrator.runtime.backends import ScriptedBackend
from orchestrator.spec import AgentSpec, load_team, parse_team
from tests.support import strategies
from tests.support.paths import PROJECT_ROOT
from tests.support.remote_replay import ReplayedRemote
from tests.support.teams import remote


def parse(message: Any, max_bytes: int = 1000) -> object:
    return parse_client_message(
        message if isinstance(message, str | bytes) else json.dumps(message), max_bytes=max_bytes
    )


EVERY_MESSAGE: list[tuple[dict[str, Any], object]] = [
    (
        {"channel": "agent", "type": "prompt", "prompt": "hi", "taskId": "t"},
        Prompt(prompt="hi", task_id="t"),
    ),
    ({"channel": "agent", "type": "prompt", "prompt": "hi"}, Prompt(prompt="hi")),
    (
        {"channel": "agent", "type": "prompt", "prompt": "hi", "kind": "queued"},
        Prompt(prompt="hi"),
    ),
    (
        {"channel": "agent", "type": "prompt", "prompt": "hi", "kind": "steering"},
        Prompt(prompt="hi", kind="steering"),
    ),
    ({"channel": "agent", "type": "settings", "model": "m"}, Settings(model="m")),
    ({"channel": "agent", "type": "abort", "taskId": "t"}, Abort(task_id="t")),
    (
        {"channel": "agent", "type": "tool_response", "toolCallId": "c", "result": "r"},
        ToolResponse(tool_call_id="c", result="r"),
    ),
    ({"channel": "agent", "type": "approve", "requestId": "a"}, Approve(request_id="a")),
    ({"channel": "agent", "type": "reject", "requestId": "a"}, Reject(request_id="a")),
    (
        {"channel": "team", "type": "subscribe", "fromSequence": 7},
        TeamSubscribe(from_sequence=7),
    ),
    ({"channel": "team", "type": "subscribe"}, TeamSubscribe(from_sequence=0)),
]
"""Each message a client may send, and what it reads as."""


class TestParse:
    @pytest.mark.parametrize(("message", "expected"), EVERY_MESSAGE)
    def test_every_client_message(self, message: Any, expected: object) -> None:
        assert parse(message) == expected

    @given(data=st.data())
    def test_keys_it_does_not_know_change_nothing(self, data: st.DataObject) -> None:
        """A newer client's keys are read past: each message means what it meant."""
        message = data.draw(st.sampled_from([message for message, _ in EVERY_MESSAGE]))
        extended = data.draw(strategies.with_unknown_keys(message))
        assert parse(extended, max_bytes=10_000) == parse(message)

    @pytest.mark.parametrize(
        ("message", "path", "says"),
        [
            ("{", "$", "not JSON"),
            ("[]", "$", "expected a JSON object, got an array"),
            ({"type": "prompt"}, "$.channel", "expected one of agent, team"),
            ({"channel": "agent", "type": "dance"}, "$.type", "the agent channel takes abort"),
            ({"channel": "agent", "type": "prompt"}, "$.prompt", "prompt needs prompt"),
            (
                {"channel": "agent", "type": "prompt", "prompt": 3},
                "$.prompt",
                "expected a string, got a number",
            ),
            ({"channel": "agent", "type": "prompt", "prompt": "  "}, "$.prompt", "empty"),
            (
                {"channel": "agent", "type": "prompt", "prompt": "x", "taskId": ["t"]},
                "$.taskId",
                "expected a string, got an array",
            ),
            (
                {"channel": "agent", "type": "prompt", "prompt": "x", "kind": "now"},
                "$.kind",
                "expected one of queued, steering, got 'now'",
            ),
            (
                {"channel": "agent", "type": "prompt", "prompt": "x", "kind": 1},
                "$.kind",
                "expected a string, got a number",
            ),
            (
                {"channel": "agent", "type": "prompt", "prompt": "x", "kind": "steering"}
                | {"taskId": "t"},
                "$.taskId",
                "a steering message joins the running turn",
            ),
            (
                {"channel": "team", "type": "subscribe", "fromSequence": True},
                "$.fromSequence",
                "expected an integer, got a boolean",
            ),
            (
                {"channel": "team", "type": "subscribe", "fromSequence": -1},
                "$.fromSequence",
                "0 or more",
            ),
            (b"{}", "$", "binary frames"),
            ("x" * 1001, "$", "the limit is 1000"),
        ],
    )
    def test_a_bad_frame_says_what_and_where(self, message: Any, path: str, says: str) -> None:
        with pytest.raises(PeerProtocolError) as error:
            parse(message)
        assert error.value.path == path
        assert says in error.value.message

    @pytest.mark.parametrize(
        ("message", "channel"),
        [
            ({"channel": "team", "type": "subscribe", "fromSequence": -1}, "team"),
            ({"channel": "team", "type": "dance"}, "team"),
            ({"channel": "agent", "type": "prompt"}, "agent"),
            ({"channel": "nowhere", "type": "prompt"}, "agent"),
            ("{", "agent"),
        ],
    )
    def test_a_bad_frame_names_the_channel_it_came_on(self, message: Any, channel: str) -> None:
        """So the error is answered there (a team-channel error is not the agent's)."""
        with pytest.raises(ClientMessageError) as error:
            parse(message)
        assert error.value.channel == channel

    def test_each_message_names_its_channel(self) -> None:
        read = [
            parse_client_message(json.dumps(message), max_bytes=1000)
            for message, _ in EVERY_MESSAGE
        ]
        channels = {type(message).__name__: channel_of(message) for message in read}
        assert channels.pop("TeamSubscribe") == "team"
        assert set(channels.values()) == {"agent"}


async def test_a_finished_turn_s_live_events_are_its_history(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Live, the coordinator's tool calls, result and done are exactly the history's; its
    text is the history's text, streamed; approvals arrive as permission_request."""
    log = MemoryFactLog()
    runtime = TeamRuntime(
        load_team(PROJECT_ROOT / "teams" / "delivery.toml"),
        backends=ScriptedBackend,
        factlog=log,
        ids=Ids(deterministic=True),
    )
    facts = runtime.bus.subscribe("test")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.run, "Ship it")
        async for fact in facts:
            if isinstance(fact.action, ApprovalRequested):
                request = fact.action
                break
        await runtime.resolve_approval(request.approval, approved=True)
    projector = AgentChannelProjector()
    state = TeamState(runtime.session)
    live: list[dict[str, Any]] = []
    for fact in log.facts:
        state.apply(fact)
        live += projector.feed(fact, state)
    chat = state.coordinator_chat()
    assert chat is not None
    history = turn_messages(state.chats[chat].turns[0])

    def keyed(events: list[dict[str, Any]], kind: str) -> list[str]:
        return sorted(json.dumps(e, sort_keys=True) for e in events if e["type"] == kind)

    for kind in ("prompt", "tool_invocation", "tool_result", "result", "done"):
        assert keyed(live, kind) == keyed(history, kind), kind
    for kind in ("text", "thinking"):
        assert "".join(e["content"] for e in live if e["type"] == kind) == "".join(
            e["content"] for e in history if e["type"] == kind
        )
    assert [e["type"] for e in live][-2:] == ["result", "done"]
    (asked,) = [e for e in live if e["type"] == "permission_request"]
    assert asked["requestId"] == request.approval
    assert asked["agentName"] == "researcher"
    # Which of the three researchers asks, and for what task.
    assert (asked["agentNumber"], asked["taskTitle"]) == (
        3,
        "Publish the release notes to the release page",
    )


class TestModelChoice:
    @given(st.text(max_size=250))
    def test_a_model_name_is_taken_exactly_when_it_has_no_space_and_fits(self, name: str) -> None:
        """1 to 200 characters, none of them a space or a control character; a refusal
        names where the name came from."""
        fits = 1 <= len(name) <= 200 and not any(
            c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in name
        )
        if fits:
            assert model_choice(name, path="?model") == name
            return
        with pytest.raises(ClientMessageError) as refused:
            model_choice(name, path="?model")
        assert refused.value.path == "?model"
        assert refused.value.message.startswith("expected a model name")

    @pytest.mark.parametrize("name", ["gpt-4o-mini", "qwen2.5:7b", "meta-llama/Llama-3-8B"])
    def test_the_names_servers_use_are_taken(self, name: str) -> None:
        assert model_choice(name) == name


class TestRemoteTeammateInWords:
    """A remote teammate's task states and artifacts reach the agent channel as
    ``remote_task`` and ``artifact`` events whose text says them in words, naming the
    worker; the worker's turn history (the web view's transcript) has the same events."""

    @pytest.mark.parametrize(
        ("states", "said"),
        [
            (
                ("submitted", "working", "input_required", "working", "completed"),
                [
                    "far (remote) was sent the task",
                    "far (remote) took the task",
                    "far (remote) is working on it",
                    "far (remote) needs input",
                    "far (remote) is working on it",
                    "far (remote) completed its task",
                ],
            ),
            (
                ("submitted", "working", "auth_required", "failed"),
                [
                    "far (remote) was sent the task",
                    "far (remote) took the task",
                    "far (remote) is working on it",
                    "far (remote) needs authentication",
                    "far (remote) failed",
                ],
            ),
            (
                ("submitted", "working", "canceled"),
                [
                    "far (remote) was sent the task",
                    "far (remote) took the task",
                    "far (remote) is working on it",
                    "far (remote) stopped: its task was canceled",
                ],
            ),
        ],
    )
    async def test_each_state_and_the_artifact_in_words(
        self, states: tuple[str, ...], said: list[str], autojump_clock: trio.testing.MockClock
    ) -> None:
        team = parse_team(remote({"far": "http://127.0.0.1:9/"}), file="remote.toml")

        def backends(agent: AgentSpec) -> Backend:
            if agent.a2a is not None:
                return ReplayedRemote(agent, states=states)
            return ScriptedBackend(agent)

        log = MemoryFactLog()
        runtime = TeamRuntime(team, backends=backends, factlog=log, ids=Ids(deterministic=True))
        await runtime.run("Go")
        projector = AgentChannelProjector()
        state = TeamState(runtime.session)
        live: list[dict[str, Any]] = []
        for fact in log.facts:
            state.apply(fact)
            live += projector.feed(fact, state)
        far = next(c for c, s in state.chats.items() if s.title and "far" in str(s.title))
        remote_events = [e for e in live if e["type"] == "remote_task"]
        assert [e["text"] for e in remote_events] == said
        assert {(e["agentId"], e["agentName"]) for e in remote_events} == {(far, "far")}
        assert [e["state"] for e in remote_events] == ["sending", *states]
        assert {e["remoteTaskId"] for e in remote_events[1:]} == {"rt-1"}
        artifacts = [e for e in live if e["type"] == "artifact"]
        assert [e["text"] for e in artifacts] == [
            "Artifact out.md (text/markdown): alpha ",
            "More of artifact out.md (text/markdown): beta",
        ]
        assert {e["artifactId"] for e in artifacts} == {"art-1"}
        # Words, not JSON: no event's text holds an object or the raw state's name.
        for event in remote_events + artifacts:
            assert "{" not in event["text"]
            assert "TASK_STATE" not in event["text"]
        # The worker's history (what GET .../transcript answers) has the same, in order.
        (turn,) = state.chats[far].turns
        history = [e for e in turn_messages(turn) if e["type"] in ("remote_task", "artifact")]
        assert [e["text"] for e in history] == [
            e["text"] for e in live if e["type"] in ("remote_task", "artifact")
        ]
