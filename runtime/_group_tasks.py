"""The launch points bound to one processor as one Legate task: the runtime's side of `distal.lower.grouping`.

`distal.lower.grouping` decides, on plain data, which points of a launch box
run together (`processor_groups`, `check_cuts`). Here the launch's real
arguments are read as that data (`cuts_of`), the decision is worked out once
per plan and box (`grouping_of`, kept in `Plan.memo`), and a group's task runs
each of its points' bodies on their views of the group's tiles (`Grouped`).
`_execute._submit_groups` submits them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distal.errors import DistalError
from distal.lower.grouping import Cut, TaskGroups, check_cuts, processor_groups
from distal.lower.plan import Plan

from ._launch import Affine, Arg, Privilege

__all__ = ["Constant", "Grouped", "Grouping", "cuts_of", "grouping_of"]


def cuts_of(args: list[Arg], ndim: int) -> list[Cut] | None:
    """The launch arguments as `distal.lower.grouping` sees them (None: a projection it cannot read)."""
    out = []
    for a in args:
        written = a.privilege is not Privilege.READ
        if a.tile is None:
            out.append(Cut(None, None, None, written))
            continue
        try:
            maps = a.maps(ndim)
        except DistalError:
            return None
        out.append(Cut(a.tile, tuple(maps),
                       a.color_shape(), written))
    return out


# A launch box's grouping: its groups, per argument its group tile, projection and colors, and per group its
# points with their slices.
Grouping = tuple[TaskGroups, tuple[tuple[tuple[int, ...], tuple[Affine, ...], tuple[int, ...]] | None, ...],
                  dict[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[tuple[slice, ...] | None, ...]], ...]]]


def grouping_of(plan: Plan, lower: tuple[int, ...], upper: tuple[int, ...], args: list[Arg],
              owner: Callable[[tuple[int, ...]], int], memo: tuple[Any, ...]) -> Grouping | None:
    """`task_groups` of the box as a `Grouping`; None where the box runs one task per point. Worked out once
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
    cuts = cuts_of(args, len(lower))
    if cuts is None:
        return None
    found_key = (box_key, tuple(cuts))
    if found_key in plan.memo:
        found: Grouping | None = plan.memo[found_key]
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


@dataclass(frozen=True)
class Constant:
    """The owner of every point of a box bound to one processor."""

    proc: int

    def __call__(self, point: tuple[int, ...]) -> int:
        return self.proc


@dataclass(eq=False)
class Grouped:
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
