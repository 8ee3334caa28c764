"""Explaining a plan: launches, tiles, projections, and the paper's execution-space costs.

Cost model (paper section 3.3). Each launch point runs on the abstract
processor of its distributed coordinates; a launch is one time step.

Placement comes first, as its own step: a tensor with a format over the
plan's machine is held tile by tile where the format puts it (paper 5.3:
`Format.tiles` and `Format.owners`; broadcast dimensions on every processor
along them, fixed dimensions on their face). A tensor without a format (or
with a format over another machine) lives in one global store that no
processor of the plan holds: everything a processor reads of it is received.

Before a launch, a processor receives every element its points read that it
does not hold: not placed on it by the format, not fetched or used by it in
the previous launch (a tile that `communicate(T, v)` fetches at an outer loop
keeps the same box across the inner steps and is fetched once), not written
by itself, and not received by another of its points in this launch. Values
written by another processor earlier in the plan are received from it. The
output of an `=` statement starts at zero where it is used (nothing to
receive); with `+=` its values are read like an input's. A tile reduced into
(REDUCE_ADD) starts at zero and the part of it its processor does not own is
sent to the owners after the launch (`reduced`; without a format, all of it
goes to the global store). Elements of a formatted output written away from
their owners are sent to them once the plan ends (`returned`).

Memory per processor is what its formats place on it, plus at each launch
the data it holds for that launch beyond that (received or cached tiles, its
output tiles, reduction buffers); the peak is the largest over launches.
Each launch also reports what its points receive (per point and in all) and
write; a launch whose points receive more than `WARN_RATIO` times what they
write (and at least `WARN_MIN_BYTES`) gets a warning: the performance cliff
of a distribution where every point fetches a whole operand.

Each received, reduced or returned piece also has a sender and a receiver
(`distal.lower.traffic`): the holder of a placed tile nearest to the reader,
the writer of values written earlier, or the tensor's global store; they are
`stats()["traffic"]`, split inside a node or between nodes by the levels of
the plan's own machine, and explain() prints them per launch. The plan's
performance lints (`distal.lower.lints`, found at compile) come first among
the warnings.

A distributed reduction into the output (`Plan.reduction`) is reported with
its strategy: Legate's one reduction (and why), or the synthesized program
of collectives with its lowered steps, its predicted time and the predicted
time of a single AllReduce (`distal.reduction.describe_plan`).
"""

from __future__ import annotations

import math
from typing import Any

from distal._text import bytes_text as _bytes
from distal._text import seconds_text
from distal.lower.analysis import PlanAnalysis, proc_text, volume
from distal.lower.in_place import placement_layout
from distal.lower.plan import Group, Launch, Operand, Plan, Privilege
from distal.lower.traffic import Split

__all__ = ["describe", "explain", "stats"]


def stats(plan: Plan) -> dict[str, Any]:
    """`plan.stats()`: the documented dict of `plan.analysis()` (`distal.lower.analysis`)."""
    return plan.stats()



_GATHERED_WHY = ("its tiles are not whole blocks or boxes of blocks of its format at positions linear in the "
                 "launch point")


def _runtime_text(plan: Plan, n: int, data: PlanAnalysis) -> str:
    """How the runtime uses formatted tensor n on Legate: in place, gathered, or per-processor partials
    ("" for a tensor it keeps as one store)."""
    info = plan.tensors[n]
    red = plan.reduction
    if red is not None and red.synthesized and n == red.tensor and placement_layout(info) is not None:
        return ("the launches write per-processor partials; the reduced result is one store, laid out by its "
                "format after")
    if info.name in data.gathered:
        if info.output and plan.zero_output:
            return (f"gathered into one store: a new one the launches write ({_GATHERED_WHY}); it is laid out by "
                    "its format after the launches")
        return (f"gathered into one store before the launches ({_GATHERED_WHY}); the plan reads that store"
                + (", and it is laid out again by its format after" if info.output else ""))
    if info.name in data.in_place:
        return f"{'written' if info.output else 'read'} in place in its device blocks"
    return ""


