"""Legate for the lowering tests: started once per pytest process, with distal's defaults."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def legate() -> object:
    """The started runtime's machine description (2 CPU processors on the project's machines)."""
    from distal import runtime as rt

    return rt.ensure_started()
