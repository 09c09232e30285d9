"""Properties of folding a team run: :meth:`TeamState.apply`.

``apply`` writes a chat action's or a ``session/chatUpdated``'s result in place when nothing
is in flight, instead of going through a transition. The reference here is the general path
(``prepare(validate=False)`` then ``commit``), fed the same facts: a real fan-out's log with
generated chat and session actions slipped in on the session, on the run's chats and on a
chat that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp.actions import (
    SessionChatUpdatedAction,
)
from orchestrator.core import (
    Action,
    Fact,
    TeamState,
)
from tests.support.examples import examples
from tests.support.strategies import state_actions
from tests.support.team_state import assert_same, fanout_facts


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
        """A real run's log (every kind of fact a fan-out makes) folds to the same state."""
        facts = fanout_facts()
        assert any(fact.action.type.startswith("chat/") for fact in facts)
        assert any(fact.action.type == "session/chatUpdated" for fact in facts)
        assert_same(*fold_both(facts))

    def test_a_catalog_update_off_the_session_channel_is_ignored(self) -> None:
        """``session/chatUpdated`` on a chat's channel changes nothing, on both paths."""
        facts = list(fanout_facts())
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


def _fact(facts: Sequence[Fact], position: int, channel: str, action: Action) -> Fact:
    neighbour = facts[min(position, len(facts) - 1)]
    return Fact(
        sequence=0, session=neighbour.session, channel=channel, at=neighbour.at, action=action
    )


# ─── The team reducer and validator ──────────────────────────────────────────


# ─── The reference: TeamState's combined reduce-and-validate, as it was ──────
# Copied verbatim from orchestrator/core/_team_state.py before the reducer and the validator
# were split out of it (``self`` became ``state``); do not change it to follow the code.
