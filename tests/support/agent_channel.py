"""A client of the daemon's agent channel (``/ws``): the delivery team's run, and a refused
handshake."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from trio_websocket import ConnectionRejected

from tests.support.daemon import Client, RunningDaemon, connect

TASK = "release-1"


def of_type(events: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") in kinds]


async def run_delivery(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    """Prompt the delivery team, approve the publish request; (init, result) events."""
    init = await client.until_type("init")
    await client.send({"channel": "agent", "type": "prompt", "prompt": "Ship 2.0", "taskId": TASK})
    request = await client.until_type("permission_request")
    await client.send({"channel": "agent", "type": "approve", "requestId": request["requestId"]})
    result = await client.until_type("result")
    done = await client.receive()
    assert done == {"channel": "agent", "type": "done", "taskId": TASK}
    return init, result


async def refused(daemon: RunningDaemon, query: str, token: str | None) -> tuple[int, bytes]:
    """The status and body of a refused WebSocket handshake."""
    with pytest.raises(ConnectionRejected) as rejection:
        async with connect(daemon, query, token=token):
            pass
    status, body = rejection.value.status_code, rejection.value.body or b""
    del rejection
    gc.collect()  # trio-websocket leaves the refused socket to the collector
    return status, body
