"""Running a lowered plan (`distal.lower.Plan`) on Legate.

Every launch of the plan becomes a `index_launch` of the group's kernel over
the launch's box, or, for pinned launches (rotations), a `point_launch` on
the real processor bound to the point's abstract processor
(`Machine.bind`). Where a launch has more points than real processors, the
points bound to one processor run as one task when their tiles form a box of
every operand (`distal.lower.grouping`; `_submit_groups`, `DISTAL_GROUP_TASKS=0`
turns it off). Everything goes through this package's launch and store
functions, so their guards against Legate's wrong-data behaviours apply:
stores are made written in full (`from_numpy`, `zeros`), outputs are
read-write or reductions, results are copied out last (`to_numpy`).

Tensor data lives on `tensor.storage` as a `TensorStore`: an input gets one
from its NumPy data on first use and keeps it; the output gets the store the
plan wrote, so `tensor.to_numpy()` reads the result. A 0-d tensor is a store
of shape (1,).

A plan with a synthesized reduction (`Plan.reduction`, `distal.lower.reductions`)
runs its REDUCE_ADD launches differently: the output's argument becomes the
launch point's processor block of a partials store of shape
``(*machine.full_shape, prod(row))`` (read-write, projected by the processor
coordinate, so launches stay index launches), and the kernel adds its
contribution (computed into a zero buffer, as Legate's reduction would hand
it) into that block, seen as `row`. After the launches, one pinned copy per
grouped processor moves its block into row ``device`` of a
``(machine.size, prod(row))`` store (Legate cannot partition a delinearized
store, so the flat device dimension the reduction runtime wants cannot be
projected directly), `reduce_on_machine` runs the program (and waits for
it), and one pinned task per group adds the first member's sum, cropped to
the group's box, into that box of the output.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from distal.errors import DistalError
from distal.format.machine import processor_kind
from distal.lower import task_body
from distal.lower.grouping import Cut, TaskGroups, check_cuts, grouping_enabled, partials_operand, processor_groups
from distal.lower.in_place import placement_layout
from distal.lower.memory import check_plan_memory
from distal.lower.plan import Box, Group, Launch, Operand, Plan, Privilege, Proj, Reduction, TensorInfo
from distal.notation.storage import HostStorage
from distal.redist.formats import Layout

from ._launch import Affine, Arg, Recorded, index_launch, point_launch, recording, replay
from ._launch import Privilege as RtPrivilege
from ._make import fill, from_numpy, unwritten, zeros
from ._placed import PlacedOperand, block_tiles, placed_operand, replicate
from ._reduce import ReduceRecord, reduce_on_machine
from ._registry import kernel as kernel_of
from ._registry import register_kernel
from ._start import ensure_started, processor_count
from ._store import Store, fence, keep_until_fence, live_bytes, stores_made, tile_of, wrap
from ._target import resolve_target, target_scope
from ._tensor_storage import FormatStore, TensorStore, adopt, block_grid, from_store, gather

__all__ = ["TensorStore", "run_plan", "store_of"]

_PRIVILEGES = {
    Privilege.READ: RtPrivilege.READ,
    Privilege.WRITE: RtPrivilege.WRITE,
    Privilege.READ_WRITE: RtPrivilege.READ_WRITE,
    Privilege.REDUCE_ADD: RtPrivilege.REDUCE_ADD,
}
_lock = threading.Lock()


def _store_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


def placed_of(plan: Plan, info: TensorInfo) -> FormatStore | None:
    """The device blocks of a tensor with a format, placed now if it was not yet (None without a format).

    A tensor made by `Tensor.from_array` before Legate ran, or given a
    format after it had data, is placed here, at its first use on Legate
    (the placement statement of its format, `_tensor_storage.place_store`).
    """
    t = plan.tensor(info)
    fmt = info.tensor.format  # the format the plan was scheduled with
    if fmt is None or fmt.order != len(info.shape) or fmt.params:
        return None  # a symbolic machine has no processors to place on
    held = t.storage
    if not (isinstance(held, FormatStore) and held.format == fmt and held.shape == info.shape
            and held.dtype == info.dtype):
        held = adopt(held, t.to_numpy, fmt, info.dtype, info.shape)
        t.bind(held)  # the data lives on Legate now; to_numpy() reads it from there
    return held


def store_of(plan: Plan, info: TensorInfo) -> Store:
    """The Legate store holding `info.tensor`'s whole data, made from its NumPy data if needed.

    A tensor with a format gives its blocks' global store (`FormatStore.store`,
    assembled by launches); plans use it only where their tiles are not
    the format's blocks (see `run_plan`).
    """
    t = plan.tensor(info)
    held = t.storage
    placed = placed_of(plan, info)
    if placed is not None:
        return placed.store
    if isinstance(held, TensorStore) and held.shape == info.shape and held.store.dtype == info.dtype:
        return held.store
    if isinstance(held, FormatStore) and held.shape == info.shape and held.dtype == info.dtype:
        return held.store
    held = t.storage
    # host data is read in place (Legate copies it into the store: one copy, not two)
    host = held.view() if isinstance(held, HostStorage) else t.to_numpy()
    data = np.asarray(host, dtype=info.dtype).reshape(_store_shape(info.shape))
    store = from_numpy(data)
    t.bind(TensorStore(store, info.shape))
    return store


def _output_store(plan: Plan, info: TensorInfo, fresh: list[tuple[Store, tuple[int, ...] | None]]) -> Store:
    """The store the plan writes its output into; for `=` plans a new one, appended to `fresh` unwritten.

    `run_plan` either lets the first launch write it (`_first_launch_writes`)
    or fills it with zeros before the launches.
    """
    if not plan.zero_output:
        placed = placed_of(plan, info)
        if placed is not None:
            return gather(placed)  # a copy the plan updates; its blocks are laid out again after
        return store_of(plan, info)
    tile = None
    n = plan.tensors.index(info)
    for _, launch in plan.launches():
        op = launch.operands[n]
        if op.tile is not None and not launch.pinned:
            tile = op.tile
        break
    shape = _store_shape(info.shape)
    if 0 in shape:
        return zeros(shape, info.dtype, tile=tile)
    previous = plan.tensor(info).storage
    old = previous.store if isinstance(previous, TensorStore) else None
    store = old if old is not None and reusable(old, shape, info.dtype) else unwritten(shape, info.dtype)
    fresh.append((store, tile))
    return store


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


def _key(plan: Plan, group_index: int, placed: dict[int, PlacedOperand]) -> int:
    # Transient: released at the next fence so that the task body (and the
    # tensors it holds) can be freed; running the plan again registers it again.
    kernel = plan.groups[group_index].kernel
    return register_kernel(block_tiles(plan, plan.groups[group_index], kernel, placed), kernel.name, transient=True)


def _arg(stores: list[Store], placed: dict[int, PlacedOperand], launch: Launch, op: Operand) -> Arg:
    privilege = _PRIVILEGES[op.privilege]
    if op.tensor in placed:
        return placed[op.tensor].arg(launch, op, privilege)
    store = stores[op.tensor]
    if op.tile is None or op.projection is None:
        return Arg(store, privilege)
    projection = tuple(Affine(p.dim, p.coeff, p.offset) if p.dim is not None else Affine(None, 0, p.offset)
                       for p in op.projection)
    return Arg(store, privilege, op.tile, projection, op.colors)


def _pinned_arg(stores: list[Store], placed: dict[int, PlacedOperand], launch: Launch, op: Operand,
                point: tuple[int, ...]) -> tuple[Store, RtPrivilege]:
    privilege = _PRIVILEGES[op.privilege]
    if op.tensor in placed:
        return placed[op.tensor].pinned(launch, op, point, privilege)
    store = stores[op.tensor]
    color = op.color(point)
    if op.tile is None or color is None:
        return store, privilege
    # A point whose box is empty may have a color past the last tile (it touches
    # nothing there); any tile will do, so take the last one.
    last = tuple(max(-(-n // t) - 1, 0) for n, t in zip(store.shape, op.tile))
    return tile_of(store, op.tile, tuple(min(c, m) for c, m in zip(color, last))), privilege


def _own_stores(plan: Plan) -> list[Store]:
    """The stores the plan's tensors hold now (their storage's `Store` fields; no gather is made)."""
    out: list[Store] = []
    for info in plan.tensors:
        storage: Any = plan.tensor(info).storage
        if storage is None or not hasattr(storage, "__dataclass_fields__"):
            continue
        out.extend(v for f in fields(storage) if isinstance(v := getattr(storage, f.name), Store))
    return out


def _check_memory(plan: Plan) -> None:
    """`check_plan_memory` against Legate's memory less what other live tensors hold; before refusing,
    one fence frees the stores nothing references any more, and the plan is checked again."""
    machine = ensure_started()
    staging = max((i.size * i.itemsize for i in plan.tensors
                   if not i.output and not plan.tensor(i).on_legate), default=0)
    try:
        check_plan_memory(plan, machine, live_bytes(_own_stores(plan)), staging)
    except DistalError:
        fence()
        check_plan_memory(plan, machine, live_bytes(_own_stores(plan)), staging)


_REPLAY = "replay"  # the key of a plan's `_Replay` in `Plan.memo`


@dataclass(eq=False)
class _Replay:
    """A plan's launches as one run submitted them, to submit again while nothing they depend on changed.

    Valid while every tensor of the plan holds the storage it held after that run (the output the one the
    run bound) and task grouping is as it was; the run made no store (a run that makes one, such as a
    first run placing its inputs or a `+=` plan gathering its placed output, is not kept).
    """

    grouping: bool
    storages: tuple[Any, ...]
    launches: tuple[Recorded, ...]
    live: int  # live_bytes() after the run: the memory check is repeated only when more is held

    def matches(self, plan: Plan) -> bool:
        if grouping_enabled() != self.grouping:
            return False
        for info, held in zip(plan.tensors, self.storages):
            if plan.tensor(info).storage is not held:
                return False
        return True


def run_plan(plan: Plan, *, wait: bool = False, trace: list[ReduceRecord] | None = None) -> None:
    """Run every launch of `plan` on Legate; the output tensor's storage then holds the result.

    Launches are asynchronous; reading the output (`tensor.to_numpy()`)
    waits for them, as does `wait=True`. A synthesized reduction waits for
    its program (see the module docstring); `trace` (if given) receives one
    `ReduceRecord` per step of its program.

    A run that made no store keeps its launches (`_Replay`, in `plan.memo`):
    the next runs submit them again as they were, without working anything
    out again, for as long as the plan's tensors hold the same storage
    (`DISTAL_REPLAY=0` turns this off).
    """
    kept: _Replay | None = plan.memo.get(_REPLAY)
    if kept is not None:
        if kept.matches(plan) and _replay_enabled():
            if live_bytes() > kept.live:
                _check_memory(plan)
            for recorded in kept.launches:
                replay(recorded)
                keep_until_fence(recorded)
            if wait:
                fence()
            return
        del plan.memo[_REPLAY]
        keep_until_fence(kept)  # its partitions go at the next fence, when nothing queued uses them
    red = plan.reduction if plan.reduction is not None and plan.reduction.synthesized else None
    if red is not None or trace is not None or not _replay_enabled():
        _run(plan, trace)
    else:
        with recording() as made:
            _run(plan, trace)
        if made.launches is not None and stores_made() == made.made:
            plan.memo[_REPLAY] = _Replay(grouping_enabled(), tuple(plan.tensor(i).storage for i in plan.tensors),
                                         tuple(made.launches), live_bytes())
    if wait:
        fence()


def _replay_enabled() -> bool:
    return os.environ.get("DISTAL_REPLAY", "1") != "0"


def _run(plan: Plan, trace: list[ReduceRecord] | None) -> None:
    """One run of the plan, working out every launch (see `run_plan`)."""
    _check_memory(plan)  # OutOfMemory before anything is queued (distal.lower.memory)
    target = plan_target(plan)
    if processor_kind(target).device_arrays:
        import cupy  # noqa: F401  (import it here, on the main thread, not inside the first GPU task)
    red = plan.reduction if plan.reduction is not None and plan.reduction.synthesized else None
    fresh: list[tuple[Store, tuple[int, ...] | None]] = []  # the `=` output's new store: zeros, or first launch
    placed = _placed_operands(plan, red, fresh)
    stores = []
    for n, info in enumerate(plan.tensors):
        if n in placed:
            stores.append(placed[n].held.blocks)  # read and written in place, block by block
        else:
            stores.append(_output_store(plan, info, fresh) if info.output else store_of(plan, info))
    binding: dict[tuple[int, ...], int] | None = None
    launch_stores = stores
    if red is not None:
        # every launch reduces into the output (distal.lower.reductions checks it)
        launch_stores = list(stores)
        launch_stores[red.tensor] = _partials_store(plan, red)
    first = _first_launch_writes(plan, launch_stores, placed) if fresh and red is None else None
    # group the points of a processor into one task (distal.lower.grouping); a symbolic machine is not bound
    grouping = grouping_enabled() and plan.machine is not None and not plan.machine.params
    if first is None:
        for store, tile in fresh:
            fill(store, 0, tile)
    for g, group in enumerate(plan.groups):
        if not group.launches:
            continue
        key = _key(plan, g, placed) if red is None else _partial_key(plan, g, red, placed)
        for launch in group.launches:
            if red is not None:
                launch = _into_partials(plan, red, launch)
            if binding is None and (grouping or launch.pinned or not group.covers_domain(launch)):
                binding = _binding(plan, target)  # {} without a machine
            if first is not None:  # the first launch zeroes the output's tiles itself, then runs the body
                assert launch is first
                first = None
                position = _output_position(plan, launch)
                args = [_arg(launch_stores, placed, launch, op) for op in launch.operands]
                args[position] = replace(args[position], privilege=RtPrivilege.WRITE)  # written in full
                _run_whole(plan, group, _zero_first_key(plan, g, placed, position), launch, args,
                           binding if grouping else None, target)
                continue
            if launch.pinned:
                assert binding is not None
                _run_pinned(plan, group, key, launch, launch_stores, placed, binding, target)
            elif group.covers_domain(launch) or plan.machine is None:
                args = [_arg(launch_stores, placed, launch, op) for op in launch.operands]
                _run_whole(plan, group, key, launch, args, binding if grouping else None, target)
            else:
                assert binding is not None
                _run_part(plan, group, key, launch, launch_stores, placed, binding, target, grouping)
    if red is not None:
        _reduce_into_output(plan, red, launch_stores[red.tensor], stores[red.tensor], trace, target)
    _keep_output(plan, stores, placed)


def _placed_operands(plan: Plan, red: Reduction | None,
                     fresh: list[tuple[Store, tuple[int, ...] | None]]) -> dict[int, PlacedOperand]:
    """The tensors whose tiles in every launch are their format's device blocks: used in place.

    The output of a synthesized reduction is not (its launches write
    per-processor partials instead). A new output's blocks (`=`) are
    appended to `fresh` unwritten.
    """
    out: dict[int, PlacedOperand] = {}
    for n, info in enumerate(plan.tensors):
        if red is not None and n == red.tensor:
            continue
        if info.output and plan.zero_output:
            lay = placement_layout(info)
            if lay is None:
                continue
            previous = plan.tensor(info).storage
            view = placed_operand(plan, n, lay, functools.partial(_fresh_blocks, lay, info.dtype, fresh, previous))
        else:
            held = placed_of(plan, info)
            if held is None:
                continue
            view = placed_operand(plan, n, held.layout, functools.partial(_identity, held))
        if view is not None:
            out[n] = view
    return out


def _identity(held: FormatStore) -> FormatStore:
    return held


def _fresh_blocks(lay: Layout, dtype: np.dtype[Any], fresh: list[tuple[Store, tuple[int, ...] | None]],
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


def _first_launch_writes(plan: Plan, stores: list[Store], placed: dict[int, PlacedOperand]) -> Launch | None:
    """The plan's first launch, when it can zero the output itself and write it with `WRITE`.

    That is when it is an index launch over the whole domain (not pinned,
    not a part) whose points take distinct tiles of the output that together
    cover every element: the launch then writes the new store in full, so no
    separate zero-fill launch is needed (a partial write of a never-written
    store then a read aborts, LEGATE_NOTES.md behaviour 2, so anything less
    falls back to the fill). None otherwise.
    """
    from ._launch import _coverage

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
    arg = _arg(stores, placed, launch, ops[0])
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


_COVERAGE_LIMIT = 1 << 16  # as runtime._launch: a larger launch's coverage is not checked


def _output_position(plan: Plan, launch: Launch) -> int:
    n = plan.tensors.index(plan.output)
    return next(p for p, op in enumerate(launch.operands) if op.tensor == n)


def _zero_first_key(plan: Plan, group_index: int, placed: dict[int, PlacedOperand], position: int) -> int:
    """The group's kernel, preceded in each task by zeroing the output's tile (transient, as `_key`)."""
    group = plan.groups[group_index]
    inner = block_tiles(plan, group, group.kernel, placed)
    return register_kernel(_ZeroFirst(inner, position), group.kernel.name, transient=True)


@dataclass(eq=False)
class _ZeroFirst:
    """A kernel that zeroes its output argument (the whole tile or block) before running."""

    kernel: Any
    position: int

    def __call__(self, point: tuple[int, ...], *tiles: Any) -> None:
        fresh = getattr(self.kernel, "run_fresh", None)  # a task body, or BlockTiles around one
        if fresh is None:
            task_body.zero_fill(tiles[self.position])
            self.kernel(point, *tiles)
        else:  # it zero-fills the tile only where its first step does not write it whole (TaskBody.run_fresh)
            fresh(point, self.position, *tiles)


def _keep_output(plan: Plan, stores: list[Store], placed: dict[int, PlacedOperand]) -> None:
    """Give the output tensor its data: its blocks (copies along broadcast dimensions made), laid
    out by its format from the written store, or the written store itself without a format."""
    out = plan.output
    n = plan.tensors.index(out)
    fmt = out.tensor.format
    held_by = plan.tensor(out)
    if n in placed:
        held = FormatStore(placed[n].held.blocks, placed[n].held.layout, out.dtype)
        replicate(held)
        held_by.bind(held)
    elif fmt is not None and fmt.order == len(out.shape) and not fmt.params:
        held_by.bind(from_store(stores[n], fmt))
    else:
        held_by.bind(TensorStore(stores[n], out.shape))


# -- synthesized reductions ----------------------------------------------------------------


def _partials_store(plan: Plan, red: Reduction) -> Store:
    """Zeros of shape (*machine.full_shape, prod(row)): one flat `row` block per abstract processor."""
    assert plan.machine is not None
    lead = plan.machine.full_shape
    size = math.prod(red.row)
    return zeros((*lead, size), plan.tensors[red.tensor].dtype, tile=(*(1 for _ in lead), size))


def _into_partials(plan: Plan, red: Reduction, launch: Launch) -> Launch:
    """`launch` with the output's operand replaced by the points' processor blocks of the partials."""
    operand = partials_operand(plan, red)
    operands = tuple(operand if op.tensor == red.tensor else op for op in launch.operands)
    return replace(launch, operands=operands)


@dataclass(eq=False)
class _IntoPartials:
    """A group's kernel whose output tile is a point's processor block of the partials store.

    The kernel gets a zero buffer of the point's real output box (what
    Legate's reduction hands it) and the buffer is added into the block.
    """

    kernel: Any
    reduction: Reduction
    index: int
    lead: int  # leading processor dimensions of the block
    boxes: dict[tuple[int, ...], Box]

    def __call__(self, point: tuple[int, ...], *tiles: Any) -> None:
        from distal.lower.numpy_exec import partial_view

        args = list(tiles)
        block = args[self.index][(0,) * self.lead]
        real = partial_view(self.reduction, block, self.boxes[tuple(int(x) for x in point)])
        buffer = real.copy()
        buffer[...] = 0
        args[self.index] = buffer
        self.kernel(point, *args)
        real += buffer


def _partial_key(plan: Plan, group_index: int, red: Reduction, placed: dict[int, PlacedOperand]) -> int:
    # Transient, like the plan's own kernel: the wrapper holds the task body.
    group = plan.groups[group_index]
    info = plan.tensors[red.tensor]
    boxes = {p: launch.operands[red.tensor].box(p, info.shape)
             for launch in group.launches for p in launch.points()}
    assert plan.machine is not None
    kernel = block_tiles(plan, group, group.kernel, placed)
    wrapper = _IntoPartials(kernel, red, red.tensor, len(plan.machine.full_shape), boxes)
    return register_kernel(wrapper, f"{group.kernel.name}_partials", transient=True)


def _copy_kernel(point: tuple[int, ...], source: np.ndarray, out: np.ndarray) -> None:
    out[...] = source.reshape(out.shape)


@dataclass(frozen=True)
class _AddBox:
    """Add the `local` box of a flat partial, seen as `row`, into the output's box."""

    row: tuple[int, ...]
    local: Box

    def __call__(self, point: tuple[int, ...], source: np.ndarray, out: np.ndarray) -> None:
        block = source.reshape(self.row)[tuple(slice(lo, hi) for lo, hi in self.local)]
        out += block.reshape(out.shape)


