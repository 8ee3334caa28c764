"""Pass: find the launch structure of a scheduled statement.

The outermost perfectly nested foralls (the root chain) are where launches
come from:

* every distributed loop of the root chain becomes a launch dimension
  (directly nested distributed foralls give one multi-dimensional launch;
  within one chain any loop order gives the same result, so distributed
  loops further down the chain join the same launch);
* the non-distributed loops of the chain that carry communication (a
  `communicate(T, v)` target, and the chain loops enclosing one) become
  sequential steps: one launch per step value;
* everything else runs inside the tasks.

Without distributed loops the statement is one single-point launch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from distal.cin.relations import Communicate, Distribute
from distal.cin.statements import Forall, Stmt, loop_vars
from distal.machine.grid import Grid, Machine
from distal.notation.ast import IndexVar
from distal.notation.variable import TensorVar

__all__ = ["MAX_LAUNCH_DIMS", "STEP_LIMIT", "Nest", "find_nest"]

STEP_LIMIT = 4096  # most sequential launches a plan hoists out of its tasks
MAX_LAUNCH_DIMS = 6  # LEGATE_MAX_DIM of the Legate build (legate.core.LEGATE_MAX_DIM); more crashes it


@dataclass(frozen=True, slots=True)
class Nest:
    """Launch dimensions (distributed loops), sequential steps, and the machine they map to."""

    dist: tuple[IndexVar, ...]
    steps: tuple[IndexVar, ...]
    machine: Machine | None
    slots: tuple[int, ...]  # per distributed var: index in a processor coordinate
    notes: tuple[str, ...]

    def __str__(self) -> str:
        dist = ", ".join(map(str, self.dist)) or "-"
        steps = ", ".join(map(str, self.steps)) or "-"
        text = f"launch over {{{dist}}}, steps {{{steps}}}, machine {self.machine!r}, slots {self.slots}"
        return text + "".join(f"\n  note: {n}" for n in self.notes)


def root_chain(stmt: Stmt) -> list[IndexVar]:
    """The loop variables of the outermost perfectly nested foralls."""
    chain: list[IndexVar] = []
    while isinstance(stmt, Forall):
        chain.append(stmt.var)
        stmt = stmt.body
    return chain


def find_nest(stmt: Stmt, relations: tuple[object, ...], ext: Mapping[IndexVar, int],
              tensors: tuple[TensorVar, ...], bindings: Mapping[str, int] | None = None) -> Nest:
    """The launch structure of `stmt` under `relations` (extents bound).

    A symbolic machine (`Grid(dt.Param("gx"))`) of a distribute or of a
    tensor's format is bound with `bindings`: the plan's machine is concrete.
    """
    binds = bindings or {}
    relations = tuple(replace(r, grid=r.grid.bound(binds)) if isinstance(r, Distribute) and r.grid is not None
                      else r for r in relations)
    chain = root_chain(stmt)
    notes: list[str] = []
    dists = [r for r in relations if isinstance(r, Distribute)]
    distributed = [v for r in dists for v in r.vars]
    dist = tuple(v for v in chain if v in distributed)
    if len(dist) > MAX_LAUNCH_DIMS:
        notes.append(f"distributed loops {', '.join(map(str, dist[MAX_LAUNCH_DIMS:]))} run inside the tasks "
                     f"(a launch has at most {MAX_LAUNCH_DIMS} dimensions)")
        dist = dist[:MAX_LAUNCH_DIMS]
    everywhere = set(loop_vars(stmt))
    for v in distributed:
        if v not in chain and v in everywhere:
            notes.append(f"distributed loop {v} is not in the outermost loop nest; it runs inside the tasks")
    steps: tuple[IndexVar, ...] = ()
    if dist:
        comm = [r.var for r in relations if isinstance(r, Communicate)]
        depth = max((chain.index(v) for v in comm if v in chain and v not in dist), default=-1)
        candidates = [v for v in chain[: depth + 1] if v not in dist]
        while candidates and (math.prod(ext[v] for v in candidates) > STEP_LIMIT
                              or len(dist) + len(candidates) > MAX_LAUNCH_DIMS):
            dropped = candidates.pop()
            notes.append(
                f"communication under {dropped} is aggregated at the enclosing loop "
                f"(at most {STEP_LIMIT} sequential launches and {MAX_LAUNCH_DIMS} launch dimensions)"
            )
        steps = tuple(candidates)
        for v in comm:
            if v not in chain:
                notes.append(f"communicate at {v}, which is not in the outermost loop nest: "
                             "data for the whole task")
    machine, slots = _machine(dists, dist, ext, tensors, binds)
    return Nest(dist, steps, machine, slots, tuple(notes))


def _machine(dists: list[Distribute], dist: tuple[IndexVar, ...], ext: Mapping[IndexVar, int],
             tensors: tuple[TensorVar, ...], binds: Mapping[str, int]) -> tuple[Machine | None, tuple[int, ...]]:
    """The abstract machine of the distributed loops and each loop's slot in a processor coordinate."""
    if not dist:
        return None, ()
    used = [r for r in dists if any(v in dist for v in r.vars)]
    if any(r.grid is None for r in used):
        return Machine(Grid(*(ext[v] for v in dist))), tuple(range(len(dist)))
    grids: dict[int, Grid] = {}
    for r in used:
        assert r.grid is not None
        grids.setdefault(r.level, r.grid)
    levels = max(grids) + 1
    machine: Machine | None = None
    for t in tensors:
        m = getattr(getattr(t, "format", None), "machine", None)
        if isinstance(m, Machine) and m.params:
            m = m.bound(binds)
        if isinstance(m, Machine) and m.levels >= levels and all(
            m.grids[lv].dims == g.dims for lv, g in grids.items()
        ):
            machine = m
            break
    if machine is None:
        if sorted(grids) != list(range(levels)):
            return Machine(Grid(*(ext[v] for v in dist))), tuple(range(len(dist)))
        machine = Machine(*(grids[lv] for lv in range(levels)))
    base = [sum(g.ndim for g in machine.grids[:lv]) for lv in range(machine.levels)]
    slots = []
    for v in dist:
        r = next(r for r in used if v in r.vars)
        slots.append(base[r.level] + r.grid_dims()[r.vars.index(v)])
    return machine, tuple(slots)
