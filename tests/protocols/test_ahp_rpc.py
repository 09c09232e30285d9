"""The AHP transport, pure: a frame read into a call or refused with the JSON-RPC code the
peer gets back, version negotiation, the frames sent, and which envelopes a channel gets for
a fact."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.ahp import reduce_session
from orchestrator.ahp.actions import (
    ActionEnvelope,
    ActionOrigin,
    ChatActivityChangedAction,
    ChatSummaryChanges,
    SessionChatAddedAction,
    SessionChatRemovedAction,
    SessionChatUpdatedAction,
    SessionTitleChangedAction,
)
from orchestrator.ahp.commands import ErrorCode, InitializeParams, PingParams, UnsubscribeParams
from orchestrator.ahp.state import (
    ChatInteractivity,
    ChatSummary,
    SessionStatus,
    UserChatOrigin,
)
from orchestrator.base import JsonLimits, RpcError, evolve
from orchestrator.core import Fact, TeamState, new_session_state, summary_updates
from orchestrator.protocols import (
    channel_envelopes,
    error_frame,
    negotiate,
    notification_frame,
    parse_call,
    result_frame,
    session_snapshot_state,
)
from tests.support.examples import examples
from tests.support.scenarios import LEAD, SCENARIOS, SESSION, Log
from tests.support.team_state import facts_before_35, fanout_facts


def call(message: Any, max_bytes: int = 10_000) -> Any:
    frame = message if isinstance(message, str | bytes) else json.dumps(message)
    return parse_call(frame, max_bytes=max_bytes)


def refused(message: Any, max_bytes: int = 10_000) -> RpcError:
    with pytest.raises(RpcError) as caught:
        call(message, max_bytes)
    return caught.value


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"channel": "root"}}


class TestParseCall:
    def test_a_request_with_its_typed_params(self) -> None:
        parsed = call(
            {
                "jsonrpc": "2.0",
                "id": "a",
                "method": "initialize",
                "params": {"channel": "root", "protocolVersions": ["0.7.0"], "clientId": "c"},
            }
        )
        assert (parsed.id, parsed.method, parsed.is_request) == ("a", "initialize", True)
        assert parsed.params == InitializeParams(
            channel="root", protocol_versions=("0.7.0",), client_id="c"
        )

    def test_a_notification_has_no_id(self) -> None:
        parsed = call({"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": "x"}})
        assert (parsed.id, parsed.is_request) == (None, False)
        assert parsed.params == UnsubscribeParams(channel="x")

    def test_params_left_out_are_read_as_an_empty_object(self) -> None:
        with pytest.raises(RpcError) as caught:
            call({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        assert caught.value.message.startswith("params.channel: ")
        assert call(PING).params == PingParams(channel="root")

    @pytest.mark.parametrize(
        ("frame", "code", "message", "request_id"),
        [
            (b"{}", ErrorCode.INVALID_REQUEST, "send JSON-RPC as text frames, not binary", None),
            ("{nope", ErrorCode.PARSE_ERROR, "not JSON: ", None),
            (
                "[]",
                ErrorCode.INVALID_REQUEST,
                "expected one JSON-RPC message (an object), got a batch (an array)",
                None,
            ),
            (
                '"x"',
                ErrorCode.INVALID_REQUEST,
                "expected one JSON-RPC message (an object), got str",
                None,
            ),
            (
                {"jsonrpc": "2.0", "id": True, "method": "ping"},
                ErrorCode.INVALID_REQUEST,
                "id: expected a string or an integer",
                None,
            ),
            (
                {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
                ErrorCode.INVALID_REQUEST,
                "id: expected a string or an integer",
                None,
            ),
            (
                {"jsonrpc": "1.0", "id": 4, "method": "ping"},
                ErrorCode.INVALID_REQUEST,
                'jsonrpc: expected "2.0"',
                4,
            ),
            (
                {"jsonrpc": "2.0", "id": 4, "result": {}},
                ErrorCode.INVALID_REQUEST,
                "a response, but this host sends no requests",
                4,
            ),
            (
                {"jsonrpc": "2.0", "id": 4, "method": ""},
                ErrorCode.INVALID_REQUEST,
                "method: expected a string",
                4,
            ),
            (
                {"jsonrpc": "2.0", "id": "q", "method": "fly"},
                ErrorCode.METHOD_NOT_FOUND,
                "no method 'fly' (methods: createChat, ",
                "q",
            ),
            (
                {"jsonrpc": "2.0", "method": "ping", "params": {"channel": "r"}},
                ErrorCode.INVALID_REQUEST,
                "ping is a request: give it an id",
                None,
            ),
            (
                {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": []},
                ErrorCode.INVALID_PARAMS,
                "params: expected an object",
                4,
            ),
            (
                {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"channel": 3}},
                ErrorCode.INVALID_PARAMS,
                "params.channel: ",
                4,
            ),
        ],
    )
    def test_each_bad_frame_gets_its_code_and_the_id_when_it_was_read(
        self, frame: Any, code: int, message: str, request_id: str | int | None
    ) -> None:
        error = refused(frame)
        assert (error.code, error.id) == (code, request_id)
        assert error.message.startswith(message), error.message

    def test_the_size_limit_counts_utf8_bytes(self) -> None:
        frame = json.dumps(PING | {"pad": "é" * 20}, ensure_ascii=False)
        assert call(frame, max_bytes=len(frame.encode())).method == "ping"
        error = refused(frame, max_bytes=len(frame.encode()) - 1)
        assert error.code == ErrorCode.INVALID_REQUEST
        assert error.message == f"the frame is over {len(frame.encode()) - 1} bytes"

    def test_json_nested_too_deep_is_a_parse_error_naming_where(self) -> None:
        frame = json.dumps(PING | {"x": [[[1]]]})
        with pytest.raises(RpcError) as caught:
            parse_call(frame, max_bytes=1000, limits=JsonLimits(max_depth=3))
        assert caught.value.code == ErrorCode.PARSE_ERROR
        assert caught.value.message.startswith("$.x[0][0]: ")

    @settings(max_examples=examples(60))
    @given(
        message=st.dictionaries(
            st.sampled_from(["jsonrpc", "id", "method", "params", "result"]),
            st.none()
            | st.booleans()
            | st.integers(-5, 5)
            | st.sampled_from(["2.0", "ping", "unsubscribe", "fly", ""])
            | st.just({"channel": "c"}),
        )
    )
    def test_any_object_is_a_call_or_an_rpc_error(self, message: dict[str, Any]) -> None:
        """Never another exception; a call's id is what the frame said."""
        outcome: Any
        try:
            outcome = call(message)
        except RpcError as exc:
            outcome = exc
        if isinstance(outcome, RpcError):
            assert outcome.code in set(ErrorCode)
            assert outcome.id is None or outcome.id == message.get("id")
        else:
            assert outcome.id == message.get("id")
            assert outcome.is_request == ("id" in message)


