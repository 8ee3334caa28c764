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
from collections.abc import Sequence
from typing import Any

from distal._text import bytes_text as _bytes
from distal._text import seconds_text
from distal.errors import DistalError
from distal.lower.grouping import configured_processors, plan_tasks
from distal.lower.in_place import gathered_tensors, placement_layout
from distal.lower.plan import Box, Group, Launch, Operand, Plan, Privilege, Reduction, TensorInfo
from distal.lower.traffic import Recorder, Split, Traffic, crossing_level

__all__ = ["describe", "explain", "stats"]


def _volume(box: Box) -> int:
    return math.prod(max(hi - lo, 0) for lo, hi in box)


def _meet(a: Box, b: Box) -> int:
    return math.prod(max(min(ah, bh) - max(al, bl), 0) for (al, ah), (bl, bh) in zip(a, b))


def _empty(box: Box) -> bool:
    return any(hi <= lo for lo, hi in box)


def _cut(box: Box, hole: Box) -> list[Box]:
    """The parts of `box` outside `hole`, as disjoint boxes."""
    if _empty(box) or _meet(box, hole) == 0:
        return [] if _empty(box) else [box]
    out: list[Box] = []
    rest = list(box)
    for d, ((lo, hi), (hl, hh)) in enumerate(zip(box, hole)):
        if lo < hl:
            out.append((*rest[:d], (lo, hl), *rest[d + 1:]))
        if hh < hi:
            out.append((*rest[:d], (hh, hi), *rest[d + 1:]))
        rest[d] = (max(lo, hl), min(hi, hh))
    return out


def _minus(boxes: Sequence[Box], holes: Sequence[Box]) -> list[Box]:
    """`boxes` (disjoint) less every hole, as disjoint boxes."""
    out = [b for b in boxes if not _empty(b)]
    for hole in holes:
        if not out:
            break
        if _empty(hole):
            continue
        out = [piece for b in out for piece in _cut(b, hole)]
    return out


def _total(boxes: Sequence[Box]) -> int:
    return sum(_volume(b) for b in boxes)


class _Owners:
    """Which boxes of each tensor each abstract processor holds under its format (placement, paper 5.3).

    A tensor with a format over the plan's machine is held tile by tile by
    `Format.owners` of each tile's color (broadcast dimensions: every
    processor along them; fixed dimensions: the face). A tensor without a
    format, or with a format over another machine, lives in one global store
    that no processor of the plan holds (`placed` is None for it).
    """

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.held: list[dict[tuple[int, ...], list[Box]] | None] = [self._held(info) for info in plan.tensors]
        # per tensor: each placed tile with the processors holding it (several along broadcast dimensions)
        self.tiles: list[list[tuple[Box, tuple[tuple[int, ...], ...]]] | None] = [
            None if held is None else _tiles_of(held) for held in self.held]
        machine = plan.machine
        self.level_dims = tuple(g.ndim for g in machine.grids) if machine is not None else (1,)

    def _held(self, info: TensorInfo) -> dict[tuple[int, ...], list[Box]] | None:
        fmt = getattr(info.tensor, "format", None)
        machine = self.plan.machine
        if fmt is None or machine is None or getattr(fmt, "machine", None) != machine:
            return None
        held: dict[tuple[int, ...], list[Box]] = {}
        try:
            for color, bounds in fmt.tiles(info.shape):
                if _empty(tuple(bounds)):
                    continue
                for p in fmt.owners(color):
                    held.setdefault(tuple(p), []).append(tuple(bounds))
        except DistalError:  # a format this plan cannot place (e.g. sizes still symbolic): one global store
            return None
        return held

    def boxes(self, n: int, proc: tuple[int, ...]) -> list[Box]:
        held = self.held[n]
        return [] if held is None else held.get(proc, [])

    def share(self, n: int, proc: tuple[int, ...]) -> int:
        return _total(self.boxes(n, proc))

    def senders(self, n: int, boxes: Sequence[Box], proc: tuple[int, ...]) -> list[tuple[Box, _Sender]]:
        """`boxes` of tensor n cut by the tiles that hold them, each with the holder nearest to `proc`
        (None: the global store, for a tensor its format does not place on the plan's machine)."""
        tiles = self.tiles[n]
        if tiles is None:
            return [(b, None) for b in boxes if not _empty(b)]
        out: list[tuple[Box, _Sender]] = []
        for b in boxes:
            rest = [b]
            for tile, holders in tiles:
                part = _clip(b, tile)
                if part is None:
                    continue
                out.append((part, self.nearest(holders, proc)))
                rest = _minus(rest, [tile])
            out.extend((r, None) for r in rest)
        return out

    def nearest(self, holders: Sequence[tuple[int, ...]], proc: tuple[int, ...]) -> tuple[int, ...]:
        """Of several holders of one tile, the one nearest to `proc`: sharing the most machine levels
        (the same node first), then the closest coordinate, then the first."""
        def distance(h: tuple[int, ...]) -> tuple[int, int]:
            level = crossing_level(h, proc, self.level_dims)
            return (-(len(self.level_dims) if level is None else level), sum(abs(a - b) for a, b in zip(h, proc)))

        return min(holders, key=distance)


