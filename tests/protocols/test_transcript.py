"""A chat's transcript as the web view shows it: who the chat is, then each turn (finished
ones, then the running one so far) as the agent channel's events."""

from __future__ import annotations

import trio

from orchestrator.ahp.actions import SessionChatAddedAction
from orchestrator.ahp.state import ChatSummary, SessionStatus, UserChatOrigin
from orchestrator.core import Reviews, TeamState, steering_injected
from orchestrator.protocols import chat_transcript, turn_messages
from orchestrator.spec import parse_team
from tests.support.runtime import Harness
from tests.support.scenarios import LEAD, SESSION, W1, Log, two_workers_with_approval
from tests.support.teams import review_team


def state_of(log: Log) -> TeamState:
    state = TeamState(SESSION)
    for fact in log.facts:
        state.apply(fact)
    return state


def test_a_worker_s_chat_names_its_agent_and_role_and_holds_its_turn() -> None:
    state = state_of(two_workers_with_approval())
    transcript = chat_transcript(state, W1)
    assert transcript is not None
    [turn] = state.chats[W1].turns
    assert transcript == {
        "thread": W1,
        "agent": "researcher",
        "role": "worker",
        "title": "researcher: work",
        "turns": [{"id": turn.id, "state": "complete", "events": turn_messages(turn)}],
    }


def test_the_running_turn_comes_last_as_streamed_so_far_without_an_end() -> None:
    log = Log()
    log.run_started()
    log.turn(LEAD, "first")
    log.say(LEAD, "one")
    log.end_turn(LEAD)
    log.turn(LEAD, "second")
    log.say(LEAD, "half an")
    transcript = chat_transcript(state_of(log), LEAD)
    assert transcript is not None
    assert [(t["id"], t["state"]) for t in transcript["turns"]] == [
        ("turn-1", "complete"),
        ("turn-2", "running"),
    ]
    assert transcript["turns"][1]["events"] == [
        {"channel": "agent", "type": "prompt", "prompt": "second"},
        {"channel": "agent", "type": "text", "content": "half an "},
    ]
    assert (transcript["agent"], transcript["role"]) == ("lead", "coordinator")


def test_a_failed_turn_says_its_state() -> None:
    log = Log()
    log.run_started()
    log.turn(LEAD)
    log.fail_turn(LEAD)
    transcript = chat_transcript(state_of(log), LEAD)
    assert transcript is not None
    assert [t["state"] for t in transcript["turns"]] == ["error"]


def test_a_chat_with_no_member_has_no_agent_nor_role() -> None:
    """A chat the session added that no agent joined (yet): the transcript still shows it."""
    log = Log()
    log.run_started()
    summary = ChatSummary(
        resource="ahp-chat:/side",
        title="aside",
        status=SessionStatus.IDLE,
        modified_at="2026-11-22T21:00:00.000Z",
        origin=UserChatOrigin(),
    )
    log.add(SESSION, SessionChatAddedAction(summary=summary))
    transcript = chat_transcript(state_of(log), "ahp-chat:/side")
    assert transcript == {
        "thread": "ahp-chat:/side",
        "agent": None,
        "role": None,
        "title": "aside",
        "turns": [],
    }


def test_a_chat_the_session_does_not_have_is_none() -> None:
    assert chat_transcript(state_of(two_workers_with_approval()), "ahp-chat:/nobody") is None


def steered(principal: str | None) -> Log:
    """The lead's turn: a tool call, a steering message taken in, an answer; not ended."""
    log = Log()
    log.run_started()
    turn = log.turn(LEAD, "review it")
    call = log.tool_call(LEAD, "search")
    log.complete_call(LEAD, call)
    for channel, action in steering_injected(
        LEAD, turn, "message-7", "only the security findings", principal=principal
    ):
        log.add(channel, action)
    log.say(LEAD, "done")
    return log


class TestSteering:
    def test_a_steering_message_is_shown_where_it_was_taken_in_with_who_sent_it(self) -> None:
        """Between the tool call the turn made before and the text it wrote after, named by
        the principal who sent it; in the running turn and once the turn is over alike."""
        log = steered("alice")
        running = chat_transcript(state_of(log), LEAD)
        log.end_turn(LEAD)
        finished = chat_transcript(state_of(log), LEAD)
        for transcript in (running, finished):
            assert transcript is not None
            (turn,) = transcript["turns"]
            kinds = [e["type"] for e in turn["events"]]
            assert kinds[:5] == ["prompt", "tool_invocation", "tool_result", "steering", "text"]
            assert turn["events"][3] == {
                "channel": "agent",
                "type": "steering",
                "text": "only the security findings",
                "messageId": "message-7",
                "principal": "alice",
            }

    def test_a_steering_message_recorded_without_a_principal_names_none(self) -> None:
        """Journals from before principals were recorded: the message, with no one named."""
        transcript = chat_transcript(state_of(steered(None)), LEAD)
        assert transcript is not None
        (steering,) = [e for e in transcript["turns"][0]["events"] if e["type"] == "steering"]
        assert steering["principal"] is None

    def test_the_agent_channel_history_leaves_steering_out(self) -> None:
        """The agent channel's clients sent their steering: its replay does not add it."""
        log = steered("alice")
        log.end_turn(LEAD)
        (turn,) = state_of(log).chats[LEAD].turns
        assert "steering" not in [e["type"] for e in turn_messages(turn)]


async def test_a_worker_s_transcript_has_its_review_lane() -> None:
    """Given the session's reviews, a worker's transcript lists the reviews of its work, and
    its reviewer's the same; a chat that was not reviewed has none."""
    h = Harness(parse_team(review_team(["changes_requested", "passed"]), file="r.toml"))
    with trio.fail_after(60):
        await h.runtime.run("go")
    reviews = Reviews.fold(h.facts)
    (writer,) = h.worker_chats()
    found = chat_transcript(h.runtime.state, writer, reviews)
    assert found is not None
    assert [(r["round"], r["status"]) for r in found["reviews"]] == [
        (1, "changes_requested"),
        (2, "passed"),
    ]
    reviewer = found["reviews"][0]["reviewerChat"]
    by_reviewer = chat_transcript(h.runtime.state, reviewer, reviews)
    assert by_reviewer is not None
    assert by_reviewer["reviews"] == found["reviews"]
    lead = h.runtime.state.coordinator_chat()
    assert lead is not None
    coordinator = chat_transcript(h.runtime.state, lead, reviews)
    assert coordinator is not None
    assert coordinator["reviews"] == []
