"""Tensor data on Legate laid out by its format: one block per holding device.

A `FormatStore` keeps a tensor's data as the format says (paper section
3.2): a store of shape ``(*grid, L)`` whose leading dimensions are the
device grid of the format's mesh (`distal.redist.formats.mesh_of`), one
dimension per prime factor of each machine dimension, and whose last
dimension is one device's block, flattened: the format's padded nominal
tile (``Layout.tile``, L elements). Launches partition it one block per
launch point, so each block is made in the memory of the processor that
runs its point.

* A partitioned tensor dimension: each device holds its tile, edge tiles
  padded with zeros to the nominal tile.
* A broadcast machine dimension ``*``: every device along it holds its own
  copy of the tile (the data is replicated in the store).
* A fixed machine dimension: only the face holds blocks; the store's grid
  has extent 1 along that dimension's factors.

`to_numpy` gives back exactly the data put in; `store` is the whole global
tensor as one `Store` (shape of the tensor; a 0-d tensor has shape (1,)),
built on first use, for launches that partition the global tensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distal.errors import ShapeError
from distal.format.format import Format
from distal.redist.formats import Layout, layout
from distal.redist.mesh import Mesh
from distal.redist.simulate import offsets

from ._make import from_numpy
from ._store import Store, to_numpy

__all__ = ["FormatStore", "device_grid", "holder_index", "place"]


def device_grid(mesh: Mesh, lay: Layout | None = None) -> tuple[int, ...]:
    """The leading store dimensions: one per factor axis of ``mesh`` (extent 1 on fixed faces).

    A mesh of one device has the grid ``(1,)``.
    """
    fixed = {a for a, _ in lay.fixed} if lay is not None else set()
    grid = tuple(1 if f.axis in fixed else f.size for f in mesh.factors)
    return grid or (1,)


def holder_index(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index in the leading dimensions of the block of ``device`` (a machine coordinate)."""
    mesh = lay.mesh
    if not mesh.factors:
        return (0,)
    fixed = {a for a, _ in lay.fixed}
    coords = mesh.factor_coords(device)
    return tuple(0 if f.axis in fixed else c for f, c in zip(mesh.factors, coords, strict=True))


@dataclass(eq=False)
class FormatStore:
    """A tensor's data on Legate laid out by its format (see the module docstring).

    ``blocks`` is the device-major store; ``layout`` the format's layout of
    the tensor's shape. ``store`` is the global tensor as a `Store`;
    ``to_numpy()`` a copy of the data.
    """

    blocks: Store
    layout: Layout
    dtype: np.dtype[Any]
    _global: Store | None = field(default=None, repr=False)

    @property
    def format(self) -> Format:
        """The tensor's format."""
        return self.layout.format

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return self.layout.shape

    @property
    def block_size(self) -> int:
        """Elements per device block (padded)."""
        return math.prod(self.layout.tile)

    def device_blocks(self) -> dict[tuple[int, ...], np.ndarray]:
        """Every holding device's block (machine coordinate to padded tile), copied out."""
        host = to_numpy(self.blocks)
        tile = self.layout.tile
        return {d: host[holder_index(self.layout, d)].reshape(tile) for d in self.layout.holders()}

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the tensor's data (waits for the launches that write it)."""
        lay = self.layout
        padded = np.zeros(lay.padded, dtype=self.dtype)
        t = lay.type
        for device, block in self.device_blocks().items():
            off = offsets(t, lay.mesh, device)
            padded[tuple(slice(o, o + n) for o, n in zip(off, lay.tile))] = block
        return lay.crop(padded)

    @property
    def store(self) -> Store:
        """The whole global tensor as one store (made on first use; a 0-d tensor has shape (1,))."""
        if self._global is None:
            data = self.to_numpy()
            self._global = from_numpy(data.reshape(data.shape or (1,)))
        return self._global


def host_blocks(array: np.ndarray, lay: Layout) -> np.ndarray:
    """The device-major array of ``array`` laid out as ``lay`` says (NumPy, no Legate)."""
    grid = device_grid(lay.mesh, lay)
    padded = lay.pad(array)
    out = np.zeros((*grid, math.prod(lay.tile)), dtype=array.dtype)
    t = lay.type
    for device in lay.holders():
        off = offsets(t, lay.mesh, device)
        block = padded[tuple(slice(o, o + n) for o, n in zip(off, lay.tile))]
        out[holder_index(lay, device)] = block.reshape(-1)
    return out


def place(array: Any, fmt: Format) -> FormatStore:
    """Put ``array`` (NumPy, cuPyNumeric or any array-like) on Legate laid out by ``fmt``.

    The blocks are cut on the host and copied into a store Legate owns
    (one copy; the array is not kept attached, see `from_numpy`).
    ``place(a, fmt).to_numpy()`` equals ``a`` exactly.
    """
    data = np.asarray(array)
    if data.ndim != fmt.order:
        raise ShapeError(
            f"expected a {fmt.order}-dimensional array for format '{fmt}', but found shape {data.shape}"
        )
    lay = layout(fmt, data.shape)
    return FormatStore(from_numpy(host_blocks(data, lay)), lay, data.dtype)
