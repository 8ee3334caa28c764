"""The analysis of a plan: what every processor holds, receives, reduces and peaks at, as one typed value.

`analyse(plan)` (`distal.lower.executable.analysis_of(plan)` caches it per plan) runs the paper's
execution-space cost model (section 3.3) over a plan's launches and returns
a frozen `PlanAnalysis`: per launch (`LaunchAnalysis`: its domain, operands,
bytes received per processor and per point, bytes written, Legate tasks), per
processor (placement, received, reduced, returned and peak bytes) and per
tensor (placement, global stores), with `traffic` (who sends what to whom,
`distal.lower.traffic`). The memory check (`distal.lower.memory`), the time
model (`distal.model.predict`) and `explain()` (`distal.model.explain`) read
its fields; `dt.Plan.stats()` is `PlanAnalysis.as_dict()`, the documented dict.

Each launch point runs on the abstract processor of its distributed
coordinates; a launch is one time step.

Placement comes first, as its own step: a tensor with a format over the
plan's machine is held tile by tile where the format puts it (paper 5.3:
`Format.tiles` and `Format.owners`; broadcast dimensions on every processor
along them, fixed dimensions on their face; `Owners`). A tensor without a
format (or with a format over another machine) lives in one global store
that no processor of the plan holds: everything a processor reads of it is
received.

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
goes to the global store). Where the processors hold partials across launches
(`distal.lower.reductions.reduced_after`: sequential steps under the output's
`communicate` loop, or a synthesized reduction), each processor's tile is sent
once, after the launch that ends its stage, however many launches added into
it. Elements of a formatted output written away from their owners are sent
to them once the plan ends (`returned`).

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
`traffic`, split inside a node or between nodes by the levels of the plan's
own machine. The plan's performance lints (`distal.lower.lints`, found at
compile) come first among the warnings.

>>> import distal as dt
>>> i, io, ii = dt.index_vars("i io ii")
>>> m = dt.Machine(dt.Grid(2))
>>> x = dt.Tensor("x", (8,), dt.Format("x -> 0", m))  # all of x on processor 0
>>> y = dt.Tensor("y", (8,), dt.Format("x -> x", m))
>>> y[i] = x[i]
>>> a = y.schedule().distribute([i], [io], [ii], m).compile().analysis()
>>> dict(a.received), a.launches[0].received_total, dict(a.peak)
({(0,): 0, (1,): 32}, 32, {(0,): 96, (1,): 64})
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from distal._text import bytes_text as _bytes
from distal.errors import DistalError
from distal.lower.grouping import plan_tasks
from distal.lower.in_place import gathered_tensors, placement_layout
from distal.lower.reductions import reduced_after
from distal.lower.task_graph import Box, Group, Launch, Operand, PlanBase, Privilege, Reduction, TensorInfo
from distal.lower.traffic import Recorder, Traffic, crossing_level
from distal.machine.ranks import run_processors

__all__ = ["WARN_MIN_BYTES", "WARN_RATIO", "LaunchAnalysis", "OperandTile", "Owners", "Placement", "PlanAnalysis",
           "Proc", "analyse", "clip", "cut", "is_empty", "meet", "minus", "proc_text", "volume"]

Proc = tuple[int, ...]  # an abstract processor coordinate, every machine level concatenated


# -- box algebra -------------------------------------------------------------------------------------------------

def volume(box: Box) -> int:
    """The number of elements of `box`."""
    return math.prod(max(hi - lo, 0) for lo, hi in box)


def meet(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """The number of elements `a` and `b` share."""
    return math.prod(max(min(ah, bh) - max(al, bl), 0) for (al, ah), (bl, bh) in zip(a, b))


def is_empty(box: Box) -> bool:
    return any(hi <= lo for lo, hi in box)


def clip(a: Box, b: Box) -> Box | None:
    """The part of `a` inside `b` (None: they do not meet)."""
    out = tuple((max(al, bl), min(ah, bh)) for (al, ah), (bl, bh) in zip(a, b))
    return None if is_empty(out) else out


def cut(box: Box, hole: Box) -> list[Box]:
    """The parts of `box` outside `hole`, as disjoint boxes."""
    if is_empty(box) or meet(box, hole) == 0:
        return [] if is_empty(box) else [box]
    out: list[Box] = []
    rest = list(box)
    for d, ((lo, hi), (hl, hh)) in enumerate(zip(box, hole)):
        if lo < hl:
            out.append((*rest[:d], (lo, hl), *rest[d + 1:]))
        if hh < hi:
            out.append((*rest[:d], (hh, hi), *rest[d + 1:]))
        rest[d] = (max(lo, hl), min(hi, hh))
    return out


def minus(boxes: Sequence[Box], holes: Sequence[Box]) -> list[Box]:
    """`boxes` (disjoint) less every hole, as disjoint boxes."""
    out = [b for b in boxes if not is_empty(b)]
    for hole in holes:
        if not out:
            break
        if is_empty(hole):
            continue
        out = [piece for b in out for piece in cut(b, hole)]
    return out


def _total(boxes: Sequence[Box]) -> int:
    return sum(volume(b) for b in boxes)


def proc_text(p: Sequence[int]) -> str:
    """A processor coordinate as `stats()` and `explain()` print it: `(0,1)`."""
    return "(" + ",".join(str(x) for x in p) + ")"


# -- who holds what ----------------------------------------------------------------------------------------------

_Sender = Proc | None


class Owners:
    """Which boxes of each tensor each abstract processor holds under its format (placement, paper 5.3).

    A tensor with a format over the plan's machine is held as `Format.boxes`
    says, the one answer to who holds what (broadcast dimensions: every
    processor along them; fixed dimensions: the face). A tensor without a
    format, or with a format over another machine, lives in one global store
    that no processor of the plan holds (`held[n]` is None for it).
    """

    def __init__(self, plan: PlanBase) -> None:
        # the plan's tensors and machine, not the plan: an analysis (which keeps its `Owners`) must not keep
        # its plan alive (`distal.lower.executable` caches analyses per plan, weakly)
        self.tensors = plan.tensors
        self.machine = plan.machine
        self.held: list[dict[Proc, list[Box]] | None] = [self._held(info) for info in plan.tensors]
        # per tensor: each placed tile with the processors holding it (several along broadcast dimensions)
        self.tiles: list[list[tuple[Box, tuple[Proc, ...]]] | None] = [
            None if held is None else _tiles_of(held) for held in self.held]
        machine = plan.machine
        self.level_dims = tuple(g.ndim for g in machine.grids) if machine is not None else (1,)

    def _held(self, info: TensorInfo) -> dict[Proc, list[Box]] | None:
        fmt = getattr(info.tensor, "format", None)
        machine = self.machine
        if fmt is None or machine is None or getattr(fmt, "machine", None) != machine:
            return None
        try:
            return {tuple(p): list(boxes) for p, boxes in fmt.boxes(info.shape).items() if boxes}
        except DistalError:  # a format this plan cannot place (e.g. sizes still symbolic): one global store
            return None

    def boxes(self, n: int, proc: Proc) -> list[Box]:
        """The boxes of tensor n that `proc` holds ([] for a global store)."""
        held = self.held[n]
        return [] if held is None else held.get(proc, [])

    def share(self, n: int, proc: Proc) -> int:
        """The elements of tensor n that `proc` holds."""
        return _total(self.boxes(n, proc))

    def senders(self, n: int, boxes: Sequence[Box], proc: Proc) -> list[tuple[Box, _Sender]]:
        """`boxes` of tensor n cut by the tiles that hold them, each with the holder nearest to `proc`
        (None: the global store, for a tensor its format does not place on the plan's machine)."""
        tiles = self.tiles[n]
        if tiles is None:
            return [(b, None) for b in boxes if not is_empty(b)]
        out: list[tuple[Box, _Sender]] = []
        for b in boxes:
            rest = [b]
            for tile, holders in tiles:
                part = clip(b, tile)
                if part is None:
                    continue
                out.append((part, self.nearest(holders, proc)))
                rest = minus(rest, [tile])
            out.extend((r, None) for r in rest)
        return out

    def nearest(self, holders: Sequence[Proc], proc: Proc) -> Proc:
        """Of several holders of one tile, the one nearest to `proc`: sharing the most machine levels
        (the same node first), then the closest coordinate, then the first."""
        def distance(h: Proc) -> tuple[int, int]:
            level = crossing_level(h, proc, self.level_dims)
            return (-(len(self.level_dims) if level is None else level), sum(abs(a - b) for a, b in zip(h, proc)))

        return min(holders, key=distance)


def _tiles_of(held: dict[Proc, list[Box]]) -> list[tuple[Box, tuple[Proc, ...]]]:
    by_box: dict[Box, list[Proc]] = {}
    for proc, boxes in held.items():
        for b in boxes:
            by_box.setdefault(b, []).append(proc)
    return [(b, tuple(sorted(ps))) for b, ps in by_box.items()]


def _tagged_minus(pieces: Sequence[tuple[Box, _Sender]], holes: Sequence[Box]) -> list[tuple[Box, _Sender]]:
    """`pieces` (each with its sender) less every hole."""
    if not holes:
        return list(pieces)
    return [(part, sender) for box, sender in pieces for part in minus([box], holes)]


# -- the typed analysis ------------------------------------------------------------------------------------------

# A launch is flagged when its points receive more than this many times the bytes they
# write, and at least WARN_MIN_BYTES in all (issue 11: a launch where every point
# receives the whole of an operand).
WARN_RATIO = 16
WARN_MIN_BYTES = 1 << 20


def _frozen(d: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True, slots=True)
class OperandTile:
    """One operand of a launch as the analysis sees it: its tile and where the first launch point reads it."""

    tensor: str
    privilege: Privilege
    tile: tuple[int, ...]  # the tile's shape (the tensor's shape when `whole`)
    whole: bool  # every point gets the whole tensor
    projection: tuple[str, ...] | None  # launch point -> tile color, as text (`p0`, `2*p1+1`, ...)
    first_box: Box  # the box the launch's first point reads or writes

    def as_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "privilege": self.privilege.value, "tile": list(self.tile),
                "whole": self.whole, "projection": list(self.projection) if self.projection is not None else None,
                "first_box": [list(b) for b in self.first_box]}


