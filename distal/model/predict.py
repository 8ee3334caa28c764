"""Predicting a plan's time on a machine model.

Each launch of a plan is a step; its points run on the real processors that
`Machine.bind` assigns their abstract processors (block-wise when the plan's
machine has more points than the model has processors). Per real processor
and step the model adds:

- compute: for each point, the leaf's FLOPs on its tiles (iterations of the
  statement inside the point's boxes times the operations per iteration) at
  the processor's rate for the leaf kind at that call's size
  (`ProcessorModel.rate`), or the bytes of its tiles at the memory bandwidth
  when that is slower (a roofline; bandwidth-bound leaf kinds, TTV and
  innerprod on this machine, take the bytes alone), plus the runtime's cost
  per Legate task it runs (with `serial_tasks`, a node's tasks one after the
  other, counted with the runtime's costs below); processors that share fewer
  cores run proportionally slower, every processor the plan runs points on
  counting as busy (launches on disjoint processors run at the same time);
- tasks: the points of a launch bound to one real processor run as one Legate
  task where `distal.lower.grouping` groups them (`plan_tasks`, the decision
  the runtime takes, on the same binding; ``DISTAL_GROUP_TASKS=0``: one task
  per point), so the runtime's cost per task is paid per task group there and
  per point elsewhere; the leaves' FLOPs and bytes are still counted per point;
- communication before the step: per tile, the real processors that read
  it and do not hold it (held by an abstract processor on the same real
  processor: free) get it as copies from its holders (its format's owners,
  or the processor that wrote it in an earlier launch) in the runtime's
  delivery scheme (`MachineModel.broadcast`, `distal.model.transfers.deliver`:
  copies from the nearest valid instance, a collective tree, or all from the
  holder); every copy of the step goes over the link of the innermost level
  holding both ends, through one port of each, and copies that share a port
  in a round share its bandwidth (`transfers.arrivals`): a processor's data
  has arrived when its last copy has. The bytes are the exact ones of the
  plan's analysis (`distal.lower.executable.analysis_of`, `distal.lower.analysis`:
  what earlier launches left on a processor is not sent again), split over
  the tiles as the formats split them. With
  `MachineModel.shared_memory` (this machine) nothing is sent: a tile one
  instance holds whole is read in place, and a tile spanning several
  instances is copied whole into a new one by its reader (the `intra` link);
- reductions after the step: the contributions to a tile a processor does
  not hold reach its holder as copies (`MachineModel.fold`: folded into the
  holder one after the other, or a collective tree; `transfers.collect`); a
  synthesized reduction program (`PlanBase.reduction`) takes the time
  `distal.reduction` simulated for it, after the last reducing step.

The critical path runs over the steps in order: step s starts after step s-1
computed and after its own data arrived; the runtime overlaps `overlap` of
the data for step s+1 (and the reductions of step s) with step s's compute:
T = comm_0 + sum_s max(comp_s, o * next_s) + (1 - o) * next_s, next_s being the
communication of step s+1 and the reductions of step s, plus the runtime's
cost per plan run and per launch, growing with the launch's points
(`MachineModel.launch_overhead`). Peak memory per real processor is the sum
of the peaks (the plan's analysis) of the abstract processors bound to it,
checked against the processor's memory.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from distal._text import seconds_text as _fmt
from distal.lower.analysis import Owners, PlanAnalysis, meet
from distal.lower.executable import analysis_of
from distal.lower.grouping import plan_tasks
from distal.lower.reductions import HeldReduction, held_folds
from distal.lower.task_graph import PlanBase, Privilege
from distal.machine.level import node_size
from distal.model.hardware import MachineModel, ModelError
from distal.model.transfers import BoxIndex, Copy, arrivals, collect, deliver
from distal.notation.ast import Access, BinaryOp, Literal, Neg, Sum
from distal.notation.visit import ExprVisitor

__all__ = ["Prediction", "predict"]


@dataclass(frozen=True)
class Prediction:
    """A plan's predicted time on a model, with its parts.

    `seconds` is the critical path; `compute_seconds` and `comm_seconds` sum
    the slowest processor's compute and communication over the steps;
    `exposed_comm_seconds` is what overlap did not hide. `processors` holds,
    per real processor, compute seconds, the bytes the model copies to it
    over links inside and between its nodes (`intra_bytes`, `inter_bytes`:
    nothing on a shared-memory model), the bytes it receives as the plan's
    analysis counts them (`received_bytes`, split as explain()'s traffic table
    splits them into `inside_node_bytes`, `between_nodes_bytes` and
    `store_bytes`: nodes are the plan's machine's outermost level), bytes
    reduced, points run, Legate tasks run (`tasks`: the points grouped as the
    runtime groups them) and peak bytes. `idle` counts real processors that
    run no launch point.
    """

    model: str
    processors_used: int
    processors_total: int
    seconds: float
    compute_seconds: float
    comm_seconds: float
    exposed_comm_seconds: float
    launch_seconds: float
    steps: int
    flops: float
    peak_bytes: int
    memory_bytes: int
    per_processor: tuple[dict[str, Any], ...] = field(repr=False)
    step_times: tuple[dict[str, float], ...] = field(repr=False)
    memory_source: str = ""  # where `memory_bytes` comes from (empty: the model's processor)
    # the processors assumed when they are not the ones the run has (`distal.model.explain.predicted`): empty for
    # Legate's configured processors on this machine's model, else e.g. "one per point of the plan's machine"
    assumption: str = ""
    points: int = 0  # launch points over all launches
    tasks: int = 0  # Legate tasks they run as (`distal.lower.grouping.plan_tasks`)
    warmup_seconds: float = 0.0  # the model's warm-up: its first compute at half rate (`MachineModel`)

    @property
    def fits(self) -> bool:
        """Whether every processor's peak memory fits in its memory."""
        return self.peak_bytes <= self.memory_bytes

    @property
    def idle(self) -> int:
        return self.processors_total - self.processors_used

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def summary(self) -> str:
        fit = "fits" if self.fits else "DOES NOT FIT"
        source = self.memory_source or f"{self.model}'s processor memory"
        idle = f", {self.idle} idle" if self.idle else ""
        assumed = f"; {self.assumption}" if self.assumption else ""
        return (f"predicted {_fmt(self.seconds)} on {self.model} ({self.processors_total} processors{idle}{assumed}): "
                f"compute {_fmt(self.compute_seconds)}, communication {_fmt(self.comm_seconds)} "
                f"({_fmt(self.exposed_comm_seconds)} not hidden), "
                f"{f'warm-up {_fmt(self.warmup_seconds)}, ' if self.warmup_seconds else ''}"
                f"runtime {_fmt(self.launch_seconds)} over "
                f"{self.steps} step(s) of {self.points} point(s) in {self.tasks} Legate task(s); peak memory "
                f"{_mib(self.peak_bytes)} of {_mib(self.memory_bytes)} per processor ({source}; {fit})")

    def describe(self) -> str:
        """The summary, then per real processor its points, tasks, compute, the bytes it receives (the plan's
        analysis: inside the node, from other nodes and from global stores, nodes being the plan's machine's
        outermost level as explain()'s traffic table splits them), reduces and peaks at."""
        lines = [self.summary()]
        for row in self.per_processor[:16]:
            node = f" (node {row['shown_node']})" if row.get("shown_node") is not None else ""
            store = f", {_mib(row['store_bytes'])} from global stores" if row.get("store_bytes") else ""
            lines.append(f"  processor {row['processor']}{node}: {row['points']} point(s) in "
                         f"{row['tasks']} Legate task(s), "
                         f"compute {_fmt(row['compute_seconds'])}, receives {_mib(row['inside_node_bytes'])} inside "
                         f"the node and {_mib(row['between_nodes_bytes'])} from other nodes{store}, reduces "
                         f"{_mib(row['reduced_bytes'])}, peak {_mib(row['peak_bytes'])}")
        if len(self.per_processor) > 16:
            lines.append(f"  ... {len(self.per_processor) - 16} more processors")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "seconds": self.seconds, "compute_seconds": self.compute_seconds,
                "comm_seconds": self.comm_seconds, "exposed_comm_seconds": self.exposed_comm_seconds,
                "launch_seconds": self.launch_seconds, "warmup_seconds": self.warmup_seconds, "steps": self.steps,
                "flops": self.flops,
                "peak_bytes": self.peak_bytes, "memory_bytes": self.memory_bytes, "fits": self.fits,
                "processors": self.processors_total, "idle": self.idle, "points": self.points, "tasks": self.tasks}