def _placement_lines(plan: Plan, data: PlanAnalysis) -> list[str]:
    """One line per tensor: where its format places it (or why no processor of the plan holds it),
    then how the runtime uses it (`_runtime_text`); `distal explain` prints the same lines."""
    lines = ["  placement (before the launches, by each tensor's format):"]
    per_tensor = data.placement.per_tensor
    for n, info in enumerate(plan.tensors):
        fmt = getattr(info.tensor, "format", None)
        if info.name in per_tensor:
            held = ", ".join(f"{proc_text(p)} {_bytes(b)}" for p, b in per_tensor[info.name].items() if b) or "nothing"
            where = f"held as {fmt}: {held}"
        else:
            size = _bytes(data.global_store_bytes.get(info.name, info.size * info.itemsize))
            if fmt is None:
                where = f"no format: one global store of {size}, held by no processor of the plan"
            else:
                on = repr(plan.machine) if plan.machine is not None else "none: one point"
                where = (f"its format {fmt} places it on {fmt.machine!r}, not on the plan's machine ({on}): no "
                         f"processor of the plan holds it, so what a launch reads of it is counted as received "
                         f"(as from one global store of {size})")
        runtime = _runtime_text(plan, n, data)
        lines.append(f"    {info.name}: " + (f"{runtime}; {where}" if runtime else where))
    return lines


_ZERO = ("at zero (a new store: where the first launch writes every output tile, each of its tasks zero-fills its "
         "own tile, or writes it with its first step when that step covers the whole tile ('writes the whole output "
         "tile' below); otherwise one zero fill before the launches)")


def _fresh(plan: Plan, group: Group) -> bool:
    """Whether `group` runs the first launch of an `=` plan and that launch gets the new output unwritten, as
    the runtime decides (`runtime._execute._first_launch_writes`): one launch over the whole domain (not
    pinned) whose points write (do not reduce into) distinct output tiles that cover the output."""
    first = next((g for g in plan.groups if g.launches), None)
    if not plan.zero_output or first is not group:
        return False
    launch = group.launches[0]
    if launch.pinned or not (group.covers_domain(launch) or plan.machine is None) or launch.volume == 0:
        return False
    n = plan.tensors.index(plan.output)
    ops = [op for op in launch.operands if op.tensor == n]
    if len(ops) != 1 or ops[0].privilege not in (Privilege.WRITE, Privilege.READ_WRITE) or launch.volume > 1 << 16:
        return False
    shape = plan.output.shape
    boxes = {ops[0].box(p, shape) for p in launch.points()}
    return len(boxes) == launch.volume and sum(volume(b) for b in boxes) == math.prod(shape)


def describe(plan: Plan) -> str:
    """The plan as text: tensors, then each launch with its operands."""
    lines = [f"plan for {plan.statement.splitlines()[0]}"]
    if plan.machine is not None:
        lines.append(f"  machine {plan.machine!r}")
    for info in plan.tensors:
        fmt = getattr(info.tensor, "format", None)
        lines.append(f"  tensor {info.name}{list(info.shape)} {info.dtype}"
                     f"{' output' if info.output else ''}{f' format {fmt}' if fmt is not None else ''}")
    lines.append(f"  output starts {_ZERO if plan.zero_output else 'with its values (+=)'}")
    if plan.symbolic:
        lines.append("  extents: " + ", ".join(f"{v} = {e} = {n}" for v, e, n in plan.symbolic))
    for g in plan.groups:
        dist = ", ".join(map(str, g.vars[: g.distributed])) or "-"
        steps = ", ".join(map(str, g.steps)) or "-"
        lines.append(f"  kernel {g.kernel.name}: launch over ({dist}), sequential steps ({steps}), "
                     f"{len(g.launches)} launch(es)")
        if g.distributed and plan.machine is not None:
            lines.append(f"    on the machine: {_machine_dims_text(plan, g)}")
        lines.append(f"    leaf: {_leaf_text(plan, g)}")
        for n, launch in enumerate(g.launches):
            lines.append(f"    launch {n}: {_domain_text(g, launch)}")
            for op in launch.operands:
                lines.append("      " + _operand_text(plan, op))
        lines.extend(f"  note: {x}" for x in g.notes)
    if plan.reduction is not None:
        lines.append(f"  reduction into {plan.tensors[plan.reduction.tensor].name}: {plan.reduction.summary()}")
    lines.extend(f"  note: {x}" for x in plan.notes)
    return "\n".join(lines)


