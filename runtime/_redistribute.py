"""Running redistribution plans on Legate, one launch per collective.

A distributed array of type τ on a mesh is a store of shape ``(*grid, L)``:
one leading dimension per prime factor axis of the mesh (`device_grid`; a
tensor's `FormatStore` keeps one per machine dimension, and
`as_factor_grid` / `from_factor_grid` convert: a view, or one copy per
device where a machine dimension has a composite size),
and one device's block of ``localtype(τ)`` flattened (L = localsize(τ)).
Every step is an index launch over the device grid that writes each
device's block of a new store from blocks of the previous one, as the
step's per-device meaning says (`distal.redist.program`):

* dynslice: a device reads its own block and keeps a part of it;
* allgather, alltoall: a device reads the blocks of its group (the devices
  that differ from it only along the gathered or moved factor axes; one
  launch argument per member, each an affine projection of the launch
  point) and assembles its new block;
* allpermute: a device reads the one block it needs; when the source holder
  is an affine function of the device (factor axes matched size by size)
  one index launch does it, otherwise one pinned launch per device;
* relabel moves no data and launches nothing: it changes the program's
  frame (`CollectiveProgram.frames`, `distal.redist.frames`), the device that plays
  each point of the mesh. Until the final allpermute, a step runs at every
  point ``h`` and reads and writes the blocks of the devices playing the
  points it names (``frame[h]`` for its own): one pinned launch per point,
  since these are no affine maps of the launch point in general; the
  allpermute then reads each block from a device holding it in the frame and
  writes it where the mesh's own map wants it;
* repad (distal's own local step for formats that pad a dimension
  differently) moves the elements of a gathered dimension to new padded
  positions.

Before the programs, ``enter`` turns the source format's blocks into blocks
of the program's first type (a device off a fixed face copies its face
partner's block; unpartitioned dimensions are padded); after them, ``exit``
keeps the target format's blocks (only the face, cropped). No store made
along the way has blocks larger than the plan's height (checked).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from distal.errors import DistalError, FormatError
from distal.format.format import Format
from distal.redist.collectives import AllGather, AllPermute, AllToAll, DynSlice, Relabel
from distal.redist.formats import FormatProgram, Layout, Repad, plan_redistribution
from distal.redist.frames import Frame, identity, offsets_at, point_coords, point_index
from distal.redist.mesh import Mesh
from distal.redist.program import CollectiveProgram
from distal.redist.types import DistType, ref_factors

from ._factor_grid import as_factor_grid, device_grid, from_factor_grid
from ._holders import block_grid
from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import zeros
from ._registry import register_kernel
from ._start import legate_runtime, processor_count
from ._store import Store, ensure_room, legate_type, tile_of, wrap
from ._tensor_storage import FormatStore

__all__ = ["StepRecord", "check_room", "made_bytes", "redistribute", "run_plan_steps", "run_program"]

_lock = threading.Lock()
_kernels: dict[tuple[Any, ...], int] = {}


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One launch phase of an executed plan: what ran, and the block size it wrote."""

    label: str
    block: int
    launches: int


def _kernel(key: tuple[Any, ...], make: Callable[[], Callable[..., None]]) -> int:
    with _lock:
        found = _kernels.get(key)
        if found is None:
            found = register_kernel(make(), str(key[0]))
            _kernels[key] = found
        return found


def _new_store(grid: tuple[int, ...], size: int, dtype: np.dtype[Any]) -> Store:
    """A store of blocks that the next launch writes in full (every block)."""
    handle = legate_runtime().create_store(legate_type(dtype), (*grid, max(size, 1)))
    return wrap(handle, dtype)


def _block_arg(store: Store, privilege: Privilege, lead: Sequence[Affine]) -> Arg:
    size = store.shape[-1]
    tile = (*([1] * (store.ndim - 1)), size)
    return Arg(store, privilege, tile, (*lead, Affine(None, 0, 0)))


def _own(n: int) -> list[Affine]:
    return [Affine(f) for f in range(n)]


def _mixed(run: Sequence[int], coords: Sequence[int], sizes: Sequence[int]) -> int:
    """Index of a device along a run of factor axes (minor first)."""
    idx, stride = 0, 1
    for f in run:
        idx += coords[f] * stride
        stride *= sizes[f]
    return idx


