"""Shared test configuration: where the protocol fixtures live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED = PROJECT_ROOT.parent / "shared"


def ahp_fixtures_dir() -> Path:
    """The AHP test-case directory: ``$AHP_FIXTURES`` or the copy in ../shared."""
    configured = os.environ.get("AHP_FIXTURES")
    if configured:
        return Path(configured).resolve()
    return SHARED / "protocols" / "ahp" / "test-cases"


@pytest.fixture(scope="session")
def ahp_fixtures() -> Path:
    path = ahp_fixtures_dir()
    if not path.is_dir():
        pytest.fail(f"AHP fixture directory {path} does not exist (set AHP_FIXTURES)")
    return path
