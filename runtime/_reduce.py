"""Running synthesized hierarchical reduction programs (`distal.reduction`) on Legate.

The programs arrive finished, as plain steps (`distal.lower.executable.ReductionRun`:
each `CollectiveStep` a collective over device groups with the chunks every
device holds before and after it); a plan's comes with its `Executable`
(`Executable.program`). This module imports nothing of the synthesizer.

Partial results live in one store with a leading device dimension: shape
``(ndevices, *value_shape)``, row ``d`` the partial of device ``d`` (device
ids are row-major over the system's levels, as in `distal.reduction`; for a
`dt.Machine` that is the position of the processor in `machine.coords()`).
As in the NumPy executor (`distal.reduction.execute_lowered`), a device's
value is cut into ``k`` chunks along its first axis with the bounds of
`numpy.array_split` (a 0-d value is one chunk of one element).

Each step of the program becomes Legate operations:

* one copy of the whole state into a new state store (devices and chunks the
  step does not touch keep their data; nothing is ever read unwritten);
* per device that gains data, one task per contiguous run of rows: it reads
  exactly those rows from the old state of the devices that send them (all
  members of its group for AllReduce, ReduceScatter and Reduce; the holder of
  each chunk for AllGather; the root for Broadcast) and writes them into its
  own row of the new state (an AllGather device gets one task for all it
  gains). Sums add the members in group order, root first, so every device
  of a group computes bit-identical values.
* a group whose tasks are regular (devices ``d0 + stride * i``, rows of one
  length, the same or consecutive for consecutive devices, the same sources)
  runs as one index launch over i; the affine projections of `Arg` express
  it. Otherwise (uneven chunks, several runs) each task is a single-point
  launch pinned to the processor its device is bound to.

Reading the old state and writing a new one keeps the step's semantics
(every member reads what the others held before the step) although Legate
runs the tasks in any order that respects their data dependences. When the
program ends, every device of every reduction group holds its group's sum.
`reduce_partials` then waits for the tasks (a blocking fence) before it lets
the intermediate states go: freeing a store while Python tasks that use it
are queued can deadlock this Legate wheel (the store's destructor waits in
Legion's dependence queue holding the GIL, which the queued tasks need).

A plan with a synthesized reduction (`PlanBase.reduction`, `distal.lower.reductions`)
runs its REDUCE_ADD launches (`_execute.run_plan`) into partials: the
output's argument becomes the launch point's processor block of a partials
store of shape ``(*machine.full_shape, prod(row))`` (`partials_store`,
`Executable.launch` with the executable's `partials` operand; read-write, projected by the processor coordinate, so
launches stay index launches), and the kernel adds its contribution
(computed into a zero buffer, as Legate's reduction would hand it) into
that block, seen as `row` (`partials_key`). After the launches
(`reduce_into_output`), one pinned copy per grouped processor moves its
block into row ``device`` of a ``(machine.size, prod(row))`` store (Legate
cannot partition a delinearized store, so the flat device dimension the
reduction runtime wants cannot be projected directly), `reduce_on_machine`
runs the program (and waits for it), and one pinned task per group adds the
first member's sum, cropped to the group's box, into that box of the
output.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from distal.errors import ReductionError
from distal.format.layout import Layout
from distal.lower.executable import CollectiveStep, Executable, HeldFold, ReductionRun, reduction_plan, reduction_run
from distal.lower.task_graph import Box, Group, PlanBase, Reduction
from distal.machine.grid import Machine

from ._copy import copy_store
from ._holders import bound_cpus, holder_index
from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import copy_kernel, fill, from_numpy, zeros
from ._registry import register_kernel
from ._start import legate_runtime, processor_count
from ._store import Store, fence, legate_type, tile_of, to_numpy, wrap

if TYPE_CHECKING:
    from distal.reduction.ranking import ReductionPlan

__all__ = ["ReduceRecord", "block_holders", "fold_held", "partials_key", "partials_store", "reduce_arrays",
           "reduce_into_output", "reduce_on_machine", "reduce_partials"]

_SUMS = ("AllReduce", "ReduceScatter", "Reduce")  # the collectives that sum (`CollectiveStep.collective`)

_lock = threading.Lock()
_keys: dict[tuple[str, tuple[int, ...]], int] = {}


@dataclass(frozen=True, slots=True)
class ReduceRecord:
    """One executed step: the collective over its groups, tasks run, launches issued
    (index launches count once), and the most elements one task read."""

    step: str
    tasks: int
    launches: int
    max_elements_read: int


def _sum_kernel(point: tuple[int, ...], *tiles: np.ndarray) -> None:
    out = tiles[-1]
    out[...] = tiles[0]
    for tile in tiles[1:-1]:
        out += tile


def _place_kernel(offsets: tuple[int, ...]) -> Callable[..., None]:
    """Copy input i to rows [offsets[i], offsets[i] + len) of the output (rows between are kept)."""

    def place(point: tuple[int, ...], *tiles: np.ndarray) -> None:
        out = tiles[-1]
        for start, tile in zip(offsets, tiles[:-1], strict=True):
            out[:, start:start + tile.shape[1]] = tile

    return place


def _key(name: str, offsets: tuple[int, ...] = ()) -> int:
    if name == "copy":
        return copy_kernel()
    with _lock:
        key = _keys.get((name, offsets))
        if key is None:
            fn = _place_kernel(offsets) if name == "place" else _sum_kernel
            key = register_kernel(fn, f"reduction_{name}")
            _keys[(name, offsets)] = key
        return key


def _chunk_bounds(rows: int, k: int) -> list[tuple[int, int]]:
    """Row ranges of the k chunks `numpy.array_split` makes of `rows` rows."""
    size, extra = divmod(rows, k)
    bounds, start = [], 0
    for r in range(k):
        stop = start + size + (1 if r < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _runs(chunks: Sequence[int], bounds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Contiguous non-empty row ranges covering `chunks`."""
    out: list[tuple[int, int]] = []
    for r in sorted(chunks):
        lo, hi = bounds[r]
        if lo == hi:
            continue
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _rows(store: Store, device: int, lo: int, hi: int) -> Store:
    """Rows [lo, hi) of device `device`'s value (a view of the store)."""
    handle = store.handle.slice(0, slice(device, device + 1))
    if store.ndim > 1:
        handle = handle.slice(1, slice(lo, hi))
    return wrap(handle, store.dtype)