_helper_keys: dict[Any, int] = {}


def _helper(what: Any) -> int:
    """The key of the copy kernel ("copy") or of an `_AddBox`."""
    with _lock:
        key = _helper_keys.get(what)
        if key is None:
            fn = _copy_kernel if what == "copy" else what
            key = register_kernel(fn, f"distal_reduction_{'copy' if what == 'copy' else 'add'}")
            _helper_keys[what] = key
        return key


def _reduce_into_output(plan: Plan, red: Reduction, partials: Store, output: Store,
                        trace: list[ReduceRecord] | None, target: str) -> None:
    """Flatten the grouped processors' blocks, run the program, add each group's sum into its tile.

    The copies and the final additions run on the plan's processors; the
    reduction program's own steps run on the CPUs (`reduce_on_machine`).
    """
    machine = plan.machine
    assert machine is not None and red.plan is not None
    binding = _binding(plan, target)
    coords = list(machine.coords())
    lead = len(machine.full_shape)
    size = math.prod(red.row)
    flat = zeros((machine.size, size), partials.dtype, tile=(1, size))
    copy = _helper("copy")
    for device in sorted(d for g in red.groups for d in g):
        block = tile_of(partials, (*(1 for _ in range(lead)), size), (*coords[device], 0))
        row = wrap(flat.handle.slice(0, slice(device, device + 1)), flat.dtype)
        point_launch(copy, [(block, RtPrivilege.READ), (row, RtPrivilege.WRITE)], (device,),
                     binding.get(coords[device], 0), target)
    result = reduce_on_machine(machine, flat, red.groups, red.plan, trace)
    for devices, box in zip(red.groups, red.boxes):
        root = devices[0]
        add = _helper(_AddBox(red.row, red.local(box)))
        source = wrap(result.handle.slice(0, slice(root, root + 1)), result.dtype)
        box_of_output = output
        for d, (lo, hi) in enumerate(box):
            box_of_output = wrap(box_of_output.handle.slice(d, slice(lo, hi)), output.dtype)
        point_launch(add, [(source, RtPrivilege.READ), (box_of_output, RtPrivilege.READ_WRITE)], (root,),
                     binding.get(coords[root], 0), target)


