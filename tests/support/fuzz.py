"""Seeded hostile input for every endpoint: frames and bodies made from valid requests.

A :class:`Fuzzer` takes a request that the endpoint would take (a *template*) and breaks it
the way an attacker, a broken client or a newer peer would: a field's value replaced by
something hostile (a lone surrogate, NaN, an integer of thousands of digits, nesting past
every limit, a wrong type, a huge string), a field dropped, an unknown field added, the text
cut short, bytes that are not UTF-8, a top-level value that is not an object. The same seed
gives the same inputs, so a failure found by the soak (``bench/soak.py``) is replayed by
naming its seed.

Also the harness both use: :func:`daemon_process` runs ``orchestrator serve`` as a process
(tokens configured, its JSON log kept), and the templates of each endpoint's requests.

Used by ``tests/test_fuzz.py`` (a bounded run in the suite) and ``bench/soak.py``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio

from orchestrator.base import PeerProtocolError, RpcError
from orchestrator.protocols import parse_call, parse_client_message, parse_request
from tests.support.ahp_client import ROOT
from tests.support.teams import ECHO

MAX_FRAME_BYTES: Final = 65_536

#: Raw JSON text an attacker puts where a value goes, each one of a kind.
_HOSTILE: Final[Sequence[Callable[[random.Random], str]]] = (
    lambda r: '"\\ud800"',
    lambda r: '"x\\udfffy"',
    lambda r: '"\\ud83d"',  # half an emoji
    lambda r: "NaN",
    lambda r: "-Infinity",
    lambda r: "1e999",
    lambda r: "9" * r.choice([33, 400, 5_000]),
    lambda r: "-" + "1" * 4_301,
    lambda r: "[" * (n := r.choice([65, 500, 5_000])) + "]" * n,
    lambda r: '{"a":' * (n := r.choice([65, 300])) + "1" + "}" * n,
    lambda r: "null",
    lambda r: "true",
    lambda r: "[]",
    lambda r: "{}",
    lambda r: "-1",
    lambda r: "0.5",
    lambda r: json.dumps("x" * r.choice([0, 1, 300, 70_000])),
    lambda r: json.dumps('\u2028\u0000\ufeff\U0001f600 \\ " </script>'),
    lambda r: json.dumps("ahp-session:/" + "a" * r.choice([1, 36, 2_000])),
    lambda r: json.dumps("../../etc/passwd"),
    lambda r: json.dumps({"kind": "future-kind", "x": [1, {"y": None}]}),
)

_HOLE: Final = "\u0001hole\u0001"


class Fuzzer:
    """Hostile variants of templates, from one seed."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.random = random.Random(seed)

    def hostile(self) -> str:
        return self.random.choice(_HOSTILE)(self.random)

    def frame(self, template: Mapping[str, Any]) -> str | bytes:
        """One hostile variant of ``template`` (sometimes the template itself)."""
        r = self.random
        kind = r.random()
        if kind < 0.08:
            return json.dumps(template)
        if kind < 0.55:
            return self._replace(template)
        if kind < 0.65:
            return self._drop(template)
        if kind < 0.72:
            return json.dumps({**template, "unknownField": json.loads(_safe(self.hostile()))})
        if kind < 0.80:
            text = json.dumps(template)
            return text[: r.randrange(len(text))]
        if kind < 0.86:
            raw = bytearray(json.dumps(template).encode())
            raw[r.randrange(len(raw))] = r.choice([0xFF, 0xC3, 0x80, 0xED])
            return bytes(raw)
        if kind < 0.92:
            return self.hostile()
        return "[" + json.dumps(template) + "]"

    def _replace(self, template: Mapping[str, Any]) -> str:
        """``template`` with one value, at any depth, replaced by a hostile one."""
        paths = list(_paths(template))
        path = self.random.choice(paths)
        holed = _set(template, path, _HOLE)
        return json.dumps(holed).replace(json.dumps(_HOLE), self.hostile(), 1)

    def _drop(self, template: Mapping[str, Any]) -> str:
        paths = [p for p in _paths(template) if p]
        if not paths:
            return json.dumps({})
        path = self.random.choice(paths)
        return json.dumps(_set(template, path, None, drop=True))


