"""Specifications of the session reducer and the ChatSummary helpers.

The conformance fixtures (``tests/ahp/test_reducer_fixtures.py``) pin the upstream semantics
of every ``session/*`` action; the tests here cover what JSON fixtures cannot: object identity
of no-ops, the chat catalog operations the runtime applies for thousands of workers, and the
helpers that keep each ChatSummary equal to the fields its ChatState inlines.
"""

from __future__ import annotations

import typing

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator import LocalProtocolError
from orchestrator.ahp import (
    _session_reducer,
    chat_summary_action,
    reduce_session,
    session_status,
    summary_action,
    summary_changes,
    summary_of,
)
from orchestrator.ahp.actions import (
    ChatActivityChangedAction,
    ChatSummaryChanges,
    SessionAction,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    SessionConfigChangedAction,
    SessionCustomizationRemovedAction,
    SessionCustomizationToggledAction,
    SessionInputNeededRemovedAction,
    SessionInputNeededSetAction,
    SessionIsArchivedChangedAction,
    SessionIsReadChangedAction,
    SessionMcpServerStartRequestedAction,
    SessionTitleChangedAction,
    SessionWorkingDirectoryRemovedAction,
    SessionWorkingDirectorySetAction,
    StateAction,
    UnknownAction,
)
from orchestrator.ahp.state import (
    ChatInputRequest,
    ChatInteractivity,
    ChatOrigin,
    ChatState,
    ChatSummary,
    ForkChatOrigin,
    SessionChatInputRequest,
    SessionLifecycle,
    SessionState,
    SessionStatus,
    SideChatOrigin,
    SideChatSelection,
    ToolChatOrigin,
    UserChatOrigin,
)
from tests.support.strategies import session_actions, session_states, state_actions

NOW = "1970-01-01T00:00:09.999Z"


def make_summary(resource: str = "ahp-chat:/c1", **fields: typing.Any) -> ChatSummary:
    defaults: dict[str, typing.Any] = {
        "title": "Chat",
        "status": SessionStatus.IDLE,
        "modified_at": "1970-01-01T00:00:01.000Z",
        "origin": UserChatOrigin(),
    }
    return ChatSummary(resource=resource, **{**defaults, **fields})


def make_session(*chats: ChatSummary, **fields: typing.Any) -> SessionState:
    defaults: dict[str, typing.Any] = {
        "provider": "copilot",
        "title": "Session",
        "status": SessionStatus.IDLE,
        "lifecycle": SessionLifecycle.READY,
        "active_clients": (),
    }
    return SessionState(chats=chats, **{**defaults, **fields})


def make_chat(resource: str = "ahp-chat:/c1", **fields: typing.Any) -> ChatState:
    defaults: dict[str, typing.Any] = {
        "title": "Chat",
        "status": SessionStatus.IDLE,
        "modified_at": "1970-01-01T00:00:01.000Z",
        "turns": (),
    }
    return ChatState(resource=resource, **{**defaults, **fields})


# ─── Strategies ──────────────────────────────────────────────────────────────
# Small alphabets, so that two draws are often equal and "unchanged" paths get exercised.

uris = st.sampled_from(["ahp-chat:/a", "ahp-chat:/b", "file:///repo-a", "file:///repo-b"])
short_texts = st.sampled_from(["", "x", "Thinking", "Waiting for approval"])
timestamps = st.sampled_from(["1970-01-01T00:00:01.000Z", "2025-03-10T18:42:03.123Z"])
statuses = st.integers(min_value=0, max_value=2**32 - 1).map(SessionStatus) | st.sampled_from(
    list(SessionStatus)
)
origins: st.SearchStrategy[ChatOrigin] = st.one_of(
    st.builds(UserChatOrigin),
    st.builds(ForkChatOrigin, chat=uris, turn_id=short_texts),
    st.builds(
        SideChatOrigin,
        chat=uris,
        turn_id=short_texts,
        selection=st.none()
        | st.builds(SideChatSelection, text=short_texts, response_part_id=st.none() | short_texts),
    ),
    st.builds(ToolChatOrigin, chat=uris, tool_call_id=short_texts),
)