def _mib(b: float) -> str:
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 1024:.1f} KiB"


class _Ops(ExprVisitor[int]):
    """Arithmetic operations per evaluation of an expression (strict: an unknown node raises `TypeError`)."""

    def visit_access(self, e: Access) -> int:
        return 0

    def visit_literal(self, e: Literal) -> int:
        return 0

    def visit_neg(self, e: Neg) -> int:
        return self(e.operand)

    def _binary(self, e: BinaryOp) -> int:
        return 1 + self(e.a) + self(e.b)

    visit_add = visit_sub = visit_mul = visit_div = _binary

    def visit_sum(self, e: Sum) -> int:
        return self(e.body)

    def visit_call(self, e: Any) -> int:  # a unary function (distal.notation.ast.Call): one operation
        return 1 + self(e.operand)


def _iteration_dims(plan: PlanBase) -> tuple[list[tuple[int, int]], int]:
    """Per index variable of the statement, an (operand tensor index, dimension) indexing it; ops per iteration."""
    out = plan.output
    stmt = plan.source
    if stmt is None:
        raise ModelError(f"expected the plan's output {out.name} to keep its statement, but found none")
    index = {t.tensor.uid: n for n, t in enumerate(plan.tensors)}
    where: dict[Any, tuple[int, int]] = {}
    for acc in (stmt.lhs, *stmt.rhs.accesses()):
        n = index.get(acc.tensor.uid)
        if n is None:
            continue
        for d, v in enumerate(acc.indices):
            where.setdefault(v, (n, d))
    ops = _Ops()(stmt.rhs) + (1 if stmt.reduction_vars else 0)
    return list(where.values()), max(ops, 1)