def _run_part(plan: Plan, group: Group, key: int, launch: Launch, stores: list[Store],
              placed: dict[int, PlacedOperand], binding: dict[tuple[int, ...], int], target: str,
              grouping: bool = False) -> None:
    """A launch over part of the domain: one launch per real processor, pinned to it.

    Legate would spread the points of a partial launch over all processors;
    each point must run where `Machine.bind` puts its abstract processor.
    With `grouping`, a processor's points that form a box whose tiles are
    boxes of every operand run as one task (`distal.lower.grouping`).
    """
    by_proc: dict[int, list[tuple[int, ...]]] = {}
    for p in launch.points():
        by_proc.setdefault(binding.get(plan.processor_of(group, p), 0), []).append(p)
    args = [_arg(stores, placed, launch, op) for op in launch.operands]
    for proc, points in by_proc.items():
        lower = tuple(min(p[d] for p in points) for d in range(len(launch.lower)))
        upper = tuple(max(p[d] for p in points) + 1 for d in range(len(launch.lower)))
        is_box = math.prod(hi - lo for lo, hi in zip(lower, upper)) == len(points)
        if is_box and grouping and _submit_groups(plan, group, key, lower, upper, args, _Constant(proc), target,
                                                  ("part", proc)):
            continue
        if is_box:
            with target_scope(target, slice(proc, proc + 1)):
                index_launch(key, tuple(hi - lo for lo, hi in zip(lower, upper)), args, lower=lower,
                             target=target)
        else:
            for p in points:
                point_launch(key, [_pinned_arg(stores, placed, launch, op, p) for op in launch.operands], p, proc,
                             target)


