"""The exceptions an exception group holds, however deep the nurseries nested it.

A nursery wraps the error that stopped it with the cancellations that error caused; a
caller that re-raises the lone error as it was raised lets ``except SomeError`` work
around the nursery. Pure: no trio (the caller names the type it sets aside).
"""

from __future__ import annotations

__all__ = ["leaf_exceptions"]


def leaf_exceptions(
    group: BaseExceptionGroup[BaseException], *, setting_aside: type[BaseException]
) -> tuple[list[BaseException], list[BaseException]]:
    """The exceptions in ``group`` (nested groups flattened, in order): those that are not
    ``setting_aside``, and those that are."""
    kept: list[BaseException] = []
    set_aside: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            pending[:0] = exc.exceptions
        elif isinstance(exc, setting_aside):
            set_aside.append(exc)
        else:
            kept.append(exc)
    return kept, set_aside
