"""Which launch points run together as one Legate task: the points of a launch bound to one real processor.

A launch over an abstract machine with more points than real processors
runs several points on each processor (`Machine.bind`, block-wise). Each
Legate point task costs a few hundred microseconds, so where it is safe the
points of one processor run as ONE task: the launch is submitted over a
domain of groups (one point per processor), each operand cut into the box
that a group's tiles form together, and the task runs each original point's
body on its sub-views of that box, in row-major order (the order Legate
would have run them on that processor).

It is safe when (`task_groups`):

* the points of each processor form a box of the launch, all boxes of one
  shape, laid on a regular grid from the launch's lower corner (rows of a
  grid, for instance);
* for every operand, the tiles of a group's points together form one box of
  the operand, aligned with a tiling of it: along each launch dimension a
  group spans, the operand's color follows that dimension with coefficient
  1 or -1 in at most one of its dimensions;
* no two points of a group write or reduce into one tile (a written operand
  follows every dimension the group spans), and no written operand is
  handed whole to every point.

Hierarchical launches run grouped where these hold too (their points bound
to one processor are a box); pinned single-point launches (rotations with
`rotation="points"`) are one task each, as before. ``DISTAL_GROUP_TASKS=0``
turns grouping off (one task per launch point), to compare.

This is the decision only, on plain data (`Cut`: an operand's tile,
projection and whether it is written), so that `explain()` prints the
number of tasks the runtime (`distal.runtime._execute`) then submits.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distal.lower.in_place import BlockView, ViewKey, launch_views, placement_layout, view_key
from distal.lower.reductions import HeldReduction, partials_reduction
from distal.lower.task_graph import Group, Launch, Operand, PlanBase, Privilege, Proj, Reduction

__all__ = ["Cut", "LaunchTasks", "TaskGroups", "check_cuts", "grouping_enabled", "operand_cut",
           "partials_operand", "plan_tasks", "processor_groups", "task_groups"]

if TYPE_CHECKING:
    from distal.format.layout import Layout

Point = tuple[int, ...]

ENV = "DISTAL_GROUP_TASKS"


def grouping_enabled() -> bool:
    """Whether launch points bound to one processor run as one task (``DISTAL_GROUP_TASKS``, default on)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class Cut:
    """One operand of a launch as grouping sees it: its tile (None: whole), projection and colors."""

    tile: tuple[int, ...] | None
    projection: tuple[Proj, ...] | None  # with `tile`: one component per operand dimension
    colors: tuple[int, ...] | None
    written: bool  # written, read-written or reduced into


