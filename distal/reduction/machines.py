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

from distal._text import short_seconds_text
from distal.errors import ReductionError
from distal.machine.grid import Machine
from distal.machine.links import Link
from distal.reduction.ranking import DEFAULT_BYTES, ReductionPlan, allreduce_program, plan_reduction
from distal.reduction.system import system_from_machine

__all__ = ["describe_plan", "machine_plan"]


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
