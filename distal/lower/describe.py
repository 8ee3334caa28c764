"""The plan as text: its tensors, then each launch group with its leaf, launches and operands (`str(plan)`).

`describe(plan)` is what `print(plan)` shows and what `plan.explain()`
(`distal.model.explain`) prints after its summary; `leaf_text` words what a
group's tasks run, as its task body does when it runs.
"""

from __future__ import annotations

import math

from distal.contract import on_user_threads
from distal.lower.analysis import volume
from distal.lower.task_graph import Group, Launch, Operand, PlanBase, Privilege

__all__ = ["describe", "leaf_text"]


_ZERO = ("at zero (a new store: where the first launch writes every output tile, each of its tasks zero-fills its "
         "own tile, or writes it with its first step when that step covers the whole tile ('writes the whole output "
         "tile' below); otherwise one zero fill before the launches)")


def _fresh(plan: PlanBase, group: Group) -> bool:
    """Whether `group` runs the first launch of an `=` plan and that launch gets the new output unwritten, as
    the runtime decides (`runtime._fresh_output.first_launch_writes`): one launch over the whole domain (not
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


def describe(plan: PlanBase) -> str:
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
        lines.append(f"  kernel {g.body.name}: launch over ({dist}), sequential steps ({steps}), "
                     f"{len(g.launches)} launch(es)")
        if g.distributed and plan.machine is not None:
            lines.append(f"    on the machine: {_machine_dims_text(plan, g)}")
        lines.append(f"    leaf: {leaf_text(plan, g)}")
        for n, launch in enumerate(g.launches):
            lines.append(f"    launch {n}: {_domain_text(g, launch)}")
            for op in launch.operands:
                lines.append("      " + _operand_text(plan, op))
        lines.extend(f"  note: {x}" for x in g.notes)
    if plan.reduction is not None:
        lines.append(f"  reduction into {plan.tensors[plan.reduction.tensor].name}: {plan.reduction.summary()}")
    lines.extend(f"  note: {x}" for x in plan.notes)
    return "\n".join(lines)


def leaf_text(plan: PlanBase, g: Group) -> str:
    """What the group's tasks run, as its task body words it for the tiles of its first launch point (the
    calls `TaskBody.ran` counts when it runs)."""
    first = next(iter(g.launches), None)
    with on_user_threads(bool(plan.eager)):  # an eager plan's calls run on the caller's BLAS threads
        if first is None:
            return g.body.describe(fresh=_fresh(plan, g))
        point = next(first.points())
        tiles = [tuple(hi - lo for lo, hi in op.box(point, plan.tensors[op.tensor].shape)) for op in first.operands]
        return g.body.describe(fresh=_fresh(plan, g), point=point, tiles=tiles)


def _machine_dims_text(plan: PlanBase, g: Group) -> str:
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


def _operand_text(plan: PlanBase, op: Operand) -> str:
    info = plan.tensors[op.tensor]
    if op.tile is None:
        return f"{info.name}: {op.privilege.value}, whole tensor {list(info.shape)}"
    proj = ", ".join(map(str, op.projection or ()))
    # a dimension every task gets whole (tile = extent: the tiling chose no block size) is marked *
    tile = ", ".join("*" if t == n and n > 0 else str(t) for t, n in zip(op.tile, info.shape))
    return f"{info.name}: {op.privilege.value}, tile [{tile}] of {list(op.colors or ())} at ({proj})"
