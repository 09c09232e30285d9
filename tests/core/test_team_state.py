"""Properties of folding a team run: :meth:`TeamState.apply`.

``apply`` writes a chat action's or a ``session/chatUpdated``'s result in place when nothing
is in flight, instead of going through a transition. The reference here is the general path
(``prepare(validate=False)`` then ``commit``), fed the same facts: a real fan-out's log with
generated chat and session actions slipped in on the session, on the run's chats and on a
chat that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp import reduce_session, summary_of
from orchestrator.ahp.actions import (
    SessionChatUpdatedAction,
)
from orchestrator.core import (
    Action,
    Fact,
    MemberJoined,
    TeamState,
    _team_state,
    summary_updates,
)
from tests.support.examples import examples
from tests.support.strategies import state_actions
from tests.support.team_state import assert_same, facts_before_35, fanout_facts


def reference_apply(state: TeamState, fact: Fact) -> None:
    """``apply`` without its fast paths."""
    transition = state.prepare([(fact.channel, fact.action)], now=fact.at, validate=False)
    state.commit(transition, fact.sequence)


def fold_both(facts: Sequence[Fact]) -> tuple[TeamState, TeamState]:
    """The facts folded by ``apply`` and by the reference; a fact that one refuses (raises),
    the other must refuse too, and neither state changes."""
    session = facts[0].session
    fast, slow = TeamState(session), TeamState(session)
    for fact in facts:
        fast_error = slow_error = None
        try:
            fast.apply(fact)
        except Exception as exc:  # compared with the reference's below
            fast_error = exc
        try:
            reference_apply(slow, fact)
        except Exception as exc:  # compared with the fast path's above
            slow_error = exc
        assert type(fast_error) is type(slow_error), (fact, fast_error, slow_error)
    return fast, slow


class TestApply:
    def test_a_run_folds_as_prepare_and_commit(self) -> None:
        """A real run's log (every kind of fact a fan-out makes) folds to the same state, and
        so does a journal's from before issue 35, with its recorded catalog updates."""
        facts = fanout_facts()
        assert any(fact.action.type.startswith("chat/") for fact in facts)
        assert_same(*fold_both(facts))
        old = facts_before_35()
        assert any(fact.action.type == "session/chatUpdated" for fact in old)
        assert_same(*fold_both(old))

    def test_a_catalog_update_off_the_session_channel_is_ignored(self) -> None:
        """``session/chatUpdated`` on a chat's channel changes nothing, on both paths."""
        facts = list(facts_before_35())
        # The first update of a chat's summary, sent again on that chat's channel just before
        # the real one: had it been applied, the real one would find nothing left to change.
        update = next(f for f in facts if isinstance(f.action, SessionChatUpdatedAction))
        assert isinstance(update.action, SessionChatUpdatedAction)
        at = facts.index(update)
        without = TeamState.fold(update.session, facts[:at])
        facts.insert(at, attrs.evolve(update, channel=update.action.chat))
        renumbered = [attrs.evolve(f, sequence=n) for n, f in enumerate(facts, start=1)]
        fast, slow = fold_both(renumbered[: at + 1])
        assert_same(fast, slow)
        assert fast.session == without.session

    @settings(max_examples=examples(60), deadline=None)
    @given(data=st.data())
    def test_generated_actions_fold_as_prepare_and_commit(self, data: st.DataObject) -> None:
        """Any chat or session action, on any channel, anywhere in the log, leaves the two
        folds equal (or is refused by both)."""
        facts = list(fanout_facts())
        session = facts[0].session
        chats = sorted({f.channel for f in facts if f.channel.startswith("ahp-chat:")})
        channels = st.sampled_from([session, *chats, "ahp-chat:/no-such-chat"])
        inserted = data.draw(
            st.lists(st.tuples(st.integers(0, len(facts)), channels, state_actions()), max_size=8)
        )
        for position, channel, drawn in sorted(inserted, key=lambda t: t[0], reverse=True):
            action = drawn
            if isinstance(drawn, SessionChatUpdatedAction):
                # About one of the run's chats, so that it changes the catalog where it lands.
                action = attrs.evolve(drawn, chat=data.draw(st.sampled_from(chats)))
            facts.insert(position, _fact(facts, position, channel, action))
        renumbered = [attrs.evolve(f, sequence=n) for n, f in enumerate(facts, start=1)]
        assert_same(*fold_both(renumbered))


