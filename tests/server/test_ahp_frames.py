"""Malformed JSON-RPC frames at /ahp: each is answered with a JSON-RPC error, and the
connection (and the other clients) go on as before."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.ahp_client import ROOT, connect_ahp
from tests.support.daemon import running_daemon
from tests.support.examples import examples
from tests.support.teams import ECHO

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)

METHODS = [
    "initialize",
    "subscribe",
    "createSession",
    "createChat",
    "listSessions",
    "disposeChat",
    "reconnect",
    "dispatchAction",
    "unsubscribe",
    "nope",
]


@st.composite
def malformed(draw: st.DrawFn) -> str:
    """A frame that is not a call this host can carry out."""
    kind = draw(st.sampled_from(["text", "json", "version", "id", "method", "params", "unknown"]))
    if kind == "text":
        text = draw(st.text(min_size=1, max_size=30))
        try:
            json.loads(text)
        except ValueError:
            return text
        return "{" + text
    if kind == "json":
        return json.dumps(draw(st.lists(JSON, max_size=3) | st.integers() | st.text(max_size=5)))
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(st.integers(0, 10**6))}
    message["method"] = draw(st.sampled_from(METHODS[:-1]))
    if kind == "version":
        message["jsonrpc"] = draw(st.sampled_from(["1.0", "2", None, 2.0]))
    elif kind == "id":
        message["id"] = draw(st.sampled_from([1.5, True, None, [], {}]))
        if message["id"] is None:
            del message["id"]
            message["method"] = draw(st.sampled_from(METHODS[:4]))  # a request without an id
    elif kind == "method":
        message["method"] = draw(st.sampled_from([None, 3, "", ["x"]]))
    elif kind == "params":
        message["params"] = draw(
            st.dictionaries(
                st.sampled_from(["channel", "clientId", "action", "chat", "limit"]),
                st.integers() | st.lists(st.integers(), max_size=2),
                max_size=3,
            )
            | st.lists(JSON, max_size=2)
            | st.text(max_size=4)
        )
    else:
        message["method"] = draw(
            st.text(min_size=1, max_size=10).filter(lambda m: m not in METHODS)
        )
    return json.dumps(message)


class TestMalformedFrames:
    @settings(
        max_examples=examples(8),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(frames=st.lists(malformed(), min_size=1, max_size=25))
    @example(frames=['{"jsonrpc": "1.0", "id": 2, "method": "initialize"}'])  # seen in CI
    async def test_each_bad_frame_is_answered_and_the_connection_goes_on(
        self, tmp_path: Path, frames: list[str]
    ) -> None:
        async with (
            running_daemon(tmp_path / uuid.uuid4().hex, teams={"echo": ECHO}) as daemon,
            connect_ahp(daemon) as bystander,
            connect_ahp(daemon) as client,
        ):
            await bystander.initialize(client_id="bystander", subscriptions=(ROOT,))
            await client.initialize(client_id="fuzz")
            for frame in frames:
                await client.send(frame)
                answer = await client.receive()
                # Taken here, so that a later request whose id the frame happened to use
                # (the client counts from 1) does not take this answer for its own.
                if (answered := answer.get("id")) is not None:
                    client.responses.pop(answered, None)
                assert "error" in answer, (frame, answer)
                assert isinstance(answer["error"]["code"], int)
                assert answer["error"]["message"]
            # Still usable, and so is the other client.
            assert await client.request("ping", {"channel": ROOT}) is None
            listed = await bystander.request("listSessions", {"channel": ROOT})
            assert listed == {"items": []}
            assert bystander.stray_errors == []