def _safe(text: str) -> str:
    """``text`` if the standard library reads it to something it can write back, else a
    string holding it (an unknown field's value need not be hostile to json.dumps)."""
    try:
        value = json.loads(text)
        json.dumps(value, allow_nan=False).encode()
    except (ValueError, RecursionError, UnicodeEncodeError):
        return json.dumps(text[:40])
    return text


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Any:
    """Every path to a value inside ``value`` (the empty path: the whole)."""
    yield prefix
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _set(value: Any, path: tuple[Any, ...], new: Any, *, drop: bool = False) -> Any:
    """A copy of ``value`` with ``new`` at ``path`` (or the item there removed)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        copy = dict(value)
        if drop and not rest:
            del copy[head]
        else:
            copy[head] = _set(value[head], rest, new, drop=drop)
        return copy
    items = list(value)
    if drop and not rest:
        del items[head]
    else:
        items[head] = _set(items[head], rest, new, drop=drop)
    return items


# ─── the daemon under fuzz, and what it takes ────────────────────────────────


OPERATOR: Final = "fuzz-operator-secret-0123456789"
VIEWER: Final = "fuzz-viewer-secret-0123456789ab"
TOOL: Final = "fuzz-tool-secret-0123456789abcd"
SECRETS: Final = (OPERATOR, VIEWER, TOOL)

CONFIG: Final = f"""
[tokens.ops]
role = "operator"
token = "{OPERATOR}"
[tokens.watcher]
role = "viewer"
token = "{VIEWER}"
[tokens.sandbox]
role = "tool"
token = "{TOOL}"
[limits]
max_frame_bytes = {MAX_FRAME_BYTES}
messages_per_second = 1000000.0
burst = 1000000
shutdown_grace = 0.5
"""

MODEL_TEAM: Final = """
[team]
name = "model"
coordinator = "lead"
[openai]
model = "fuzz-model"
base_url = "{url}"
api_key_env = "FUZZ_MODEL_KEY"
max_retries = 0
read_timeout = 5
[agents.lead]
role = "coordinator"
backend = "openai"
"""

#: Requests each endpoint takes, as the fuzzer's templates.
AGENT_TEMPLATES: Final[list[dict[str, Any]]] = [
    {"channel": "agent", "type": "prompt", "prompt": "hello", "taskId": "t-1"},
    {"channel": "agent", "type": "prompt", "prompt": "focus", "kind": "steering"},
    {"channel": "agent", "type": "abort", "taskId": "t-1"},
    {"channel": "agent", "type": "tool_response", "toolCallId": "c-1", "response": "yes"},
    {"channel": "agent", "type": "approve", "requestId": "a-1"},
    {"channel": "agent", "type": "reject", "requestId": "a-1", "reason": "no"},
    {"channel": "agent", "type": "settings", "settings": {"model": "m"}},
    # From a cursor past the end: the fuzz is about what it sends, not replays (which
    # test_daemon_load checks), and a replay of the whole session at every valid subscribe
    # would make the soak about those.
    {"channel": "team", "type": "subscribe", "fromSequence": 1_000_000},
]
TEAMMATE_TEMPLATES: Final = [
    {"type": t, "name": "nobody", "id": "r-1"}
    for t in ("list", "history", "pause", "resume", "trigger", "stop", "subscribe")
]
SESSION: Final = "ahp-session:/0b5e7c4a-3f5e-4c1b-9a53-7d2f4c1e9a10"
CHAT: Final = "ahp-chat:/7c0e2f1d-1d4b-4a8e-8f6b-5a0c9e3b2d11"
AHP_TEMPLATES: Final[list[dict[str, Any]]] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "channel": ROOT,
            "protocolVersions": ["0.7.0"],
            "clientId": "fuzz",
            "clientInfo": {"name": "fuzz", "version": "1"},
            "initialSubscriptions": [],
        },
    },
    {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"channel": ROOT}},
    {"jsonrpc": "2.0", "id": 3, "method": "listSessions", "params": {"channel": ROOT, "limit": 5}},
    {"jsonrpc": "2.0", "id": 4, "method": "subscribe", "params": {"channel": SESSION}},
    {"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": SESSION}},
    {
        "jsonrpc": "2.0",
        "method": "dispatchAction",
        "params": {
            "channel": CHAT,
            "clientSeq": 1,
            "action": {
                "type": "chat/turnStarted",
                "turnId": "turn-1",
                "userMessage": {"text": "hi", "origin": {"kind": "user"}},
            },
        },
    },
    {"jsonrpc": "2.0", "id": 5, "method": "reconnect", "params": {"channel": ROOT}},
    # The root channel: a subscription that is fed as sessions come and go, and the root
    # actions (the host's own: a client's is refused).
    {"jsonrpc": "2.0", "id": 6, "method": "subscribe", "params": {"channel": ROOT}},
    {"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": ROOT}},
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "dispatchAction",
        "params": {
            "channel": ROOT,
            "clientSeq": 2,
            "action": {"type": "root/activeSessionsChanged", "activeSessions": 3},
        },
    },
    {
        "jsonrpc": "2.0",
        "method": "dispatchAction",
        "params": {
            "channel": ROOT,
            "clientSeq": 3,
            "action": {
                "type": "root/agentsChanged",
                "agents": [{"provider": "p", "displayName": "P", "description": "d", "models": []}],
            },
        },
    },
]


@attrs.frozen(kw_only=True)
class Channel:
    """A WebSocket endpoint under fuzz: what it takes, what its pure parser predicts it
    answers a frame with, how that answer looks on the wire, and a probe it answers on the
    same connection (so everything sent before the probe has been answered)."""

    name: str
    path: str
    templates: Sequence[Mapping[str, Any]]
    #: The refusal the endpoint's own pure parser predicts for a frame (None: it takes it).
    predict: Callable[[str | bytes], object]
    #: The refusal an answer carries (None: it is no refusal).
    refusal: Callable[[Mapping[str, Any]], object]
    probe: Callable[[str], Mapping[str, Any]]
    answers_probe: Callable[[Mapping[str, Any], str], bool]
    #: A refused frame gets exactly its refusal (else: at least it; AHP may also answer a
    #: request the parser took with an error of its own).
    exact: bool = True


def _predicted(parse: Callable[[str | bytes], object]) -> Callable[[str | bytes], object]:
    """The refusal ``parse`` makes of a frame: the message a channel answers with (its
    path and words), or the JSON-RPC error code; None when it takes the frame."""

    def predict(frame: str | bytes) -> object:
        try:
            parse(frame)
        except PeerProtocolError as exc:
            return f"{exc.path}: {exc.message}"
        except RpcError as exc:
            return int(exc.code)
        return None

    return predict


CHANNELS: Final = (
    Channel(
        name="/ws (agent channel)",
        path="/ws?team=echo",
        templates=AGENT_TEMPLATES,
        predict=_predicted(lambda f: parse_client_message(f, max_bytes=MAX_FRAME_BYTES)),
        refusal=lambda m: m.get("message") if m.get("code") == "bad_request" else None,
        probe=lambda probe: {"channel": "agent", "type": "abort", "taskId": probe},
        answers_probe=lambda m, probe: (
            m.get("code") == "refused" and f"{probe}'" in m.get("message", "")
        ),
    ),
    Channel(
        name="/teammates",
        path="/teammates",
        templates=TEAMMATE_TEMPLATES,
        predict=_predicted(lambda f: parse_request(f, max_bytes=MAX_FRAME_BYTES)),
        refusal=lambda m: m.get("message") if m.get("code") == "bad_request" else None,
        probe=lambda probe: {"type": "list", "id": probe},
        answers_probe=lambda m, probe: m.get("id") == probe,
    ),
    Channel(
        name="/ahp",
        path="/ahp",
        templates=AHP_TEMPLATES,
        predict=_predicted(lambda f: parse_call(f, max_bytes=MAX_FRAME_BYTES)),
        refusal=lambda m: m["error"].get("code") if isinstance(m.get("error"), dict) else None,
        probe=lambda probe: {
            "jsonrpc": "2.0",
            "id": probe,
            "method": "ping",
            "params": {"channel": ROOT},
        },
        answers_probe=lambda m, probe: m.get("id") == probe,
        exact=False,
    ),
)


def view_update(group_id: str) -> dict[str, Any]:
    return {
        "type": "view_update",
        "group_id": group_id,
        "view_type": "table",
        "content": {"rows": [[1, "a"], [2, "b"]], "title": "t"},
    }


def run_input(thread: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": "run-" + thread,
        "messages": [{"id": "m1", "role": "user", "content": "hello"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


CHUNK: Final = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
}


@attrs.define
class DaemonProcess:
    process: trio.Process
    url: str
    log: bytearray

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    def http(self, token: str | None = OPERATOR) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def lines(self) -> list[str]:
        return bytes(self.log).decode("utf-8", "replace").splitlines()


@asynccontextmanager
async def daemon_process(
    directory: Path,
    model_url: str = "http://127.0.0.1:9/v1",
    *,
    teams: Mapping[str, str] | None = None,
    limits: Mapping[str, float] | None = None,
) -> AsyncIterator[DaemonProcess]:
    """``orchestrator -v serve`` on port 0 with its files in ``directory`` (a journal there
    is taken up again), its stderr read (and kept) as it writes it; ``limits``: more keys
    of its ``[limits]``. On leaving, SIGTERM must stop it within 10 s with status 0, unless
    the caller killed it."""
    team_dir = directory / "teams"
    team_dir.mkdir(parents=True, exist_ok=True)
    every = {"echo": ECHO, "model": MODEL_TEAM.format(url=model_url), **(teams or {})}
    for name, text in every.items():
        (team_dir / f"{name}.toml").write_text(text)
    more = "".join(f"{key} = {value!r}\n" for key, value in (limits or {}).items())
    (directory / "daemon.toml").write_text(CONFIG + more)
    command = [sys.executable, "-m", "orchestrator", "-v", "serve", "--config"]
    command += [str(directory / "daemon.toml"), "--teams", str(team_dir)]
    command += ["--db", str(directory / "journal.db"), "--port", "0", "--host", "127.0.0.1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "FUZZ_MODEL_KEY": "sk-fuzz-model-key-0123"}
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    log = bytearray()
    listening = trio.Event()
    url: list[str] = []

    async def read_log() -> None:
        assert process.stderr is not None
        async for data in process.stderr:
            log.extend(data)
            if not listening.is_set():
                for line in bytes(log).rpartition(b"\n")[0].splitlines():  # whole lines
                    if b'"daemon listening"' in line:
                        url.append(json.loads(line)["url"])
                        listening.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_log)
            with trio.fail_after(30):
                await listening.wait()
            yield DaemonProcess(process=process, url=url[0], log=log)
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                with trio.fail_after(10):
                    assert await process.wait() == 0, bytes(log[-4000:]).decode(errors="replace")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
