"""Tensor data on Legate laid out by its format: one block per holding device.

A `FormatStore` keeps a tensor's data as the format says (paper section
3.2): a store of shape ``(*grid, L)`` whose leading dimensions are the
machine's dimensions, all levels (`block_grid`), and whose last dimension
is one device's block, flattened: the format's padded nominal tile
(``Layout.tile``, L elements).

* A partitioned tensor dimension: each device holds its tile, edge tiles
  padded with zeros to the nominal tile.
* A broadcast machine dimension ``*``: every device along it holds its own
  copy of the tile (the data is replicated in the store).
* A fixed machine dimension: only the face holds blocks; the store has
  extent 1 along that dimension.

The blocks are written by the placement statement of paper section 5.3,
run as one launch per holding device pinned to the CPU `Machine.bind` gives
it (`place_store`). Plans read and write the blocks in place where their
tiles are the format's (`block_projection`, `PlacedOperand`, `BlockTiles`);
otherwise through the global tensor, assembled by launches (`gather`,
`FormatStore.store`). Redistribution programs run on the factor grid
(`device_grid`, one dimension per prime factor; `as_factor_grid`,
`from_factor_grid`). Nothing here copies through the host except
`to_numpy` and `place` of a NumPy array (one copy in).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distal.errors import ShapeError
from distal.format.format import Format
from distal.notation.storage import HostStorage, Storage
from distal.redist.formats import Layout, layout
from distal.redist.mesh import Mesh
from distal.redist.simulate import offsets

from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import from_numpy, zeros
from ._registry import register_kernel
from ._start import legate_runtime, processor_count
from ._store import Store, ensure_room, legate_type, tile_of, to_numpy, wrap
from ._target import target_scope

__all__ = [
    "FormatStore",
    "TensorStore",
    "adopt",
    "as_factor_grid",
    "block_grid",
    "data_interface",
    "device_grid",
    "from_factor_grid",
    "from_store",
    "gather",
    "holder_box",
    "holder_index",
    "legate_input",
    "native",
    "place",
    "place_store",
    "storage_of",
]


def device_grid(mesh: Mesh, lay: Layout | None = None) -> tuple[int, ...]:
    """The leading store dimensions: one per factor axis of ``mesh`` (extent 1 on fixed faces).

    A mesh of one device has the grid ``(1,)``.
    """
    fixed = {a for a, _ in lay.fixed} if lay is not None else set()
    grid = tuple(1 if f.axis in fixed else f.size for f in mesh.factors)
    return grid or (1,)


def factor_index(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index of ``device``'s block in a store of the factor grid (`device_grid`), as redistribution keeps it."""
    mesh = lay.mesh
    if not mesh.factors:
        return (0,)
    fixed = {a for a, _ in lay.fixed}
    coords = mesh.factor_coords(device)
    return tuple(0 if f.axis in fixed else c for f, c in zip(mesh.factors, coords, strict=True))


def block_grid(lay: Layout) -> tuple[int, ...]:
    """The leading dimensions of a `FormatStore`'s blocks: one per machine dimension (all levels),
    of its size, or 1 where the format fixes it (only the face holds blocks)."""
    fixed = {a for a, _ in lay.fixed}
    return tuple(1 if name in fixed else size for name, size in lay.mesh.axes)