def _product_work(plan: PlanBase) -> Any:
    """For a statement that is a product of tensors, the work of one launch point as the contraction
    `distal.contract` plans for its tiles runs it: a function of the point's boxes (tensor index -> box;
    dimensions not given are whole) returning the leaf kind ("GEMM" where a matrix product runs, else
    "GENERIC") and the operations. None for other statements (their iterations times operations count)."""
    from distal import contract
    from distal.notation.visit import product_spec

    stmt = plan.source
    found = product_spec(stmt.lhs, stmt.rhs) if stmt is not None else None
    if stmt is None or found is None:
        return None
    spec, letters, accesses = found
    index = {t.tensor.uid: n for n, t in enumerate(plan.tensors)}
    where: dict[Any, tuple[int, int]] = {}
    for acc in (stmt.lhs, *accesses):
        n = index.get(acc.tensor.uid)
        for d, v in enumerate(acc.indices):
            if n is not None:
                where.setdefault(v, (n, d))
    itemsize = plan.output.itemsize

    def at(boxes: dict[int, Any]) -> tuple[str, float]:
        ext: dict[str, int] = {}
        for v, c in letters.items():
            n, d = where[v]
            box = boxes.get(n)
            ext[c] = max(box[d][1] - box[d][0], 0) if box is not None else plan.tensors[n].shape[d]
        kind, flops = contract.work(spec, ext, itemsize)
        return kind, float(flops)

    return at


def _leaf_kind(group: Any) -> str:
    leaves = getattr(group.body, "leaves", ())
    return leaves[0][1].name if leaves else "GENERIC"


