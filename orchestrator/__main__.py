"""``python -m orchestrator``: the same as the ``orchestrator`` command."""

import sys

from .cli._main import main

sys.exit(main())
