"""Cells run in a headless IPython kernel (a process of its own, started by the test)."""

from __future__ import annotations

from typing import Any

import pytest


def run_cell(client: Any, code: str) -> str:
    """What the cell ``code`` printed, then the text of its result, if it has one; its
    error's traceback fails the test."""
    printed: list[str] = []

    def output(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        elif message["msg_type"] == "execute_result":
            printed.append(message["content"]["data"].get("text/plain", "") + "\n")
        elif message["msg_type"] == "error":
            pytest.fail("\n".join(message["content"]["traceback"]))

    reply = client.execute_interactive(code, timeout=60, output_hook=output)
    assert reply["content"]["status"] == "ok"
    return "".join(printed)
