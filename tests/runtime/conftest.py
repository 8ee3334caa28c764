"""Shared Legate runtime for the runtime tests (Legate starts once per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from distal import runtime as rt

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def machine() -> rt.MachineInfo:
    """Legate, started with distal's defaults (or the user's LEGATE_CONFIG)."""
    return rt.ensure_started()


def _run_python(code: str, env: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.pop("LEGATE_CONFIG", None)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout, check=False, cwd=ROOT)


@pytest.fixture(scope="session")
def run_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run code in a fresh interpreter (a second Legate start needs a new process).

    LEGATE_CONFIG is removed from its environment unless `env` sets it.
    """
    return _run_python