@st.composite
def chat_states(draw: st.DrawFn, resource: str = "ahp-chat:/worker") -> ChatState:
    """A ChatState with random summary fields (and some non-summary ones, which must not leak)."""
    return ChatState(
        resource=resource,
        title=draw(short_texts),
        status=draw(statuses),
        activity=draw(st.none() | short_texts),
        modified_at=draw(timestamps),
        origin=draw(st.none() | origins),
        interactivity=draw(st.none() | st.sampled_from(ChatInteractivity)),
        working_directories=draw(st.none() | st.lists(uris, max_size=3).map(tuple)),
        turns=(),
        turns_next_cursor=draw(st.none() | short_texts),
        meta=draw(st.none() | st.just({"k": "v"})),
    )


def without_clears(before: ChatState, after: ChatState) -> ChatState:
    """``after``, except that optional fields it clears keep their ``before`` values."""
    kept = {
        field.name: getattr(before, field.name)
        for field in attrs.fields(ChatSummaryChanges)
        if getattr(after, field.name) is None
    }
    return attrs.evolve(after, **kept)


# ─── Dispatch ────────────────────────────────────────────────────────────────


class TestDispatch:
    def test_every_session_action_has_a_handler(self) -> None:
        """Each class of the SessionAction union is reduced; none falls through to the no-op."""
        missing = set(typing.get_args(SessionAction)) - set(_session_reducer._HANDLERS)
        assert missing == set()

    def test_unknown_action_is_a_no_op(self) -> None:
        """An action of a type this project does not model returns the same state object."""
        state = make_session(make_summary())
        action = UnknownAction(raw={"type": "session/somethingNew", "x": 1})
        assert reduce_session(state, action, now=NOW) is state

    def test_chat_action_is_a_no_op(self) -> None:
        """A chat action routed to the session reducer changes nothing."""
        state = make_session(make_summary())
        assert reduce_session(state, ChatActivityChangedAction(activity="T"), now=NOW) is state

    def test_setting_a_field_to_its_current_value_is_a_no_op(self) -> None:
        """An action that would write the value already there returns the same state object."""
        state = make_session(title="Same")
        assert reduce_session(state, SessionTitleChangedAction(title="Same"), now=NOW) is state


class TestTotality:
    @given(state=session_states(), action=state_actions())
    def test_any_action_reduces_without_error(
        self, state: SessionState, action: StateAction
    ) -> None:
        """Every state action, of any channel, reduces against any session state."""
        assert isinstance(reduce_session(state, action, now=NOW), SessionState)

    @given(state=session_states(), action=session_actions())
    def test_an_unchanged_state_is_the_same_object(
        self, state: SessionState, action: StateAction
    ) -> None:
        """Whenever an action changes nothing, the reducer hands back ``state`` itself."""
        new = reduce_session(state, action, now=NOW)
        if new == state:
            assert new is state


# ─── Chat catalog ────────────────────────────────────────────────────────────


class TestChatAdded:
    def test_appends_a_new_chat(self) -> None:
        """A chat with a new resource goes to the end of the catalog."""
        first = make_summary("ahp-chat:/c1")
        second = make_summary("ahp-chat:/c2", title="Second")
        state = make_session(first)
        new = reduce_session(state, SessionChatAddedAction(summary=second), now=NOW)
        assert new.chats == (first, second)
        assert state.chats == (first,)

    def test_upserts_an_existing_chat_in_place(self) -> None:
        """Re-announcing a chat replaces its entry and keeps its position in the catalog."""
        a, b, c = (make_summary(f"ahp-chat:/{n}") for n in "abc")
        replacement = make_summary("ahp-chat:/b", title="Renamed", activity="Thinking")
        state = make_session(a, b, c)
        new = reduce_session(state, SessionChatAddedAction(summary=replacement), now=NOW)
        assert new.chats == (a, replacement, c)
        assert new.chats[0] is a
        assert new.chats[2] is c

    def test_re_adding_an_equal_summary_is_a_no_op(self) -> None:
        """An upsert with an entry equal to the one present returns the same state object."""
        state = make_session(make_summary())
        action = SessionChatAddedAction(summary=make_summary())
        assert reduce_session(state, action, now=NOW) is state

    def test_preserves_side_chat_selection(self) -> None:
        """The selection snapshot of a side chat's origin is kept as sent."""
        origin = SideChatOrigin(
            chat="ahp-chat:/main",
            turn_id="turn-active",
            selection=SideChatSelection(text="const value = compute()", response_part_id="part-7"),
        )
        summary = make_summary(origin=origin)
        new = reduce_session(make_session(), SessionChatAddedAction(summary=summary), now=NOW)
        assert new.chats[0].origin == origin