def _leaf_text(plan: Plan, g: Group) -> str:
    """What the group's tasks run, as its task body words it for the tiles of its first launch point (the
    calls `TaskBody.ran` counts when it runs)."""
    first = next(iter(g.launches), None)
    if first is None:
        return g.kernel.describe(fresh=_fresh(plan, g))
    point = next(first.points())
    tiles = [tuple(hi - lo for lo, hi in op.box(point, plan.tensors[op.tensor].shape)) for op in first.operands]
    return g.kernel.describe(fresh=_fresh(plan, g), point=point, tiles=tiles)


def _machine_dims_text(plan: Plan, g: Group) -> str:
    """Which machine dimension, and on a hierarchical machine which level, each distributed loop runs along."""
    machine = plan.machine
    assert machine is not None
    where: list[tuple[int, str]] = [(lv, name) for lv, grid in enumerate(machine.grids) for name in grid.names]
    parts = []
    for d, v in enumerate(g.vars[: g.distributed]):
        slot = plan.processor_slots[d] if d < len(plan.processor_slots) else -1
        if not 0 <= slot < len(where):
            parts.append(f"{v} on no machine dimension")
            continue
        level, name = where[slot]
        if machine.levels == 1:
            parts.append(f"{v} along {name}")
        else:
            scope = ("between nodes" if level == 0 else "inside each node" if level == machine.levels - 1
                     else f"inside each level-{level - 1} group")
            parts.append(f"{v} along {name} of level {level} ({scope})")
    return ", ".join(parts)


def _domain_text(g: Group, launch: Launch) -> str:
    if not g.vars:
        return "one point"
    parts = []
    for n, v in enumerate(g.vars):
        lo, hi = launch.lower[n], launch.upper[n]
        parts.append(f"{v}={lo}" if n >= g.distributed or hi - lo == 1 else f"{v} in [{lo},{hi})")
    return ", ".join(parts) + (" (pinned)" if launch.pinned else "")


def _operand_text(plan: Plan, op: Operand) -> str:
    info = plan.tensors[op.tensor]
    if op.tile is None:
        return f"{info.name}: {op.privilege.value}, whole tensor {list(info.shape)}"
    proj = ", ".join(map(str, op.projection or ()))
    # a dimension every task gets whole (tile = extent: the tiling chose no block size) is marked *
    tile = ", ".join("*" if t == n and n > 0 else str(t) for t, n in zip(op.tile, info.shape))
    return f"{info.name}: {op.privilege.value}, tile [{tile}] of {list(op.colors or ())} at ({proj})"


def explain(plan: Plan, model: Any = None) -> str:
    """`describe()` plus placement, then per launch who sends what to whom; totals, peak memory, lints and
    warnings; the predicted time on `model` (`distal.model`; default: this machine, calibrated once).

    The text is assembled here from one function per section, in order.
    """
    data = plan.analysis()
    from distal.lower.memory import memory_line
    from distal.model.predict import explain_lines, explained

    found = explained(plan, model, data)
    lines = [
        *summary_lines(plan, data, found),
        describe(plan),
        *_placement_lines(plan, data),
        *_communication_lines(plan, data),
        *_total_lines(data),
        memory_line(plan, data),
        *(f"  warning: {w}" for w in data.warnings),
        *_reduction_lines(plan),
    ]
    lines.extend(explain_lines(plan, model, data, found))
    return "\n".join(lines)


def summary_lines(plan: Plan, data: PlanAnalysis, found: tuple[Any, str, str]) -> list[str]:
    """explain()'s first three lines: the processors used of those available (and why any are idle), the
    calls the leaves run, the predicted time against memory."""
    got, name, why = found
    kind = plan.machine.kind if plan.machine is not None else "cpu"
    real = data.real_processors
    if plan.eager:
        where = f"runs eagerly in this process with NumPy, no Legate tasks ({plan.eager})"
    else:
        used = got.processors_used if got is not None else len({plan.device_of(g, p) for g, launch in
                                                                  plan.launches() for p in launch.points()})
        where = f"runs on {used} of {real} {kind} processor(s)"
        if used < real:
            where += f"; {real - used} idle: {_idle_reason(plan, used)}"
    calls = " | ".join(_leaf_text(plan, g) for g in plan.groups if g.launches) or "nothing to compute"
    if got is None:
        time = f"predicted time: none ({why})"
    else:
        fit = "fits" if got.fits else "DOES NOT FIT"
        time = (f"predicted {seconds_text(got.seconds)} ({name} model); peak memory {_bytes(got.peak_bytes)} of "
                f"{_bytes(got.memory_bytes)} per processor ({fit})")
        if plan.eager:
            time = "as Legate tasks it would be " + time
    return [f"summary: {where}", f"  calls: {calls}", f"  {time}"]


