"""A `=` output's store for one run of a plan: reused or new, and who writes it first.

The statement never reads its `=` output, so a run may write into the store
of the output's previous data (`reusable`) or a new one nothing has written
(`_make.unwritten`, `fresh_blocks` for an output used in place). Such a
store must be written in full before anything reads it (a partial write of
a never-written store then a read aborts, LEGATE_NOTES.md behaviour 2):
either the plan's first launch writes every tile itself, zeroing each
before its task body runs (`first_launch_writes`, `ZeroFirst`), or
`run_plan` fills it with zeros before the launches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from distal.errors import DistalError
from distal.lower.task_graph import Launch, PlanBase, Privilege

from ._holders import block_grid
from ._launch import _COVERAGE_LIMIT, _coverage
from ._launch_args import launch_arg
from ._make import unwritten, zeros
from ._placed import PlacedOperand, block_tiles
from ._registry import register_kernel
from ._store import Store
from ._tensor_storage import FormatStore

if TYPE_CHECKING:
    from distal.format.layout import Layout

__all__ = ["ZeroFirst", "first_launch_writes", "fresh_blocks", "output_position", "reusable", "zero_first_key"]


def reusable(store: Store, shape: tuple[int, ...], dtype: np.dtype[Any]) -> bool:
    """Whether a `=` output's previous store can take this run's result (the run overwrites it in full).

    Running a plan again then writes memory the previous run already
    touched: a new store lands in pool memory nothing has touched yet, and
    faulting that in (as huge pages) stalled some runs 2-3x (docs/benchmarks.md,
    TTM). Only a store of its own (not a view of another) of the same shape
    and dtype; the statement never reads its `=` output, later readers of the
    previous data were queued before this run's writes (Legate orders them),
    and what distal hands out (to_numpy, cuPyNumeric, the data interface) is
    a copy.
    """
    return (store.block_of is None and not getattr(store.handle, "transformed", False)
            and tuple(store.shape) == tuple(shape) and store.dtype == np.dtype(dtype))


def fresh_blocks(lay: Layout, dtype: np.dtype[Any], fresh: list[tuple[Store, tuple[int, ...] | None]],
                  previous: Any = None) -> FormatStore:
    """Blocks laid out by ``lay`` for a `=` output, appended to `fresh` (zeros, or the first launch writes them).

    The blocks of the output's previous data (`previous`, its storage before
    this run) when they have this layout and dtype (`reusable`); new ones
    otherwise.
    """
    grid = block_grid(lay)
    size = max(math.prod(lay.tile), 1)
    shape, tile = (*grid, size), (*([1] * len(grid)), size)
    if 0 in shape:
        return FormatStore(zeros(shape, dtype, tile=tile), lay, dtype)
    old = previous.blocks if isinstance(previous, FormatStore) and previous.layout == lay else None
    store = old if old is not None and reusable(old, shape, dtype) else unwritten(shape, dtype)
    fresh.append((store, tile))
    return FormatStore(store, lay, dtype)


def first_launch_writes(plan: PlanBase, stores: list[Store], placed: dict[int, PlacedOperand]) -> Launch | None:
    """The plan's first launch, when it can zero the output itself and write it with `WRITE`.

    That is when it is an index launch over the whole domain (not pinned,
    not a part) whose points take distinct tiles of the output that together
    cover every element: the launch then writes the new store in full, so no
    separate zero-fill launch is needed (a partial write of a never-written
    store then a read aborts, LEGATE_NOTES.md behaviour 2, so anything less
    falls back to the fill). None otherwise.
    """
    n = plan.tensors.index(plan.output)
    group = next((gr for gr in plan.groups if gr.launches), None)
    if group is None:
        return None
    launch = group.launches[0]
    if launch.pinned or not (group.covers_domain(launch) or plan.machine is None) or launch.volume == 0:
        return None
    ops = [op for op in launch.operands if op.tensor == n]
    if len(ops) != 1 or ops[0].privilege not in (Privilege.WRITE, Privilege.READ_WRITE):
        return None
    arg = launch_arg(stores, placed, launch, ops[0])
    if arg.tile is None:
        if launch.volume != 1:
            return None
    else:
        colors = arg.color_shape()
        if launch.volume == 1:
            if any(c != 1 for c in colors):  # one point gets its tile as a sub-store: the whole store only
                return None
        else:
            try:
                covers, distinct = _coverage(arg.maps(len(launch.lower)), colors, arg.store.shape,
                                             launch.lower, launch.upper)
            except DistalError:
                return None
            if not (covers and distinct) or launch.volume > _COVERAGE_LIMIT:
                return None
    return launch


def output_position(plan: PlanBase, launch: Launch) -> int:
    n = plan.tensors.index(plan.output)
    return next(p for p, op in enumerate(launch.operands) if op.tensor == n)


def zero_first_key(plan: PlanBase, group_index: int, placed: dict[int, PlacedOperand], position: int) -> int:
    """The group's kernel, preceded in each task by zeroing the output's tile (transient, as `_execute._key`)."""
    group = plan.groups[group_index]
    inner = block_tiles(plan, group, group.body, placed)
    return register_kernel(ZeroFirst(inner, position), group.body.name, transient=True)


@dataclass(eq=False)
class ZeroFirst:
    """A kernel that zeroes its output argument (the whole tile or block) before running."""

    kernel: Any
    position: int

    def __call__(self, point: tuple[int, ...], *tiles: Any) -> None:
        fresh = getattr(self.kernel, "run_fresh", None)  # a task body, or BlockTiles around one
        if fresh is None:
            tiles[self.position][...] = 0  # a kernel that is no task body: zero its tile here
            self.kernel(point, *tiles)
        else:  # it zero-fills the tile only where its first step does not write it whole (TaskBody.run_fresh)
            fresh(point, self.position, *tiles)