class TestChatRemoved:
    def test_removes_the_chat(self) -> None:
        """The chat leaves the catalog; the others keep their order."""
        a, b, c = (make_summary(f"ahp-chat:/{n}") for n in "abc")
        state = make_session(a, b, c, default_chat="ahp-chat:/a")
        new = reduce_session(state, SessionChatRemovedAction(chat="ahp-chat:/b"), now=NOW)
        assert new.chats == (a, c)
        assert new.default_chat == "ahp-chat:/a"

    def test_clears_default_chat_when_it_is_removed(self) -> None:
        """Removing the default chat leaves the session without one."""
        state = make_session(make_summary("ahp-chat:/a"), default_chat="ahp-chat:/a")
        new = reduce_session(state, SessionChatRemovedAction(chat="ahp-chat:/a"), now=NOW)
        assert new.chats == ()
        assert new.default_chat is None

    def test_unknown_chat_is_a_no_op(self) -> None:
        """Removing a chat the catalog does not hold returns the same state object."""
        state = make_session(make_summary("ahp-chat:/a"), default_chat="ahp-chat:/a")
        assert reduce_session(state, SessionChatRemovedAction(chat="ahp-chat:/x"), now=NOW) is state


class TestChatUpdated:
    def test_writes_only_the_fields_present(self) -> None:
        """Fields carried in ``changes`` are written; every other field is preserved."""
        entry = make_summary(title="Chat 1", interactivity=ChatInteractivity.READ_ONLY)
        state = make_session(entry)
        changes = ChatSummaryChanges(
            status=SessionStatus.INPUT_NEEDED,
            activity="Waiting for approval",
            modified_at="1970-01-01T00:00:02.000Z",
        )
        new = reduce_session(
            state, SessionChatUpdatedAction(chat=entry.resource, changes=changes), now=NOW
        )
        assert new.chats == (
            attrs.evolve(
                entry,
                status=SessionStatus.INPUT_NEEDED,
                activity="Waiting for approval",
                modified_at="1970-01-01T00:00:02.000Z",
            ),
        )

    def test_ignores_resource_in_changes(self) -> None:
        """A chat's identity never changes, even if a sender puts ``resource`` in ``changes``."""
        state = make_session(make_summary("ahp-chat:/a"))
        changes = ChatSummaryChanges(resource="ahp-chat:/other", title="New")
        new = reduce_session(
            state, SessionChatUpdatedAction(chat="ahp-chat:/a", changes=changes), now=NOW
        )
        assert new.chats == (make_summary("ahp-chat:/a", title="New"),)

    def test_leaves_other_entries_untouched(self) -> None:
        """Only the addressed entry is rebuilt; the others are the same objects."""
        a, b, c = (make_summary(f"ahp-chat:/{n}") for n in "abc")
        state = make_session(a, b, c)
        action = SessionChatUpdatedAction(chat="ahp-chat:/b", changes=ChatSummaryChanges(title="B"))
        new = reduce_session(state, action, now=NOW)
        assert new.chats[1].title == "B"
        assert new.chats[0] is a
        assert new.chats[2] is c

    def test_unknown_chat_is_a_no_op(self) -> None:
        """An update for a chat not (yet) announced returns the same state object."""
        state = make_session(make_summary("ahp-chat:/a"))
        action = SessionChatUpdatedAction(chat="ahp-chat:/x", changes=ChatSummaryChanges(title="T"))
        assert reduce_session(state, action, now=NOW) is state

    def test_empty_changes_are_a_no_op(self) -> None:
        """``changes`` with no field present returns the same state object."""
        state = make_session(make_summary("ahp-chat:/a"))
        action = SessionChatUpdatedAction(chat="ahp-chat:/a", changes=ChatSummaryChanges())
        assert reduce_session(state, action, now=NOW) is state

    def test_changes_equal_to_the_entry_are_a_no_op(self) -> None:
        """Writing the values an entry already has returns the same state object."""
        state = make_session(make_summary("ahp-chat:/a", title="T"))
        action = SessionChatUpdatedAction(chat="ahp-chat:/a", changes=ChatSummaryChanges(title="T"))
        assert reduce_session(state, action, now=NOW) is state


