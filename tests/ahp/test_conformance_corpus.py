"""The conformance suite runs whatever fixture set ``$AHP_FIXTURES`` names.

A fixture set of the upstream shape with names the suite has never seen (a newer upstream
release) is run in a pytest of its own: each fixture of a modelled type runs and passes, one of
an out-of-scope type is skipped with its reason, and one of a type nobody modelled fails with a
message that names the fixture and says what to do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT_ROOT, PROTOCOLS

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon

UPSTREAM = PROTOCOLS / "ahp" / "test-cases"


def write(path: Path, fixture: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fixture), encoding="utf-8")


def test_a_fixture_set_of_unseen_names_runs_fixture_by_fixture(tmp_path: Path) -> None:
    corpus = tmp_path / "test-cases"
    title = json.loads(
        (UPSTREAM / "round-trips" / "001-action-envelope-session-title-changed.json").read_text()
    )
    write(corpus / "round-trips" / "501-renamed-envelope.json", title)
    write(
        corpus / "round-trips" / "502-terminal-thing.json",
        {"type": "TerminalFutureThing", "input": {}, "acceptableOutputs": [{}]},
    )
    write(
        corpus / "round-trips" / "503-wormhole.json",
        {"type": "WormholeState", "input": {}, "acceptableOutputs": [{}]},
    )
    write(
        corpus / "reducers" / "601-a-chat-fixture.json",
        json.loads(
            (
                UPSTREAM / "reducers" / "013-session-responsepart-adds-to-responseparts.json"
            ).read_text()
        ),
    )
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"),
            "tests/ahp/test_roundtrip_fixtures.py::test_round_trip_reencodes_canonically",
            "tests/ahp/test_reducer_fixtures.py::test_fold_reaches_expected",
        ],
        cwd=PROJECT_ROOT,
        env={**os.environ, "AHP_FIXTURES": str(corpus)},
        capture_output=True,
        text=True,
        check=False,
    )
    out = result.stdout
    round_trip = "tests/ahp/test_roundtrip_fixtures.py::test_round_trip_reencodes_canonically"
    fold = "tests/ahp/test_reducer_fixtures.py::test_fold_reaches_expected"
    assert result.returncode == 1, out
    assert f"PASSED {round_trip}[501-renamed-envelope]" in out
    assert f"PASSED {fold}[601-a-chat-fixture]" in out
    assert f"SKIPPED [1] {round_trip.split('::')[0]}" in out
    assert "TerminalFutureThing: the terminal channel: the daemon runs no terminals" in out
    assert f"FAILED {round_trip}[503-wormhole]" in out
    assert "503-wormhole.json: type 'WormholeState' is neither modelled" in out
    assert "1 failed, 2 passed, 1 skipped" in out