def _run_whole(plan: Plan, group: Group, key: int, launch: Launch, args: list[Arg],
               binding: dict[tuple[int, ...], int] | None, target: str) -> None:
    """A launch over the whole domain (or a plan without a machine): one index launch; with a `binding`
    (grouping on), the points bound to one real processor run as one task where that is safe."""
    if binding is not None and plan.machine is not None and _submit_groups(
            plan, group, key, launch.lower, launch.upper, args,
            lambda p: binding.get(plan.processor_of(group, p), 0), target,
            (group.distributed, target, processor_count(target))):
        return
    # Legate maps the points of a launch over the whole domain block-wise in
    # row-major order, as Machine.bind does (measured), so no pinning is needed.
    index_launch(key, launch.shape, args, lower=launch.lower, target=target)


def _cuts(args: list[Arg], ndim: int) -> list[Cut] | None:
    """The launch arguments as `distal.lower.grouping` sees them (None: a projection it cannot read)."""
    out = []
    for a in args:
        written = a.privilege is not RtPrivilege.READ
        if a.tile is None:
            out.append(Cut(None, None, None, written))
            continue
        try:
            maps = a.maps(ndim)
        except DistalError:
            return None
        out.append(Cut(a.tile, tuple(Proj(m.launch_dim, m.coefficient, m.offset) for m in maps),
                       a.color_shape(), written))
    return out