class TestNegotiate:
    @pytest.mark.parametrize(
        ("offered", "chosen"),
        [
            (("0.7.0",), "0.7.0"),
            (("0.7.3", "0.7.1"), "0.7.3"),
            (("0.7.0", "0.8.1", "0.9.0"), "0.8.1"),
            (("1.0.0", "0.8.0-rc.1"), "0.8.0-rc.1"),
            (("nonsense", "0.7.2"), "0.7.2"),
        ],
    )
    def test_the_highest_supported_version_offered(
        self, offered: tuple[str, ...], chosen: str
    ) -> None:
        assert negotiate(offered) == chosen

    @pytest.mark.parametrize("offered", [(), ("0.6.9",), ("0.9.0", "1.7.0"), ("07.0.0", "v0.7.0")])
    def test_none_supported_says_which_are(self, offered: tuple[str, ...]) -> None:
        with pytest.raises(RpcError) as caught:
            negotiate(offered)
        assert caught.value.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
        assert caught.value.data == {"supportedVersions": ["^0.7.0", "^0.8.0"]}
        assert caught.value.message.endswith("is supported (supported: ^0.7.0, ^0.8.0)")


class TestFrames:
    def test_a_result(self) -> None:
        assert json.loads(result_frame(7, {"ok": True})) == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"ok": True},
        }
        assert json.loads(result_frame("a", None))["result"] is None

    def test_an_error_with_its_data_and_id(self) -> None:
        error = RpcError(ErrorCode.NOT_FOUND, "no such chat", data={"chat": "c"}, id="r")
        assert json.loads(error_frame(error)) == {
            "jsonrpc": "2.0",
            "id": "r",
            "error": {"code": -32008, "message": "no such chat", "data": {"chat": "c"}},
        }

    def test_an_error_that_names_no_request_has_id_null(self) -> None:
        frame = json.loads(error_frame(RpcError(ErrorCode.PARSE_ERROR, "not JSON")))
        assert frame["id"] is None
        assert "data" not in frame["error"]

    def test_a_notification_carries_the_envelope_in_wire_names(self) -> None:
        envelope = ActionEnvelope(
            channel=SESSION, action=SessionTitleChangedAction(title="Ship"), server_seq=3
        )
        frame = notification_frame("action", envelope)
        assert json.loads(frame) == {
            "jsonrpc": "2.0",
            "method": "action",
            "params": {
                "channel": SESSION,
                "action": {"type": "session/titleChanged", "title": "Ship"},
                "serverSeq": 3,
            },
        }

    def test_frames_are_compact_and_keep_text_as_is(self) -> None:
        frame = result_frame(1, {"title": "café"})
        assert frame == '{"jsonrpc":"2.0","id":1,"result":{"title":"café"}}'


