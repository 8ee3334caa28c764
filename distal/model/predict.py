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
- communication before the step: the bytes of its tiles it does not hold,
  split by where they are held (by an abstract processor on the same real
  processor: free; on the same node: the node's `intra` link; elsewhere: the
  node's `inter` port, shared by the node's processors). A tile read by several
  processors is sent that many times by its holder, whose port then bounds
  the step (a broadcast costs the sender, a systolic shift does not);
- reductions after the step: the bytes a processor reduces into tiles it does
  not hold, sent to their holders, which receive one contribution per sender
  (a fan-in, latency in a tree of log2 depth).

The critical path runs over the steps in order: step s starts after step s-1
computed and after its own data arrived; the runtime overlaps `overlap` of
the data for step s+1 (and the reductions of step s) with step s's compute:
T = comm_0 + sum_s max(comp_s, o * next_s) + (1 - o) * next_s, next_s being the
communication of step s+1 and the reductions of step s, plus the runtime's
cost per launch and per plan run. Peak memory per real processor is the sum of the peaks
(`distal.lower.explain.stats`) of the abstract processors bound to it,
checked against the processor's memory.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from distal.model.hardware import MachineModel, ModelError
from distal.notation.ast import Access, BinaryOp, Literal, Neg, Sum
from distal.notation.visit import ExprVisitor

if TYPE_CHECKING:
    from distal.lower.plan import Plan

__all__ = ["Prediction", "predict"]


