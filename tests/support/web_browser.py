"""A real browser on a real daemon, for the web view's tests (tests/test_web_ui.py).

The daemon is ``orchestrator serve`` as a subprocess on a loopback port, with a journal in a
temporary directory and a daemon.toml of its own that configures two tokens: an operator
and a viewer. :meth:`Daemon.restart` stops it (SIGTERM) and starts it again on the same port
and journal, as a daemon restart does to the page.

The browser is Debian's Chromium (``/usr/bin/chromium``) driven by Playwright's sync API
(never inside a trio test: these tests are plain functions). Chromium missing fails the test
in CI (the ``CI`` variable set) and skips it elsewhere. Every page collects its console
errors and uncaught exceptions (:attr:`Watched.errors`), so a test can ask for none.

Runs are started as a client would: AG-UI ``POST /agui`` with the operator token, in a
thread (its stream lasts as long as the run's turn), with the session id chosen here (the
AG-UI ``threadId`` is the session's id).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from playwright.sync_api import Browser, ConsoleMessage, Error, Page, Response, sync_playwright

from tests.support.fake_openai import Answer, FakeOpenAI, fake_openai
from tests.support.paths import PROJECT_ROOT

CHROMIUM = Path("/usr/bin/chromium")
#: The flags the issue asks for: no sandbox (containers), nothing that phones home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
OPERATOR_TOKEN = "operator-token-0123456789abcdef"
VIEWER_TOKEN = "viewer-token-0123456789abcdef"
TEAMS = PROJECT_ROOT / "orchestrator" / "teams"
WEB_ASSETS = PROJECT_ROOT / "orchestrator" / "server" / "web" / "assets"
#: axe-core, vendored (tests/support/vendor/axe-core/VENDORED.md).
AXE = PROJECT_ROOT / "tests" / "support" / "vendor" / "axe-core" / "axe.min.js"
#: How long the page may take to show what a test waits for (a loaded CI machine).
WAIT_MS = 20_000

DAEMON_TOML = f"""
[tokens.olivia]
role = "operator"
token = "{OPERATOR_TOKEN}"

[tokens.victor]
role = "viewer"
token = "{VIEWER_TOKEN}"

