"""How many examples a property test runs: the number it names, in the whole suite; a tenth
of it in the quick loop.

``./scripts/test -m "not daemon"`` loads hypothesis's ``quick`` profile (tests/conftest.py):
ten examples where a test names none, and :func:`examples` scales the numbers the tests name
by the same tenth, so the quick loop tries every property on fewer inputs. The whole suite,
CI's, runs every number as written.
"""

from __future__ import annotations

from typing import Final

from hypothesis import settings

#: The examples of a property that names none, in the suite's profile (hypothesis's default).
SUITE_EXAMPLES: Final = 100


def examples(full: int) -> int:
    """``full`` in the suite's profile; scaled as the loaded profile scales the default.

    Read when a test module is imported (as its decorators run), after pytest has loaded the
    profile.
    """
    return max(1, full * settings().max_examples // SUITE_EXAMPLES)
