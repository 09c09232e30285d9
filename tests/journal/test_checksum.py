"""The check of a stored fact read back (``journal/_checksum``): a damaged row is refused
with an error that names the fact, and a column that is not UTF-8 names the byte and where."""

from __future__ import annotations

import sqlite3

import pytest

from orchestrator.base import FactLogError
from orchestrator.journal._checksum import (
    checked_fact_text,
    fact_checksum,
    not_utf8_fact,
    undecodable_column,
)


def test_a_fact_that_matches_its_checksum_is_returned_as_it_is() -> None:
    text = '{"kind":"run_started","note":"größer"}'
    assert checked_fact_text("s1", 7, text, fact_checksum(text), source="j.db") == text


def test_a_flipped_character_is_refused_naming_the_fact_and_the_journal() -> None:
    stored = '{"kind":"run_started"}'
    damaged = stored.replace("r", "s", 1)
    with pytest.raises(FactLogError, match="fact 7 of s1 is damaged") as caught:
        checked_fact_text("s1", 7, damaged, fact_checksum(stored), source="j.db")
    assert "j.db" in str(caught.value)


def test_sqlite_own_error_for_text_that_is_not_utf8_names_its_column() -> None:
    with sqlite3.connect(":memory:") as connection:
        connection.execute("CREATE TABLE facts (body TEXT)")
        connection.execute("INSERT INTO facts VALUES (CAST(x'7bff7d' AS TEXT))")
        with pytest.raises(sqlite3.OperationalError) as caught:
            connection.execute("SELECT body FROM facts").fetchall()
    connection.close()
    assert undecodable_column(caught.value) == "body"
    assert undecodable_column(sqlite3.OperationalError("database is locked")) is None


def test_the_first_row_that_is_not_utf8_is_named_with_its_byte_and_offset() -> None:
    rows = [(3, b'{"a":1}'), (4, b'{"b":"\xc3('), (5, b"\xff")]
    error = not_utf8_fact("s1", "body", rows, source="j.db")
    assert "fact 4 of s1 is damaged" in str(error)
    assert "byte 0xc3 at offset 6" in str(error)


def test_a_row_that_decodes_on_a_second_look_still_gets_an_error() -> None:
    error = not_utf8_fact("s1", "body", [(3, b"{}")], source="j.db")
    assert "a fact of s1 is damaged (its column body is not UTF-8 text)" in str(error)