def _refs(mesh: Mesh, axes: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(f for a in axes for f in ref_factors(mesh, a))


# -- kernels ------------------------------------------------------------------------------


def _make_exchange(
    members: tuple[tuple[int, ...], ...],
    group: tuple[int, ...],
    gathers: tuple[tuple[int, tuple[int, ...]], ...],
    slices: tuple[tuple[int, tuple[int, ...]], ...],
    src_local: tuple[int, ...],
    dst_local: tuple[int, ...],
    sizes: tuple[int, ...],
) -> Callable[..., None]:
    def exchange(point: tuple[int, ...], *tiles: np.ndarray) -> None:
        out = tiles[-1]
        new = out.reshape(dst_local)
        direct = np.shares_memory(new, out)
        if not direct:  # pragma: no cover - Legate hands out contiguous tiles here
            new = np.empty(dst_local, dtype=out.dtype)
        for values, tile in zip(members, tiles[:-1], strict=True):
            mc = list(point)
            for f, v in zip(group, values):
                mc[f] = v
            piece = tile.reshape(src_local)
            cut: list[slice] = [slice(None)] * len(src_local)
            for dim, run in slices:
                n = src_local[dim] // math.prod(sizes[f] for f in run)
                k = _mixed(run, point, sizes)
                cut[dim] = slice(k * n, (k + 1) * n)
            piece = piece[tuple(cut)]
            where = [slice(None)] * len(dst_local)
            for dim, run in gathers:
                size = piece.shape[dim]
                k = _mixed(run, mc, sizes)
                where[dim] = slice(k * size, (k + 1) * size)
            new[tuple(where)] = piece
        if not direct:  # pragma: no cover
            out[...] = new.reshape(out.shape)

    return exchange


def _make_copy(size: int) -> Callable[..., None]:
    """Copy a whole block (allpermute)."""

    def copy(point: tuple[int, ...], src: np.ndarray, out: np.ndarray) -> None:
        out[...] = src.reshape(out.shape)

    return copy


def _make_move(before: tuple[int, ...], after: tuple[int, ...],
               moves: tuple[tuple[int, np.ndarray, np.ndarray], ...]) -> Callable[..., None]:
    """Per listed dimension, the elements at positions ``old`` go to positions ``new`` (zeros elsewhere)."""

    def move(point: tuple[int, ...], src: np.ndarray, out: np.ndarray) -> None:
        cur = src.reshape(before)
        for dim, old, new_pos in moves:
            taken = np.take(cur, old, axis=dim)
            shape = list(cur.shape)
            shape[dim] = after[dim]
            nxt = np.zeros(shape, dtype=cur.dtype)
            where: list[Any] = [slice(None)] * len(shape)
            where[dim] = new_pos
            nxt[tuple(where)] = taken
            cur = nxt
        assert cur.shape == after, (cur.shape, after)
        out[...] = cur.reshape(out.shape)

    return move


def _moves(dims: Sequence[int], old: Layout, new: Layout) -> tuple[tuple[int, np.ndarray, np.ndarray], ...]:
    return tuple((d, old.dims[d].positions(), new.dims[d].positions()) for d in dims)


def _move_kernel(before: tuple[int, ...], after: tuple[int, ...],
                 moves: tuple[tuple[int, np.ndarray, np.ndarray], ...]) -> int:
    key = ("move", before, after, tuple((d, a.tobytes(), b.tobytes()) for d, a, b in moves))
    return _kernel(key, lambda: _make_move(before, after, moves))


# -- steps ----------------------------------------------------------------------------------


def _exchange_step(mesh: Mesh, store: Store, src: DistType, dst: DistType,
                   gathers: list[tuple[int, tuple[int, ...]]],
                   slices: list[tuple[int, tuple[int, ...]]], frame: Frame) -> tuple[Store, int]:
    """One exchange; groups and indices are over points of ``frame`` (the device map of ``src``)."""
    grid = device_grid(mesh)
    sizes = tuple(f.size for f in mesh.factors)
    group = tuple(sorted({f for _, run in gathers for f in run}))
    members = tuple(itertools.product(*(range(sizes[f]) for f in group)))
    key = ("exchange", members, group, tuple(gathers), tuple(slices), src.local_type, dst.local_type, sizes)
    kernel = _kernel(key, lambda: _make_exchange(members, group, tuple(gathers), tuple(slices),
                                                 src.local_type, dst.local_type, sizes))
    if frame == identity(mesh):
        out = _new_store(grid, dst.local_size, store.dtype)
        args = []
        for values in members:
            lead = _own(len(grid))
            for f, v in zip(group, values):
                lead[f] = Affine(None, 0, v)
            args.append(_block_arg(store, Privilege.READ, lead))
        args.append(_block_arg(out, Privilege.WRITE, _own(len(grid))))
        index_launch(kernel, grid, args)
        return out, 1
    # relabelled: device frame[h] plays point h and holds its tile; a group member is the device
    # playing a point that differs only along the group's factors (no affine map of the device in
    # general), so one pinned launch per point, run at the point's coordinates
    pts = point_coords(mesh)
    src_block = (*([1] * len(grid)), store.shape[-1])
    dst_block = (*([1] * len(grid)), max(dst.local_size, 1))
    out = zeros((*grid, dst_block[-1]), store.dtype, tile=dst_block)
    n_real = processor_count("cpu")
    for h, (c, dev) in enumerate(zip(pts, frame, strict=True)):
        reads: list[Store | tuple[Store, Privilege]] = []
        for values in members:
            mc = list(c)
            for f, v in zip(group, values):
                mc[f] = v
            holder = frame[point_index(mesh, mc)]
            reads.append((tile_of(store, src_block, (*pts[holder], 0)), Privilege.READ))
        reads.append((tile_of(out, dst_block, (*pts[dev], 0)), Privilege.WRITE))
        point_launch(kernel, reads, c, h * n_real // mesh.size)
    return out, mesh.size


def _permute_map(mesh: Mesh, src: DistType, dst: DistType) -> list[Affine] | None:
    """The source holder's factor coordinates as affine maps of the device's, or None."""
    sizes = [f.size for f in mesh.factors]
    s_lists, d_lists = src.factor_lists(mesh), dst.factor_lists(mesh)
    lead = _own(len(sizes))
    for s, d in zip(s_lists, d_lists, strict=True):
        if [sizes[f] for f in s] != [sizes[f] for f in d]:
            return None
        for fs, fd in zip(s, d):
            lead[fs] = Affine(fd)
    return lead


def _permute_step(mesh: Mesh, store: Store, src: DistType, dst: DistType, frame: Frame) -> tuple[Store, int]:
    """Every device receives the tile ``dst`` gives it (mesh's own map) from a holder in ``frame``."""
    grid = device_grid(mesh)
    kernel = _kernel(("permute", src.local_size), lambda: _make_copy(src.local_size))
    lead = _permute_map(mesh, src, dst) if frame == identity(mesh) else None
    if lead is not None:
        out = _new_store(grid, dst.local_size, store.dtype)
        index_launch(kernel, grid, [_block_arg(store, Privilege.READ, lead),
                                    _block_arg(out, Privilege.WRITE, _own(len(grid)))])
        return out, 1
    # one pinned launch per device, reading a holder of the tile it needs
    pts = point_coords(mesh)
    block = (*([1] * len(grid)), max(src.local_size, 1))
    out = zeros((*grid, block[-1]), store.dtype, tile=block)
    holders: dict[tuple[int, ...], list[int]] = {}
    for h, off in enumerate(offsets_at(src, mesh)):
        holders.setdefault(off, []).append(frame[h])
    n_real = processor_count("cpu")
    for d, want in enumerate(offsets_at(dst, mesh)):
        pool = holders[want]
        h = d if d in pool else pool[0]
        here = pts[d] or (0,)
        there = pts[h] or (0,)
        point_launch(kernel, [(tile_of(store, block, (*there, 0)), Privilege.READ),
                              (tile_of(out, block, (*here, 0)), Privilege.WRITE)],
                     here, d * n_real // mesh.size)
    return out, mesh.size


def run_program(program: CollectiveProgram, store: Store, trace: list[StepRecord] | None = None) -> Store:
    """Run ``program`` on a store of blocks of its source type; the store of its target type.

    ``trace`` (if given) receives one `StepRecord` per step.
    """
    mesh = program.mesh
    for step, src, dst, frame in zip(program.steps, program.types, program.types[1:], program.frames):
        launches = 1
        if isinstance(step, Relabel):
            launches = 0  # no data moves: later steps read the blocks through the new frame
        elif isinstance(step, AllPermute):
            store, launches = _permute_step(mesh, store, src, dst, frame)
        elif isinstance(step, AllGather):
            store, launches = _exchange_step(mesh, store, src, dst,
                                             [(i, _refs(mesh, r)) for i, r in step.axes], [], frame)
        elif isinstance(step, DynSlice):
            store, launches = _exchange_step(mesh, store, src, dst,
                                             [], [(i, _refs(mesh, r)) for i, r in step.axes], frame)
        elif isinstance(step, AllToAll):
            runs = [(i, j, _refs(mesh, r)) for i, j, r in step.moves]
            store, launches = _exchange_step(mesh, store, src, dst, [(i, r) for i, _, r in runs],
                                             [(j, r) for _, j, r in runs], frame)
        else:  # pragma: no cover - a new collective must be taught here
            raise DistalError(f"expected a collective distal can run, but found {step!r}")
        if trace is not None:
            trace.append(StepRecord(str(step), dst.local_size, launches))
    return store


def _unpartitioned(lay: Layout) -> list[int]:
    return [d for d, dim in enumerate(lay.dims) if not dim.parts]


def _same(a: Layout, b: Layout, dims: Sequence[int]) -> bool:
    return a.tile == b.tile and all(a.dims[d].same_positions(b.dims[d]) for d in dims)


def _enter(plan: FormatProgram, held: FormatStore) -> Store:
    """Blocks of the first program's source type from the source format's blocks."""
    own, src = held.layout, plan.source
    mesh = plan.mesh
    grid = device_grid(mesh)
    free = _unpartitioned(own)
    blocks = as_factor_grid(held)
    if not src.fixed and _same(own, src, free):
        return blocks
    fixed = {a for a, _ in src.fixed}
    lead = [Affine(None, 0, 0) if f.axis in fixed else Affine(k) for k, f in enumerate(mesh.factors)]
    lead = lead or [Affine(0)]
    kernel = _move_kernel(own.tile, src.tile, _moves(free, own, src))
    out = _new_store(grid, math.prod(src.tile), held.dtype)
    index_launch(kernel, grid, [_block_arg(blocks, Privilege.READ, lead),
                                _block_arg(out, Privilege.WRITE, _own(len(grid)))])
    return out


def _exit(plan: FormatProgram, store: Store, target: Layout) -> Store:
    """The target format's blocks (face only, cropped) from blocks of the last program's type."""
    last = plan.target
    mesh = plan.mesh
    free = _unpartitioned(target)
    if not target.fixed and _same(last, target, free):
        return store
    grid = device_grid(mesh, target)
    faces = dict(target.fixed)
    lead = []
    for k, f in enumerate(mesh.factors):
        if f.axis in faces:
            lead.append(Affine(None, 0, (faces[f.axis] // f.stride) % f.size))
        else:
            lead.append(Affine(k))
    lead = lead or [Affine(0)]
    kernel = _move_kernel(last.tile, target.tile, _moves(free, last, target))
    out = _new_store(grid, math.prod(target.tile), store.dtype)
    index_launch(kernel, grid, [_block_arg(store, Privilege.READ, lead),
                                _block_arg(out, Privilege.WRITE, _own(len(grid)))])
    return out


def _repad(plan: FormatProgram, stage: Repad, store: Store) -> Store:
    kernel = _move_kernel(stage.before.local_type, stage.after.local_type,
                          _moves(stage.dims, plan.source, plan.target))
    grid = device_grid(plan.mesh)
    out = _new_store(grid, stage.after.local_size, store.dtype)
    index_launch(kernel, grid, [_block_arg(store, Privilege.READ, _own(len(grid))),
                                _block_arg(out, Privilege.WRITE, _own(len(grid)))])
    return out


def _regrid_bytes(lay: Layout, size: int, to_factors: bool, itemsize: int) -> int:
    """Bytes of the store `as_factor_grid` / `from_factor_grid` makes for blocks of ``size`` elements (0: a view)."""
    factors, machine = device_grid(lay.mesh, lay), block_grid(lay)
    if factors == machine:
        return 0
    return math.prod(factors if to_factors else machine) * size * itemsize


def made_bytes(plan: FormatProgram, held: FormatStore) -> list[tuple[str, int]]:
    """The stores `run_plan_steps` makes on ``held``, in order: (what, bytes) each.

    None is freed before the next fence (`_store._KEEP_ALIVE`), so the run
    needs them all next to the tensor's blocks.
    """
    own, src, mesh, item = held.layout, plan.source, plan.mesh, held.dtype.itemsize
    grid = math.prod(device_grid(mesh))
    out: list[tuple[str, int]] = []
    if (regrid := _regrid_bytes(own, held.blocks.shape[-1], True, item)):
        out.append(("the blocks on the factor grid", regrid))
    if src.fixed or not _same(own, src, _unpartitioned(own)):
        out.append(("expand" if src.fixed else "pad", grid * math.prod(src.tile) * item))
    for stage in plan.stages:
        if isinstance(stage, CollectiveProgram):
            for step, dst in zip(stage.steps, stage.types[1:]):
                if not isinstance(step, Relabel):
                    out.append((str(step), grid * max(dst.local_size, 1) * item))
        else:
            out.append((str(stage), grid * max(stage.after.local_size, 1) * item))
    target = _target_layout(plan)
    size = max(math.prod(plan.target.tile), 1)
    if target.fixed or not _same(plan.target, target, _unpartitioned(target)):
        size = math.prod(target.tile)
        out.append(("restrict" if target.fixed else "crop", math.prod(device_grid(mesh, target)) * size * item))
    if (regrid := _regrid_bytes(target, size, False, item)):
        out.append(("the blocks on the machine grid", regrid))
    return out


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def check_room(plan: FormatProgram, held: FormatStore, name: str | None = None) -> None:
    """Raise `OutOfMemory` before anything is queued when the stores `run_plan_steps` makes on ``held``
    (`made_bytes`) cannot fit in Legate's memory next to the live stores (one fence first frees
    what nothing references)."""
    made = made_bytes(plan, held)
    total = sum(b for _, b in made)
    if not total:
        return
    steps = ", ".join(f"{what} {_mib(b)}" for what, b in made)
    tensor = f"{name}{list(held.shape)}" if name else f"a tensor of shape {list(held.shape)}"
    ensure_room(f"redistributing {tensor} {held.dtype} from {plan.source.format} to {plan.target.format} "
                f"(its new stores {_mib(total)}: {steps})", total)


def run_plan_steps(plan: FormatProgram, held: FormatStore,
                   trace: list[StepRecord] | None = None, name: str | None = None) -> FormatStore:
    """Run ``plan`` on data held in its source format; the data in its target format.

    Checks that no store along the way has blocks larger than ``plan.height``,
    and, before anything is queued, that the stores it makes fit in Legate's
    memory (`check_room`; ``name`` names the tensor in its `OutOfMemory`).
    """
    if held.format != plan.source.format or held.shape != plan.source.shape:
        raise FormatError(
            f"expected data in format {plan.source.format} of shape {plan.source.shape}, "
            f"but found {held.format} of shape {held.shape}"
        )
    check_room(plan, held, name)
    record = trace if trace is not None else []
    store = _enter(plan, held)
    if plan.source.fixed or not _same(held.layout, plan.source, _unpartitioned(held.layout)):  # _enter launched
        record.append(StepRecord("expand" if plan.source.fixed else "pad", math.prod(plan.source.tile), 1))
    for stage in plan.stages:
        if isinstance(stage, CollectiveProgram):
            store = run_program(stage, store, record)
        else:
            store = _repad(plan, stage, store)
            record.append(StepRecord(str(stage), stage.after.local_size, 1))
    target = _target_layout(plan)
    before = store
    store = _exit(plan, store, target)
    if store is not before:
        record.append(StepRecord("restrict" if target.fixed else "crop", math.prod(target.tile), 1))
    for r in record:
        if r.block > plan.height:
            raise DistalError(f"redistribution step {r.label} holds {r.block} elements per device, "
                              f"above the plan's height {plan.height}")
    return FormatStore(from_factor_grid(store, target), target, held.dtype)


def _target_layout(plan: FormatProgram) -> Layout:
    from distal.redist.formats import layout

    return layout(plan.target.format, plan.target.shape)


def redistribute(held: FormatStore, fmt: Format, method: str = "search",
                 trace: list[StepRecord] | None = None) -> tuple[FormatStore, FormatProgram]:
    """Move data held in one format to format ``fmt`` (same machine) on Legate.

    Returns the data in the new format and the plan that moved it.
    """
    plan = plan_redistribution(held.format, fmt, held.shape, method)
    return run_plan_steps(plan, held, trace), plan
