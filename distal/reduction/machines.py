"""Reduction plans for distal machines, and their description for `explain()`.

`machine_plan` plans the sum of per-processor partial results of a
distributed reduction on a `dt.Machine` (pure: nothing runs);
`describe_plan` renders a plan as the lines an `explain()` report shows: the
chosen program with its lowered steps, its predicted time, and the predicted
time of a single AllReduce for comparison. `distal.runtime.reduce_on_machine`
executes such a plan on Legate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from distal._text import short_seconds_text
from distal.errors import ReductionError
from distal.machine.grid import Machine
from distal.machine.links import Link
from distal.reduction.lowering import LoweredProgram
from distal.reduction.ranking import DEFAULT_BYTES, ReductionPlan, allreduce_program, plan_reduction
from distal.reduction.system import System, system_from_machine
from distal.reduction.timing import step_time

__all__ = ["describe_plan", "machine_plan", "retimed_seconds"]


def machine_plan(
    machine: Machine,
    groups: Sequence[Sequence[int]] | None = None,
    nbytes: float = DEFAULT_BYTES,
    algorithm: str = "ring",
    interconnects: Sequence[Link] | None = None,
    max_size: int = 5,
) -> ReductionPlan:
    """Plan summing partial results held by the processors of a (hierarchical) machine.

    Machine level i becomes system level ``l{i}`` (`system_from_machine`;
    inner levels are NVSwitch for a GPU machine, shared memory for a CPU
    one, unless `interconnects` says otherwise). A processor's device id is
    its row-major index over the machine's coordinates (levels
    concatenated). `groups` lists the disjoint, equally sized groups of
    device ids whose partials are summed separately (one per output tile);
    `None` is one group of every processor. `nbytes` is the size of one
    device's partial result.

    >>> import distal as dt
    >>> plan = machine_plan(dt.Machine(dt.Grid(2), dt.Grid(4)), nbytes=8e6)
    >>> plan.program.shape
    'ReduceScatter-AllReduce-AllGather'
    >>> machine_plan(dt.Machine(dt.Grid(2, 2), dt.Grid(2)), [[0, 4], [1, 5], [2, 6], [3, 7]]).steps
    ((CollectiveKind.ALL_REDUCE, ((0, 4), (1, 5), (2, 6), (3, 7))),)
    """
    if not isinstance(machine, Machine):
        raise ReductionError(f"expected a distal Machine, but found {machine!r}")
    ics = None if interconnects is None else tuple(interconnects)
    system = system_from_machine(machine, ics, gpus=machine.kind == "gpu")
    grps = [list(range(system.size))] if groups is None else [[int(d) for d in g] for g in groups]
    return plan_reduction(system, grps, nbytes=nbytes, algorithm=algorithm, max_size=max_size)


def retimed_seconds(
    plan: ReductionPlan,
    nbytes: float,
    interconnects: Sequence[Link],
    algorithm: str = "ring",
) -> tuple[float, float]:
    """The chosen program's and the single AllReduce's time on other links, one per level of the plan's system.

    The plan was ranked on the links the lowering knew (`system_from_machine`'s defaults); a time model with
    its own links (a Lassen node's NVLink, X-bus and EDR port) re-times the same lowered steps on them: the
    same device groups and chunks, each step's port loads and latency terms on `interconnects`
    (`distal.reduction.timing.step_time`). Level 0 is the link between nodes.

    >>> import distal as dt
    >>> from distal.machine.links import Link
    >>> plan = machine_plan(dt.Machine(dt.Grid(2), dt.Grid(4)), nbytes=8.0)
    >>> fast = (Link("ib", 25e9, 1.5e-6), Link("nvlink", 75e9, 1e-6))
    >>> [round(t * 1e6, 1) for t in retimed_seconds(plan, 8.0, fast)]
    [9.0, 21.0]
    """
    old = plan.layout.system
    links = tuple(interconnects)
    if len(links) != len(old.levels):
        raise ReductionError(f"expected {len(old.levels)} interconnects (one per level of {old}), "
                             f"but found {len(links)}")
    system = System(tuple(replace(lv, link=link) for lv, link in zip(old.levels, links)))

    def timed(lowered: LoweredProgram) -> float:
        chunk = float(nbytes) / lowered.chunks
        return sum(step_time(system, s, chunk, algorithm) for s in lowered.steps)

    return timed(plan.best.lowered), timed(plan.allreduce.lowered)


def _bytes(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes:g} B"


def describe_plan(plan: ReductionPlan, nbytes: float | None = None, algorithm: str | None = None) -> str:
    """The chosen program, its lowered steps, its predicted time and a single AllReduce's.

    `nbytes` and `algorithm` (what the plan was ranked with) are only printed.

    >>> import distal as dt
    >>> plan = machine_plan(dt.Machine(dt.Grid(2), dt.Grid(2)), nbytes=2**23)
    >>> print(describe_plan(plan, 2**23, "ring"))
    reduction of 1 group of 4 devices on [(l0, 2), (l1, 2)] (ring model, 8 MiB per device)
      levels: l0 2 nic(8 GB/s, 10 us); l1 2 shm(20 GB/s, 1 us)
      synthesis hierarchy [(root, 1), (l0, 2), (l1, 2)], 4 chunks per device
      program: (l0, InsideGroup, ReduceScatter) ; (l0, Parallel(root), AllReduce) ; (l0, InsideGroup, AllGather)
      predicted 1.49 ms; single AllReduce 1.63 ms (1.10x faster)
        1. ReduceScatter over [[0, 1], [2, 3]]
        2. AllReduce over [[0, 2], [1, 3]]
        3. AllGather over [[0, 1], [2, 3]]
    """
    layout = plan.layout
    system = layout.system
    groups = layout.replicas
    size = len(groups[0]) if groups else 0
    noun = "group" if len(groups) == 1 else "groups"
    how = [x for x in (f"{algorithm} model" if algorithm else "",
                       f"{_bytes(nbytes)} per device" if nbytes is not None else "") if x]
    lines = [f"reduction of {len(groups)} {noun} of {size} devices on {system}"
             + (f" ({', '.join(how)})" if how else "")]
    lines.append("  levels: " + "; ".join(system.level_texts()))
    lines.append(f"  synthesis hierarchy {layout.hierarchy}, {plan.best.lowered.chunks} chunks per device")
    if not plan.program.steps:
        lines.append("  program: none (every group is one device; nothing to reduce)")
        return "\n".join(lines)
    single = plan.program == allreduce_program(layout.hierarchy)
    lines.append(f"  program: {plan.program}" + ("  (the single AllReduce)" if single else ""))
    if single:
        lines.append(f"  predicted {short_seconds_text(plan.seconds)}; no synthesized program is faster")
    else:
        lines.append(
            f"  predicted {short_seconds_text(plan.seconds)}; single AllReduce "
            f"{short_seconds_text(plan.allreduce_seconds)} ({plan.speedup:.2f}x faster)"
        )
    for n, step in enumerate(plan.best.lowered.steps, 1):
        lines.append(f"    {n}. {step}")
    return "\n".join(lines)
