"""The web view on a big session: how long until its graph is drawn, and whether it stays
interactive (issue 20's target: a 1,000-worker session renders in under 2 s).

For each N: ``orchestrator run`` of a scripted team whose coordinator delegates N one-line
tasks (``bench/cli_fanout.py``'s team) records a session in a fresh journal; ``orchestrator
serve`` serves that journal on a loopback port; a real Chromium (Debian's, driven by
Playwright) opens the session's page and the script measures, median of ``--repeat`` fresh
page loads:

- *envelopes*: the ``GET .../envelopes`` answer, as the page's own fetch timed it
  (the server's projection, cold on the first load of a daemon, kept after; gzip on the wire);
- *drawn*: from navigation to every node listed in the accessible table and the graph laid
  out and painted (two animation frames after the last layout);
- *click*: from a click on the last worker's row to its transcript shown (interactive?);
- *frame*: the longest task the main thread ran while loading (a long task blocks input);
- *label px*: the smallest label of the first view, in CSS pixels at 1400x900 (issue 37's
  target: 11 or more), and *nodes*: how many nodes that view draws (a round's quiet
  siblings are one group node);
- *expand*: from a click on the round's group node to its next 50 workers laid out and
  painted.

``--before`` prints the figures measured on the page before issue 37 (grouping, readable
labels) beside them; they were taken with this script on the commit named in BEFORE, with
``ORCHESTRATOR_COMMAND`` set to a command that runs that checkout's ``orchestrator``.

    .venv/bin/python bench/web_render.py              # N = 100 and 1000, median of 3
    .venv/bin/python bench/web_render.py 1000 3000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from cli_fanout import team_toml  # a sibling script, not a package

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
#: How to run ``orchestrator`` (split on spaces): another checkout's, to measure it.
ORCHESTRATOR = os.environ.get("ORCHESTRATOR_COMMAND", f"{sys.executable} -m orchestrator").split()
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
#: Watches the page for long tasks from its first script on.
LONG_TASKS = """
window.__longest = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    window.__longest = Math.max(window.__longest, entry.duration);
  }
}).observe({ type: "longtask", buffered: true });
"""


def record_session(n: int, directory: Path) -> tuple[Path, str]:
    """A journal holding one finished session of N workers, and the session's id."""
    team = directory / f"bench-{n}.toml"
    team.write_text(team_toml(n))
    db = directory / f"journal-{n}.db"
    subprocess.run(
        [
            *ORCHESTRATOR,
            *("run", "--approve", "deny", "--json"),
            *("--db", str(db), str(team), "go"),
        ],
        check=True,
        capture_output=True,
    )
    listed = subprocess.run(
        [*ORCHESTRATOR, "sessions", "--db", str(db), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return db, str(json.loads(listed.stdout)[-1]["session"]).removeprefix("ahp-session:/")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(db: Path, teams: Path, port: int) -> subprocess.Popen[bytes]:
    daemon = subprocess.Popen(
        [
            *ORCHESTRATOR,
            *("serve", "--db", str(db)),
            *("--teams", str(teams), "--port", str(port), "--log-level", "WARNING"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return daemon
        except OSError:
            time.sleep(0.1)
    daemon.kill()
    raise SystemExit("the daemon did not start within 30 s")


#: The 1,000-worker figures before issue 37 (fc576e2, this machine shared with other work,
#: 2026-12-07, 1400x900, median of 2 warm loads): N -> (drawn cold s, drawn warm s, longest
#: task s, smallest label px, nodes drawn).
BEFORE: dict[int, tuple[float, float, float, float, int]] = {1000: (5.69, 2.57, 0.77, 1.2, 1001)}

#: The first view: how small its smallest label is, how many nodes it draws.
FIRST_VIEW = """() => {
  const cy = Orchestrator.currentGraph.cy;
  const sizes = cy.elements().filter(e => e.data('label')).map(
      e => parseFloat(e.style('font-size')) * cy.zoom());
  return {px: Math.min(...sizes), nodes: cy.nodes().length};
}"""


def load_once(browser: Any, url: str, n: int) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.add_init_script(LONG_TASKS)
    started = time.perf_counter()
    page.goto(url)
    # Functions, not expression strings: Playwright evaluates a string with eval(), which
    # the page's Content-Security-Policy refuses.
    # Every node listed: the table's rows, or (drawing only the rows in view) its row count.
    page.wait_for_function(
        f"""() => document.querySelectorAll('#nodes-body tr').length >= {n + 1}
            || Number(document.querySelector('#nodes')?.getAttribute('aria-rowcount'))
               >= {n + 2}""",
        timeout=120_000,
    )
    # Laid out and painted: two frames after the last change.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    drawn = time.perf_counter() - started
    first = page.evaluate(FIRST_VIEW)
    fetched = page.evaluate(
        "() => performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('/envelopes')).map(e => e.duration)[0] || 0"
    )
    expand = float("nan")
    if page.evaluate("() => Orchestrator.currentGraph.cy.nodes('.group').length") > 0:
        opened = time.perf_counter()
        page.evaluate("() => { Orchestrator.currentGraph.cy.nodes('.group').emit('tap'); }")
        page.wait_for_function(
            f"() => Orchestrator.currentGraph.cy.nodes().length > {first['nodes']}",
            timeout=120_000,
        )
        page.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        expand = time.perf_counter() - opened
    # The last row: the table scrolled to its end first (a table drawing only the rows in
    # view draws it then), as a person scrolls before clicking.
    page.evaluate(
        "() => { const w = document.querySelector('.table-wrap'); w.scrollTop = w.scrollHeight; }"
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    clicked = time.perf_counter()
    page.locator("#nodes-body tr:last-child").click()
    page.wait_for_selector("#transcript .turn, #transcript [data-turn]", timeout=30_000)
    click = time.perf_counter() - clicked
    longest = page.evaluate("() => window.__longest")
    context.close()
    return {
        "envelopes": fetched / 1000,
        "drawn": drawn,
        "click": click,
        "frame": longest / 1000,
        "px": first["px"],
        "nodes": first["nodes"],
        "expand": expand,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="print BEFORE beside")
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print(
        f"web view, Chromium {CHROMIUM}, 1400x900; the first page load of a fresh daemon"
        f" (cold), then the median of {options.repeat} more (warm: envelopes kept)"
    )
    print(
        f"{'N':>6} {'envelopes cold s':>17} {'drawn cold s':>13} {'envelopes warm s':>17}"
        f" {'drawn warm s':>13} {'click s':>8} {'longest task s':>15} {'label px':>9}"
        f" {'nodes':>6} {'expand s':>9}"
    )
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for n in options.sizes:
            directory = Path(tmp) / str(n)
            directory.mkdir()
            db, session = record_session(n, directory)
            port = free_port()
            daemon = serve(db, directory, port)
            try:
                url = f"http://127.0.0.1:{port}/#/sessions/{session}"
                cold = load_once(browser, url, n)
                loads = [load_once(browser, url, n) for _ in range(options.repeat)]
            finally:
                daemon.terminate()
                daemon.wait(timeout=15)
            median = {k: statistics.median(load[k] for load in loads) for k in loads[0]}
            print(
                f"{n:>6} {cold['envelopes']:>17.2f} {cold['drawn']:>13.2f}"
                f" {median['envelopes']:>17.2f} {median['drawn']:>13.2f}"
                f" {median['click']:>8.2f} {median['frame']:>15.2f} {median['px']:>9.1f}"
                f" {median['nodes']:>6.0f} {median['expand']:>9.2f}"
            )
            before = BEFORE.get(n)
            if options.before and before is not None:
                cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in before]
                print(
                    f"{'before':>6} {'':>17} {cells[0]:>13} {'':>17} {cells[1]:>13} {'':>8}"
                    f" {cells[2]:>15} {cells[3]:>9} {cells[4]:>6} {'':>9}"
                )
        browser.close()


if __name__ == "__main__":
    main()