@dataclass(frozen=True, slots=True)
class LaunchAnalysis:
    """One launch: its domain and operands, what its points receive and write, the Legate tasks it runs as."""

    step: Mapping[str, int]  # the value of each sequential step variable
    domain: tuple[tuple[int, int], ...]  # [lo, hi) of each distributed launch dimension
    points: int
    pinned: bool
    operands: tuple[OperandTile, ...]
    received: Mapping[Proc, int]  # bytes each processor receives before it (processors that receive some)
    point_received_max: int  # the most one point receives
    point_received_mean: float
    received_total: int  # what all its points receive
    written_bytes: int  # what its points write (reduction buffers included)
    warning: str | None  # the receive-far-more-than-written warning, if any
    legate_tasks: int  # the Legate tasks its points run as (`distal.lower.grouping.plan_tasks`)
    legate_tasks_why: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": dict(self.step),
            "domain": [list(d) for d in self.domain],
            "points": self.points,
            "pinned": self.pinned,
            "operands": [op.as_dict() for op in self.operands],
            "received_bytes": {proc_text(p): b for p, b in self.received.items()},
            "point_received_bytes": {"max": self.point_received_max, "mean": self.point_received_mean},
            "received_total": self.received_total,
            "written_bytes": self.written_bytes,
            "warning": self.warning,
            "legate_tasks": self.legate_tasks,
            "legate_tasks_why": self.legate_tasks_why,
        }