# A launch box's grouping: its groups, per argument its group tile, projection and colors, and per group its
# points with their slices.
_Grouping = tuple[TaskGroups, tuple[tuple[tuple[int, ...], tuple[Affine, ...], tuple[int, ...]] | None, ...],
                  dict[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[tuple[slice, ...] | None, ...]], ...]]]


def _grouping(plan: Plan, lower: tuple[int, ...], upper: tuple[int, ...], args: list[Arg],
              owner: Callable[[tuple[int, ...]], int], memo: tuple[Any, ...]) -> _Grouping | None:
    """`task_groups` of the box as a `_Grouping`; None where the box runs one task per point. Worked out once
    per plan (`Plan.memo`) under ``memo`` (what ``owner`` depends on) and the box, then the cuts (not
    worked out where the points alone say no)."""
    box_key = ("task groups", memo, lower, upper)
    if box_key in plan.memo:
        skeleton = plan.memo[box_key]
    else:
        found_box = processor_groups(lower, upper, owner)
        skeleton = plan.memo[box_key] = None if isinstance(found_box, str) else found_box
    if skeleton is None:
        return None
    cuts = _cuts(args, len(lower))
    if cuts is None:
        return None
    found_key = (box_key, tuple(cuts))
    if found_key in plan.memo:
        found: _Grouping | None = plan.memo[found_key]
        return found
    groups = check_cuts(skeleton, cuts)
    found = None
    if not isinstance(groups, str):
        grouped: list[tuple[tuple[int, ...], tuple[Affine, ...], tuple[int, ...]] | None] = []
        for cut in cuts:
            gc = groups.cut(cut)
            if gc.tile is None or gc.projection is None or gc.colors is None:
                grouped.append(None)
            else:
                grouped.append((gc.tile, tuple(Affine(p.dim, p.coeff, p.offset) for p in gc.projection), gc.colors))
        members = {q: tuple((p, tuple(groups.slices(c, p) for c in cuts)) for p in groups.points(q))
                   for q in groups.groups()}
        found = (groups, tuple(grouped), members)
    plan.memo[found_key] = found
    return found


