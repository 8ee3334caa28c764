"""Hypothesis strategies for lowering tests: machines, formats, distributed schedules.

`machine_schedules(sched)` draws a machine (grids 1x1 to 2x3, a 2x2x2 cube, or
a hierarchical machine), gives every tensor of the statement a random format
on it, distributes random loops onto it with the compound `distribute`
(again inside each node for a hierarchical machine), and then applies random
splits, reorders, communicates, rotates and substitutes, keeping the legal
ones. Extents are the statement's, so they often do not divide.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import distal as dt
from distal.cin.statements import Assign
from distal.errors import DistalError
from distal.format.format import Format
from distal.notation.ast import IndexVar
from distal.schedule import tree
from tests._strategies import Fresh

__all__ = ["MACHINES", "formats", "machine_schedules", "machines_of_kind"]

MACHINES = (
    dt.Machine(dt.Grid(1, 1)),
    dt.Machine(dt.Grid(2)),
    dt.Machine(dt.Grid(3)),
    dt.Machine(dt.Grid(1, 2)),
    dt.Machine(dt.Grid(2, 2)),
    dt.Machine(dt.Grid(2, 3)),
    dt.Machine(dt.Grid(2, 2, 2)),
    dt.Machine(dt.Grid(2), dt.Grid(2)),
)


def machines_of_kind(kind: str, machines: tuple[dt.Machine, ...] = MACHINES) -> tuple[dt.Machine, ...]:
    """`machines` with the processors of their leaf grids of `kind` (`"gpu"`: tasks run on GPUs)."""
    out = []
    for m in machines:
        *outer, leaf = m.grids
        out.append(dt.Machine(*outer, dt.Grid(*leaf.dims, names=leaf.names, kind=kind)))
    return tuple(out)


@st.composite
def formats(draw: st.DrawFn, order: int, machine: dt.Machine) -> Format:
    """A random format for a tensor of `order` dimensions on `machine`."""
    levels = []
    for grid in machine.grids:
        names = "abcd"[:order]
        free = list(names)
        entries = []
        for _ in range(grid.ndim):
            choice = draw(st.integers(0, 3))
            if choice <= 1 and free:
                entries.append(free.pop(draw(st.integers(0, len(free) - 1))))
            elif choice == 2:
                entries.append("0")
            else:
                entries.append("*")
        levels.append(f"{names} -> {''.join(entries)}")
    return Format(levels if len(levels) > 1 else levels[0], machine)


def _chain_of(s: dt.Schedule, v: IndexVar) -> list[IndexVar]:
    path = tree.forall_path(s.stmt, v)
    assert path is not None
    return tree.chain_at(s.stmt, path)[1]


@st.composite
def machine_schedules(draw: st.DrawFn, sched: dt.Schedule, max_steps: int = 5,
                      machines: tuple[dt.Machine, ...] = MACHINES) -> tuple[dt.Schedule, dict[str, Any]]:
    """A distributed schedule of `sched` on a random machine, and its parameter bindings."""
    fresh = Fresh("u")
    machine = draw(st.sampled_from(machines))
    for tensor in sched.tensors():
        if tensor.order > 0 and tensor not in sched.workspaces():
            sched.bindings.tensor(tensor).format = draw(formats(tensor.order, machine))
    sched = sched.refreshed()  # the schedule over the formatted vars (distribute(onto=) reads them)
    s = sched
    locals_: list[IndexVar] = list(sched.loop_vars())
    for level, grid in enumerate(machine.grids):
        loops = locals_
        if len(loops) < grid.ndim:
            break
        targets = draw(st.permutations(loops))[: grid.ndim]
        dist = [fresh() for _ in targets]
        locals_ = [fresh() for _ in targets]
        try:
            s = s.distribute(targets, dist, locals_, machine, level=level)
        except DistalError:
            break
    bindings: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, max_steps))):
        kind = draw(st.sampled_from(["split", "reorder", "communicate", "rotate", "substitute", "divide"]))
        loops = list(s.loop_vars())
        if not loops:
            break
        bound = dict(bindings)
        try:
            if kind in ("split", "divide"):
                v = draw(st.sampled_from(loops))
                size: Any = draw(st.integers(1, 4))
                if draw(st.integers(0, 4)) == 0:
                    name = f"q{len(bindings)}"
                    bindings[name] = size
                    size = dt.Param(name)
                s = getattr(s, kind)(v, fresh(), fresh(), size)
            elif kind == "reorder":
                chain = _chain_of(s, draw(st.sampled_from(loops)))
                s = s.reorder(draw(st.permutations(chain)))
            elif kind == "communicate":
                s = s.communicate(draw(st.sampled_from(s.tensors())), draw(st.sampled_from(loops)))
            elif kind == "rotate":
                dist = [v for v in s.distributed_vars() if v in loops]
                seq = [v for v in loops if v not in dist]
                if not dist or not seq:
                    continue
                t = draw(st.sampled_from(seq))
                by = draw(st.permutations(dist))[: draw(st.integers(1, len(dist)))]
                s = s.rotate(t, by, fresh())
            else:
                v = draw(st.sampled_from(loops))
                path = tree.forall_path(s.stmt, v)
                assert path is not None
                _, chain, body = tree.chain_at(s.stmt, path)
                if not isinstance(body, Assign):
                    continue
                k = draw(st.integers(1, len(chain)))
                s = s.substitute(chain[len(chain) - k:], dt.leaf.GENERIC)
        except DistalError:
            bindings = bound  # a parameter drawn for a refused command is not the schedule's
            continue
    return s, bindings
