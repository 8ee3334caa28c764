"""Explaining a plan: launches, tiles, projections, and the paper's execution-space costs.

Cost model (paper section 3.3). Each launch point runs on the abstract
processor of its distributed coordinates; a launch is one time step. Before
a step, a processor receives every element of its tiles that its own memory
does not hold under the tensor's format (F(P(coord)), `Format.owners`); a
tensor without a format lives on processor 0. A tile reduced into
(REDUCE_ADD) is sent back to the owners of its elements after the step
(counted as `reduced` bytes). Memory per processor is its share of every
tensor under its format, plus at each step the tiles it received and its
reduction buffers; the peak is the largest over steps.

A distributed reduction into the output (`Plan.reduction`) is reported with
its strategy: Legate's one reduction (and why), or the synthesized program
of collectives with its lowered steps, its predicted time and the predicted
time of a single AllReduce (`distal.reduction.describe_plan`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from distal.lower.plan import Box, Group, Launch, Operand, Plan, Privilege, Reduction, TensorInfo

__all__ = ["describe", "explain", "stats"]


def _volume(box: Box) -> int:
    return math.prod(max(hi - lo, 0) for lo, hi in box)


def _meet(a: Box, b: Box) -> int:
    return math.prod(max(min(ah, bh) - max(al, bl), 0) for (al, ah), (bl, bh) in zip(a, b))


class _Owners:
    """Which boxes of each tensor each abstract processor holds under its format."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.held: list[dict[tuple[int, ...], list[Box]]] = []
        for info in plan.tensors:
            self.held.append(self._held(info))

    def _held(self, info: TensorInfo) -> dict[tuple[int, ...], list[Box]]:
        fmt = getattr(info.tensor, "format", None)
        machine = self.plan.machine
        whole: Box = tuple((0, n) for n in info.shape)
        origin = (0,) * (len(machine.full_shape) if machine is not None else 1)
        if fmt is None or machine is None or getattr(fmt, "machine", None) != machine:
            return {origin: [whole]}
        held: dict[tuple[int, ...], list[Box]] = {}
        try:
            for color, bounds in fmt.tiles(info.shape):
                for p in fmt.owners(color):
                    held.setdefault(tuple(p), []).append(tuple(bounds))
        except Exception:  # a format this plan cannot read: count everything as remote
            return {origin: [whole]}
        return held

    def local(self, n: int, proc: tuple[int, ...], box: Box) -> int:
        return sum(_meet(box, b) for b in self.held[n].get(proc, []))

    def share(self, n: int, proc: tuple[int, ...]) -> int:
        return sum(_volume(b) for b in self.held[n].get(proc, []))


def _proc_text(p: Sequence[int]) -> str:
    return "(" + ",".join(str(x) for x in p) + ")"


def stats(plan: Plan) -> dict[str, Any]:
    """The numbers of `explain()` as data.

    Keys: `launches` (one dict per launch: step, domain, points, pinned,
    operands with tile shapes, projections and privileges, `received` bytes
    per processor), `received_bytes` and `reduced_bytes` per processor and in
    total, `peak_bytes` per processor, `launch_count`, `notes`, and
    `reduction` (None without a distributed reduction into the output; else
    its strategy, reason, groups of device ids, program, steps, predicted
    seconds and single-AllReduce seconds).
    """
    owners = _Owners(plan)
    received: dict[str, int] = {}
    reduced: dict[str, int] = {}
    peak: dict[str, int] = {}
    base: dict[str, int] = {}
    procs: list[tuple[int, ...]] = []
    if plan.machine is not None:
        procs = [tuple(c) for c in plan.machine.coords()]
    else:
        procs = [(0,)]
    for p in procs:
        key = _proc_text(p)
        base[key] = sum(owners.share(n, p) * info.itemsize for n, info in enumerate(plan.tensors))
        received[key] = reduced[key] = 0
        peak[key] = base[key]
    out_launches = []
    for group, launch in plan.launches():
        step_recv: dict[str, int] = {}
        step_mem: dict[str, int] = {}
        for point in launch.points():
            proc = plan.processor_of(group, point)
            key = _proc_text(proc)
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                size = _volume(box)
                remote = size - owners.local(op.tensor, proc, box)
                if op.privilege is Privilege.REDUCE_ADD:
                    reduced[key] = reduced.get(key, 0) + remote * info.itemsize
                    step_mem[key] = step_mem.get(key, 0) + size * info.itemsize
                else:
                    step_recv[key] = step_recv.get(key, 0) + remote * info.itemsize
                    step_mem[key] = step_mem.get(key, 0) + remote * info.itemsize
        for key, b in step_recv.items():
            received[key] = received.get(key, 0) + b
        for key, b in step_mem.items():
            peak[key] = max(peak.get(key, 0), base.get(key, 0) + b)
        out_launches.append(_launch_data(plan, group, launch, step_recv))
    return {
        "statement": plan.statement,
        "machine": repr(plan.machine) if plan.machine is not None else None,
        "launch_count": plan.launch_count(),
        "launches": out_launches,
        "received_bytes": received,
        "reduced_bytes": reduced,
        "total_received_bytes": sum(received.values()),
        "total_reduced_bytes": sum(reduced.values()),
        "peak_bytes": peak,
        "notes": [*plan.notes, *(n for g in plan.groups for n in g.notes)],
        "reduction": _reduction_data(plan, plan.reduction),
    }