# ─── ChatSummary helpers ─────────────────────────────────────────────────────


class TestSummaryOf:
    def test_copies_every_summary_field(self) -> None:
        """The summary holds exactly the ChatSummary fields of the chat's state."""
        chat = make_chat(
            activity="Thinking",
            origin=ToolChatOrigin(chat="ahp-chat:/lead", tool_call_id="call-1"),
            interactivity=ChatInteractivity.HIDDEN,
            working_directories=("file:///repo",),
            turns_next_cursor="cursor",
        )
        expected = {field.name: getattr(chat, field.name) for field in attrs.fields(ChatSummary)}
        assert attrs.asdict(summary_of(chat), recurse=False) == expected

    def test_chat_state_inlines_every_summary_field(self) -> None:
        """ChatState declares each ChatSummary field with the same type, so none is dropped."""
        # Both classes' annotations resolved (strings until cattrs, or this, resolves
        # them: which one a test earlier in the process converted must not matter).
        state_fields = attrs.fields_dict(attrs.resolve_types(ChatState))
        for field in attrs.fields(attrs.resolve_types(ChatSummary)):
            assert field.name in state_fields, field.name
            assert state_fields[field.name].type == field.type, field.name


class TestSummaryChanges:
    def test_none_when_nothing_changed(self) -> None:
        """Equal summaries need no update."""
        assert summary_changes(make_summary(), make_summary()) is None

    def test_carries_only_changed_fields(self) -> None:
        """Unchanged fields stay absent (``None``), so the update is as small as it can be."""
        before = make_summary(activity="Thinking")
        after = make_summary(activity="Running tests", status=SessionStatus.IN_PROGRESS)
        assert summary_changes(before, after) == ChatSummaryChanges(
            activity="Running tests", status=SessionStatus.IN_PROGRESS
        )

    def test_never_carries_resource(self) -> None:
        """The identity field is left out of the changes."""
        changes = summary_changes(make_summary(title="a"), make_summary(title="b"))
        assert changes is not None
        assert changes.resource is None

    def test_refuses_to_clear_a_field(self) -> None:
        """chatUpdated cannot clear an optional field, so asking for it is an error, not a loss."""
        with pytest.raises(LocalProtocolError, match="activity") as info:
            summary_changes(make_summary(activity="Thinking"), make_summary())
        assert info.value.path == "$.changes.activity"

    def test_refuses_two_different_chats(self) -> None:
        """The two summaries must describe the same chat."""
        with pytest.raises(LocalProtocolError, match="different chats"):
            summary_changes(make_summary("ahp-chat:/a"), make_summary("ahp-chat:/b"))


class TestSummaryAction:
    def test_none_when_nothing_changed(self) -> None:
        """No action is needed for equal summaries."""
        assert summary_action(make_summary(), make_summary()) is None

    def test_chat_updated_for_expressible_changes(self) -> None:
        """Changed fields travel as a session/chatUpdated addressed to the chat."""
        after = make_summary(title="Renamed")
        assert summary_action(make_summary(), after) == SessionChatUpdatedAction(
            chat=after.resource, changes=ChatSummaryChanges(title="Renamed")
        )

    def test_chat_added_when_a_field_is_cleared(self) -> None:
        """A cleared field is sent as a whole-summary upsert, which replaces the entry in place."""
        after = make_summary()
        assert summary_action(make_summary(activity="Thinking"), after) == (
            SessionChatAddedAction(summary=after)
        )

    def test_refuses_two_different_chats(self) -> None:
        """The two summaries must describe the same chat."""
        with pytest.raises(LocalProtocolError, match="different chats"):
            summary_action(make_summary("ahp-chat:/a"), make_summary("ahp-chat:/b"))


