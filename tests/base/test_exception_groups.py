"""``base.leaf_exceptions``: every leaf of a nested exception group, once, in order, split
by the type set aside."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.base import leaf_exceptions
from tests.support.examples import examples


class SetAside(BaseException):
    """Stands for trio.Cancelled: a BaseException, not an Exception."""


def leaves() -> st.SearchStrategy[BaseException]:
    return st.builds(
        lambda aside, n: SetAside(n) if aside else ValueError(n),
        st.booleans(),
        st.integers(0, 1_000),
    )


def groups() -> st.SearchStrategy[BaseExceptionGroup[BaseException]]:
    trees = st.recursive(
        leaves(),
        lambda inner: st.lists(inner, min_size=1, max_size=4).map(
            lambda children: BaseExceptionGroup("nursery", children)
        ),
        max_leaves=20,
    )
    return st.lists(trees, min_size=1, max_size=4).map(lambda xs: BaseExceptionGroup("top", xs))


def in_order(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in in_order(inner)]
    return [exc]


@settings(max_examples=examples(200))
@given(groups())
def test_every_leaf_once_in_order_split_by_type(group: BaseExceptionGroup[BaseException]) -> None:
    kept, set_aside = leaf_exceptions(group, setting_aside=SetAside)
    every = in_order(group)
    assert kept == [exc for exc in every if not isinstance(exc, SetAside)]
    assert set_aside == [exc for exc in every if isinstance(exc, SetAside)]


def test_the_error_a_nursery_wrapped_with_its_cancellations() -> None:
    error = ValueError("the model broke off")
    group = BaseExceptionGroup(
        "run", [SetAside("a"), BaseExceptionGroup("turn", [error, SetAside("b")])]
    )
    kept, set_aside = leaf_exceptions(group, setting_aside=SetAside)
    assert kept == [error]
    assert [str(exc) for exc in set_aside] == ["a", "b"]
