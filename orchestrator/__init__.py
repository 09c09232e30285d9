"""Team orchestrator: runs coordinator-worker teams of AI agents as trio tasks.

The package's own facade. The implementation lives in layer packages, each with a facade of
its own (``base``, ``ahp``, ``spec``, ``core``, ``runtime``, ``protocols``, ``journal``,
``server``, ``cli``: see the README's Architecture); what ``__all__`` lists here is
importable from ``orchestrator`` itself.
"""

from .base import (
    FactLogError,
    IllegalTransitionError,
    LocalProtocolError,
    OrchestratorError,
    PeerProtocolError,
    ProtocolError,
    RunError,
    TeamFileError,
)

__all__ = [
    "FactLogError",
    "IllegalTransitionError",
    "LocalProtocolError",
    "OrchestratorError",
    "PeerProtocolError",
    "ProtocolError",
    "RunError",
    "TeamFileError",
]
