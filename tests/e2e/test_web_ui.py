"""The web view in a real browser (Chromium via Playwright) on a real daemon process.

Each test starts ``orchestrator serve`` with its own journal and tokens (an operator, a
viewer; see tests/support/web_browser.py), drives a run as a client would (AG-UI, or the CLI
into the
journal for an ended session) and checks what the page shows: the table of nodes and the
drawn graph (cytoscape's elements), the controls, the connection. Screenshots of each go to
``$WEB_ARTEFACTS`` (default test-artefacts/web/). Plain sync tests: Playwright's sync API
must not run inside trio.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page
from playwright.sync_api import Error as PlaywrightError

from orchestrator.ahp.actions import ChatPendingMessageSetAction, ChatTurnStartedAction
from orchestrator.ahp.state import PendingMessageKind, SystemNotificationResponsePart
from orchestrator.core import RunStarted, span_id_of, trace_id_of
from orchestrator.journal import JournalReader, open_reader
from tests.support.a2a_peers import AUTH_SECRET, HangingAgent, serve_peers
from tests.support.fake_openai import Answer, Stream, text
from tests.support.teams import remote, slow_delegation
from tests.support.web_browser import (
    DAEMON_TOML,
    OPERATOR_TOKEN,
    TEAMS,
    VIEWER_TOKEN,
    WAIT_MS,
    WEB_ASSETS,
    Daemon,
    Watched,
    axe_violations,
    caught_up,
    chromium,
    graph_edges,
    graph_nodes,
    model_server,
    open_page,
    page_sequences,
    running_daemon,
    server_sequences,
    start_run,
    table_rows,
    team_file,
)

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


#: A coordinator that asks the user a question before it answers.
ASKS = """
[team]
name = "asks"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask"]
[[agents.lead.turns]]
steps = [ { ask = "Which database?" }, { say = "Using {outcomes}." } ]
"""


#: A coordinator asking a question whose answer must be a whole number.
REPLICAS = """
[team]
name = "replicas"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask"]
[[agents.lead.turns]]
steps = [ { ask = "How many replicas?", kind = "integer" }, { say = "Running {outcomes}." } ]
"""

#: Two analysts; the second asks to deploy, and the coordinator decides (it approves it).
OPS = """
[team]
name = "ops"
coordinator = "boss"
[agents.boss]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["analyst"]
approves = ["deploy"]
[[agents.boss.turns]]
steps = [ { delegate = [ { agent = "analyst", task = "check the north" },
                         { agent = "analyst", task = "deploy the south" } ] },
          { say = "done: {outcomes}" } ]
[agents.analyst]
role = "analyst"
tools = ["deploy"]
needs_approval = ["deploy"]
approved_by = "coordinator"
[[agents.analyst.turns]]
steps = [ { tool = "deploy", input = { region = "south" }, when_task_contains = "deploy" },
          { say = "did {task}" } ]
"""


#: A coordinator asking a yes / no question, then a choice of one.
CONFIRMS = """
[team]
name = "confirms"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["ask"]
[[agents.lead.turns]]
steps = [ { ask = "Ship to production?", kind = "boolean" },
          { ask = "Which region?", kind = "single-select", options = ["north", "south"] },
          { ask = "Announce where?", kind = "multi-select", options = ["mail", "chat", "web"] },
          { say = "Shipping: {outcomes}." } ]
"""


#: A lead whose rounds report tokens, with a worker; its third prompt takes long.
STEER = """
[team]
name = "steer"
coordinator = "lead"
description = "A lead and a writer whose model calls report their tokens."
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["writer"]
[[agents.lead.turns]]
steps = [ { usage = [100, 10] },
          { delegate = [ { agent = "writer", task = "write the release note" } ] },
          { usage = [200, 40] }, { say = "The answer: {outcomes}", chunks = 3 } ]
[[agents.lead.turns]]
steps = [ { usage = [50, 5] }, { say = "Follow-up answered." } ]
[[agents.lead.turns]]
steps = [ { sleep = 30 }, { say = "too late" } ]
[agents.writer]
role = "writer"
[[agents.writer.turns]]
steps = [ { usage = [30, 7] }, { say = "note written" } ]
"""


def start_from_the_page(page: Page, team: str, prompt: str) -> str:
    """Start a run with the sessions page's form, by keyboard; the session id it opens."""
    page.wait_for_selector(f"#new-run-team option[value='{team}']", state="attached")
    page.select_option("#new-run-team", team)
    page.focus("#new-run-prompt")
    page.keyboard.type(prompt)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "new-run-start"
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.hash.startsWith('#/sessions/')")
    return str(page.evaluate("() => decodeURIComponent(location.hash.split('/')[2])"))


def send_message(page: Page, text: str) -> None:
    """Type the next message in the composer and send it with Ctrl+Enter."""
    page.focus("#composer-text")
    page.keyboard.type(text)
    page.keyboard.press("Control+Enter")


def lines(text: str) -> list[str]:
    """A card's text as its non-empty lines (paragraphs come with blank lines between)."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def document_title(page: Page) -> str:
    return str(page.evaluate("() => document.title"))


def write_team(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "team.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def wait_rows(page: Page, expression: str) -> None:
    """Wait until ``expression`` (JavaScript over ``rows``, the node table's cell texts)
    holds."""
    try:
        page.wait_for_function(
            f"""() => {{
                const rows = [...document.querySelectorAll('#nodes-body tr')].map(
                    tr => [...tr.children].map(cell => cell.innerText.trim()));
                return {expression};
            }}""",
            timeout=WAIT_MS,
        )
    except PlaywrightError as error:
        state = page.evaluate(
            """() => ({connection: document.querySelector('#connection')?.innerText,
                       error: document.querySelector('#session-error')?.innerText,
                       actions: document.querySelector('#actions')?.innerText})"""
        )
        raise AssertionError(f"{expression}: not so; rows {table_rows(page)}, {state}") from error


def ended_session(directory: Path, team: Path = TEAMS / "delivery.toml") -> str:
    """Run ``team`` to its end with the CLI into ``directory``'s journal (before the daemon
    starts on it); return the session id."""
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            str(team),
            "Ship it",
            "--plain",
            "--approve",
            "auto",
            "--db",
            str(directory / "journal.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    marker = "session ahp-session:/"
    text = done.stdout + done.stderr
    return text[text.index(marker) + len(marker) :].split(")", 1)[0].split('"', 1)[0]


def standalone(directory: Path, team: Path) -> Path:
    """A run of ``team`` exported by ``orchestrator graph --format html``: one offline file."""
    session = ended_session(directory, team)
    exported = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "graph",
            session,
            "--format",
            "html",
            "--db",
            str(directory / "journal.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    path = directory / "graph.html"
    path.write_text(exported.stdout, encoding="utf-8")
    return path


@contextmanager
def offline_page(
    browser: Browser, path: Path, viewport: tuple[int, int] = (1280, 800)
) -> Iterator[Watched]:
    """``path`` opened from disk, every request it makes recorded in ``watched.errors``
    unless it is the file itself."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    watched = Watched(page=page)
    page.on("console", lambda m: watched.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.errors.append(str(e)))
    page.on(
        "request",
        lambda r: None if r.url.startswith("file:") else watched.errors.append("fetched " + r.url),
    )
    try:
        page.goto(path.as_uri())
        yield watched
    finally:
        context.close()


def scrub_to(page: Page, sequence: int) -> None:
    page.eval_on_selector(
        "#scrubber",
        "(el, at) => { el.value = String(at); el.dispatchEvent(new Event('input')); }",
        sequence,
    )


def test_a_delivery_run_appears_and_is_drawn_live(browser: Browser, tmp_path: Path) -> None:
    """The delivery team run by a client: its row appears in the list without a reload, and
    its page shows the coordinator, three workers and the approval one asked for, with their
    spawn edges and statuses, in the table and the graph, while the run is still going."""
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        page.wait_for_selector("#sessions-empty:has-text('No sessions yet')")
        page.evaluate("() => { window.notReloaded = true; }")
        run = start_run(daemon, "delivery", "Ship it")
        link = page.locator(f"tr[data-session='{run.session}'] a")
        link.wait_for()
        watched.screenshot("live-01-sessions-list")
        link.click()
        wait_rows(page, "rows.length === 5 && rows.some(r => r[2].startsWith('pending'))")
        assert page.evaluate("() => window.notReloaded") is True
        rows = table_rows(page)
        agents = sorted((row[0].split(" ")[0], row[1]) for row in rows[:4])
        assert agents == [("lead", "coordinator")] + [("researcher", "researcher")] * 3
        lead = next(row for row in rows if row[1] == "coordinator")
        assert lead[3] == "", "the coordinator has no parent"
        assert lead[2].startswith("waiting"), lead
        workers = [row for row in rows if row[1] == "researcher"]
        assert all(row[3].startswith("lead") for row in workers)
        # The worker that asked waits for the answer; the others run or are done by now.
        assert any(row[2].startswith("needs_input (approval)") for row in workers), workers
        approval = next(row for row in rows if row[0].startswith("approval"))
        assert approval[0] == "approval publish"
        assert approval[1] == "asked by researcher #3, routed to user"
        assert approval[2] == "pending (routed to user)"
        edges = graph_edges(page)
        assert edges.count(("spawn", "lead", "researcher")) == 3, edges
        assert ("asks", "approval", "researcher") in edges, edges
        assert len(edges) == 4, edges
        nodes = graph_nodes(page)
        assert [label for kind, label in nodes if kind == "chat" and label.startswith("lead")] == [
            "lead #1 | coordinator | [waiting (teammate)]"
        ], nodes
        # Each worker says its task: three researchers are told apart.
        assert (
            "chat",
            "researcher #3 | Publish the release not… | [needs_input (approval)]",
        ) in nodes, nodes
        assert len({label for kind, label in nodes if label.startswith("researcher")}) == 3
        assert ("approval", "approval | publish | [pending (routed to user)]") in nodes
        assert page.get_attribute("#graph", "role") == "img"
        label = page.get_attribute("#graph", "aria-label") or ""
        assert "4 chats" in label, label
        assert "1 pending" in label, label
        assert page.inner_text("#connection") == "live"
        watched.screenshot("live-02-session-pending")
        assert watched.errors == []


def test_the_approve_button_approves_and_the_graph_shows_it_resolved(
    browser: Browser, tmp_path: Path
) -> None:
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        run = start_run(daemon, "delivery", "Ship it")
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        button = page.locator("#actions [data-action=approve]")
        button.wait_for()
        assert button.get_attribute("aria-label") == "Approve publish asked by researcher #3"
        card = lines(page.inner_text("#actions li.approval"))
        assert card[:4] == [
            "researcher #3 asks to run",
            "Task: Publish the release notes to the release page",
            "publish(target=release page)",
            "Routed to: user",
        ], card
        assert "ahp-chat:" not in page.inner_text("#actions")
        # What waits is counted in the tab: its title and its favicon.
        page.wait_for_function("() => document.title.startsWith('(1 waiting) ')")
        assert page.get_attribute("link[rel=icon]", "data-waiting") == "1"
        watched.screenshot("approve-01-pending")
        # The keyboard's way: Tab reaches Approve, Enter presses it.
        button.focus()
        page.keyboard.press("Enter")
        wait_rows(page, "rows.some(r => r[0] === 'approval publish' && r[2].startsWith('approv'))")
        caught_up(page, daemon, run)
        rows = table_rows(page)
        workers = [row for row in rows if row[1] == "researcher"]
        assert [row[2] for row in workers] == ["completed"] * 3, rows
        approval = next(row for row in rows if row[0] == "approval publish")
        assert approval[2] in ("approved by olivia", "approved by user"), approval
        nodes = graph_nodes(page)
        assert any(k == "approval" and "[approved" in label for k, label in nodes), nodes
        assert page.locator("#actions [data-action]").count() == 0
        assert "Nothing is waiting" in page.inner_text("#actions")
        decided = page.inner_text("#decided-list")
        assert "publish asked by researcher #3: approved by olivia" in decided, decided
        assert "elsewhere" not in decided, decided
        assert not document_title(page).startswith("(")
        assert page.get_attribute("link[rel=icon]", "data-waiting") == "0"
        watched.screenshot("approve-02-resolved")
        # The timeline says it in words; "decisions" keeps those two lines.
        page.select_option("#timeline-kind", "decision")
        said = page.locator("#timeline-list li:not([hidden]) .words").all_inner_texts()
        assert said == [
            "researcher #3 asked to run publish(target=release page) — routed to user",
            "researcher #3's publish: approved by olivia",
        ], said
        page.locator("#timeline-list li:not([hidden]) button").first.click()
        page.wait_for_selector("#transcript-title:has-text('Transcript: researcher')")
        page.check("#timeline-raw")
        raw = page.locator("#timeline-list li:not([hidden]) .raw").first
        assert '"type":"action.required"' in raw.inner_text()
        page.fill("#timeline-filter", "olivia")
        page.wait_for_function(
            "() => document.querySelectorAll('#timeline-list li:not([hidden])').length === 1"
        )
        # One agent's lines: what researcher #3 did and what was delegated to it.
        page.fill("#timeline-filter", "")
        page.select_option("#timeline-kind", "")
        page.select_option("#timeline-agent", label="researcher #3")
        said = page.locator("#timeline-list li:not([hidden]) .words").all_inner_texts()
        assert said[0].startswith("lead #1 delegated to researcher #3: Publish"), said
        assert all("researcher #3" in line or line.startswith("Task") for line in said), said
        watched.screenshot("approve-03-timeline")
        assert watched.errors == []