def summary(chat: str, interactivity: ChatInteractivity) -> ChatSummary:
    return ChatSummary(
        resource=chat,
        title="t",
        status=SessionStatus.IDLE,
        modified_at="2026-11-22T21:00:00.000Z",
        origin=UserChatOrigin(),
        interactivity=interactivity,
    )


def envelopes_of(fact: Fact, channel: str, hidden: frozenset[str] = frozenset()) -> list[Any]:
    return channel_envelopes(
        fact, channel, session_title="the title", is_hidden=lambda chat: chat in hidden
    )


class TestChannelEnvelopes:
    def test_the_run_s_start_is_the_session_s_title_on_the_session_channel_only(self) -> None:
        log = Log()
        log.run_started()
        started = log.facts[0]
        assert envelopes_of(started, SESSION) == [
            ActionEnvelope(
                channel=SESSION,
                action=SessionTitleChangedAction(title="the title"),
                server_seq=started.sequence,
            )
        ]
        assert envelopes_of(started, LEAD) == []

    def test_team_facts_are_no_ahp_action(self) -> None:
        log = Log()
        log.run_started()
        team = [f for f in log.facts if f.type.startswith("team/") and f.type != "team/runStarted"]
        assert team
        assert all(envelopes_of(fact, SESSION) == [] for fact in team)

    def test_a_chat_fact_reaches_its_own_channel_with_its_origin(self) -> None:
        log = Log()
        log.run_started()
        log.turn(LEAD, "hi")
        fact = evolve(log.facts[-1], origin=ActionOrigin(client_id="c1", client_seq=4))
        [envelope] = envelopes_of(fact, LEAD)
        assert (envelope.channel, envelope.action, envelope.server_seq) == (
            LEAD,
            fact.action,
            fact.sequence,
        )
        assert envelope.origin == fact.origin
        assert envelopes_of(fact, SESSION) == []

    @pytest.mark.parametrize("scenario", sorted(SCENARIOS))
    def test_a_fact_s_envelopes_are_on_its_own_channel_only(self, scenario: str) -> None:
        """The AHP socket finds the one subscription a fact concerns by its channel: no
        fact of a whole team's run makes an envelope on another channel (but for its derived
        catalog update, given apart)."""
        facts = SCENARIOS[scenario]().facts
        channels = {f.channel for f in facts} | {SESSION}
        assert len(channels) > 2
        reached = [
            (fact.channel, channel)
            for fact in facts
            for channel in channels
            if envelopes_of(fact, channel)
        ]
        assert reached  # the run's chats' actions reach their channels
        assert all(own == channel for own, channel in reached)

    def test_hidden_chats_stay_out_of_the_catalog(self) -> None:
        added = Fact(
            sequence=5,
            session=SESSION,
            channel=SESSION,
            at="2026-11-22T21:00:00.000Z",
            action=SessionChatAddedAction(summary=summary("ahp-chat:/h", ChatInteractivity.HIDDEN)),
        )
        assert envelopes_of(added, SESSION) == []
        shown = evolve(
            added,
            action=SessionChatAddedAction(summary=summary("ahp-chat:/v", ChatInteractivity.FULL)),
        )
        assert len(envelopes_of(shown, SESSION)) == 1
        removed = evolve(added, action=SessionChatRemovedAction(chat="ahp-chat:/h"))
        assert envelopes_of(removed, SESSION, frozenset({"ahp-chat:/h"})) == []
        assert len(envelopes_of(removed, SESSION)) == 1
        # A derived catalog update of a hidden chat is left out too.
        update = SessionChatUpdatedAction(
            chat="ahp-chat:/h", changes=ChatSummaryChanges(activity="x")
        )
        chat_fact = evolve(
            added, channel="ahp-chat:/h", action=ChatActivityChangedAction(activity="x")
        )
        hidden = frozenset({"ahp-chat:/h"})
        assert (
            channel_envelopes(
                chat_fact, SESSION, session_title="t", is_hidden=hidden.__contains__, summary=update
            )
            == []
        )
        assert (
            len(
                channel_envelopes(
                    chat_fact, SESSION, session_title="t", is_hidden=lambda _: False, summary=update
                )
            )
            == 1
        )

    def test_a_recorded_catalog_update_is_not_sent(self) -> None:
        """Journals before issue 35 recorded ``session/chatUpdated``: its chat facts derived
        what it says, and were sent that, so it is sent nothing."""
        recorded = Fact(
            sequence=9,
            session=SESSION,
            channel=SESSION,
            at="2026-11-22T21:00:00.000Z",
            action=SessionChatUpdatedAction(chat=LEAD, changes=ChatSummaryChanges(title="x")),
        )
        assert envelopes_of(recorded, SESSION) == []
        assert envelopes_of(recorded, LEAD) == []

    def test_a_derived_catalog_update_is_on_the_session_channel_at_its_fact_s_seq(self) -> None:
        """A chat fact's derived catalog update reaches the session channel with the chat
        fact's ``serverSeq`` and no origin; the chat's channel gets the fact itself."""
        log = Log()
        log.run_started()
        log.turn(LEAD, "hi")
        fact = evolve(log.facts[-1], origin=ActionOrigin(client_id="c1", client_seq=4))
        update = SessionChatUpdatedAction(
            chat=LEAD, changes=ChatSummaryChanges(modified_at=fact.at)
        )
        envelopes = channel_envelopes(
            fact, SESSION, session_title="t", is_hidden=lambda _: False, summary=update
        )
        assert envelopes == [
            ActionEnvelope(channel=SESSION, action=update, server_seq=fact.sequence)
        ]
        [own] = channel_envelopes(
            fact, LEAD, session_title="t", is_hidden=lambda _: False, summary=update
        )
        assert own.action == fact.action
        assert own.origin == fact.origin
        # Another chat's channel gets neither.
        assert (
            channel_envelopes(
                fact,
                "ahp-chat:/other",
                session_title="t",
                is_hidden=lambda _: False,
                summary=update,
            )
            == []
        )


