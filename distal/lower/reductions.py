"""Pass: how a distributed reduction into the output runs (`PlanBase.reduction`).

A launch whose points share output tiles reduces into the output
(REDUCE_ADD, decided by `tiling`). On a flat machine Legate's own reduction
does it: every point's buffer is folded into the output tile. On a
hierarchical machine the sum of the points' contributions to one tile is a
reduction over processors of several nodes, and a program of collectives
synthesized for the machine's levels (papers/hierarchical-reduction-
synthesis.txt, `distal.reduction`) can beat one flat reduction. This pass
finds, per output tile, the group of processors whose points reduce into it,
plans the simulated-best program for those groups
(`distal.reduction.machines.machine_plan`, ranked for the size of one
processor's partial result), and records it. The runtime then lets every
point add into its processor's partial result and runs the program
(`distal.runtime._reduce.reduce_on_machine`); the NumPy executor runs the
same program with `distal.reduction.execute_lowered`.

Strategies (`lower(..., reduction=...)`, default from DISTAL_REDUCTION):

* "auto" (default): the synthesized program on a hierarchical machine when
  the best program is not the single AllReduce (which is what Legate's one
  reduction does anyway); Legate's reduction on a flat machine;
* "synthesized": the synthesized program on any machine, the single
  AllReduce included (to test the path on flat machines);
* "legate": always Legate's reduction.

The synthesized program needs a regular structure; when it is missing the
plan keeps Legate's reduction and `reason` says why: another launch writes
the output directly, two points of one launch run on one processor, or the
groups cannot be planned (groups of different sizes).

Processors are grouped by the set of output boxes their points reduce
into. When each reduces into one tile (Johnson's `ko`, an inner product),
a processor's partial result is that tile. When some reduce into several
(sequential steps that walk along the output), a processor's partial is the
whole output (`Reduction.whole`), its contributions at their global place,
and a group's sum is added into the hull of the group's boxes.
"""

from __future__ import annotations

import math

from distal.errors import DistalError
from distal.lower.nest import MAX_LAUNCH_DIMS
from distal.lower.task_graph import Box, PlanBase, Privilege, Reduction

__all__ = ["STRATEGIES", "choose_reduction"]

STRATEGIES = ("auto", "synthesized", "legate")


def _empty(box: Box) -> bool:
    return any(hi <= lo for lo, hi in box)


def _hull(boxes: frozenset[Box]) -> Box:
    """The smallest box holding every box of a non-empty set."""
    dims = zip(*boxes)
    return tuple((min(lo for lo, _ in d), max(hi for _, hi in d)) for d in dims)


def choose_reduction(plan: PlanBase, how: str = "auto") -> Reduction | None:
    """How the plan's REDUCE_ADD launches into the output run; None when there are none."""
    if how not in STRATEGIES:
        raise DistalError(f"expected a reduction strategy in {STRATEGIES}, but found {how!r}")
    out = plan.output
    n = plan.tensors.index(out)
    launches = list(plan.launches())
    reducing = [k for k, (_, launch) in enumerate(launches) if launch.operands[n].privilege is Privilege.REDUCE_ADD]
    if not reducing:
        return None

    def legate(reason: str) -> Reduction:
        return Reduction(n, "legate", reason)

    machine = plan.machine
    if how == "legate":
        return legate("reduction='legate': one Legate reduction")
    if machine is None:
        return legate("no machine: one Legate reduction")
    if how == "auto" and machine.levels == 1:
        return legate("flat machine: one Legate reduction")
    if len(machine.full_shape) + 1 > MAX_LAUNCH_DIMS:
        return legate(f"a store of partials (processor coordinate, values) would have more than "
                      f"{MAX_LAUNCH_DIMS} dimensions: one Legate reduction")
    direct = [k for k in range(len(launches)) if k not in reducing]
    if direct:
        return legate(f"launch {direct[0]} writes {out.name} directly: one Legate reduction")

    # Which output boxes each processor reduces into.
    boxes_of: dict[int, set[Box]] = {}
    row: tuple[int, ...] = ()
    for k in reducing:
        group, launch = launches[k]
        op = launch.operands[n]
        row = op.tile if op.tile is not None else out.shape
        seen: dict[int, tuple[int, ...]] = {}
        for point in launch.points():
            device = plan.device_of(group, point)
            if device in seen:
                return legate(f"points {seen[device]} and {point} of launch {k} run on one processor "
                              f"{plan.processor_of(group, point)}: one Legate reduction")
            seen[device] = point
            box = op.box(point, out.shape)
            if not _empty(box):
                boxes_of.setdefault(device, set()).add(box)
    # One tile per processor: its partial is that tile. Several (sequential steps
    # that move along the output): its partial is the whole output.
    whole = any(len(b) > 1 for b in boxes_of.values())
    if whole:
        row = out.shape
    row = row or (1,)  # a 0-d output is a store of shape (1,)
    members: dict[frozenset[Box], list[int]] = {}
    for device in sorted(boxes_of):
        members.setdefault(frozenset(boxes_of[device]), []).append(device)
    ordered = sorted(members.items(), key=lambda item: item[1][0])
    groups = tuple(tuple(devices) for _, devices in ordered)
    boxes = tuple(_hull(box_set) for box_set, _ in ordered)
    nbytes = float(out.itemsize * math.prod(row))

    from distal.reduction.machines import describe_plan, machine_plan
    from distal.reduction.ranking import allreduce_program

    try:
        rplan = machine_plan(machine, groups, nbytes)
    except DistalError as err:  # ReductionError, SynthesisError
        return legate(f"no reduction program for groups {[list(g) for g in groups]} ({err}): one Legate reduction")
    single = rplan.program == allreduce_program(rplan.layout.hierarchy)
    if how == "synthesized":
        strategy, reason = "synthesized", "reduction='synthesized'"
    elif not rplan.program.steps:
        strategy, reason = "legate", "every group is one processor: one Legate reduction"
    elif single:
        strategy, reason = "legate", "the simulated-best program is the single AllReduce: one Legate reduction"
    else:
        strategy, reason = "synthesized", "hierarchical machine: the simulated-best program"
    return Reduction(
        tensor=n,
        strategy=strategy,
        reason=reason,
        row=row,
        whole=whole,
        groups=groups,
        boxes=boxes,
        nbytes=nbytes,
        program=str(rplan.program),
        shape=rplan.program.shape,
        steps=tuple(str(step) for step in rplan.best.lowered.steps),
        seconds=rplan.seconds,
        allreduce_seconds=rplan.allreduce_seconds,
        description=describe_plan(rplan, nbytes, "ring"),
        plan=rplan,
    )