[limits]
shutdown_grace = 0.2
"""


def artefacts() -> Path:
    """Where screenshots go: ``$WEB_ARTEFACTS``, else test-artefacts/web/ (gitignored)."""
    directory = Path(os.environ.get("WEB_ARTEFACTS") or PROJECT_ROOT / "test-artefacts" / "web")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def require_chromium() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    message = f"{CHROMIUM} is missing: install Debian's chromium package"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@attrs.define
class Daemon:
    """``orchestrator serve`` as a process, its URL and where it keeps things."""

    directory: Path
    url: str = ""
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def db(self) -> Path:
        return self.directory / "journal.db"

    def start(self, port: int = 0) -> None:
        self.starts += 1
        log = self.directory / f"daemon-{self.starts}.log"
        with log.open("wb") as err:  # the child writes to its own copy of the descriptor
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "orchestrator",
                    "serve",
                    "--config",
                    str(self.directory / "daemon.toml"),
                    "--teams",
                    str(self.directory / "teams"),
                    "--db",
                    str(self.db),
                    "--port",
                    str(port),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for line in log.read_text().splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("event") == "daemon listening":
                    self.url = str(record["url"])
                    return
            if self.process.poll() is not None:
                raise AssertionError(f"the daemon exited:\n{log.read_text()}")
            time.sleep(0.05)
        self.process.kill()
        raise AssertionError(f"the daemon did not say where it listens:\n{log.read_text()}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        """Stop, and start again on the same port and journal."""
        port = self.port
        self.stop()
        self.start(port)

    def log(self) -> str:
        return "\n".join(path.read_text() for path in sorted(self.directory.glob("daemon-*.log")))


@contextmanager
def running_daemon(
    directory: Path, teams: Mapping[str, str], *, config: str = DAEMON_TOML
) -> Iterator[Daemon]:
    """A daemon serving ``teams`` (file stem -> TOML) with the operator and viewer tokens."""
    (directory / "teams").mkdir(parents=True, exist_ok=True)
    for name, text in teams.items():
        (directory / "teams" / f"{name}.toml").write_text(text, encoding="utf-8")
    (directory / "daemon.toml").write_text(config, encoding="utf-8")
    daemon = Daemon(directory=directory)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


def team_file(name: str) -> str:
    return (TEAMS / f"{name}.toml").read_text(encoding="utf-8")


@attrs.define
class AguiRun:
    """A coordinator turn started over AG-UI, its events read in a thread."""

    session: str
    events: list[dict[str, Any]] = attrs.field(factory=list)
    thread: threading.Thread | None = None
    error: BaseException | None = None

    def finished(self, timeout: float = 30) -> list[dict[str, Any]]:
        assert self.thread is not None
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the AG-UI run did not end"
        if self.error is not None:
            raise self.error
        return self.events


def start_run(daemon: Daemon, team: str, prompt: str, *, session: str | None = None) -> AguiRun:
    """Start a run of ``team`` over AG-UI as the operator; the stream is read in a thread."""
    run = AguiRun(session=session or str(uuid.uuid4()))
    body = {
        "threadId": run.session,
        "runId": "run-1",
        "messages": [{"id": "m1", "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }

    def read() -> None:
        try:
            with httpx.stream(
                "POST",
                f"{daemon.url}/agui?team={team}",
                json=body,
                headers={"authorization": f"Bearer {OPERATOR_TOKEN}"},
                timeout=60,
            ) as response:
                for line in response.iter_lines():
                    if line.startswith("data:"):
                        run.events.append(json.loads(line[5:]))
        except httpx.HTTPError as error:  # the daemon stopped under the stream
            run.error = error

    run.thread = threading.Thread(target=read, daemon=True)
    run.thread.start()
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:  # the session exists once its first fact is down
        answer = httpx.get(
            f"{daemon.url}/api/sessions/{run.session}",
            headers={"authorization": f"Bearer {OPERATOR_TOKEN}"},
        )
        if answer.status_code == 200:
            return run
        time.sleep(0.05)
    raise AssertionError(f"session {run.session} did not start: {run.error or run.events}")


@attrs.define
class Watched:
    """A page and what went wrong on it."""

    page: Page
    errors: list[str] = attrs.field(factory=list)

    def screenshot(self, name: str) -> Path:
        path = artefacts() / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@contextmanager
def chromium() -> Iterator[Browser]:
    executable = require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def open_page(
    browser: Browser,
    daemon: Daemon,
    *,
    token: str | None = OPERATOR_TOKEN,
    fragment: str = "#/",
    viewport: tuple[int, int] = (1280, 800),
    bypass_csp: bool = False,
) -> Iterator[Watched]:
    """A fresh browser context on the daemon's page, signed in with ``token``
    (``bypass_csp``: scripts a test injects run despite the page's policy, as axe-core)."""
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]},
        accept_downloads=True,
        bypass_csp=bypass_csp,
    )
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    watched = Watched(page=page)

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watched.errors.append(f"console: {message.text}")

    def page_error(error: Error) -> None:
        watched.errors.append(f"pageerror: {error}")

    def response(answer: Response) -> None:
        # Chromium's console line for a failed load names no URL; this one does.
        if answer.status >= 400 and answer.status != 401:
            watched.errors.append(f"response: {answer.status} {answer.request.method} {answer.url}")

    page.on("console", console)
    page.on("pageerror", page_error)
    page.on("response", response)
    try:
        page.goto(daemon.url + "/")
        if token is not None:
            page.fill("#login-token", token)
            page.click("button[type=submit]")
            page.wait_for_selector("#principal")
            # Chromium logs the 401 of the first GET /api/me (not signed in yet, which is
            # how the page learns it must ask for a token) as a console error.
            expected = [e for e in watched.errors if "status of 401" in e]
            assert len(expected) <= 1, watched.errors
            watched.errors[:] = [e for e in watched.errors if e not in expected]
        if fragment != "#/":
            page.evaluate("fragment => { location.hash = fragment; }", fragment)
        yield watched
    finally:
        context.close()


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it stands: rule id, impact,
    help and the first few offending elements."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        """async () => {
            const result = await axe.run(document, {resultTypes: ['violations']});
            return result.violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => ({id: v.id, impact: v.impact, help: v.help,
                            nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
        }"""
    )
    return found


def graph_edges(page: Page) -> list[tuple[str, str, str]]:
    """The drawn graph's edges as (kind, source's agent name, target's agent name): the
    first line of each label without its number (``lead #1`` is ``lead``)."""
    edges: list[list[str]] = page.evaluate(
        """() => Orchestrator.currentGraph.cy.edges().map(e => [
            e.data('kind'),
            e.source().data('label').split('\\n')[0].replace(/ #\\d+$/, ''),
            e.target().data('label').split('\\n')[0].replace(/ #\\d+$/, '')])"""
    )
    return sorted((kind, source, target) for kind, source, target in edges)


def graph_nodes(page: Page) -> list[tuple[str, str]]:
    """The drawn graph's nodes as (kind, label with its lines joined by ' | '): who, what
    (a worker's task, else its role) and status; not the tokens line, which comes later."""
    nodes: list[list[str]] = page.evaluate(
        """() => Orchestrator.currentGraph.cy.nodes().map(n => [
            n.data('kind'), n.data('label').split('\\n').slice(0, 3).join(' | ')])"""
    )
    return sorted((kind, label) for kind, label in nodes)


def table_rows(page: Page) -> list[list[str]]:
    """The accessible node table: one list of cell texts per row."""
    rows: list[list[str]] = page.evaluate(
        """() => [...document.querySelectorAll('#nodes-body tr')].map(
            tr => [...tr.children].map(cell => cell.innerText.trim()))"""
    )
    return rows


def server_sequences(daemon: Daemon, session: str) -> list[int]:
    """The sequences of the session's envelopes as the daemon has them now."""
    answer = httpx.get(
        f"{daemon.url}/api/sessions/{session}/envelopes",
        headers={"authorization": f"Bearer {OPERATOR_TOKEN}"},
    )
    answer.raise_for_status()
    return [envelope["sequence"] for envelope in answer.json()["envelopes"]]


def page_sequences(page: Page) -> list[int]:
    """The sequences of the envelopes the page folded (its timeline's lines), ascending.

    The timeline groups its lines by agent and turn; within a group they are oldest first
    (checked here), so only the whole is sorted."""
    grouped: list[list[int]] = page.evaluate(
        """() => [...document.querySelectorAll('#timeline-list .turn-group')].map(
            g => [...g.querySelectorAll('li')].map(li => +li.dataset.sequence))"""
    )
    for lines in grouped:
        assert lines == sorted(lines), f"a group's lines out of order: {lines}"
    return sorted(sequence for lines in grouped for sequence in lines)


def caught_up(page: Page, daemon: Daemon, run: AguiRun) -> list[int]:
    """Wait until the run's turn is over and the page has folded every envelope the daemon
    has of the session, no more and no fewer; return their sequences."""
    run.finished()
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        expected = server_sequences(daemon, run.session)
        shown = page_sequences(page)
        if shown == expected or time.monotonic() > deadline:
            assert shown == expected, f"the page shows {shown}, the daemon has {expected}"
            return shown
        time.sleep(0.1)


@contextmanager
def model_server(answer: Callable[[dict[str, Any]], Answer]) -> Iterator[FakeOpenAI]:
    """The fake OpenAI-compatible server (tests/support/fake_openai.py) on loopback, served
    by trio in a thread of its own for the block's duration (these tests are sync)."""
    ready: queue.Queue[tuple[FakeOpenAI, trio.CancelScope, trio.lowlevel.TrioToken] | BaseException]
    ready = queue.Queue()

    async def serve() -> None:
        try:
            async with fake_openai(answer) as server:
                with trio.CancelScope() as scope:
                    ready.put((server, scope, trio.lowlevel.current_trio_token()))
                    await trio.sleep_forever()
        except BaseException as exc:
            ready.put(exc)
            raise

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    started = ready.get(timeout=30)
    if isinstance(started, BaseException):
        raise started
    server, scope, token = started
    try:
        yield server
    finally:
        trio.from_thread.run_sync(scope.cancel, trio_token=token)
        thread.join(timeout=30)
