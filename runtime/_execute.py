"""Running a lowered plan (`distal.lower.task_graph.PlanBase`) on Legate: finish it, then interpret it.

`run_plan(plan)` first finishes the plan for the processors it runs on
(`distal.lower.executable.finalize`, once per plan, processors and
configuration): the `Executable` holds the binding of its machine
(`Machine.bind`), the task groups, the tensors read in place, a synthesized
reduction's program and the memory check. This module only interprets it.
Every launch of the plan becomes a `index_launch` of the group's kernel over
the launch's box, or, for pinned launches (rotations), a `point_launch` on
the real processor bound to the point's abstract processor. Where a launch
has more points than real processors, the points bound to one processor run
as one task where the executable grouped them (`distal.lower.grouping`;
`_submit_groups`, `DISTAL_GROUP_TASKS=0` turns it off). Everything goes through this package's launch and store
functions, so their guards against Legate's wrong-data behaviours apply:
stores are made written in full (`from_numpy`, `zeros`), outputs are
read-write or reductions, results are copied out last (`to_numpy`).

Tensor data lives on `tensor.storage` as a `TensorStore`: an input gets one
from its NumPy data on first use and keeps it; the output gets the store the
plan wrote, so `tensor.to_numpy()` reads the result. A 0-d tensor is a store
of shape (1,).

A plan with a synthesized reduction (`Plan.reduction`, `distal.lower.reductions`)
runs its REDUCE_ADD launches into per-processor partials, then the
reduction program and the sums into the output (`_reduce`, its module
docstring says how). A held reduction (`Executable.held`: sequential steps
under the output's `communicate` loop) runs them into the same partials and,
after the last launch of each stage, reduces every processor's partial into
its tile of the output once (`_reduce.fold_held`).

The other jobs of a run are in their own modules: a plan's operands as
launch arguments (`_launch_args`), the `=` output's new store and the first
launch that writes it (`_fresh_output`), and which points run as one task
(`_group_tasks`).
"""

from __future__ import annotations

import functools
import math
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from distal.errors import DistalError
from distal.lower.executable import Executable, TaskGrouping, finalize
from distal.lower.task_graph import Group, Launch, PlanBase, TensorInfo
from distal.machine.grid import processor_kind
from distal.notation.storage import HostStorage

from ._fresh_output import first_launch_writes, fresh_blocks, output_position, reusable, zero_first_key
from ._group_tasks import Grouped
from ._launch import Arg, Privilege, Recorded, index_launch, point_launch, replay
from ._launch_args import launch_arg, pinned_arg
from ._make import fill, from_numpy, unwritten, zeros
from ._placed import PlacedOperand, block_tiles, placed_operand, replicate
from ._recording import recording
from ._reduce import ReduceRecord, fold_held, partials_key, partials_store, reduce_into_output
from ._registry import kernel as kernel_of
from ._registry import register_kernel
from ._start import ensure_started
from ._store import Store, fence, keep_until_fence, live_bytes, stores_made
from ._target import resolve_target, target_scope
from ._tensor_storage import FormatStore, TensorStore, adopt, forget_mirror, from_store, gather

__all__ = ["TensorStore", "run_plan", "store_of"]


def _store_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


def placed_of(plan: PlanBase, info: TensorInfo) -> FormatStore | None:
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


def store_of(plan: PlanBase, info: TensorInfo) -> Store:
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