class TestDerivedSummaries:
    """Issue 35: a chat's catalog entry follows its chat's state as the chat's actions fold;
    no ``session/chatUpdated`` is recorded, and each change is derived at the fact that made
    it (:meth:`TeamState.summary_update`)."""

    def test_no_catalog_update_is_recorded(self) -> None:
        """A run records no ``session/chatUpdated``, and no ``team/taskStarted`` for a spawn
        (its ``team/memberJoined`` starts the task): the same fan-out as the old journal's,
        less its 8 recorded updates (2 per chat: the coordinator and 3 workers) and its 3
        task starts. A worker is 13 facts, not 16."""
        facts = fanout_facts()
        assert not [f for f in facts if f.type in ("session/chatUpdated", "team/taskStarted")]
        old = facts_before_35()
        assert len(facts) == len(old) - 8 - 3
        assert sorted(f.type for f in facts) == sorted(
            f.type for f in old if f.type not in ("session/chatUpdated", "team/taskStarted")
        )
        joined = [f.action for f in facts if isinstance(f.action, MemberJoined)]
        assert [a.starts for a in joined] == [False, True, True, True]  # the lead, 3 workers

    def test_a_member_that_starts_its_task_folds_as_a_join_and_a_start(self) -> None:
        """A spawn's ``team/memberJoined`` that starts its task folds as the two facts a
        journal before issue 35 holds: the join, then ``team/taskStarted``."""
        facts = fanout_facts()
        split: list[Fact] = []
        for fact in facts:
            action = fact.action
            if isinstance(action, MemberJoined) and action.starts:
                split.append(attrs.evolve(fact, action=attrs.evolve(action, starts=False)))
                split.append(attrs.evolve(fact, action=action.started()))
            else:
                split.append(fact)
        assert len(split) == len(facts) + 3
        renumbered = [attrs.evolve(f, sequence=n) for n, f in enumerate(split, start=1)]
        session = facts[0].session
        merged, apart = TeamState.fold(session, facts), TeamState.fold(session, renumbered)
        assert merged.tasks == apart.tasks
        assert merged.members == apart.members
        assert merged.chats == apart.chats
        assert merged.session == apart.session
        assert all(t.chat is not None for t in merged.tasks.values() if t.requested_by)

    def test_the_catalog_equals_each_chat_after_every_fact(self) -> None:
        """Invariant: every catalog entry equals the summary its chat's state inlines, after
        every fact; each derived update is kept under its fact's sequence."""
        facts = fanout_facts()
        state = TeamState(facts[0].session)
        derived = 0
        for fact in facts:
            before = state.session
            state.apply(fact)
            session = state.session
            if session is None:
                continue
            for entry in session.chats:
                assert entry == summary_of(state.chats[entry.resource]), fact
            update = state.summary_update(fact.sequence)
            if update is not None:
                derived += 1
                assert isinstance(update, SessionChatUpdatedAction)
                assert fact.channel == update.chat
                assert before is not None
                assert reduce_session(before, update, now=fact.at) == session
        assert derived >= 8
        assert summary_updates(facts[0].session, facts) == {
            f.sequence: u for f in facts if (u := state.summary_update(f.sequence)) is not None
        }

    def test_live_and_folded_updates_agree(self) -> None:
        """The runtime's own derivation (prepare and commit) and the fold's agree."""
        facts = fanout_facts()
        live = TeamState(facts[0].session)
        for fact in facts:
            reference_apply(live, fact)
        folded = summary_updates(facts[0].session, facts)
        assert folded
        assert {s: live.summary_update(s) for s in folded} == folded

    def test_a_state_says_when_it_no_longer_knows_every_update(self, monkeypatch: Any) -> None:
        """``summary_updates_after(n)`` answers only when the state derived every update
        after ``n``: not for facts before a snapshot it was restored from, nor for updates
        it let go of (it keeps the latest :data:`SUMMARIES_KEPT`)."""
        facts = fanout_facts()
        session = facts[0].session
        derived = summary_updates(session, facts)
        whole = TeamState.fold(session, facts)
        assert whole.summary_updates_after(0) == derived
        half = len(facts) // 2
        restored = TeamState.fold(
            session, facts[half:], start=TeamState.fold(session, facts[:half]).copy()
        )
        assert restored.summary_updates_after(0) is None
        assert restored.summary_updates_after(half - 1) is None
        after = restored.summary_updates_after(half)
        assert after == {s: u for s, u in derived.items() if s > half}
        monkeypatch.setattr(_team_state, "SUMMARIES_KEPT", 3)
        few = TeamState.fold(session, facts)
        *_, let_go, first, second, third = sorted(derived)
        assert list(few.summary_updates_after(let_go) or {}) == [first, second, third]
        assert few.summary_updates_after(let_go - 1) is None
        assert few.summary_update(let_go) is None

    def test_an_old_journal_folds_to_the_state_without_its_recorded_updates(self) -> None:
        """A journal from before issue 35 folds to the state its facts less the recorded
        ``session/chatUpdated`` fold to: the derived updates say all the recorded ones said."""
        old = facts_before_35()
        session = old[0].session
        kept = [f for f in old if f.type != "session/chatUpdated"]
        with_recorded = TeamState.fold(session, old)
        without = TeamState.fold(session, kept)
        assert with_recorded.session == without.session
        assert with_recorded.chats == without.chats
        assert with_recorded.members == without.members
        assert with_recorded.tasks == without.tasks
        # Each recorded update comes after (in its batch) the chat fact whose derived update
        # carries the same values.
        derived = summary_updates(session, old)
        for fact in old:
            if isinstance(fact.action, SessionChatUpdatedAction):
                earlier = [
                    u
                    for s, u in derived.items()
                    if s < fact.sequence and getattr(u, "chat", None) == fact.action.chat
                ]
                assert earlier, fact
                last = earlier[-1]
                assert isinstance(last, SessionChatUpdatedAction)
                assert all(
                    v is None or v == getattr(last.changes, k)
                    for k, v in attrs.asdict(fact.action.changes, recurse=False).items()
                    if k != "unknown_fields"
                ), fact


def _fact(facts: Sequence[Fact], position: int, channel: str, action: Action) -> Fact:
    neighbour = facts[min(position, len(facts) - 1)]
    return Fact(
        sequence=0, session=neighbour.session, channel=channel, at=neighbour.at, action=action
    )


# ─── The team reducer and validator ──────────────────────────────────────────


# ─── The reference: TeamState's combined reduce-and-validate, as it was ──────
# Copied verbatim from orchestrator/core/_team_state.py before the reducer and the validator
# were split out of it (``self`` became ``state``); do not change it to follow the code.