def _submit_groups(plan: Plan, group: Group, key: int, lower: tuple[int, ...], upper: tuple[int, ...],
                   args: list[Arg], owner: Callable[[tuple[int, ...]], int], target: str,
                   memo: tuple[Any, ...]) -> bool:
    """Run the launch box [lower, upper) as one task per processor group (`distal.lower.grouping.task_groups`);
    False (nothing submitted) where it must run one task per point. ``memo``: what ``owner`` depends on."""
    found = _grouping(plan, tuple(lower), tuple(upper), args, owner, memo)
    if found is None:
        return False
    groups, cut_args, members = found
    grouped = [a if c is None else Arg(a.store, a.privilege, c[0], c[1], c[2]) for a, c in zip(args, cut_args)]
    wrapper = register_kernel(_Grouped(kernel_of(key)[1], members), f"{group.kernel.name}_grouped", transient=True)
    if groups.processors == tuple(range(groups.tasks)):
        # one point per processor, in row-major order: Legate maps them as Machine.bind does (see _run_whole)
        index_launch(wrapper, groups.count, grouped, target=target)
        return True
    for q, proc in zip(groups.groups(), groups.processors):
        with target_scope(target, slice(proc, proc + 1)):
            index_launch(wrapper, (1,) * len(q), grouped, lower=q, target=target)
    return True