def _copy_of(store: Store) -> Store:
    runtime = legate_runtime()
    handle = runtime.create_store(legate_type(store.dtype), store.shape)
    copy_store(handle, store.handle)
    return wrap(handle, store.dtype)


# A task: (kernel, source devices, device, first row, end row).
_Task = tuple[str, tuple[int, ...], int, int, int]


def _family(tasks: Sequence[_Task]) -> tuple[int, int, int] | None:
    """(device stride, row stride, rows) when the tasks are one affine family, else None.

    An index launch over i in [0, n) can run them when they share kernel and
    sources, task i's device is ``d0 + stride * i`` and its rows start at
    ``lo0 + row_stride * i`` with one length (row_stride 0 or that length).
    """
    if len(tasks) < 2:
        return None
    kernel, sources, d0, lo0, hi0 = tasks[0]
    rows = hi0 - lo0
    stride = tasks[1][2] - d0
    row_stride = tasks[1][3] - lo0
    if stride <= 0 or row_stride not in (0, rows):
        return None
    for i, (k, src, d, lo, hi) in enumerate(tasks):
        if k != kernel or src != sources or d != d0 + stride * i or lo != lo0 + row_stride * i or hi - lo != rows:
            return None
    return stride, row_stride, rows


def _run_step(step: CollectiveStep, state: Store, bounds: Sequence[tuple[int, int]],
              processors: Sequence[int], row_size: int) -> tuple[Store, ReduceRecord]:
    new = _copy_of(state)
    before = dict(step.chunks_before)
    after = dict(step.chunks_after)
    tasks = launches = elements = 0

    def point(task: _Task) -> None:
        nonlocal tasks, launches, elements
        kernel, sources, device, lo, hi = task
        args: list[tuple[Store, Privilege]] = [(_rows(state, s, lo, hi), Privilege.READ) for s in sources]
        args.append((_rows(new, device, lo, hi), Privilege.WRITE))
        point_launch(_key(kernel), args, (device,), processors[device])
        tasks += 1
        launches += 1
        elements = max(elements, len(sources) * (hi - lo) * row_size)

    def index(family: Sequence[_Task], stride: int, row_stride: int, rows: int) -> None:
        # One launch over the family: point i reads rows [lo0 + row_stride*i, +rows)
        # of every source and writes them into device d0 + stride*i of the new state.
        nonlocal tasks, launches, elements
        kernel, sources, d0, lo0, _ = family[0]
        n = len(family)
        span = rows * n if row_stride else rows
        rest = state.shape[2:]
        if state.ndim > 1:
            tile: tuple[int, ...] = (1, rows, *rest)
            inner = (Affine(0) if row_stride else Affine(None, 0, 0), *(Affine(None, 0, 0) for _ in rest))
            old_view = wrap(state.handle.slice(1, slice(lo0, lo0 + span)), state.dtype)
            new_view = wrap(new.handle.slice(1, slice(lo0, lo0 + span)), new.dtype)
        else:
            tile, inner, old_view, new_view = (1,), (), state, new
        args = [Arg(old_view, Privilege.READ, tile, (Affine(None, 0, s), *inner)) for s in sources]
        args.append(Arg(new_view, Privilege.WRITE, tile, (Affine(0, stride, d0), *inner)))
        index_launch(_key(kernel), (n,), args)
        tasks += n
        launches += 1
        elements = max(elements, len(sources) * rows * row_size)

    def gather(pieces: Sequence[tuple[int, int, int]], device: int) -> None:
        # One task: every piece into one span of the device's row; the rows of
        # the span it does not gain keep their data (read-write).
        nonlocal tasks, launches, elements
        start, stop = pieces[0][0], max(hi for _, hi, _ in pieces)
        args: list[tuple[Store, Privilege]] = [(_rows(state, s, lo, hi), Privilege.READ) for lo, hi, s in pieces]
        args.append((_rows(new, device, start, stop), Privilege.READ_WRITE))
        offsets = tuple(lo - start for lo, _, _ in pieces)
        point_launch(_key("place", offsets), args, (device,), processors[device])
        tasks += 1
        launches += 1
        elements = max(elements, sum(hi - lo for lo, hi, _ in pieces) * row_size)

    def regular_gather(group: tuple[int, ...]) -> bool:
        # Member i holds rows [lo0 + i*rows, +rows) and gains the whole span: one
        # index launch where point i places every member's block (its own too).
        nonlocal tasks, launches, elements
        n = len(group)
        stride = group[1] - group[0] if n > 1 else 0
        held = [_runs(before[d], bounds) for d in group]
        if (stride <= 0 or state.ndim < 2 or any(d != group[0] + stride * i for i, d in enumerate(group))
                or any(len(h) != 1 for h in held)):
            return False
        lo0, rows = held[0][0][0], held[0][0][1] - held[0][0][0]
        span = (lo0, lo0 + rows * n)
        if any(h[0] != (lo0 + rows * i, lo0 + rows * (i + 1)) for i, h in enumerate(held)):
            return False
        if any(_runs(after[d], bounds) != [span] for d in group):
            return False
        rest = state.shape[2:]
        consts = tuple(Affine(None, 0, 0) for _ in rest)
        old_view = wrap(state.handle.slice(1, slice(*span)), state.dtype)
        new_view = wrap(new.handle.slice(1, slice(*span)), new.dtype)
        args = [Arg(old_view, Privilege.READ, (1, rows, *rest), (Affine(None, 0, d), Affine(None, 0, j), *consts))
                for j, d in enumerate(group)]
        args.append(Arg(new_view, Privilege.WRITE, (1, rows * n, *rest),
                        (Affine(0, stride, group[0]), Affine(None, 0, 0), *consts)))
        index_launch(_key("place", tuple(rows * j for j in range(n))), (n,), args)
        tasks += n
        launches += 1
        elements = max(elements, n * rows * row_size)
        return True

    for group in step.groups:
        planned: list[_Task] = []
        if step.collective in _SUMS:
            for device in group:
                planned += [("sum", group, device, lo, hi) for lo, hi in _runs(after[device], bounds)]
        elif step.collective == "Broadcast":
            root = group[0]
            for device in group[1:]:
                planned += [("copy", (root,), device, lo, hi) for lo, hi in _runs(after[device], bounds)]
        elif step.collective == "AllGather" and regular_gather(group):
            continue
        elif step.collective == "AllGather":
            holder = {r: member for member in group for r in before[member]}
            for device in group:
                gained = [r for r in after[device] if r not in before[device]]
                by_holder: dict[int, list[int]] = {}
                for r in gained:
                    by_holder.setdefault(holder[r], []).append(r)
                pieces = sorted((lo, hi, source) for source, chunks in by_holder.items()
                                for lo, hi in _runs(chunks, bounds))
                if len(pieces) == 1:
                    planned.append(("copy", (pieces[0][2],), device, pieces[0][0], pieces[0][1]))
                elif pieces:
                    gather(pieces, device)
        else:  # pragma: no cover - a new collective must be taught here
            raise ReductionError(f"expected a collective distal can run, but found {step.collective}")
        shape = _family(planned)
        if shape is not None:
            index(planned, *shape)
        else:
            for task in planned:
                point(task)
    return new, ReduceRecord(str(step), tasks, launches, elements)


