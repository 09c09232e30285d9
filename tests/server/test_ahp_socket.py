"""The AHP host on /ahp, on a real daemon on loopback, driven by a JSON-RPC client."""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected

from orchestrator.base import FactLogError
from orchestrator.core import ApprovalResolved, TeamState, _team_state, build_graph, summary_updates
from orchestrator.journal import JournalReader
from orchestrator.protocols import AgentChannelProjector, notification_frame
from orchestrator.runtime import FactBus, Subscription
from orchestrator.server import Role, ServeConfig, Token, _hypercorn_ws
from orchestrator.server._agent_socket import AgentSocket
from orchestrator.sessions import Limits, SharedText, _live_session
from tests.support import teams
from tests.support.ahp_client import ROOT, AhpClient, connect_ahp, of_type, user_message
from tests.support.ahp_schemas import check_wire
from tests.support.ahp_session import (
    CLIENT,
    follow_workers_until_publish,
    new_chat,
    new_session,
    start_delivery,
    turn_started,
)
from tests.support.daemon import Client, connect, running_daemon
from tests.support.fuzz import Fuzzer
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

CLIENT_DEFAULT = "test-client"


async def completed_turn(client: AhpClient, chat: str, *, after: int = 0) -> str:
    """Subscribe to ``chat``; the id of its turn number ``after`` + 1 once complete, from
    the snapshot when it completed before the subscription, else from its action."""
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    if len(state["turns"]) > after:
        return str(state["turns"][after]["id"])
    done = await client.until_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
    )
    return str(done["action"]["turnId"])


class TestDoneMeans:
    async def test_a_session_with_a_worker_approval_and_a_reconnect(self, tmp_path: Path) -> None:
        """initialize, createSession, subscribe, createChat, a worker's approval answered by
        dispatchAction after a reconnect with per-channel cursors: every channel gets each of
        its facts exactly once, in order, across both connections."""
        async with running_daemon(tmp_path) as daemon:
            async with connect_ahp(daemon) as first:
                session, chat, session_snapshot = await start_delivery(first)
                assert session_snapshot == {
                    "resource": session,
                    "state": {
                        "provider": "delivery",
                        "title": "",
                        "status": 1,
                        "lifecycle": "ready",
                        "activeClients": [],
                        "chats": [],
                    },
                    "fromSeq": 0,
                }
                pending = await follow_workers_until_publish(first, session)
                worker = pending["channel"]
                # The worker's chat is read-only: it refuses a user message, echoing it.
                await first.dispatch(
                    worker,
                    turn_started("hi"),
                )
                refused = await first.until_action(lambda e: "rejectionReason" in e)
                assert refused["channel"] == worker
                assert "read-only" in refused["rejectionReason"]
                assert refused["origin"] == {"clientId": CLIENT, "clientSeq": 1}
                subscriptions = sorted({e["channel"] for e in first.actions} | {session, chat})
                cursors = {
                    uri: max(
                        (
                            e["serverSeq"]
                            for e in first.actions
                            if e["channel"] == uri and "rejectionReason" not in e
                        ),
                        default=0,
                    )
                    for uri in subscriptions
                }
            async with connect_ahp(daemon) as second:
                replay = await second.request(
                    "reconnect",
                    {
                        "channel": ROOT,
                        "clientId": CLIENT,
                        "lastSeenServerSeq": max(cursors.values()),
                        "subscriptions": subscriptions,
                        "cursors": cursors,
                    },
                )
                assert replay["type"] == "replay"
                assert replay["missing"] == []
                assert replay["snapshots"] == []
                turn_id = pending["action"]["turnId"]
                call_id = pending["action"]["toolCallId"]
                seq = await second.dispatch(
                    worker,
                    {
                        "type": "chat/toolCallConfirmed",
                        "turnId": turn_id,
                        "toolCallId": call_id,
                        "approved": True,
                        "confirmed": "user-action",
                    },
                )
                confirmed = await second.until_action(
                    lambda e: e["action"]["type"] == "chat/toolCallConfirmed"
                )
                assert confirmed["origin"] == {"clientId": CLIENT, "clientSeq": seq}
                assert confirmed["action"]["approved"] is True
                assert "rejectionReason" not in confirmed
                ended = await second.until_action(
                    lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
                )
                # The coordinator's catalog entry changed with it: derived, at its serverSeq.
                await second.until_action(
                    lambda e: e["channel"] == session and e["serverSeq"] == ended["serverSeq"]
                )
        facts = JournalReader(daemon.db).facts(session)
        approvals = [f.action for f in facts if isinstance(f.action, ApprovalResolved)]
        assert [(a.decision, a.principal) for a in approvals] == [("approved", "local")]
        received = [
            e
            for e in [*first.actions, *replay["actions"], *second.actions]
            if "rejectionReason" not in e
        ]
        reached = max(e["serverSeq"] for e in received)
        seqs: dict[str, list[int]] = defaultdict(list)
        for envelope in received:
            seqs[envelope["channel"]].append(envelope["serverSeq"])
        for channel in subscriptions:
            if channel == ROOT:
                continue  # root actions are numbered apart (see sessions/test_root_channel.py)
            since = first.snapshots[channel]["fromSeq"]
            expected = [
                f.sequence
                for f in facts
                if f.channel == channel
                and since < f.sequence <= reached
                and not f.type.startswith("team/")
            ]
            if channel == session:
                # The run's start (session/titleChanged), and the catalog updates derived
                # from the visible chats' facts, at those facts' sequences (issue 35).
                folded = TeamState.fold(session, facts)
                derived = [
                    seq
                    for seq, update in summary_updates(session, facts).items()
                    if since < seq <= reached
                    and str(folded.chats[getattr(update, "chat", "")].interactivity) != "hidden"
                ]
                assert derived
                expected = sorted([*expected, 1, *derived])
            assert seqs[channel] == expected, channel
        titles = of_type(received, "session/titleChanged")
        assert [t["action"]["title"] for t in titles] == ["Ship 2.0"]