def _output_store(plan: PlanBase, info: TensorInfo, fresh: list[tuple[Store, tuple[int, ...] | None]]) -> Store:
    """The store the plan writes its output into; for `=` plans a new one, appended to `fresh` unwritten.

    `run_plan` either lets the first launch write it (`first_launch_writes`)
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


def _key(plan: PlanBase, group_index: int, placed: dict[int, PlacedOperand]) -> int:
    # Transient: released at the next fence so that the task body (and the
    # tensors it holds) can be freed; running the plan again registers it again.
    kernel = plan.groups[group_index].body
    return register_kernel(block_tiles(plan, plan.groups[group_index], kernel, placed), kernel.name, transient=True)


def _own_stores(plan: PlanBase) -> list[Store]:
    """The stores the plan's tensors hold now (their storage's `Store` fields; no gather is made)."""
    out: list[Store] = []
    for info in plan.tensors:
        storage: Any = plan.tensor(info).storage
        if storage is None or not hasattr(storage, "__dataclass_fields__"):
            continue
        out.extend(v for f in fields(storage) if isinstance(v := getattr(storage, f.name), Store))
    return out


def _check_memory(plan: PlanBase, exe: Executable) -> None:
    """The executable's memory check (`Executable.check_memory`) against Legate's memory less what other live
    tensors hold; before refusing, one fence frees the stores nothing references any more, and the plan is
    checked again."""
    machine = ensure_started()
    staging = max((i.size * i.itemsize for i in plan.tensors
                   if not i.output and not plan.tensor(i).on_legate), default=0)
    try:
        exe.check_memory(plan, machine, live_bytes(_own_stores(plan)), staging)
    except DistalError:
        fence()
        exe.check_memory(plan, machine, live_bytes(_own_stores(plan)), staging)


@dataclass(eq=False)
class _Replay:
    """A plan's launches as one run submitted them, to submit again while nothing they depend on changed.

    Kept per `Executable` (so per plan, processors and configuration: `_REPLAYS`), valid while every tensor
    of the plan holds the storage it held after that run (the output the one the run bound); the run made no
    store (a run that makes one, such as a first run placing its inputs or a `+=` plan gathering its placed
    output, is not kept).
    """

    storages: tuple[Any, ...]
    launches: tuple[Recorded, ...]
    live: int  # live_bytes() after the run: the memory check is repeated only when more is held

    def matches(self, plan: PlanBase) -> bool:
        for info, held in zip(plan.tensors, self.storages):
            if plan.tensor(info).storage is not held:
                return False
        return True


# The runtime's own per-run data: a run's launches, kept per finished plan (dropped with it).
_REPLAYS: weakref.WeakKeyDictionary[Executable, _Replay] = weakref.WeakKeyDictionary()


def replay_of(exe: Executable) -> _Replay | None:
    """The launches kept from a run of ``exe`` (None: none are kept)."""
    return _REPLAYS.get(exe)


def executable_of(plan: PlanBase) -> Executable:
    """The plan finished for the processors its launches run on (`distal.lower.executable.finalize`)."""
    counts = ensure_started().processors()
    return finalize(plan, counts[resolve_target(plan.machine.kind if plan.machine is not None else "cpu", counts)])


def run_plan(plan: PlanBase, *, wait: bool = False, trace: list[ReduceRecord] | None = None) -> None:
    """Run every launch of `plan` on Legate; the output tensor's storage then holds the result.

    The plan is finished first (`executable_of`: `distal.lower.executable.finalize`, worked out once per
    plan, processors and configuration), then interpreted. Launches are asynchronous; reading the output
    (`tensor.to_numpy()`) waits for them, as does `wait=True`. A synthesized reduction waits for
    its program (see the module docstring); `trace` (if given) receives one
    `ReduceRecord` per step of its program.

    A run that made no store keeps its launches (`_Replay`, per `Executable`):
    the next runs submit them again as they were, without working anything
    out again, for as long as the plan's tensors hold the same storage
    (`DISTAL_REPLAY=0` turns this off).
    """
    forget_mirror(plan.tensor(plan.output).storage)  # its store is written: its host copy goes stale
    exe = executable_of(plan)
    kept = _REPLAYS.get(exe)
    if kept is not None:
        if kept.matches(plan) and _replay_enabled():
            if live_bytes() > kept.live:
                _check_memory(plan, exe)
            for recorded in kept.launches:
                replay(recorded)
                keep_until_fence(recorded)
            if wait:
                fence()
            return
        del _REPLAYS[exe]
        keep_until_fence(kept)  # its partitions go at the next fence, when nothing queued uses them
    if exe.reduction is not None or trace is not None or not _replay_enabled():
        _run(plan, exe, trace)
    else:
        with recording(stores_made()) as made:
            _run(plan, exe, trace)
        if made.launches is not None and stores_made() == made.made:
            _REPLAYS[exe] = _Replay(tuple(plan.tensor(i).storage for i in plan.tensors), tuple(made.launches),
                                    live_bytes())
    if wait:
        fence()


# A held reduction's partials, kept per finished plan (dropped with it) and zeroed at the start of each run, so
# that a run makes no store and is replayed (`_Replay`); its recorded launches would keep the store anyway.
_HELD_PARTIALS: weakref.WeakKeyDictionary[Executable, Store] = weakref.WeakKeyDictionary()


def _held_partials(plan: PlanBase, exe: Executable) -> Store:
    """The partials a held reduction's launches add into (`_reduce.partials_store`), zero: made at the first
    run, filled with zeros by a launch at the next ones."""
    assert exe.held is not None and plan.machine is not None
    store = _HELD_PARTIALS.get(exe)
    if store is None:
        store = _HELD_PARTIALS[exe] = partials_store(plan, exe.held)
    else:
        size = math.prod(exe.held.row)
        fill(store, 0, (*(1 for _ in plan.machine.full_shape), size))
    return store


def _replay_enabled() -> bool:
    return os.environ.get("DISTAL_REPLAY", "1") != "0"


def _run(plan: PlanBase, exe: Executable, trace: list[ReduceRecord] | None) -> None:
    """One run of the plan, working out every launch (see `run_plan`)."""
    _check_memory(plan, exe)  # OutOfMemory before anything is queued (distal.lower.memory)
    target = plan_target(plan)
    if processor_kind(target).device_arrays:
        import cupy  # noqa: F401  (import it here, on the main thread, not inside the first GPU task)
    red = exe.reduction
    into = red or exe.held  # the launches add into per-processor partials (synthesized or held)
    fresh: list[tuple[Store, tuple[int, ...] | None]] = []  # the `=` output's new store: zeros, or first launch
    placed = kept = _placed_operands(plan, exe, fresh)
    if exe.held is not None and exe.held.tensor in placed:  # the launches add into partials, the folds into blocks
        placed = {n: v for n, v in kept.items() if n != exe.held.tensor}
    stores = []
    for n, info in enumerate(plan.tensors):
        if n in kept:
            stores.append(kept[n].held.blocks)  # read and written in place, block by block
        else:
            stores.append(_output_store(plan, info, fresh) if info.output else store_of(plan, info))
    launch_stores = stores
    if into is not None:
        # every launch reduces into the output (distal.lower.reductions checks it)
        launch_stores = list(stores)
        launch_stores[into.tensor] = partials_store(plan, into) if red is not None else _held_partials(plan, exe)
    first = first_launch_writes(plan, launch_stores, placed) if fresh and into is None else None
    folds = {fold.after: fold for fold in exe.folds}  # a held reduction's partials into the output, per stage
    # the points of a processor run as one task where the executable grouped them (distal.lower.grouping)
    binding = exe.binding
    if first is None:
        for store, tile in fresh:
            fill(store, 0, tile)
    for g, group in enumerate(plan.groups):
        if not group.launches:
            continue
        if into is None:
            key = _key(plan, g, placed)
        else:  # the task body adds into its processor's block of the partials (`_reduce`)
            key = partials_key(plan, group, into, block_tiles(plan, group, group.body, placed))
        for k, launch in enumerate(group.launches):
            launch = exe.launch(launch)
            if first is not None:  # the first launch zeroes the output's tiles itself, then runs the body
                assert launch is first
                first = None
                position = output_position(plan, launch)
                args = [launch_arg(launch_stores, placed, launch, op) for op in launch.operands]
                args[position] = replace(args[position], privilege=Privilege.WRITE)  # written in full
                _run_whole(exe, (g, k), group, zero_first_key(plan, g, placed, position), launch, args, target)
                continue
            if launch.pinned:
                _run_pinned(plan, group, key, launch, launch_stores, placed, binding, target)
            elif group.covers_domain(launch) or plan.machine is None:
                args = [launch_arg(launch_stores, placed, launch, op) for op in launch.operands]
                _run_whole(exe, (g, k), group, key, launch, args, target)
            else:
                _run_part(plan, exe, (g, k), group, key, launch, launch_stores, placed, target)
            fold = folds.get((g, k))
            if fold is not None:  # the stage ends: every processor's held partial into its tile, once
                assert exe.held is not None
                fold_held(plan, exe.held, fold, exe.binding, launch_stores[exe.held.tensor],
                          stores[exe.held.tensor], trace, target, exe.layouts[exe.held.tensor])
    if red is not None:
        reduce_into_output(plan, red, exe, launch_stores[red.tensor], stores[red.tensor], trace, target)
    _keep_output(plan, stores, kept)


def _placed_operands(plan: PlanBase, exe: Executable,
                     fresh: list[tuple[Store, tuple[int, ...] | None]]) -> dict[int, PlacedOperand]:
    """The tensors whose tiles in every launch are their format's device blocks: used in place
    (`Executable.views`; the output of a synthesized reduction is not, its launches write per-processor
    partials instead; a held reduction's output is, where the executable gives it views, and only its folds
    use it). A new output's blocks (`=`) are appended to `fresh` unwritten.
    """
    out: dict[int, PlacedOperand] = {}
    red = exe.reduction
    for n, info in enumerate(plan.tensors):
        if red is not None and n == red.tensor:
            continue
        views = exe.views[n]
        if exe.held is not None and n == exe.held.tensor:
            views = exe.held_views  # only the folds use the blocks: the launches add into partials
        if info.output and plan.zero_output:
            lay = exe.layouts[n]
            if lay is None or views is None:
                continue
            previous = plan.tensor(info).storage
            out[n] = placed_operand(views, functools.partial(fresh_blocks, lay, info.dtype, fresh, previous))
        else:
            held = placed_of(plan, info)  # placed now if it was not yet, whether read in place or gathered
            if held is None or views is None:
                continue
            out[n] = placed_operand(views, functools.partial(_identity, held))
    return out


def _identity(held: FormatStore) -> FormatStore:
    return held


def _keep_output(plan: PlanBase, stores: list[Store], placed: dict[int, PlacedOperand]) -> None:
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


def _run_part(plan: PlanBase, exe: Executable, where: tuple[int, int], group: Group, key: int, launch: Launch,
              stores: list[Store], placed: dict[int, PlacedOperand], target: str) -> None:
    """A launch over part of the domain: one launch per real processor, pinned to it.

    Legate would spread the points of a partial launch over all processors;
    each point must run where `Machine.bind` puts its abstract processor.
    A processor's points that form a box whose tiles are boxes of every
    operand run as one task where the executable grouped them
    (`Executable.parts`, `distal.lower.grouping`).
    """
    binding = exe.binding
    by_proc: dict[int, list[tuple[int, ...]]] = {}
    for p in launch.points():
        by_proc.setdefault(binding.get(plan.processor_of(group, p), 0), []).append(p)
    args = [launch_arg(stores, placed, launch, op) for op in launch.operands]
    for proc, points in by_proc.items():
        lower = tuple(min(p[d] for p in points) for d in range(len(launch.lower)))
        upper = tuple(max(p[d] for p in points) + 1 for d in range(len(launch.lower)))
        is_box = math.prod(hi - lo for lo, hi in zip(lower, upper)) == len(points)
        if is_box and exe.grouping and _submit_groups(group, key, args, exe.parts.get((*where, proc)), target):
            continue
        if is_box:
            with target_scope(target, slice(proc, proc + 1)):
                index_launch(key, tuple(hi - lo for lo, hi in zip(lower, upper)), args, lower=lower,
                             target=target)
        else:
            for p in points:
                point_launch(key, [pinned_arg(stores, placed, launch, op, p) for op in launch.operands], p, proc,
                             target)


def _run_whole(exe: Executable, where: tuple[int, int], group: Group, key: int, launch: Launch, args: list[Arg],
               target: str) -> None:
    """A launch over the whole domain (or a plan without a machine): one index launch; with grouping on, where
    the executable grouped its points (`Executable.whole`), one task per group of points bound to one real
    processor."""
    if exe.grouping and _submit_groups(group, key, args, exe.whole.get(where), target):
        return
    # Legate maps the points of a launch over the whole domain block-wise in
    # row-major order, as Machine.bind does (measured), so no pinning is needed.
    index_launch(key, launch.shape, args, lower=launch.lower, target=target)


def _submit_groups(group: Group, key: int, args: list[Arg], found: TaskGrouping | None, target: str) -> bool:
    """Run a launch box as one task per processor group (`distal.lower.grouping.task_groups`, worked out by
    `distal.lower.executable.finalize`); False (nothing submitted) where it runs one task per point
    (``found`` None)."""
    if found is None:
        return False
    groups = found.groups
    grouped = [a if c is None else Arg(a.store, a.privilege, c[0], c[1], c[2]) for a, c in zip(args, found.cuts)]
    wrapper = register_kernel(Grouped(kernel_of(key)[1], found.members), f"{group.body.name}_grouped",
                              transient=True)
    if groups.processors == tuple(range(groups.tasks)):
        # one point per processor, in row-major order: Legate maps them as Machine.bind does (see _run_whole)
        index_launch(wrapper, groups.count, grouped, target=target)
        return True
    for q, proc in zip(groups.groups(), groups.processors):
        with target_scope(target, slice(proc, proc + 1)):
            index_launch(wrapper, (1,) * len(q), grouped, lower=q, target=target)
    return True


def plan_target(plan: PlanBase) -> str:
    """The processor kind `plan`'s launches run on (its machine's, or the CPUs; see `_target`)."""
    return resolve_target(plan.machine.kind if plan.machine is not None else "cpu")


def _run_pinned(plan: PlanBase, group: Group, key: int, launch: Launch, stores: list[Store],
                placed: dict[int, PlacedOperand], binding: Mapping[tuple[int, ...], int], target: str) -> None:
    point = launch.lower
    proc = binding.get(plan.processor_of(group, point), 0)
    args = [pinned_arg(stores, placed, launch, op, point) for op in launch.operands]
    point_launch(key, args, point, proc, target)
