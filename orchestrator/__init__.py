"""Team orchestrator: runs coordinator-worker teams of AI agents as trio tasks.

The public facade. Implementation lives in private modules (``_name.py``); what
users may import is re-exported here and listed in ``__all__``.
"""

from .base._errors import FactLogError as FactLogError
from .base._errors import IllegalTransitionError as IllegalTransitionError
from .base._errors import LocalProtocolError as LocalProtocolError
from .base._errors import OrchestratorError as OrchestratorError
from .base._errors import PeerProtocolError as PeerProtocolError
from .base._errors import ProtocolError as ProtocolError
from .base._errors import RunError as RunError
from .base._errors import TeamFileError as TeamFileError

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
