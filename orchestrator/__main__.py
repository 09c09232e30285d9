"""``python -m orchestrator``: the same as the ``orchestrator`` command."""

import sys

from .cli import main

sys.exit(main())
