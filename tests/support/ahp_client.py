"""A small AHP client for tests: JSON-RPC 2.0 over trio-websocket, one message per frame.

It keeps every ``action`` notification it received, in order, every other notification (the
root channel's ``root/sessionAdded``...) with its method, and every error response that names
no request (``"id": null``), so tests can assert on the whole stream.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio
from trio_websocket import WebSocketConnection

from tests.support.daemon import RunningDaemon, websocket

ROOT = "ahp-root://"


class AhpError(Exception):
    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error['code']}: {error['message']}")
        self.code: int = error["code"]
        self.message: str = error["message"]
        self.data: Any = error.get("data")


def user_message(text: str) -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


class AhpClient:
    def __init__(self, connection: WebSocketConnection) -> None:
        self.connection = connection
        self._ids = itertools.count(1)
        self._client_seqs = itertools.count(1)
        self.actions: list[dict[str, Any]] = []  # ActionEnvelope params, in order
        self.notifications: list[dict[str, Any]] = []  # other notifications, whole, in order
        self.stray_errors: list[dict[str, Any]] = []  # error responses with "id": null
        self.responses: dict[int | str, dict[str, Any]] = {}
        self._scanned = 0
        self.snapshots: dict[str, dict[str, Any]] = {}  # the latest snapshot of each channel

    async def send(self, message: Mapping[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        await self.connection.send_message(text)

    async def receive(self) -> dict[str, Any]:
        with trio.fail_after(30):
            message: dict[str, Any] = json.loads(await self.connection.get_message())
        if message.get("method") == "action":
            self.actions.append(message["params"])
        elif "method" in message and "id" not in message:
            self.notifications.append(message)
        elif "id" in message and message["id"] is None:
            self.stray_errors.append(message)
        elif "id" in message:
            self.responses[message["id"]] = message
        return message

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; its response (success or error), as received."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)
        while request_id not in self.responses:
            await self.receive()
        return self.responses.pop(request_id)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send a request; its result, or :class:`AhpError`."""
        response = await self.call(method, params)
        if "error" in response:
            raise AhpError(response["error"])
        result = response["result"]
        if method == "subscribe":
            self.snapshots[result["snapshot"]["resource"]] = result["snapshot"]
        elif method == "initialize":
            self.snapshots.update((s["resource"], s) for s in result["snapshots"])
        return result

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": dict(params)})

    async def dispatch(self, channel: str, action: Mapping[str, Any]) -> int:
        """Dispatch ``action`` on ``channel`` (a notification); its clientSeq."""
        seq = next(self._client_seqs)
        await self.notify(
            "dispatchAction", {"channel": channel, "clientSeq": seq, "action": dict(action)}
        )
        return seq

    async def until_action(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first action not yet looked at by this method that satisfies ``predicate``."""
        while True:
            while self._scanned < len(self.actions):
                envelope = self.actions[self._scanned]
                self._scanned += 1
                if predicate(envelope):
                    return envelope
            await self.receive()

    async def initialize(
        self, *, client_id: str = "test-client", subscriptions: tuple[str, ...] = ()
    ) -> Any:
        return await self.request(
            "initialize",
            {
                "channel": ROOT,
                "protocolVersions": ["0.7.0"],
                "clientId": client_id,
                "clientInfo": {"name": "tests", "version": "1"},
                "initialSubscriptions": list(subscriptions),
            },
        )


@asynccontextmanager
async def connect_ahp(
    daemon: RunningDaemon, *, token: str | None = None
) -> AsyncIterator[AhpClient]:
    async with websocket(f"{daemon.ws_url}/ahp", token=token) as connection:
        yield AhpClient(connection)


def of_type(envelopes: list[dict[str, Any]], kind: str, channel: str | None = None) -> list[Any]:
    return [
        e
        for e in envelopes
        if e["action"]["type"] == kind and (channel is None or e["channel"] == channel)
    ]
