"""Performance lints: schedules that run, and give the right result, but waste time or data movement.

`compile_schedule` (what `Schedule.compile` runs) checks every plan (`plan_lints`) and keeps what it finds
in `plan.lints`; each is a `DistalPerformanceWarning` at compile (silence them
with the `warnings` module), a line of `plan.stats()["warnings"]` and a
`warning:` line of explain(). Schedules that contradict themselves are
refused instead (`communicate` of one tensor at two loops: a `ScheduleError`).

The lints (docs/reference.md has them as a table, with the fix each names):

- `communicate-in-leaf`: `communicate(T, v)` at a loop `v` of a substituted
  leaf: one launch per iteration of `v`, each with the tiles of one leaf
  iteration; communicate at the innermost loop outside the leaf instead.
- `rotate-undistributed`: `rotate(t, I, r)` by loops of `I` that are not
  distributed: it only reorders `t` inside each task.
- `machine-from-extents`: `distribute(vars)` without a machine next to
  distributes or formats that name one: the plan's machine is made of the
  loops' extents, and the formats place nothing on it.
- `idle-processors`: processors of the plan's machine that run no launch
  point (extents smaller than the machine, or not dividing it, or a machine
  dimension no distributed loop runs along).

>>> import warnings
>>> import distal as dt
>>> i, j, io, jo, ii, ji = dt.index_vars("i j io jo ii ji")
>>> m = dt.Machine(dt.Grid(4, 4))
>>> A, B = dt.Tensor("A", (2, 8)), dt.Tensor("B", (2, 8))
>>> A[i, j] = B[i, j]
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", dt.DistalPerformanceWarning)
...     plan = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile()
>>> [lint.code for lint in plan.lints]
['idle-processors']
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distal.cin.relations import Communicate, Distribute, Rotate, Substitute
from distal.errors import DistalPerformanceWarning
from distal.schedule import tree

if TYPE_CHECKING:
    from distal.lower.task_graph import PlanBase
    from distal.notation.ast import IndexVar
    from distal.schedule.commands import ScheduleBase

__all__ = ["CODES", "Lint", "plan_lints", "warn"]

CODES = ("communicate-in-leaf", "rotate-undistributed", "machine-from-extents", "idle-processors")


@dataclass(frozen=True, slots=True)
class Lint:
    """One performance trap of a schedule: its `code` (one of `CODES`) and what to do about it."""

    code: str
    message: str

    def __post_init__(self) -> None:
        assert self.code in CODES, self.code

    def __str__(self) -> str:
        return f"{self.message} [{self.code}]"


def plan_lints(sched: ScheduleBase, plan: PlanBase) -> tuple[Lint, ...]:
    """The lints of `plan`, compiled from `sched` (see the module docstring)."""
    return (*_communicate_in_leaf(sched, plan), *_rotate_undistributed(sched),
            *_machine_from_extents(sched, plan), *_idle_processors(plan))


def warn(lints: Sequence[Lint], stacklevel: int = 3) -> None:
    """Each lint as a `DistalPerformanceWarning` (from the caller's caller by default: the user's `compile`)."""
    for lint in lints:
        warnings.warn(str(lint), DistalPerformanceWarning, stacklevel=stacklevel)


def _names(vs: Sequence[IndexVar]) -> str:
    return ", ".join(str(v) for v in vs)


def _communicate_in_leaf(sched: ScheduleBase, plan: PlanBase) -> list[Lint]:
    out = []
    leaves = sched.relations_of(Substitute)
    for r in sched.relations_of(Communicate):
        leaf = next((s for s in leaves if r.var in s.vars), None)
        if leaf is None:
            continue
        names = [t.name for t in r.tensors]
        tiles = []
        for _, launch in plan.launches():
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                if info.name in names and op.tile is not None:
                    tiles.append(f"{info.name} {'x'.join(map(str, op.tile))}")
            break
        outer = _outside(sched, leaf.vars)
        fix = (f"communicate {', '.join(names)} at {outer}, the innermost loop outside the leaf" if outer is not None
               else f"communicate {', '.join(names)} at a loop outside the leaf")
        what = f" (tiles {', '.join(tiles)})" if tiles else ""
        out.append(Lint("communicate-in-leaf", (
            f"{r}: {r.var} is a loop of the {leaf.leaf.name} leaf ({leaf}), so the data moves once per iteration "
            f"of {r.var}: {plan.launch_count()} launch(es) of one leaf iteration each{what}; {fix}")))
    return out


def _outside(sched: ScheduleBase, leaf_vars: Sequence[IndexVar]) -> IndexVar | None:
    """The loop directly around the outermost loop of a leaf, if it is in the same loop nest."""
    paths = [p for v in leaf_vars if (p := tree.forall_path(sched.stmt, v)) is not None]
    if not paths:
        return None
    _, chain, _ = tree.chain_at(sched.stmt, max(paths, key=len))
    first = min((chain.index(v) for v in leaf_vars if v in chain), default=0)
    return chain[first - 1] if first > 0 else None


def _rotate_undistributed(sched: ScheduleBase) -> list[Lint]:
    out = []
    distributed = set(sched.distributed_vars())
    for r in sched.relations_of(Rotate):
        idle = [b for b in r.by if b not in distributed]
        if not idle:
            continue
        fix = (f"distribute {_names(idle)} (e.g. .distribute([{_names(idle)}])) or rotate by distributed loops "
               f"only ({_names([b for b in r.by if b in distributed])})" if len(idle) < len(r.by)
               else f"distribute {_names(idle)} (e.g. .distribute([{_names(idle)}])), or drop the rotate")
        out.append(Lint("rotate-undistributed", (
            f"{r}: {_names(idle)} {'is' if len(idle) == 1 else 'are'} not distributed, so rotating {r.target} by "
            f"{'it' if len(idle) == 1 else 'them'} only changes the order of {r.target}'s iterations inside each "
            f"task; a rotation staggers which processor reads which block only over distributed loops; {fix}")))
    return out


def _machine_from_extents(sched: ScheduleBase, plan: PlanBase) -> list[Lint]:
    machine = plan.machine
    dists = sched.relations_of(Distribute)
    bare = [r for r in dists if r.grid is None]
    if machine is None or not bare:
        return []
    named = [r for r in dists if r.grid is not None]
    formats = {info.name: info.tensor.format for info in plan.tensors if info.tensor.format is not None}
    elsewhere = {name: f for name, f in formats.items() if f.machine != machine}
    if not named and not elsewhere:
        return []
    vars_ = [v for r in bare for v in r.vars]
    parts = [f"distribute([{_names(vars_)}]) names no machine, so the plan's machine is made of the distributed "
             f"loops' extents, {machine!r}"]
    if named:
        parts[0] += f", not the grid of {named[0]}"
    if elsewhere:
        on = next(iter(elsewhere.values())).machine
        parts.append(f"the formats of {', '.join(elsewhere)} are on {on!r} and place nothing on it (everything "
                     "read of them is counted as received)")
    fix = (f"give {_names(vars_)} a machine dimension (the compound form distribute(targets, outer, inner, machine) "
           f"over a machine that has one, with formats on it), or drop distribute([{_names(vars_)}])")
    return [Lint("machine-from-extents", "; ".join(parts) + "; " + fix)]


def _idle_processors(plan: PlanBase) -> list[Lint]:
    machine = plan.machine
    if machine is None or machine.params:
        return []
    total = machine.size
    busy: set[tuple[int, ...]] = set()
    for group, launch in plan.launches():
        if group.distributed == 0:
            continue
        for point in launch.points():
            busy.add(plan.processor_of(group, point))
    if not busy or len(busy) == total:
        return []
    shape = machine.full_shape
    used = sorted({s for s in plan.processor_slots if 0 <= s < len(shape)})
    reach = tuple(max(p[d] for p in busy) + 1 for d in range(len(shape)))
    unused = [d for d in range(len(shape)) if d not in used and shape[d] > 1]
    names = [f"{g.names[n]}{f'@{lv}' if machine.levels > 1 else ''}"
             for lv, g in enumerate(machine.grids) for n in range(g.ndim)]
    if unused:
        it = "it" if len(unused) == 1 else "them"
        why = (f"no distributed loop runs along {', '.join(names[d] for d in unused)}; distribute a loop over "
               f"{it}, or use a machine without {it}")
    else:
        why = (f"only coordinates below {reach} of {shape} have work (the distributed loops' extents leave the "
               f"blocks past them empty); a machine of shape {reach} does the same work")
    share = "" if total < 4 else f" ({_fraction(total - len(busy), total)})"
    return [Lint("idle-processors", (
        f"{total - len(busy)} of {total} processors of {machine!r}{share} run no launch point: {why}"))]


def _fraction(n: int, total: int) -> str:
    g = math.gcd(n, total)
    quarters = {(1, 4): "a quarter", (1, 2): "half", (3, 4): "three quarters"}
    return quarters.get((n // g, total // g), f"{100 * n / total:.0f}%")
