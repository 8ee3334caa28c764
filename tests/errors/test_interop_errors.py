"""Arrays handed to distal through the Legate data interface: refused before anything runs when unusable."""

from __future__ import annotations

from typing import Any

import pytest

import distal as dt
from distal.errors import ShapeError


class _Interface:
    """An object that says it speaks the Legate data interface, with the given dictionary."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @property
    def __legate_data_interface__(self) -> dict[str, Any]:
        return self.data


@pytest.mark.parametrize("data", [{"version": 2, "data": {"f": None}}, {"version": 1, "data": {}},
                                  {"version": 1, "data": {"a": None, "b": None}}])
def test_an_unusable_legate_data_interface_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ShapeError, match=r"expected a Legate data interface of version 1 with one field, but found"):
        dt.Tensor.from_array("X", _Interface(data))
