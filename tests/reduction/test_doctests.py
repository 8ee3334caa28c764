"""The examples in distal.reduction's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["__init__", "system", "placement", "program", "semantics", "synthesis", "lowering",
           "simulate", "execute", "plan", "cli"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module("distal.reduction" if name == "__init__" else f"distal.reduction.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
