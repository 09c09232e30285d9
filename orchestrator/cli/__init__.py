"""The command line (``orchestrator ...``), the live console, and the teammates client."""

# Below: written by scripts/facades from the modules' __all__. Run it; do not edit.

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._approval_mode import *  # noqa: F403
    from ._console import *  # noqa: F403
    from ._main import *  # noqa: F403
else:
    from orchestrator.base import lazy_facade

    __all__, __getattr__, __dir__ = lazy_facade(
        __name__,
        {
            "ApprovalMode": "._approval_mode",
            "TeamConsole": "._console",
            "asker_text": "._console",
            "describe_fact": "._console",
            "main": "._main",
            "render_tree": "._console",
        },
    )
