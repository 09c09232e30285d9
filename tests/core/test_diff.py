"""Comparing two sessions: a fork agrees with its source up to the fork point, and the report
names where they part and what each chat did differently."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import Fact, diff_sessions, fork_facts
from tests.support.examples import examples
from tests.support.scenarios import LEAD, Log, scenarios

NEW = "ahp-session:/00000000-0000-4000-8000-0000000000ff"
NOW = "2026-12-07T13:00:00.000Z"


def _fork(facts: list[Fact], sequence: int) -> list[Fact]:
    counter = itertools.count(1)
    made = fork_facts(
        facts,
        session=NEW,
        new_chat=lambda: f"ahp-chat:/copy-{next(counter)}",
        now=NOW,
        sequence=sequence,
    )
    return list(made.facts)


def _answered(text: str, *, prompt: str = "go") -> list[Fact]:
    log = Log()
    log.run_started(budget=1)
    log.turn(LEAD, prompt)
    log.say(LEAD, text)
    log.end_turn(LEAD)
    return log.facts


class TestDiff:
    @settings(max_examples=examples(100), deadline=None)
    @given(facts=scenarios(), data=st.data())
    def test_a_fork_parts_from_its_source_where_it_was_forked(
        self, facts: list[Fact], data: st.DataObject
    ) -> None:
        """A fork at sequence k is the same as its source up to k; if the source went on,
        they part at its fact k + 1, where the fork has ended."""
        if not facts:
            return
        k = data.draw(st.integers(1, len(facts)))
        found = diff_sessions(facts, _fork(facts, k))
        if k == len(facts):
            assert found.same
            assert found.lines() == [f"{found.a} and {found.b} did the same"]
        else:
            assert found.parted_at == (k + 1, None)
            assert found.first_a == facts[k].type
            assert found.first_b is None

    def test_what_a_chat_did_differently_is_named(self) -> None:
        a, b = _answered("blue sky"), _answered("red sky", prompt="go on")
        found = diff_sessions(a, b)
        first = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
        assert found.parted_at == (first + 1, first + 1)
        assert found.first_a == found.first_b == "chat/turnStarted"
        [chat] = found.chats
        assert chat.name == "lead (chat 1)"
        assert chat.differences == (
            "turn 1: asked 'go' / 'go on'",
            "turn 1: answered 'blue sky' / 'red sky'",
        )
        as_json: dict[str, Any] = found.to_json()
        assert as_json["same"] is False
        assert as_json["partedAt"]["a"] == {"sequence": first + 1, "type": "chat/turnStarted"}
        assert as_json["chats"][0]["differences"] == list(chat.differences)
        # The same findings side by side, as the web view shows them.
        assert as_json["chats"][0]["sides"] == [
            {"what": "turn 1: asked", "a": "'go'", "b": "'go on'"},
            {"what": "turn 1: answered", "a": "'blue sky'", "b": "'red sky'"},
        ]
        assert found.lines()[0] == (
            f"they part at A's fact {first + 1} (chat/turnStarted), "
            f"B's fact {first + 1} (chat/turnStarted)"
        )

    def test_a_turn_only_one_side_has(self) -> None:
        b = _answered("one")
        b_log = Log()
        b_log.run_started(budget=1)
        b_log.turn(LEAD)
        b_log.say(LEAD, "one")
        b_log.end_turn(LEAD)
        b_log.turn(LEAD, "more")
        b_log.end_turn(LEAD)
        found = diff_sessions(b, b_log.facts)
        assert found.parted_at == (None, len(b) + 1)
        [chat] = found.chats
        assert chat.differences == ("turn 2: only in B ('more')",)
        assert chat.sides == (("turn 2: asked", "-", "'more'"),)
