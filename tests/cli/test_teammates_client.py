"""The client side of ``orchestrator teammates`` (``cli/_teammates_client``): the daemon's
address, the token, and what is printed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

# Its tests start the daemon, servers or processes (tests/support/daemon_marker.py).
pytestmark = pytest.mark.daemon


async def test_the_cli_says_when_no_daemon_answers(tmp_path: Path) -> None:
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "teammates", "list", "--url", "http://127.0.0.1:9"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 3  # unavailable, not bad input
    assert b"no daemon answers at ws://127.0.0.1:9/teammates: all attempts" in done.stderr


@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:99999", "ftp://127.0.0.1:8765"])
async def test_an_address_that_is_not_one_is_a_usage_error(url: str) -> None:
    """``--url notaurl`` is bad input (exit 2, what was expected), not a daemon that is down
    (exit 3)."""
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "teammates", "list", "--url", url],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 2
    assert b"--url: expected the daemon's address, like http://127.0.0.1:8765" in (done.stderr)
    assert f"got {url!r}".encode() in done.stderr
