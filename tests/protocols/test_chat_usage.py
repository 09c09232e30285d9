"""What each chat used (tokens, model calls, time), folded from a session's facts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    ChatErrorAction,
    ChatTurnCancelledAction,
    ChatTurnCompleteAction,
    ChatUsageAction,
)
from orchestrator.ahp.state import ErrorInfo, UsageInfo
from orchestrator.core import Fact
from orchestrator.protocols import ChatUsage, chat_usage, usage_to_json
from tests.support.examples import examples

SESSION = "ahp-session:/s"
LEAD = "ahp-chat:/lead"
WORKER = "ahp-chat:/worker"


def fact(sequence: int, channel: str, action: object) -> Fact:
    return Fact(
        sequence=sequence,
        session=SESSION,
        channel=channel,
        at="2026-12-07T12:00:00Z",
        action=action,  # type: ignore[arg-type]
    )


class TestChatUsage:
    def test_rounds_are_model_calls_and_turn_ends_are_time(self) -> None:
        """Each ``chat/usage`` is one model call whose tokens add up; each turn's end adds
        its duration; a worker's figures stay its own."""
        facts = [
            fact(
                1,
                LEAD,
                ChatUsageAction(turn_id="t1", usage=UsageInfo(input_tokens=100, output_tokens=20)),
            ),
            fact(
                2,
                WORKER,
                ChatUsageAction(turn_id="w1", usage=UsageInfo(input_tokens=7, output_tokens=3)),
            ),
            fact(3, WORKER, ChatTurnCompleteAction(turn_id="w1", duration=1500)),
            fact(
                4,
                LEAD,
                ChatUsageAction(turn_id="t1", usage=UsageInfo(input_tokens=150, output_tokens=30)),
            ),
            fact(5, LEAD, ChatTurnCompleteAction(turn_id="t1", duration=2500.4)),
            fact(
                6,
                LEAD,
                ChatErrorAction(
                    turn_id="t2", duration=10, error=ErrorInfo(error_type="E", message="no")
                ),
            ),
        ]
        used = chat_usage(facts)
        assert list(used) == [LEAD, WORKER]
        assert used[LEAD] == ChatUsage(
            input_tokens=250, output_tokens=50, model_calls=2, duration_ms=2510
        )
        assert used[WORKER] == ChatUsage(
            input_tokens=7, output_tokens=3, model_calls=1, duration_ms=1500
        )
        assert usage_to_json(used)["total"] == {
            "inputTokens": 257,
            "outputTokens": 53,
            "modelCalls": 3,
            "durationMs": 4010,
        }

    def test_usage_without_counts_is_a_call_of_no_tokens(self) -> None:
        used = chat_usage([fact(1, LEAD, ChatUsageAction(turn_id="t", usage=UsageInfo()))])
        assert used == {LEAD: ChatUsage(model_calls=1)}

    def test_no_facts_no_usage(self) -> None:
        assert usage_to_json(chat_usage([])) == {
            "chats": {},
            "total": {"inputTokens": 0, "outputTokens": 0, "modelCalls": 0, "durationMs": 0},
        }

    @settings(max_examples=examples(200))
    @given(
        st.lists(
            st.tuples(
                st.sampled_from([LEAD, WORKER, "ahp-chat:/other"]),
                st.one_of(
                    st.tuples(st.just("usage"), st.integers(0, 10**6), st.integers(0, 10**6)),
                    st.tuples(st.just("end"), st.integers(0, 10**7), st.just(0)),
                    st.tuples(st.just("cancel"), st.integers(0, 10**7), st.just(0)),
                ),
            ),
            max_size=40,
        )
    )
    def test_the_total_is_the_sum_of_the_chats(
        self, steps: list[tuple[str, tuple[str, int, int]]]
    ) -> None:
        """Whatever the order: per chat, calls are its usage facts and tokens their sum;
        the total is the sum of the chats."""
        facts = []
        for n, (chat, (kind, a, b)) in enumerate(steps, start=1):
            if kind == "usage":
                usage = UsageInfo(input_tokens=a, output_tokens=b)
                facts.append(fact(n, chat, ChatUsageAction(turn_id="t", usage=usage)))
            elif kind == "end":
                facts.append(fact(n, chat, ChatTurnCompleteAction(turn_id="t", duration=a)))
            else:
                facts.append(fact(n, chat, ChatTurnCancelledAction(turn_id="t", duration=a)))
        wire = usage_to_json(chat_usage(facts))
        for chat in {chat for chat, _ in steps}:
            mine = [step for c, step in steps if c == chat]
            shown = wire["chats"][chat]
            assert shown["modelCalls"] == sum(1 for k, _, _ in mine if k == "usage")
            assert shown["inputTokens"] == sum(a for k, a, _ in mine if k == "usage")
            assert shown["outputTokens"] == sum(b for k, _, b in mine if k == "usage")
            assert shown["durationMs"] == sum(a for k, a, _ in mine if k != "usage")
        for key in ("inputTokens", "outputTokens", "modelCalls", "durationMs"):
            assert wire["total"][key] == sum(c[key] for c in wire["chats"].values())