@dataclass(frozen=True, slots=True)
class Placement:
    """Bytes the tensors' formats place on each processor before any launch, in all and per tensor."""

    per_processor: Mapping[Proc, int]  # every processor of the plan's machine
    per_tensor: Mapping[str, Mapping[Proc, int]]  # the tensors with a format over the plan's machine

    @property
    def total_bytes(self) -> int:
        return sum(sum(v.values()) for v in self.per_tensor.values())


@dataclass(frozen=True, slots=True)
class PlanAnalysis:
    """A plan under the execution-space cost model (see the module docstring), field by field.

    Per-processor figures are keyed by abstract processor coordinate
    (`proc_text` prints it as `stats()` does); `peak_launch` has an entry
    only where a processor's peak is reached at a launch (not by its
    placement alone). `owners` is who holds what (`Owners`).
    """

    statement: str
    machine: str | None  # repr of the plan's machine
    launch_count: int
    real_processors: int  # the Legate processors of the plan's kind of the whole run, every rank's (`run_processors`)
    placement: Placement
    global_store_bytes: Mapping[str, int]  # tensors no processor of the plan holds: their one store
    in_place: tuple[str, ...]  # formatted tensors the runtime uses in their device blocks
    gathered: tuple[str, ...]  # those it gathers into one store first
    launches: tuple[LaunchAnalysis, ...]
    received: Mapping[Proc, int]
    reduced: Mapping[Proc, int]
    returned: Mapping[Proc, int]
    peak: Mapping[Proc, int]
    peak_launch: Mapping[Proc, int]
    notes: tuple[str, ...]
    warnings: tuple[str, ...]  # the plan's lints first, then the launches'
    reduction: Reduction | None  # how a distributed reduction into the output runs (the plan's)
    traffic: Traffic
    owners: Owners = field(compare=False, repr=False)

    @property
    def legate_task_count(self) -> int:
        return sum(launch.legate_tasks for launch in self.launches)

    @property
    def total_received_bytes(self) -> int:
        return sum(self.received.values())

    @property
    def total_reduced_bytes(self) -> int:
        return sum(self.reduced.values())

    @property
    def total_returned_bytes(self) -> int:
        return sum(self.returned.values())

    def as_dict(self) -> dict[str, Any]:
        """The documented `dt.Plan.stats()` dict (docs/reference.md): string keys, processors as `(0,1)`."""
        def text(d: Mapping[Proc, int]) -> dict[str, int]:
            return {proc_text(p): b for p, b in d.items()}

        return {
            "statement": self.statement,
            "machine": self.machine,
            "launch_count": self.launch_count,
            "real_processors": self.real_processors,
            "legate_task_count": self.legate_task_count,
            "placement": {
                "per_processor": text(self.placement.per_processor),
                "per_tensor": {name: text(v) for name, v in self.placement.per_tensor.items()},
                "total_bytes": self.placement.total_bytes,
            },
            "global_store_bytes": dict(self.global_store_bytes),
            "in_place": list(self.in_place),
            "gathered": list(self.gathered),
            "launches": [launch.as_dict() for launch in self.launches],
            "received_bytes": text(self.received),
            "reduced_bytes": text(self.reduced),
            "returned_bytes": text(self.returned),
            "total_received_bytes": self.total_received_bytes,
            "total_reduced_bytes": self.total_reduced_bytes,
            "total_returned_bytes": self.total_returned_bytes,
            "peak_bytes": text(self.peak),
            "peak_launch": {proc_text(p): n for p, n in self.peak_launch.items()},
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "reduction": _reduction_data(self),
            "traffic": self.traffic,
        }