@dataclass(frozen=True)
class Prediction:
    """A plan's predicted time on a model, with its parts.

    `seconds` is the critical path; `compute_seconds` and `comm_seconds` sum
    the slowest processor's compute and communication over the steps;
    `exposed_comm_seconds` is what overlap did not hide. `processors` holds,
    per real processor, compute seconds, bytes received inside and between
    nodes, bytes reduced, points run, Legate tasks run (`tasks`: the points
    grouped as the runtime groups them) and peak bytes. `idle` counts real
    processors that run no launch point.
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
    points: int = 0  # launch points over all launches
    tasks: int = 0  # Legate tasks they run as (`distal.lower.grouping.plan_tasks`)

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
        return (f"predicted {_fmt(self.seconds)} on {self.model} ({self.processors_total} processors{idle}): "
                f"compute {_fmt(self.compute_seconds)}, communication {_fmt(self.comm_seconds)} "
                f"({_fmt(self.exposed_comm_seconds)} not hidden), runtime {_fmt(self.launch_seconds)} over "
                f"{self.steps} step(s) of {self.points} point(s) in {self.tasks} Legate task(s); peak memory "
                f"{_mib(self.peak_bytes)} of {_mib(self.memory_bytes)} per processor ({source}; {fit})")

    def describe(self) -> str:
        lines = [self.summary()]
        for row in self.per_processor[:16]:
            lines.append(f"  processor {row['processor']} (node {row['node']}): {row['points']} point(s) in "
                         f"{row['tasks']} Legate task(s), "
                         f"compute {_fmt(row['compute_seconds'])}, receives {_mib(row['intra_bytes'])} inside "
                         f"the node and {_mib(row['inter_bytes'])} from other nodes, reduces "
                         f"{_mib(row['reduced_bytes'])}, peak {_mib(row['peak_bytes'])}")
        if len(self.per_processor) > 16:
            lines.append(f"  ... {len(self.per_processor) - 16} more processors")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "seconds": self.seconds, "compute_seconds": self.compute_seconds,
                "comm_seconds": self.comm_seconds, "exposed_comm_seconds": self.exposed_comm_seconds,
                "launch_seconds": self.launch_seconds, "steps": self.steps, "flops": self.flops,
                "peak_bytes": self.peak_bytes, "memory_bytes": self.memory_bytes, "fits": self.fits,
                "processors": self.processors_total, "idle": self.idle, "points": self.points, "tasks": self.tasks}


def _fmt(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


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


def _iteration_dims(plan: Plan) -> tuple[list[tuple[int, int]], int]:
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


def _leaf_kind(group: Any) -> str:
    leaves = getattr(group.kernel, "leaves", ())
    return leaves[0][1].name if leaves else "GENERIC"


def _meet(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    return math.prod(max(min(ah, bh) - max(al, bl), 0) for (al, ah), (bl, bh) in zip(a, b))


def explain_lines(plan: Plan, model: MachineModel | None = None, data: dict[str, Any] | None = None) -> list[str]:
    """The lines `plan.explain()` ends with: the predicted time and its parts.

    On this machine's model the plan is timed on the real processors Legate is configured with (the run that
    happens: its points bound to them, grouped into the tasks explain() counts); on another model, on one
    processor per point of the plan's machine.
    """
    if model is None:
        from distal.model.calibrate import this_machine

        model = this_machine()
    source = ""
    processors: int | None = None
    if model.name == "this-machine":  # compare with the memory Legate will have, not the host's share
        from distal.lower.grouping import configured_processors

        kind = plan.machine.kind if plan.machine is not None else "cpu"
        processors = int(data["real_processors"]) if data is not None else configured_processors(kind)
        from distal.model.sysmem import configured_memory

        conf = configured_memory()
        if conf is not None:
            model = model.with_(processor=replace(model.processor, memory=max(conf.per_processor, 1)))
            source = f"{conf.source}, shared by {conf.processors} CPU processor(s)"
        else:
            source = "the calibrated host memory per core: LEGATE_CONFIG gives no --sysmem"
    try:
        got = predict(plan, model, processors, data)
    except ModelError as exc:
        return [f"  predicted time: none ({exc.message})"]
    if source:
        got = replace(got, memory_source=source)
    lines = [f"  predicted time ({model.name} model, distal.model): {got.summary()}"]
    lines.extend("  " + x for x in got.describe().splitlines()[1:])
    return lines


def predict(plan: Plan, model: MachineModel, processors: int | None = None,
            data: dict[str, Any] | None = None, exact: bool = True) -> Prediction:
    """The predicted time of `plan` on `model` with `processors` real processors (default: one per grid point).

    `data` is `distal.lower.explain.stats(plan)` when the caller has it already.
    With `exact=False` the bytes are not taken from `stats` (whose exact
    accounting of what earlier launches left behind costs minutes on plans of
    thousands of points) but estimated from the formats alone: every tile
    element a processor's format does not give it is received, every launch.
    That is what plans of hundreds of nodes use (bench/weak_scaling.py).
    """
    from distal.lower.explain import _Owners, stats
    from distal.lower.grouping import plan_tasks
    from distal.lower.plan import Privilege

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
    owners = _Owners(plan)
    if exact and data is None:
        data = stats(plan)  # exact byte counts (distal.lower.explain), split here by link
    dims, ops_per_iter = _iteration_dims(plan)
    proc = model.processor
    nodes_used = len({model.node_of(r) for r in bind.values()})

    def holds(n: int, q: tuple[int, ...]) -> list[tuple[tuple[int, int], ...]]:
        if owners.held[n] is None:  # the global store: with processor 0
            return [tuple((0, d) for d in plan.tensors[n].shape)] if bind.get(q, -1) == 0 else []
        return owners.boxes(n, q)

    def local_to(n: int, procs: list[tuple[int, ...]], box: tuple[tuple[int, int], ...], size: int) -> int:
        got = 0
        for q in procs:
            for b in holds(n, q):
                got += _meet(box, b)
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
    # another node), and the tiles it reduces; the amounts then come from `stats`
    red_est: dict[tuple[int, ...], float] = defaultdict(float)
    extra_peak: dict[tuple[int, ...], float] = defaultdict(float)  # estimated: received + reduction buffers
    per_launch: list[Any] = []
    kinds: list[str] = []
    per_step: list[tuple[dict[int, float], dict[int, float], dict[int, float]]] = []
    for group, launch in launches:
        kinds.append(_leaf_kind(group))
        raw: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])  # flops, bytes touched, points
        where: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # real, node, other
        buffers: dict[tuple[int, ...], float] = defaultdict(float)
        red_where: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0.0])  # node, other
        readers: dict[tuple[int, Any], _Tile] = {}  # (tensor, color) -> bytes, copies inside/between nodes
        fanin: dict[tuple[int, Any], _Tile] = {}
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
                mine = local_to(op.tensor, [a], box, size)
                if mine >= size:
                    continue
                same_real = max(mine, local_to(op.tensor, on_real[r], box, size))
                same_node = max(same_real, local_to(op.tensor, on_node[node], box, size))
                nb = info.itemsize
                key = (op.tensor, op.color(point))
                if op.privilege is Privilege.REDUCE_ADD:
                    buffers[a] += size * nb
                    red_where[a][0] += (same_node - mine) * nb
                    red_where[a][1] += (size - same_node) * nb
                    red_est[a] += (size - mine) * nb
                    tile = fanin.setdefault(key, _Tile(size * nb))
                    tile.intra += 1
                    tile.who.add(r)
                elif op.privilege is not Privilege.WRITE:
                    w = where[a]
                    w[0] += (same_real - mine) * nb
                    w[1] += (same_node - same_real) * nb
                    w[2] += (size - same_node) * nb
                    tile = readers.setdefault(key, _Tile(size * nb))
                    tile.intra += 1 if same_node > same_real else 0
                    tile.inter += 1 if size > same_node else 0
                    tile.who.add(r)
            iters = 1
            for n, d in dims:
                got_box = boxes.get(n)
                iters *= (got_box[d][1] - got_box[d][0]) if got_box is not None else plan.tensors[n].shape[d]
            flops = float(iters * ops_per_iter)
            flops_total += flops
            part = raw[r]
            part[0] += flops
            part[1] += touched
            part[2] += 1
            points_total[r] += 1
        for a, w in where.items():
            extra_peak[a] = max(extra_peak[a], sum(w) + buffers.get(a, 0.0))
        per_launch.append((raw, where, red_where, readers, fanin))
    # a point's tiles may be larger than what its leaf computes (a dimension handed whole, the leaf picking
    # its part): the FLOPs are scaled so that all points together compute the statement once
    whole = float(math.prod(plan.tensors[n].shape[d] for n, d in dims) * ops_per_iter)
    scale = min(1.0, whole / flops_total) if flops_total > 0 else 1.0
    flops_total *= scale
    comps: list[dict[int, float]] = []
    # processors busy at once: launches on disjoint processors (Cannon's rows, say) run at the same time, so a
    # node's leaves share its cores among every processor the plan runs points on, not only one launch's
    busy: dict[int, int] = defaultdict(int)
    for r in {r for raw, *_rest in per_launch for r in raw}:
        busy[model.node_of(r)] += 1
    for kind, (raw, *_rest), counts in zip(kinds, per_launch, launch_tasks, strict=True):
        comp: dict[int, float] = {}
        for r, (f, moved, npoints) in raw.items():
            # the leaf's rate is the one of a call of this launch's size (one call per point)
            rate = proc.rate(kind, f * scale / max(npoints, 1))
            if kind in proc.bandwidth_bound:
                comp[r] = proc.leaf_seconds(kind, f * scale, moved * scale)
            else:
                comp[r] = max(f * scale / rate, moved * scale / proc.bandwidth)
        if model.cores is not None:  # more busy processors than cores: the leaves share the cores
            for r in comp:
                comp[r] *= max(1.0, busy[model.node_of(r)] / model.cores)
        if not model.serial_tasks:  # each processor pays for its own tasks (serial: the runtime term below)
            for r in raw:
                comp[r] += counts.get(r, 0) * model.task_seconds
        for r, t in comp.items():
            comp_total[r] += t
        comps.append(comp)
    if data is not None:
        reduced_abs = data["reduced_bytes"]
        peak_abs = data["peak_bytes"]
    else:
        reduced_abs = {_key(a): b for a, b in red_est.items()}
        peak_abs = {_key(c): int(sum(owners.share(n, c) * t.itemsize for n, t in enumerate(plan.tensors))
                                 + extra_peak.get(c, 0.0)) for c in bind}
    for index, (comp, (_raw, where, red_where, readers, fanin)) in enumerate(zip(comps, per_launch)):
        if data is not None:
            exact_recv = data["launches"][index]["received_bytes"]  # per abstract processor
        else:
            exact_recv = {_key(a): sum(w) for a, w in where.items()}
        recv_intra: dict[int, float] = defaultdict(float)
        recv_inter_node: dict[int, float] = defaultdict(float)
        msgs_intra: dict[int, int] = defaultdict(int)
        msgs_inter_node: dict[int, int] = defaultdict(int)
        for a in set(where) | {c for c in bind if exact_recv.get(_key(c))}:
            got = float(exact_recv.get(_key(a), 0))
            if not got:
                continue
            _, near, other = where.get(a, [0.0, 0.0, 0.0])
            est = sum(where.get(a, [0.0, 0.0, 0.0]))
            r = bind[a]
            node = model.node_of(r)
            if est > 0:  # split the exact bytes as the estimate splits them
                intra, inter = got * near / est, got * other / est
            else:  # written by another processor in an earlier launch
                intra, inter = (got, 0.0) if nodes_used == 1 else (0.0, got)
            recv_intra[r] += intra
            recv_inter_node[node] += inter
            intra_total[r] += intra
            inter_total[r] += inter
            msgs_intra[r] += 1 if intra else 0
            msgs_inter_node[node] += 1 if inter else 0
        recv: dict[int, float] = defaultdict(float)
        for r in set(recv_intra) | {x for n in recv_inter_node for x in _reals_of_node(n, on_node, bind)}:
            node = model.node_of(r)
            t = model.intra.seconds(recv_intra.get(r, 0.0), msgs_intra.get(r, 0) or 1)
            t += model.inter.seconds(recv_inter_node.get(node, 0.0), msgs_inter_node.get(node, 0) or 1)
            recv[r] = t
        for tile in readers.values():  # the holder's port sends one copy per reader
            t = model.intra.seconds(tile.size * tile.intra) + model.inter.seconds(tile.size * tile.inter)
            for r in tile.who:
                if r in recv:
                    recv[r] = max(recv[r], t)
        red_intra: dict[int, float] = defaultdict(float)
        red_inter_node: dict[int, float] = defaultdict(float)
        for a, (near, far) in red_where.items():
            total = float(reduced_abs.get(_key(a), 0))
            est = red_est.get(a, 0.0)
            share = total / est if est > 0 else 0.0
            r = bind[a]
            red_intra[r] += near * share
            red_inter_node[model.node_of(r)] += far * share
            red_total[r] += (near + far) * share
        red: dict[int, float] = defaultdict(float)
        for r in set(red_intra) | {x for n in red_inter_node for x in _reals_of_node(n, on_node, bind)}:
            t = model.intra.seconds(red_intra.get(r, 0.0))
            t += model.inter.seconds(red_inter_node.get(model.node_of(r), 0.0))
            if t > 0:
                red[r] = t
        for tile in fanin.values():  # the holder receives one contribution per sender, in a tree
            link = model.inter if nodes_used > 1 else model.intra
            t = math.ceil(math.log2(tile.intra + 1)) * link.latency + tile.intra * tile.size / link.bandwidth
            for r in tile.who:
                if r in red:
                    red[r] = max(red[r], t)
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
    runtime = model.plan_seconds + model.launch_seconds * len(launches)
    if model.serial_tasks:  # a node's task bodies run one after the other, over all its launches
        node_tasks: dict[int, int] = defaultdict(int)
        for r, n_ in tasks_total.items():
            node_tasks[model.node_of(r)] += n_
        runtime += max(node_tasks.values(), default=0) * model.task_seconds
    total += runtime
    # memory
    peak_real: dict[int, int] = defaultdict(int)
    for c, r in bind.items():
        peak_real[r] += int(peak_abs.get(_key(c), 0))
    per = []
    for r in range(real):
        per.append({"processor": r, "node": model.node_of(r), "points": points_total.get(r, 0),
                    "tasks": tasks_total.get(r, 0),
                    "compute_seconds": comp_total.get(r, 0.0), "intra_bytes": intra_total.get(r, 0.0),
                    "inter_bytes": inter_total.get(r, 0.0), "reduced_bytes": red_total.get(r, 0.0),
                    "peak_bytes": peak_real.get(r, 0)})
    used = sum(1 for r in range(real) if points_total.get(r, 0))
    return Prediction(model.name, used, real, total, comp_sum, comm_sum, exposed, runtime, len(launches),
                      flops_total, max(peak_real.values(), default=0), proc.memory, tuple(per), tuple(step_rows),
                      points=sum(points_total.values()), tasks=sum(tasks_total.values()))


@dataclass
class _Tile:
    """A tile of one launch: its bytes, how many copies cross a node's inside or its port, who uses it."""

    size: float
    intra: int = 0
    inter: int = 0
    who: set[int] = field(default_factory=set)


def _key(c: Sequence[int]) -> str:
    return "(" + ",".join(str(x) for x in c) + ")"


def _reals_of_node(node: int, on_node: dict[int, list[tuple[int, ...]]], bind: dict[tuple[int, ...], int]) -> set[int]:
    """The real processors of a node that hold abstract processors."""
    return {bind[c] for c in on_node.get(node, [])}