def holder_index(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index in a `FormatStore`'s leading dimensions of the block of ``device`` (a machine coordinate)."""
    fixed = {a for a, _ in lay.fixed}
    return tuple(0 if name in fixed else c for name, c in zip(lay.mesh.names, device, strict=True))


def _composite(mesh: Mesh) -> bool:
    return any(len(mesh.factors_of(n)) > 1 for n in mesh.names)


def as_factor_grid(held: FormatStore) -> Store:
    """``held``'s blocks in the factor grid the redistribution programs run on (`device_grid`).

    The blocks themselves where both grids agree (every machine dimension
    of prime size, none of size 1); otherwise a local copy: one launch where
    every machine dimension is prime or 1, one pinned copy per holding
    device (on its bound CPU) where one has a composite size.
    """
    return _regrid(held.blocks, held.layout, to_factors=True)


def from_factor_grid(store: Store, lay: Layout) -> Store:
    """Blocks in the factor grid of ``lay``'s mesh (a redistribution's result) as a `FormatStore`'s blocks."""
    return _regrid(store, lay, to_factors=False)


def _regrid(store: Store, lay: Layout, to_factors: bool) -> Store:
    mesh = lay.mesh
    factors, machine = device_grid(mesh, lay), block_grid(lay)
    if factors == machine:
        return store
    size = store.shape[-1]
    out_grid = factors if to_factors else machine
    if _composite(mesh):
        out = zeros((*out_grid, size), store.dtype, tile=(*([1] * len(out_grid)), size))
        if to_factors:
            _copy_blocks(lay, store, holder_index, out, factor_index)
        else:
            _copy_blocks(lay, store, factor_index, out, holder_index)
        return out
    # every machine dimension is prime or 1: factor k is machine dimension axis_of[k]
    fixed = {a for a, _ in lay.fixed}
    by_axis = {mesh.names.index(f.axis): k for k, f in enumerate(mesh.factors)}
    onto_machine = [Affine(None, 0, 0) if name in fixed or k not in by_axis else Affine(by_axis[k])
                    for k, name in enumerate(mesh.names)]
    onto_factors = [Affine(k) for k in range(len(factors))]
    out = wrap(legate_runtime().create_store(legate_type(store.dtype), (*out_grid, size)), store.dtype)
    src_map, out_map = (onto_machine, onto_factors) if to_factors else (onto_factors, onto_machine)
    if not mesh.factors:
        src_map, out_map = ([Affine(None, 0, 0)] * (store.ndim - 1)), [Affine(None, 0, 0)] * len(out_grid)
    index_launch(copy_kernel(), factors,
                 [Arg(store, Privilege.READ, (*([1] * (store.ndim - 1)), size), (*src_map, Affine(None, 0, 0))),
                  Arg(out, Privilege.WRITE, (*([1] * len(out_grid)), size), (*out_map, Affine(None, 0, 0)))])
    return out


def _copy_blocks(lay: Layout, source: Store, source_index: Callable[[Layout, tuple[int, ...]], tuple[int, ...]],
                 out: Store, out_index: Callable[[Layout, tuple[int, ...]], tuple[int, ...]]) -> None:
    key = copy_kernel()
    binding = bound_cpus(lay)
    src_block = (*([1] * (source.ndim - 1)), source.shape[-1])
    out_block = (*([1] * (out.ndim - 1)), out.shape[-1])
    for device in lay.holders():
        point_launch(key, [(tile_of(source, src_block, (*source_index(lay, device), 0)), Privilege.READ),
                           (tile_of(out, out_block, (*out_index(lay, device), 0)), Privilege.WRITE)],
                     device, binding.get(device, 0))


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
    def nbytes(self) -> int:
        """Bytes of the tensor's elements (`Storage`; the blocks may hold more: copies, padding)."""
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def on_legate(self) -> bool:
        """Always True (`Storage`): the blocks are a Legate store."""
        return True

    def device_blocks(self) -> dict[tuple[int, ...], np.ndarray]:
        """Every holding device's block (machine coordinate to padded tile), copied out."""
        host = to_numpy(self.blocks)
        tile = self.layout.tile
        return {d: host[holder_index(self.layout, d)].reshape(tile) for d in self.layout.holders()}

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the tensor's data (waits for the launches that write it).

        The blocks are copied to the host once. When they are the tensor's
        rows in order (only the first dimension partitioned, no copies), that
        copy is the result (a view of it, no further pass); otherwise each
        distinct block is written once into its box of the result (padding
        cropped by slicing). Layouts whose elements are not at their own
        padded positions (hierarchical formats) go through `Layout.crop`.
        """
        lay = self.layout
        host = to_numpy(self.blocks)
        if not lay.shape or 0 in lay.shape or not _identity_positions(lay):
            return self._via_padded(host)
        shape, tile = lay.shape, lay.tile
        t = lay.type
        boxes: dict[Box, tuple[int, ...]] = {}
        for device in lay.holders():
            off = offsets(t, lay.mesh, device)
            box = tuple((o, min(o + n, e)) for o, n, e in zip(off, tile, shape))
            if all(lo < hi for lo, hi in box):
                boxes.setdefault(box, holder_index(lay, device))
        flat = host.reshape(-1, host.shape[-1]) if host.ndim > 1 else host.reshape(1, -1)
        grid = host.shape[:-1]
        if _rows_in_order(boxes, grid, shape, tile):
            return host.reshape(-1)[:math.prod(shape)].reshape(shape)
        covered = sum(math.prod(hi - lo for lo, hi in box) for box in boxes) == math.prod(shape)
        out = np.empty(shape, dtype=self.dtype) if covered else np.zeros(shape, dtype=self.dtype)
        for box, index in boxes.items():
            block = flat[int(np.ravel_multi_index(index, grid)) if grid else 0].reshape(tile)
            out[tuple(slice(lo, hi) for lo, hi in box)] = block[tuple(slice(0, hi - lo) for lo, hi in box)]
        return out

    def _via_padded(self, host: np.ndarray) -> np.ndarray:
        lay = self.layout
        padded = np.zeros(lay.padded, dtype=self.dtype)
        t = lay.type
        for device in lay.holders():
            block = host[holder_index(lay, device)].reshape(lay.tile)
            off = offsets(t, lay.mesh, device)
            padded[tuple(slice(o, o + n) for o, n in zip(off, lay.tile))] = block
        return lay.crop(padded)

    @property
    def store(self) -> Store:
        """The whole global tensor as one store (made on first use; a 0-d tensor has shape (1,)).

        Launches assemble it from the blocks (`gather`); nothing goes
        through the host. Plans whose tiling is the format's never ask for it.
        """
        if self._global is None:
            self._global = gather(self)
        return self._global


Box = tuple[tuple[int, int], ...]


def _identity_positions(lay: Layout) -> bool:
    """Whether every element of ``lay`` sits at its own index in the padded tensor (padding only at the ends)."""
    return all(bool(np.array_equal(p, np.arange(n))) for p, n in zip(lay.positions(), lay.shape))


def _rows_in_order(boxes: dict[Box, tuple[int, ...]], grid: tuple[int, ...], shape: tuple[int, ...],
                   tile: tuple[int, ...]) -> bool:
    """Whether the flat blocks, in order, are the tensor's rows: block k holds rows [k*tile0, (k+1)*tile0),
    whole along every other dimension, one block per device and no copies."""
    if any(t != e for t, e in zip(tile[1:], shape[1:])) or len(boxes) != -(-shape[0] // tile[0]):
        return False
    for box, index in boxes.items():
        k = int(np.ravel_multi_index(index, grid)) if grid else 0
        if box[0][0] != k * tile[0]:
            return False
    return True


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


def _global_view(store: Store, box: Box) -> Store:
    """The part ``box`` of a global store (a 0-d tensor's store has shape (1,))."""
    handle = store.handle
    for d, (lo, hi) in enumerate(box):
        handle = handle.slice(d, slice(lo, hi))
    return wrap(handle, store.dtype)


def _kernel_tile(lay: Layout) -> tuple[int, ...]:
    return lay.tile or (1,)


def _shared_boxes(lay: Layout, itemsize: int) -> int:
    """Bytes of the boxes of the global tensor that more than one device reads when ``lay`` is placed.

    Legate maps each box a task reads to one instance covering it; a box read by several devices
    (a broadcast machine dimension) is in general not an instance the global store already has (a
    copy onto Legate splits it among the processors), so it is made, next to the store and the
    blocks (measured: placing 64 MB by ``xyz -> *`` on 2 processors made a third 64 MB instance).
    """
    seen: dict[Box, int] = {}
    for device in lay.holders():
        box = holder_box(lay, device)
        if all(lo < hi for lo, hi in box):
            seen[box] = seen.get(box, 0) + 1
    return sum(math.prod(hi - lo for lo, hi in box) * itemsize for box, n in seen.items() if n > 1)


def place_store(store: Store, fmt: Format, staged: bool = False) -> FormatStore:
    """The placement statement of ``fmt`` (paper section 5.3) run on ``store``, the global tensor.

    One launch per holding device, pinned to the CPU `Machine.bind` gives
    it: the device reads its box of the tensor (`holder_box`: its tile,
    level by level; the same box on every device along a broadcast machine
    dimension; only devices on a fixed face hold one) and writes it at the
    start of its block, padding with zeros. Nothing goes through the host.
    """
    shape = store.shape if fmt.order else ()
    lay = layout(fmt, shape)
    grid = block_grid(lay)
    size = math.prod(lay.tile)
    ensure_room(f"the blocks of a tensor of shape {list(shape)} placed by {fmt}"
                + (" (and the boxes of it the devices read, each one instance, as the format copies them)"
                   if (shared := 0 if staged else _shared_boxes(lay, store.dtype.itemsize)) else ""),
                math.prod(grid) * max(size, 1) * store.dtype.itemsize + shared)
    blocks = zeros((*grid, max(size, 1)), store.dtype, tile=(*([1] * len(grid)), max(size, 1)))
    if 0 in shape:
        return FormatStore(blocks, lay, store.dtype)
    key = _kernel("scatter", _kernel_tile(lay))
    binding = bound_cpus(lay)
    block = (*([1] * len(grid)), max(size, 1))
    for device in lay.holders():
        box = holder_box(lay, device) or ((0, 1),)
        if any(hi <= lo for lo, hi in box):
            continue  # all padding: the zeros are already there
        point_launch(key, [(_global_view(store, box), Privilege.READ),
                           (tile_of(blocks, block, (*holder_index(lay, device), 0)), Privilege.WRITE)],
                     device or (0,), binding.get(device, 0))
    return FormatStore(blocks, lay, store.dtype)


def place(array: Any, fmt: Format) -> FormatStore:
    """Put ``array`` on Legate laid out by ``fmt``: the placement statement run as pinned launches.

    A NumPy array (or any array-like) is copied once into a Legate store
    (`from_numpy`); an object with ``__legate_data_interface__`` (a
    cuPyNumeric array) is read where it lives, without a host copy. Then
    `place_store` cuts it into the devices' blocks.
    ``place(a, fmt).to_numpy()`` equals ``a`` exactly.
    """
    found = legate_input(array)
    if found is None:
        data = np.asarray(array)
        # copied in by one processor, the store is one instance that every device's box is read from
        # (copied in by two, a box spanning both halves, e.g. a broadcast one, was made again)
        with target_scope("cpu", slice(0, 1)):
            store, shape = from_numpy(data.reshape(data.shape or (1,))), data.shape
        staged = True
    else:
        store, shape = found
        staged = False
    if len(shape) != fmt.order:
        raise ShapeError(
            f"expected a {fmt.order}-dimensional array for format '{fmt}', but found shape {shape}"
        )
    return place_store(store, fmt, staged)


def legate_input(array: Any) -> tuple[Store, tuple[int, ...]] | None:
    """A `Store` distal owns holding the data of an object with ``__legate_data_interface__``, and its shape.

    The data is copied by Legate (``issue_copy``), store to store, so the
    caller's array stays its own and nothing goes through the host. A 0-d
    array gives a store of shape (1,). None for any other object.
    """
    if getattr(type(array), "__legate_data_interface__", None) is None:
        return None
    data = array.__legate_data_interface__
    fields = data.get("data", {}) if isinstance(data, dict) else {}
    if data.get("version") != 1 or len(fields) != 1:
        raise ShapeError(f"expected a Legate data interface of version 1 with one field, but found {data!r}")
    (source,) = fields.values()
    handle = source.data
    kind = _numpy_dtype(source.type)
    shape = tuple(int(n) for n in handle.shape)
    if math.prod(shape) == 0:
        return zeros(shape or (1,), kind), shape  # nothing to copy (or a scalar: below)
    runtime = legate_runtime()
    own = wrap(runtime.create_store(legate_type(kind), shape or (1,)), kind)
    if shape and not handle.transformed and not handle.has_scalar_storage:
        runtime.issue_copy(own.handle, handle)
    else:
        # a view (a slice, a transpose), a scalar or a one-element array held as a future (cuPyNumeric's
        # (1, 1)): Legate's copy takes none of them; one task copies it
        source = wrap(handle if shape else handle.promote(0, 1), kind)
        index_launch(copy_kernel(), (1,), [Arg(source, Privilege.READ), Arg(own, Privilege.WRITE)])
    return own, shape


def _numpy_dtype(kind: Any) -> np.dtype[Any]:
    from legate.core import types

    for name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64", "complex64", "complex128"):
        if kind == getattr(types, name):
            return np.dtype(name.rstrip("_"))
    raise ShapeError(f"expected a numeric Legate array, but found type {kind}")


# -- the global tensor <-> blocks ----------------------------------------------------------


def native(lay: Layout) -> bool:
    """Whether a launch's tile of the tensor can be a device's block, by an affine projection.

    It can for a flat format (the color of a tile along a partitioned
    dimension is then the block's coordinate along its machine dimension)
    and a tensor without empty dimensions. Plans read and write such tensors
    in place when their tiling is the format's (`distal.runtime._execute`);
    otherwise through `FormatStore.store`.
    """
    return len(lay.format.levels) == 1 and bool(lay.shape) and 0 not in lay.shape


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


def gather(held: FormatStore) -> Store:
    """The global tensor as one store, written from the blocks by pinned launches (no host copy).

    One launch per tile of the tensor, on the CPU bound to the first device
    holding it (broadcast copies at coordinate 0, fixed dimensions on their
    face), writing the tile's box of the new store.
    """
    lay = held.layout
    shape = lay.shape or (1,)
    out = zeros(shape, held.dtype)
    if 0 in lay.shape:
        return out
    key = _kernel("gather", _kernel_tile(lay))
    binding = bound_cpus(lay)
    block = (*([1] * (held.blocks.ndim - 1)), held.blocks.shape[-1])
    done: set[Box] = set()
    for device in lay.holders():
        box = holder_box(lay, device) or ((0, 1),)
        if box in done or any(hi <= lo for lo, hi in box):
            continue
        done.add(box)
        point_launch(key, [(tile_of(held.blocks, block, (*holder_index(lay, device), 0)), Privilege.READ),
                           (_global_view(out, box), Privilege.WRITE)],
                     device or (0,), binding.get(device, 0))
    return out


def from_store(store: Store, fmt: Format) -> FormatStore:
    """Lay out the data of ``store`` (the global tensor, e.g. a plan's output) by ``fmt`` (`place_store`)."""
    held = place_store(store, fmt)
    held._global = store
    return held


def adopt(held: Any, data: Any, fmt: Format, dtype: Any, shape: tuple[int, ...]) -> FormatStore:
    """``held`` (a tensor's storage) as a `FormatStore` in ``fmt``.

    A `FormatStore` in ``fmt`` is used as it is; an object with a ``store``
    (a `Store` of the tensor's shape, as the lowering keeps outputs) is laid
    out by launches (`from_store`); host data (`HostStorage`) is placed from
    a read-only view of itself (placement copies it onto Legate once);
    anything else places ``data()`` (a callable giving the tensor's NumPy
    data).
    """
    kind = np.dtype(dtype)
    if isinstance(held, FormatStore) and held.format == fmt and held.dtype == kind and held.shape == shape:
        return held
    inner = getattr(held, "store", None)
    if isinstance(inner, Store) and inner.dtype == kind and inner.shape == (shape or (1,)):
        return from_store(inner, fmt)
    source = held.view() if isinstance(held, HostStorage) else data()
    return place(np.asarray(source, dtype=kind), fmt)


_COPY: list[int] = []


def copy_kernel() -> int:
    if not _COPY:
        def copy(point: tuple[int, ...], src: np.ndarray, out: np.ndarray) -> None:
            out[...] = src.reshape(out.shape)

        _COPY.append(register_kernel(copy, "replicate block"))
    return _COPY[0]


# -- tensors' storage: unformatted, and handed to cuPyNumeric ----------------------------------


@dataclass(eq=False)
class TensorStore:
    """A tensor's data on Legate: the store and the tensor's shape (a 0-d tensor uses shape (1,))."""

    store: Store
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype[Any]:
        """The element type (`Storage`)."""
        return self.store.dtype

    @property
    def format(self) -> Format | None:
        """None (`Storage`): one undistributed store."""
        return None

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's elements (`Storage`)."""
        return math.prod(self.shape) * self.store.dtype.itemsize

    @property
    def on_legate(self) -> bool:
        """Always True (`Storage`)."""
        return True

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (waits for the launches that write it)."""
        return to_numpy(self.store).reshape(self.shape)


def as_storage(held: TensorStore | FormatStore) -> Storage:
    """``held`` as the notation layer's `Storage` (mypy checks here that both runtime stores implement it)."""
    return held


def storage_of(store: Store | None, shape: tuple[int, ...], fmt: Format | None,
               data: np.ndarray | None = None) -> TensorStore | FormatStore:
    """A tensor's storage from ``store`` (its whole data; shape (1,) when 0-d) or, without one, ``data``.

    With a concrete format the data is placed by it (`place_store`), otherwise kept as one store.
    """
    if store is None:
        assert data is not None
        array = np.asarray(data)
        # from_numpy: the attached host buffer and the store it is copied into both live in Legate's memory
        ensure_room(f"copying a {array.dtype} tensor of shape {list(shape)} onto Legate (its attached host data "
                    "and its store)", 2 * array.nbytes)
        store = from_numpy(array.reshape(shape or (1,)))
    if fmt is None or fmt.params:
        return TensorStore(store, shape)
    return place_store(store, fmt)


def data_interface(storage: TensorStore | FormatStore, shape: tuple[int, ...]) -> dict[str, Any]:
    """The Legate data interface of a copy of a tensor's data, made on Legate (no host copy).

    A placed tensor's blocks are gathered by launches (`gather`); an
    unformatted one's store is copied store to store.
    """
    from legate.core import LogicalArray

    if isinstance(storage, FormatStore):
        copy = gather(storage)
    else:
        runtime = legate_runtime()
        source = storage.store
        copy = wrap(runtime.create_store(legate_type(source.dtype), source.shape), source.dtype)
        if math.prod(source.shape) > 0:
            runtime.issue_copy(copy.handle, source.handle)
        else:
            copy = zeros(source.shape, source.dtype)
    handle = copy.handle.project(0, 0) if not shape else copy.handle
    return dict(LogicalArray.from_store(handle).__legate_data_interface__)