def _reduction_data(a: PlanAnalysis) -> dict[str, Any] | None:
    red = a.reduction
    if red is None:
        return None
    return {
        "tensor": a.owners.tensors[red.tensor].name,
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


# -- the simulation ----------------------------------------------------------------------------------------------

_OWNERS = (-1,)  # the writer of reduced values: the tensor's home (its owners, or the global store)


class _Simulation:
    """What each processor holds, launch by launch (see the module docstring)."""

    def __init__(self, plan: PlanBase, owners: Owners) -> None:
        self.plan = plan
        self.owners = owners
        # per tensor and processor: the boxes it used in the previous launch (still held)
        self.cache: dict[tuple[int, Proc], list[Box]] = {}
        # per tensor written by the plan: disjoint pieces with their last writer and launch
        self.written: dict[int, list[tuple[Box, Proc, int]]] = {}

    def needed(self, n: int, proc: Proc, box: Box, launch: int) -> list[tuple[Box, _Sender]]:
        """The parts of `box` processor `proc` must receive before launch number `launch`, each with its
        sender (`Owners.senders`; the writer for values written earlier in the plan)."""
        info = self.plan.tensors[n]
        home = self.owners.boxes(n, proc)
        cached = self.cache.get((n, proc), [])
        pieces = self.written.get(n)
        if pieces is None:  # never written by this plan: its initial values
            if info.output and self.plan.zero_output:
                return []  # '=': the output starts at zero, made where it is used
            return self.owners.senders(n, minus(minus([box], home), cached), proc)
        need: list[tuple[Box, _Sender]] = []
        unwritten = [box]
        for piece, writer, when in pieces:
            part = clip(box, piece)
            if part is None:
                continue
            unwritten = minus(unwritten, [piece])
            if writer == proc:
                continue  # it wrote these values and holds them
            got = [(part, writer)] if writer != _OWNERS else self.owners.senders(n, minus([part], home), proc)
            if when < launch - 1:  # fetched in the previous launch after this write: still valid
                got = _tagged_minus(got, cached)
            need.extend(got)
        if unwritten and not (info.output and self.plan.zero_output):
            need.extend(self.owners.senders(n, minus(minus(unwritten, home), cached), proc))
        return need

    def write(self, n: int, box: Box, writer: Proc, launch: int) -> None:
        pieces = self.written.setdefault(n, [])
        kept: list[tuple[Box, Proc, int]] = []
        for piece, w, when in pieces:
            kept.extend((rest, w, when) for rest in cut(piece, box))
        kept.append((box, writer, launch))
        self.written[n] = kept


@dataclass
class _LaunchFigures:
    """What one launch's points receive and write, before its Legate tasks are counted."""

    received: dict[Proc, int]
    per_point: list[int]
    written_bytes: int
    warning: str | None


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.0f}x" if b else "far more than"