@dataclass(frozen=True)
class _Constant:
    """The owner of every point of a box bound to one processor."""

    proc: int

    def __call__(self, point: tuple[int, ...]) -> int:
        return self.proc


@dataclass(eq=False)
class _Grouped:
    """A kernel run once per launch point of a group, in row-major order, on each point's views of the
    group's tiles (`members[group]`: per point, its slices per argument, None for the whole tile)."""

    kernel: Any
    members: dict[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[tuple[slice, ...] | None, ...]], ...]]

    def __call__(self, point: tuple[int, ...], *tiles: Any) -> None:
        kernel = self.kernel
        for p, index in self.members[tuple(int(x) for x in point)]:
            try:
                kernel(p, *[t if i is None else t[i] for t, i in zip(tiles, index)])
            except BaseException as error:  # the task records it under the group's point: name the point too
                error.add_note(f"at launch point {p} (run in the task of group {tuple(point)})")
                raise


def plan_target(plan: Plan) -> str:
    """The processor kind `plan`'s launches run on (its machine's, or the CPUs; see `_target`)."""
    return resolve_target(plan.machine.kind if plan.machine is not None else "cpu")


def _binding(plan: Plan, target: str) -> dict[tuple[int, ...], int]:
    """`Machine.bind` of the plan's machine to the `target` processors, worked out once per plan (`Plan.memo`)."""
    if plan.machine is None:
        return {}
    key = ("binding", target, processor_count(target))
    found: dict[tuple[int, ...], int] | None = plan.memo.get(key)
    if found is None:
        found = plan.memo[key] = plan.machine.bind(key[2])
    return found


def _run_pinned(plan: Plan, group: Group, key: int, launch: Launch, stores: list[Store],
                placed: dict[int, PlacedOperand], binding: dict[tuple[int, ...], int], target: str) -> None:
    point = launch.lower
    proc = binding.get(plan.processor_of(group, point), 0)
    args = [_pinned_arg(stores, placed, launch, op, point) for op in launch.operands]
    point_launch(key, args, point, proc, target)