def _reduction_data(plan: Plan, red: Reduction | None) -> dict[str, Any] | None:
    if red is None:
        return None
    return {
        "tensor": plan.tensors[red.tensor].name,
        "strategy": red.strategy,
        "reason": red.reason,
        "groups": [list(g) for g in red.groups],
        "partial_shape": list(red.row),
        "partial_is_whole_output": red.whole,
        "partial_bytes": red.nbytes,
        "program": red.program or None,
        "program_shape": red.shape or None,
        "steps": list(red.steps),
        "predicted_seconds": red.seconds if red.program else None,
        "allreduce_seconds": red.allreduce_seconds if red.program else None,
    }


def _operand_data(plan: Plan, op: Operand, launch: Launch) -> dict[str, Any]:
    info = plan.tensors[op.tensor]
    first = next(launch.points())
    return {
        "tensor": info.name,
        "privilege": op.privilege.value,
        "tile": list(op.tile) if op.tile is not None else list(info.shape),
        "whole": op.tile is None,
        "projection": [str(p) for p in op.projection] if op.projection is not None else None,
        "first_box": [list(b) for b in op.box(first, info.shape)],
    }


def _launch_data(plan: Plan, group: Group, launch: Launch, recv: dict[str, int]) -> dict[str, Any]:
    nd = group.distributed
    steps = {str(v): launch.lower[nd + n] for n, v in enumerate(group.steps)} if group.vars else {}
    domain = [[lo, hi] for lo, hi in zip(launch.lower[:nd], launch.upper[:nd])]
    return {
        "step": steps,
        "domain": domain,
        "points": launch.volume,
        "pinned": launch.pinned,
        "operands": [_operand_data(plan, op, launch) for op in launch.operands],
        "received_bytes": dict(recv),
    }


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def describe(plan: Plan) -> str:
    """The plan as text: tensors, then each launch with its operands."""
    lines = [f"plan for {plan.statement.splitlines()[0]}"]
    if plan.machine is not None:
        lines.append(f"  machine {plan.machine!r}")
    for info in plan.tensors:
        fmt = getattr(info.tensor, "format", None)
        lines.append(f"  tensor {info.name}{list(info.shape)} {info.dtype}"
                     f"{' output' if info.output else ''}{f' format {fmt}' if fmt is not None else ''}")
    lines.append(f"  output starts {'at zero' if plan.zero_output else 'with its values (+=)'}")
    if plan.symbolic:
        lines.append("  extents: " + ", ".join(f"{v} = {e} = {n}" for v, e, n in plan.symbolic))
    for g in plan.groups:
        dist = ", ".join(map(str, g.vars[: g.distributed])) or "-"
        steps = ", ".join(map(str, g.steps)) or "-"
        lines.append(f"  kernel {g.kernel.name}: launch over ({dist}), sequential steps ({steps}), "
                     f"{len(g.launches)} launch(es)")
        lines.append(f"    leaf: {g.kernel.describe()}")
        for n, launch in enumerate(g.launches):
            lines.append(f"    launch {n}: {_domain_text(g, launch)}")
            for op in launch.operands:
                lines.append("      " + _operand_text(plan, op))
        lines.extend(f"  note: {x}" for x in g.notes)
    if plan.reduction is not None:
        lines.append(f"  reduction into {plan.tensors[plan.reduction.tensor].name}: {plan.reduction.summary()}")
    lines.extend(f"  note: {x}" for x in plan.notes)
    return "\n".join(lines)


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
    return f"{info.name}: {op.privilege.value}, tile {list(op.tile)} of {list(op.colors or ())} at ({proj})"


def explain(plan: Plan) -> str:
    """`describe()` plus, per launch and processor, bytes received; totals and peak memory."""
    data = stats(plan)
    lines = [describe(plan), "  communication (execution-space model):"]
    for n, item in enumerate(data["launches"]):
        recv = ", ".join(f"{p} {_bytes(b)}" for p, b in item["received_bytes"].items() if b) or "nothing"
        step = ", ".join(f"{k}={v}" for k, v in item["step"].items())
        lines.append(f"    launch {n}{f' ({step})' if step else ''}: receives {recv}")
    lines.append(f"  total received {_bytes(data['total_received_bytes'])}, "
                 f"reduced {_bytes(data['total_reduced_bytes'])}")
    for p, b in data["peak_bytes"].items():
        lines.append(f"    processor {p}: received {_bytes(data['received_bytes'].get(p, 0))}, "
                     f"reduced {_bytes(data['reduced_bytes'].get(p, 0))}, peak memory {_bytes(b)}")
    red = plan.reduction
    if red is not None:
        name = plan.tensors[red.tensor].name
        if red.synthesized:
            head = f"synthesized program of collectives over per-processor partials ({red.reason})"
        else:
            head = red.reason
        lines.append(f"  distributed reduction into {name}: {head}")
        if red.groups:
            what = "the whole output" if red.whole else "its output tile"
            lines.append(f"    partial per processor: {list(red.row)} ({what}); processors (device ids) "
                         f"reduced together: {[list(g) for g in red.groups]}")
        if red.description:
            label = "chosen program" if red.synthesized else "the program it would run"
            lines.append(f"    {label}:")
            lines.extend("      " + x for x in red.description.splitlines())
    return "\n".join(lines)
