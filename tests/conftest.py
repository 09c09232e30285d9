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
# The quick loop (-m "not daemon", or --hypothesis-profile=quick): ten examples a property
# where a test does not set its own number, and a tenth of the number it sets
# (tests/support/examples.py); the suite runs hypothesis's hundred and every number as set.
settings.register_profile("quick", parent=settings.get_profile("suite"), max_examples=10)
settings.load_profile("suite")

#: The marker expression of the quick loop, which loads the quick profile by itself.
QUICK_LOOP = "not daemon"

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
    state directory, never in the home directory of whoever runs the tests. The quick loop
    (``-m "not daemon"``) runs each property on a tenth of its examples, unless a profile is
    named on the command line."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="orchestrator-tests-")
    if config.getoption("markexpr") == QUICK_LOOP and not config.getoption("hypothesis_profile"):
        settings.load_profile("quick")


def pytest_report_header(config: pytest.Config) -> str | None:
    if settings().max_examples < settings.get_profile("suite").max_examples:
        return (
            f"the quick loop: each property tries {settings().max_examples} examples in "
            "100 of the suite's (--hypothesis-profile=suite for all of them)"
        )
    return None
