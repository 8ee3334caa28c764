"""The one layout of a format's blocks: where a tensor's elements lie in each device's padded block.

A `Format` on a `Machine` says which processor holds which box of a tensor
(`Format.boxes`, the one answer). Stored on devices, every holding device
keeps one block of the format's nominal tile (the tile after the last level,
`Format.tile_shape`), its box at the block's origin and zeros after it. This
module describes those blocks; the redistribution synthesizer reads them as
distributed types (`distal.redist.formats`), the runtime lays data out by
them (`runtime/_tensor_storage.py`).

* every machine grid dimension is a machine axis, named like the machine
  dimension (level 0) or ``name_level`` (deeper levels of a hierarchical
  machine), in the machine's order (`axis_names`), so a device is named by
  its machine coordinate;
* a tensor dimension partitioned over machine dimensions lists them, level
  by level, with the format's nominal tile after each level;
* a fixed dimension (a digit) keeps blocks only on its face (`Layout.fixed`).

Non-divisible extents are padded: a dimension of extent n cut into tiles of
t = ceil(n/g) lives in a padded dimension of g*t, element i at position i
(hierarchical levels pad every outer tile the same way, so element i sits at
``(c0*g1 + c1)*t1 + r``). An empty dimension is padded to one element per
part.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distal.errors import FormatError
from distal.format.distribution import BROADCAST
from distal.format.format import Bounds, Format
from distal.machine.grid import Machine

__all__ = ["DimLayout", "Layout", "axis_names", "layout", "machine_axes"]


def axis_names(machine: Machine) -> tuple[tuple[str, ...], ...]:
    """The axis name of every machine dimension, per level.

    >>> from distal.machine.grid import Grid
    >>> axis_names(Machine(Grid(2, 2), Grid(4)))
    (('x', 'y'), ('x_1',))
    """
    taken: set[str] = set(machine.grids[0].names)
    out: list[tuple[str, ...]] = [machine.grids[0].names]
    for level, grid in enumerate(machine.grids[1:], start=1):
        names = []
        for n in grid.names:
            name, k = f"{n}_{level}", level
            while name in taken:
                k += 1
                name = f"{n}_{k}"
            taken.add(name)
            names.append(name)
        out.append(tuple(names))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DimLayout:
    """How one tensor dimension of extent ``extent`` lies in its padded dimension.

    ``parts`` lists the partitioning levels, outermost first, as (machine
    axis, parts, nominal tile after that level); ``padded`` is the padded
    extent. ``spread`` gives an unpartitioned dimension the padded positions
    of another layout's ``parts`` (so that both agree), without its axes.
    """

    extent: int
    padded: int
    parts: tuple[tuple[str, int, int], ...]
    spread: tuple[tuple[str, int, int], ...] = ()

    @property
    def tile(self) -> int:
        """The padded local extent (one device's block)."""
        return self.parts[-1][2] if self.parts else self.padded

    @property
    def axes(self) -> tuple[str, ...]:
        """The machine axes of this dimension, minor-to-major (size-1 axes dropped)."""
        return tuple(a for a, g, _ in reversed(self.parts) if g > 1)

    def positions(self) -> np.ndarray:
        """The padded position of each element: an int64 array of length ``extent``.

        >>> DimLayout(5, 8, (("x", 2, 3), ("x_1", 2, 2))).positions()
        array([0, 1, 2, 4, 5])
        """
        idx = np.arange(self.extent, dtype=np.int64)
        parts = self.parts or self.spread
        if not parts:
            return idx
        pos = np.zeros_like(idx)
        rest = idx
        for _, g, t in parts:
            color = rest // t
            rest = rest - color * t
            pos = pos * g + color
        return pos * parts[-1][2] + rest

    def adopt(self, other: DimLayout) -> DimLayout:
        """This unpartitioned dimension laid out at ``other``'s padded positions."""
        assert not self.parts
        if not other.parts:
            return DimLayout(self.extent, max(self.padded, other.padded), ())
        return DimLayout(self.extent, other.padded, (), other.parts)

    def same_positions(self, other: DimLayout) -> bool:
        """Whether both put every element at the same padded position, in padded dimensions of one extent."""
        return self.padded == other.padded and bool(np.array_equal(self.positions(), other.positions()))


@dataclass(frozen=True, slots=True)
class Layout:
    """A format's layout of a tensor of ``shape``: padded dimensions, faces, device blocks.

    >>> from distal.machine.grid import Grid
    >>> m = Machine(Grid(2, 2, 2))
    >>> lay = layout(Format("xy -> xy0", m), (5, 4))
    >>> lay.axes, lay.fixed, lay.tile, lay.padded
    ((('x', 2), ('y', 2), ('z', 2)), (('z', 0),), (3, 2), (6, 4))
    """

    format: Format
    shape: tuple[int, ...]
    dims: tuple[DimLayout, ...]
    fixed: tuple[tuple[str, int], ...]

    @property
    def axes(self) -> tuple[tuple[str, int], ...]:
        """Every machine axis (all levels, `axis_names`) with its size, in the machine's order."""
        return machine_axes(self.format.machine)

    @property
    def names(self) -> tuple[str, ...]:
        """The machine axes' names."""
        return tuple(n for n, _ in self.axes)

    @property
    def tile(self) -> tuple[int, ...]:
        """The block every holding device keeps (padded nominal tile)."""
        return tuple(d.tile for d in self.dims)

    @property
    def padded(self) -> tuple[int, ...]:
        """The padded global extents."""
        return tuple(d.padded for d in self.dims)

    def holds(self, device: Sequence[int]) -> bool:
        """Whether the device (a machine coordinate) keeps a block: it lies on every fixed face."""
        names = self.names
        return all(device[names.index(a)] == v for a, v in self.fixed)

    def holders(self) -> list[tuple[int, ...]]:
        """The devices that keep a block, row-major."""
        return [d for d in self.format.machine.coords() if self.holds(d)]

    def box(self, device: Sequence[int]) -> Bounds:
        """The box of the tensor (global coordinates) at the origin of ``device``'s block.

        The box `Format.boxes` gives the device; a device holding nothing (off
        a fixed face, or past a non-dividing edge, where its block is all
        padding) gets an empty box.
        """
        held = _boxes(self.format, self.shape).get(tuple(device), ())
        assert len(held) <= 1, (self, device, held)
        return held[0] if held else tuple((0, 0) for _ in self.shape)

    def offset(self, device: Sequence[int]) -> tuple[int, ...]:
        """Where ``device``'s block starts in the padded tensor, per dimension.

        >>> from distal.machine.grid import Grid
        >>> layout(Format(["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(2))), (5, 4)).offset((1, 0, 1))
        (6, 0)
        """
        names = self.names
        out = []
        for d in self.dims:
            idx = 0
            for a, g, _ in d.parts:
                idx = idx * g + device[names.index(a)]
            out.append(idx * d.tile)
        return tuple(out)

    def positions(self) -> tuple[np.ndarray, ...]:
        """Per dimension, the padded position of every element (see `DimLayout.positions`)."""
        return tuple(d.positions() for d in self.dims)

    def pad(self, array: np.ndarray) -> np.ndarray:
        """The padded global array: ``array`` at its padded positions, zeros elsewhere."""
        out = np.zeros(self.padded, dtype=array.dtype)
        if array.size:
            out[np.ix_(*self.positions())] = array
        return out

    def crop(self, padded: np.ndarray) -> np.ndarray:
        """The tensor's elements of a padded global array (inverse of `pad`)."""
        if 0 in self.shape:
            return np.zeros(self.shape, dtype=padded.dtype)
        # np.ascontiguousarray makes a 0-d array 1-d: reshape back (a scalar stays 0-d)
        return np.ascontiguousarray(padded[np.ix_(*self.positions())]).reshape(self.shape)

    def adopt(self, other: Layout) -> Layout:
        """This layout with its unpartitioned dimensions at ``other``'s padded positions."""
        dims = tuple(d.adopt(o) if not d.parts else d for d, o in zip(self.dims, other.dims, strict=True))
        return Layout(self.format, self.shape, dims, self.fixed)


@functools.lru_cache(maxsize=256)
def machine_axes(machine: Machine) -> tuple[tuple[str, int], ...]:
    """Every machine dimension (all levels) as an axis: its name (`axis_names`) and size.

    >>> from distal.machine.grid import Grid
    >>> machine_axes(Machine(Grid(2, 2), Grid(4)))
    (('x', 2), ('y', 2), ('x_1', 4))
    """
    names = [n for level in axis_names(machine) for n in level]
    return tuple(zip(names, machine.full_shape, strict=True))


@functools.lru_cache(maxsize=64)
def _boxes(fmt: Format, shape: tuple[int, ...]) -> dict[tuple[int, ...], tuple[Bounds, ...]]:
    return fmt.boxes(shape)


def layout(fmt: Format, shape: Sequence[int]) -> Layout:
    """The layout of a tensor of ``shape`` in format ``fmt`` (see the module docstring).

    The tiles are the format's own (`Format.tile_shape`, level by level);
    an empty dimension takes tiles of one element.

    >>> from distal.machine.grid import Grid
    >>> layout(Format("xy -> y*", Machine(Grid(2, 2))), (4, 5)).dims[1]
    DimLayout(extent=5, padded=6, parts=(('x', 2, 3),), spread=())
    >>> [d.parts for d in layout(Format(["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(2))), (5, 4)).dims]
    [(('x', 2, 3), ('x_1', 2, 2)), (('y', 2, 2),)]
    """
    if not isinstance(fmt, Format):
        raise FormatError(f"expected a Format, but found {fmt!r}")
    fmt.tile_shape(shape)  # refuses a shape of the wrong order
    dims_shape = tuple(int(n) for n in shape)
    names = axis_names(fmt.machine)
    parts: list[list[tuple[str, int, int]]] = [[] for _ in dims_shape]
    fixed: list[tuple[str, int]] = []
    for level, dist in enumerate(fmt.levels):
        grid = fmt.machine.grids[level]
        tile = fmt.tile_shape(dims_shape, level)
        for d in range(fmt.order):
            k = dist.machine_dim_of(d)
            if k is not None:
                parts[d].append((names[level][k], grid.dims[k], max(tile[d], 1)))
        for k, y in enumerate(dist.machine_names):
            if isinstance(y, int):
                fixed.append((names[level][k], y))
            else:
                assert y == BROADCAST or dist.tensor_dim_of(k) is not None
    dims = []
    for n, ps in zip(dims_shape, parts, strict=True):
        # an empty dimension is padded to one element per part
        padded = ps[-1][2] * math.prod(g for _, g, _ in ps) if ps else max(n, 1)
        dims.append(DimLayout(n, padded, tuple(ps)))
    return Layout(fmt, dims_shape, tuple(dims), tuple(fixed))
