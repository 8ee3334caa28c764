"""The examples in distal.model's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["distal.model", "distal.machine.links", "distal.model.hardware", "distal.model.calibrate", "distal.model.sysmem"])
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
