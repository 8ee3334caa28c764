"""Launching distal's generic task: index launches and pinned single points.

The lowering layer describes a launch as plain data: a kernel key, a launch
domain, and one `Arg` per operand (store, tile shape, projection from launch
point to tile color, privilege). This module turns that into a Legate
manual task.

Guard for LEGATE_NOTES.md behaviour 1 (a store added only as an output
loses its previous contents): `READ_WRITE` adds the store as input and as
output, and a `WRITE` launch whose points do not cover every tile of the
store is upgraded to `READ_WRITE`, so the tiles it does not write survive.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from distal.errors import DistalError, NotSupportedYet
from distal.lower.task_graph import Privilege, Proj  # one enum and one projection class, the plan's and the runtime's
from distal.machine.grid import processor_kind

from ._observe import observers
from ._recording import abandon_recording, current_recording
from ._registry import is_transient, kernel, register_kernel
from ._start import legate_runtime, processor_count, work_queued
from ._store import Store, stores_made
from ._target import require_device_arrays, target_scope
from ._tasks import generic_task

__all__ = ["Affine", "Arg", "Privilege", "Recorded", "Submission", "index_launch", "point_launch", "replay",
           "tile_colors"]

# Largest launch domain whose tile coverage is checked point by point; a
# larger WRITE launch is treated as READ_WRITE (safe, maybe slower), and is
# not checked for points that share a written tile.
_COVERAGE_LIMIT = 1 << 16


Affine = Proj
"""Color of one store dimension: `coeff * point[dim] + offset` (`dim=None`: the constant `offset`); the
plan's `distal.lower.task_graph.Proj`, under the name the runtime's launch API has always used."""


def tile_colors(shape: Sequence[int], tile: Sequence[int]) -> tuple[int, ...]:
    """Number of tiles per dimension when `shape` is cut into `tile`-sized blocks."""
    return tuple(-(-n // max(t, 1)) if n > 0 else 0 for n, t in zip(shape, tile, strict=True))


@dataclass(frozen=True, slots=True)
class Arg:
    """One operand of a launch.

    `tile=None` hands the whole store to every point. Otherwise the store is
    cut into blocks of `tile` (the last ones smaller; `colors` may ask for more
    blocks than needed, the extra ones empty) and point p gets the block whose
    color is `tuple(a.at(p) for a in projection)`. `projection=None` is the
    identity (store dimension d follows launch dimension d).
    """

    store: Store
    privilege: Privilege
    tile: tuple[int, ...] | None = None
    projection: tuple[Affine, ...] | None = None
    colors: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        ndim = self.store.ndim
        if ndim == 0:
            raise NotSupportedYet(
                "Legate tasks cannot view 0-d stores; make the store of shape (1,)"
            )
        if self.tile is not None and len(self.tile) != ndim:
            raise DistalError(f"expected a tile of {ndim} dimensions, but found {self.tile}")
        if self.projection is not None and len(self.projection) != ndim:
            raise DistalError(
                f"expected a projection of {ndim} components, but found {self.projection}"
            )
        if self.colors is not None and len(self.colors) != ndim:
            raise DistalError(f"expected {ndim} color extents, but found {self.colors}")
        if self.tile is None and (self.projection is not None or self.colors is not None):
            raise DistalError("a projection or colors need a tile shape")

    def color_shape(self) -> tuple[int, ...]:
        """Number of tiles per dimension."""
        assert self.tile is not None
        return self.colors if self.colors is not None else tile_colors(self.store.shape, self.tile)

    def maps(self, launch_ndim: int) -> tuple[Affine, ...]:
        """The projection, with the identity spelled out."""
        if self.projection is not None:
            return self.projection
        if self.store.ndim != launch_ndim:
            raise DistalError(
                f"a store of {self.store.ndim} dimensions in a {launch_ndim}-D launch "
                "needs an explicit projection"
            )
        return tuple(Affine(d) for d in range(launch_ndim))


def _points(lower: Sequence[int], upper: Sequence[int]) -> itertools.product[tuple[int, ...]]:
    return itertools.product(*(range(lo, hi) for lo, hi in zip(lower, upper, strict=True)))


def _check_colors(arg: Arg, lower: Sequence[int], upper: Sequence[int]) -> bool:
    """Check every point projects inside the color space; return full coverage.

    A written (not reduced) argument must give each point its own tile.
    """
    covers, one_to_one = _coverage(arg.maps(len(lower)), arg.color_shape(), arg.store.shape,
                                   tuple(lower), tuple(upper))
    if arg.privilege in (Privilege.WRITE, Privilege.READ_WRITE) and not one_to_one:
        raise DistalError(
            f"a {arg.privilege.value} argument must give each launch point its own tile, "
            f"but projection {arg.maps(len(lower))} maps several points of "
            f"[{tuple(lower)}, {tuple(upper)}) to one tile (use reduce_add to combine them)"
        )
    return covers


@functools.lru_cache(maxsize=4096)
def _coverage(maps: tuple[Affine, ...], colors: tuple[int, ...], shape: tuple[int, ...],
              lower: tuple[int, ...], upper: tuple[int, ...]) -> tuple[bool, bool]:
    """(every tile is some point's, no two points share a tile), after bounds checks."""
    volume = 1
    for lo, hi in zip(lower, upper, strict=True):
        volume *= max(hi - lo, 0)
    for d, affine in enumerate(maps):
        if affine.dim is None:
            ends = [affine.offset]
        elif affine.dim >= len(lower):
            raise DistalError(
                f"projection {affine} names launch dimension {affine.dim} "
                f"of a {len(lower)}-D launch"
            )
        else:
            k = affine.dim
            ends = [affine.coeff * lower[k] + affine.offset,
                    affine.coeff * (upper[k] - 1) + affine.offset]
        if volume > 0 and (min(ends) < 0 or max(ends) >= colors[d]):
            raise DistalError(
                f"projection {maps} maps launch domain [{lower}, {upper}) "
                f"outside the {colors} tiles of a store of shape {shape}"
            )
    if volume > _COVERAGE_LIMIT:
        return False, True
    seen = {tuple(a.at(p) for a in maps) for p in _points(lower, upper)}
    total = 1
    for c in colors:
        total *= c
    return len(seen) == total, len(seen) == volume


@functools.lru_cache(maxsize=4096)
def _projection(maps: tuple[Affine, ...]) -> tuple[Any, ...]:
    """Legate's projection of `maps` (made once per distinct maps: launches of a plan repeat theirs)."""
    from legate.core import constant, dimension

    return tuple(constant(a.offset) if a.dim is None
                 else dimension(a.dim) * a.coeff + a.offset for a in maps)


def _check_aliasing(args: Sequence[Arg]) -> None:
    written = [a for a in args if a.privilege is not Privilege.READ]
    for w in written:
        users = [a for a in args if a.store is w.store]
        if len(users) > 1:
            raise NotSupportedYet(
                "a store that a launch writes or reduces into must appear once in it, "
                f"but a store of shape {w.store.shape} appears {len(users)} times"
            )


def _submit(key: int, args: Sequence[Arg], lower: Sequence[int], upper: Sequence[int],
            whole_stores: bool, pinned: Sequence[int] | None = None) -> None:
    _check_aliasing(args)
    ins: list[tuple[Any, Any]] = []  # (partition or store, projection) per slot kind
    outs: list[tuple[Any, Any]] = []
    reds: list[tuple[Any, Any]] = []
    layout: list[str] = []
    for arg in args:
        privilege = arg.privilege
        if whole_stores or arg.tile is None:
            target, projection = arg.store.handle, None
            covers = whole_stores or upper == [lo + 1 for lo in lower]
            if not covers and privilege in (Privilege.WRITE, Privilege.READ_WRITE):
                raise DistalError(
                    f"a {privilege.value} argument without a tile would be written by every "
                    "point of the launch; give it a tile, or use reduce_add"
                )
        else:
            covers = _check_colors(arg, lower, upper)
            target = arg.store.handle.partition_by_tiling(arg.tile, arg.color_shape())
            projection = _projection(arg.maps(len(lower))) if arg.projection else None
        if privilege is Privilege.WRITE and not covers:
            privilege = Privilege.READ_WRITE
        if privilege is Privilege.READ:
            layout.append(f"i{len(ins)}")
            ins.append((target, projection))
        elif privilege is Privilege.WRITE:
            layout.append(f"o{len(outs)}")
            outs.append((target, projection))
        elif privilege is Privilege.READ_WRITE:
            ins.append((target, projection))
            layout.append(f"o{len(outs)}")
            outs.append((target, projection))
        else:
            layout.append(f"r{len(reds)}")
            reds.append((target, projection))

    text = ",".join(layout)
    if pinned is not None:
        text += ";" + ",".join(str(int(x)) for x in pinned)
        if list(upper) != [lo + 1 for lo in lower]:
            text += ";first"  # only launch point 0 runs the kernel (_pinned_args)
    made = Submission(generic_task(len(ins), len(outs), len(reds)), tuple(upper), tuple(lower), tuple(ins),
                      tuple(outs), tuple(reds), text)
    made.launch(key)
    rec = current_recording()
    if rec is not None and rec.launches is not None:
        if stores_made() != rec.made:
            abandon_recording()  # a run that makes stores is not replayed; its launches are not held
        else:
            name, fn = kernel(key)
            rec.launches.append((made, fn, name, is_transient(key), legate_runtime().get_machine()))


_legate: list[Any] = []  # (the int64 type, the string type, ReductionOpKind.ADD), looked up once


@dataclass(frozen=True, slots=True, eq=False)
class Submission:
    """One manual launch of distal's generic task, as `_submit` made it from its arguments: the task of
    its arity, the launch box, (partition or store, projection) per input, output and reduction, and the
    layout string its tasks read."""

    task: Any
    upper: tuple[int, ...]
    lower: tuple[int, ...]
    inputs: tuple[tuple[Any, Any], ...]
    outputs: tuple[tuple[Any, Any], ...]
    reductions: tuple[tuple[Any, Any], ...]
    layout: str

    def launch(self, key: int) -> None:
        """Submit it to Legate (in the current machine scope) with kernel `key` (under `observed` submit
        wrappers, if any)."""
        watch = observers.submit
        if watch is not None:
            watch(lambda: self._launch(key))
        else:
            self._launch(key)

    def _launch(self, key: int) -> None:
        if not _legate:
            from legate.core import ReductionOpKind, types

            _legate.extend((types.int64, types.string_type, ReductionOpKind.ADD))
        int64, string, add = _legate
        task = self.task
        launch = legate_runtime().create_manual_task(task.library, task.task_id, self.upper, self.lower)
        for target, projection in self.inputs:
            launch.add_input(target, projection)
        for target, projection in self.outputs:
            launch.add_output(target, projection)
        for target, projection in self.reductions:
            launch.add_reduction(target, add, projection)
        launch.add_scalar_arg(key, int64)
        launch.add_scalar_arg(self.layout, string)
        work_queued()  # until the next blocking fence: no automatic GC, one BLAS thread per task
        launch.execute()


Recorded = tuple[Submission, Any, str, bool, Any]
"""A submission as `recording` keeps it: the launch, its kernel (the callable, its name, whether it was
registered transient) and the Legate machine scope it was submitted in."""

def replay(recorded: Recorded) -> None:
    """Submit a recorded launch again, as it was: the same partitions and projections in the same machine
    scope, its kernel registered again (a transient one is released at each fence)."""
    made, fn, name, transient, machine = recorded
    key = register_kernel(fn, name, transient=transient)
    with machine:
        made.launch(key)


def index_launch(key: int, domain: Sequence[int], args: Sequence[Arg],
                 lower: Sequence[int] | None = None, target: str = "cpu") -> None:
    """Run kernel `key` once per point of the launch domain, in parallel.

    The domain is the box `[lower, lower + domain)` (lower defaults to 0).
    Each point calls `kernel(point, *tiles)` with one array view per `Arg`:
    NumPy on CPU and OpenMP processors, CuPy on GPUs (`target="gpu"`).
    Launches are asynchronous; `to_numpy` waits for them.

    >>> index_launch(key, (2, 2), [Arg(a, Privilege.READ, (4, 4)),          # doctest: +SKIP
    ...                            Arg(c, Privilege.WRITE, (4, 4))])
    """
    low = [0] * len(domain) if lower is None else [int(x) for x in lower]
    if len(low) != len(domain) or not domain:
        raise DistalError(f"expected a launch domain with lower bounds, but found {domain}")
    _check_target(target)
    if any(n <= 0 for n in domain):
        return
    upper = [lo + int(n) for lo, n in zip(low, domain, strict=True)]
    with target_scope(target):
        if all(n == 1 for n in domain):
            # Legate runs a one-point 1-D manual launch as a single task and hands it the
            # whole store instead of the projected tile (measured: a (1,) launch reading tile
            # (0, 0) of a (2, 12) store saw (2, 12)). Hand the point its tiles as sub-stores.
            _submit_pinned(key, [_point_arg(a, low) for a in args], low)
        else:
            _submit(key, args, low, upper, whole_stores=False)


def _point_arg(arg: Arg, point: Sequence[int]) -> tuple[Store, Privilege]:
    """`arg` as seen by the launch point `point` alone: its block of the store (`tile_of`)."""
    if arg.tile is None:
        return arg.store, arg.privilege
    _check_colors(arg, point, [p + 1 for p in point])
    color = tuple(a.at(point) for a in arg.maps(len(point)))
    child = arg.store.handle.partition_by_tiling(arg.tile, arg.color_shape()).get_child_store(*color)
    block = Store(handle=child, shape=tuple(int(x) for x in child.shape), dtype=arg.store.dtype,
                  block_of=(arg.store, arg.tile, color))  # may be an empty block past the store's end
    return block, arg.privilege


def _pinned_args(listed: Sequence[tuple[Store, Privilege]]) -> list[Arg] | None:
    """The arguments of a pinned launch as tiles of their whole stores, for a two-point launch whose
    point 0 gets the block and point 1 an empty tile past the store's end (point 1 runs nothing).

    A one-point launch would be run by Legate as a single task handed whole stores (see
    `index_launch`), and launching on sub-stores made freeing their store crash Legion (SIGSEGV in
    `DiscardOp::trigger_ready -> EqKDNode::find_to_get_previous`, issue 11 reproducer 4). None
    where this form does not apply: an empty store, two blocks of one store in the launch, or a
    view written to; and where it is not needed: every store is a whole store of its own (no block,
    no view), which a one-point launch hands its single task as it should (one task, not two).
    """
    if all(store.block_of is None and not getattr(store.handle, "transformed", False) for store, _ in listed):
        return None
    args: list[Arg] = []
    seen: set[int] = set()
    for store, privilege in listed:
        if store.block_of is not None:
            base, tile, color = store.block_of
        elif getattr(store.handle, "transformed", False):  # a view (a slice, a promoted scalar)
            if privilege is not Privilege.READ:
                return None
            args.append(Arg(store, privilege))  # read whole by both points
            continue
        else:
            base, tile, color = store, store.shape, (0,) * store.ndim
        if base.ndim == 0 or any(n == 0 for n in base.shape) or id(base) in seen:
            return None
        seen.add(id(base))
        colors = tuple(max(n, c + 1) for n, c in zip(tile_colors(base.shape, tile), color, strict=True))
        past = colors[0]  # a color of dimension 0 past the store and past `color`: an empty tile
        projection = (Affine(0, past - color[0], color[0]),
                      *(Affine(None, 0, c) for c in color[1:]))
        args.append(Arg(base, privilege, tuple(tile), projection, (past + 1, *colors[1:])))
    return args


def _submit_pinned(key: int, listed: Sequence[tuple[Store, Privilege]], point: Sequence[int]) -> None:
    """One launch of kernel `key` at `point` with `listed`'s blocks, in the current machine scope."""
    args = _pinned_args(listed)
    if args is None:
        _submit(key, [Arg(store, privilege) for store, privilege in listed], [0], [1],
                whole_stores=True, pinned=tuple(point))
    else:
        _submit(key, args, [0], [2], whole_stores=False, pinned=tuple(point))


def point_launch(key: int, args: Sequence[Store | tuple[Store, Privilege]],
                 point: Sequence[int], processor: int, target: str = "cpu") -> None:
    """Run kernel `key` once, at launch point `point`, on processor `processor` of kind `target`.

    For accesses a projection cannot express (rotations such as Cannon's
    `(i + j + k) mod g`): pass sub-stores (`tile_of`) with their privileges.
    Each call is pinned to one processor, so a loop of point launches
    spreads over the machine as the caller says.
    """
    count = _check_target(target)
    if not 0 <= processor < count:
        raise DistalError(f"expected a {target.upper()} processor in [0, {count}), but found {processor}")
    listed = [a if isinstance(a, tuple) else (a, Privilege.READ) for a in args]
    with target_scope(target, slice(processor, processor + 1)):
        _submit_pinned(key, listed, point)


def _check_target(target: str) -> int:
    """The number of `target` processors; refuses a kind Legate runs none of."""
    count = processor_count(target)
    if count == 0:
        raise DistalError(
            f"expected {target.upper()} processors to launch on, but Legate runs none "
            f"(start it with --{target}s N)"
        )
    if processor_kind(target).device_arrays:
        require_device_arrays()
    return count