def test_the_delivery_team_is_started_from_the_page_and_one_worker_cancelled(
    browser: Browser, tmp_path: Path
) -> None:
    """An operator starts the delivery team from the "New run" form, cancels researcher #3
    (waiting for its approval) from its panel, reads the coordinator's answer in the Result
    panel, and sends a follow-up message that the coordinator answers."""
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        about = page.locator("#new-run-about")
        page.wait_for_selector("#new-run-team option[value='delivery']", state="attached")
        assert "Prepares the release notes" in about.inner_text()
        watched.screenshot("run-01-new-run")
        session = start_from_the_page(page, "delivery", "Ship the 2.0 notes")
        page.wait_for_selector("#actions li.approval")
        assert page.inner_text("#result-prompt") == "Asked: Ship the 2.0 notes"
        page.locator("#nodes-body").get_by_role("button", name="researcher #3", exact=True).focus()
        page.keyboard.press("Enter")
        cancel = page.locator("#cancel-worker")
        assert cancel.inner_text() == "Cancel researcher #3"
        watched.screenshot("run-02-worker-selected")
        cancel.focus()
        page.keyboard.press("Enter")
        wait_rows(page, "rows.some(r => r[0] === 'researcher #3' && r[2] === 'killed')")
        page.wait_for_selector("#result-text:has-text('The release notes are ready.')")
        assert page.inner_text("#result-state") == "answered"
        rows = table_rows(page)
        statuses = sorted(row[2] for row in rows if row[1] == "researcher")
        assert statuses == ["completed", "completed", "killed"], rows
        assert "Nothing is waiting" in page.inner_text("#actions")
        watched.screenshot("run-03-answered")
        send_message(page, "Thanks: when is it out?")
        page.wait_for_selector("#result-prompt:has-text('Asked: Thanks: when is it out?')")
        page.wait_for_selector("#result-state:text-is('answered')")
        assert page.input_value("#composer-text") == ""
        # The follow-up is the coordinator's second turn, in the same session.
        assert page.evaluate("() => location.hash") == f"#/sessions/{session}"
        page.click("#nodes-body tr:first-child button")
        page.wait_for_selector("#transcript .turn >> nth=1")
        asked = page.locator("#transcript .turn p.user").all_inner_texts()
        assert asked == ["Asked: Ship the 2.0 notes", "Asked: Thanks: when is it out?"], asked
        watched.screenshot("run-04-follow-up")
        assert watched.errors == []


