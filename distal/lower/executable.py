"""The end of lowering: a plan finished for a set of processors and a configuration, as one frozen value.

`finalize(plan, processors)` works out, once, everything that running a plan
on ``processors`` real processors needs beyond the plan itself, and returns
it as a frozen `Executable`: the binding of the plan's abstract machine to
the processors (`Machine.bind`), which launch points run as one task
(`TaskGrouping`, from `distal.lower.grouping`), which tensors are read and
written in place in their format's device blocks (`distal.lower.in_place`),
a synthesized reduction's operand into per-processor partials and its
program as plain steps (`ReductionRun`, from `distal.reduction`), and the
plan's memory check (`distal.lower.memory`). The runtime (`distal.runtime`)
interprets an `Executable`: of lowering it imports only this module and
`distal.lower.task_graph` (JAX's `Lowered` -> `Compiled`; opt_einsum's
`contract_path` -> `ContractExpression`).

Results are cached per plan (by identity), processor count and
configuration (whether launch points are grouped into tasks, read from the
environment; without a processor count, the Legate processors configured). The cache holds a
plan weakly (its entry goes when the plan is collected), and at most
`CACHE_PLANS` plans in all (least recently used first out). `analysis_of(plan)` is the plan's analysis
(`distal.lower.analysis.analyse`) from the same cache.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from distal.lower.analysis import PlanAnalysis, analyse
from distal.lower.grouping import (
    Cut,
    TaskGroups,
    check_cuts,
    grouping_enabled,
    operand_cut,
    partials_operand,
    processor_groups,
)
from distal.lower.in_place import BlockView, ViewKey, launch_views, placement_layout, view_key
from distal.lower.memory import check_plan_memory, check_store_memory
from distal.lower.reductions import HeldReduction, held_folds, partials_reduction
from distal.lower.task_graph import Box, Group, Launch, Operand, PlanBase, Proj, Reduction
from distal.machine.grid import Machine
from distal.machine.ranks import run_processors

if TYPE_CHECKING:
    from distal.format.layout import Layout
    from distal.reduction.ranking import ReductionPlan

__all__ = ["CACHE_PLANS", "CollectiveStep", "Configuration", "Executable", "HeldFold", "InPlaceViews", "ReductionRun",
           "TaskGrouping", "analysis_of", "check_store_memory", "configuration", "finalize", "reduction_plan",
           "reduction_run"]

Point = tuple[int, ...]

CACHE_PLANS = 64  # plans whose finished values are kept at most (least recently used dropped first)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Configuration:
    """What a finished plan depends on beyond the plan: the real processors it runs on (``processors``)
    and whether launch points bound to one processor run as one task (``grouping``, ``DISTAL_GROUP_TASKS``)."""

    processors: int
    grouping: bool


def configuration(plan: PlanBase, processors: int | None = None) -> Configuration:
    """The configuration `plan` is finished for now: ``processors`` real processors (default: the Legate
    processors of the plan's kind of the whole run, every rank's: `run_processors`) and the environment's settings."""
    if processors is None:
        processors = run_processors(plan.machine.kind if plan.machine is not None else "cpu")
    return Configuration(processors, grouping_enabled())


@dataclass(slots=True)
class _Slot:
    """One plan's cached values, with a weak reference to the plan (its entry goes when the plan does)."""

    anchor: weakref.ref[PlanBase]
    values: dict[Hashable, Any] = field(default_factory=dict)


