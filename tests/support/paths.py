"""Where things are: the project's root, its example teams, the protocols' fixtures."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
"""The repository's root (where pyproject.toml is)."""

TEAMS = PROJECT_ROOT / "teams"
"""The example team files shipped with the project."""

PROTOCOLS = PROJECT_ROOT / "tests" / "protocols"
"""Public schemas and fixtures of the protocols we implement, copied byte for byte with their
licences (see protocols/SOURCES.md), so a clean clone tests without anything beside it."""

AHP_SCHEMAS = PROTOCOLS / "ahp" / "schema"
"""The AHP JSON schemas."""