def analyse(plan: PlanBase, processors: int | None = None) -> PlanAnalysis:
    """The plan under the execution-space cost model (cached by `distal.lower.executable.analysis_of`; see the
    module docstring), its task counts for `processors` real processors (default: the Legate processors of the
    plan's kind configured)."""
    owners = Owners(plan)
    sim = _Simulation(plan, owners)
    procs = [tuple(c) for c in plan.machine.coords()] if plan.machine is not None else [(0,)]
    received = dict.fromkeys(procs, 0)
    reduced = dict(received)
    returned = dict(received)
    base = {p: sum(owners.share(n, p) * info.itemsize for n, info in enumerate(plan.tensors)) for p in procs}
    placement = {info.name: {p: owners.share(n, p) * info.itemsize for p in procs}
                 for n, info in enumerate(plan.tensors) if owners.held[n] is not None}
    peak = dict(base)
    peak_at: dict[Proc, int] = {}  # the launch at which each processor's peak is reached
    figures: list[_LaunchFigures] = []
    warnings: list[str] = [str(lint) for lint in plan.lints]  # the schedule's performance lints first
    traffic = Recorder(owners.level_dims)
    held = reduced_after(plan)  # partials held across launches: reduced once per stage (issue 34)
    reduced_into = plan.reduction.tensor if held is not None and plan.reduction is not None else -1
    pending: dict[int, dict[tuple[int, Proc, Box], None]] = {}
    for index, (group, launch) in enumerate(plan.launches()):
        step_recv: dict[Proc, int] = {}
        used: dict[tuple[int, Proc], list[Box]] = {}
        extra: dict[Proc, int] = {}
        writes: list[tuple[int, Box, Proc]] = []
        per_point: list[int] = []
        written_bytes = 0
        for point in launch.points():
            proc = plan.processor_of(group, point)
            got = 0
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                if is_empty(box) and info.shape:
                    continue
                mine = used.setdefault((op.tensor, proc), [])
                if op.privilege is Privilege.REDUCE_ADD or (held is not None and op.tensor == reduced_into):
                    # a reduction buffer: starts at zero, sent to the tensor's home after the launch, or
                    # (partials held across launches) after the launch that ends its stage, once
                    if held is None:
                        _send_reduced(owners, traffic, reduced, index, op.tensor, info, proc, box)
                    else:
                        pending.setdefault(held[index], {}).setdefault((op.tensor, proc, box), None)
                    extra[proc] = extra.get(proc, 0) + volume(box) * info.itemsize
                    written_bytes += volume(box) * info.itemsize
                    writes.append((op.tensor, box, _OWNERS))
                    continue
                if op.privilege is not Privilege.WRITE:
                    need = _tagged_minus(sim.needed(op.tensor, proc, box, index), mine)
                    for part, sender in need:
                        traffic.add(index, "read", info.name, sender, proc, volume(part) * info.itemsize)
                    got += sum(volume(part) for part, _ in need) * info.itemsize
                new = minus(minus([box], mine), owners.boxes(op.tensor, proc))
                extra[proc] = extra.get(proc, 0) + _total(new) * info.itemsize
                mine.extend(new)
                if op.privilege is not Privilege.READ:
                    written_bytes += volume(box) * info.itemsize
                    writes.append((op.tensor, box, proc))
            per_point.append(got)
            if got:
                step_recv[proc] = step_recv.get(proc, 0) + got
        for proc, b in step_recv.items():
            received[proc] = received.get(proc, 0) + b
        for proc, b in extra.items():
            if base.get(proc, 0) + b > peak.get(proc, 0):
                peak[proc] = base.get(proc, 0) + b
                peak_at[proc] = index
        for n, proc, box in pending.pop(index, {}):
            _send_reduced(owners, traffic, reduced, index, n, plan.tensors[n], proc, box)
        for n, box, writer in writes:
            sim.write(n, box, writer, index)
        sim.cache = {k: [b for b in v if not is_empty(b)] for k, v in used.items()}
        total = sum(per_point)
        warning = None
        if total >= WARN_MIN_BYTES and total > WARN_RATIO * written_bytes:
            mean = total / max(len(per_point), 1)
            warning = (f"launch {len(figures)}: its {len(per_point)} point(s) receive {_bytes(total)} "
                       f"({_bytes(mean)} per point on average, up to {_bytes(max(per_point))}), "
                       f"{_ratio(total, written_bytes)} the {_bytes(written_bytes)} they write; "
                       "a coarser distribution or communicating at an outer loop would move less")
            warnings.append(warning)
        figures.append(_LaunchFigures(step_recv, per_point, written_bytes, warning))
    kind = plan.machine.kind if plan.machine is not None else "cpu"
    real = run_processors(kind) if processors is None else processors
    launches = tuple(
        _launch(plan, group, launch, fig, tasks.tasks, tasks.why)
        for (group, launch), fig, tasks in zip(plan.launches(), figures, plan_tasks(plan, real), strict=True))
    _returned(plan, owners, sim, returned, traffic)
    in_place, gathered = _in_place(plan)
    return PlanAnalysis(
        statement=plan.statement,
        machine=repr(plan.machine) if plan.machine is not None else None,
        launch_count=plan.launch_count(),
        real_processors=real,
        placement=Placement(_frozen(base), _frozen({k: _frozen(v) for k, v in placement.items()})),
        global_store_bytes=_frozen({info.name: info.size * info.itemsize
                                    for n, info in enumerate(plan.tensors) if owners.held[n] is None}),
        in_place=in_place,
        gathered=gathered,
        launches=launches,
        received=_frozen(received),
        reduced=_frozen(reduced),
        returned=_frozen(returned),
        peak=_frozen(peak),
        peak_launch=_frozen(peak_at),
        notes=(*plan.notes, *(n for g in plan.groups for n in g.notes)),
        warnings=tuple(warnings),
        reduction=plan.reduction,
        traffic=traffic.traffic(),
        owners=owners,
    )


