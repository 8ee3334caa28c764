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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distal.errors import ShapeError
from distal.format.format import Format
from distal.lower.plan import Group, Launch, Operand, Plan, Proj
from distal.lower.plan import Privilege as PlanPrivilege
from distal.redist.formats import Layout, layout
from distal.redist.mesh import Mesh
from distal.redist.simulate import offsets

from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import from_numpy, zeros
from ._registry import register_kernel
from ._start import legate_runtime, processor_count
from ._store import Store, legate_type, tile_of, to_numpy, wrap

__all__ = ["FormatStore", "adopt", "device_grid", "from_store", "holder_index", "native", "place"]


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
    index_launch(_copy_kernel(), factors,
                 [Arg(store, Privilege.READ, (*([1] * (store.ndim - 1)), size), (*src_map, Affine(None, 0, 0))),
                  Arg(out, Privilege.WRITE, (*([1] * len(out_grid)), size), (*out_map, Affine(None, 0, 0)))])
    return out


def _copy_blocks(lay: Layout, source: Store, source_index: Callable[[Layout, tuple[int, ...]], tuple[int, ...]],
                 out: Store, out_index: Callable[[Layout, tuple[int, ...]], tuple[int, ...]]) -> None:
    key = _copy_kernel()
    binding = _binding(lay)
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

        Launches assemble it from the blocks (`gather`); nothing goes
        through the host. Plans whose tiling is the format's never ask for it.
        """
        if self._global is None:
            self._global = gather(self)
        return self._global


def host_blocks(array: np.ndarray, lay: Layout) -> np.ndarray:
    """The device-major array of ``array`` laid out as ``lay`` says (NumPy, no Legate)."""
    grid = block_grid(lay)
    padded = lay.pad(array)
    out = np.zeros((*grid, math.prod(lay.tile)), dtype=array.dtype)
    t = lay.type
    for device in lay.holders():
        off = offsets(t, lay.mesh, device)
        block = padded[tuple(slice(o, o + n) for o, n in zip(off, lay.tile))]
        out[holder_index(lay, device)] = block.reshape(-1)
    return out


Box = tuple[tuple[int, int], ...]


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


def _binding(lay: Layout) -> dict[tuple[int, ...], int]:
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


def place_store(store: Store, fmt: Format) -> FormatStore:
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
    blocks = zeros((*grid, max(size, 1)), store.dtype, tile=(*([1] * len(grid)), max(size, 1)))
    if 0 in shape:
        return FormatStore(blocks, lay, store.dtype)
    key = _kernel("scatter", _kernel_tile(lay))
    binding = _binding(lay)
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
        store, shape = from_numpy(data.reshape(data.shape or (1,))), data.shape
    else:
        store, shape = found
    if len(shape) != fmt.order:
        raise ShapeError(
            f"expected a {fmt.order}-dimensional array for format '{fmt}', but found shape {shape}"
        )
    return place_store(store, fmt)


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
    if shape and not handle.transformed:
        runtime.issue_copy(own.handle, handle)
    else:
        # a view (a slice, a transpose) or a scalar: Legate's copy takes neither; one task copies it
        source = wrap(handle if shape else handle.promote(0, 1), kind)
        index_launch(_copy_kernel(), (1,), [Arg(source, Privilege.READ), Arg(own, Privilege.WRITE)])
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
    binding = _binding(lay)
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
    out by launches (`from_store`); anything else places ``data()`` (a
    callable giving the tensor's NumPy data).
    """
    kind = np.dtype(dtype)
    if isinstance(held, FormatStore) and held.format == fmt and held.dtype == kind and held.shape == shape:
        return held
    inner = getattr(held, "store", None)
    if isinstance(inner, Store) and inner.dtype == kind and inner.shape == (shape or (1,)):
        return from_store(inner, fmt)
    return place(np.asarray(data(), dtype=kind), fmt)


# -- plans reading and writing placed tensors in place ----------------------------------------


def _ends(p: Proj, lower: tuple[int, ...], upper: tuple[int, ...]) -> tuple[int, int]:
    if p.dim is None:
        return p.offset, p.offset
    a, b = p.coeff * lower[p.dim] + p.offset, p.coeff * (upper[p.dim] - 1) + p.offset
    return min(a, b), max(a, b)


