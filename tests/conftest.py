"""Shared test configuration: the PostgreSQL fixtures, hypothesis's profile, the state directory."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# Property tests check what a function does, not how fast a loaded machine draws its
# inputs: hypothesis's wall-clock checks (a 200 ms deadline per example, "input generation
# is slow") fail at random when two xdist workers share two busy cores. The examples, their
# number and the seed's determinism are unchanged.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The quick loop (--hypothesis-profile=quick, with -m "not daemon"): ten examples a property
# where a test does not set its own number; the suite runs hypothesis's hundred.
settings.register_profile("quick", parent=settings.get_profile("suite"), max_examples=10)
settings.load_profile("suite")

#: The throwaway PostgreSQL server and the journal fixtures over both databases; the daemon
#: marker, set by the fixtures a test takes, and its guard; the runtime harness's check; the
#: official AG-UI client's packages (run_mjs).
pytest_plugins = [
    "tests.support.postgres",
    "tests.support.daemon_marker",
    "tests.support.runtime",
    "tests.support.agui",
]


def pytest_configure(config: pytest.Config) -> None:
    """Runs without --db (the CLI's subprocesses included) write a journal in a temporary
    state directory, never in the home directory of whoever runs the tests."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="orchestrator-tests-")
