"""The whole suite's fixtures."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def machine() -> Any:
    """Legate, started with distal's defaults (or the user's LEGATE_CONFIG)."""
    from distal import runtime as rt

    return rt.ensure_started()
