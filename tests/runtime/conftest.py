"""Fixtures of the runtime tests: fresh interpreters, and a record of data leaving placed blocks.

Legate itself (started once per process) is the `machine` fixture of tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def moves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records every way data could leave the blocks: a gather into a second store, a copy to or from the host."""
    from distal.runtime import _execute, _store, _tensor_storage
    from distal.runtime._tensor_storage import FormatStore

    seen: list[str] = []

    def trap(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return real(*args, **kwargs)
        return wrapper

    for module in (_tensor_storage, _execute):
        monkeypatch.setattr(module, "gather", trap("gather", module.gather))
        monkeypatch.setattr(module, "from_store", trap("from_store", module.from_store))
        monkeypatch.setattr(module, "from_numpy", trap("from_numpy", module.from_numpy))
    for module in (_store, _tensor_storage):
        monkeypatch.setattr(module, "to_numpy", trap("to_numpy", module.to_numpy))
    monkeypatch.setattr(FormatStore, "to_numpy", trap("FormatStore.to_numpy", FormatStore.to_numpy))
    yield seen
