"""Tables of functions by class: a subclass finds what a ``match`` in the table's order picks."""

from __future__ import annotations

from orchestrator.base import resolve_subclass


class Known:
    pass


class Other:
    pass


class Refined(Known):
    """A newer peer's refinement of a known kind."""


class Both(Other, Known):
    pass


def test_a_subclass_finds_the_first_entry_of_its_bases_in_the_tables_order() -> None:
    table: dict[type, str | None] = {Known: "known", Other: "other"}
    order = tuple(table)
    assert resolve_subclass(table, order, Refined, "default") == "known"
    assert resolve_subclass(table, order, Both, "default") == "known"  # Known comes first
    assert table[Refined] == "known"  # remembered: the next lookup is one dict hit
    assert table[Both] == "known"


def test_an_unrelated_class_finds_the_default_and_keeps_it() -> None:
    table: dict[type, str | None] = {Known: "known"}
    assert resolve_subclass(table, (Known,), int, None) is None
    assert int in table
    assert table[int] is None
