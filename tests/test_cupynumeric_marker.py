"""The `cupynumeric` marker (tests/conftest.py): a test that needs cuPyNumeric is skipped where it is not installed
(legate 26.1's multi-rank environment), and runs where it is."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import pytest

from tests.conftest import CUPYNUMERIC, cupynumeric_missing


class _Item:
    """What the hook reads of a pytest item: its closest marker of a name."""

    def __init__(self, *markers: str) -> None:
        self.markers = markers

    def get_closest_marker(self, name: str) -> Any:
        return getattr(pytest.mark, name).mark if name in self.markers else None


def test_a_marked_test_is_skipped_only_where_cupynumeric_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupynumeric" else real(name))
    assert "needs cuPyNumeric" in (cupynumeric_missing(_Item("legate", CUPYNUMERIC)) or "")  # type: ignore[arg-type]
    assert cupynumeric_missing(_Item("legate")) is None  # type: ignore[arg-type]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert cupynumeric_missing(_Item("legate", CUPYNUMERIC)) is None  # type: ignore[arg-type]


def test_the_marker_is_registered(pytestconfig: pytest.Config) -> None:
    assert any(line.startswith(f"{CUPYNUMERIC}:") for line in pytestconfig.getini("markers"))


def test_looking_cupynumeric_up_is_not_importing_it() -> None:
    """The marker's look-up (importlib.util.find_spec) passes the import guard, which still fails an import."""
    from tests.conftest import imports_blocked

    with imports_blocked("this test", packages=("distal_test_no_such_package",)):
        assert importlib.util.find_spec("distal_test_no_such_package") is None
        with pytest.raises(pytest.fail.Exception, match="imported 'distal_test_no_such_package'"):
            importlib.import_module("distal_test_no_such_package")
        with pytest.raises(pytest.fail.Exception, match="imported 'distal_test_no_such_package'"):
            __import__("distal_test_no_such_package")
