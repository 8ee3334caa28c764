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
  reduction does anyway); Legate's reduction on a flat machine, its
  partials held (below) where they are at least `HOLD_MIN_BYTES` on a
  machine of at most `HOLD_MAX_PROCESSORS` processors run by one Legate rank: Legate makes a
  reduction instance afresh for every point of every run, which costs far
  more than a fold at those sizes on this machine (Johnson on Grid(2,2,2));
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

Held partials (issue 34): a reduced output is reduced once per tile it owns
at the loop its `communicate` names, however many sequential steps run under
that loop. With Legate's reduction a REDUCE_ADD launch folds every point's
buffer into the output when the launch ends, so sequential steps under the
output's communicate loop (Johnson's `kio` under `communicate(A, ko)`,
Solomonik's Cannon steps) would reduce the same tile once per step. Where a
processor adds into one tile in several launches of one iteration of that
loop (a *stage*: the launches that share the values of the steps at and
above it), the plan holds its partial instead (`HeldReduction`): every
launch point adds its contribution into its processor's partial (the
synthesized strategy's per-processor partials store), and after the last
launch of each stage (`HeldReduction.folds`) every processor's partial is
added into its tile of the output once, by a launch pinned to that processor
that reads and writes the tile (`held_folds` says which processor adds into
which box). A synthesized
reduction already holds its partials across every launch of the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from distal.errors import DistalError
from distal.lower.nest import MAX_LAUNCH_DIMS
from distal.lower.task_graph import Box, PlanBase, Privilege, Reduction
from distal.machine.ranks import running_ranks

__all__ = ["HOLD_MAX_PROCESSORS", "HOLD_MIN_BYTES", "STRATEGIES", "HeldReduction", "choose_reduction", "held_folds",
           "partials_reduction", "reduced_after"]

STRATEGIES = ("auto", "synthesized", "legate")


def _empty(box: Box) -> bool:
    return any(hi <= lo for lo, hi in box)


def _hull(boxes: frozenset[Box]) -> Box:
    """The smallest box holding every box of a non-empty set."""
    dims = zip(*boxes)
    return tuple((min(lo for lo, _ in d), max(hi for _, hi in d)) for d in dims)


@dataclass(frozen=True, slots=True)
class HeldReduction(Reduction):
    """A Legate reduction whose processors hold their partials across sequential steps (module docstring).

    `folds` are the plan-order indices of the launches (over `PlanBase.launches()`) that end a stage: after
    each, every processor that added into the output during the stage reduces its partial (`row`-shaped,
    stored flat, its contribution at offset 0) into its tile once; `across` names the steps held across.
    """

    folds: tuple[int, ...] = ()
    across: tuple[str, ...] = ()


#: On a flat machine ("auto"), a Legate reduction whose processors' partials are at least this many bytes holds
#: them (`HeldReduction`) even where no tile is reduced twice: Legate makes a fresh reduction instance per point
#: every run, which on this machine cost an erratic 1.5-40 ms a run for Johnson on Grid(2, 2, 2) (n = 256: 1.7 or
#: 6.1 ms; n = 384: 21 ms median, 1.8 the fastest), where the held partials took 1.0-3.2 ms from n = 32 (2 KiB
#: partials) to 512 and were never slower (session 11, medians of 11 interleaved runs in one Legate child under
#: `chrt -r 10` while the machine was loaded; without the priority the figures follow the load). Smaller
#: partials were not measured: the smallest plans keep Legate's one reduction.
HOLD_MIN_BYTES = 1 << 11
#: ... and the machine has at most this many processors: the folds are one pinned launch per processor (about
#: 0.12 ms each here), where Legate's reduction is one launch for all of them.
HOLD_MAX_PROCESSORS = 16


def choose_reduction(plan: PlanBase, how: str, communicated_at: int) -> Reduction | None:
    """How the plan's REDUCE_ADD launches into the output run; None when there are none.

    ``communicated_at``: how many launch variables (distributed loops, then steps) fix the output's tile,
    i.e. down to its `communicate` loop (`distal.lower._communicated_at`); a Legate reduction
    whose processors add into one tile over several launches of one iteration of that loop holds their
    partials across them (`HeldReduction`). On a flat machine of at most `HOLD_MAX_PROCESSORS` processors
    ("auto") run by one Legate rank (`distal.machine.ranks.running_ranks`), a Legate reduction whose partials
    are at least `HOLD_MIN_BYTES` is held too, each tile reduced once after its launch, instead of a reduction
    instance made afresh per point and run. With several ranks the fold, pinned to the reducing processor,
    would move a tile another rank holds there and back (twice the bytes between ranks that Legate's
    reduction moves, measured by H1 on two ranks), so the instances stay.
    """
    chosen = _choose(plan, how)
    if chosen is None or chosen.synthesized:
        return chosen
    machine = plan.machine
    flat = (how == "auto" and machine is not None and machine.levels == 1 and not machine.params
            and math.prod(machine.full_shape) <= HOLD_MAX_PROCESSORS and running_ranks() == 1)
    return _held(plan, chosen, communicated_at, HOLD_MIN_BYTES if flat else None) or chosen


def _choose(plan: PlanBase, how: str) -> Reduction | None:
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


