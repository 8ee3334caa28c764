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
`FormatStore.store`). A tensor without a format (or on a symbolic
machine) keeps its data as one store, a `TensorStore`. Nothing here copies
through the host except `to_numpy` and `place` of a NumPy array (one copy
in).

This module holds the storage types and the placement statement that
fills them; the other jobs are elsewhere: which device holds which block
(`_holders`), the factor grid redistribution runs on (`_factor_grid`),
arrays of other Legate libraries taken in (`_interop`), and a tensor's
data life cycle, handing out its Legate data interface included
(`_tensor_data`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from distal.errors import ShapeError
from distal.format.format import Bounds, Format
from distal.format.layout import Layout, layout
from distal.notation.storage import HostStorage, Storage

from ._holders import block_grid, bound_cpus, holder_box, holder_index
from ._interop import legate_input
from ._launch import Privilege, point_launch
from ._make import from_numpy, zeros
from ._registry import register_kernel
from ._store import Store, ensure_room, tile_of, to_numpy, wrap
from ._target import target_scope

__all__ = [
    "MIRROR_MAX",
    "FormatStore",
    "TensorStore",
    "adopt",
    "as_storage",
    "forget_mirror",
    "from_store",
    "gather",
    "native",
    "place",
    "place_store",
    "storage_of",
    "with_mirror",
]


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
    mirror: np.ndarray | None = field(default=None, repr=False)  # the host array it was placed from (`with_mirror`)

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
        boxes: dict[Bounds, tuple[int, ...]] = {}
        for device in lay.holders():
            box = holder_box(lay, device)
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
        for device in lay.holders():
            block = host[holder_index(lay, device)].reshape(lay.tile)
            off = lay.offset(device)
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


def _identity_positions(lay: Layout) -> bool:
    """Whether every element of ``lay`` sits at its own index in the padded tensor (padding only at the ends)."""
    return all(bool(np.array_equal(p, np.arange(n))) for p, n in zip(lay.positions(), lay.shape))


def _rows_in_order(boxes: dict[Bounds, tuple[int, ...]], grid: tuple[int, ...], shape: tuple[int, ...],
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


def _global_view(store: Store, box: Bounds) -> Store:
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
    seen: dict[Bounds, int] = {}
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
    done: set[Bounds] = set()
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
    placed = place(np.asarray(source, dtype=kind), fmt)
    return with_mirror(placed, held.held()) if isinstance(held, HostStorage) else placed


# host arrays of at most this many bytes stay beside the store placed from them (`with_mirror`): an eager dt.einsum
# on placed tensors read them back from Legate at every call (two 3.3 MB operands: 1.6 ms of a 5 ms call; the
# 134 MB operand of ijab,jb->ia at n = 64, 2.6 ms of 7.8)
MIRROR_MAX = 256 << 20
_Held = TypeVar("_Held", bound="FormatStore | TensorStore")


def with_mirror(held: _Held, source: np.ndarray) -> _Held:
    """`held`, just placed from the host array `source`, keeping `source` beside it (read-only) as its mirror:
    the tensor's data on the host, for readers there (`distal.notation.storage.host_mirror`), until a plan
    writes the store (`forget_mirror`, at the start of every run on Legate whose output it is). Only an array
    that owns its memory (distal's own copy, never a view of the user's data), of the store's shape and dtype,
    up to `MIRROR_MAX` bytes."""
    if (isinstance(source, np.ndarray) and source.flags.owndata and source.nbytes <= MIRROR_MAX
            and tuple(source.shape) == tuple(held.shape) and source.dtype == held.dtype):
        view = source.view()
        view.flags.writeable = False
        held.mirror = view
    return held


def forget_mirror(held: Any) -> None:
    """Drop `held`'s host mirror (a plan is about to write its store)."""
    if getattr(held, "mirror", None) is not None:
        held.mirror = None


# -- tensors' storage without a format ------------------------------------------------------------


@dataclass(eq=False)
class TensorStore:
    """A tensor's data on Legate: the store and the tensor's shape (a 0-d tensor uses shape (1,))."""

    store: Store
    shape: tuple[int, ...]
    mirror: np.ndarray | None = field(default=None, repr=False)  # the host array it was placed from (`with_mirror`)

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