OPERATOR = Token(name="alice", role=Role.OPERATOR, secret="operator-secret-0123456789")
VIEWER = Token(name="victor", role=Role.VIEWER, secret="viewer-secret-0123456789ab")


async def expect_error(client: AhpClient, code: int, method: str, params: dict[str, Any]) -> str:
    response = await client.call(method, params)
    assert "error" in response, response
    assert response["error"]["code"] == code, response["error"]
    message: str = response["error"]["message"]
    return message


class TestDerivedCatalogUpdates:
    async def test_a_replay_derives_again_the_updates_the_state_let_go_of(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The session channel's catalog updates are derived, not stored (issue 35). A
        ``reconnect`` whose cursor is older than what the live state keeps of them derives
        them again from the journal: the replay equals what the live stream sent."""
        monkeypatch.setattr(_team_state, "SUMMARIES_KEPT", 2)
        async with running_daemon(tmp_path) as daemon:
            async with connect_ahp(daemon) as first:
                session, _, _ = await start_delivery(first)
                await follow_workers_until_publish(first, session)
                live = [e for e in first.actions if e["channel"] == session]
            async with connect_ahp(daemon) as second:
                replay = await second.request(
                    "reconnect",
                    {
                        "channel": ROOT,
                        "clientId": CLIENT,
                        "lastSeenServerSeq": 0,
                        "subscriptions": [session],
                        "cursors": {session: 0},
                    },
                )
        assert replay["type"] == "replay"
        replayed = [e for e in replay["actions"] if e["channel"] == session]
        updates = [e for e in live if e["action"]["type"] == "session/chatUpdated"]
        assert len(updates) > 2, "more than the state keeps"
        assert replayed[: len(live)] == live


class TestHandshake:
    async def test_version_negotiation_and_what_needs_initialize(self, tmp_path: Path) -> None:
        """ping works at once; other commands wait for initialize; an unsupported version
        is -32005 with the supported ones; the best offered supported version is chosen."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as client,
        ):
            assert await client.request("ping", {"channel": ROOT}) is None
            await expect_error(client, -32600, "listSessions", {"channel": ROOT})
            response = await client.call(
                "initialize",
                {"channel": ROOT, "protocolVersions": ["9.0.0", "0.6.1"], "clientId": "c"},
            )
            assert response["error"]["code"] == -32005
            assert response["error"]["data"] == {"supportedVersions": ["^0.7.0", "^0.8.0"]}
            result = await client.request(
                "initialize",
                {
                    "channel": ROOT,
                    "protocolVersions": ["0.7.0", "0.8.2", "1.0.0"],
                    "clientId": "c",
                    "initialSubscriptions": [ROOT, new_session()],
                },
            )
            assert result["protocolVersion"] == "0.8.2"
            (root,) = result["snapshots"]  # an unknown session is left out
            assert root["state"]["agents"][0]["provider"] == "echo"
            assert root["state"]["activeSessions"] == 0
            await expect_error(
                client,
                -32600,
                "initialize",
                {"channel": ROOT, "protocolVersions": ["0.7.0"], "clientId": "c"},
            )


class TestRateLimit:
    async def test_a_request_past_the_limit_is_answered_with_its_own_id(
        self, tmp_path: Path
    ) -> None:
        """Bursts of 3 at 1 a second, then 6 requests at once: the first 3 are answered, the
        3 dropped each answered -32000 with its own id (a client knows which to send again);
        a notification or a frame that is no JSON-RPC past the limit gets the null id."""
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, messages_per_second=1, burst=3))
        async with running_daemon(tmp_path, config=config) as daemon, connect_ahp(daemon) as client:
            for request_id in range(1, 7):
                await client.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
            await client.notify("dispatchAction", {"channel": "ahp-chat:/x", "clientSeq": 1})
            await client.send("{not json")
            with trio.fail_after(10):
                while len(client.responses) < 6 or len(client.stray_errors) < 2:
                    await client.receive()
        answered = {i: client.responses[i] for i in range(1, 7)}
        limited = [i for i, a in answered.items() if a.get("error", {}).get("code") == -32000]
        assert limited == [4, 5, 6]
        assert "1 messages a second (bursts of 3)" in answered[4]["error"]["message"]
        assert [e["error"]["code"] for e in client.stray_errors] == [-32000, -32000]