def test_the_result_and_what_each_agent_used_are_read_and_a_run_cancelled(
    browser: Browser, tmp_path: Path
) -> None:
    """Tokens in and out, model calls and time per agent (the table) and in total (the
    Result panel), as recorded, grow with each prompt; Cancel run cancels the running
    turn; a viewer sees neither the composer nor the form."""
    with (
        running_daemon(tmp_path, {"steer": STEER}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        session = start_from_the_page(page, "steer", "write the note")
        page.wait_for_selector("#result-text:has-text('The answer:')")
        assert "note written" in page.inner_text("#result-text")
        page.wait_for_selector("#usage-total:has-text('330 tokens in, 57 out')")
        assert "3 model calls" in page.inner_text("#usage-total")
        wait_rows(page, "rows.some(r => r[0] === 'writer #1' && r[4] === '30' && r[5] === '7')")
        lead = next(row for row in table_rows(page) if row[0] == "lead #1")
        assert lead[4:7] == ["300", "50", "2"], lead
        watched.screenshot("usage-01-first-answer")
        send_message(page, "and a follow-up")
        page.wait_for_selector("#result-text:has-text('Follow-up answered.')")
        page.wait_for_selector("#usage-total:has-text('380 tokens in, 62 out')")
        assert "4 model calls" in page.inner_text("#usage-total")
        send_message(page, "take your time")
        cancel = page.locator("#cancel-run")
        cancel.wait_for()
        assert "queued" in page.inner_text("#composer-mode")
        cancel.focus()
        page.keyboard.press("Enter")
        page.wait_for_selector("#result-state:has-text('ended: cancelled')")
        page.wait_for_selector("#cancel-run", state="hidden")
        watched.screenshot("usage-02-cancelled")
        assert watched.errors == []
        with open_page(
            browser, daemon, token=VIEWER_TOKEN, fragment=f"#/sessions/{session}"
        ) as viewer:
            viewer.page.wait_for_selector("#usage-total:has-text('380 tokens in')")
            assert viewer.page.locator("#composer").is_hidden()
            viewer.page.evaluate("() => { location.hash = '#/'; }")
            viewer.page.wait_for_selector(f"tr[data-session='{session}']")
            assert viewer.page.locator("#new-run").count() == 0


#: A lead that delegates to a reviewer taking 4 s, then answers: a turn there is time to steer.
STEERED = """
[team]
name = "steered"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["reviewer"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "reviewer", task = "review the change" } ] },
          { say = "Reviewed: {outcomes}" } ]
[agents.reviewer]
role = "reviewer"
[[agents.reviewer.turns]]
steps = [ { sleep = 4 }, { say = "looks fine" } ]
"""


def test_the_composer_sends_steering_or_queued_as_chosen(browser: Browser, tmp_path: Path) -> None:
    """While the coordinator works, the composer offers the next turn (queued, the default)
    or steering; chosen by keyboard, steering joins the running turn: recorded as the
    coordinator's steering message and taken into that turn, which is the only one. Once
    the coordinator is idle the choice goes (a message is then its next turn)."""
    with (
        running_daemon(tmp_path, {"steered": STEERED}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        session = start_from_the_page(page, "steered", "review the change")
        page.wait_for_selector("#composer-kind", state="visible")
        assert page.is_checked("#composer-queued")
        assert "queued" in page.inner_text("#composer-mode")
        page.focus("#composer-queued")
        page.keyboard.press("ArrowDown")  # a radio group moves by arrows
        assert page.is_checked("#composer-steering")
        assert "steers its running turn" in page.inner_text("#composer-mode")
        watched.screenshot("steer-01-steering-chosen")
        send_message(page, "only the security findings")
        page.wait_for_selector("#result-state:has-text('Steered with: only the security')")
        page.wait_for_selector("#result-text:has-text('Reviewed: ')")
        page.wait_for_selector("#result-state:text-is('answered')")
        page.wait_for_selector("#composer-kind", state="hidden")
        assert page.inner_text("#composer-mode").startswith("Starts lead's next turn")
        watched.screenshot("steer-02-answered")
        assert watched.errors == []
    reader = open_reader(daemon.db)
    uri = "ahp-session:/" + session
    chat = reader.open(uri).coordinator_chat()
    mine = [f for f in reader.facts(uri) if f.channel == chat]
    (pending,) = [f.action for f in mine if isinstance(f.action, ChatPendingMessageSetAction)]
    assert pending.kind is PendingMessageKind.STEERING
    assert pending.message.text == "only the security findings"
    started = [f for f in mine if isinstance(f.action, ChatTurnStartedAction)]
    assert len(started) == 1, "steering starts no turn"
    (turn,) = reader.open(uri).chats[chat].turns  # type: ignore[index]
    notes = [p for p in turn.response_parts if isinstance(p, SystemNotificationResponsePart)]
    assert [p.content for p in notes if (p.meta or {}).get("steering") == pending.id] == [
        "only the security findings"
    ]


def test_a_steering_message_is_in_the_transcript_in_its_place_with_who_sent_it(
    browser: Browser, tmp_path: Path
) -> None:
    """A message steering the coordinator's running turn shows in its transcript, named
    after the principal who sent it (the operator token's holder, olivia), where the turn
    took it in: after the delegation it was waiting on, before the answer it led to."""
    with (
        running_daemon(tmp_path, {"steered": STEERED}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        start_from_the_page(page, "steered", "review the change")
        page.wait_for_selector("#composer-kind", state="visible")
        page.check("#composer-steering")
        send_message(page, "only the security findings")
        page.wait_for_selector("#result-state:text-is('answered')")
        page.locator("#nodes-body tr", has_text="lead").first.locator("button").click()
        steering = page.locator("#transcript .turn p.steering")
        steering.wait_for()
        assert steering.inner_text() == "Steered by olivia: only the security findings"
        entries = page.locator("#transcript .turn > *").evaluate_all(
            "els => els.map(e => e.tagName === 'H4' ? 'heading' : e.className)"
        )
        # "buttons": the turn ended, so an operator may fork from it (issue 40).
        expected = ["heading", "buttons", "user", "tool", "user steering", "text", "result"]
        assert entries == expected, entries
        (turn,) = page.locator("#transcript .turn").all()
        texts = [t.strip() for t in turn.locator(":scope > p").all_inner_texts()]
        assert texts[0] == "Asked: review the change"
        assert texts[2].startswith("Reviewed: ")
        watched.screenshot("steer-03-in-the-transcript")
        assert watched.errors == []


#: A coordinator on the OpenAI-compatible backend (the fake server's URL goes in).
LOCAL_MODEL = """
[team]
name = "local"
coordinator = "lead"
[openai]
model = "team-model"
base_url = "{url}"
max_retries = 0
[agents.lead]
role = "coordinator"
backend = "openai"
"""


def test_a_run_started_with_a_model_asks_that_model(browser: Browser, tmp_path: Path) -> None:
    """The "New run" form's *Model*: disabled for a team with no OpenAI-compatible agent,
    the team file's model as its placeholder otherwise; a name with a space is refused on
    the form; a run started with a model asks the model server for it, and the next run,
    with the field empty, for the team file's."""
    asked: list[str] = []

    def answer(request: dict[str, Any]) -> Answer:
        asked.append(str(request["model"]))
        return Stream(text("Answered by the model."))

    with model_server(answer) as server:
        teams = {"local": LOCAL_MODEL.format(url=server.url), "delivery": team_file("delivery")}
        with running_daemon(tmp_path, teams) as daemon, open_page(browser, daemon) as watched:
            page = watched.page
            page.wait_for_selector("#new-run-team option[value='local']", state="attached")
            page.select_option("#new-run-team", "delivery")
            assert page.is_disabled("#new-run-model")
            assert "no OpenAI-compatible agent" in page.inner_text("#new-run-model-note")
            page.select_option("#new-run-team", "local")
            assert page.is_enabled("#new-run-model")
            assert page.get_attribute("#new-run-model", "placeholder") == "team-model"
            page.fill("#new-run-model", "two words")
            page.fill("#new-run-prompt", "hello")
            page.click("#new-run-start")
            assert "no spaces" in page.inner_text("#new-run-error")
            assert asked == []
            page.fill("#new-run-model", "")
            page.focus("#new-run-model")
            page.keyboard.type("chosen-model:7b")
            watched.screenshot("model-01-chosen")
            session = start_from_the_page(page, "local", " and again")
            page.wait_for_selector("#result-text:has-text('Answered by the model.')")
            page.evaluate("() => { location.hash = '#/'; }")
            page.wait_for_selector(f"tr[data-session='{session}']")
            assert page.input_value("#new-run-model") == ""
            start_from_the_page(page, "local", "hello")
            page.wait_for_selector("#result-text:has-text('Answered by the model.')")
            assert watched.errors == []
    assert asked == ["chosen-model:7b", "team-model"]


def test_a_chosen_model_is_shown_and_kept_across_a_daemon_restart(
    browser: Browser, tmp_path: Path
) -> None:
    """The model chosen on the "New run" form is recorded with the run: the session's page
    names it; after a daemon restart (same journal) the page, read from the journal, still
    names it; the conversation's next message (a client's, which has the new daemon take
    the session up) asks that model again, not the team file's."""
    asked: list[str] = []

    def answer(request: dict[str, Any]) -> Answer:
        asked.append(str(request["model"]))
        return Stream(text(f"Answer {len(asked)}."))

    with model_server(answer) as server:
        teams = {"local": LOCAL_MODEL.format(url=server.url)}
        with running_daemon(tmp_path, teams) as daemon, open_page(browser, daemon) as watched:
            page = watched.page
            page.wait_for_selector("#new-run-team option[value='local']", state="attached")
            page.select_option("#new-run-team", "local")
            page.fill("#new-run-model", "chosen-model:7b")
            session = start_from_the_page(page, "local", "hello")
            page.wait_for_selector("#result-text:has-text('Answer 1.')")
            page.wait_for_selector("#session-model:text-is('chosen-model:7b')")
            daemon.restart()
            page.reload()
            page.wait_for_selector("#session-model:text-is('chosen-model:7b')")
            watched.screenshot("model-02-after-restart")
            start_run(daemon, "local", "and again", session=session).finished()
            assert asked == ["chosen-model:7b", "chosen-model:7b"]
            page.reload()
            page.wait_for_selector("#result-text:has-text('Answer 2.')")
            page.wait_for_selector("#connection:text-is('live')")
            assert page.inner_text("#session-model") == "chosen-model:7b"
            watched.screenshot("model-03-next-message")
            # While the daemon restarts, its requests fail or are answered 503 (the browser
            # logs them); nothing else may go wrong on the page.
            failed = ("console: Failed to load resource", "response: 503 ")
            assert [e for e in watched.errors if not e.startswith(failed)] == []
    facts = JournalReader(tmp_path / "journal.db").facts(f"ahp-session:/{session}")
    (run,) = [f.action for f in facts if isinstance(f.action, RunStarted)]
    assert run.model == "chosen-model:7b"


def test_the_timeline_is_grouped_by_agent_and_turn(browser: Browser, tmp_path: Path) -> None:
    """The timeline's lines come in groups, one per agent and turn, in the order the turns
    began: the coordinator's second prompt is its second turn's group, after the first
    one's and its worker's. Every line of a group is about its agent; the lines stay in
    words, and the raw envelopes are one click away (each one's threadId is the group's
    chat)."""
    with (
        running_daemon(tmp_path, {"steer": STEER}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        start_from_the_page(page, "steer", "write the note")
        page.wait_for_selector("#result-state:text-is('answered')")
        send_message(page, "and a follow-up")
        page.wait_for_selector("#result-text:has-text('Follow-up answered.')")
        page.wait_for_selector(".turn-group[data-turn='2'] li")
        groups = page.evaluate(
            """() => [...document.querySelectorAll('#timeline-list .turn-group')].map(g => ({
                title: g.querySelector('.group-title').innerText,
                chat: g.dataset.chat,
                first: Number(g.querySelector('li').dataset.sequence),
                chats: [...g.querySelectorAll('li')].map(li => li.dataset.chats),
                words: [...g.querySelectorAll('li .words')].map(w => w.innerText),
            }))"""
        )
        titles = [g["title"] for g in groups]
        assert titles[:1] == ["The run"], titles
        assert {"lead #1 · turn 1", "writer #1 · turn 1", "lead #1 · turn 2"} <= set(titles)
        assert titles.index("lead #1 · turn 1") < titles.index("lead #1 · turn 2")
        assert titles.index("writer #1 · turn 1") < titles.index("lead #1 · turn 2")
        firsts = [g["first"] for g in groups]
        assert firsts == sorted(firsts), "groups come in the order their turns began"
        for group in groups:
            if group["chat"]:
                assert all(group["chat"] in chats.split(" ") for chats in group["chats"]), group
        second = next(g for g in groups if g["title"] == "lead #1 · turn 2")
        assert any(words.startswith("lead #1 is ") for words in second["words"]), second
        watched.screenshot("timeline-01-grouped")
        page.check("#timeline-raw")
        raw = page.locator(".turn-group[data-turn='2'] li .raw").first
        raw.wait_for()
        assert json.loads(raw.inner_text())["threadId"] == second["chat"]
        # A filter hides the groups it leaves empty, and says how many lines a group kept.
        page.select_option("#timeline-kind", "run")
        page.wait_for_function(
            "() => [...document.querySelectorAll('#timeline-list .turn-group')]"
            ".filter(g => !g.hidden).length === 1"
        )
        watched.screenshot("timeline-02-raw-and-filtered")
        assert watched.errors == []


def test_on_a_phone_the_waiting_decision_comes_first(browser: Browser, tmp_path: Path) -> None:
    """At 390x844 a live session's page opens on the approval that waits (card and buttons
    in the first screen), then the answer, then the list of agents; the graph is drawn only
    on request; nothing is wider than the screen."""
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon, viewport=(390, 844)) as watched,
    ):
        page = watched.page
        run = start_run(daemon, "delivery", "Ship it")
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        card = page.locator("#actions li.approval")
        card.wait_for()
        approve = page.locator("#actions [data-action=approve]")
        box = approve.bounding_box()
        assert box is not None
        assert box["y"] + box["height"] <= 844, "Approve is on the first screen"
        where = page.evaluate(
            """() => ['#actions', '#result', '#nodes', '#graph-toggle'].map(
                s => document.querySelector(s).getBoundingClientRect().top)"""
        )
        assert where == sorted(where), where
        assert page.locator("#graph").is_hidden()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        watched.screenshot("phone-01-decision-first")
        approve.focus()
        page.keyboard.press("Enter")
        page.wait_for_selector("#decided-list li:has-text('approved by olivia')")
        watched.screenshot("phone-02-decided")
        assert watched.errors == []


@pytest.mark.parametrize(
    ("viewport", "scheme"),
    [((1400, 900), "light"), ((390, 844), "dark")],
    ids=["desktop-light", "phone-dark"],
)
def test_axe_finds_no_serious_violation_on_any_page(
    browser: Browser, tmp_path: Path, viewport: tuple[int, int], scheme: str
) -> None:
    """axe-core (vendored from npm) in the same Chromium, its colour contrast checks
    included, in the light theme and the dark one: the sign-in page, the sessions list with
    its New run form, a live session with an approval waiting, the same answered, and the
    teammates page have no serious or critical violation."""
    teams = {"delivery": team_file("delivery"), "nightly": team_file("nightly")}
    found: dict[str, list[dict[str, object]]] = {}
    with running_daemon(tmp_path, teams) as daemon:
        with open_page(browser, daemon, token=None, viewport=viewport, bypass_csp=True) as out:
            out.page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            out.page.wait_for_selector("#login-token")
            found["sign-in"] = axe_violations(out.page)
        with open_page(browser, daemon, viewport=viewport, bypass_csp=True) as watched:
            page = watched.page
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            page.wait_for_selector("#new-run-team option[value='delivery']", state="attached")
            found["sessions"] = axe_violations(page)
            run = start_run(daemon, "delivery", "Ship it")
            page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
            page.wait_for_selector("#actions li.approval")
            page.click("#nodes-body tr:first-child button")
            page.wait_for_selector("#transcript .turn")
            found["session"] = axe_violations(page)
            page.click("#actions [data-action=approve]")
            caught_up(page, daemon, run)
            page.check("#timeline-raw")
            found["session answered"] = axe_violations(page)
            page.evaluate("() => { location.hash = '#/teammates'; }")
            page.wait_for_selector("tr[data-teammate]")
            found["teammates"] = axe_violations(page)
            watched.screenshot(f"axe-{viewport[0]}x{viewport[1]}-{scheme}-teammates")
            background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
            assert background == ("rgb(13, 17, 23)" if scheme == "dark" else "rgb(255, 255, 255)")
    assert {name: v for name, v in found.items() if v} == {}


def test_a_viewer_sees_no_action_controls(browser: Browser, tmp_path: Path) -> None:
    teams = {"delivery": team_file("delivery"), "nightly": team_file("nightly")}
    with running_daemon(tmp_path, teams) as daemon:
        with open_page(browser, daemon, token=None) as refused:
            refused.page.fill("#login-token", "not-a-token-of-this-daemon")
            refused.page.click("button[type=submit]")
            refused.page.wait_for_selector("#login-error:has-text('not accepted')")
        run = start_run(daemon, "delivery", "Ship it")
        with open_page(
            browser, daemon, token=VIEWER_TOKEN, fragment=f"#/sessions/{run.session}"
        ) as watched:
            page = watched.page
            assert page.inner_text("#principal") == "victor (viewer)"
            page.wait_for_selector("#actions li.approval")
            assert "publish" in page.inner_text("#actions li.approval")
            assert page.locator("#actions button").count() == 0
            watched.screenshot("viewer-01-session")
            page.evaluate("() => { location.hash = '#/teammates'; }")
            page.wait_for_selector("tr[data-teammate='nightly/dependency-audit']")
            assert page.locator("#teammates [data-action=trigger]").count() == 0
            assert page.locator("#teammates [data-action=pause]").count() == 0
            assert page.locator("#teammates [data-action=history]").count() == 1
            watched.screenshot("viewer-02-teammates")
            assert [e for e in watched.errors if "401" not in e] == []


def test_the_page_survives_a_daemon_restart_and_resumes_live(
    browser: Browser, tmp_path: Path
) -> None:
    """Stopped mid-run, the page says the daemon is unreachable and counts down; started
    again on the same port and journal (which takes the run up), it reattaches and follows
    the run to its end, with no envelope missing or shown twice."""
    with (
        running_daemon(tmp_path, {"slow": slow_delegation()}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        run = start_run(daemon, "slow", "go")
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        wait_rows(page, "rows.filter(r => r[1] === 'builder').length === 2")
        # The rows come from the journal first; the socket opens after them.
        page.wait_for_selector("#connection:text-is('live')")
        port = daemon.port
        daemon.stop()
        page.wait_for_selector("#connection:has-text('unreachable, retrying in')")
        watched.screenshot("restart-01-unreachable")
        before = page_sequences(page)
        daemon.start(port)
        page.wait_for_selector("#connection:text-is('live')")
        # The run taken up finishes its workers; the page follows without a reload.
        wait_rows(page, "rows.filter(r => r[1] === 'builder' && r[2] === 'completed').length >= 2")
        deadline = time.monotonic() + WAIT_MS / 1000
        while page_sequences(page) != server_sequences(daemon, run.session):
            assert time.monotonic() < deadline, page_sequences(page)
            time.sleep(0.1)
        sequences = page_sequences(page)
        assert sequences[: len(before)] == before
        assert len(sequences) > len(before)
        assert sequences == list(range(1, len(sequences) + 1)), "a gap or a duplicate"
        watched.screenshot("restart-02-resumed")
        assert "session taken up" in daemon.log()


def test_an_ended_sessions_scrubber_shows_an_earlier_graph(
    browser: Browser, tmp_path: Path
) -> None:
    session = ended_session(tmp_path)
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        sockets: list[str] = []
        page.on("websocket", lambda socket: sockets.append(socket.url))
        row = page.locator(f"tr[data-session='{session}'] a")
        row.wait_for()
        row.click()
        wait_rows(page, "rows.length === 5")
        assert page.inner_text("#connection") == "ended: loaded from the journal"
        assert [url for url in sockets if "/ws" in url] == [], "an ended session needs no socket"
        last = int(page.get_attribute("#scrubber", "max") or 0)
        assert page.inner_text("#scrubber-label") == f"at fact {last} (latest)"
        spawned = page.evaluate(
            """async id => {
                const answer = await (await fetch('/api/sessions/' + id + '/envelopes')).json();
                const spawned = answer.envelopes.filter(e => e.type === 'agent.spawned');
                return spawned.map(e => e.sequence);
            }""",
            session,
        )
        assert len(spawned) == 4
        scrub_to(page, spawned[1])
        assert page.inner_text("#scrubber-label") == f"at fact {spawned[1]} of {last}"
        wait_rows(page, "rows.length === 2")
        assert graph_edges(page) == [("spawn", "lead", "researcher")]
        watched.screenshot("scrubber-01-earlier")
        page.focus("#scrubber")
        page.keyboard.press("Home")
        wait_rows(page, "rows.length === 0")
        page.click("#scrubber-live")
        wait_rows(page, "rows.length === 5")
        assert len(graph_edges(page)) == 4
        with page.expect_download() as svg:
            page.click("#export-svg")
        text = Path(svg.value.path()).read_text()
        assert text.startswith("<?xml")
        assert "<svg" in text
        assert "researcher" in text
        with page.expect_download() as png:
            page.click("#export-png")
        assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        watched.screenshot("scrubber-02-latest")
        assert watched.errors == []


def test_the_teammates_page_triggers_a_run(browser: Browser, tmp_path: Path) -> None:
    with (
        running_daemon(tmp_path, {"nightly": team_file("nightly")}) as daemon,
        open_page(browser, daemon, fragment="#/teammates") as watched,
    ):
        page = watched.page
        row = "tr[data-teammate='nightly/dependency-audit']"
        page.wait_for_selector(row)
        assert "0 3 * * *" in page.inner_text(row)
        watched.screenshot("teammates-01-list")
        page.click(f"{row} [data-action=trigger]")
        page.wait_for_selector("#teammates-message:has-text('trigger nightly/dependency-audit')")
        # The run is short: the row follows it to its end (the subscription's events).
        page.wait_for_selector(f"{row}:has-text('completed at') a.session-link")
        assert "sleeping" in page.inner_text(f"{row} .badge")
        page.click(f"{row} [data-action=pause]")
        page.wait_for_selector(f"{row} .badge:has-text('(paused)')")
        assert page.inner_text(f"{row} td:nth-child(4)") == "-", "no next wake while paused"
        page.click(f"{row} [data-action=resume]")
        page.wait_for_selector(f"{row} [data-action=pause]")
        assert "(paused)" not in page.inner_text(f"{row} .badge")
        page.click(f"{row} [data-action=history]")
        link = page.locator("tr[data-history] a.session-link").first
        link.wait_for()
        watched.screenshot("teammates-02-history")
        link.click()
        wait_rows(page, "rows.some(r => r[0].startsWith('auditor'))")
        rows = table_rows(page)
        assert [row[1] for row in rows] == ["coordinator", "auditor"]
        assert graph_edges(page) == [("spawn", "lead", "auditor")]
        watched.screenshot("teammates-03-run")
        assert watched.errors == []


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_the_pages_draw_without_error(
    browser: Browser, tmp_path: Path, viewport: tuple[int, int]
) -> None:
    """Every page, at a desktop and a phone size: no console error, no uncaught exception.
    On the desktop the decisions sit beside the graph and the table below it; on the phone
    the decisions come first, then the table, and the graph is drawn on request."""
    session = ended_session(tmp_path)
    teams = {"delivery": team_file("delivery"), "nightly": team_file("nightly")}
    name = f"{viewport[0]}x{viewport[1]}"
    with (
        running_daemon(tmp_path, teams) as daemon,
        open_page(browser, daemon, viewport=viewport) as watched,
    ):
        page = watched.page
        page.wait_for_selector(f"tr[data-session='{session}']")
        watched.screenshot(f"draw-{name}-sessions")
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", session)
        wait_rows(page, "rows.length === 5")
        page.click("#nodes-body tr:first-child button")
        page.wait_for_selector("#transcript .turn")
        assert "Transcript: lead" in page.inner_text("#transcript")
        if viewport[0] < 1000:
            assert page.locator("#graph").is_hidden(), "the graph on request on a phone"
            toggle = page.locator("#graph-toggle")
            assert toggle.get_attribute("aria-expanded") == "false"
            toggle.focus()
            page.keyboard.press("Enter")
            assert toggle.get_attribute("aria-expanded") == "true"
            page.wait_for_function("() => Orchestrator.currentGraph.cy.width() > 0")
        graph = page.locator("#graph").bounding_box()
        table = page.locator("#nodes").bounding_box()
        actions = page.locator("#actions").bounding_box()
        assert graph is not None
        assert table is not None
        assert actions is not None
        if viewport[0] >= 1000:
            assert actions["x"] >= graph["x"] + graph["width"] - 1, "decisions beside the graph"
            assert table["y"] >= graph["y"] + graph["height"] - 1, "the table below the graph"
        else:
            assert actions["y"] < table["y"] < graph["y"], "decisions, the table, the graph"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport[0]
        watched.screenshot(f"draw-{name}-session")
        page.evaluate("() => { location.hash = '#/teammates'; }")
        page.wait_for_selector("tr[data-teammate]")
        watched.screenshot(f"draw-{name}-teammates")
        assert watched.errors == []


def test_the_node_table_is_keyboard_operable(browser: Browser, tmp_path: Path) -> None:
    session = ended_session(tmp_path)
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon, fragment=f"#/sessions/{session}") as watched,
    ):
        page = watched.page
        wait_rows(page, "rows.length === 5")
        page.focus("#nodes-body tr:nth-child(2) button")
        page.keyboard.press("Enter")
        page.wait_for_selector("#nodes-body tr.selected:nth-child(2)")
        selected = page.evaluate(
            "() => Orchestrator.currentGraph.cy.$(':selected').map(node => node.id())"
        )
        second = page.get_attribute("#nodes-body tr:nth-child(2)", "data-node")
        assert selected == [second]
        page.wait_for_selector("#transcript .turn")
        transcript = page.inner_text("#transcript")
        assert "Transcript: researcher" in transcript
        assert "Asked: Summarise the changelog since the last release" in transcript
        assert "Tool web_search [done]" in transcript
        assert "3 results: changelog, issue tracker, release page draft" in transcript
        assert "Result: Done: Summarise the changelog" in transcript
        assert page.locator("#transcript a.trace-link").count() == 0  # no tracing.trace_url
        assert page.locator("#nodes caption").count() == 1
        assert page.locator("#nodes thead th[scope=col]").all_inner_texts() == [
            "Agent",
            "Role",
            "Status",
            "Parent",
            "Tokens in",
            "Tokens out",
            "Model calls",
            "Time",
        ]
        assert watched.errors == []


def test_the_agent_and_its_tool_calls_link_to_their_trace(browser: Browser, tmp_path: Path) -> None:
    """With daemon.toml's ``tracing.trace_url``, the panel links the selected agent's turn
    and each tool call to the trace UI, with the ids its spans are exported under."""
    session = ended_session(tmp_path)
    uri = f"ahp-session:/{session}"
    facts = JournalReader(tmp_path / "journal.db").facts(uri)
    (run,) = [f.action for f in facts if isinstance(f.action, RunStarted)]
    config = (
        DAEMON_TOML + '\n[tracing]\ntrace_url = "http://traces.test/t/{trace_id}?span={span_id}"\n'
    )
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}, config=config) as daemon,
        open_page(browser, daemon, fragment=f"#/sessions/{session}") as watched,
    ):
        page = watched.page
        wait_rows(page, "rows.length === 5")
        page.click("#nodes-body tr:nth-child(2) button")
        page.wait_for_selector("#transcript .turn a.tool-trace")
        chat = page.get_attribute("#nodes-body tr:nth-child(2)", "data-node")
        assert chat is not None
        trace = f"{trace_id_of(uri, run.task):032x}"
        (turn,) = page.locator("#transcript .turn").evaluate_all(
            "turns => turns.map(t => t.dataset.turn)"
        )
        agent = page.locator("#transcript a.agent-trace")
        assert agent.inner_text() == "trace"
        assert agent.get_attribute("href") == (
            f"http://traces.test/t/{trace}?span={span_id_of('turn', chat, turn):016x}"
        )
        assert agent.get_attribute("rel") == "noopener noreferrer"
        calls = page.locator("#transcript .tool[data-tool-call]")
        assert calls.count() >= 1
        for i in range(calls.count()):
            call = calls.nth(i).get_attribute("data-tool-call")
            assert call is not None
            link = calls.nth(i).locator("a.tool-trace")
            assert link.get_attribute("href") == (
                f"http://traces.test/t/{trace}?span={span_id_of('tool', chat, call):016x}"
            )
        assert watched.errors == []


@contextmanager
def run_beside(daemon: Daemon) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``orchestrator run`` of the delivery team on ``daemon``'s journal, parked on its
    publish approval (its console asks on stdin); the process and its session id."""
    mirror = daemon.directory / "facts.jsonl"
    run = subprocess.Popen(
        [
            sys.executable, "-m", "orchestrator", "run", str(TEAMS / "delivery.toml"),
            "Ship it", "--plain", "--db", str(daemon.db), "--facts", str(mirror),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_MS / 1000
        asked = b"team/approvalRequested"
        while asked not in (mirror.read_bytes() if mirror.exists() else b""):
            assert time.monotonic() < deadline, "the run did not park on its approval"
            time.sleep(0.05)
        yield run, mirror.read_text().split('"session":"ahp-session:/', 1)[1].split('"', 1)[0]
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


def test_a_run_beside_the_daemon_is_live_on_its_page_to_its_end(
    browser: Browser, tmp_path: Path
) -> None:
    """An ``orchestrator run`` on the daemon's journal: its page is live (before: "the
    daemon is unreachable, retrying in 1 s" while the daemon was up), says who runs it and
    offers no decision (the run's console takes them); once the run's console approves,
    the header turns ``completed`` without a reload (before: ``running`` until one)."""
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        run_beside(daemon) as (run, session),
        open_page(browser, daemon, fragment=f"#/sessions/{session}") as watched,
    ):
        page = watched.page
        page.wait_for_selector("#connection:text-is('live')")
        wait_rows(page, "rows.some(r => r[2].startsWith('pending'))")
        assert page.inner_text("#session-status") == "running"
        assert page.inner_text("#session-run-by") == f" · run by orchestrator run, pid {run.pid}"
        assert page.locator("#actions-list button").count() == 0
        assert "Decide in the process" in page.inner_text("#actions-list")
        watched.screenshot("beside-01-live")
        page.evaluate("() => { window.notReloaded = true; }")
        assert run.stdin is not None
        run.stdin.write("y\n")
        run.stdin.flush()
        page.wait_for_selector("#session-status:text-is('completed')")
        assert page.evaluate("() => window.notReloaded") is True
        assert page.locator("#session-run-by").count() == 0
        watched.screenshot("beside-02-ended")
        assert watched.errors == []
        assert run.wait(timeout=60) == 0


def test_a_run_beside_that_is_killed_goes_on_live_in_the_daemon(
    browser: Browser, tmp_path: Path
) -> None:
    """``kill -9`` of the run whose page is open: the daemon takes the session up, and the
    page, without a reload, is live on it again, now with the approval's buttons (the
    daemon runs it: its decisions are taken here)."""
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        run_beside(daemon) as (run, session),
        open_page(browser, daemon, fragment=f"#/sessions/{session}") as watched,
    ):
        page = watched.page
        page.wait_for_selector("#session-run-by")
        page.evaluate("() => { window.notReloaded = true; }")
        run.kill()
        run.wait(timeout=30)
        button = page.locator("#actions [data-action=approve]")
        button.wait_for()
        assert page.inner_text("#connection") == "live"
        assert page.locator("#session-run-by").count() == 0
        button.click()
        wait_rows(page, "rows.some(r => r[0] === 'approval publish' && r[2].startsWith('approv'))")
        assert page.evaluate("() => window.notReloaded") is True
        assert "session taken up: its process stopped" in daemon.log()
        assert watched.errors == []


def test_an_unknown_session_says_so(browser: Browser, tmp_path: Path) -> None:
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon, fragment=f"#/sessions/{uuid.uuid4()}") as watched,
    ):
        watched.page.wait_for_selector("#session-error:has-text('No such session')")


def test_a_session_page_loaded_directly_asks_for_its_envelopes_once_beside_me(
    browser: Browser, tmp_path: Path
) -> None:
    """Loaded at a session's address (signed in), the page asks for the session's
    envelopes at once, beside ``/api/me`` rather than after it, and draws from that one
    answer; an unknown session's address still says so."""
    session = ended_session(tmp_path)
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon, fragment=f"#/sessions/{session}") as watched,
    ):
        page = watched.page
        wait_rows(page, "rows.length === 5")
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url.split("/", 3)[3]))
        page.reload()
        wait_rows(page, "rows.length === 5")
        api = [path for path in asked if path.startswith("api/")]
        envelopes = f"api/sessions/{session}/envelopes"
        assert api.count(envelopes) == 1, api
        assert api.index(envelopes) < api.index("api/me") + 1, "asked beside /api/me"
        page.evaluate("() => { location.hash = '#/sessions/no-such-session'; }")
        page.reload()
        page.wait_for_selector("#session-error:has-text('No such session')")
        assert [e for e in watched.errors if "404" not in e] == []