_Sender = tuple[int, ...] | None


def _tiles_of(held: dict[tuple[int, ...], list[Box]]) -> list[tuple[Box, tuple[tuple[int, ...], ...]]]:
    by_box: dict[Box, list[tuple[int, ...]]] = {}
    for proc, boxes in held.items():
        for b in boxes:
            by_box.setdefault(b, []).append(proc)
    return [(b, tuple(sorted(ps))) for b, ps in by_box.items()]


def _tagged_minus(pieces: Sequence[tuple[Box, _Sender]], holes: Sequence[Box]) -> list[tuple[Box, _Sender]]:
    """`pieces` (each with its sender) less every hole."""
    if not holes:
        return list(pieces)
    return [(part, sender) for box, sender in pieces for part in _minus([box], holes)]


def _proc_text(p: Sequence[int]) -> str:
    return "(" + ",".join(str(x) for x in p) + ")"


# A launch is flagged when its points receive more than this many times the bytes they
# write, and at least WARN_MIN_BYTES in all (issue 11: a launch where every point
# receives the whole of an operand).
WARN_RATIO = 16
WARN_MIN_BYTES = 1 << 20

_OWNERS = (-1,)  # the writer of reduced values: the tensor's home (its owners, or the global store)


class _Model:
    """The execution-space cost model, launch by launch (see the module docstring)."""

    def __init__(self, plan: Plan, owners: _Owners) -> None:
        self.plan = plan
        self.owners = owners
        # per tensor and processor: the boxes it used in the previous launch (still held)
        self.cache: dict[tuple[int, tuple[int, ...]], list[Box]] = {}
        # per tensor written by the plan: disjoint pieces with their last writer and launch
        self.written: dict[int, list[tuple[Box, tuple[int, ...], int]]] = {}

    def needed(self, n: int, proc: tuple[int, ...], box: Box, launch: int) -> list[tuple[Box, _Sender]]:
        """The parts of `box` processor `proc` must receive before launch number `launch`, each with its
        sender (`_Owners.senders`; the writer for values written earlier in the plan)."""
        info = self.plan.tensors[n]
        home = self.owners.boxes(n, proc)
        cached = self.cache.get((n, proc), [])
        pieces = self.written.get(n)
        if pieces is None:  # never written by this plan: its initial values
            if info.output and self.plan.zero_output:
                return []  # '=': the output starts at zero, made where it is used
            return self.owners.senders(n, _minus(_minus([box], home), cached), proc)
        need: list[tuple[Box, _Sender]] = []
        unwritten = [box]
        for piece, writer, when in pieces:
            part = _clip(box, piece)
            if part is None:
                continue
            unwritten = _minus(unwritten, [piece])
            if writer == proc:
                continue  # it wrote these values and holds them
            got = [(part, writer)] if writer != _OWNERS else self.owners.senders(n, _minus([part], home), proc)
            if when < launch - 1:  # fetched in the previous launch after this write: still valid
                got = _tagged_minus(got, cached)
            need.extend(got)
        if unwritten and not (info.output and self.plan.zero_output):
            need.extend(self.owners.senders(n, _minus(_minus(unwritten, home), cached), proc))
        return need

    def write(self, n: int, box: Box, writer: tuple[int, ...], launch: int) -> None:
        pieces = self.written.setdefault(n, [])
        kept: list[tuple[Box, tuple[int, ...], int]] = []
        for piece, w, when in pieces:
            kept.extend((rest, w, when) for rest in _cut(piece, box))
        kept.append((box, writer, launch))
        self.written[n] = kept