class _Cache:
    """Values worked out per plan (by identity), keyed further by what they depend on."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._slots: OrderedDict[int, _Slot] = OrderedDict()
        self._lock = threading.RLock()

    def get(self, plan: PlanBase, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            slot = self._slot(plan)
            if key in slot.values:
                return slot.values[key]  # type: ignore[no-any-return]
        found = make()
        with self._lock:
            return self._slot(plan).values.setdefault(key, found)  # type: ignore[no-any-return]

    def _slot(self, plan: PlanBase) -> _Slot:
        ident = id(plan)
        slot = self._slots.get(ident)
        if slot is not None and slot.anchor() is plan:
            self._slots.move_to_end(ident)
            return slot
        slot = self._slots[ident] = _Slot(weakref.ref(plan, functools.partial(self._dropped, ident)))
        while len(self._slots) > self.size:
            self._slots.popitem(last=False)
        return slot

    def _dropped(self, ident: int, ref: weakref.ref[PlanBase]) -> None:
        with self._lock:
            slot = self._slots.get(ident)
            if slot is not None and slot.anchor is ref:
                del self._slots[ident]

    def clear(self) -> None:
        with self._lock:
            self._slots.clear()

    def __len__(self) -> int:
        return len(self._slots)


_CACHE = _Cache(CACHE_PLANS)


def analysis_of(plan: PlanBase, processors: int | None = None) -> PlanAnalysis:
    """The plan under the execution-space cost model (`distal.lower.analysis.analyse`), worked out once per
    plan and configuration (its task counts read the Legate processors configured and the grouping switch)."""
    config = configuration(plan, processors)
    return _CACHE.get(plan, ("analysis", config), lambda: analyse(plan, processors))


# -- the finished plan ------------------------------------------------------------------------------------


# Per argument of a grouped launch: the group's tile, projection and colors (None: the argument as it was).
GroupCut = tuple[tuple[int, ...], tuple[Proj, ...], tuple[int, ...]] | None
# Per point of a group, in the order it runs: the point and, per argument, its slices in the group's tile.
Members = tuple[tuple[Point, tuple[tuple[slice, ...] | None, ...]], ...]


@dataclass(frozen=True, slots=True)
class TaskGrouping:
    """A launch box submitted as one task per processor group (`distal.lower.grouping.task_groups`): the
    groups, each argument's cut for the launch over groups (`cuts`), and per group its points with their
    views of the group's tiles (`members`)."""

    groups: TaskGroups
    cuts: tuple[GroupCut, ...]
    members: Mapping[Point, Members]


@dataclass(frozen=True, slots=True)
class InPlaceViews:
    """How every launch reads and writes one tensor in its format's device blocks (`launch_views`)."""

    views: Mapping[ViewKey, BlockView]

    def of(self, launch: Launch, op: Operand) -> BlockView:
        """The view of operand ``op`` of ``launch`` (a launch as it runs: `Executable.launch`)."""
        return self.views[view_key(launch, op)]


@dataclass(frozen=True, slots=True)
class CollectiveStep:
    """One step of a reduction program as the runtime runs it: ``collective`` (its name: "AllReduce",
    "ReduceScatter", "AllGather", "Reduce" or "Broadcast") over disjoint groups of device ids, and the
    chunks each participating device holds before and after it (`distal.reduction.lowering.LoweredStep`)."""

    collective: str
    groups: tuple[tuple[int, ...], ...]
    chunks_before: tuple[tuple[int, tuple[int, ...]], ...]
    chunks_after: tuple[tuple[int, tuple[int, ...]], ...]

    def __str__(self) -> str:
        return f"{self.collective} over {[list(g) for g in self.groups]}"


@dataclass(frozen=True, slots=True)
class ReductionRun:
    """A reduction program lowered to devices, as plain steps: ``devices`` (the system's size: rows of the
    partials), the chunks each device's value is cut into, the steps in order, the devices of its groups
    (``grouped``) and the system it was planned for, in words (``system``)."""

    devices: int
    chunks: int
    steps: tuple[CollectiveStep, ...]
    grouped: tuple[int, ...]
    system: str


def reduction_run(plan: ReductionPlan) -> ReductionRun:
    """The chosen program of a reduction plan (`distal.reduction`) as the runtime's plain steps."""
    lowered = plan.best.lowered
    steps = tuple(CollectiveStep(str(s.collective), s.groups, s.chunks_before, s.chunks_after) for s in lowered.steps)
    return ReductionRun(plan.layout.system.size, lowered.chunks, steps, tuple(plan.layout.devices),
                        str(plan.layout.system))