class TestSessionsAndChats:
    async def test_create_list_dispose_and_their_errors(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize()
            session = new_session()
            await client.request("createSession", {"channel": session, "provider": "echo"})
            await expect_error(client, -32003, "createSession", {"channel": session})
            await expect_error(
                client, -32002, "createSession", {"channel": new_session(), "provider": "nope"}
            )
            await expect_error(client, -32602, "createSession", {"channel": "ahp-chat:/x"})
            await expect_error(
                client,
                -32602,
                "createSession",
                {"channel": new_session(), "fork": {"session": session, "turnId": "t"}},
            )
            listed = await client.request("listSessions", {"channel": ROOT})
            assert [(s["resource"], s["provider"]) for s in listed["items"]] == [(session, "echo")]
            other = new_session()
            await client.request("createSession", {"channel": other})
            page = await client.request("listSessions", {"channel": ROOT, "limit": 1})
            assert len(page["items"]) == 1
            rest = await client.request(
                "listSessions", {"channel": ROOT, "cursor": page["nextCursor"]}
            )
            assert {s["resource"] for s in page["items"] + rest["items"]} == {session, other}
            assert "nextCursor" not in rest
            await expect_error(client, -32602, "listSessions", {"channel": ROOT, "cursor": "x"})
            # Chats: the first createChat starts the run, with the coordinator at its URI.
            chat = new_chat()
            await expect_error(client, -32602, "createChat", {"channel": session, "chat": chat})
            await expect_error(
                client,
                -32001,
                "createChat",
                {"channel": new_session(), "chat": chat, "initialMessage": user_message("x")},
            )
            await expect_error(
                client,
                -32602,
                "createChat",
                {
                    "channel": session,
                    "chat": chat,
                    "initialMessage": user_message("x"),
                    "source": {"kind": "fork", "chat": chat, "turnId": "t"},
                },
            )
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("one")},
            )
            await client.request("subscribe", {"channel": chat})
            await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            await expect_error(
                client,
                -32010,
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("x")},
            )
            message = await expect_error(
                client,
                -32602,
                "createChat",
                {"channel": session, "chat": new_chat(), "initialMessage": user_message("x")},
            )
            assert "coordinator chat" in message
            # The next turn: a user message dispatched on the coordinator chat.
            seq = await client.dispatch(chat, turn_started("two"))
            started = await client.until_action(lambda e: e["action"]["type"] == "chat/turnStarted")
            assert started["origin"] == {"clientId": CLIENT_DEFAULT, "clientSeq": seq}
            done = await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            assert done["channel"] == chat
            await expect_error(client, -32602, "disposeChat", {"channel": chat})
            await expect_error(client, -32008, "disposeChat", {"channel": new_chat()})
            await expect_error(client, -32008, "subscribe", {"channel": new_chat()})
            await expect_error(client, -32001, "subscribe", {"channel": new_session()})
            await expect_error(client, -32008, "subscribe", {"channel": "file:///x"})
            # Dispose: gone from the list; a past session can still be read.
            assert await client.request("disposeSession", {"channel": session}) is None
            listed = await client.request("listSessions", {"channel": ROOT})
            assert [s["resource"] for s in listed["items"]] == [other]
            await client.request("disposeSession", {"channel": other})
            await expect_error(client, -32001, "disposeSession", {"channel": new_session()})
            past = await client.request("subscribe", {"channel": session})
            assert past["snapshot"]["state"]["title"] == "one"
            assert [c["resource"] for c in past["snapshot"]["state"]["chats"]] == [chat]

    async def test_create_session_with_fork_copies_the_source_up_to_a_turn(
        self, tmp_path: Path
    ) -> None:
        """``createSession`` with ``fork: {session, turnId}``: the new session holds the
        source's content up to and including that turn's response, its coordinator chat a
        fork of the source's; it takes the next message as any session does; the source
        is unchanged."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize()
            session, chat = new_session(), new_chat()
            await client.request("createSession", {"channel": session, "provider": "echo"})
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("one")},
            )
            await client.request("subscribe", {"channel": chat})
            done = await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            turn = done["action"]["turnId"]
            await client.dispatch(chat, turn_started("two"))
            await client.until_action(
                lambda e: (
                    e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] != turn
                )
            )
            source = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            fork = new_session()
            fork_of = {"session": session, "turnId": turn}
            await client.request("createSession", {"channel": fork, "fork": fork_of})
            await expect_error(client, -32003, "createSession", {"channel": fork, "fork": fork_of})
            await expect_error(
                client,
                -32602,
                "createSession",
                {"channel": new_session(), "fork": {"session": session, "turnId": "nope"}},
            )
            snapshot = (await client.request("subscribe", {"channel": fork}))["snapshot"]
            [copy] = snapshot["state"]["chats"]
            assert copy["resource"] != chat
            assert copy["origin"] == {"kind": "fork", "chat": chat, "turnId": turn}
            state = (await client.request("subscribe", {"channel": copy["resource"]}))["snapshot"]
            copied = state["state"]["turns"]
            assert [t["id"] for t in copied] == [turn]
            assert copied[0] == source["turns"][0]
            # The fork goes on as its own session: the next message is its second turn.
            await client.dispatch(copy["resource"], turn_started("again"))
            await client.until_action(
                lambda e: (
                    e["channel"] == copy["resource"] and e["action"]["type"] == "chat/turnComplete"
                )
            )
            after = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            assert after["turns"] == source["turns"]
            listed = await client.request("listSessions", {"channel": ROOT})
            assert {s["resource"] for s in listed["items"]} == {session, fork}
            [summary] = [s for s in listed["items"] if s["resource"] == fork]
            lineage = summary["_meta"]["forkedFrom"]
            assert (lineage["session"], lineage["turnId"]) == (session, turn)
            assert lineage["sequence"] > 0

    async def test_create_chat_with_a_source_forks_a_chat_or_opens_a_side_chat(
        self, tmp_path: Path
    ) -> None:
        """The agents advertise ``multipleChats.{fork, sideChat}``; ``createChat`` with a
        ``fork`` source copies the source chat's turns through that turn, with its origin,
        and runs its initial message as the next turn; a ``sideChat`` starts with no history
        and its selection in its origin. Every frame is what the schemas say; a fork of a
        turn that is not a completed one of this session is refused, naming why."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as client,
        ):
            result = await client.initialize(subscriptions=(ROOT,))
            [root] = [s for s in result["snapshots"] if s["resource"] == ROOT]
            [agent] = root["state"]["agents"]
            assert agent["capabilities"] == {"multipleChats": {"fork": True, "sideChat": True}}
            check_wire("state", "AgentInfo", agent)
            session, chat = new_session(), new_chat()
            await client.request("createSession", {"channel": session, "provider": "echo"})
            await client.request("subscribe", {"channel": session})
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("one")},
            )
            await client.request("subscribe", {"channel": chat})
            done = await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            turn = done["action"]["turnId"]
            source = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            fork = new_chat()
            params = {
                "channel": session,
                "chat": fork,
                "source": {"kind": "fork", "chat": chat, "turnId": turn},
                "initialMessage": user_message("once more"),
            }
            check_wire("commands", "CreateChatParams", params)
            assert await client.request("createChat", params) is None
            added = await client.until_action(
                lambda e: (
                    e["action"]["type"] == "session/chatAdded"
                    and e["action"]["summary"]["resource"] == fork
                )
            )
            check_wire("actions", "ActionEnvelope", added)
            assert added["action"]["summary"]["origin"] == {
                "kind": "fork",
                "chat": chat,
                "turnId": turn,
            }
            await client.request("subscribe", {"channel": fork})
            await client.until_action(
                lambda e: e["channel"] == fork and e["action"]["type"] == "chat/turnComplete"
            )
            snapshot = (await client.request("subscribe", {"channel": fork}))["snapshot"]
            check_wire("state", "ChatState", snapshot["state"])
            copied = snapshot["state"]["turns"]
            assert copied[0] == source["turns"][0]
            assert [t["message"]["text"] for t in copied] == ["one", "once more"]
            # A side chat: no history of its own, the selection kept in its origin.
            side = new_chat()
            selection = {"text": "first answer"}
            side_params = {
                "channel": session,
                "chat": side,
                "source": {
                    "kind": "sideChat",
                    "chat": chat,
                    "turnId": turn,
                    "selection": selection,
                },
            }
            check_wire("commands", "CreateChatParams", side_params)
            await client.request("createChat", side_params)
            state = (await client.request("subscribe", {"channel": side}))["snapshot"]["state"]
            check_wire("state", "ChatState", state)
            assert state["turns"] == []
            assert state["origin"] == {
                "kind": "sideChat",
                "chat": chat,
                "turnId": turn,
                "selection": selection,
            }
            seq = await client.dispatch(side, turn_started("what did you mean?"))
            started = await client.until_action(
                lambda e: e["channel"] == side and e["action"]["type"] == "chat/turnStarted"
            )
            assert started["origin"] == {"clientId": CLIENT_DEFAULT, "clientSeq": seq}
            await client.until_action(
                lambda e: e["channel"] == side and e["action"]["type"] == "chat/turnComplete"
            )
            session_state = (await client.request("subscribe", {"channel": session}))["snapshot"]
            check_wire("state", "SessionState", session_state["state"])
            assert [c["resource"] for c in session_state["state"]["chats"]] == [chat, fork, side]
            # Refusals name what is wrong; nothing is made.
            for source_params, why in [
                ({"kind": "fork", "chat": chat, "turnId": "nope"}, "has no turn 'nope'"),
                ({"kind": "fork", "chat": new_chat(), "turnId": turn}, "source.chat: no chat"),
                ({"kind": "merge", "chat": chat, "turnId": turn}, "not 'merge'"),
            ]:
                message = await expect_error(
                    client,
                    -32602,
                    "createChat",
                    {"channel": session, "chat": new_chat(), "source": source_params},
                )
                assert why in message
            await expect_error(
                client,
                -32010,
                "createChat",
                {
                    "channel": session,
                    "chat": fork,
                    "source": {"kind": "fork", "chat": chat, "turnId": turn},
                },
            )
            after = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            assert after["turns"] == source["turns"]

    async def test_a_side_chats_turn_is_cancelled_and_the_chat_disposed_alone(
        self, tmp_path: Path
    ) -> None:
        """``chat/turnCancelled`` on a side chat ends its running turn ``cancelled``, with the
        client's origin; ``disposeChat`` withdraws what was queued to it and cancels its turn.
        The coordinator's chat is untouched and takes its next message."""
        team = teams.side_team(
            '{ say = "first answer" }',
            '{ sleep = 600 }, { say = "late" }',
            '{ sleep = 600 }, { say = "later" }',
        )
        async with (
            running_daemon(tmp_path, teams={"side": team}) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize(subscriptions=())
            session, chat, side = new_session(), new_chat(), new_chat()
            await client.request("createSession", {"channel": session, "provider": "side"})
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("one")},
            )
            await client.request("subscribe", {"channel": chat})
            done = await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            turn = done["action"]["turnId"]

            async def running_turn(*ended: str) -> str:
                """The side chat's running turn (it may have started before the subscribe)."""
                snapshot = await client.request("subscribe", {"channel": side})
                active = snapshot["snapshot"]["state"].get("activeTurn")
                if active is not None and active["id"] not in ended:
                    return str(active["id"])
                started = await client.until_action(
                    lambda e: (
                        e["channel"] == side
                        and e["action"]["type"] == "chat/turnStarted"
                        and e["action"]["turnId"] not in ended
                    )
                )
                return str(started["action"]["turnId"])

            await client.request(
                "createChat",
                {
                    "channel": session,
                    "chat": side,
                    "source": {"kind": "sideChat", "chat": chat, "turnId": turn},
                    "initialMessage": user_message("explain"),
                },
            )
            first = await running_turn()
            seq = await client.dispatch(
                side, {"type": "chat/turnCancelled", "turnId": first, "duration": 0}
            )
            cancelled = await client.until_action(
                lambda e: e["channel"] == side and e["action"]["type"] == "chat/turnCancelled"
            )
            assert "rejectionReason" not in cancelled
            assert cancelled["action"]["turnId"] == first
            assert cancelled["origin"] == {"clientId": CLIENT_DEFAULT, "clientSeq": seq}
            # Its next message is its next turn; disposing of it cancels that and the queue.
            await client.dispatch(side, turn_started("and now?"))
            second = await running_turn(first)
            await client.dispatch(
                side,
                {
                    "type": "chat/pendingMessageSet",
                    "kind": "queued",
                    "id": "queued-1",
                    "message": user_message("later"),
                },
            )
            await client.until_action(
                lambda e: e["channel"] == side and e["action"]["type"] == "chat/pendingMessageSet"
            )
            await client.request("disposeChat", {"channel": side})
            ended = await client.until_action(
                lambda e: e["channel"] == side and e["action"]["type"] == "chat/turnCancelled"
            )
            assert ended["action"]["turnId"] == second
            state = (await client.request("subscribe", {"channel": side}))["snapshot"]["state"]
            assert [t["state"] for t in state["turns"]] == ["cancelled", "cancelled"]
            assert not state.get("queuedMessages")
            assert state.get("activeTurn") is None
            lead = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            assert [t["state"] for t in lead["turns"]] == ["complete"]
            facts = JournalReader(daemon.db).facts(session)
            on_side = [f.type for f in facts if f.channel == side]
            assert on_side[-2:] == ["chat/pendingMessageRemoved", "chat/turnCancelled"]
            assert on_side.count("chat/turnCancelled") == 2
            assert [f.sequence for f in facts] == list(range(1, len(facts) + 1))
            assert build_graph(facts).check() == []
            # The session goes on: the coordinator takes its next message.
            await client.dispatch(chat, turn_started("two"))
            await client.until_action(
                lambda e: (
                    e["channel"] == chat
                    and e["action"]["type"] == "chat/turnStarted"
                    and e["action"]["message"]["text"] == "two"
                )
            )

    async def test_hostile_create_chat_sources_are_refused_and_the_session_goes_on(
        self, tmp_path: Path
    ) -> None:
        """A seeded fuzz of ``createChat`` with a ``fork`` or ``sideChat`` source over one
        connection: a ping after each frame comes back (the connection is not stuck), every
        refusal names what was wrong, and afterwards the session still forks a chat that
        runs its turn. (The connection's rate limit is raised: at the default 20 messages a
        second, the pings themselves would be dropped, each with a stray -32000.)"""
        fuzzer = Fuzzer(20261207)
        config = ServeConfig(
            limits=Limits(shutdown_grace=0.5, messages_per_second=1e6, burst=10**6)
        )
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize()
            session, chat = new_session(), new_chat()
            await client.request("createSession", {"channel": session, "provider": "echo"})
            await client.request("subscribe", {"channel": session})
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("one")},
            )
            turn = await completed_turn(client, chat)
            made = 0
            for index in range(80):
                source: dict[str, Any] = {"kind": "fork", "chat": chat, "turnId": turn}
                if index % 2:
                    source = {**source, "kind": "sideChat", "selection": {"text": "one"}}
                template = {
                    "jsonrpc": "2.0",
                    "id": f"fuzz-{index}",
                    "method": "createChat",
                    "params": {
                        "channel": session,
                        "chat": new_chat(),
                        "source": source,
                        "initialMessage": user_message("again"),
                    },
                }
                await client.connection.send_message(fuzzer.frame(template))
                with trio.fail_after(30):  # a frame that sticks the connection fails here
                    pong = await client.call("ping", {"channel": ROOT})
                assert "result" in pong, (index, pong)
                answer = client.responses.pop(f"fuzz-{index}", None)
                if answer is not None and "error" in answer:
                    assert answer["error"]["message"], answer
                made += answer is not None and "result" in answer
            assert made, "no valid createChat among the frames: the fuzz tried only refusals"
            assert all(e["error"]["message"] for e in client.stray_errors)
            fork = new_chat()
            await client.request(
                "createChat",
                {
                    "channel": session,
                    "chat": fork,
                    "source": {"kind": "fork", "chat": chat, "turnId": turn},
                    "initialMessage": user_message("still here"),
                },
            )
            await completed_turn(client, fork, after=1)  # its copied turn, then its own

    async def test_hidden_chats_are_not_listed(self, tmp_path: Path) -> None:
        async with (
            running_daemon(tmp_path, teams={"hidden": teams.HIDDEN_HELPER}) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize()
            session, chat = new_session(), new_chat()
            await client.request("createSession", {"channel": session})
            await client.request("subscribe", {"channel": session})
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("go")},
            )
            await client.request("subscribe", {"channel": chat})
            done = await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            assert done["channel"] == chat
            spawned = [
                c["resource"]
                for e in of_type(client.actions, "chat/toolCallComplete", chat)
                for c in e["action"]["result"]["content"]
                if c["type"] == "subagent"
            ]
            assert len(spawned) == 1
            (helper,) = spawned
            added = of_type(client.actions, "session/chatAdded")
            assert [e["action"]["summary"]["resource"] for e in added] == [chat]
            assert all(e["action"].get("chat") != helper for e in client.actions)
            await expect_error(client, -32008, "subscribe", {"channel": helper})
            snapshot = await client.request("subscribe", {"channel": session})
            assert [c["resource"] for c in snapshot["snapshot"]["state"]["chats"]] == [chat]