def _processors(ndevices: int, processors: Sequence[int] | None) -> list[int]:
    n_real = processor_count("cpu")
    if processors is None:
        if ndevices <= n_real:
            return list(range(ndevices))
        return [d * n_real // ndevices for d in range(ndevices)]
    procs = [int(p) for p in processors]
    if len(procs) != ndevices or any(not 0 <= p < n_real for p in procs):
        raise ReductionError(
            f"expected one CPU processor in [0, {n_real}) per device ({ndevices}), but found {procs}"
        )
    return procs


def reduce_partials(plan: ReductionRun | ReductionPlan, partials: Store, processors: Sequence[int] | None = None,
                    trace: list[ReduceRecord] | None = None) -> Store:
    """Run `plan`'s program on Legate over per-device partial results; returns the new state.

    `plan` is a program lowered to plain steps (`distal.lower.executable.ReductionRun`) or a
    `distal.reduction` plan (its chosen program, `reduction_run`). `partials` has shape
    ``(plan.layout.system.size, *value_shape)``: row ``d``
    is device ``d``'s partial. In the returned store (of the same shape) every
    device of every reduction group holds its group's sum; rows of devices
    outside the groups are copied unchanged. `partials` itself is not
    modified. `processors[d]` is the CPU processor that runs device ``d``'s
    tasks (default: block-wise, as `Machine.bind`). `trace` (if given)
    receives one `ReduceRecord` per step. Returns once the program's tasks
    have run (a blocking fence, see the module docstring); kernel failures
    raise `RuntimeFailure` then.

    >>> from distal.reduction import plan_reduction, NIC, SHARED_MEMORY
    >>> plan = plan_reduction([("node", 2, NIC), ("cpu", 2, SHARED_MEMORY)], range(4))
    >>> out = reduce_partials(plan, from_numpy(np.arange(12).reshape(4, 3)))
    >>> to_numpy(out)[0].tolist()
    [18, 22, 26]
    """
    program = plan if isinstance(plan, ReductionRun) else reduction_run(plan)
    if partials.ndim < 1 or partials.shape[0] != program.devices:
        raise ReductionError(
            f"expected partials of shape ({program.devices}, ...) (one row per device of {program.system}), "
            f"but found shape {partials.shape}"
        )
    procs = _processors(program.devices, processors)
    value_shape = partials.shape[1:]
    if math.prod(value_shape) == 0:
        return _copy_of(partials)
    rows = value_shape[0] if value_shape else 1
    row_size = math.prod(value_shape[1:])
    bounds = _chunk_bounds(rows, program.chunks)
    state = partials
    states: list[Store] = []
    for step in program.steps:
        state, record = _run_step(step, state, bounds, procs, row_size)
        states.append(state)
        if trace is not None:
            trace.append(record)
    if state is partials:
        return _copy_of(partials)
    # Dropping a store whose tasks are still queued can deadlock: the store's
    # destructor waits in Legion's dependence queue holding the GIL, which the
    # queued Python tasks need. Free the intermediate states once they ran.
    fence()
    del states[:-1]
    return state


def _machine_processors(machine: Machine) -> list[int]:
    return list(machine.bind(processor_count("cpu")).values())


def reduce_on_machine(machine: Machine, partials: Store,
                      groups: Sequence[Sequence[int]] | None = None,
                      plan: ReductionRun | ReductionPlan | None = None,
                      trace: list[ReduceRecord] | None = None) -> Store:
    """Sum per-processor partial results of a distributed reduction on a `dt.Machine`.

    How distal's lowering uses it, for a distributed loop variable that the
    output does not depend on (Johnson's ``ko``, innerprod's ``io``), in place
    of a REDUCE_ADD launch into the output:

    1. Allocate ``partials`` of shape ``(machine.size, *tile_shape)``, one
       row per abstract processor: the processor at coordinate ``c`` (levels
       concatenated) is device ``list(machine.coords()).index(c)``, its
       row-major index. ``tile_shape`` is the largest output tile (pad edge
       tiles; a scalar output uses ``(1,)``). Make it with
       ``rt.zeros(..., tile=(1, *tile_shape))`` so every row starts at zero.
    2. Let each launch point accumulate its partial into its own row
       (READ_WRITE, projection ``Affine`` of the device index; a point of a
       pinned launch writes ``rt.tile_of(partials, (1, *tile_shape),
       (device, 0, ...))``) instead of reducing into the output.
    3. ``groups``: one tuple of device ids per output tile, the processors
       whose partials sum to that tile (for Johnson's, the processors that
       differ only in ``ko``); groups are disjoint and of one size; ``None``
       means all processors form one group. Plan with
       ``distal.reduction.machines.machine_plan(machine, groups, nbytes)``
       at compile time (it is pure; `describe_plan` renders it for
       ``explain()``) and pass that plan (or its `ReductionRun`, as a
       finished plan's `Executable.program` holds it) here, or let this
       function plan (`distal.lower.executable.reduction_plan`).
    4. Call ``result = reduce_on_machine(machine, partials, groups, plan)``.
       Every device of a group holds the group's full sum in its row of
       ``result``; copy row ``groups[g][0]`` (cropped to the real tile) into
       output tile ``g`` with a copy launch (READ of ``result``'s row,
       WRITE of the output tile), or add it when the statement is ``+=``.

    Processors are bound as `Machine.bind` says, and devices' tasks are pinned
    to their processors.
    """
    if not isinstance(machine, Machine):
        raise ReductionError(f"expected a distal Machine, but found {machine!r}")
    if plan is None:
        itemsize = partials.dtype.itemsize
        nbytes = float(itemsize * max(math.prod(partials.shape[1:]), 1))
        plan = reduction_plan(machine, groups, nbytes)
    program = plan if isinstance(plan, ReductionRun) else reduction_run(plan)
    if program.devices != machine.size:
        raise ReductionError(
            f"expected a plan for the {machine.size} processors of {machine!r}, "
            f"but found one for {program.system}"
        )
    return reduce_partials(program, partials, _machine_processors(machine), trace)


def reduce_arrays(machine_or_levels: Any, values: Mapping[int, npt.ArrayLike],
                  groups: Sequence[Sequence[int]] | None = None, nbytes: float | None = None,
                  algorithm: str = "ring",
                  trace: list[ReduceRecord] | None = None) -> tuple[dict[int, np.ndarray], ReductionPlan]:
    """Sum NumPy arrays held by devices with the simulated-best program, on Legate.

    `machine_or_levels` is a `dt.Machine` (CPU machines get shared-memory
    inner levels, see `system_from_machine`), a `System` or a list of levels
    ``(name, cardinality, Link)``. `values` maps device ids to arrays
    of one shape and dtype; devices without a value hold zeros. `groups`
    defaults to one group of the devices in `values`. `nbytes` (bytes per
    device used to rank programs) defaults to the arrays' size (at least one element). Returns every
    grouped device's array after the program, and the plan.

    >>> from distal.reduction import NIC, SHARED_MEMORY
    >>> out, plan = reduce_arrays([("node", 2, NIC), ("cpu", 2, SHARED_MEMORY)],
    ...                           {d: np.full(4, d) for d in range(4)})
    >>> out[3].tolist(), plan.program.shape
    ([6, 6, 6, 6], 'ReduceScatter-AllReduce-AllGather')
    """
    arrays = {int(d): np.asarray(v) for d, v in values.items()}
    if not arrays:
        raise ReductionError("expected values for at least one device, but found none")
    shapes = {a.shape for a in arrays.values()}
    dtypes = {a.dtype for a in arrays.values()}
    if len(shapes) != 1 or len(dtypes) != 1:
        raise ReductionError(
            f"expected arrays of one shape and dtype, but found shapes {sorted(shapes)} "
            f"and dtypes {sorted(str(t) for t in dtypes)}"
        )
    shape, dtype = shapes.pop(), dtypes.pop()
    grps = [list(g) for g in groups] if groups is not None else [sorted(arrays)]
    size = float(nbytes) if nbytes is not None else float(dtype.itemsize * max(math.prod(shape), 1))
    plan = reduction_plan(machine_or_levels, grps, size, algorithm)
    procs = _machine_processors(machine_or_levels) if isinstance(machine_or_levels, Machine) else None
    program = reduction_run(plan)
    outside = sorted(d for d in arrays if not 0 <= d < program.devices)
    if outside:
        raise ReductionError(f"expected device ids in [0, {program.devices}), but found {outside}")
    data = np.zeros((program.devices, *shape), dtype=dtype)
    for d, a in arrays.items():
        data[d] = a
    result = to_numpy(reduce_partials(program, from_numpy(data), procs, trace))
    return {d: result[d].copy() for d in program.grouped}, plan


# -- a plan's synthesized reduction (see the module docstring) -------------------------------------


def partials_store(plan: PlanBase, red: Reduction) -> Store:
    """Zeros of shape (*machine.full_shape, prod(row)): one flat `row` block per abstract processor."""
    assert plan.machine is not None
    lead = plan.machine.full_shape
    size = math.prod(red.row)
    return zeros((*lead, size), plan.tensors[red.tensor].dtype, tile=(*(1 for _ in lead), size))


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
    direct: bool = False  # the body adds into the partial itself (a held reduction), no zero buffer

    def __call__(self, point: tuple[int, ...], *tiles: Any) -> None:
        args = list(tiles)
        block = args[self.index][(0,) * self.lead]
        box = self.boxes[tuple(int(x) for x in point)]
        # the part of the processor's partial (`row`, stored flat) that holds the point's output box
        real = block.reshape(self.reduction.row)[tuple(slice(lo, hi) for lo, hi in self.reduction.local(box))]
        if not box:
            real = real.reshape(())
        if self.direct:  # the task body adds into its output tile: straight into the held partial
            args[self.index] = real
            self.kernel(point, *args)
            return
        buffer = real.copy()
        buffer[...] = 0
        args[self.index] = buffer
        self.kernel(point, *args)
        real += buffer


def partials_key(plan: PlanBase, group: Group, red: Reduction, kernel: Any) -> int:
    """The key of ``kernel`` (``group``'s task body, as the plan runs it) adding into the partials instead.

    Transient, like the plan's own kernel: the wrapper holds the task body.
    """
    info = plan.tensors[red.tensor]
    boxes = {p: launch.operands[red.tensor].box(p, info.shape)
             for launch in group.launches for p in launch.points()}
    assert plan.machine is not None
    wrapper = _IntoPartials(kernel, red, red.tensor, len(plan.machine.full_shape), boxes, not red.synthesized)
    return register_kernel(wrapper, f"{group.body.name}_partials", transient=True)


@dataclass(frozen=True)
class _AddBox:
    """Add the `local` box of a flat partial, seen as `row`, into the output's box."""

    row: tuple[int, ...]
    local: Box

    def __call__(self, point: tuple[int, ...], source: np.ndarray, out: np.ndarray) -> None:
        block = source.reshape(self.row)[tuple(slice(lo, hi) for lo, hi in self.local)]
        out += block.reshape(out.shape)


_kernel_keys: dict[Any, int] = {}


def _registered(kernel: Any, name: str) -> int:
    """The runtime key of `kernel` (a frozen, hashable callable), registered once per distinct value."""
    with _lock:
        key = _kernel_keys.get(kernel)
        if key is None:
            key = _kernel_keys[kernel] = register_kernel(kernel, name)
        return key


def reduce_into_output(plan: PlanBase, red: Reduction, exe: Executable, partials: Store, output: Store,
                       trace: list[ReduceRecord] | None, target: str) -> None:
    """Flatten the grouped processors' blocks, run the program, add each group's sum into its tile.

    The copies and the final additions run on the plan's processors
    (``target``, each on the processor the executable's ``binding`` gives its abstract
    processor); the reduction program's own steps (`Executable.program`) run on the CPUs
    (`reduce_on_machine`).
    """
    machine = plan.machine
    binding = exe.binding
    assert machine is not None and exe.program is not None
    coords = list(machine.coords())
    lead = len(machine.full_shape)
    size = math.prod(red.row)
    flat = zeros((machine.size, size), partials.dtype, tile=(1, size))
    copy = copy_kernel()
    for device in sorted(d for g in red.groups for d in g):
        block = tile_of(partials, (*(1 for _ in range(lead)), size), (*coords[device], 0))
        row = wrap(flat.handle.slice(0, slice(device, device + 1)), flat.dtype)
        point_launch(copy, [(block, Privilege.READ), (row, Privilege.WRITE)], (device,),
                     binding.get(coords[device], 0), target)
    result = reduce_on_machine(machine, flat, red.groups, exe.program, trace)
    for devices, box in zip(red.groups, red.boxes):
        root = devices[0]
        add = _registered(_AddBox(red.row, red.local(box)), "distal_reduction_add")
        source = wrap(result.handle.slice(0, slice(root, root + 1)), result.dtype)
        box_of_output = output
        for d, (lo, hi) in enumerate(box):
            box_of_output = wrap(box_of_output.handle.slice(d, slice(lo, hi)), output.dtype)
        point_launch(add, [(source, Privilege.READ), (box_of_output, Privilege.READ_WRITE)], (root,),
                     binding.get(coords[root], 0), target)


# -- a plan's held reduction: partials held across sequential steps, reduced once per stage ----------------


@dataclass(frozen=True)
class _Fold:
    """Add a processor's flat partial, seen as `row`, into its box of the output (read and written)."""

    row: tuple[int, ...]

    def __call__(self, point: tuple[int, ...], source: Any, out: Any) -> None:
        block = source.reshape(self.row)
        out += block[tuple(slice(0, n) for n in out.shape)].reshape(out.shape)


def fold_held(plan: PlanBase, red: Reduction, fold: HeldFold, binding: Mapping[tuple[int, ...], int],
              partials: Store, output: Store, trace: list[ReduceRecord] | None, target: str,
              layout: Layout | None = None) -> None:
    """After the last launch of a stage of a held reduction (`distal.lower.reductions.HeldReduction`): every
    processor of ``fold`` adds its partial once into its box of the output (of its device block where the
    output stays in its format's blocks), by one pinned launch that reads and writes that box (READ_WRITE:
    Legate orders the processors adding into one tile, those adding into others run at once); then the
    partials start at zero again when another stage follows. ``trace`` (if given) receives one `ReduceRecord`
    per fold.

    Where the output stays in its format's blocks (``layout``, its placement layout), the launch runs on the
    processor holding the block, so that only the partial moves to it (with several ranks, the bytes explain()
    counts between them); otherwise on the processor that holds the partial. (Pinned to the partial's
    processor, the block crossed to it and back: Legion's profile of Johnson on Grid(1, 1, 2) over two ranks
    showed twice explain()'s bytes, tests/multirank/test_traffic.py.)

    Not a Legate reduction (REDUCE_ADD): its reduction instances of the folded tiles cost each run about as
    much system time as the whole product (Solomonik 2.5D at n = 2048 on 2 CPUs: ~170 ms of kernel time a
    run, 0 with READ_WRITE)."""
    machine = plan.machine
    assert machine is not None
    size = math.prod(red.row)
    lead = machine.full_shape
    if fold.blocks:  # the output in its format's device blocks (``output`` is the block store)
        holders = block_holders(layout) if layout is not None else {}
        _fold_into_blocks(plan, red, fold, binding, partials, output, target, holders)
    else:
        key = _registered(_Fold(tuple(red.row)), "distal_held_fold")
        for device, coord, box in fold.points:
            block = tile_of(partials, (*(1 for _ in lead), size), (*coord, 0))
            part = output
            for d, (lo, hi) in enumerate(box):
                part = wrap(part.handle.slice(d, slice(lo, hi)), output.dtype)
            point_launch(key, [(block, Privilege.READ), (part, Privilege.READ_WRITE)], (device,),
                         binding.get(coord, 0), target)
    _folded(plan, red, fold, len(fold.points), size, trace, partials)


def _folded(plan: PlanBase, red: Reduction, fold: HeldFold, launches: int, size: int,
            trace: list[ReduceRecord] | None, partials: Store) -> None:
    """A fold's record, and its partials zeroed when another stage follows."""
    if trace is not None:
        name = plan.tensors[red.tensor].name
        trace.append(ReduceRecord(f"held partials into {name} after launch {fold.after[1]} of group "
                                  f"{fold.after[0]}", len(fold.points), launches, size))
    if not fold.last:
        assert plan.machine is not None
        fill(partials, 0, (*(1 for _ in plan.machine.full_shape), size))


@dataclass(eq=False)
class _FoldIntoBlock:
    """Add a processor's flat partial, seen as `row`, into its box of its output block (flat, seen as `tile`);
    ``boxes``: per launch point (a processor coordinate, or the device of a pinned launch), that box."""

    row: tuple[int, ...]
    tile: tuple[int, ...]
    boxes: dict[tuple[int, ...], Box]

    def __call__(self, point: tuple[int, ...], source: Any, out: Any) -> None:
        box = self.boxes[tuple(int(x) for x in point)]
        target = out.reshape(self.tile)[tuple(slice(lo, hi) for lo, hi in box)]
        target += source.reshape(self.row)[tuple(slice(0, hi - lo) for lo, hi in box)]


def block_holders(lay: Layout) -> dict[tuple[int, ...], int]:
    """The CPU holding each block of a `FormatStore` of layout ``lay``, by the block's index in its leading
    dimensions (`holder_index`): the CPU `Machine.bind` gives the block's device (`bound_cpus`), where placement
    put it."""
    cpus = bound_cpus(lay)
    found: dict[tuple[int, ...], int] = {}
    for device in lay.holders():
        found.setdefault(holder_index(lay, device), cpus.get(device, 0))
    return found


def _fold_into_blocks(plan: PlanBase, red: Reduction, fold: HeldFold, binding: Mapping[tuple[int, ...], int],
                      partials: Store, blocks: Store, target: str, holders: Mapping[tuple[int, ...], int]) -> None:
    assert plan.machine is not None
    lead = plan.machine.full_shape
    size = math.prod(red.row)
    tile = fold.block_tile
    block = (*([1] * (blocks.ndim - 1)), blocks.shape[-1])
    boxes: dict[tuple[int, ...], Box] = {(device,): local
                                         for (device, _, _), (_, local) in zip(fold.points, fold.blocks)}
    key = register_kernel(_FoldIntoBlock(tuple(red.row), tile, boxes), "distal_held_fold_blocks", transient=True)
    for (device, coord, _), (color, _) in zip(fold.points, fold.blocks):
        mine = tile_of(partials, (*(1 for _ in lead), size), (*coord, 0))
        into = tile_of(blocks, block, color)
        # the block's holder (its color ends with the flat block's own dimension): the partial moves to it, once
        where = holders.get(tuple(color[:-1]), binding.get(coord, 0))
        point_launch(key, [(mine, Privilege.READ), (into, Privilege.READ_WRITE)], (device,), where, target)

