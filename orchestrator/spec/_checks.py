"""Checks of single TOML values, each naming the key path of the value it refuses.

:class:`_ValueChecks` knows what a value must be where the team file has it: a table with
these keys, a non-empty string, a name, an integer from a minimum, a finite number, one of
these words, a duration, JSON. Each check returns the value typed. Otherwise it raises a
:class:`~orchestrator.base._errors.TeamFileError` naming the file, the key path and what is
wrong, in the words of :mod:`._wording`. The walk over the document that uses them, and
the rules across values, are :mod:`._parse`'s.

Pure: no trio and no IO.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from orchestrator.base import ScheduleError, TeamFileError

from ._schedule import parse_duration
from ._wording import _describe, _did_you_mean, _join

__all__: list[str] = []

#: Agent names and tool names end up in key paths, tool call arguments and
#: (for tools) OpenAI function names, so both keep to TOML's bare-key alphabet.
_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


class _ValueChecks:
    """The checks of single values; ``file`` goes into every error."""

    def __init__(self, file: str) -> None:
        self.file = file

    def error(self, key_path: str, message: str) -> TeamFileError:
        return TeamFileError(message, file=self.file, key_path=key_path)

    def table(self, value: object, path: str, what: str = "a table") -> Mapping[str, object]:
        if not isinstance(value, dict):
            raise self.error(path, f"expected {what}, got {_describe(value)}")
        return value

    def check_keys(
        self,
        data: Mapping[str, object],
        path: str,
        allowed: Sequence[str],
        *,
        required: Collection[str] = (),
    ) -> None:
        for key in data:
            if key not in allowed:
                raise self.error(
                    _join(path, key),
                    f"unknown key {key!r}{_did_you_mean(key, allowed)}; "
                    f"allowed keys: {', '.join(allowed)}",
                )
        for key in required:
            if key not in data:
                raise self.error(_join(path, key), f"missing required key {key!r}")

    def string(self, value: object, path: str, *, empty_ok: bool = False) -> str:
        if not isinstance(value, str):
            raise self.error(path, f"expected a string, got {_describe(value)}")
        if not empty_ok and not value.strip():
            raise self.error(path, "must not be empty")
        return value

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(path, f"expected true or false, got {_describe(value)}")
        return value

    def name(self, value: object, path: str, what: str) -> str:
        text = self.string(value, path)
        if not _NAME_RE.match(text):
            raise self.error(
                path,
                f"{what} {text!r} must be 1-64 letters, digits, '_' or '-'",
            )
        return text

    def integer(self, value: object, path: str, *, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"expected an integer, got {_describe(value)}")
        if value < minimum:
            raise self.error(path, f"must be >= {minimum}, got {value}")
        return value

    def number(self, value: object, path: str, *, positive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(path, f"expected a number (int or float), got {_describe(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise self.error(path, f"must be a finite number, got {value}")
        if positive and number <= 0:
            raise self.error(path, f"must be > 0, got {value}")
        if number < 0:
            raise self.error(path, f"must be >= 0, got {value}")
        return number

    def choice(self, value: object, path: str, allowed: Mapping[str, Any], what: str) -> Any:
        text = self.string(value, path)
        if text not in allowed:
            raise self.error(
                path,
                f"unknown {what} {text!r}{_did_you_mean(text, allowed)}; "
                f"allowed: {', '.join(allowed)}",
            )
        return allowed[text]

    def array(self, value: object, path: str, what: str = "an array") -> list[object]:
        if not isinstance(value, list):
            raise self.error(path, f"expected {what}, got {_describe(value)}")
        return value

    def duration(self, value: object, path: str) -> datetime.timedelta:
        try:
            return parse_duration(self.string(value, path))
        except ScheduleError as exc:
            raise self.error(path, exc.message) from exc

    def names(self, value: object, path: str, what: str) -> tuple[str, ...]:
        """An array of distinct names."""
        result: list[str] = []
        for index, item in enumerate(self.array(value, path)):
            item_path = f"{path}[{index}]"
            name = self.name(item, item_path, what)
            if name in result:
                raise self.error(item_path, f"{name!r} is listed twice")
            result.append(name)
        return tuple(result)

    def json_value(self, value: object, path: str) -> Any:
        """A copy of ``value`` made of JSON types only (tool inputs travel as JSON). None is
        JSON's null: a file cannot write it, a team defined in Python can (a pydantic
        model's schema holds ``"default": null`` for an optional field)."""
        if isinstance(value, dict):
            return {k: self.json_value(v, _join(path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(path, f"{value} is not valid JSON; use a finite number")
        if value is None or isinstance(value, str | int | float | bool):
            return value
        raise self.error(path, f"{_describe(value)} is not valid JSON; write it as a string")

    def argument(self, value: object, path: str, *, empty_ok: bool) -> str:
        """A string handed to the operating system (an argument, a path, a variable's value),
        which cannot hold a NUL character."""
        text = self.string(value, path, empty_ok=empty_ok)
        if "\0" in text:
            raise self.error(path, "must not contain a NUL character (\\u0000)")
        return text