def reduction_plan(machine_or_levels: Any, groups: Sequence[Sequence[int]] | None, nbytes: float,
                   algorithm: str = "ring") -> ReductionPlan:
    """The simulated-best program summing ``groups`` on a `dt.Machine` (`machine_plan`) or on a system or
    list of levels (`plan_reduction`; ``groups`` None: every device of a machine, one group). The synthesizer
    (a layer below, loaded here when first needed: `import distal` does not load it) ranks the programs."""
    from distal.reduction.machines import machine_plan
    from distal.reduction.ranking import plan_reduction

    if isinstance(machine_or_levels, Machine):
        return machine_plan(machine_or_levels, groups, nbytes, algorithm)
    assert groups is not None
    return plan_reduction(machine_or_levels, [list(g) for g in groups], nbytes=nbytes, algorithm=algorithm)


@dataclass(frozen=True, slots=True)
class HeldFold:
    """Where a held reduction (`distal.lower.reductions.HeldReduction`) reduces its partials into the output:
    after launch ``after`` ((group, index in group)), every processor of ``points`` ((device, abstract
    processor, output box)) adds its partial once into its box of the output, by one launch pinned to it that
    reads and writes the box (`runtime/_reduce.fold_held`; an index launch of REDUCE_ADD did this first, and its
    reduction instances cost more than the pinned launches). ``last``: no stage follows (the partials are not
    zeroed again)."""

    after: tuple[int, int]
    points: tuple[tuple[int, Point, Box], ...]
    last: bool
    # the output read in place in its device blocks (`Executable.views` has its launches' views): per point of
    # ``points``, its block's coordinates in the block store and its box in that block
    blocks: tuple[tuple[Point, Box], ...] = ()
    block_tile: tuple[int, ...] = ()  # the padded shape of one block of the output's layout (stored flat)


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Executable:
    """A plan finished for ``configuration``: what the runtime needs beyond the plan to run it.

    ``binding``: `Machine.bind` of the plan's machine to the processors ({} without a machine);
    ``grouping``: whether points bound to one processor may run as one task (on, and a bound machine).
    Per tensor (by index in `PlanBase.tensors`): ``layouts``, the layout its format places it in on
    Legate (`placement_layout`), and ``views``, how every launch reads and writes it in its device blocks
    (`launch_views`; None: it is gathered into one store, or has no format, or is the output of a
    synthesized reduction). ``reduction``: the plan's synthesized reduction (None: none), with
    ``partials``, the output's operand in the launches into per-processor partials, and ``program``, its
    steps. ``whole``: per (group, launch) over the whole domain, its task groups; ``parts``: per (group,
    launch, processor) of a launch over part of the domain, the task groups of that processor's box
    (absent: one task per point). A launch is named by its group's index and its index in the group.
    ``held``: the plan's held reduction (`distal.lower.reductions.HeldReduction`; None: none), whose launches
    add into the same partials (``partials``) and whose ``folds`` reduce them into the output after each
    stage: into its device blocks where ``held_views`` (the launches' views of the output's blocks, which
    the folds take their blocks from) is given, else into one store laid out by its format after.
    """

    statement: str
    configuration: Configuration
    binding: Mapping[Point, int]
    grouping: bool
    layouts: tuple[Layout | None, ...]
    views: tuple[InPlaceViews | None, ...]
    reduction: Reduction | None
    partials: Operand | None
    program: ReductionRun | None
    whole: Mapping[tuple[int, int], TaskGrouping]
    parts: Mapping[tuple[int, int, int], TaskGrouping]
    held: HeldReduction | None = None
    folds: tuple[HeldFold, ...] = ()
    held_views: InPlaceViews | None = None

    @property
    def processors(self) -> int:
        return self.configuration.processors

    def launch(self, launch: Launch) -> Launch:
        """A launch of the plan as it runs: with a synthesized reduction, the output's operand replaced by the
        processor blocks of the partials (`partials`); so with a held one (`held`)."""
        return _into_partials(self.reduction or self.held, self.partials, launch)

    def check_memory(self, plan: PlanBase, machine: Any, in_use: int = 0, staging: int = 0) -> None:
        """Raise `OutOfMemory` when the plan cannot fit in the system memory of the started runtime
        ``machine`` next to ``in_use`` bytes of other live stores (`distal.lower.memory.check_plan_memory`)."""
        check_plan_memory(plan, machine, in_use, staging, functools.partial(analysis_of, plan))

    def __repr__(self) -> str:
        grouped = len(self.whole) + len(self.parts)
        return (f"<Executable {self.statement.splitlines()[0] if self.statement else ''}: on "
                f"{self.processors} processor(s), {grouped} grouped launch box(es)>")