def _affine(p: Proj) -> Affine:
    return Affine(None, 0, p.offset) if p.dim is None else Affine(p.dim, p.coeff, p.offset)


def block_projection(plan: Plan, group: Group, launch: Launch, op: Operand, lay: Layout) -> tuple[Affine, ...] | None:
    """The projection of ``op``'s tiles onto the device blocks of a tensor placed by ``lay``, or None.

    There is one when the launch's tile of the tensor *is* a device's block:
    the format is `native`, every dimension a machine dimension partitions is
    cut into the format's tiles with colors within the machine dimension,
    and every other dimension is taken whole. Along a broadcast machine
    dimension a read takes the copy of the launch point's own processor
    when a distributed launch dimension runs along it (else copy 0); a
    fixed dimension has only its face.
    """
    if not native(lay) or launch.volume == 0:
        return None
    dist = lay.format.levels[0]
    mesh = lay.mesh
    order = len(lay.shape)
    tile = op.tile if op.tile is not None else lay.shape
    projs = op.projection if op.projection is not None else tuple(Proj(None, 0, 0) for _ in range(order))
    by_dim: dict[int, Proj] = {}
    for d in range(order):
        k = dist.machine_dim_of(d)
        parts = mesh.shape[k] if k is not None else 1
        lo, hi = _ends(projs[d], launch.lower, launch.upper)
        if parts > 1:
            if tile[d] != lay.tile[d] or lo < 0 or hi >= parts:
                return None
            by_dim[d] = projs[d]
        elif tile[d] < lay.shape[d] or lo != 0 or hi != 0:
            return None
    fixed = {a for a, _ in lay.fixed}
    lead: list[Affine] = []
    for axis, (name, size) in enumerate(mesh.axes):
        dim = dist.tensor_dim_of(axis)
        if name in fixed or size == 1:
            lead.append(Affine(None, 0, 0))
        elif dim is not None:
            lead.append(_affine(by_dim[dim]))
        else:
            lead.append(_own_copy(plan, group, launch, op, lay, axis, size))
    return (*lead, Affine(None, 0, 0))


def _own_copy(plan: Plan, group: Group, launch: Launch, op: Operand, lay: Layout, k: int, size: int) -> Affine:
    """Which copy along broadcast machine dimension ``k`` a launch reads: its processor's, where it can."""
    if op.privilege is not PlanPrivilege.READ or plan.machine is None or plan.machine != lay.format.machine:
        return Affine(None, 0, 0)
    for ld, slot in enumerate(plan.processor_slots[: group.distributed]):
        if slot == k and 0 <= launch.lower[ld] and launch.upper[ld] <= size:
            return Affine(ld)
    return Affine(None, 0, 0)


_Key = tuple[Operand, tuple[int, ...], tuple[int, ...]]


def _key(launch: Launch, op: Operand) -> _Key:
    """An operand of a launch, by value (the runtime rebuilds some launches, e.g. for partial sums)."""
    return (op, launch.lower, launch.upper)


@dataclass(eq=False)
class PlacedOperand:
    """A plan's operand read or written in place in a tensor's device blocks.

    ``projections`` gives, per operand of every launch, the projection onto
    the block store (`block_projection`); ``sizes`` the box each launch
    point of a group gets, so that its block (flat, padded) is handed to the
    kernel as the tile it expects (`BlockTiles`).
    """

    held: FormatStore
    projections: dict[_Key, tuple[Affine, ...]]  # by `_key(launch, operand)`

    @property
    def block(self) -> tuple[int, ...]:
        blocks = self.held.blocks
        return (*([1] * (blocks.ndim - 1)), blocks.shape[-1])

    def arg(self, launch: Launch, op: Operand, privilege: Privilege) -> Arg:
        """The launch argument: the block store, one block per point."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE  # the kernel writes the box, the padding keeps its zeros
        return Arg(self.held.blocks, privilege, self.block, self.projections[_key(launch, op)])

    def pinned(self, launch: Launch, op: Operand, point: tuple[int, ...],
               privilege: Privilege) -> tuple[Store, Privilege]:
        """The block of one launch point, as a store of its own (pinned launches)."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE
        color = tuple(a.at(point) for a in self.projections[_key(launch, op)])
        return tile_of(self.held.blocks, self.block, color), privilege