def test_the_standalone_export_draws_the_session_offline(browser: Browser, tmp_path: Path) -> None:
    """``orchestrator graph --format html``: the same page from one file, with no request
    beyond the file, no login and no controls."""
    with offline_page(browser, standalone(tmp_path, TEAMS / "delivery.toml")) as watched:
        page = watched.page
        wait_rows(page, "rows.length === 5")
        assert page.inner_text("#connection") == "offline copy"
        assert len(graph_edges(page)) == 4
        assert page.locator("#actions button").count() == 0
        assert page.locator("#login-token").count() == 0
        page.click("#nodes-body tr:first-child button")
        assert "Transcript: lead" in page.inner_text("#transcript")
        watched.screenshot("offline-01-export")
        assert watched.errors == []


def test_handoffs_are_drawn_both_ways(browser: Browser, tmp_path: Path) -> None:
    """The support team: triage hands the user to billing, billing hands back."""
    with offline_page(browser, standalone(tmp_path, TEAMS / "handoff.toml")) as watched:
        page = watched.page
        wait_rows(page, "rows.length === 2")
        assert graph_edges(page) == [
            ("handoff", "billing", "triage"),
            ("handoff", "triage", "billing"),
            ("spawn", "triage", "billing"),
        ]
        labels = page.evaluate(
            "() => Orchestrator.currentGraph.cy.edges('.handoff').map(e => e.data('label')).sort()"
        )
        assert labels == ["handoff accepted", "handoff returned"]
        watched.screenshot("handoff-01-graph")
        assert watched.errors == []


