"""Where a format's blocks sit: which device holds which box of the tensor, at which index of the blocks.

A `FormatStore` (`_tensor_storage`) keeps one block per holding device in a
store whose leading dimensions are the machine's (`block_grid`); a device's
block is at `holder_index` and holds the box `holder_box` of the tensor.
Launches on a device's block run on the CPU `Machine.bind` gives it
(`bound_cpus`). Placement, gathering, in-place plans (`_placed`) and the
factor grid of redistribution (`_factor_grid`) all read these.
"""

from __future__ import annotations

from distal.format.format import Bounds
from distal.format.layout import Layout

from ._start import processor_count

__all__ = ["block_grid", "bound_cpus", "holder_box", "holder_index"]


def block_grid(lay: Layout) -> tuple[int, ...]:
    """The leading dimensions of a `FormatStore`'s blocks: one per machine dimension (all levels),
    of its size, or 1 where the format fixes it (only the face holds blocks)."""
    fixed = {a for a, _ in lay.fixed}
    return tuple(1 if name in fixed else size for name, size in lay.axes)


def holder_index(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index in a `FormatStore`'s leading dimensions of the block of ``device`` (a machine coordinate)."""
    fixed = {a for a, _ in lay.fixed}
    return tuple(0 if name in fixed else c for name, c in zip(lay.names, device, strict=True))


def holder_box(lay: Layout, device: tuple[int, ...]) -> Bounds:
    """The box of the tensor (global coordinates) that ``device``'s block holds, at the block's origin.

    The box `Format.boxes` gives the device (`Layout.box`); a device holding
    nothing (off a fixed face, or past a non-dividing edge, where its block
    is all padding) gets an empty box. tests/format/test_ownership.py checks
    that the padded layout of the block puts exactly this box at its start.
    """
    return lay.box(device)


def bound_cpus(lay: Layout) -> dict[tuple[int, ...], int]:
    """The CPU that `Machine.bind` gives each device of the format's machine."""
    return lay.format.machine.bind(processor_count("cpu"))