# -- held partials ---------------------------------------------------------------------------------------------




def _held(plan: PlanBase, chosen: Reduction, at: int, min_bytes: int | None = None) -> HeldReduction | None:
    """``chosen`` (a Legate reduction) holding its partials across the steps under the output's communicate
    loop, where some processor adds into one tile in several launches of a stage (or, with `min_bytes`,
    where the partials are at least `min_bytes`); None where nothing is reduced twice (and the partials are
    smaller), or the partials have no regular shape (a processor adding into several tiles in one
    stage, two points of one launch on one processor, a launch overwriting the output). A launch whose
    points add into distinct tiles (READ_WRITE: the last step where only some processors have work) adds
    into the partials too."""
    machine = plan.machine
    if machine is None or machine.params or len(machine.full_shape) + 1 > MAX_LAUNCH_DIMS:
        return None
    n = chosen.tensor
    out = plan.tensors[n]
    stages: list[list[int]] = []
    keys: list[tuple[int, tuple[int, ...]]] = []
    row: tuple[int, ...] = ()
    repeated = False
    seen_in_stage: dict[int, Box] = {}
    for index, (group, launch) in enumerate(plan.launches()):
        op = launch.operands[n]
        if op.privilege not in (Privilege.REDUCE_ADD, Privilege.READ_WRITE):
            return None  # (a launch adding into the output directly, one point per tile, adds into its partial)
        g = plan.groups.index(group)
        key = (g, tuple(launch.lower[group.distributed:max(at, group.distributed)]))
        if not keys or keys[-1] != key:
            keys.append(key)
            stages.append([])
            seen_in_stage = {}
        stages[-1].append(index)
        tile = op.tile if op.tile is not None else out.shape
        row = tuple(max(a, b) for a, b in zip(row, tile)) if row else tuple(tile)
        here: set[int] = set()
        for point in launch.points():
            device = plan.device_of(group, point)
            if device in here:
                return None
            here.add(device)
            box = op.box(point, out.shape)
            if _empty(box) and out.shape:
                continue
            if device in seen_in_stage:
                if seen_in_stage[device] != box:
                    return None
                repeated = True
            seen_in_stage[device] = box
    nbytes = out.itemsize * math.prod(row or (1,))
    big = min_bytes is not None and nbytes >= min_bytes
    if not repeated and not big:
        return None
    steps = [str(v) for group in plan.groups for v in group.vars[max(at, group.distributed):]]
    across = tuple(dict.fromkeys(steps)) if repeated else ()
    values = {f.name: getattr(chosen, f.name) for f in fields(Reduction)}
    why = chosen.reason.removesuffix(": one Legate reduction") if " writes " not in chosen.reason else ""
    how = (f"each processor holds its partial across step(s) {', '.join(across)} and adds it into its tile once, "
           "after the last step") if repeated else (
        f"each processor adds into its own partial ({nbytes} B, kept with the plan) and adds it into its tile "
        "once, not into a reduction instance made afresh per point and run")
    values.update(row=row or (1,), whole=False, nbytes=float(nbytes), reason=f"{why + ': ' if why else ''}{how}")
    return HeldReduction(**values, folds=tuple(stage[-1] for stage in stages), across=across)


def held_folds(plan: PlanBase, red: HeldReduction) -> tuple[tuple[int, tuple[tuple[int, Box], ...]], ...]:
    """Per stage of a held reduction: the plan-order index of its last launch, and every (device, output box)
    whose partial is reduced after it (each processor that added into the output in the stage, once)."""
    out = plan.tensors[red.tensor]
    found: list[tuple[int, tuple[tuple[int, Box], ...]]] = []
    current: dict[int, Box] = {}
    folds = set(red.folds)
    for index, (group, launch) in enumerate(plan.launches()):
        op = launch.operands[red.tensor]
        for point in launch.points():
            box = op.box(point, out.shape)
            if not (_empty(box) and out.shape):
                current[plan.device_of(group, point)] = box
        if index in folds:
            found.append((index, tuple(sorted(current.items()))))
            current = {}
    return tuple(found)


def reduced_after(plan: PlanBase) -> dict[int, int] | None:
    """For a plan whose processors hold partials of the output across launches, the plan-order index of the
    launch after which the partial added in each launch is reduced into the output (a held reduction: its
    stage's last launch; a synthesized one: the plan's last launch); None where every launch reduces as it
    ends (Legate's reduction, nothing held)."""
    red = plan.reduction
    count = plan.launch_count()
    if red is None or count == 0:
        return None
    if isinstance(red, HeldReduction):
        out: dict[int, int] = {}
        start = 0
        for end in red.folds:
            out.update(dict.fromkeys(range(start, end + 1), end))
            start = end + 1
        return out
    if red.synthesized:
        return dict.fromkeys(range(count), count - 1)
    return None


def partials_reduction(plan: PlanBase) -> Reduction | None:
    """The plan's reduction when its launches add into per-processor partials instead of the output (a
    synthesized or a held one: the output's operand is then `distal.lower.grouping.partials_operand`)."""
    red = plan.reduction
    if red is not None and (red.synthesized or isinstance(red, HeldReduction)):
        return red
    return None
