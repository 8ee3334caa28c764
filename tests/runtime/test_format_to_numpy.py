"""`FormatStore.to_numpy`: blocks copied to the host once, laid out without a padded pass where possible."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.format.layout import Layout
from distal.runtime import _tensor_storage as ts

CASES = [
    # (format text, grid, shape): rows in order, uneven rows, 2-D blocks, copies, fixed face, broadcast
    ("xyz -> x", (2,), (6, 3, 4)),
    ("xyz -> x", (4,), (7, 3, 2)),
    ("xy -> xy", (2, 2), (5, 7)),
    ("xy -> x*", (2, 2), (6, 4)),
    ("xy -> xy0", (2, 1, 2), (4, 6)),
    ("x -> *", (3,), (5,)),
    ("xy -> yx", (2, 2), (5, 3)),
]


@pytest.mark.legate
@pytest.mark.parametrize(("text", "grid", "shape"), CASES)
def test_to_numpy_gives_the_data(machine: rt.MachineInfo, text: str, grid: tuple[int, ...],
                                 shape: tuple[int, ...]) -> None:
    fmt = dt.Format(text, dt.Machine(dt.Grid(*grid)))
    data = np.arange(float(np.prod(shape))).reshape(shape) + 1
    held = ts.place(data, fmt)
    got = held.to_numpy()
    assert got.shape == shape and got.dtype == data.dtype
    np.testing.assert_array_equal(got, data)
    got[...] = 0  # the caller owns its copy
    np.testing.assert_array_equal(held.to_numpy(), data)


@pytest.mark.legate
def test_rows_in_order_make_no_padded_pass(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tensor whose blocks are its rows in order (TTM's output) is the host copy itself, reshaped."""
    def refused(self: Layout, padded: Any) -> Any:
        raise AssertionError("Layout.crop ran: the blocks went through a padded copy")

    monkeypatch.setattr(Layout, "crop", refused)
    fmt = dt.Format("xyz -> x", dt.Machine(dt.Grid(2)))
    data = np.random.default_rng(0).random((5, 4, 3))
    held = ts.place(data, fmt)
    lay = held.layout
    boxes = {((0, 3), (0, 4), (0, 3)): (0,), ((3, 5), (0, 4), (0, 3)): (1,)}
    assert ts._rows_in_order(boxes, (2,), lay.shape, lay.tile)
    np.testing.assert_array_equal(held.to_numpy(), data)
    fmt2 = dt.Format("xy -> xy", dt.Machine(dt.Grid(2, 2)))
    np.testing.assert_array_equal(ts.place(data[:, :, 0], fmt2).to_numpy(), data[:, :, 0])  # by boxes, no crop


def test_copies_are_not_rows_in_order() -> None:
    """Two devices holding the same rows (a broadcast copy) are not the rows in order."""
    boxes = {((0, 3), (0, 4)): (0, 0)}
    assert not ts._rows_in_order(boxes, (2, 2), (6, 4), (3, 4))
    assert not ts._rows_in_order({((0, 3), (0, 2)): (0,), ((3, 6), (0, 2)): (1,)}, (2,), (6, 4), (3, 2))