def _clip(a: Box, b: Box) -> Box | None:
    out = tuple((max(al, bl), min(ah, bh)) for (al, ah), (bl, bh) in zip(a, b))
    return None if _empty(out) else out


def stats(plan: Plan) -> dict[str, Any]:
    """The numbers of `explain()` as data.

    Keys: `placement` (bytes each processor holds under its tensors' formats
    before any launch, per processor and per tensor; tensors without a format
    are listed in `global_store_bytes` instead), `in_place` and `gathered`
    (the names of the formatted tensors the runtime uses in their device
    blocks, and those it gathers into one store first), `launches` (one dict per
    launch: step, domain, points, pinned, operands with tile shapes,
    projections and privileges, `received_bytes` per processor, the per-point
    `point_received_bytes` (max and mean), `received_total`, `written_bytes`
    and a `warning` or None), `received_bytes`, `reduced_bytes` and
    `returned_bytes` per processor and in total, `peak_bytes` per processor
    (and `peak_launch`: the launch index where it is reached, absent when the
    peak is the placement alone), `launch_count`, `notes`, `warnings` (the plan's lints first, then the
    launches'), `traffic` (a `distal.lower.traffic.Traffic`: who sends what to whom), and `reduction` (None without a
    distributed reduction into the output; else its strategy, reason, groups
    of device ids, program, steps, predicted seconds and single-AllReduce
    seconds).
    """
    owners = _Owners(plan)
    model = _Model(plan, owners)
    procs = [tuple(c) for c in plan.machine.coords()] if plan.machine is not None else [(0,)]
    received = {_proc_text(p): 0 for p in procs}
    reduced = dict(received)
    returned = dict(received)
    base: dict[str, int] = {}
    placement: dict[str, dict[str, int]] = {}
    for p in procs:
        key = _proc_text(p)
        base[key] = sum(owners.share(n, p) * info.itemsize for n, info in enumerate(plan.tensors))
    for n, info in enumerate(plan.tensors):
        if owners.held[n] is not None:
            placement[info.name] = {_proc_text(p): owners.share(n, p) * info.itemsize for p in procs}
    peak = dict(base)
    peak_at: dict[str, int] = {}  # the launch at which each processor's peak is reached
    out_launches: list[dict[str, Any]] = []
    warnings: list[str] = [str(lint) for lint in plan.lints]  # the schedule's performance lints first
    traffic = Recorder(owners.level_dims)
    for index, (group, launch) in enumerate(plan.launches()):
        step_recv: dict[str, int] = {}
        used: dict[tuple[int, tuple[int, ...]], list[Box]] = {}
        extra: dict[str, int] = {}
        writes: list[tuple[int, Box, tuple[int, ...]]] = []
        per_point: list[int] = []
        written_bytes = 0
        for point in launch.points():
            proc = plan.processor_of(group, point)
            key = _proc_text(proc)
            got = 0
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                if _empty(box) and info.shape:
                    continue
                mine = used.setdefault((op.tensor, proc), [])
                if op.privilege is Privilege.REDUCE_ADD:
                    # a reduction buffer: starts at zero, sent to the tensor's home after the launch
                    sent = owners.senders(op.tensor, _minus([box], owners.boxes(op.tensor, proc)), proc)
                    for part, home in sent:
                        traffic.add(index, "reduce", info.name, proc, home, _volume(part) * info.itemsize)
                    away = sum(_volume(part) for part, _ in sent)
                    reduced[key] = reduced.get(key, 0) + away * info.itemsize
                    extra[key] = extra.get(key, 0) + _volume(box) * info.itemsize
                    written_bytes += _volume(box) * info.itemsize
                    writes.append((op.tensor, box, _OWNERS))
                    continue
                if op.privilege is not Privilege.WRITE:
                    need = _tagged_minus(model.needed(op.tensor, proc, box, index), mine)
                    for part, sender in need:
                        traffic.add(index, "read", info.name, sender, proc, _volume(part) * info.itemsize)
                    got += sum(_volume(part) for part, _ in need) * info.itemsize
                new = _minus(_minus([box], mine), owners.boxes(op.tensor, proc))
                extra[key] = extra.get(key, 0) + _total(new) * info.itemsize
                mine.extend(new)
                if op.privilege is not Privilege.READ:
                    written_bytes += _volume(box) * info.itemsize
                    writes.append((op.tensor, box, proc))
            per_point.append(got)
            if got:
                step_recv[key] = step_recv.get(key, 0) + got
        for key, b in step_recv.items():
            received[key] = received.get(key, 0) + b
        for key, b in extra.items():
            if base.get(key, 0) + b > peak.get(key, 0):
                peak[key] = base.get(key, 0) + b
                peak_at[key] = index
        for n, box, writer in writes:
            model.write(n, box, writer, index)
        model.cache = {k: [b for b in v if not _empty(b)] for k, v in used.items()}
        total = sum(per_point)
        warning = None
        if total >= WARN_MIN_BYTES and total > WARN_RATIO * written_bytes:
            mean = total / max(len(per_point), 1)
            warning = (f"launch {len(out_launches)}: its {len(per_point)} point(s) receive {_bytes(total)} "
                       f"({_bytes(mean)} per point on average, up to {_bytes(max(per_point))}), "
                       f"{_ratio(total, written_bytes)} the {_bytes(written_bytes)} they write; "
                       "a coarser distribution or communicating at an outer loop would move less")
            warnings.append(warning)
        item = _launch_data(plan, group, launch, step_recv)
        item.update({
            "point_received_bytes": {"max": max(per_point, default=0),
                                     "mean": total / max(len(per_point), 1)},
            "received_total": total,
            "written_bytes": written_bytes,
            "warning": warning,
        })
        out_launches.append(item)
    kind = plan.machine.kind if plan.machine is not None else "cpu"
    real = configured_processors(kind)
    for item, tasks in zip(out_launches, plan_tasks(plan, real), strict=True):
        item.update({"legate_tasks": tasks.tasks, "legate_tasks_why": tasks.why})
    _returned(plan, owners, model, returned, traffic)
    return {
        "statement": plan.statement,
        "machine": repr(plan.machine) if plan.machine is not None else None,
        "launch_count": plan.launch_count(),
        "real_processors": real,
        "legate_task_count": sum(item["legate_tasks"] for item in out_launches),
        "placement": {
            "per_processor": base,
            "per_tensor": placement,
            "total_bytes": sum(sum(v.values()) for v in placement.values()),
        },
        "global_store_bytes": {info.name: info.size * info.itemsize
                               for n, info in enumerate(plan.tensors) if owners.held[n] is None},
        **_in_place_data(plan),
        "launches": out_launches,
        "received_bytes": received,
        "reduced_bytes": reduced,
        "returned_bytes": returned,
        "total_received_bytes": sum(received.values()),
        "total_reduced_bytes": sum(reduced.values()),
        "total_returned_bytes": sum(returned.values()),
        "peak_bytes": peak,
        "peak_launch": peak_at,
        "notes": [*plan.notes, *(n for g in plan.groups for n in g.notes)],
        "warnings": warnings,
        "reduction": _reduction_data(plan, plan.reduction),
        "traffic": traffic.traffic(),
    }