def _send_reduced(owners: Owners, traffic: Recorder, reduced: dict[Proc, int], index: int, n: int,
                  info: TensorInfo, proc: Proc, box: Box) -> None:
    """A reduction buffer's part that ``proc`` does not own, sent to the tensor's home after launch ``index``."""
    sent = owners.senders(n, minus([box], owners.boxes(n, proc)), proc)
    for part, home in sent:
        traffic.add(index, "reduce", info.name, proc, home, volume(part) * info.itemsize)
    away = sum(volume(part) for part, _ in sent)
    reduced[proc] = reduced.get(proc, 0) + away * info.itemsize


def _launch(plan: PlanBase, group: Group, launch: Launch, fig: _LaunchFigures, tasks: int, why: str) -> LaunchAnalysis:
    nd = group.distributed
    steps = {str(v): launch.lower[nd + n] for n, v in enumerate(group.steps)} if group.vars else {}
    total = sum(fig.per_point)
    return LaunchAnalysis(
        step=_frozen(steps),
        domain=tuple(zip(launch.lower[:nd], launch.upper[:nd])),
        points=launch.volume,
        pinned=launch.pinned,
        operands=tuple(_operand(plan, op, launch) for op in launch.operands),
        received=_frozen(fig.received),
        point_received_max=max(fig.per_point, default=0),
        point_received_mean=total / max(len(fig.per_point), 1),
        received_total=total,
        written_bytes=fig.written_bytes,
        warning=fig.warning,
        legate_tasks=tasks,
        legate_tasks_why=why,
    )


