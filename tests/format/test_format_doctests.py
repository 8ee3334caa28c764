"""The examples in the docstrings of distal.format run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["machine", "distribution", "format", "picture"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    if name == "picture":
        pytest.importorskip("matplotlib")
    module = importlib.import_module(f"distal.format.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
