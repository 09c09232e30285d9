"""An AHP client of a daemon: new session and chat URIs, a user turn, the delivery team
started and followed to its publish call."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.ahp_client import ROOT, AhpClient, user_message

CLIENT = "client-1"


def new_session() -> str:
    return f"ahp-session:/{uuid.uuid4()}"


def new_chat() -> str:
    return f"ahp-chat:/{uuid.uuid4()}"


def turn_started(text: str) -> dict[str, Any]:
    return {
        "type": "chat/turnStarted",
        "turnId": f"client-{uuid.uuid4()}",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": user_message(text),
    }


def is_publish_pending(envelope: dict[str, Any]) -> bool:
    action = envelope["action"]
    return action["type"] == "chat/toolCallReady" and "confirmed" not in action


async def start_delivery(client: AhpClient) -> tuple[str, str, dict[str, Any]]:
    """initialize, createSession, subscribe, createChat: (session, coordinator chat, snapshot
    of the session channel)."""
    await client.initialize(client_id=CLIENT, subscriptions=(ROOT,))
    session, chat = new_session(), new_chat()
    assert (
        await client.request("createSession", {"channel": session, "provider": "delivery"}) is None
    )
    subscribed = await client.request("subscribe", {"channel": session})
    assert (
        await client.request(
            "createChat",
            {"channel": session, "chat": chat, "initialMessage": user_message("Ship 2.0")},
        )
        is None
    )
    await client.request("subscribe", {"channel": chat})
    return session, chat, subscribed["snapshot"]


async def follow_workers_until_publish(client: AhpClient, session: str) -> dict[str, Any]:
    """Subscribe to each worker chat as it is added; the publish call waiting for approval."""
    workers: set[str] = set()
    while True:
        envelope = await client.until_action(
            lambda e: (
                (e["channel"] == session and e["action"]["type"] == "session/chatAdded")
                or is_publish_pending(e)
            )
        )
        if is_publish_pending(envelope):
            return envelope
        chat = envelope["action"]["summary"]["resource"]
        if (
            chat not in workers
            and envelope["action"]["summary"].get("interactivity") == "read-only"
        ):
            workers.add(chat)
            await client.request("subscribe", {"channel": chat})
