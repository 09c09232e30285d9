"""AHP ``dispatchAction`` on a real daemon on loopback: what each client action is refused
for, and an action for a channel that does not exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import teams
from tests.support.ahp_client import ROOT, connect_ahp, of_type, user_message
from tests.support.ahp_session import (
    CLIENT,
    follow_workers_until_publish,
    new_chat,
    new_session,
    start_delivery,
    turn_started,
)
from tests.support.daemon import running_daemon

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


class TestUnknownChannels:
    async def test_an_action_for_a_channel_that_does_not_exist_is_ignored(
        self, tmp_path: Path
    ) -> None:
        """An action for a channel that does not exist (a chat or session nobody made, a URI
        of no AHP scheme, a hidden chat, which is as if it did not exist) is ignored: no
        echo, no rejection. Sent with an id, it gets its error response, and nothing else."""
        async with (
            running_daemon(tmp_path, teams={"hidden": teams.HIDDEN_HELPER}) as daemon,
            connect_ahp(daemon) as client,
        ):
            await client.initialize(client_id=CLIENT)
            session, chat = new_session(), new_chat()
            await client.request("createSession", {"channel": session})
            await client.request("subscribe", {"channel": session})
            await client.request(
                "createChat",
                {"channel": session, "chat": chat, "initialMessage": user_message("go")},
            )
            await client.request("subscribe", {"channel": chat})
            await client.until_action(lambda e: e["action"]["type"] == "chat/turnComplete")
            (helper,) = [
                c["resource"]
                for e in of_type(client.actions, "chat/toolCallComplete", chat)
                for c in e["action"]["result"]["content"]
                if c["type"] == "subagent"
            ]
            title = {"type": "session/titleChanged", "title": "x"}
            cases: list[tuple[str, dict[str, Any], int]] = [
                (new_chat(), turn_started("x"), -32008),
                (helper, turn_started("x"), -32008),
                (new_session(), title, -32001),
                ("file:///x", title, -32008),
            ]
            ignored: list[int] = []
            for channel, action, code in cases:
                ignored.append(await client.dispatch(channel, action))
                response = await client.call(
                    "dispatchAction", {"channel": channel, "clientSeq": 99, "action": action}
                )
                assert response["error"]["code"] == code, (channel, response)
            # A refusal on a channel that exists is echoed: everything sent before it has
            # been dealt with when its echo arrives.
            marker = await client.dispatch(chat, {"type": "chat/somethingNew"})
            echo = await client.until_action(lambda e: "rejectionReason" in e)
            assert echo["origin"] == {"clientId": CLIENT, "clientSeq": marker}
            assert [e for e in client.actions if "rejectionReason" in e] == [echo]
            assert not any(
                e.get("origin", {}).get("clientSeq") in (*ignored, 99) for e in client.actions
            )
            assert {e["channel"] for e in client.actions} <= {session, chat}
            assert client.stray_errors == []


class TestDispatchRefusals:
    async def test_each_refusal_is_echoed_with_its_reason(self, tmp_path: Path) -> None:
        async with running_daemon(tmp_path) as daemon, connect_ahp(daemon) as client:
            session, chat, _ = await start_delivery(client)
            pending = await follow_workers_until_publish(client, session)
            worker = pending["channel"]
            cases: list[tuple[str, dict[str, Any], int, str]] = [
                (chat, turn_started("again"), -32004, "active"),
                (
                    chat,
                    {**turn_started("x"), "message": {"text": "x", "origin": {"kind": "agent"}}},
                    -32602,
                    "user messages only",
                ),
                (worker, turn_started("x"), -32602, "read-only"),
                (
                    worker,
                    {
                        "type": "chat/toolCallConfirmed",
                        "turnId": "nope",
                        "toolCallId": pending["action"]["toolCallId"],
                        "approved": True,
                        "confirmed": "user-action",
                    },
                    -32602,
                    "",
                ),
                (
                    chat,
                    {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"},
                    -32602,
                    "",
                ),
                (session, {"type": "session/titleChanged", "title": "x"}, -32602, "session"),
                (ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 0}, -32602, "root"),
                (chat, {"type": "chat/somethingNew"}, -32602, "not"),
            ]
            for channel, action, code, reason in cases:
                response = await client.call(
                    "dispatchAction", {"channel": channel, "clientSeq": 99, "action": action}
                )
                assert response["error"]["code"] == code, (action, response)
                echo = await client.until_action(lambda e: "rejectionReason" in e)
                assert echo["channel"] == channel
                assert reason in echo["rejectionReason"], echo["rejectionReason"]
            # Deny the publish call: the worker's tool call is cancelled, the turn goes on.
            await client.dispatch(
                worker,
                {
                    "type": "chat/toolCallConfirmed",
                    "turnId": pending["action"]["turnId"],
                    "toolCallId": pending["action"]["toolCallId"],
                    "approved": False,
                    "reason": "denied",
                },
            )
            denied = await client.until_action(
                lambda e: e["action"]["type"] == "chat/toolCallConfirmed"
            )
            assert "rejectionReason" not in denied
            assert denied["action"]["approved"] is False
            assert denied["origin"] == {"clientId": CLIENT, "clientSeq": 1}
            await client.until_action(
                lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete"
            )