@dataclass(frozen=True, slots=True)
class TaskGroups:
    """The groups of a launch box [lower, lower + shape * count): group q holds the points
    ``lower + q * shape + r`` (r in the box ``shape``) and runs on real processor ``processors[q]``
    (groups in row-major order)."""

    lower: Point
    shape: Point  # points per group along each launch dimension
    count: Point  # groups along each launch dimension
    processors: tuple[int, ...]

    @property
    def tasks(self) -> int:
        return math.prod(self.count)

    def groups(self) -> Iterator[Point]:
        return itertools.product(*(range(c) for c in self.count))

    def points(self, q: Sequence[int]) -> list[Point]:
        """The launch points of group ``q``, row-major (the order they run in)."""
        return list(itertools.product(*(range(lo + x * g, lo + (x + 1) * g)
                                         for lo, x, g in zip(self.lower, q, self.shape, strict=True))))

    def _base(self, p: Proj) -> int:
        """The first color of group 0 along a component that follows a grouped dimension."""
        assert p.dim is not None
        g = self.shape[p.dim]
        return p.coeff * self.lower[p.dim] + p.offset + min(0, p.coeff * (g - 1))

    def cut(self, cut: Cut) -> Cut:
        """``cut`` for the launch over groups: each group's tiles as one tile (a box of them)."""
        if cut.tile is None or cut.projection is None:
            return cut
        tile, projection, colors = [], [], []
        ncolors = cut.colors if cut.colors is not None else (1,) * len(cut.tile)
        for t, p, c in zip(cut.tile, cut.projection, ncolors, strict=True):
            if p.dim is None or p.coeff == 0:
                tile.append(t)
                projection.append(Proj(None, 0, p.offset))
                colors.append(c)
            elif self.shape[p.dim] == 1:
                tile.append(t)
                projection.append(Proj(p.dim, p.coeff, p.coeff * self.lower[p.dim] + p.offset))
                colors.append(c)
            else:
                g = self.shape[p.dim]
                tile.append(t * g)
                projection.append(Proj(p.dim, p.coeff, self._base(p) // g))
                colors.append(-(-c // g))
        return Cut(tuple(tile), tuple(projection), tuple(colors), cut.written)

    def slices(self, cut: Cut, point: Sequence[int]) -> tuple[slice, ...] | None:
        """Where ``point``'s tile lies in its group's tile (None: it is the whole group tile)."""
        if cut.tile is None or cut.projection is None:
            return None
        out: list[slice] = []
        whole = True
        for t, p in zip(cut.tile, cut.projection, strict=True):
            if p.dim is None or p.coeff == 0 or self.shape[p.dim] == 1:
                out.append(slice(None))
                continue
            g = self.shape[p.dim]
            q = (point[p.dim] - self.lower[p.dim]) // g
            first = self._base(p) + p.coeff * q * g
            start = (p.at(point) - first) * t
            out.append(slice(start, start + t))
            whole = False
        return None if whole else tuple(out)


def task_groups(lower: Sequence[int], upper: Sequence[int], owner: Callable[[Point], int],
                cuts: Sequence[Cut]) -> TaskGroups | str:
    """The groups of the launch box [lower, upper) whose points ``owner`` binds to one processor, or why
    the launch runs one task per point (a reason in words)."""
    groups = processor_groups(lower, upper, owner)
    return groups if isinstance(groups, str) else check_cuts(groups, cuts)


def check_cuts(groups: TaskGroups, cuts: Sequence[Cut]) -> TaskGroups | str:
    """``groups``, where every operand's tiles in a group are one box it may hold; else why not."""
    for n, cut in enumerate(cuts):
        why = _not_a_box(groups, cut)
        if why is not None:
            return f"operand {n}: {why}"
    return groups


def processor_groups(lower: Sequence[int], upper: Sequence[int], owner: Callable[[Point], int]) -> TaskGroups | str:
    """The points of the launch box [lower, upper) bound to each processor as equal boxes on a regular grid
    (the operands not looked at: `check_cuts`), or why they are not."""
    lo, hi = tuple(lower), tuple(upper)
    by_proc: dict[int, list[Point]] = {}
    for p in itertools.product(*(range(a, b) for a, b in zip(lo, hi, strict=True))):
        by_proc.setdefault(owner(p), []).append(p)
    if all(len(points) == 1 for points in by_proc.values()):
        return "one point per processor"
    shape: Point | None = None
    firsts: dict[Point, int] = {}
    for proc, points in by_proc.items():
        first = tuple(min(p[d] for p in points) for d in range(len(lo)))
        box = tuple(max(p[d] for p in points) + 1 - first[d] for d in range(len(lo)))
        if math.prod(box) != len(points):
            return f"the points of processor {proc} are not a box of the launch"
        if shape is None:
            shape = box
        elif box != shape:
            return f"processors run boxes of different shapes ({shape} and {box})"
        if any((f - a) % s for f, a, s in zip(first, lo, box, strict=True)):
            return f"the points of processor {proc} are not on a regular grid of boxes"
        firsts[tuple((f - a) // s for f, a, s in zip(first, lo, box, strict=True))] = proc
    assert shape is not None
    count = tuple((b - a) // s for a, b, s in zip(lo, hi, shape, strict=True))
    return TaskGroups(lo, shape, count, tuple(firsts[q] for q in itertools.product(*(range(c) for c in count))))


def _not_a_box(groups: TaskGroups, cut: Cut) -> str | None:
    """Why a group's tiles of ``cut`` are not one box of distinct tiles it may hold (None: they are)."""
    spanned = {k for k, g in enumerate(groups.shape) if g > 1}
    if cut.tile is None or cut.projection is None:
        return "written whole by every point" if cut.written else None
    followed: set[int] = set()
    for p in cut.projection:
        if p.dim is None or p.coeff == 0 or p.dim not in spanned:
            continue
        if abs(p.coeff) != 1:
            return f"its color {p} skips tiles, so a group's tiles are not a box"
        if p.dim in followed:
            return f"two of its dimensions follow launch dimension {p.dim}, so a group's tiles are not a box"
        followed.add(p.dim)
        if groups._base(p) % groups.shape[p.dim]:
            return f"a group's tiles along color {p} do not start at a multiple of {groups.shape[p.dim]} tiles"
    if cut.written and followed != spanned:
        return "points of a group write or reduce into one tile"
    return None


def partials_operand(plan: PlanBase, red: Reduction) -> Operand:
    """The output's operand of a launch into per-processor partials (a synthesized reduction): each point
    gets its abstract processor's flat block of a ``(*machine.full_shape, prod(row))`` store."""
    assert plan.machine is not None
    lead = plan.machine.full_shape
    by_slot = {slot: d for d, slot in enumerate(plan.processor_slots) if slot >= 0}
    projection = tuple(Proj(by_slot[s]) if s in by_slot else Proj(None, 0, 0) for s in range(len(lead)))
    return Operand(red.tensor, Privilege.READ_WRITE, (*(1 for _ in lead), math.prod(red.row)),
                   (*projection, Proj(None, 0, 0)), (*lead, 1))


@dataclass(frozen=True, slots=True)
class LaunchTasks:
    """How many Legate tasks a launch runs, and why that many; ``per_processor``: (real processor, its tasks)
    for each processor that runs some (what `distal.model.predict` charges the runtime's cost per task to)."""

    tasks: int
    why: str
    per_processor: tuple[tuple[int, int], ...] = ()


def operand_cut(plan: PlanBase, launch: Launch, op: Operand, lay: Layout | None = None,
                view: BlockView | None = None) -> Cut:
    """``op`` of ``launch`` as the runtime's launch argument cuts its store: a tensor read in place (its
    layout ``lay`` and ``view``, `distal.lower.in_place`) is its format's block store (one padded block per
    holding device, or the box of blocks a tile spans), any other its tensor's store (shape (1,) for a 0-d
    tensor), or the partials of a synthesized reduction (``op`` is then `partials_operand`)."""
    written = op.privilege is not Privilege.READ
    if view is not None and lay is not None:
        fixed = {a for a, _ in lay.fixed}
        blocks = (*(1 if name in fixed else size for name, size in lay.axes), max(math.prod(lay.tile), 1))
        tile = (*([1] * (len(blocks) - 1)), blocks[-1]) if view.span is None else (*view.span, blocks[-1])
        return Cut(tile, view.projection, _colors(blocks, tile), written)
    if op.tile is None or op.projection is None:
        return Cut(None, None, None, written)
    projection = tuple(p if p.dim is not None else Proj(None, 0, p.offset) for p in op.projection)
    shape = plan.tensors[op.tensor].shape or (1,)
    return Cut(op.tile, projection, op.colors if op.colors is not None else _colors(shape, op.tile), written)


def _colors(shape: Sequence[int], tile: Sequence[int]) -> tuple[int, ...]:
    """Tiles per dimension when ``shape`` is cut into ``tile``-sized blocks (as `distal.runtime.tile_colors`)."""
    return tuple(-(-n // max(t, 1)) if n > 0 else 0 for n, t in zip(shape, tile, strict=True))


HELD_UNGROUPED = "its points add into partials held across steps: not grouped, measured faster"
"""Why the launches of a held reduction run one task per point (`distal.lower.reductions.HeldReduction`): grouped,
Solomonik 2.5D at n = 1024 on 2 CPUs ran 84 ms a run, ungrouped 41 ms."""


def plan_tasks(plan: PlanBase, processors: int, enabled: bool | None = None) -> list[LaunchTasks]:
    """Per launch of ``plan`` (in `PlanBase.launches` order), the Legate tasks `distal.runtime` submits for it on
    ``processors`` real processors, with grouping on or off (default: `grouping_enabled`)."""
    on = grouping_enabled() if enabled is None else enabled
    red = partials_reduction(plan)  # synthesized or held: the output's operand is the partials
    partials = partials_operand(plan, red) if red is not None else None
    layouts = [placement_layout(info) for info in plan.tensors]
    views: dict[int, dict[ViewKey, BlockView]] = {}
    for n, lay in enumerate(layouts):
        if lay is None or (red is not None and n == red.tensor):
            continue
        found = launch_views(plan, n, lay)
        if found is not None:
            views[n] = found
    binding = plan.machine.bind(processors) if plan.machine is not None and not plan.machine.params else {}
    out = []
    for group, launch in plan.launches():
        cuts = []
        for op in launch.operands:
            if red is not None and partials is not None and op.tensor == red.tensor:
                cuts.append(operand_cut(plan, launch, partials))
                continue
            placed = views.get(op.tensor)
            cuts.append(operand_cut(plan, launch, op, layouts[op.tensor],
                                    placed[view_key(launch, op)] if placed is not None else None))
        if isinstance(red, HeldReduction):  # as the runtime runs them (`distal.lower.executable.finalize`)
            out.append(_launch_tasks(plan, group, launch, cuts, binding, False, HELD_UNGROUPED))
        else:
            out.append(_launch_tasks(plan, group, launch, cuts, binding, on))
    return out


def _launch_tasks(plan: PlanBase, group: Group, launch: Launch, cuts: list[Cut], binding: dict[tuple[int, ...], int],
                  on: bool, off: str = f"grouping off: {ENV}=0") -> LaunchTasks:
    def owner(p: Point) -> int:
        return binding.get(plan.processor_of(group, p), 0)

    def per_point(why: str) -> LaunchTasks:
        counts: dict[int, int] = {}
        for p in launch.points():
            counts[owner(p)] = counts.get(owner(p), 0) + 1
        return LaunchTasks(launch.volume, why, tuple(sorted(counts.items())))

    if launch.pinned:
        return per_point("one point, pinned to its processor")
    if launch.volume == 1:
        return per_point("one point")
    if plan.machine is None:
        return per_point("one task per point (no machine)")
    if plan.machine.params:
        return per_point("one task per point (a symbolic machine is not bound to processors)")
    if group.covers_domain(launch):
        if not on:
            return per_point(f"one task per point ({off})")
        found = task_groups(launch.lower, launch.upper, owner, cuts)
        if isinstance(found, str):
            return per_point(f"one task per point: {found}")
        counts: dict[int, int] = {}
        for proc in found.processors:
            counts[proc] = counts.get(proc, 0) + 1
        return LaunchTasks(found.tasks, f"the {math.prod(found.shape)} points of each processor run as one task",
                           tuple(sorted(counts.items())))
    by_proc: dict[int, list[Point]] = {}
    for p in launch.points():
        by_proc.setdefault(owner(p), []).append(p)
    tasks, grouped, reasons = 0, 0, []
    per_proc: dict[int, int] = {}
    for proc, points in by_proc.items():
        lower = tuple(min(p[d] for p in points) for d in range(len(launch.lower)))
        upper = tuple(max(p[d] for p in points) + 1 for d in range(len(launch.lower)))
        tasks += len(points)
        per_proc[proc] = len(points)
        if not on or len(points) == 1:
            continue
        if math.prod(b - a for a, b in zip(lower, upper, strict=True)) != len(points):
            reasons.append(f"the points of processor {proc} are not a box of the launch")
            continue
        found = task_groups(lower, upper, _constant(proc), cuts)
        if isinstance(found, str):
            reasons.append(found)
        else:
            tasks += 1 - len(points)
            per_proc[proc] = 1
            grouped += 1
    counted = tuple(sorted(per_proc.items()))
    if not on:
        return LaunchTasks(tasks, f"part of the domain: one task per point ({off})", counted)
    if not reasons:
        return LaunchTasks(tasks, "part of the domain: the points of each processor run as one task", counted)
    why = f"; {reasons[0]}" if reasons else ""
    return LaunchTasks(tasks, f"part of the domain: {grouped} of {len(by_proc)} processors run their points as "
                              f"one task{why}", counted)


def _constant(proc: int) -> Callable[[Point], int]:
    def owner(point: Point) -> int:
        return proc

    return owner