def test_queued_delegations_are_dashed_placeholders_until_they_run(
    browser: Browser, tmp_path: Path
) -> None:
    """A parallel budget of 1: the second and third delegations wait as queued placeholders
    (the scrubber shows them), each replaced by its worker's chat once it runs."""
    team = tmp_path / "delivery1.toml"
    team.write_text(
        (TEAMS / "delivery.toml").read_text().replace("parallel_budget = 3", "parallel_budget = 1")
    )
    with offline_page(browser, standalone(tmp_path / "run", team)) as watched:
        page = watched.page
        wait_rows(page, "rows.length === 5")
        queued_at = page.evaluate(
            """() => {
                const data = JSON.parse(document.getElementById('orchestrator-data').textContent);
                return data.envelopes.filter(e => e.type === 'task.changed'
                    && e.payload.status === 'queued').map(e => e.sequence);
            }"""
        )
        assert len(queued_at) == 2
        scrub_to(page, queued_at[1])
        wait_rows(page, "rows.filter(r => r[2] === 'queued').length === 2")
        kinds = page.evaluate(
            """() => Orchestrator.currentGraph.cy.nodes('.queued').map(
                n => [n.style('border-style'), n.data('label').split('\\n').join(' | ')])"""
        )
        assert sorted(kinds) == [
            ["dashed", "researcher | List the known issues r… | [queued]"],
            ["dashed", "researcher | Publish the release not… | [queued]"],
        ], kinds
        assert graph_edges(page).count(("queued", "lead", "researcher")) == 2
        watched.screenshot("queued-01-placeholders")
        page.click("#scrubber-live")
        wait_rows(page, "rows.filter(r => r[2] === 'queued').length === 0")
        assert graph_edges(page).count(("spawn", "lead", "researcher")) == 3
        assert watched.errors == []