class TestSummaryProperties:
    @given(old=chat_states(), new=chat_states())
    def test_chat_updated_with_summary_changes_reproduces_the_summary(
        self, old: ChatState, new: ChatState
    ) -> None:
        """chatUpdated(summary_changes(old, new)) turns the session's entry into summary_of(new).

        ``new`` clears no field ``old`` has (chatUpdated cannot express that; see the property
        below for the general case). Neighbouring entries are untouched.
        """
        new = without_clears(old, new)
        left, right = make_summary("ahp-chat:/left"), make_summary("ahp-chat:/right")
        state = make_session(left, summary_of(old), right)
        changes = summary_changes(summary_of(old), summary_of(new))
        if changes is None:
            assert summary_of(old) == summary_of(new)
            return
        action = SessionChatUpdatedAction(chat=old.resource, changes=changes)
        after = reduce_session(state, action, now=NOW)
        assert after.chats == (left, summary_of(new), right)
        assert after.chats[0] is left
        assert after.chats[2] is right

    @given(old=chat_states(), new=chat_states())
    def test_summary_action_keeps_the_invariant(self, old: ChatState, new: ChatState) -> None:
        """For any two states of a chat, reducing summary_action() yields summary_of(new).

        This is the runtime's invariant: each ChatSummary equals the fields its ChatState
        inlines, after every chat action, with the entry keeping its place in the catalog.
        """
        left, right = make_summary("ahp-chat:/left"), make_summary("ahp-chat:/right")
        state = make_session(left, summary_of(old), right)
        action = summary_action(summary_of(old), summary_of(new))
        after = state if action is None else reduce_session(state, action, now=NOW)
        assert after.chats == (left, summary_of(new), right)

    @given(old=chat_states(), new=chat_states(), relation=st.sampled_from(["any", "same", "next"]))
    def test_chat_summary_action_is_summary_action_of_summary_of(
        self, old: ChatState, new: ChatState, relation: str
    ) -> None:
        """chat_summary_action(entry, chat) is summary_action(entry, summary_of(chat)), refusals
        included: for any two chats, the same chat, and a chat whose next state keeps every
        summary field (the usual case, answered without building a summary)."""
        if relation == "same":
            new = attrs.evolve(new, resource=old.resource)
        elif relation == "next":
            new = attrs.evolve(old, turns=new.turns, active_turn=new.active_turn, draft=new.draft)
        entry = summary_of(old)
        try:
            expected = summary_action(entry, summary_of(new))
        except LocalProtocolError:
            with pytest.raises(LocalProtocolError):
                chat_summary_action(entry, new)
            return
        assert chat_summary_action(entry, new) == expected
        if relation == "next":
            assert expected is None

    @given(old=chat_states(), new=chat_states())
    def test_no_action_means_no_change(self, old: ChatState, new: ChatState) -> None:
        """summary_action() is None exactly when the two summaries are equal."""
        assert (summary_action(summary_of(old), summary_of(new)) is None) == (
            summary_of(old) == summary_of(new)
        )


# ─── Status bits and other no-ops ────────────────────────────────────────────