class TestIdentity:
    async def test_a_session_uri_is_taken_for_good_and_by_one_client(self, tmp_path: Path) -> None:
        """createSession of a URI in the journal (a /ws session's) is -32003; two clients
        creating one URI at once: one gets it, the other -32003."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as first,
            connect_ahp(daemon) as second,
            connect(daemon) as ws,
        ):
            await first.initialize(client_id="one")
            await second.initialize(client_id="two")
            init = await ws.until_type("init")
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await ws.until_type("done")
            used = "ahp-session:/" + init["sessionId"]
            facts = JournalReader(daemon.db).facts(used)
            message = await expect_error(first, -32003, "createSession", {"channel": used})
            assert used in message
            assert JournalReader(daemon.db).facts(used) == facts, "nothing written"

            contested = new_session()
            responses: list[dict[str, Any]] = []

            async def create(client: AhpClient) -> None:
                responses.append(await client.call("createSession", {"channel": contested}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(create, first)
                nursery.start_soon(create, second)
            outcomes = sorted(r["error"]["code"] if "error" in r else 0 for r in responses)
            assert outcomes == [-32003, 0]

    async def test_a_chat_uri_names_one_chat_across_sessions(self, tmp_path: Path) -> None:
        """createChat with the URI of another session's chat, live or past, is -32010, and
        the session it was asked of stays as it was (nothing written)."""
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize()
            first, other, chat = new_session(), new_session(), new_chat()
            await client.request("createSession", {"channel": first})
            await client.request("createSession", {"channel": other})
            await client.request(
                "createChat",
                {"channel": first, "chat": chat, "initialMessage": user_message("one")},
            )
            await client.request("subscribe", {"channel": chat})
            await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            again = {"channel": other, "chat": chat, "initialMessage": user_message("two")}
            message = await expect_error(client, -32010, "createChat", again)
            assert f"chat {chat} exists in {first}" in message
            await client.request("disposeSession", {"channel": first})
            message = await expect_error(client, -32010, "createChat", again)
            assert f"was a chat of {first}" in message
            with pytest.raises(FactLogError, match="no session"):
                JournalReader(daemon.db).session(other)  # nothing of it was written
            await client.request(
                "createChat",
                {"channel": other, "chat": new_chat(), "initialMessage": user_message("two")},
            )

    async def test_sessions_beyond_the_token_s_limit_are_refused(self, tmp_path: Path) -> None:
        config = ServeConfig(limits=Limits(shutdown_grace=0.5, max_unprompted_per_token=2))
        async with (
            running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize()
            for _ in range(2):
                await client.request("createSession", {"channel": new_session()})
            response = await client.call("createSession", {"channel": new_session()})
            assert response["error"]["code"] == -32090
            assert response["error"]["data"] == {"limit": "max_unprompted_per_token"}
            assert "max_unprompted_per_token" in response["error"]["message"]


class TestRoles:
    @pytest.mark.filterwarnings("ignore::ResourceWarning")
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    async def test_viewers_read_operators_act(self, tmp_path: Path) -> None:
        config = ServeConfig(tokens=(OPERATOR, VIEWER), limits=Limits(shutdown_grace=0.5))
        async with running_daemon(tmp_path, teams={"echo": ECHO}, config=config) as daemon:
            with pytest.raises(ConnectionRejected) as refused:
                async with connect_ahp(daemon):
                    pass
            assert refused.value.status_code == 401
            del refused
            gc.collect()
            async with (
                connect_ahp(daemon, token=OPERATOR.secret) as operator,
                connect_ahp(daemon, token=VIEWER.secret) as viewer,
            ):
                await operator.initialize(client_id="op")
                await viewer.initialize(client_id="view")
                session, chat = new_session(), new_chat()
                await expect_error(viewer, -32009, "createSession", {"channel": session})
                await operator.request("createSession", {"channel": session})
                await expect_error(
                    viewer,
                    -32009,
                    "createChat",
                    {"channel": session, "chat": chat, "initialMessage": user_message("x")},
                )
                await operator.request(
                    "createChat",
                    {"channel": session, "chat": chat, "initialMessage": user_message("one")},
                )
                await viewer.request("subscribe", {"channel": chat})
                listed = await viewer.request("listSessions", {"channel": ROOT})
                assert [s["resource"] for s in listed["items"]] == [session]
                response = await viewer.call(
                    "dispatchAction",
                    {"channel": chat, "clientSeq": 7, "action": turn_started("mine")},
                )
                assert response["error"]["code"] == -32009
                echo = await viewer.until_action(lambda e: "rejectionReason" in e)
                assert echo["origin"] == {"clientId": "view", "clientSeq": 7}
                assert echo["action"]["message"]["text"] == "mine"
                await expect_error(viewer, -32009, "disposeChat", {"channel": chat})
                await expect_error(viewer, -32009, "disposeSession", {"channel": session})
                await operator.request("disposeSession", {"channel": session})
        facts = JournalReader(daemon.db).facts(session)
        assert not any(
            f.type == "chat/turnStarted" and f.action.message.text == "mine"  # type: ignore[union-attr]
            for f in facts
        )


async def drain(client: AhpClient) -> None:
    """Receive until the connection closes (ConnectionClosed)."""
    while True:
        await client.receive()


async def chat_statuses(client: AhpClient, count: int) -> list[int]:
    """The chat status each of the next ``count`` ``session/chatUpdated`` actions sets."""
    statuses = []
    for _ in range(count):
        updated = await client.until_action(lambda e: e["action"]["type"] == "session/chatUpdated")
        statuses.append(updated["action"]["changes"]["status"])
    return statuses


@asynccontextmanager
async def an_ahp_client_of_a_session(tmp_path: Path) -> AsyncIterator[tuple[Client, AhpClient]]:
    """A daemon, a ``/ws`` client whose session has run one turn, and an AHP client
    subscribed to that session."""
    async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon, connect(daemon) as ws:
        init = await ws.until_type("init")
        await ws.send({"channel": "agent", "type": "prompt", "prompt": "one"})
        await ws.until_type("done")
        async with connect_ahp(daemon) as client:
            await client.initialize(
                client_id="a", subscriptions=("ahp-session:/" + init["sessionId"],)
            )
            yield ws, client


class TestSharedFrames:
    async def test_every_subscriber_is_sent_the_frames_made_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three clients on a session's channels get the same action frames, and each
        (fact, channel) is encoded once for all of them (issue 17: one projection per
        protocol per session)."""
        made: list[tuple[int, str]] = []
        original = notification_frame

        def counting(method: str, envelope: Any) -> str:
            made.append((envelope.server_seq, envelope.channel))
            return original(method, envelope)

        monkeypatch.setattr(_live_session, "notification_frame", counting)
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon, connect(daemon) as ws:
            init = await ws.until_type("init")
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await ws.until_type("done")
            session = "ahp-session:/" + init["sessionId"]
            chat = JournalReader(daemon.db).open(session).coordinator_chat()
            assert chat is not None
            async with (
                connect_ahp(daemon) as a,
                connect_ahp(daemon) as b,
                connect_ahp(daemon) as c,
            ):
                for client, name in ((a, "a"), (b, "b"), (c, "c")):
                    await client.initialize(client_id=name, subscriptions=(session, chat))
                await ws.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                await ws.until_type("done")
                ended = [
                    await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
                    for client in (a, b, c)
                ]
                assert ended[0] == ended[1] == ended[2]
                assert a.actions == b.actions == c.actions
                assert a.actions
        assert len(made) == len(set(made))  # each (fact, channel) frame made once
        assert len(made) >= len(a.actions)

    async def test_every_client_is_sent_the_same_bytes(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Two /ws clients and an AHP client of one session: each fact's frames (agent
        channel, AHP actions) are framed once, and every connection writes those very
        bytes objects (issue 17: clients are sent bytes)."""
        written: defaultdict[int, list[bytes]] = defaultdict(list)
        texts: list[SharedText] = []  # kept alive: their ids stay theirs
        original = _hypercorn_ws.framed

        def recording(text: SharedText) -> bytes:
            frame = original(text)
            if id(text) not in written:
                texts.append(text)
            written[id(text)].append(frame)
            return frame

        monkeypatch.setattr(_hypercorn_ws, "framed", recording)
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon, connect(daemon) as ws:
            init = await ws.until_type("init")
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await ws.until_type("done")
            session = "ahp-session:/" + init["sessionId"]
            chat = JournalReader(daemon.db).open(session).coordinator_chat()
            assert chat is not None
            async with (
                connect(daemon, f"session={init['sessionId']}") as other,
                connect_ahp(daemon) as ahp,
            ):
                await other.until_type("history")
                await ahp.initialize(client_id="a", subscriptions=(session, chat))
                await ws.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                await ws.until_type("done")
                await other.until_type("done")
                await ahp.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
        shared = [frames for frames in written.values() if len(frames) >= 2]
        assert shared  # the agent channel's frames of the second turn, to both /ws clients
        for frames in written.values():
            assert all(frame is frames[0] for frame in frames)

    async def test_a_following_client_is_pushed_to_with_no_queue_or_task_of_its_own(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three AHP clients following a session take no bus subscription each (a queue
        and a task per client): the session hands every fact to them as it is published,
        and they all see the same actions."""
        subscribed: list[str] = []
        original = FactBus.subscribe

        def recording(bus: FactBus, name: str, *, buffer_size: float | None = None) -> Subscription:
            subscribed.append(name)
            return original(bus, name, buffer_size=buffer_size)

        monkeypatch.setattr(FactBus, "subscribe", recording)
        async with running_daemon(tmp_path, teams={"echo": ECHO}) as daemon, connect(daemon) as ws:
            init = await ws.until_type("init")
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "one"})
            await ws.until_type("done")
            session = "ahp-session:/" + init["sessionId"]
            chat = JournalReader(daemon.db).open(session).coordinator_chat()
            assert chat is not None
            before = len(subscribed)
            async with connect_ahp(daemon) as a, connect_ahp(daemon) as b, connect_ahp(daemon) as c:
                for client, name in ((a, "a"), (b, "b"), (c, "c")):
                    await client.initialize(client_id=name, subscriptions=(session, chat))
                await ws.send({"channel": "agent", "type": "prompt", "prompt": "two"})
                await ws.until_type("done")
                for client in (a, b, c):
                    await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
                assert a.actions == b.actions == c.actions
        assert [name for name in subscribed[before:] if name.startswith("ahp")] == []

    async def test_a_client_whose_feed_fails_is_told_and_let_go(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The session stops feeding a client whose feed raised (it logs why): the client is
        closed with 1011, not left subscribed to channels that say nothing more."""

        def failing(*args: Any) -> Any:
            raise RuntimeError("a projection bug")

        async with an_ahp_client_of_a_session(tmp_path) as (ws, client):
            monkeypatch.setattr(_live_session, "ahp_envelopes", failing)
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            with pytest.raises(ConnectionClosed) as closed:
                await drain(client)
            assert closed.value.reason is not None
            assert closed.value.reason.code == 1011
            await ws.until_type("done")  # the session and its other clients go on

    async def test_events_that_do_not_encode_cost_only_their_frames(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A projection bug that makes agent-channel events JSON cannot encode costs those
        frames only: the session runs on, its AHP client sees the turn finish."""
        original = AgentChannelProjector.feed

        def unencodable(self: AgentChannelProjector, *args: Any) -> list[dict[str, Any]]:
            return [{**event, "bug": object()} for event in original(self, *args)]

        async with an_ahp_client_of_a_session(tmp_path) as (ws, client):
            monkeypatch.setattr(AgentChannelProjector, "feed", unencodable)
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            assert await chat_statuses(client, 2) == [8, 1]  # busy, idle: the turn ran to its end

    async def test_an_agent_channel_client_whose_send_fails_is_told_and_the_others_go_on(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A batch's send to an agent-channel client raising (a bug) closes that client with
        1011 instead of leaving it connected to a session that sends it nothing more; the
        session runs on and its AHP client sees the turn finish."""

        def failing(self: Any) -> None:
            raise RuntimeError("a send bug")

        async with an_ahp_client_of_a_session(tmp_path) as (ws, client):
            monkeypatch.setattr(AgentSocket, "published", failing)
            await ws.send({"channel": "agent", "type": "prompt", "prompt": "two"})
            with pytest.raises(ConnectionClosed) as closed:
                await ws.until(lambda event: False)  # everything, until the close
            assert closed.value.reason is not None
            assert (closed.value.reason.code, closed.value.reason.reason) == (
                1011,
                "the session's feed failed",
            )
            assert await chat_statuses(client, 2) == [8, 1]  # the turn ran to its end
