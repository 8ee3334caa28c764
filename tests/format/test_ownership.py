"""One answer to "which processor holds which box": `Format.boxes`, checked against the runtime's blocks.

The runtime places a formatted tensor as padded device blocks, each holding
the box `Format.boxes` names for its device (`holder_box`); redistribution
reasons about the same blocks through their padded layout
(`distal.format.layout.layout`, read as distributed types by
`distal.redist.formats.dist_type`). All must agree, for every format the
random suites draw: fixed and broadcast dimensions, prime machines,
hierarchies, extents that do not divide.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import distal as dt
from distal.errors import FormatError
from distal.format.format import Format
from distal.format.layout import layout
from distal.redist.formats import dist_type, mesh_of
from distal.redist.simulate import offsets
from distal.runtime._holders import holder_box
from tests._strategies.legate_cases import draw_format
from tests._strategies.machines import MACHINES


def _layout_boxes(fmt: Format, shape: tuple[int, ...]) -> dict[tuple[int, ...], tuple[tuple[tuple[int, int], ...], ...]]:
    """Per device, the non-empty box the padded layout (redistribution's distributed type) puts at the start
    of its block: the elements whose padded position falls in the block, worked out from positions alone."""
    lay = layout(fmt, shape)
    t, mesh = dist_type(lay), mesh_of(fmt.machine)
    out = {}
    for dev in fmt.machine.coords():
        if not lay.holds(dev):
            out[tuple(dev)] = ()
            continue
        off = offsets(t, mesh, dev)
        assert off == lay.offset(dev)  # the layout's blocks are the distributed type's tiles
        box = []
        for d, positions in enumerate(lay.positions()):
            lo = int(np.searchsorted(positions, off[d]))
            hi = int(np.searchsorted(positions, off[d] + lay.tile[d]))
            if hi > lo:  # consecutive elements at the block's start
                assert positions[lo] == off[d] and positions[hi - 1] - positions[lo] == hi - lo - 1
            box.append((lo, hi))
        out[tuple(dev)] = () if any(hi <= lo for lo, hi in box) else (tuple(box),)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_padded_blocks_hold_what_format_boxes_says(seed: int) -> None:
    """The runtime places each device's `Format.boxes` box at the start of its block (`holder_box`); the padded
    layout redistribution reasons with must put the same elements there."""
    rng = random.Random(seed)
    for _ in range(100):
        machine = rng.choice(MACHINES)
        order = rng.randint(0, 3)
        fmt = draw_format(rng, order, machine)
        shape = tuple(rng.randint(1, 7) for _ in range(order))
        boxes = fmt.boxes(shape)
        assert boxes == _layout_boxes(fmt, shape), (fmt, shape)
        lay = layout(fmt, shape)
        for dev in lay.holders():
            box = holder_box(lay, tuple(dev))
            assert box == lay.box(dev)
            assert (box,) == boxes[tuple(dev)] or (not boxes[tuple(dev)] and any(hi <= lo for lo, hi in box))


def test_boxes_cover_the_tensor_once_per_copy() -> None:
    """Without broadcast or fixed dimensions the boxes tile the tensor exactly; a broadcast doubles them."""
    m = dt.Machine(dt.Grid(2, 3))
    shape = (5, 7)
    cells = [c for boxes in Format("xy -> xy", m).boxes(shape).values() for b in boxes
             for c in itertools.product(*(range(lo, hi) for lo, hi in b))]
    assert sorted(cells) == [(i, j) for i in range(5) for j in range(7)]
    wide = Format("x -> x*", m).boxes((5,))
    assert wide[(0, 0)] == wide[(0, 2)] == (((0, 3),),) and wide[(1, 1)] == (((3, 5),),)
    assert Format("x -> x0", m).boxes((5,))[(1, 1)] == ()
    assert Format("x -> x", dt.Machine(dt.Grid(3))).boxes((2,))[(2,)] == ()  # past a non-dividing edge


def test_local_size_is_the_boxes_volume() -> None:
    fmt = Format("xy -> yx", dt.Machine(dt.Grid(2, 2)))
    assert fmt.local_size((3, 5)) == {(0, 0): 6, (0, 1): 3, (1, 0): 4, (1, 1): 2}


def test_boxes_refuses_a_shape_of_another_order() -> None:
    with pytest.raises(FormatError):
        Format("xy -> xy", dt.Machine(dt.Grid(2, 2))).boxes((3,))