def predict(plan: PlanBase, model: MachineModel, processors: int | None = None,
            analysis: PlanAnalysis | None = None, exact: bool = True) -> Prediction:
    """The predicted time of `plan` on `model` with `processors` real processors (default: one per grid point).

    `analysis` is `analysis_of(plan)` (`distal.lower.executable`) when the caller has it already.
    With `exact=False` the bytes are not taken from the analysis (whose exact
    accounting of what earlier launches left behind costs minutes on plans of
    thousands of points) but estimated from the formats alone: every tile
    element a processor's format does not give it is received, every launch.
    That is what plans of hundreds of nodes use (bench/weak_scaling.py).
    """
    if not isinstance(model, MachineModel):
        raise ModelError(f"expected a distal.model.MachineModel, but found {model!r}")
    machine = plan.machine
    abstract = [tuple(c) for c in machine.coords()] if machine is not None else [(0,)]
    real = processors if processors is not None else len(abstract)
    if isinstance(real, bool) or not isinstance(real, int) or real < 1:
        raise ModelError(f"expected a positive number of processors, but found {processors!r}")
    bind: dict[tuple[int, ...], int] = dict(machine.bind(real)) if machine is not None else {(0,): 0}
    on_real: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for c, r in bind.items():
        on_real[r].append(c)
    on_node: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for c, r in bind.items():
        on_node[model.node_of(r)].append(c)
    owners = Owners(plan)
    if exact and analysis is None:
        analysis = analysis_of(plan)  # exact byte counts (distal.lower.analysis), split here by link
    dims, ops_per_iter = _iteration_dims(plan)
    product = _product_work(plan)  # a product's work per point as its contraction runs it (distal.contract)
    proc = model.processor

    def holds(n: int, q: tuple[int, ...]) -> list[tuple[tuple[int, int], ...]]:
        if owners.held[n] is None:  # the global store: with processor 0
            return [tuple((0, d) for d in plan.tensors[n].shape)] if bind.get(q, -1) == 0 else []
        return owners.boxes(n, q)

    def local_to(n: int, procs: list[tuple[int, ...]], box: tuple[tuple[int, int], ...], size: int) -> int:
        got = 0
        for q in procs:
            for b in holds(n, q):
                got += meet(box, b)
                if got >= size:
                    return size
        return got

    comp_total: dict[int, float] = defaultdict(float)
    intra_total: dict[int, float] = defaultdict(float)
    inter_total: dict[int, float] = defaultdict(float)
    red_total: dict[int, float] = defaultdict(float)
    points_total: dict[int, int] = defaultdict(int)
    step_rows: list[dict[str, float]] = []
    flops_total = 0.0
    launches = list(plan.launches())
    # the Legate tasks each real processor runs per launch: the runtime's decision (points bound to one processor
    # grouped into one task where `distal.lower.grouping` allows it), on the binding used here
    launch_tasks = [dict(t.per_processor) for t in plan_tasks(plan, real)]
    tasks_total: dict[int, int] = defaultdict(int)
    for counts in launch_tasks:
        for r, n_ in counts.items():
            tasks_total[r] += n_
    # first pass: per launch and abstract processor, where its remote tiles are (same real processor, same node,
    # another node), and the tiles it reduces; the amounts then come from the analysis
    red_est: dict[tuple[int, ...], float] = defaultdict(float)
    extra_peak: dict[tuple[int, ...], float] = defaultdict(float)  # estimated: received + reduction buffers
    per_launch: list[Any] = []
    launch_points: list[int] = []  # points per launch: the runtime's cost of a launch grows with them
    kinds: list[str] = []
    per_step: list[tuple[dict[int, float], dict[int, float], dict[int, float]]] = []
    # tiles written by a launch, for the launches after it: (tensor, box) -> its writer, and per tensor all pieces
    written_at: dict[tuple[int, Any], int] = {}
    written: dict[int, list[tuple[Any, int]]] = defaultdict(list)
    seen_by: dict[tuple[int, Any], set[int]] = {}  # (tensor, box) -> real processors an earlier launch copied it to
    # Legate's own reduction (not held, not synthesized): every point of a REDUCE_ADD launch gets a reduction
    # instance of its tile, made afresh each run and folded into the tile (`MachineModel.reduction_seconds`)
    legate_reduction = plan.reduction is not None and not plan.reduction.synthesized and not isinstance(
        plan.reduction, HeldReduction)
    instance_bytes: list[dict[int, float]] = []  # per launch, per real processor: seconds of its instances
    for group, launch in launches:
        kinds.append(_leaf_kind(group))
        instances: dict[int, float] = defaultdict(float)
        instance_bytes.append(instances)
        generic = product is not None and kinds[-1] == "GENERIC"  # no library leaf: distal.contract runs it
        raw: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])  # flops, bytes touched, points
        where: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # real, node, other
        buffers: dict[tuple[int, ...], float] = defaultdict(float)
        red_where: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0.0])  # node, other
        readers: dict[tuple[int, Any], _Tile] = {}  # (tensor, color) -> who needs how much of it
        fanin: dict[tuple[int, Any], _Tile] = {}
        est_need: dict[tuple[int, ...], float] = defaultdict(float)  # per abstract processor: bytes it lacks
        wrote: list[tuple[int, Any, int]] = []
        for point in launch.points():
            a = plan.processor_of(group, point)
            r = bind.get(a, 0)
            node = model.node_of(r)
            boxes: dict[int, tuple[tuple[int, int], ...]] = {}
            touched = 0
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                boxes[op.tensor] = box
                size = math.prod(max(hi - lo, 0) for lo, hi in box)
                touched += size * info.itemsize
                if size == 0:
                    continue
                nb = info.itemsize
                if legate_reduction and op.privilege is Privilege.REDUCE_ADD:
                    instances[r] += model.reduction_seconds(size * nb)
                key = (op.tensor, op.color(point))
                if op.privilege in (Privilege.WRITE, Privilege.READ_WRITE):
                    wrote.append((op.tensor, box, r))
                    if op.privilege is Privilege.WRITE:
                        continue
                prior = written.get(op.tensor)
                if prior is not None and op.privilege is not Privilege.REDUCE_ADD:
                    # written by an earlier launch: held by its writers
                    # (the parts no launch wrote yet are the output's zeros, made where they are used)
                    at = written_at.get((op.tensor, box))
                    if at is not None:
                        if at == r:
                            continue
                        lacks, holders = size, {at}
                        if model.shared_memory:  # one instance holds it whole: read in place
                            continue
                    else:
                        others = [(b, w_) for b, w_ in prior if w_ != r and meet(box, b)]
                        lacks = min(size, sum(meet(box, b) for b, _w in others))
                        holders = {w_ for _b, w_ in others}
                    if not lacks:
                        continue
                    need = lacks * nb
                    where[a][2] += need
                    est_need[a] += need
                    tile = readers.setdefault(key, _Tile(size * nb))
                    tile.add(r, a, need)
                    tile.holders |= holders
                    continue
                mine = local_to(op.tensor, [a], box, size)
                if mine >= size:
                    continue
                same_real = max(mine, local_to(op.tensor, on_real[r], box, size))
                same_node = max(same_real, local_to(op.tensor, on_node[node], box, size))
                if op.privilege is Privilege.REDUCE_ADD:
                    buffers[a] += size * nb
                    red_where[a][0] += (same_node - mine) * nb
                    red_where[a][1] += (size - same_node) * nb
                    red_est[a] += (size - mine) * nb
                    tile = fanin.setdefault(key, _Tile(size * nb, op.tensor, box))
                    tile.add(r, a, (size - same_real) * nb)
                else:
                    w = where[a]
                    w[0] += (same_real - mine) * nb
                    w[1] += (same_node - same_real) * nb
                    w[2] += (size - same_node) * nb
                    est_need[a] += (size - mine) * nb
                    tile = readers.setdefault(key, _Tile(size * nb, op.tensor, box))
                    tile.add(r, a, (size - same_real) * nb)
                    tile.holders |= seen_by.get((op.tensor, box), set())  # instances earlier launches made
            iters = 1
            for n, d in dims:
                got_box = boxes.get(n)
                iters *= (got_box[d][1] - got_box[d][0]) if got_box is not None else plan.tensors[n].shape[d]
            if generic and product is not None:
                kinds[-1], flops = product(boxes)
            else:
                flops = float(iters * ops_per_iter)
            flops_total += flops
            part = raw[r]
            part[0] += flops
            part[1] += touched
            part[2] += 1
            points_total[r] += 1
        for a, w in where.items():
            extra_peak[a] = max(extra_peak[a], sum(w) + buffers.get(a, 0.0))
        for n_, box_, r_ in wrote:
            written_at[(n_, box_)] = r_
            written[n_].append((box_, r_))
        stale = {n_ for n_, _b, _r in wrote}
        if stale:
            seen_by = {k: v for k, v in seen_by.items() if k[0] not in stale}
        for tile in readers.values():  # a reader's instance stays valid for later launches (Legion's valid
            if tile.tensor >= 0 and tile.tensor not in stale:  # instances), a nearer source than the holder
                seen_by.setdefault((tile.tensor, tile.box), set()).update(tile.need)
        per_launch.append((raw, where, red_where, readers, fanin, est_need))
        launch_points.append(int(sum(part[2] for part in raw.values())))
    # a point's tiles may be larger than what its leaf computes (a dimension handed whole, the leaf picking
    # its part): the FLOPs are scaled so that all points together compute the statement once
    whole = float(math.prod(plan.tensors[n].shape[d] for n, d in dims) * ops_per_iter)
    if product is not None and all(_leaf_kind(g) == "GENERIC" for g, _ in launches):
        whole = product({})[1]
    scale = min(1.0, whole / flops_total) if flops_total > 0 else 1.0
    flops_total *= scale
    comps: list[dict[int, float]] = []
    # processors busy at once: launches on disjoint processors (Cannon's rows, say) run at the same time, so a
    # node's leaves share its cores among every processor the plan runs points on, not only one launch's
    busy: dict[int, int] = defaultdict(int)
    for r in {r for raw, *_rest in per_launch for r in raw}:
        busy[model.node_of(r)] += 1
    held = _held_work(plan, model, bind, len(launches))
    element = next((t.dtype for t in plan.tensors if t.output), None)
    for index, (kind, (raw, *_rest), counts) in enumerate(zip(kinds, per_launch, launch_tasks, strict=True)):
        comp: dict[int, float] = {}
        for r, (f, moved, npoints) in raw.items():
            # the leaf's rate is the one of a call of this launch's size (one call per point), in the output's
            # precision (the leaves multiply in the output's dtype)
            rate = proc.rate(kind, f * scale / max(npoints, 1), element)
            if kind in proc.bandwidth_bound:
                comp[r] = proc.leaf_seconds(kind, f * scale, moved * scale, element)
            else:
                comp[r] = max(f * scale / rate, moved * scale / proc.streaming.get(kind, proc.bandwidth))
        for r, seconds in instance_bytes[index].items():  # reduction instances: made, zeroed, folded in the step
            comp[r] = comp.get(r, 0.0) + seconds
        for r, seconds in held.seconds[index].items():  # a held reduction's zero fill (first) and folds (last)
            comp[r] = comp.get(r, 0.0) + seconds
        if model.cores is not None:  # more busy processors than cores: the leaves share the cores
            for r in comp:
                comp[r] *= max(1.0, busy[model.node_of(r)] / model.cores)
        if not model.serial_tasks:  # each processor pays for its own tasks (serial: the runtime term below)
            for r in raw:
                comp[r] += counts.get(r, 0) * model.task_seconds
            for r, n_ in held.fold_tasks[index].items():
                comp[r] = comp.get(r, 0.0) + n_ * model.task_seconds
        for r, t in comp.items():
            comp_total[r] += t
        comps.append(comp)
    reduced_abs: Mapping[tuple[int, ...], float]
    peak_abs: Mapping[tuple[int, ...], int]
    if analysis is not None:
        reduced_abs = analysis.reduced
        peak_abs = analysis.peak
    else:
        reduced_abs = red_est
        peak_abs = {c: int(sum(owners.share(n, c) * t.itemsize for n, t in enumerate(plan.tensors))
                           + extra_peak.get(c, 0.0)) for c in bind}
    holder_index: dict[int, BoxIndex] = {}

    def holders_of(n: int, box: tuple[tuple[int, int], ...]) -> set[int]:
        """The real processors whose format holds part of `box` of tensor n (the global store: processor 0)."""
        if owners.held[n] is None:
            return {0}
        if n not in holder_index:
            boxes: dict[tuple[tuple[int, int], ...], set[int]] = defaultdict(set)
            for q, held in (owners.held[n] or {}).items():
                for b in held:
                    boxes[tuple(b)].add(bind.get(q, 0))
            holder_index[n] = BoxIndex(boxes)
        return holder_index[n].holders(box) or {0}

    def covering(n: int, box: tuple[tuple[int, int], ...]) -> set[int]:
        holders_of(n, box)  # builds the index
        return holder_index[n].covering(box)

    red_share = {a: float(reduced_abs.get(a, 0)) / e if e > 0 else 0.0 for a, e in red_est.items()}
    synthesized = plan.reduction is not None and plan.reduction.synthesized
    reducing = [k for k, pl in enumerate(per_launch) if pl[4]]
    for index, (comp, (_raw, _where, red_where, readers, fanin, est_need)) in enumerate(zip(comps, per_launch)):
        # what each abstract processor really receives (the analysis: nothing that an earlier launch left on it) over
        # what the formats say it lacks: the tiles' bytes are scaled by it
        if analysis is not None:
            exact_recv = analysis.launches[index].received  # per abstract processor
            scale_of = {a: float(exact_recv.get(a, 0)) / e if e > 0 else 0.0 for a, e in est_need.items()}
        else:
            scale_of = dict.fromkeys(est_need, 1.0)
        deliveries: list[list[Copy]] = []
        assembled: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])  # shared memory: bytes, copies
        for tile in readers.values():
            if model.shared_memory:  # one memory: read in place from one instance, or assembled whole in a new one
                if tile.tensor >= 0 and (owners.held[tile.tensor] is None or covering(tile.tensor, tile.box)):
                    continue
                for r in tile.need:
                    if max(scale_of.get(a, 0.0) for a in tile.readers[r]) > 0:
                        assembled[r][0] += tile.size
                        assembled[r][1] += 1
                continue
            needs = {r: b * max(scale_of.get(a, 0.0) for a in tile.readers[r]) for r, b in tile.need.items()}
            needs = {r: b for r, b in needs.items() if b > 0}
            if not needs:
                continue
            holders = tile.holders | holders_of(tile.tensor, tile.box) if tile.tensor >= 0 else tile.holders
            deliveries.append(deliver(model, sorted(holders), needs))
        arrived, _ = arrivals(model, deliveries)
        for copies in deliveries:
            for cp in copies:
                d = model.distance(cp.src, cp.dst)
                if d >= model.depth:
                    inter_total[cp.dst] += cp.nbytes
                elif d > 0:
                    intra_total[cp.dst] += cp.nbytes
        for r, (nbytes, copies_) in assembled.items():  # each processor copies into its new instances
            arrived[r] = arrived.get(r, 0.0) + model.intra.seconds(nbytes, int(copies_))
            intra_total[r] += nbytes
        recv: dict[int, float] = {r: t for r, t in arrived.items() if t > 0}
        red: dict[int, float] = defaultdict(float)
        for a, (near, far) in red_where.items():
            red_total[bind[a]] += (near + far) * red_share.get(a, 0.0)
        if not synthesized:  # Legate's reduction: the contributions reach each tile's holder
            gathers: list[list[Copy]] = []
            involved: list[set[int]] = []
            for tile in fanin.values():
                parts = {r: b * max(red_share.get(a, 0.0) for a in tile.readers[r]) for r, b in tile.need.items()}
                if not any(b > 0 for b in parts.values()):
                    continue
                first = min(tile.need)
                holder = _nearest_holder(model, holders_of(tile.tensor, tile.box), first)
                gathers.append(collect(model, holder, parts))
                involved.append({holder, *tile.need})
            _, ends = arrivals(model, gathers)
            for who, end in zip(involved, ends):
                for r in who:
                    red[r] = max(red[r], end)
        elif reducing and index == reducing[-1]:  # the synthesized program, once every reducing launch ran
            seconds = _synthesized_seconds(plan, model)
            for r in {bind[a] for a in bind}:
                red[r] = max(red[r], seconds)
        red = {r: t for r, t in red.items() if t > 0}
        step_rows.append({"compute": max(comp.values(), default=0.0), "receive": max(recv.values(), default=0.0),
                          "reduce": max(red.values(), default=0.0)})
        per_step.append((comp, recv, red))
    # the critical path: each real processor runs its launches in order; the data of its next launch and the
    # reductions of this one overlap its compute by `overlap`
    o = model.overlap
    total = 0.0
    comp_sum = comm_sum = exposed = 0.0
    for r in range(real):
        runs = [(c.get(r, 0.0), rv.get(r, 0.0), rd.get(r, 0.0)) for c, rv, rd in per_step
                if r in c or r in rv or r in rd]
        if not runs:
            continue
        t = runs[0][1]
        hidden = 0.0
        for s_, step in enumerate(runs):
            nxt = step[2] + (runs[s_ + 1][1] if s_ + 1 < len(runs) else 0.0)
            t += max(step[0], o * nxt) + (1 - o) * nxt
            hidden += min(step[0], o * nxt)
        cs = sum(x[0] for x in runs)
        ms = sum(x[1] + x[2] for x in runs)
        if t > total:
            total, comp_sum, comm_sum, exposed = t, cs, ms, ms - hidden
    runtime = model.plan_seconds + sum(model.launch_overhead(p) for p in (*launch_points, *held.launches))
    if model.serial_tasks:  # a node's task bodies run one after the other, over all its launches
        node_tasks: dict[int, int] = defaultdict(int)
        for r, n_ in (*tasks_total.items(), *held.tasks.items()):
            node_tasks[model.node_of(r)] += n_
        runtime += max(node_tasks.values(), default=0) * model.task_seconds
    total += runtime
    warmup = min(comp_sum, model.warmup_seconds)  # the critical processor's first compute at half rate
    total += warmup
    # memory
    peak_real: dict[int, int] = defaultdict(int)
    for c, r in bind.items():
        peak_real[r] += int(peak_abs.get(c, 0))
    # what each real processor receives as the plan's analysis counts it (its abstract processors' reads), split
    # as explain()'s traffic table splits it: nodes are the plan's machine's outermost level (a flat machine's
    # grid is a grid of nodes); without the analysis (exact=False), the model's copies inside and between its nodes
    split: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # inside the node, other nodes, stores
    if analysis is not None:
        for transfer in analysis.traffic.transfers:
            if transfer.kind == "read" and transfer.receiver is not None:
                part = split[bind.get(transfer.receiver, 0)]
                part[2 if transfer.store else 0 if transfer.inside_node else 1] += transfer.nbytes
    else:
        for r in range(real):
            split[r] = [intra_total.get(r, 0.0), inter_total.get(r, 0.0), 0.0]
    flat = machine is not None and machine.levels == 1  # its processors are its nodes: no node of the model shown
    per = []
    for r in range(real):
        inside, between, store = split.get(r, (0.0, 0.0, 0.0))
        per.append({"processor": r, "node": model.node_of(r), "points": points_total.get(r, 0),
                    "tasks": tasks_total.get(r, 0),
                    "compute_seconds": comp_total.get(r, 0.0), "intra_bytes": intra_total.get(r, 0.0),
                    "inter_bytes": inter_total.get(r, 0.0), "reduced_bytes": red_total.get(r, 0.0),
                    "inside_node_bytes": inside, "between_nodes_bytes": between, "store_bytes": store,
                    "received_bytes": inside + between + store,
                    "shown_node": None if flat else model.node_of(r),
                    "peak_bytes": peak_real.get(r, 0)})
    used = sum(1 for r in range(real) if points_total.get(r, 0))
    return Prediction(model.name, used, real, total, comp_sum, comm_sum, exposed, runtime, len(launches),
                      flops_total, max(peak_real.values(), default=0), proc.memory, tuple(per), tuple(step_rows),
                      points=sum(points_total.values()), tasks=sum(tasks_total.values()), warmup_seconds=warmup)


