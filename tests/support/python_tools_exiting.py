"""A tool module whose import ends the process it is imported into (a script's habit)."""

import sys

sys.exit(3)
