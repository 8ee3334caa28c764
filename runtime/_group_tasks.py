"""The launch points bound to one processor as one Legate task: the runtime's side of `distal.lower.grouping`.

`distal.lower.grouping` decides, on plain data, which points of a launch box
run together, and `distal.lower.executable.finalize` works the decision out
once per plan, processors and configuration (`TaskGrouping`: the groups,
each argument's cut for the launch over groups, and each group's points with
their views of the group's tiles). Here a group's task runs each of its
points' bodies on their views of the group's tiles (`Grouped`);
`_execute._submit_groups` submits them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Grouped"]


@dataclass(eq=False)
class Grouped:
    """A kernel run once per launch point of a group, in row-major order, on each point's views of the
    group's tiles (`members[group]`: per point, its slices per argument, None for the whole tile)."""

    kernel: Any
    members: Mapping[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[tuple[slice, ...] | None, ...]], ...]]

    def __call__(self, point: tuple[int, ...], *tiles: Any) -> None:
        kernel = self.kernel
        for p, index in self.members[tuple(int(x) for x in point)]:
            try:
                kernel(p, *[t if i is None else t[i] for t, i in zip(tiles, index)])
            except BaseException as error:  # the task records it under the group's point: name the point too
                error.add_note(f"at launch point {p} (run in the task of group {tuple(point)})")
                raise