def _idle_reason(plan: Plan, used: int) -> str:
    chose = next((n for n in plan.notes if n.startswith("auto: chose")), None)
    if chose is not None:
        return "auto predicted the work too small to pay for spreading it (its candidates are listed below)"
    if plan.machine is None:
        return "the schedule distributes no loop (Schedule.auto, or distribute, spreads the work)"
    if plan.machine.size < used + 1:
        return f"the plan's machine {plan.machine!r} has fewer points than there are processors"
    return "some launch points have no work (see the warnings below)"




# per launch, at most this many rows of its transfers; launches past TABLE_LAUNCHES show their totals only
TABLE_ROWS = 6
TABLE_LAUNCHES = 16


def _communication_lines(plan: Plan, data: PlanAnalysis) -> list[str]:
    traffic = data.traffic
    lines = ["  communication (execution-space model; sender -> receiver, inside a node or between nodes by the "
             "machine's levels):"]
    for n, item in enumerate(data.launches):
        recv = ", ".join(f"{proc_text(p)} {_bytes(b)}" for p, b in item.received.items() if b) or "nothing"
        step = ", ".join(f"{k}={v}" for k, v in item.step.items())
        lines.append(f"    launch {n}{f' ({step})' if step else ''}: receives {recv}")
        lines.append(f"      {item.legate_tasks} Legate task(s) on {data.real_processors} real processor(s): "
                     f"{item.legate_tasks_why}")
        if item.received_total:
            lines.append(f"      {item.points} point(s): {_bytes(item.point_received_mean)} per point on average "
                         f"(max {_bytes(item.point_received_max)}), {_bytes(item.received_total)} in all; "
                         f"they write {_bytes(item.written_bytes)}")
        moved = traffic.of_launch(n)
        if moved:
            lines.append(f"      moves {Split.of(moved)}"
                         + (":" if n < TABLE_LAUNCHES else " (stats()['traffic'] lists every transfer)"))
            if n < TABLE_LAUNCHES:
                lines.extend("        " + row for row in traffic.table(n, TABLE_ROWS))
    after = traffic.of_launch(None)
    if after:
        lines.append(f"    once the plan ends: returns to the owners {Split.of(after)}:")
        lines.extend("        " + row for row in traffic.table(None, TABLE_ROWS))
    return lines


def _total_lines(data: PlanAnalysis) -> list[str]:
    split = data.traffic.split("read")
    lines = [f"  total received {_bytes(data.total_received_bytes)}{f' ({split})' if split.total else ''}, "
             f"reduced {_bytes(data.total_reduced_bytes)}"
             + (f", returned to owners {_bytes(data.total_returned_bytes)}" if data.total_returned_bytes else "")]
    for p, b in data.peak.items():
        lines.append(f"    processor {proc_text(p)}: placed {_bytes(data.placement.per_processor.get(p, 0))}, "
                     f"received {_bytes(data.received.get(p, 0))}, "
                     f"reduced {_bytes(data.reduced.get(p, 0))}, peak memory {_bytes(b)}")
    return lines


def _reduction_lines(plan: Plan) -> list[str]:
    red = plan.reduction
    if red is None:
        return []
    name = plan.tensors[red.tensor].name
    if red.synthesized:
        head = f"synthesized program of collectives over per-processor partials ({red.reason})"
    else:
        head = red.reason
    lines = [f"  distributed reduction into {name}: {head}"]
    if red.groups:
        what = "the whole output" if red.whole else "its output tile"
        lines.append(f"    partial per processor: {list(red.row)} ({what}); processors (device ids) "
                     f"reduced together: {[list(g) for g in red.groups]}")
    if red.description:
        label = "chosen program" if red.synthesized else "the program it would run"
        lines.append(f"    {label}:")
        lines.extend("      " + x for x in red.description.splitlines())
    return lines
