"""Fixtures of the format tests that run plans on placed data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


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