def test_the_sessions_list_filters_by_status_and_team(browser: Browser, tmp_path: Path) -> None:
    ended_session(tmp_path, TEAMS / "delivery.toml")
    ended_session(tmp_path, TEAMS / "handoff.toml")
    teams = {"delivery": team_file("delivery"), "handoff": team_file("handoff")}
    with (
        running_daemon(tmp_path, teams) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        rows = "#sessions-body tr"
        page.wait_for_function(f"() => document.querySelectorAll('{rows}').length === 2")
        run = start_run(daemon, "delivery", "Ship it")
        page.wait_for_selector(f"tr[data-session='{run.session}']")
        assert page.locator(rows).count() == 3
        page.select_option("#filter-team", "support")
        assert page.locator(rows).count() == 1
        assert "support" in page.inner_text(rows)
        page.select_option("#filter-team", "")
        page.select_option("#filter-status", "completed")
        assert page.locator(rows).count() == 2
        assert page.locator(f"tr[data-session='{run.session}']").count() == 0
        page.select_option("#filter-team", "delivery")
        assert page.locator(rows).count() == 1
        page.select_option("#filter-status", "")
        page.select_option("#filter-team", "")
        assert page.locator(rows).count() == 3
        watched.screenshot("sessions-01-filters")
        assert watched.errors == []


def test_a_question_is_answered_from_the_page(browser: Browser, tmp_path: Path) -> None:
    with (
        running_daemon(tmp_path, {"asks": ASKS}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        run = start_run(daemon, "asks", "set up")
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        card = page.locator("#actions li.question")
        card.wait_for()
        assert lines(card.inner_text())[:4] == [
            "lead #1 asks:",
            "Task: set up",
            "Which database?",
            "Routed to: user",
        ], card.inner_text()
        wait_rows(page, "rows.some(r => r[0] === 'question' && r[2].startsWith('pending'))")
        watched.screenshot("question-01-asked")
        page.fill("#actions li.question input", "PostgreSQL")
        page.click("#actions li.question [data-action=answer]")
        wait_rows(page, "rows.some(r => r[0] === 'question' && r[2] === 'answered: PostgreSQL')")
        assert page.locator("#actions li.question").count() == 0
        page.click("#nodes-body tr:first-child button")
        page.wait_for_selector("#transcript .turn p.text:has-text('Using PostgreSQL.')")
        watched.screenshot("question-02-answered")
        assert watched.errors == []


def test_a_yes_no_question_is_answered_with_a_button_and_other_pages_follow(
    browser: Browser, tmp_path: Path
) -> None:
    """A yes / no question is two buttons (no text box); a choice of one is a button per
    option. Answered on one page, the card on another page moves to "Decided", saying it was
    decided elsewhere, without a reload; the tab's title counts what waits."""
    with (
        running_daemon(tmp_path, {"confirms": CONFIRMS}) as daemon,
        open_page(browser, daemon) as watched,
        open_page(browser, daemon) as other,
    ):
        page = watched.page
        run = start_run(daemon, "confirms", "release 2.0")
        for each in (page, other.page):
            each.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
            each.locator("#actions li.question").wait_for()
        card = page.locator("#actions li.question")
        assert card.locator("input").count() == 0, "a yes / no question has no text box"
        assert card.locator("[data-action=answer]").all_inner_texts() == ["Yes", "No"]
        page.wait_for_function("() => document.title.startsWith('(1 waiting) ')")
        watched.screenshot("confirm-01-yes-no")
        other.page.click("#actions li.question [data-answer=yes]")
        page.wait_for_selector("#decided-list li:has-text('decided elsewhere')")
        decided = page.inner_text("#decided-list")
        assert "question of lead #1: answered: yes" in decided, decided
        # The next question: a choice of one, a button per option, taken by keyboard.
        page.wait_for_selector("#actions li.question [data-answer=south]")
        assert card.locator("[data-action=answer]").all_inner_texts() == ["north", "south"]
        page.focus("#actions li.question [data-answer=south]")
        page.keyboard.press("Space")
        wait_rows(page, "rows.some(r => r[0] === 'question' && r[2] === 'answered: south')")
        # Several choices: checkboxes, ticked with Space, sent with the button.
        boxes = page.locator("#actions li.question input[type=checkbox]")
        boxes.first.wait_for()
        assert boxes.count() == 3
        boxes.nth(0).focus()
        page.keyboard.press("Space")
        boxes.nth(2).focus()
        page.keyboard.press("Space")
        page.focus("#actions li.question [data-action=answer]")
        page.keyboard.press("Enter")
        wait_rows(page, "rows.some(r => r[0] === 'question' && r[2] === 'answered: mail, web')")
        assert "Nothing is waiting" in page.inner_text("#actions")
        page.click("#nodes-body tr:first-child button")
        page.wait_for_selector("#transcript .turn p.text:has-text('Shipping:')")
        watched.screenshot("confirm-02-answered")
        assert watched.errors == []
        assert other.errors == []


def test_a_refused_answer_leaves_the_question_waiting_and_counted(
    browser: Browser, tmp_path: Path
) -> None:
    """An answer the daemon refuses (not a whole number) leaves the card up, saying why,
    and the panel never says nothing waits; the sessions list and ``/api/sessions`` count
    the question as pending; answered, the table shows the answer, not ``accept``."""
    with (
        running_daemon(tmp_path, {"replicas": REPLICAS}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        page.wait_for_selector("#sessions-empty:has-text('No sessions yet')")
        run = start_run(daemon, "replicas", "scale the web tier")
        # The list follows live: the row's count goes to 1 once the question is asked.
        page.wait_for_selector(f"tr[data-session='{run.session}'] td.attention:has-text('1')")
        summary = page.evaluate("id => Orchestrator.api('/api/sessions/' + id)", run.session)
        assert (summary["pending"], summary["pendingQuestions"]) == (1, 1)
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        card = page.locator("#actions li.question")
        card.wait_for()
        assert lines(card.inner_text())[:3] == [
            "lead #1 asks:",
            "Task: scale the web tier",
            "How many replicas?",
        ], card.inner_text()
        page.fill("#actions li.question input", "a few")
        page.click("#actions li.question [data-action=answer]")
        page.wait_for_selector("#actions li.question .error:has-text('Not taken')")
        assert "answer a number, not 'a few'" in card.inner_text(), card.inner_text()
        assert "Nothing is waiting" not in page.inner_text("#actions")
        wait_rows(page, "rows.some(r => r[0] === 'question' && r[2].startsWith('pending'))")
        watched.screenshot("question-03-refused")
        page.fill("#actions li.question input", "3")
        page.click("#actions li.question [data-action=answer]")
        wait_rows(page, "rows.some(r => r[0] === 'question' && r[2] === 'answered: 3')")
        assert page.locator("#actions li.question").count() == 0
        assert "Nothing is waiting" in page.inner_text("#actions")
        watched.screenshot("question-04-answered")
        assert watched.errors == []


def test_who_asks_and_who_decides_are_named_in_the_export(browser: Browser, tmp_path: Path) -> None:
    """Approvals routed to the coordinator, in ``graph --format html``: the table, the card
    and the graph name agents by name and number (``boss #1``), never by chat URI."""
    with offline_page(browser, standalone(tmp_path, write_team(tmp_path, OPS))) as watched:
        page = watched.page
        wait_rows(page, "rows.length === 4")
        rows = table_rows(page)
        approval = next(row for row in rows if row[0] == "approval deploy")
        assert approval[1] == "asked by analyst #2, routed to boss #1", approval
        assert approval[2] == "approved by boss #1", approval
        page.click("#nodes-body tr[data-node^='approval:'] button")
        details = page.inner_text("#transcript")
        assert "Asked by\nanalyst #2" in details, details
        assert "Decided by\nboss #1" in details, details
        drawn = " ".join(label for _, label in graph_nodes(page))
        shown = page.inner_text("#nodes") + drawn + details
        assert "ahp-chat:" not in shown, shown
        assert watched.errors == []


def test_the_fold_ignores_replays_and_draws_a_resume_edge(browser: Browser) -> None:
    """graph-model.js alone (no daemon): an envelope at or below the last sequence folded is
    ignored (a replay overlapping the live feed), and a finished worker that runs again
    under a new task hangs from a resume edge as well as its spawn edge."""
    page = browser.new_page()
    try:
        page.add_script_tag(path=str(WEB_ASSETS / "graph-model.js"))
        folded = page.evaluate(
            """() => {
                const lead = 'ahp-chat:/lead', worker = 'ahp-chat:/worker';
                const agent = (sequence, type, status, extra) => Object.assign({
                    sequence, type, threadId: worker, parentThreadId: lead, taskId: 'task-2',
                    payload: {agentName: 'worker', role: 'builder', status}}, extra || {});
                const envelopes = [
                    {sequence: 1, type: 'agent.spawned', threadId: lead, taskId: 'task-1',
                     payload: {agentName: 'lead', role: 'coordinator', status: 'running'}},
                    agent(2, 'agent.spawned', 'spawning'),
                    agent(3, 'agent.completed', 'completed'),
                    agent(3, 'agent.changed', 'failed'),
                    agent(4, 'agent.changed', 'running', {taskId: 'task-3'}),
                ];
                const GM = Orchestrator.graphModel;
                const model = GM.foldEnvelopes(envelopes);
                const before = GM.foldEnvelopes(envelopes, 3);
                return {
                    edges: [...model.edges.values()].map(e => [e.kind, e.source, e.target]),
                    status: model.nodes.get(worker).status,
                    before: [...before.edges.values()].map(e => e.kind),
                    beforeStatus: before.nodes.get(worker).status,
                };
            }"""
        )
    finally:
        page.close()
    assert folded["edges"] == [
        ["spawn", "ahp-chat:/lead", "ahp-chat:/worker"],
        ["resume", "ahp-chat:/lead", "ahp-chat:/worker"],
    ]
    assert folded["status"] == "running"
    assert folded["before"] == ["spawn"]
    assert folded["beforeStatus"] == "completed", "the replayed sequence 3 was folded twice"


def test_signing_out_asks_for_the_token_again(browser: Browser, tmp_path: Path) -> None:
    with (
        running_daemon(tmp_path, {"delivery": team_file("delivery")}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        page.wait_for_selector("#sessions-empty:has-text('No sessions yet')")
        page.click("#logout")
        page.wait_for_selector("#login-token")
        assert page.evaluate("() => fetch('/api/sessions').then(r => r.status)") == 401
        page.reload()
        page.wait_for_selector("#login-token")
        assert page.locator("#principal").count() == 0


def test_an_expired_sign_in_asks_for_the_token_again(browser: Browser, tmp_path: Path) -> None:
    """The cookie gone (expired, revoked) under an open page: the next request (the list)
    or socket (the teammates page has only its socket) that is refused brings the sign-in
    form back."""
    teams = {"delivery": team_file("delivery"), "nightly": team_file("nightly")}
    with running_daemon(tmp_path, teams) as daemon:
        for first, ready, then in (
            ("#/", "#sessions-empty", "#/teammates"),
            ("#/teammates", "tr[data-teammate]", "#/"),
        ):
            with open_page(browser, daemon, fragment=first) as watched:
                page = watched.page
                page.wait_for_selector(ready)
                page.context.clear_cookies()
                page.evaluate("fragment => { location.hash = fragment; }", then)
                page.wait_for_selector("#login-error:has-text('sign in again')")


#: A coordinator delegating two rounds, one after the other: two workers, then three.
TWO_ROUNDS = """
[team]
name = "rounds"
coordinator = "lead"
[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]
[[agents.lead.turns]]
steps = [ { delegate = [ { agent = "worker", task = "first a" },
                         { agent = "worker", task = "first b" } ] },
          { delegate = [ { agent = "worker", task = "second c" },
                         { agent = "worker", task = "second d" },
                         { agent = "worker", task = "second e" } ] },
          { say = "done: {outcomes}" } ]
[agents.worker]
role = "worker"
[[agents.worker.turns]]
steps = [ { sleep = 3 }, { say = "did {task}" } ]
"""

#: Each drawn node's id, model position and box, once the page's layout has settled.
POSITIONS = """() => new Promise(done => setTimeout(() => done(
    Orchestrator.currentGraph.cy.nodes().map(n => {
        const b = n.boundingBox({includeLabels: false});
        return [n.id(), n.position('x'), n.position('y'), b.x1, b.y1, b.x2, b.y2];
    })), 600))"""


def overlapping(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    """The pairs of nodes whose boxes overlap."""
    return [
        (a[0], b[0])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[3] < b[5] and b[3] < a[5] and a[4] < b[6] and b[4] < a[6]
    ]


def test_nodes_drawn_stay_in_place_as_workers_join(browser: Browser, tmp_path: Path) -> None:
    """Live, the coordinator's first round is drawn; when its second round's workers join,
    every node drawn before keeps its place (read from the graph before and after), the
    new ones go under the coordinator, and no two nodes overlap."""
    with (
        running_daemon(tmp_path, {"rounds": TWO_ROUNDS}) as daemon,
        open_page(browser, daemon, viewport=(1400, 900)) as watched,
    ):
        page = watched.page
        run = start_run(daemon, "rounds", "go")
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        count = "n => Orchestrator.currentGraph?.cy.nodes().length === n"
        page.wait_for_function(count, arg=3)
        before = page.evaluate(POSITIONS)
        assert len(before) == 3, before
        watched.screenshot("layout-01-first-round")
        page.wait_for_function(count, arg=6, timeout=WAIT_MS * 2)
        after = page.evaluate(POSITIONS)
        watched.screenshot("layout-02-second-round")
        run.finished()
        moved = {row[0]: row[1:3] for row in after}
        for node, x, y, *_ in before:
            assert moved[node] == [x, y], f"{node} moved from {(x, y)} to {moved[node]}"
        new = [row for row in after if row[0] not in {b[0] for b in before}]
        assert len(new) == 3
        lead_y = min(row[2] for row in before)
        assert all(row[2] > lead_y for row in new), "the new workers are under the coordinator"
        assert overlapping(after) == []
        assert watched.errors == []


def fan_out_team(n: int, *, failing: tuple[int, ...] = ()) -> str:
    """A scripted coordinator that delegates ``n`` one-line tasks in one round; the tasks
    numbered in ``failing`` fail."""
    tasks = ", ".join(
        f'{{ agent = "worker", task = "task {i}{" boom" if i in failing else ""}" }}'
        for i in range(n)
    )
    return f"""
[team]
name = "wide"
coordinator = "lead"
parallel_budget = {n}

[agents.lead]
role = "coordinator"
tools = ["delegate"]
delegates_to = ["worker"]

[[agents.lead.turns]]
steps = [{{ delegate = [{tasks}] }}, {{ say = "collected" }}]

[agents.worker]
role = "worker"

[[agents.worker.turns]]
steps = [{{ fail = "it blew up", when_task_contains = "boom" }}, {{ say = "done: {{task}}" }}]
"""


#: How a group node counts its members ("200 TIMES worker").
TIMES = "\N{MULTIPLICATION SIGN}"

#: The smallest label the first view may draw, in CSS pixels (issue 37: 11 px at 1400x900).
READABLE_PX = 11

DRAWN = """() => {
    const cy = Orchestrator.currentGraph.cy;
    const ext = cy.extent();
    return {
        nodes: cy.nodes().map(n => [n.data('kind'), n.data('label').split('\\n')[0],
                                    n.position('x'), n.position('y')]),
        labels: cy.nodes().map(n => n.data('label')),
        smallest: Math.min(...cy.elements().filter(e => e.data('label')).map(
            e => parseFloat(e.style('font-size')) * cy.zoom())),
        curves: [...new Set(cy.edges().map(e => e.style('curve-style')))],
        view: [ext.x1, ext.y1, ext.x2, ext.y2],
    };
}"""


def test_a_big_round_is_one_group_node_that_expands_with_readable_labels(
    browser: Browser, tmp_path: Path
) -> None:
    """200 workers of one delegation round are drawn as one group node ("200 x worker ·
    198 done"), the two that failed on their own; every label is at least 11 px at 1400x900.
    Each click on the group draws 50 more of its workers, in rows of about 25 under the
    coordinator, moving none of the nodes drawn before; all drawn, no two overlap, still at
    a readable size, the view still on the worker chosen before (the rest a pan away).
    Search finds a worker by its task."""
    team = tmp_path / "wide.toml"
    team.write_text(fan_out_team(200, failing=(7, 150)), encoding="utf-8")
    with offline_page(browser, standalone(tmp_path / "run", team), viewport=(1400, 900)) as watched:
        page = watched.page
        wait_rows(page, "rows.length === 201")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
        drawn = page.evaluate(DRAWN)
        kinds = sorted((kind, name) for kind, name, _, _ in drawn["nodes"])
        assert kinds == [
            ("chat", "lead #1"),
            ("chat", "worker #151"),
            ("chat", "worker #8"),
            ("group", f"200 {TIMES} worker"),
        ], kinds
        group = next(label for label in drawn["labels"] if label.startswith(f"200 {TIMES}"))
        assert group.split("\n")[1] == "198 ✔ · 2 failed", group
        assert drawn["smallest"] >= READABLE_PX, drawn["smallest"]
        x1, y1, x2, y2 = drawn["view"]
        assert all(x1 <= x <= x2 and y1 <= y <= y2 for _, _, x, y in drawn["nodes"])
        watched.screenshot("big-01-grouped")
        # The keyboard's way to a folded worker: its row in the table draws it on its own.
        page.locator("#nodes-body").get_by_role("button", name="worker #100", exact=True).focus()
        page.keyboard.press("Enter")
        page.wait_for_function("() => Orchestrator.currentGraph.cy.nodes().length === 5")
        assert (
            page.evaluate(
                "() => Orchestrator.currentGraph.cy.$(':selected').data('label').split('\\n')[0]"
            )
            == "worker #100"
        )
        # Opened by a click on it (cytoscape's tap), as a person does: 50 more each time.
        tap = "() => { Orchestrator.currentGraph.cy.nodes('.group').emit('tap'); }"
        page.evaluate(tap)
        page.wait_for_function("() => Orchestrator.currentGraph.cy.nodes().length === 55")
        labels = page.evaluate(DRAWN)["labels"]
        group = next(label for label in labels if label.startswith(f"200 {TIMES}"))
        assert group.split("\n")[2] == "[147 more: click to show 50]", group
        for drawn_nodes in (105, 155, 201):  # the last click leaves no group
            before = page.evaluate(POSITIONS)
            page.evaluate(tap)
            page.wait_for_function(
                f"() => Orchestrator.currentGraph.cy.nodes().length === {drawn_nodes}"
            )
            # Opening the group moves none of the nodes drawn before.
            after = {row[0]: row[1:3] for row in page.evaluate(POSITIONS)}
            assert all(after.get(n, [x, y]) == [x, y] for n, x, y, *_ in before)
        assert overlapping(page.evaluate(POSITIONS)) == []
        drawn = page.evaluate(DRAWN)
        workers = [(x, y) for kind, name, x, y in drawn["nodes"] if name.startswith("worker")]
        assert len(workers) == 200
        assert len({(x, y) for x, y in workers}) == 200, "no two workers on one spot"
        (lead,) = [(x, y) for _, name, x, y in drawn["nodes"] if name == "lead #1"]
        assert all(y > lead[1] for _, y in workers)
        rows = sorted({y for _, y in workers})
        assert 8 <= len(rows) <= 9  # 200 workers in rows of about 25
        xs = [x for x, _ in workers]
        assert max(xs) - min(xs) <= 26 * 200, "a block under the coordinator, not a line"
        assert drawn["curves"] == ["straight"]
        assert drawn["smallest"] >= READABLE_PX, drawn["smallest"]
        # The view stays where the person put it: on worker #100, chosen from the table.
        (chosen,) = [(x, y) for _, name, x, y in drawn["nodes"] if name == "worker #100"]
        x1, y1, x2, y2 = drawn["view"]
        assert x1 <= chosen[0] <= x2, "the chosen worker in view"
        assert y1 <= chosen[1] <= y2, "the chosen worker in view"
        watched.screenshot("big-02-expanded")
        # Search by task: the one match is outlined and, on Enter, selected.
        page.fill("#graph-search", "task 150 boom")
        page.wait_for_selector("#graph-search-count:has-text('1 found')")
        page.focus("#graph-search")
        page.keyboard.press("Enter")
        page.wait_for_selector("#transcript-title:has-text('worker')")
        assert "task 150 boom" in page.inner_text("#transcript")
        matched = page.evaluate("() => Orchestrator.currentGraph.cy.nodes('.match').length")
        assert matched == 1
        watched.screenshot("big-03-search")
        assert watched.errors == []


def test_an_idle_conversation_shows_idle_and_end_conversation_ends_it(
    browser: Browser, tmp_path: Path
) -> None:
    """Between prompts the header and the coordinator's row say idle; the End conversation
    button ends the session, recorded completed."""
    from orchestrator.journal import JournalReader
    from tests.support.teams import ECHO

    with (
        running_daemon(tmp_path, {"echo": ECHO}) as daemon,
        open_page(browser, daemon) as watched,
    ):
        page = watched.page
        run = start_run(daemon, "echo", "one")
        run.finished()
        page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
        page.wait_for_function(
            "() => document.querySelector('#session-status')?.textContent === 'idle'"
        )
        wait_rows(page, "rows.some(r => r[2] === 'idle (waiting for the next message)')")
        watched.screenshot("conversation-01-idle")
        page.click("#end-session")
        page.wait_for_function(
            "() => document.querySelector('#end-session').hidden"
            " && document.querySelector('#session-status')?.textContent !== 'idle'"
        )
        deadline = time.monotonic() + WAIT_MS / 1000
        uri = "ahp-session:/" + run.session
        while JournalReader(daemon.db).session(uri).status == "running":
            assert time.monotonic() < deadline, "the conversation did not end"
            time.sleep(0.05)
        assert JournalReader(daemon.db).session(uri).status == "completed"
        assert watched.errors == []


def test_a_conversation_at_rest_after_a_restart_is_idle_and_a_message_wakes_it(
    browser: Browser, tmp_path: Path
) -> None:
    """After a restart an idle conversation is not taken up (a restart costs what is busy),
    and reading it takes nothing up: its page says it is at rest, not ended, and keeps the
    composer. A message sent there attaches, which takes the conversation up, and is
    answered as its next turn."""
    from tests.support.teams import ECHO

    with running_daemon(tmp_path, {"echo": ECHO}) as daemon:
        run = start_run(daemon, "echo", "one")
        run.finished()
        daemon.restart()
        uri = "ahp-session:/" + run.session

        def summary() -> tuple[str, bool, bool]:
            headers = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
            url = f"{daemon.url}/api/sessions/{run.session}"
            found = httpx.get(url, headers=headers).json()
            return found["status"], found["live"], found["resting"]

        assert summary() == ("running", False, True)
        with open_page(browser, daemon, fragment=f"#/sessions/{run.session}") as watched:
            page = watched.page
            page.wait_for_selector("#connection:text-is('at rest: a message wakes it')")
            page.wait_for_function(
                "() => document.querySelector('#session-status')?.textContent === 'idle'"
            )
            assert page.is_visible("#composer-text")
            assert "ended" not in (page.text_content("#connection") or "")
            assert summary() == ("running", False, True), "reading it took it up"
            watched.screenshot("conversation-02-at-rest")
            send_message(page, "two")
            page.wait_for_selector("#connection:text-is('live')")
            deadline = time.monotonic() + WAIT_MS / 1000
            while True:
                turns = [
                    f.action.message.text
                    for f in JournalReader(daemon.db).facts(uri)
                    if isinstance(f.action, ChatTurnStartedAction)
                ]
                if turns == ["one", "two"]:
                    break
                assert time.monotonic() < deadline, turns
                time.sleep(0.05)
            page.wait_for_function(
                "() => document.querySelector('#session-status')?.textContent === 'idle'"
            )
            assert summary() == ("running", True, False)
            assert watched.errors == []


def test_a_remote_teammates_states_and_artifacts_are_words_in_its_transcript(
    browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five real A2A agents (a2a-sdk's server, on loopback): one streams an artifact in
    three chunks, one fails, one cancels its own task, one asks which colour and one asks
    for authentication (both answered from the page). Each remote teammate's transcript says
    its task's states and its artifact in words, never JSON."""
    monkeypatch.setenv("REMOTE_TOKEN", "a-remote-token")  # the team file's env:REMOTE_TOKEN
    monkeypatch.setenv("A2A_PAINT_TOKEN", AUTH_SECRET)  # the credential the answer names
    names = ("chunks", "failing", "quitter", "ask", "auth")
    with serve_peers(*names) as peers:
        team = remote({name: peers.url[name] for name in names}, local=False)
        with (
            running_daemon(tmp_path, {"remote": team}) as daemon,
            open_page(browser, daemon) as watched,
        ):
            page = watched.page
            run = start_run(daemon, "remote", "Go")
            page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
            for asked_for, answer in (
                ("Which colour?", "blue"),
                ("needs authentication", "env:A2A_PAINT_TOKEN"),
            ):
                card = page.locator("#actions li.question", has_text=asked_for)
                card.wait_for()
                card.locator("input").fill(answer)
                card.locator("[data-action=answer]").click()
                card.wait_for(state="detached")
            run.finished()
            wait_rows(page, "rows.filter(r => r[2].includes('(remote: ')).length === 5")
            said: list[str] = []  # the lines of the remote tasks and artifacts shown

            def transcript_of(agent: str) -> str:
                row = [r[0] for r in table_rows(page)].index(f"{agent} #1") + 1
                page.click(f"#nodes-body tr:nth-child({row}) button")
                page.wait_for_selector(f"#transcript-title:has-text('Transcript: {agent}')")
                page.wait_for_selector("#transcript .turn p.remote-task")
                notices = page.locator("#transcript p.remote-task, #transcript p.artifact")
                said.extend(notices.all_inner_texts())
                return page.inner_text("#transcript")

            def states_shown() -> list[str]:
                shown: list[str] = page.locator("#transcript p.remote-task").evaluate_all(
                    "ps => ps.map(p => p.dataset.state)"
                )
                return shown

            chunks = transcript_of("chunks")
            for line in (
                "Remote task: chunks (remote) was sent the task",
                "Remote task: chunks (remote) took the task",
                "Remote task: chunks (remote) is working on it",
                "Artifact: Artifact report.md (text/plain): alpha",
                "Artifact: More of artifact report.md (text/plain): beta",
                "Artifact: More of artifact report.md (text/plain): gamma",
                "Remote task: chunks (remote) completed its task: report written",
            ):
                assert line in chunks, (line, chunks)
            watched.screenshot("remote-01-chunks")
            failing = transcript_of("failing")
            assert "Remote task: failing (remote) failed: the disk is full" in failing, failing
            quitter = transcript_of("quitter")
            assert "Remote task: quitter (remote) stopped: its task was canceled" in quitter
            assert states_shown()[-1] == "canceled"
            asked = transcript_of("ask")
            assert "Remote task: ask (remote) needs input: Which colour?" in asked, asked
            assert "Remote task: ask (remote) completed its task: painted it blue" in asked
            assert states_shown() == [
                "sending",
                "submitted",
                "working",
                "input_required",
                "working",
                "completed",
            ]
            signed = transcript_of("auth")
            assert (
                "Remote task: auth (remote) needs authentication: Sign in to the paint shop"
                in signed
            ), signed
            assert "Remote task: auth (remote) completed its task: signed in: painted" in signed
            assert states_shown() == [
                "sending",
                "submitted",
                "working",
                "auth_required",
                "working",
                "completed",
            ]
            # Words, not the raw JSON of the facts (the error line keeps the peer's raw
            # state name, by design: it names what happened).
            for text in (chunks, failing, quitter, asked, signed):
                assert "remoteTaskId" not in text
                assert '{"' not in text
                assert AUTH_SECRET not in text
            assert len(said) == 7 + 4 + 4 + 6 + 6, said
            assert not [t for t in said if "TASK_STATE_" in t or "{" in t]
            watched.screenshot("remote-02-signed")
            assert watched.errors == []


def test_a_remote_teammate_is_cancelled_from_the_page_and_so_is_its_task(
    browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote teammate whose agent works until told otherwise: its node has the cancel
    button a local worker has; cancelling it cancels its task at the agent (tasks/cancel)."""
    monkeypatch.setenv("REMOTE_TOKEN", "a-remote-token")
    with serve_peers("hanging") as peers:
        hanging = peers.executor["hanging"]
        assert isinstance(hanging, HangingAgent)
        team = remote({"hanging": peers.url["hanging"]}, local=False)
        with (
            running_daemon(tmp_path, {"remote": team}) as daemon,
            open_page(browser, daemon) as watched,
        ):
            page = watched.page
            run = start_run(daemon, "remote", "Go")
            page.evaluate("id => { location.hash = '#/sessions/' + id; }", run.session)
            wait_rows(page, "rows.some(r => r[0] === 'hanging #1' && r[2].includes('working'))")
            page.locator("#nodes-body").get_by_role("button", name="hanging #1", exact=True).click()
            cancel = page.locator("#cancel-worker")
            assert cancel.inner_text() == "Cancel hanging #1"
            cancel.click()
            wait_rows(page, "rows.some(r => r[0] === 'hanging #1' && r[2].startsWith('killed'))")
            run.finished()
            deadline = time.monotonic() + WAIT_MS / 1000
            while not hanging.cancelled and time.monotonic() < deadline:
                time.sleep(0.05)
            assert hanging.cancelled == hanging.started, (hanging.cancelled, hanging.started)
            assert watched.errors == []


def test_a_person_drags_a_board_item_to_done_and_the_agents_go_on(
    browser: Browser, tmp_path: Path
) -> None:
    """The board page of the shipped board team: the items in columns by status; the
    operator drags "approve" (hers) to done, which the daemon records as her board fact, and
    the writer then starts on "publish" and finishes it. A move the board refuses is said,
    and the card stays where it was. A viewer sees the board and no move controls."""
    with running_daemon(tmp_path, {"board": team_file("board")}) as daemon:
        run = start_run(daemon, "board", "Ship the release notes")
        fragment = f"#/sessions/{run.session}/board"
        with open_page(browser, daemon, fragment=fragment) as watched:
            page = watched.page
            page.wait_for_selector("#column-done #item-draft")
            page.wait_for_selector("#column-open #item-approve")
            watched.screenshot("board-01-columns")
            # A move the board refuses: publish depends on approve.
            page.select_option("#move-publish", "done")
            page.wait_for_selector("#board-status:has-text('depends on')")
            assert page.locator("#column-open #item-publish").count() == 1
            page.drag_and_drop("#item-approve", "#column-done")
            page.wait_for_selector("#column-done #item-approve")
            # The writer is started on publish and finishes it.
            page.wait_for_selector("#column-done #item-publish")
            watched.screenshot("board-02-approved-and-published")
            # The one error: Chromium logs the refused move's answer (409), as it should.
            assert [e for e in watched.errors if "409" not in e] == []
        with open_page(browser, daemon, token=VIEWER_TOKEN, fragment=fragment) as watched:
            page = watched.page
            page.wait_for_selector("#column-done #item-approve")
            assert page.locator("#board-columns select").count() == 0
            assert page.get_attribute("#item-approve", "draggable") is None
            assert watched.errors == []
    state = open_reader(daemon.db).open(f"ahp-session:/{run.session}")
    assert state.run is not None
    approve = state.run.board.items["approve"]
    assert [(e.event, e.by, e.by_kind) for e in approve.history][-1] == (
        "done",
        "olivia",
        "person",
    )


def test_a_worker_s_review_lane_shows_each_verdict_with_its_evidence(
    browser: Browser, tmp_path: Path
) -> None:
    """The review team, ended: opening the writer shows its review lane above its turns, as a
    person reads it: round 1 asked for a fix (the fix, a quote and a link as evidence), round
    2 passed; the graph draws the reviewer's edge to the writer with the last verdict."""
    session = ended_session(tmp_path, TEAMS / "review.toml")
    with (
        running_daemon(tmp_path, {"review": team_file("review")}) as daemon,
        open_page(browser, daemon, fragment=f"#/sessions/{session}") as watched,
    ):
        page = watched.page
        wait_rows(page, "rows.length === 3")
        writer = page.locator("#nodes-body tr", has_text="writer")
        writer.locator("button").first.click()
        page.wait_for_selector("#transcript .review-lane .review")
        lane = page.locator("#transcript .review-lane")
        rounds = lane.locator(".review-verdict").all_inner_texts()
        assert rounds == ["Round 1: changes requested by reviewer", "Round 2: passed by reviewer"]
        first = lane.locator(".review").nth(0)
        assert first.locator(".review-fixes li").all_inner_texts() == [
            "Name the breaking change: review.toml became structured.toml."
        ]
        evidence = first.locator(".review-evidence li").all_inner_texts()
        assert evidence[0].startswith("quote: ")
        assert "Version 2.0 is faster" in evidence[0]
        link = first.locator(".review-evidence a")
        assert link.inner_text() == "the changelog"
        assert link.get_attribute("href") == "https://example.invalid/changelog"
        assert "Complete: the breaking change is named." in lane.inner_text()
        # The lane comes before the turns: the verdict first, then the work.
        assert page.evaluate(
            "() => document.querySelector('#transcript .review-lane')"
            ".compareDocumentPosition(document.querySelector('#transcript .turn')) === 4"
        )
        labels = page.evaluate(
            "() => Orchestrator.currentGraph.cy.edges('.review').map(e => e.data('label'))"
        )
        assert labels == ["review 2: passed"]
        watched.screenshot("review-01-lane")
        assert watched.errors == []


#: A lead that answers each prompt in its own words, so a fork's next turn differs.
TWO_ANSWERS = """
[team]
name = "answers"
coordinator = "lead"
[agents.lead]
role = "coordinator"
[[agents.lead.turns]]
steps = [ { say = "first answer" } ]
[[agents.lead.turns]]
steps = [ { say = "second answer" } ]
[[agents.lead.turns]]
steps = [ { say = "third answer" } ]
"""


def test_fork_from_a_turn_then_compare_the_fork_with_its_source(
    browser: Browser, tmp_path: Path
) -> None:
    """An operator reads the coordinator's transcript, presses "Fork from here" on its first
    turn and lands on the new session, which names its source; a message there is the
    fork's second turn; "compare with its source" shows the two side by side, where they
    part and what the coordinator did differently. A viewer gets no fork button."""
    with (
        running_daemon(tmp_path, {"answers": TWO_ANSWERS}) as daemon,
        open_page(browser, daemon, bypass_csp=True) as watched,
    ):
        page = watched.page
        source = start_from_the_page(page, "answers", "hello")
        page.wait_for_selector("#result-text:has-text('first answer')")
        send_message(page, "and more")
        page.wait_for_selector("#result-text:has-text('second answer')")
        page.click("#nodes-body tr:first-child button")
        page.wait_for_selector("#transcript .turn >> nth=1")
        first_turn = page.get_attribute("#transcript .turn >> nth=0", "data-turn")
        watched.screenshot("fork-01-transcript")
        assert axe_violations(page) == []
        fork_button = page.locator("#transcript .turn >> nth=0").locator("button.fork-here")
        fork_button.focus()
        page.keyboard.press("Enter")
        page.wait_for_function(
            "source => location.hash.startsWith('#/sessions/')"
            " && decodeURIComponent(location.hash.split('/')[2]) !== source",
            arg=source,
        )
        fork = str(page.evaluate("() => decodeURIComponent(location.hash.split('/')[2])"))
        page.wait_for_selector("#session-forked-from")
        said = page.inner_text("#session-forked-from")
        assert f"forked from {source[:8]} at turn {first_turn}" in said
        send_message(page, "in French")
        page.wait_for_selector("#result-text:has-text('second answer')")
        watched.screenshot("fork-02-the-fork")
        page.click("#compare-with-source")
        page.wait_for_selector("#diff-parted")
        page.wait_for_selector("table.diff-chat")
        assert page.inner_text("#diff-parted").startswith("They part at A's fact")
        rows = page.eval_on_selector_all(
            "table.diff-chat tbody tr",
            "trs => trs.map(tr => [...tr.children].map(c => c.innerText.trim()))",
        )
        assert ["turn 2: asked", "'and more'", "'in French'"] in rows
        heads = page.inner_text("#diff-sessions")
        assert source[:8] in heads
        assert fork[:8] in heads
        watched.screenshot("fork-03-compared")
        assert axe_violations(page) == []
        reader = JournalReader(daemon.db)
        lineage = reader.session(f"ahp-session:/{fork}")
        assert (lineage.forked_from, lineage.forked_turn) == (
            f"ahp-session:/{source}",
            first_turn,
        )
        assert watched.errors == []
        with open_page(
            browser, daemon, token=VIEWER_TOKEN, fragment=f"#/sessions/{source}"
        ) as viewer:
            viewer.page.click("#nodes-body tr:first-child button")
            viewer.page.wait_for_selector("#transcript .turn")
            assert viewer.page.locator("button.fork-here").count() == 0


VIRTUAL_ROWS = """() => {
    const wrap = document.querySelector('.table-wrap');
    const rows = [...document.querySelectorAll('#nodes-body tr')];
    const spacers = [...document.querySelectorAll('#nodes tbody.spacer td')];
    return {
        count: Number(document.querySelector('#nodes').getAttribute('aria-rowcount')),
        indexes: rows.map(tr => Number(tr.getAttribute('aria-rowindex'))),
        names: rows.map(tr => tr.querySelector('button').innerText.trim()),
        heights: [...new Set(rows.map(tr => tr.getBoundingClientRect().height))],
        spaced: spacers.map(td => td.getBoundingClientRect().height),
        scrolled: wrap.scrollTop,
        focused: document.activeElement.matches('#nodes-body button')
            ? document.activeElement.innerText : '',
    };
}"""


def agent_id(name: str) -> str:
    """ "worker #3" -> "worker@wide#3", as the transcript names a chat of the wide team."""
    return name.replace(" #", "@wide#")


def focused(page: Page, name: str) -> None:
    """Wait until the node table's button of ``name`` has the keyboard's focus."""
    try:
        page.wait_for_function(
            """(name) => document.activeElement.matches('#nodes-body button')
                && document.activeElement.innerText.trim() === name""",
            arg=name,
        )
    except PlaywrightError as error:
        state = page.evaluate(
            """() => [document.activeElement.tagName, document.activeElement.innerText,
                      document.querySelector('.table-wrap').scrollTop, scrollY,
                      [...document.querySelectorAll('#nodes-body tr')].map(
                          tr => tr.getAttribute('aria-rowindex')).join(' ')]"""
        )
        raise AssertionError(f"{name} not focused: {state}") from error


def test_a_big_node_table_draws_only_the_rows_in_view(browser: Browser, tmp_path: Path) -> None:
    """A 301-row node table draws the rows in view and a few more, each 32 px, the spacers
    standing for the rest (the table keeps its full height); scrolled to its end it draws
    the last rows, in order, and a click on the last selects it; the keyboard goes from row
    to row past the drawn ones (End, Home, arrows)."""
    team = tmp_path / "wide.toml"
    team.write_text(fan_out_team(300), encoding="utf-8")
    with offline_page(browser, standalone(tmp_path / "run", team), viewport=(1400, 900)) as watched:
        page = watched.page
        page.wait_for_function(
            "() => document.querySelector('#nodes').classList.contains('virtual')"
        )
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
        first = page.evaluate(VIRTUAL_ROWS)
        assert first["count"] == 302  # 301 rows and the header
        assert first["names"][0] == "lead #1"
        assert 10 < len(first["names"]) < 60, len(first["names"])
        assert first["indexes"] == list(range(2, 2 + len(first["indexes"])))
        assert first["heights"] == [32]
        assert round(sum(first["spaced"])) == (301 - len(first["names"])) * 32
        watched.screenshot("virtual-01-top")
        # Scrolled to the end: the last rows drawn, the first ones gone.
        page.evaluate(
            "() => { const w = document.querySelector('.table-wrap');"
            " w.scrollTop = w.scrollHeight; }"
        )
        page.wait_for_function(
            "() => document.querySelector('#nodes-body tr:last-child')"
            ".getAttribute('aria-rowindex') === '302'"
        )
        last = page.evaluate(VIRTUAL_ROWS)
        assert "lead #1" not in last["names"]
        assert last["indexes"] == list(range(303 - len(last["indexes"]), 303))
        workers = set(first["names"][1:]) | set(last["names"])
        assert len(workers) == len(first["names"]) - 1 + len(last["names"]), "no row twice"
        assert all(name.startswith("worker #") for name in workers)
        page.click("#nodes-body tr:last-child button")
        page.wait_for_selector(f"#transcript:has-text('{agent_id(last['names'][-1])}')")
        assert page.get_attribute("#nodes-body tr:last-child", "class") == "kind-chat selected"
        watched.screenshot("virtual-02-end")
        # The keyboard: Home draws the first row again and focuses it; arrows and End go on.
        page.focus("#nodes-body tr:last-child button")
        page.keyboard.press("Home")
        focused(page, "lead #1")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        focused(page, first["names"][2])
        page.keyboard.press("End")
        focused(page, last["names"][-1])
        at_end = page.evaluate(VIRTUAL_ROWS)
        assert at_end["indexes"][-1] == 302
        page.keyboard.press("ArrowUp")
        focused(page, last["names"][-2])
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#transcript:has-text('{agent_id(last['names'][-2])}')")
        assert watched.errors == []
