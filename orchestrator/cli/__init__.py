"""The command line (``orchestrator ...``), the live console, and the teammates client."""

from typing import TYPE_CHECKING

from orchestrator.base import lazy_facade

if TYPE_CHECKING:
    from ._approval_mode import ApprovalMode
    from ._console import TeamConsole, asker_text, describe_fact, render_tree
    from ._main import main

__all__ = [
    "ApprovalMode",
    "TeamConsole",
    "asker_text",
    "describe_fact",
    "main",
    "render_tree",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "._approval_mode": ("ApprovalMode",),
            "._console": ("TeamConsole", "asker_text", "describe_fact", "render_tree"),
            "._main": ("main",),
        },
    )