def _into_partials(red: Reduction | None, partials: Operand | None, launch: Launch) -> Launch:
    if red is None or partials is None:
        return launch
    operands = tuple(partials if op.tensor == red.tensor else op for op in launch.operands)
    return replace(launch, operands=operands)


def finalize(plan: PlanBase, processors: int | None = None) -> Executable:
    """The plan finished for ``processors`` real processors of its kind (default: those configured) and the
    configuration the environment sets now; worked out once per plan, processors and configuration."""
    config = configuration(plan, processors)
    return _CACHE.get(plan, ("executable", config), lambda: _finalize(plan, config))


def _finalize(plan: PlanBase, config: Configuration) -> Executable:
    machine = plan.machine
    into = partials_reduction(plan)  # launches add into per-processor partials: synthesized or held
    red = into if into is not None and into.synthesized else None
    held = into if isinstance(into, HeldReduction) else None
    partials = partials_operand(plan, into) if into is not None else None
    binding: dict[Point, int] = machine.bind(config.processors) if machine is not None and not machine.params else {}
    grouping = config.grouping and machine is not None and not machine.params
    layouts = tuple(placement_layout(info) for info in plan.tensors)
    views: list[InPlaceViews | None] = []
    for n, lay in enumerate(layouts):
        viewed = launch_views(plan, n, lay) if lay is not None and (red is None or n != red.tensor) else None
        views.append(InPlaceViews(MappingProxyType(viewed)) if viewed else None)
    held_views = None
    folds: tuple[HeldFold, ...] = ()
    if held is not None:
        # the launches add into partials; the folds reduce into the output's blocks where they can
        held_views, views[held.tensor] = views[held.tensor], None
        folds = _folds(plan, held, held_views, layouts[held.tensor])
        if any(not fold.blocks for fold in folds):
            held_views = None  # reduced into one store, laid out by its format after
    whole: dict[tuple[int, int], TaskGrouping] = {}
    parts: dict[tuple[int, int, int], TaskGrouping] = {}
    if grouping and held is None:  # a held reduction's points run one task each (`grouping.HELD_UNGROUPED`)
        boxes: dict[tuple[Any, ...], TaskGrouping | None] = {}
        for g, group in enumerate(plan.groups):
            for k, launch in enumerate(group.launches):
                if launch.pinned:
                    continue
                launch = _into_partials(into, partials, launch)
                cuts = [_cut(plan, launch, op, layouts, views) for op in launch.operands]
                if group.covers_domain(launch):
                    def owner(p: Point, group: Group = group) -> int:
                        return binding.get(plan.processor_of(group, p), 0)

                    found = _grouping(boxes, ("whole", group.distributed), launch.lower, launch.upper, owner, cuts)
                    if found is not None:
                        whole[(g, k)] = found
                    continue
                for proc, (lower, upper) in _part_boxes(plan, group, launch, binding).items():
                    found = _grouping(boxes, ("part", proc), lower, upper, _Constant(proc), cuts)
                    if found is not None:
                        parts[(g, k, proc)] = found
    return Executable(plan.statement, config, MappingProxyType(binding), grouping, layouts, tuple(views), red,
                      partials, reduction_run(red.plan) if red is not None and red.plan is not None else None,
                      MappingProxyType(whole), MappingProxyType(parts), held, folds, held_views)


def _folds(plan: PlanBase, held: HeldReduction, views: InPlaceViews | None, lay: Layout | None
           ) -> tuple[HeldFold, ...]:
    """The held reduction's folds (`HeldFold`), one per stage, at the launches `held_folds` names; with the
    output's ``views`` (its launches' operands read in its device blocks), the blocks each fold reduces into
    (none where a tile spans several blocks: the output is then one store)."""
    machine = plan.machine
    assert machine is not None
    launches = list(plan.launches())
    where = [(g, k) for g, group in enumerate(plan.groups) for k in range(len(group.launches))]
    coords = [tuple(c) for c in machine.coords()]
    stages = held_folds(plan, held)
    out: list[HeldFold] = []
    start = 0
    for s, (index, members) in enumerate(stages):
        points = tuple((device, coords[device], box) for device, box in members)
        blocks = _fold_blocks(plan, held, views, launches[start:index + 1], points) if views is not None else ()
        tile = tuple(lay.tile) if blocks and lay is not None else ()
        out.append(HeldFold(where[index], points, s == len(stages) - 1, blocks, tile))
        start = index + 1
    return tuple(out)


