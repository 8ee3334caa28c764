"""Running finished redistributions on Legate, one launch per step.

A distributed array on the machine is a store of shape ``(*grid, L)``: one
leading dimension per prime factor of the machine's dimensions (the factor
grid, `distal.redist.moves.FactorGrid`; a tensor's `FormatStore` keeps one
per machine dimension, and `as_factor_grid` / `from_factor_grid` convert: a
view, or one copy per device where a machine dimension has a composite
size), and one device's block, flattened. A redistribution arrives finished
(`distal.redist.moves.Moves`, made by `distal.redist.finish.finish` from
the synthesizer's plan, where each step's meaning is explained): every
step is an index launch over the factor grid, or one pinned launch per
point, that writes each device's block of a new store from blocks of the
previous one as the step lists them. This module only interprets the
steps: it imports nothing of the synthesizer. No store made along the way
has blocks larger than the plan's height (checked).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from distal.errors import DistalError, FormatError
from distal.format.layout import Layout
from distal.redist.moves import (
    Exchange,
    FactorGrid,
    Lead,
    Moves,
    Permute,
    Pinned,
    ProgramMoves,
    Reframe,
    Reposition,
)

from ._factor_grid import as_factor_grid, from_factor_grid
from ._holders import block_grid
from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import zeros
from ._registry import register_kernel
from ._start import legate_runtime, processor_count
from ._store import Store, ensure_room, legate_type, tile_of, wrap
from ._tensor_storage import FormatStore

__all__ = ["StepRecord", "check_room", "made_bytes", "run_plan_steps", "run_program"]

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


def _affine(lead: Lead) -> list[Affine]:
    return [Affine(None, 0, c) if k is None else Affine(k) for k, c in lead]


def _mixed(run: Sequence[int], coords: Sequence[int], sizes: Sequence[int]) -> int:
    """Index of a device along a run of factor axes (minor first)."""
    idx, stride = 0, 1
    for f in run:
        idx += coords[f] * stride
        stride *= sizes[f]
    return idx


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


def _move_kernel(step: Reposition) -> int:
    key = ("move", step.before, step.after, step.moves)
    return _kernel(key, lambda: _make_move(step.before, step.after,
                                           tuple((d, a.positions(), b.positions()) for d, a, b in step.moves)))


# -- steps ----------------------------------------------------------------------------------


def _pinned(kernel: int, launches: tuple[Pinned, ...], store: Store, out: Store, count: int) -> None:
    """One launch per entry, reading its blocks of ``store`` and writing its block of ``out``."""
    src_block = (*([1] * (store.ndim - 1)), store.shape[-1])
    dst_block = (*([1] * (out.ndim - 1)), out.shape[-1])
    n_real = processor_count("cpu")
    for p in launches:
        reads: list[Store | tuple[Store, Privilege]] = [(tile_of(store, src_block, (*r, 0)), Privilege.READ)
                                                        for r in p.reads]
        reads.append((tile_of(out, dst_block, (*p.write, 0)), Privilege.WRITE))
        point_launch(kernel, reads, p.point, p.slot * n_real // count)


def _exchange_step(grid: FactorGrid, store: Store, step: Exchange) -> tuple[Store, int]:
    shape = grid.shape()
    sizes = tuple(s for _, s, _ in grid.factors)
    key = ("exchange", step.members, step.group, step.gathers, step.slices, step.before, step.after, sizes)
    kernel = _kernel(key, lambda: _make_exchange(step.members, step.group, step.gathers, step.slices,
                                                 step.before, step.after, sizes))
    if step.pinned is None:
        out = _new_store(shape, step.block, store.dtype)
        args = []
        for values in step.members:
            lead = _own(len(shape))
            for f, v in zip(step.group, values):
                lead[f] = Affine(None, 0, v)
            args.append(_block_arg(store, Privilege.READ, lead))
        args.append(_block_arg(out, Privilege.WRITE, _own(len(shape))))
        index_launch(kernel, shape, args)
        return out, 1
    size = max(step.block, 1)
    out = zeros((*shape, size), store.dtype, tile=(*([1] * len(shape)), size))
    _pinned(kernel, step.pinned, store, out, grid.size)
    return out, grid.size


def _permute_step(grid: FactorGrid, store: Store, step: Permute) -> tuple[Store, int]:
    shape = grid.shape()
    kernel = _kernel(("permute", step.size), lambda: _make_copy(step.size))
    if step.lead is not None:
        out = _new_store(shape, step.block, store.dtype)
        index_launch(kernel, shape, [_block_arg(store, Privilege.READ, [Affine(k) for k in step.lead]),
                                     _block_arg(out, Privilege.WRITE, _own(len(shape)))])
        return out, 1
    size = max(step.size, 1)
    out = zeros((*shape, size), store.dtype, tile=(*([1] * len(shape)), size))
    _pinned(kernel, step.pinned, store, out, grid.size)
    return out, grid.size


def run_program(program: ProgramMoves, store: Store, trace: list[StepRecord] | None = None) -> Store:
    """Run ``program`` (finished, `distal.redist.finish.finish_program`) on a store of blocks of its source
    type; the store of its target type.

    ``trace`` (if given) receives one `StepRecord` per step.
    """
    for step in program.steps:
        if isinstance(step, Reframe):
            launches = 0  # no data moves: later steps read the blocks through the new frame
        elif isinstance(step, Permute):
            store, launches = _permute_step(program.factors, store, step)
        elif isinstance(step, Exchange):
            store, launches = _exchange_step(program.factors, store, step)
        else:  # pragma: no cover - a new step must be taught here
            raise DistalError(f"expected a redistribution step distal can run, but found {step!r}")
        if trace is not None:
            trace.append(StepRecord(step.label, step.block, launches))
    return store


def _reposition(step: Reposition, store: Store) -> Store:
    """One launch over ``step.grid``: each block read at ``step.lead`` moved to its new positions."""
    out = _new_store(step.grid, step.block, store.dtype)
    index_launch(_move_kernel(step), step.grid, [_block_arg(store, Privilege.READ, _affine(step.lead)),
                                                 _block_arg(out, Privilege.WRITE, _own(len(step.grid)))])
    return out


def _regrid_bytes(lay: Layout, grid: FactorGrid, size: int, to_factors: bool, itemsize: int) -> int:
    """Bytes of the store `as_factor_grid` / `from_factor_grid` makes for blocks of ``size`` elements (0: a view)."""
    factors, machine = grid.shape({a for a, _ in lay.fixed}), block_grid(lay)
    if factors == machine:
        return 0
    return math.prod(factors if to_factors else machine) * size * itemsize


def made_bytes(moves: Moves, held: FormatStore) -> list[tuple[str, int]]:
    """The stores `run_plan_steps` makes on ``held``, in order: (what, bytes) each.

    None is freed before the next fence (`_store._KEEP_ALIVE`), so the run
    needs them all next to the tensor's blocks.
    """
    item = held.dtype.itemsize
    grid = math.prod(moves.factors.shape())
    out: list[tuple[str, int]] = []
    if (regrid := _regrid_bytes(held.layout, moves.factors, held.blocks.shape[-1], True, item)):
        out.append(("the blocks on the factor grid", regrid))
    if moves.enter is not None:
        out.append((moves.enter.label, math.prod(moves.enter.grid) * max(moves.enter.block, 1) * item))
    for stage in moves.stages:
        if isinstance(stage, ProgramMoves):
            for step in stage.steps:
                if not isinstance(step, Reframe):
                    out.append((step.label, grid * max(step.block, 1) * item))
        else:
            out.append((stage.label, math.prod(stage.grid) * max(stage.block, 1) * item))
    size = max(math.prod(moves.target.tile), 1)
    if moves.exit is not None:
        size = moves.exit.block
        out.append((moves.exit.label, math.prod(moves.exit.grid) * size * item))
    if (regrid := _regrid_bytes(moves.target, moves.factors, size, False, item)):
        out.append(("the blocks on the machine grid", regrid))
    return out


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def check_room(moves: Moves, held: FormatStore, name: str | None = None) -> None:
    """Raise `OutOfMemory` before anything is queued when the stores `run_plan_steps` makes on ``held``
    (`made_bytes`) cannot fit in Legate's memory next to the live stores (one fence first frees
    what nothing references)."""
    made = made_bytes(moves, held)
    total = sum(b for _, b in made)
    if not total:
        return
    steps = ", ".join(f"{what} {_mib(b)}" for what, b in made)
    tensor = f"{name}{list(held.shape)}" if name else f"a tensor of shape {list(held.shape)}"
    ensure_room(f"redistributing {tensor} {held.dtype} from {moves.source.format} to {moves.target.format} "
                f"(its new stores {_mib(total)}: {steps})", total)


def run_plan_steps(moves: Moves, held: FormatStore,
                   trace: list[StepRecord] | None = None, name: str | None = None) -> FormatStore:
    """Run the finished redistribution ``moves`` on data held in its source format; the data in its target format.

    Checks that no store along the way has blocks larger than ``moves.height``,
    and, before anything is queued, that the stores it makes fit in Legate's
    memory (`check_room`; ``name`` names the tensor in its `OutOfMemory`).
    """
    source = moves.source
    if held.format != source.format or held.shape != source.shape:
        raise FormatError(
            f"expected data in format {source.format} of shape {source.shape}, "
            f"but found {held.format} of shape {held.shape}"
        )
    check_room(moves, held, name)
    record = trace if trace is not None else []
    store = as_factor_grid(held, moves.factors)
    if moves.enter is not None:
        store = _reposition(moves.enter, store)
        record.append(StepRecord(moves.enter.label, moves.enter.block, 1))
    for stage in moves.stages:
        if isinstance(stage, ProgramMoves):
            store = run_program(stage, store, record)
        else:
            store = _reposition(stage, store)
            record.append(StepRecord(stage.label, stage.block, 1))
    if moves.exit is not None:
        store = _reposition(moves.exit, store)
        record.append(StepRecord(moves.exit.label, moves.exit.block, 1))
    for r in record:
        if r.block > moves.height:
            raise DistalError(f"redistribution step {r.label} holds {r.block} elements per device, "
                              f"above the plan's height {moves.height}")
    return FormatStore(from_factor_grid(store, moves.target, moves.factors), moves.target, held.dtype)