@dataclass
class _Tile:
    """A tile of one launch: its bytes, where it lives, and per real processor the bytes it lacks and its readers."""

    size: float
    tensor: int = -1
    box: tuple[tuple[int, int], ...] = ()
    need: dict[int, float] = field(default_factory=dict)
    readers: dict[int, set[tuple[int, ...]]] = field(default_factory=lambda: defaultdict(set))
    holders: set[int] = field(default_factory=set)  # set when written by an earlier launch

    def add(self, real: int, abstract: tuple[int, ...], nbytes: float) -> None:
        self.need[real] = max(self.need.get(real, 0.0), nbytes)
        self.readers[real].add(abstract)


@dataclass
class _HeldWork:
    """What the runtime adds to a plan's launches for a held reduction (`distal.lower.reductions.HeldReduction`):
    per launch and real processor, seconds of the zero fill of its partials (before the first launch) and of
    its folds (after a stage's last launch); the points of the runtime's own launches (the fill, one pinned
    launch per fold); the fold tasks per real processor, in all and per launch."""

    seconds: list[dict[int, float]]
    launches: list[int] = field(default_factory=list)
    tasks: dict[int, int] = field(default_factory=dict)
    fold_tasks: list[dict[int, int]] = field(default_factory=list)


def _held_work(plan: PlanBase, model: MachineModel, bind: Mapping[tuple[int, ...], int], count: int) -> _HeldWork:
    """A held reduction's work besides the plan's launches, as the runtime does it each run
    (runtime/_execute.py, runtime/_reduce.py): its partials (one `row` per processor of the plan's machine,
    kept with the plan) are zeroed by one Legate fill before the launches, and after each stage every processor
    that added into the output adds its partial into its box by a launch pinned to it (one point, one task:
    the partial read, the box read and written, at the processor's streaming rate of element-wise work)."""
    work = _HeldWork([defaultdict(float) for _ in range(count)], fold_tasks=[defaultdict(int) for _ in range(count)])
    red = plan.reduction
    machine = plan.machine
    if not isinstance(red, HeldReduction) or machine is None or count == 0:
        return work
    proc = model.processor
    stream = proc.streaming.get("GENERIC", proc.bandwidth)
    itemsize = plan.tensors[red.tensor].itemsize
    partial = float(math.prod(red.row)) * itemsize
    coords = [tuple(c) for c in machine.coords()]
    for c in coords:  # one fill (a Legate fill, no task) writes every processor's partial
        work.seconds[0][bind.get(c, 0)] += partial / stream
    work.launches.append(1)
    tasks: dict[int, int] = defaultdict(int)
    for index, points in held_folds(plan, red):
        for device, box in points:
            r = bind.get(coords[device], 0) if device < len(coords) else 0
            nbytes = float(math.prod(max(hi - lo, 0) for lo, hi in box)) * itemsize
            work.seconds[index][r] += 3 * nbytes / stream
            work.fold_tasks[index][r] += 1
            tasks[r] += 1
            work.launches.append(1)
    work.tasks = dict(tasks)
    return work


def _nearest_holder(model: MachineModel, holders: set[int], to: int) -> int:
    return min(holders, key=lambda h: (model.distance(h, to), h))


def _synthesized_seconds(plan: PlanBase, model: MachineModel) -> float:
    """The synthesized reduction program's time on `model`'s links.

    The lowering ranked the program on the links `distal.reduction` knows for the plan's machine
    (`system_from_machine`'s defaults). On a model whose node is the plan's inner level (a machine of
    nodes x processors, `per_node` processors each, not one shared memory), the same lowered steps are
    re-timed on the model's own links (`distal.reduction.machines.retimed_seconds`: the node's port
    `inter` between nodes, its outermost link `intra` inside one); otherwise the lowering's time stands.
    """
    red = plan.reduction
    assert red is not None
    machine = plan.machine
    if (red.plan is not None and machine is not None and machine.levels == 2 and not machine.params
            and node_size(machine) == model.per_node and not model.shared_memory):
        from distal.reduction.machines import retimed_seconds  # the synthesizer loads only for its plans

        return retimed_seconds(red.plan, red.nbytes, (model.inter, model.intra))[0]
    return float(red.seconds)

