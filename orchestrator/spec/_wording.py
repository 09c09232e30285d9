"""The words team-file messages are made of: key paths, "did you mean" hints, and TOML
values named the way a user wrote them.

Shared by the model (:meth:`~._model.TeamSpec.agent`), the value checks (:mod:`._checks`),
the parser (:mod:`._parse`) and the lint (:func:`~._teamfile.lint_team`). Pure.
"""

from __future__ import annotations

import datetime
import difflib
import json
import re
from collections.abc import Iterable
from typing import Final

__all__: list[str] = []

_BARE_KEY_RE: Final = re.compile(r"[A-Za-z0-9_-]+\Z")


def _join(path: str, key: str) -> str:
    segment = key if _BARE_KEY_RE.match(key) else json.dumps(key, ensure_ascii=False)
    return f"{path}.{segment}" if path else segment


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def _describe(value: object) -> str:
    """Name a TOML value the way a user wrote it: its TOML type and a short preview."""
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"float {value}"
    if isinstance(value, str):
        preview = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(preview, ensure_ascii=False)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.datetime):
        return "a datetime"
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, datetime.time):
        return "a time"
    return type(value).__name__


def _one_of(values: Iterable[str]) -> str:
    return ", ".join(repr(v) for v in values)