def _fold_blocks(plan: PlanBase, held: HeldReduction, views: InPlaceViews, stage: Sequence[tuple[Group, Launch]],
                 points: Sequence[tuple[int, Point, Box]]) -> tuple[tuple[Point, Box], ...]:
    """Per point of a fold, its block's coordinates and its box in the block, from the view of the stage's
    last launch it ran in; () where some tile spans several blocks."""
    found: dict[int, tuple[Point, Box]] = {}
    for group, launch in stage:
        op = launch.operands[held.tensor]
        view = views.of(launch, op)
        if view.span is not None:
            return ()
        for p in launch.points():
            found[plan.device_of(group, p)] = (tuple(c.at(p) for c in view.projection), view.local(p))
    if any(device not in found for device, _, _ in points):
        return ()
    return tuple(found[device] for device, _, _ in points)


@dataclass(frozen=True, slots=True)
class _Constant:
    """The owner of every point of a box bound to one processor."""

    proc: int

    def __call__(self, point: Point) -> int:
        return self.proc


def _part_boxes(plan: PlanBase, group: Group, launch: Launch, binding: Mapping[Point, int]
                ) -> dict[int, tuple[Point, Point]]:
    """Per real processor, the box [lower, upper) of a launch over part of the domain its points form (only
    where they form one: a processor whose points are not a box runs them one task each)."""
    by_proc: dict[int, list[Point]] = {}
    for p in launch.points():
        by_proc.setdefault(binding.get(plan.processor_of(group, p), 0), []).append(p)
    out: dict[int, tuple[Point, Point]] = {}
    for proc, points in by_proc.items():
        lower = tuple(min(p[d] for p in points) for d in range(len(launch.lower)))
        upper = tuple(max(p[d] for p in points) + 1 for d in range(len(launch.lower)))
        if math.prod(hi - lo for lo, hi in zip(lower, upper)) == len(points):
            out[proc] = (lower, upper)
    return out


def _cut(plan: PlanBase, launch: Launch, op: Operand, layouts: Sequence[Layout | None],
         views: Sequence[InPlaceViews | None]) -> Cut:
    """``op`` of ``launch`` as the runtime's launch argument cuts its store (`operand_cut`)."""
    placed = views[op.tensor]
    return operand_cut(plan, launch, op, layouts[op.tensor], placed.of(launch, op) if placed is not None else None)


def _grouping(boxes: dict[tuple[Any, ...], TaskGrouping | None], owner_key: tuple[Any, ...], lower: Sequence[int],
              upper: Sequence[int], owner: Callable[[Point], int], cuts: Sequence[Cut]) -> TaskGrouping | None:
    """`task_groups` of the box as a `TaskGrouping`; None where the box runs one task per point. The
    groups of a box are worked out once per owner (``owner_key``: what ``owner`` depends on) and box."""
    lo, hi = tuple(lower), tuple(upper)
    key = (owner_key, lo, hi)
    if key not in boxes:
        found_box = processor_groups(lo, hi, owner)
        boxes[key] = None if isinstance(found_box, str) else TaskGrouping(found_box, (), MappingProxyType({}))
    skeleton = boxes[key]
    if skeleton is None:
        return None
    groups = check_cuts(skeleton.groups, cuts)
    if isinstance(groups, str):
        return None
    grouped: list[GroupCut] = []
    for cut in cuts:
        gc = groups.cut(cut)
        if gc.tile is None or gc.projection is None or gc.colors is None:
            grouped.append(None)
        else:
            grouped.append((gc.tile, gc.projection, gc.colors))
    members = {q: tuple((p, tuple(groups.slices(c, p) for c in cuts)) for p in groups.points(q))
               for q in groups.groups()}
    return TaskGrouping(groups, tuple(grouped), MappingProxyType(members))
