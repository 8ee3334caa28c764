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

from ._launch import Affine, Arg, Privilege, index_launch
from ._make import from_numpy
from ._registry import register_kernel
from ._start import legate_runtime
from ._store import Store, legate_type, to_numpy, wrap

__all__ = ["FormatStore", "adopt", "device_grid", "from_store", "holder_index", "native", "place"]


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
        """The whole global tensor as one store (made on first use; a 0-d tensor has shape (1,)).

        One launch assembles it from the blocks where the format allows
        (`native`); otherwise it goes through the host.
        """
        if self._global is None:
            if native(self.layout):
                self._global = _gather(self)
            else:
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


# -- the global tensor <-> blocks, as launches ----------------------------------------------


def native(lay: Layout) -> bool:
    """Whether one launch can move data between the blocks and the global tensor's store.

    It can for a flat format whose partitioning machine dimensions have at
    most one prime factor (2, 3, 5, ...: the color is then a launch
    coordinate) and a tensor without empty dimensions.
    """
    fmt = lay.format
    if len(fmt.levels) != 1 or not lay.shape or 0 in lay.shape:
        return False
    names = lay.mesh.names
    return all(len(lay.mesh.factors_of(names[k])) <= 1 for k in fmt.levels[0].partitioned)


def _global_projection(lay: Layout) -> tuple[Affine, ...]:
    """Each tensor dimension's tile color as a map of a launch point over the factor grid."""
    dist = lay.format.levels[0]
    mesh = lay.mesh
    out = []
    for d in range(len(lay.shape)):
        k = dist.machine_dim_of(d)
        facs = mesh.factors_of(mesh.names[k]) if k is not None else ()
        out.append(Affine(facs[0].index) if facs else Affine(None, 0, 0))
    return tuple(out)


def _block_arg(blocks: Store, privilege: Privilege) -> Arg:
    n = blocks.ndim - 1
    return Arg(blocks, privilege, (*([1] * n), blocks.shape[-1]),
               (*(Affine(f) for f in range(n)), Affine(None, 0, 0)))


def _global_arg(store: Store, lay: Layout, privilege: Privilege) -> Arg:
    tile = lay.format.tile_shape(lay.shape)
    colors = tuple(max(1, -(-p // t)) for p, t in zip(lay.padded, tile, strict=True))
    return Arg(store, privilege, tile, _global_projection(lay), colors)


_KERNELS: dict[tuple[str, tuple[int, ...]], int] = {}


def _kernel(kind: str, tile: tuple[int, ...]) -> int:
    key = _KERNELS.get((kind, tile))
    if key is None:
        if kind == "gather":
            def gather(point: tuple[int, ...], block: np.ndarray, out: np.ndarray) -> None:
                out[...] = block.reshape(tile)[tuple(slice(0, n) for n in out.shape)]

            key = register_kernel(gather, "blocks to tensor")
        else:
            def scatter(point: tuple[int, ...], part: np.ndarray, block: np.ndarray) -> None:
                full = np.zeros(tile, dtype=block.dtype)
                full[tuple(slice(0, n) for n in part.shape)] = part
                block[...] = full.reshape(block.shape)

            key = register_kernel(scatter, "tensor to blocks")
        _KERNELS[(kind, tile)] = key
    return key


def _gather(held: FormatStore) -> Store:
    """The global store, written by one launch: one holder per tile (broadcast axes at 0)."""
    lay = held.layout
    out = wrap(legate_runtime().create_store(legate_type(held.dtype), lay.shape), held.dtype)
    faces = {a for a, _ in lay.fixed}
    grid = tuple(1 if f.axis in faces or not _partitions(lay, f.axis) else f.size for f in lay.mesh.factors)
    index_launch(_kernel("gather", lay.tile), grid or (1,),
                 [_block_arg(held.blocks, Privilege.READ), _global_arg(out, lay, Privilege.WRITE)])
    return out


def _partitions(lay: Layout, axis: str) -> bool:
    k = lay.mesh.names.index(axis)
    return k in lay.format.levels[0].partitioned


def from_store(store: Store, fmt: Format) -> FormatStore:
    """Lay out the data of ``store`` (the global tensor, e.g. a plan's output) by ``fmt``.

    One launch where `native` allows (every holding device reads its tile);
    otherwise through the host.
    """
    lay = layout(fmt, store.shape)
    if not native(lay):
        return place(to_numpy(store), fmt)
    grid = device_grid(lay.mesh, lay)
    blocks = wrap(legate_runtime().create_store(legate_type(store.dtype), (*grid, math.prod(lay.tile))),
                  store.dtype)
    index_launch(_kernel("scatter", lay.tile), grid,
                 [_global_arg(store, lay, Privilege.READ), _block_arg(blocks, Privilege.WRITE)])
    return FormatStore(blocks, lay, store.dtype, store)


def adopt(held: Any, data: Any, fmt: Format, dtype: Any, shape: tuple[int, ...]) -> FormatStore:
    """``held`` (a tensor's storage) as a `FormatStore` in ``fmt``.

    A `FormatStore` in ``fmt`` is used as it is; an object with a ``store``
    (a `Store` of the tensor's shape, as the lowering keeps outputs) is laid
    out by launches (`from_store`); anything else places ``data()`` (a
    callable giving the tensor's NumPy data).
    """
    kind = np.dtype(dtype)
    if isinstance(held, FormatStore) and held.format == fmt and held.dtype == kind and held.shape == shape:
        return held
    inner = getattr(held, "store", None)
    if isinstance(inner, Store) and inner.dtype == kind and inner.shape == shape and shape:
        return from_store(inner, fmt)
    return place(np.asarray(data(), dtype=kind), fmt)