class TestStatusFlags:
    def test_read_and_archived_keep_unknown_bits(self) -> None:
        """Flipping a flag leaves every other bit, named or not, as it was."""
        state = make_session(status=SessionStatus(int(SessionStatus.IN_PROGRESS) | 1 << 12))
        read = reduce_session(state, SessionIsReadChangedAction(is_read=True), now=NOW)
        archived = reduce_session(read, SessionIsArchivedChangedAction(is_archived=True), now=NOW)
        assert int(archived.status) == (
            int(SessionStatus.IN_PROGRESS)
            | int(SessionStatus.IS_READ)
            | int(SessionStatus.IS_ARCHIVED)
            | 1 << 12
        )

    def test_input_needed_round_trip_restores_in_progress(self) -> None:
        """A blocked turn becomes input-needed and falls back to in-progress when unblocked."""
        state = make_session(status=SessionStatus.IN_PROGRESS | SessionStatus.IS_READ)
        request = SessionChatInputRequest(
            id="ahp-chat:/c1#req-1",
            chat="ahp-chat:/c1",
            request=ChatInputRequest(id="req-1", message="Which environment?"),
        )
        blocked = reduce_session(state, SessionInputNeededSetAction(request=request), now=NOW)
        assert blocked.status == SessionStatus.INPUT_NEEDED | SessionStatus.IS_READ
        unblocked = reduce_session(blocked, SessionInputNeededRemovedAction(id=request.id), now=NOW)
        assert unblocked.status == state.status
        assert unblocked.input_needed is None


class TestNoOpIdentity:
    @pytest.mark.parametrize(
        "action",
        [
            pytest.param(SessionConfigChangedAction(config={"a": 1}), id="config-without-schema"),
            pytest.param(SessionInputNeededRemovedAction(id="absent"), id="input-needed-absent"),
            pytest.param(SessionWorkingDirectoryRemovedAction(directory="file:///x"), id="wd"),
            pytest.param(SessionCustomizationToggledAction(id="x", enabled=True), id="toggle"),
            pytest.param(SessionCustomizationRemovedAction(id="x"), id="customization-removed"),
            pytest.param(SessionMcpServerStartRequestedAction(id="x"), id="mcp-start"),
        ],
    )
    def test_inapplicable_action_returns_same_state(self, action: SessionAction) -> None:
        """An action whose target is absent returns the very same state object."""
        state = make_session(make_summary())
        assert reduce_session(state, action, now=NOW) is state

    def test_adding_a_present_working_directory_is_a_no_op(self) -> None:
        """Working directories are a set: adding one already present changes nothing."""
        state = make_session(working_directories=("file:///repo",))
        action = SessionWorkingDirectorySetAction(directory="file:///repo")
        assert reduce_session(state, action, now=NOW) is state


class TestSessionStatus:
    """A session's catalog status by the schema's rule across its chats."""

    @staticmethod
    def session(*chats: tuple[str, SessionStatus, str], default: str | None = None) -> SessionState:
        return SessionState(
            provider="p",
            title="t",
            status=SessionStatus.IDLE | SessionStatus.IS_READ,
            lifecycle=SessionLifecycle.READY,
            active_clients=(),
            default_chat=default,
            chats=tuple(
                ChatSummary(resource=uri, title=uri, status=status, modified_at=at)
                for uri, status, at in chats
            ),
        )

    def test_no_chat_is_the_session_s_own(self) -> None:
        assert session_status(self.session()) == SessionStatus.IDLE | SessionStatus.IS_READ

    def test_the_default_chat_speaks_else_the_latest(self) -> None:
        lead = ("ahp-chat:/lead", SessionStatus.IN_PROGRESS, "2026-01-01T00:00:00.000Z")
        late = ("ahp-chat:/late", SessionStatus.IDLE, "2026-01-02T00:00:00.000Z")
        flags = SessionStatus.IS_READ
        assert session_status(self.session(lead, late, default=lead[0])) == (
            SessionStatus.IN_PROGRESS | flags
        )
        assert session_status(self.session(lead, late)) == SessionStatus.IDLE | flags

    def test_input_needed_and_error_anywhere_are_promoted(self) -> None:
        lead = ("ahp-chat:/lead", SessionStatus.IN_PROGRESS, "2026-01-01T00:00:00.000Z")
        asks = ("ahp-chat:/w1", SessionStatus.INPUT_NEEDED, "2026-01-01T00:00:00.000Z")
        broke = ("ahp-chat:/w2", SessionStatus.ERROR, "2026-01-01T00:00:00.000Z")
        flags = SessionStatus.IS_READ
        assert session_status(self.session(lead, asks, default=lead[0])) == (
            SessionStatus.INPUT_NEEDED | flags
        )
        assert session_status(self.session(lead, asks, broke, default=lead[0])) == (
            SessionStatus.ERROR | flags
        )
