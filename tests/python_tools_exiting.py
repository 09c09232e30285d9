"""A module of Python tools that calls sys.exit() as it is imported (a tool's bug)."""

import sys

sys.exit(3)