def placed_operand(plan: Plan, n: int, lay: Layout, held: Callable[[], FormatStore]) -> PlacedOperand | None:
    """Tensor ``n`` of ``plan``, laid out by ``lay``, as an operand read in its device blocks.

    None where some launch's tile is not a block (`block_projection`);
    otherwise ``held()`` gives the blocks.
    """
    projections: dict[_Key, tuple[Affine, ...]] = {}
    for group, launch in plan.launches():
        for op in launch.operands:
            if op.tensor != n:
                continue
            proj = block_projection(plan, group, launch, op, lay)
            if proj is None:
                return None
            if projections.setdefault(_key(launch, op), proj) != proj:
                return None  # two launches alike but for their group: not worth telling apart
    return PlacedOperand(held(), projections) if projections else None


@dataclass(eq=False)
class BlockTiles:
    """A group's kernel whose placed operands arrive as device blocks: each is viewed as the point's tile.

    ``tiles[position]`` is the padded tile of the operand at that argument
    position; ``boxes[point][position]`` the extents of the point's tile.
    """

    kernel: Any
    tiles: dict[int, tuple[int, ...]]
    boxes: dict[tuple[int, ...], dict[int, tuple[int, ...]]]

    def __call__(self, point: tuple[int, ...], *arrays: Any) -> None:
        args = list(arrays)
        sizes = self.boxes[tuple(int(x) for x in point)]
        for pos, tile in self.tiles.items():
            view = args[pos].reshape(tile)
            args[pos] = view[tuple(slice(0, n) for n in sizes[pos])]
        self.kernel(point, *args)


def block_tiles(plan: Plan, group: Group, kernel: Any, placed: dict[int, PlacedOperand]) -> Any:
    """``kernel`` wrapped as `BlockTiles` for the placed operands of ``group`` (``kernel`` itself if none)."""
    tiles: dict[int, tuple[int, ...]] = {}
    boxes: dict[tuple[int, ...], dict[int, tuple[int, ...]]] = {}
    for launch in group.launches:
        for pos, op in enumerate(launch.operands):
            if op.tensor not in placed:
                continue
            info = plan.tensors[op.tensor]
            tiles[pos] = placed[op.tensor].held.layout.tile
            for p in launch.points():
                box = op.box(p, info.shape)
                boxes.setdefault(p, {})[pos] = tuple(hi - lo for lo, hi in box)
    if not tiles:
        return kernel
    return BlockTiles(kernel, tiles, boxes)


def replicate(held: FormatStore) -> None:
    """Copy every block at coordinate 0 of the broadcast machine dimensions to the other copies, in place.

    A plan writes one copy of a tensor whose format broadcasts; this makes
    the rest (one pinned launch per other copy, on the CPU bound to it).
    """
    lay = held.layout
    mesh = lay.mesh
    dist = lay.format.levels[0] if len(lay.format.levels) == 1 else None
    if dist is None:
        return
    fixed = {a for a, _ in lay.fixed}
    spread = [k for k, (name, size) in enumerate(mesh.axes)
              if name not in fixed and size > 1 and dist.tensor_dim_of(k) is None]
    if not spread:
        return
    key = _copy_kernel()
    binding = _binding(lay)
    block = (*([1] * (held.blocks.ndim - 1)), held.blocks.shape[-1])
    for device in lay.holders():
        here = holder_index(lay, device)
        there = tuple(0 if k in spread else c for k, c in enumerate(here))
        if here == there:
            continue
        point_launch(key, [(tile_of(held.blocks, block, (*there, 0)), Privilege.READ),
                           (tile_of(held.blocks, block, (*here, 0)), Privilege.WRITE)],
                     device or (0,), binding.get(device, 0))


_COPY: list[int] = []


def _copy_kernel() -> int:
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

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (waits for the launches that write it)."""
        return to_numpy(self.store).reshape(self.shape)


def storage_of(store: Store | None, shape: tuple[int, ...], fmt: Format | None,
               data: np.ndarray | None = None) -> TensorStore | FormatStore:
    """A tensor's storage from ``store`` (its whole data; shape (1,) when 0-d) or, without one, ``data``.

    With a concrete format the data is placed by it (`place_store`), otherwise kept as one store.
    """
    if store is None:
        assert data is not None
        store = from_numpy(np.asarray(data).reshape(shape or (1,)))
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
