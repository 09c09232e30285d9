"""Answering at a terminal while the live tree draws: the line editing, and the whole of it
through a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.cli._line_editor import LineBuffer, Typed
from tests.support.paths import PROJECT_ROOT

DELIVERY = str(PROJECT_ROOT / "teams" / "delivery.toml")


class TestLineBuffer:
    def test_keys_make_a_line_that_enter_ends(self) -> None:
        line = LineBuffer()
        assert line.feed("ye") is Typed.EDITING
        assert line.feed("s\x7f\x7fes") is Typed.EDITING  # two backspaces, then "es"
        assert line.text == "yes"
        assert line.feed("\r") is Typed.DONE
        assert line.text == "yes"

    def test_what_follows_enter_is_not_taken(self) -> None:
        line = LineBuffer()
        assert line.feed("y\rn") is Typed.DONE
        assert line.text == "y"

    def test_ctrl_d_ends_input_only_on_an_empty_line(self) -> None:
        assert LineBuffer().feed("\x04") is Typed.ENDED
        line = LineBuffer()
        assert line.feed("n\x04") is Typed.EDITING
        assert line.text == "n"

    def test_control_keys_are_not_typed(self) -> None:
        line = LineBuffer()
        line.feed("\x1b[A\tok")  # an arrow key, a tab
        assert line.text == "[Aok"

    @given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))))
    def test_printable_text_then_enter_is_the_answer(self, text: str) -> None:
        line = LineBuffer()
        printable = "".join(ch for ch in text if ch.isprintable())
        assert line.feed(text + "\n") is Typed.DONE
        assert line.text == printable


_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def read_until(master: int, wanted: bytes, seen: bytearray, timeout: float = 90) -> bool:
    """Read the terminal's output into ``seen`` until ``wanted`` shows (False at its end)."""
    deadline = time.monotonic() + timeout
    while wanted not in _ANSI.sub(b"", bytes(seen)):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([master], [], [], left)
        if not ready:
            return False
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            return False
        if not chunk:
            return False
        seen += chunk
    return True


@pytest.mark.daemon
def test_an_approval_is_answered_under_the_live_tree(tmp_path: Path) -> None:
    """On a terminal: the question shows under the tree naming the worker, the keys typed
    show there too (not echoed over the tree), and the question and decision stay."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"}
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            DELIVERY,
            "Ship it",
            "--db",
            str(tmp_path / "j.db"),
            "--log-format",
            "console",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=PROJECT_ROOT,
        env=env,
    ) as child:
        os.close(slave)
        seen = bytearray()
        try:
            assert read_until(master, b"Approve? [y/N]", seen), seen.decode(errors="replace")
            os.write(master, b"y")
            assert read_until(master, "Approve? [y/N] y▌".encode(), seen), "the key shows"
            os.write(master, b"\r")
            read_until(master, b"the run completed", seen)
            read_until(master, b"\x00", seen, timeout=30)  # whatever is left, to the end
            status = child.wait(timeout=60)
        finally:
            os.close(master)
    text = _ANSI.sub(b"", bytes(seen)).decode(errors="replace")
    assert status == 0, text
    flat = " ".join(text.split())
    assert re.search(
        r"\? researcher #3 \(task: Publish the release notes to the release page\) "
        r"wants to run publish\(target=release page\) → approved by you",
        flat,
    ), flat
    assert "the run completed (session ahp-session:/" in flat
