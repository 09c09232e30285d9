"""The command line (``orchestrator ...``), the live console, and the teammates client."""

from ._console import ApprovalMode, TeamConsole, describe_fact, render_tree
from ._main import main

__all__ = [
    "ApprovalMode",
    "TeamConsole",
    "describe_fact",
    "main",
    "render_tree",
]
