"""The command line (``orchestrator ...``), the live console, and the teammates client."""

from ._console import ApprovalMode, TeamConsole, describe_fact, render_tree
from ._main import default_db, main
from ._teammates_client import TOKEN_ENV, print_answer, request, teammates_url

__all__ = [
    "TOKEN_ENV",
    "ApprovalMode",
    "TeamConsole",
    "default_db",
    "describe_fact",
    "main",
    "print_answer",
    "render_tree",
    "request",
    "teammates_url",
]