def _in_place_data(plan: Plan) -> dict[str, list[str]]:
    """Which formatted tensors the runtime uses in their device blocks (`in_place`) and which it gathers
    into one store first (`gathered`, `distal.lower.in_place.gathered_tensors`); the output of a
    synthesized reduction is in neither (its launches write per-processor partials)."""
    red = plan.reduction if plan.reduction is not None and plan.reduction.synthesized else None
    gathered = set(gathered_tensors(plan))
    names: dict[str, list[str]] = {"in_place": [], "gathered": []}
    for n, info in enumerate(plan.tensors):
        if placement_layout(info) is None or (red is not None and n == red.tensor):
            continue
        names["gathered" if n in gathered else "in_place"].append(info.name)
    return names


_GATHERED_WHY = ("its tiles are not whole blocks or boxes of blocks of its format at positions linear in the "
                 "launch point")


def _runtime_text(plan: Plan, n: int, data: dict[str, Any]) -> str:
    """How the runtime uses formatted tensor n on Legate: in place, gathered, or per-processor partials
    ("" for a tensor it keeps as one store)."""
    info = plan.tensors[n]
    red = plan.reduction
    if red is not None and red.synthesized and n == red.tensor and placement_layout(info) is not None:
        return ("the launches write per-processor partials; the reduced result is one store, laid out by its "
                "format after")
    if info.name in data["gathered"]:
        if info.output and plan.zero_output:
            return (f"gathered into one store: a new one the launches write ({_GATHERED_WHY}); it is laid out by "
                    "its format after the launches")
        return (f"gathered into one store before the launches ({_GATHERED_WHY}); the plan reads that store"
                + (", and it is laid out again by its format after" if info.output else ""))
    if info.name in data["in_place"]:
        return f"{'written' if info.output else 'read'} in place in its device blocks"
    return ""


