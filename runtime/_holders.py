"""Where a format's blocks sit: which device holds which box of the tensor, at which index of the blocks.

A `FormatStore` (`_tensor_storage`) keeps one block per holding device in a
store whose leading dimensions are the machine's (`block_grid`); a device's
block is at `holder_index` and holds the box `holder_box` of the tensor.
Launches on a device's block run on the CPU `Machine.bind` gives it
(`bound_cpus`). Placement, gathering, in-place plans (`_placed`) and the
factor grid of redistribution (`_factor_grid`) all read these.
"""

from __future__ import annotations

import numpy as np

from distal.lower.plan import Box
from distal.redist.formats import Layout
from distal.redist.simulate import offsets

from ._start import processor_count

__all__ = ["block_grid", "bound_cpus", "holder_box", "holder_index"]


def block_grid(lay: Layout) -> tuple[int, ...]:
    """The leading dimensions of a `FormatStore`'s blocks: one per machine dimension (all levels),
    of its size, or 1 where the format fixes it (only the face holds blocks)."""
    fixed = {a for a, _ in lay.fixed}
    return tuple(1 if name in fixed else size for name, size in lay.mesh.axes)


def holder_index(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index in a `FormatStore`'s leading dimensions of the block of ``device`` (a machine coordinate)."""
    fixed = {a for a, _ in lay.fixed}
    return tuple(0 if name in fixed else c for name, c in zip(lay.mesh.names, device, strict=True))


def holder_box(lay: Layout, device: tuple[int, ...]) -> Box:
    """The box of the tensor (global coordinates) that ``device``'s block holds, at the block's origin.

    Along every dimension the elements a device holds are consecutive in
    the tensor and sit at the start of its block (the format's tiles are
    blocked, level by level); a device of a non-dividing edge may hold an
    empty box (its block is all padding).
    """
    off = offsets(lay.type, lay.mesh, device)
    box = []
    for d, positions in enumerate(lay.positions()):
        lo = int(np.searchsorted(positions, off[d]))
        hi = int(np.searchsorted(positions, off[d] + lay.tile[d]))
        if hi > lo:
            assert positions[lo] == off[d] and positions[hi - 1] - positions[lo] == hi - lo - 1, (lay, device)
        box.append((lo, hi))
    return tuple(box)


def bound_cpus(lay: Layout) -> dict[tuple[int, ...], int]:
    """The CPU that `Machine.bind` gives each device of the format's machine."""
    return lay.format.machine.bind(processor_count("cpu"))