class TestSessionSnapshotState:
    def test_a_session_not_prompted_yet_is_new_and_untitled(self) -> None:
        assert session_snapshot_state(None) == new_session_state()

    def test_hidden_chats_are_left_out_of_the_catalog(self) -> None:
        visible = summary("ahp-chat:/v", ChatInteractivity.FULL)
        hidden = summary("ahp-chat:/h", ChatInteractivity.HIDDEN)
        state = evolve(new_session_state("s"), chats=[hidden, visible])
        assert session_snapshot_state(state).chats == [visible]
        plain = evolve(new_session_state("s"), chats=[visible])
        assert session_snapshot_state(plain) is plain


class TestSessionChannelFold:
    """The invariant of the module docstring on the session channel, with the catalog
    updates derived (issue 35): a snapshot at any fact, plus the envelopes of the facts after
    it, folds to the final snapshot; for a run of today's and for a journal from before
    issue 35 (whose recorded ``session/chatUpdated`` are not sent)."""

    @pytest.mark.parametrize("which", ["today", "before-35"])
    def test_a_snapshot_plus_the_actions_after_it_is_the_last_snapshot(self, which: str) -> None:
        facts = fanout_facts() if which == "today" else facts_before_35()
        session = facts[0].session
        summaries = summary_updates(session, facts)
        final = TeamState.fold(session, facts)
        title = final.session.title if final.session is not None else ""
        sent: list[ActionEnvelope] = []
        for fact in facts:
            sent += channel_envelopes(
                fact,
                session,
                session_title=title,
                is_hidden=lambda chat: False,
                summary=summaries.get(fact.sequence),
            )
        seqs = [e.server_seq for e in sent]
        assert seqs == sorted(set(seqs)), "strictly increasing"
        assert not [e for e in sent if e.action.type == "session/chatUpdated" and e.origin]
        expected = session_snapshot_state(final.session)
        state = TeamState(session)
        for n, at in enumerate([None, *facts]):
            if at is not None:
                state.apply(at)
            start = session_snapshot_state(state.session)
            folded = start
            for envelope in sent:
                if envelope.server_seq > state.last_sequence:
                    folded = reduce_session(folded, envelope.action, now="")
            assert folded == expected, (which, n)