def _placement_lines(plan: Plan, data: dict[str, Any]) -> list[str]:
    """One line per tensor: where its format places it (or why no processor of the plan holds it),
    then how the runtime uses it (`_runtime_text`); `distal explain` prints the same lines."""
    lines = ["  placement (before the launches, by each tensor's format):"]
    per_tensor = data["placement"]["per_tensor"]
    for n, info in enumerate(plan.tensors):
        fmt = getattr(info.tensor, "format", None)
        if info.name in per_tensor:
            held = ", ".join(f"{p} {_bytes(b)}" for p, b in per_tensor[info.name].items() if b) or "nothing"
            where = f"held as {fmt}: {held}"
        else:
            size = _bytes(data["global_store_bytes"].get(info.name, info.size * info.itemsize))
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


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.0f}x" if b else "far more than"


def _returned(plan: Plan, owners: _Owners, model: _Model, returned: dict[str, int], traffic: Recorder) -> None:
    """Bytes of a formatted tensor written away from its owners, sent to them once the plan ends."""
    for n, pieces in model.written.items():
        held = owners.held[n]
        if held is None:
            continue  # the global store: what a processor wrote is the store's data
        itemsize = plan.tensors[n].itemsize
        for piece, writer, _ in pieces:
            if writer == _OWNERS:
                continue
            key = _proc_text(writer)
            for proc, boxes in held.items():
                if proc != writer:
                    nbytes = sum(_meet(piece, b) for b in boxes) * itemsize
                    returned[key] = returned.get(key, 0) + nbytes
                    traffic.add(None, "return", plan.tensors[n].name, writer, proc, nbytes)


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
    return len(boxes) == launch.volume and sum(_volume(b) for b in boxes) == math.prod(shape)


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
    data = stats(plan)
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
        *(f"  warning: {w}" for w in data["warnings"]),
        *_reduction_lines(plan),
    ]
    lines.extend(explain_lines(plan, model, data, found))
    return "\n".join(lines)


def summary_lines(plan: Plan, data: dict[str, Any], found: tuple[Any, str, str]) -> list[str]:
    """explain()'s first three lines: the processors used of those available (and why any are idle), the
    calls the leaves run, the predicted time against memory."""
    got, name, why = found
    kind = plan.machine.kind if plan.machine is not None else "cpu"
    real = int(data["real_processors"])
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


def _communication_lines(plan: Plan, data: dict[str, Any]) -> list[str]:
    traffic: Traffic = data["traffic"]
    lines = ["  communication (execution-space model; sender -> receiver, inside a node or between nodes by the "
             "machine's levels):"]
    for n, item in enumerate(data["launches"]):
        recv = ", ".join(f"{p} {_bytes(b)}" for p, b in item["received_bytes"].items() if b) or "nothing"
        step = ", ".join(f"{k}={v}" for k, v in item["step"].items())
        per = item["point_received_bytes"]
        lines.append(f"    launch {n}{f' ({step})' if step else ''}: receives {recv}")
        lines.append(f"      {item['legate_tasks']} Legate task(s) on {data['real_processors']} real processor(s): "
                     f"{item['legate_tasks_why']}")
        if item["received_total"]:
            lines.append(f"      {item['points']} point(s): {_bytes(per['mean'])} per point on average "
                         f"(max {_bytes(per['max'])}), {_bytes(item['received_total'])} in all; "
                         f"they write {_bytes(item['written_bytes'])}")
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


def _total_lines(data: dict[str, Any]) -> list[str]:
    traffic: Traffic = data["traffic"]
    split = traffic.split("read")
    lines = [f"  total received {_bytes(data['total_received_bytes'])}{f' ({split})' if split.total else ''}, "
             f"reduced {_bytes(data['total_reduced_bytes'])}"
             + (f", returned to owners {_bytes(data['total_returned_bytes'])}"
                if data["total_returned_bytes"] else "")]
    for p, b in data["peak_bytes"].items():
        lines.append(f"    processor {p}: placed {_bytes(data['placement']['per_processor'].get(p, 0))}, "
                     f"received {_bytes(data['received_bytes'].get(p, 0))}, "
                     f"reduced {_bytes(data['reduced_bytes'].get(p, 0))}, peak memory {_bytes(b)}")
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