def _operand(plan: PlanBase, op: Operand, launch: Launch) -> OperandTile:
    info = plan.tensors[op.tensor]
    first = next(launch.points())
    return OperandTile(
        tensor=info.name,
        privilege=op.privilege,
        tile=tuple(op.tile) if op.tile is not None else tuple(info.shape),
        whole=op.tile is None,
        projection=tuple(str(p) for p in op.projection) if op.projection is not None else None,
        first_box=op.box(first, info.shape),
    )


def _returned(plan: PlanBase, owners: Owners, sim: _Simulation, returned: dict[Proc, int], traffic: Recorder) -> None:
    """Bytes of a formatted tensor written away from its owners, sent to them once the plan ends."""
    for n, pieces in sim.written.items():
        held = owners.held[n]
        if held is None:
            continue  # the global store: what a processor wrote is the store's data
        itemsize = plan.tensors[n].itemsize
        for piece, writer, _ in pieces:
            if writer == _OWNERS:
                continue
            for proc, boxes in held.items():
                if proc != writer:
                    nbytes = sum(meet(piece, b) for b in boxes) * itemsize
                    returned[writer] = returned.get(writer, 0) + nbytes
                    traffic.add(None, "return", plan.tensors[n].name, writer, proc, nbytes)


def _in_place(plan: PlanBase) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Which formatted tensors the runtime uses in their device blocks (`in_place`) and which it gathers
    into one store first (`gathered`, `distal.lower.in_place.gathered_tensors`); the output of a
    synthesized reduction is in neither (its launches write per-processor partials; a held reduction's
    partials are reduced into the output's blocks where its launches could have read them in place)."""
    red = plan.reduction if plan.reduction is not None and plan.reduction.synthesized else None
    gathered = set(gathered_tensors(plan))
    names: dict[bool, list[str]] = {False: [], True: []}
    for n, info in enumerate(plan.tensors):
        if placement_layout(info) is None or (red is not None and n == red.tensor):
            continue
        names[n in gathered].append(info.name)
    return tuple(names[False]), tuple(names[True])
