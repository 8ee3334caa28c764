"""Machine models as data: processors, their memory and rates, the levels of links between them.

A `MachineModel` describes the real machine a plan runs on, as the paper's
section 7 runs DISTAL: one processor per GPU or per CPU socket, each with its
own memory (`ProcessorModel`), grouped into nodes of `per_node` processors.
The levels inside a node are `distal.machine` levels (`levels`, outermost
first: a Lassen node's two POWER9 sockets joined by the X-bus, each socket's
two V100s joined by NVLink); the outermost one's link is `intra` (with no
levels, `intra` joins the node's processors), and `inter` is the node's port
to the network (InfiniBand), shared by its processors. `hierarchy(nodes)`
is the whole machine as `distal.machine` describes it (the nodes, then the
levels of a node), which the reduction synthesizer reads as it is
(`distal.reduction.System(model.hierarchy(2))`). A copy between two processors uses the link of the innermost
level that holds both, through one port of the sender and one of the
receiver (`distance`, `link_at`, `port`); `distal.model.transfers` times the
copies of a launch on those ports.

How a tile that many processors read reaches them (`broadcast`) and how
contributions to one tile are summed (`fold`) follow the runtime:

- `broadcast="nearest"`: Legion copies each reader's tile from a valid
  instance that the mapper ranks first; Legate's mapper ranks the valid
  instances by the bandwidth of their memory to the destination
  (`BaseMapper::legate_select_sources`), and an instance filled for an
  earlier reader is valid for later ones, so each holder serves the nearest
  waiting reader and the holders double every round;
- `broadcast="tree"`: a collective instance (Legate asks Legion for one when
  every point reads the whole store or a promoted one, `check_collective_regions`):
  Legion broadcasts along a tree of radix `radix` (LEGION_COLLECTIVE_RADIX, 8)
  across nodes and a spanning tree inside a node;
- `broadcast="owner"`: every reader copies from the holder (the upper bound);
- `fold="fold"`: every contribution is folded into the holder's instance
  (Legion's reduction copies; the "hammer" reduction of its collective
  views); `fold="tree"`: Legion's collective reduction, a tree of radix
  `radix`.

The runtime's costs: `plan_seconds` per run, `launch_seconds` per launch
plus `launch_point_seconds` per point of the launch (the issuing runtime
handles every point: the cost of a launch grows with its points) plus
`launch_log_seconds` per point and doubling of the launch's points (P log2 P,
where measurements show the runtime's analysis growing faster than the
points: `distal.model.runtime_costs`), `task_seconds` per Legate task a
processor runs (`launch_overhead`).

Presets (constants and their public sources: docs/scaling.md, "The machines"):

- `lassen_gpu()`: a Lassen node's 4 V100 16 GB as 4 processors, two per POWER9
  socket joined by NVLink 2.0, the sockets by the X-bus, the node's dual-rail
  EDR InfiniBand out (of which Legion reaches 18 GB/s from GPU memory, paper 7.1.2);
- `lassen_cpu()`: its 2 POWER9 sockets as 2 processors ("we model each CPU
  socket as an abstract DISTAL processor", 7.1.1), X-bus inside, EDR out;
- `dgx_a100()`: a DGX A100-like node: 8 A100 40 GB on NVSwitch, 8 HDR ports;
- `this_machine()`: the host distal runs on, its rates measured by a short
  calibration (`distal.model.calibrate`) and cached.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from distal.errors import DistalError
from distal.machine.grid import KINDS
from distal.machine.level import Level
from distal.machine.links import (
    EDR_LASSEN,
    HDR_DGX_A100,
    NVLINK2_LASSEN,
    NVSWITCH_A100,
    XBUS_POWER9,
    Link,
)

__all__ = [
    "BROADCASTS",
    "FOLDS",
    "LEAF_KINDS",
    "MATRIX_KINDS",
    "MachineModel",
    "ModelError",
    "ProcessorModel",
    "dgx_a100",
    "lassen_cpu",
    "lassen_gpu",
]

#: The leaf kinds a processor has a rate for (`distal.leaf` names).
LEAF_KINDS = ("GEMM", "TTV", "TTM", "MTTKRP", "INNERPROD", "GENERIC")
#: The leaf kinds that run as matrix products (BLAS's gemm), whose rate depends on the element type.
MATRIX_KINDS = ("GEMM", "TTM", "MTTKRP")
#: The element types BLAS multiplies in single precision (its s- and c- routines).
SINGLE = ("float32", "complex64")

#: How a tile read by several processors reaches them (see the module docstring).
BROADCASTS = ("nearest", "tree", "owner")
#: How contributions to one tile are summed into it.
FOLDS = ("fold", "tree")

GiB = 1 << 30
#: The huge page (x86-64 transparent huge pages): the part of a reduction instance in whole huge pages is made of
#: fresh pages the kernel zeroes (`MachineModel.reduction_page_seconds`).
HUGE_PAGE = 2 << 20


class ModelError(DistalError):
    """A machine model that is malformed, or a plan the model cannot time."""


@dataclass(frozen=True)
class ProcessorModel:
    """One processor: its kind, achieved FLOP/s per leaf kind, memory bandwidth (bytes/s) and capacity.

    A leaf's time on a tile is the larger of its FLOPs at the leaf kind's rate
    and the bytes of its tiles at the memory bandwidth (a roofline). Leaf
    kinds in `bandwidth_bound` (TTV, innerprod: one or two FLOPs per element
    read) take the bytes of their tiles at the memory bandwidth alone, or at
    their own measured streaming rate (`streaming`, bytes/s) when given; the
    other kinds' roofline takes their bytes at their streaming rate too when
    they have one (this machine's element-wise generic leaf).
    `curves` gives, per leaf kind, FLOP/s measured at a few sizes as
    (FLOPs of one leaf call, FLOP/s) pairs: the rate of a call is
    interpolated between them in log FLOPs, and held at the ends (BLAS runs
    small tiles well below its rate on large ones). The rates are of 8-byte
    floats (double precision); `single` is the rate of the matrix-product kinds
    (`MATRIX_KINDS`) in single precision (`SINGLE`: float32, complex64) over
    that (twice as many lanes per vector on a CPU: 2.1-3.0 measured here).

    >>> p = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e9), 1e10, 1 << 30,
    ...                    curves={"GEMM": ((1e6, 1e9), (1e8, 3e9))})
    >>> p.rate("GEMM", 1e5), p.rate("GEMM", 1e7), p.rate("GEMM", 1e9), p.rate("TTM", 1e7)
    (1000000000.0, 2000000000.0, 3000000000.0, 1000000000.0)
    >>> replace(p, single=2.0).rate("GEMM", 1e7, "float32"), replace(p, single=2.0).rate("GENERIC", 1e7, "float32")
    (4000000000.0, 1000000000.0)
    """

    kind: str
    flops: Mapping[str, float]
    bandwidth: float
    memory: int
    curves: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    bandwidth_bound: frozenset[str] = frozenset()
    streaming: Mapping[str, float] = field(default_factory=dict)
    single: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ModelError(f"expected a processor kind ({', '.join(KINDS)}), but found {self.kind!r}")
        missing = [k for k in LEAF_KINDS if k not in self.flops]
        if missing:
            raise ModelError(f"expected a FLOP/s rate for every leaf kind ({', '.join(LEAF_KINDS)}), "
                             f"but found none for {', '.join(missing)}")
        bad = {k: v for k, v in self.flops.items() if not v > 0}
        if bad or not self.bandwidth > 0 or not self.memory > 0 or not self.single > 0:
            raise ModelError(f"expected positive rates, bandwidth, memory and single-precision rate (single), but "
                             f"found flops={dict(self.flops)}, bandwidth={self.bandwidth!r}, "
                             f"memory={self.memory!r}, single={self.single!r}")
        object.__setattr__(self, "flops", MappingProxyType(dict(self.flops)))
        curves: dict[str, tuple[tuple[float, float], ...]] = {}
        for leaf, points in self.curves.items():
            pts = tuple(sorted((float(f), float(r)) for f, r in points))
            if leaf not in LEAF_KINDS or not pts or any(not (f > 0 and r > 0) for f, r in pts):
                raise ModelError(f"expected a leaf kind ({', '.join(LEAF_KINDS)}) with positive (FLOPs, FLOP/s) "
                                 f"points, but found {leaf!r}: {points!r}")
            curves[leaf] = pts
        object.__setattr__(self, "curves", MappingProxyType(curves))
        unknown = set(self.bandwidth_bound) - set(LEAF_KINDS)
        if unknown:
            raise ModelError(f"expected bandwidth-bound leaf kinds among {', '.join(LEAF_KINDS)}, "
                             f"but found {', '.join(sorted(unknown))}")
        object.__setattr__(self, "bandwidth_bound", frozenset(self.bandwidth_bound))
        bad_streams = {k: v for k, v in self.streaming.items() if k not in LEAF_KINDS or not v > 0}
        if bad_streams:
            raise ModelError(f"expected positive streaming bandwidths of leaf kinds, but found {bad_streams}")
        object.__setattr__(self, "streaming", MappingProxyType(dict(self.streaming)))

    def rate(self, leaf: str, flops: float | None = None, dtype: Any = None) -> float:
        """FLOP/s of leaf kind `leaf` on a call of `flops` FLOPs (interpolated on its curve when it has one), on
        elements of `dtype` (None: 8-byte floats; a matrix-product kind in single precision runs `single` times
        as fast)."""
        narrow = self.single if leaf in MATRIX_KINDS and dtype is not None and np.dtype(dtype).name in SINGLE \
            else 1.0
        return narrow * self._rate(leaf, flops)

    def _rate(self, leaf: str, flops: float | None) -> float:
        pts = self.curves.get(leaf)
        if not pts or flops is None or flops <= 0:
            return self.flops.get(leaf, self.flops["GENERIC"])
        if flops <= pts[0][0]:
            return pts[0][1]
        if flops >= pts[-1][0]:
            return pts[-1][1]
        for (f0, r0), (f1, r1) in itertools.pairwise(pts):
            if f0 <= flops <= f1:
                w = (math.log(flops) - math.log(f0)) / (math.log(f1) - math.log(f0))
                return r0 + w * (r1 - r0)
        raise AssertionError("unreachable: flops lies between the curve's ends")

    def leaf_seconds(self, leaf: str, flops: float, nbytes: float, dtype: Any = None) -> float:
        """One leaf call's time: bytes at the bandwidth for a bandwidth-bound kind, else the roofline (its FLOPs
        at `rate` for elements of `dtype`)."""
        if leaf in self.bandwidth_bound:
            return nbytes / self.streaming.get(leaf, self.bandwidth)
        return max(flops / self.rate(leaf, flops, dtype), nbytes / self.streaming.get(leaf, self.bandwidth))


@dataclass(frozen=True)
class MachineModel:
    """A real machine: nodes of `per_node` processors, the levels of links between them, the runtime's costs.

    `levels` are the levels inside a node, outermost first (`distal.machine.Level`:
    `Level("socket", 2, XBUS_POWER9)`, then `Level("gpu", 2, NVLINK2_LASSEN)`):
    their sizes multiply to `per_node`, the outermost one's link is `intra`, and
    a copy between two processors crosses the link of the innermost level
    whose unit holds both. With no levels, `intra` joins the node's
    processors (`node_levels`). `inter` is a node's port to the network, shared by its processors (the
    network beyond the ports is taken as non-blocking). `broadcast` and
    `fold` say how the runtime delivers a tile read by several processors and
    sums contributions to one tile (module docstring), `radix` the fan-out of
    the runtime's collective trees. `launch_seconds` is paid once per launch
    and `launch_point_seconds` per point of it (the runtime issuing it),
    `task_seconds` per Legate task a processor runs. `overlap` in [0, 1] is
    the share of a step's communication hidden behind the previous step's
    computation. `cores`, when set, is how many cores the processors of a
    node share (this machine: more Legate CPU processors than cores run
    slower). `plan_seconds` is paid once per run of a plan (issuing it,
    reading its output back). With `serial_tasks` the per-task cost is paid
    one task after the other by the whole node (Python task bodies under one
    interpreter lock per process, as Legate runs them). With `shared_memory`
    the processors of a node share one memory (Legate's CPU processors of one
    process and its system memory): a tile that one instance holds whole is
    read in place by every processor, and only a tile assembled from several
    instances is copied, whole, into a new one. Legate's own reduction (REDUCE_ADD, not held or
    synthesized) gives each point of a launch a reduction instance of its tile, made afresh each run,
    filled with zeros and folded into the output's tile (`reduction_seconds`):
    `reduction_instance_seconds` per instance, and `reduction_page_seconds` per byte of the instance that
    fills whole huge pages (`HUGE_PAGE`, which the kernel zeroes when they are first touched: on this
    machine's virtual machine, far slower than the memory's bandwidth); 0 on the presets (not measured).
    `warmup_seconds`: a run's first `warmup_seconds` of compute (on its critical processor) go at half rate,
    one more `min(compute, warmup_seconds)` per run: what a run pays when the process was idle before it (on
    this machine's virtual machine measured after 2-60 ms idle, not in back-to-back runs); 0 on the presets.

    >>> m = lassen_gpu()
    >>> [m.distance(0, q) for q in range(6)]  # same GPU, same socket, same node, other node
    [0, 1, 2, 2, 3, 3]
    >>> m.link_at(1).name, m.link_at(2).name, m.link_at(3).name
    ('nvlink2', 'xbus', 'edr_fb')
    >>> m.port(1, 1), m.port(1, 2), m.port(1, 3)  # GPU 1's own NVLink, its socket's X-bus, its node's port
    ((1, 1), (2, 0), (3, 0))
    """

    name: str
    processor: ProcessorModel
    per_node: int
    intra: Link
    inter: Link
    launch_seconds: float = 50e-6
    task_seconds: float = 20e-6
    overlap: float = 0.5
    cores: int | None = None
    notes: tuple[str, ...] = field(default=())
    plan_seconds: float = 0.0
    serial_tasks: bool = False
    levels: tuple[Level, ...] = ()
    broadcast: str = "nearest"
    fold: str = "fold"
    radix: int = 8
    launch_point_seconds: float = 0.0
    shared_memory: bool = False
    launch_log_seconds: float = 0.0
    reduction_instance_seconds: float = 0.0
    reduction_page_seconds: float = 0.0
    warmup_seconds: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.per_node, bool) or not isinstance(self.per_node, int) or self.per_node < 1:
            raise ModelError(f"expected a positive number of processors per node, but found {self.per_node!r}")
        if not 0.0 <= self.overlap <= 1.0:
            raise ModelError(f"expected an overlap in [0, 1], but found {self.overlap!r}")
        if min(self.launch_seconds, self.task_seconds, self.plan_seconds, self.launch_point_seconds,
               self.launch_log_seconds, self.reduction_instance_seconds, self.reduction_page_seconds,
               self.warmup_seconds) < 0:
            raise ModelError(f"expected non-negative runtime costs, but found launch {self.launch_seconds!r}, "
                             f"per point {self.launch_point_seconds!r}, per point and doubling "
                             f"{self.launch_log_seconds!r}, task {self.task_seconds!r}, plan {self.plan_seconds!r}, "
                             f"reduction instance {self.reduction_instance_seconds!r}, its fresh pages "
                             f"{self.reduction_page_seconds!r} per byte")
        object.__setattr__(self, "levels", tuple(self.levels))
        if any(not isinstance(lv, Level) for lv in self.levels):
            raise ModelError(f"expected distal.machine levels inside a node, but found {self.levels!r}")
        if self.levels and (math.prod(lv.size for lv in self.levels) != self.per_node
                            or self.levels[0].link != self.intra):
            raise ModelError(f"expected node levels whose sizes multiply to the {self.per_node} processors of a "
                             f"node, the outermost joined by {self.intra}, but found "
                             f"{', '.join(map(str, self.levels))}")
        kinds = {lv.kind for lv in self.levels} - {None, self.processor.kind}
        if kinds:
            raise ModelError(f"expected node levels of {self.processor.kind} processors, but found "
                             f"{', '.join(sorted(str(k) for k in kinds))} in {', '.join(map(str, self.levels))}")
        if self.broadcast not in BROADCASTS:
            raise ModelError(f"expected a broadcast delivery among {', '.join(BROADCASTS)}, "
                             f"but found {self.broadcast!r}")
        if self.fold not in FOLDS:
            raise ModelError(f"expected a reduction fold among {', '.join(FOLDS)}, but found {self.fold!r}")
        if isinstance(self.radix, bool) or not isinstance(self.radix, int) or self.radix < 2:
            raise ModelError(f"expected a tree radix of at least 2, but found {self.radix!r}")

    def launch_overhead(self, points: int) -> float:
        """The runtime's cost of issuing one launch of `points` points (its tasks are charged apart).

        >>> m = lassen_cpu().with_(launch_seconds=1e-4, launch_point_seconds=1e-5, launch_log_seconds=1e-6)
        >>> round(m.launch_overhead(1) * 1e6, 3), round(m.launch_overhead(256) * 1e6, 3)  # 100 + 2560 + 2048
        (110.0, 4708.0)
        """
        growth = points * math.log2(points) if points > 1 else 0.0
        return self.launch_seconds + self.launch_point_seconds * points + self.launch_log_seconds * growth

    def reduction_seconds(self, nbytes: float) -> float:
        """One reduction instance of `nbytes` (Legate's REDUCE_ADD, one per launch point): made, zeroed, folded.

        >>> m = lassen_cpu().with_(reduction_instance_seconds=2e-4, reduction_page_seconds=1e-9)
        >>> round(m.reduction_seconds(1 << 20) * 1e3, 3), round(m.reduction_seconds(5 << 20) * 1e3, 3)  # 0 and 2 pages
        (0.2, 4.394)
        """
        pages = math.floor(nbytes / HUGE_PAGE) * HUGE_PAGE
        return self.reduction_instance_seconds + pages * self.reduction_page_seconds

    def node_of(self, processor: int) -> int:
        """The node of real processor `processor` (processors of a node are consecutive)."""
        return processor // self.per_node

    @property
    def node_levels(self) -> tuple[Level, ...]:
        """The levels inside a node, outermost first: `levels`, or one level of `per_node` processors joined by
        `intra`.

        >>> [str(lv) for lv in lassen_gpu().node_levels]
        ['socket 2 xbus(64 GB/s, 1 us)', 'gpu 2 nvlink2(75 GB/s, 2 us)']
        >>> dgx_a100().node_levels
        (Level('gpu', 8, NVSWITCH_A100, kind='gpu'),)
        """
        kind = self.processor.kind
        return self.levels or (Level(kind, self.per_node, self.intra, kind),)

    def hierarchy(self, nodes: int = 1) -> tuple[Level, ...]:
        """The machine of `nodes` nodes as `distal.machine` describes it, outermost first: the nodes (with
        several Legate ranks, the ranks) joined by `inter`, then `node_levels`.

        >>> [str(lv) for lv in lassen_gpu().hierarchy(2)]
        ['node 2 edr_fb(18 GB/s, 1.5 us)', 'socket 2 xbus(64 GB/s, 1 us)', 'gpu 2 nvlink2(75 GB/s, 2 us)']
        """
        return (Level("node", nodes, self.inter, self.processor.kind), *self.node_levels)

    def _inner(self) -> tuple[Level, ...]:
        """The levels below a node's outermost one, innermost first: the groups a copy may stay inside."""
        return tuple(reversed(self.node_levels[1:]))

    @property
    def depth(self) -> int:
        """The distance between processors of different nodes (levels inside a node, the node, the network)."""
        return len(self.node_levels) + 1

    def distance(self, a: int, b: int) -> int:
        """0 for one processor; k for the k-th group (innermost first) that holds both; `depth` across nodes."""
        if a == b:
            return 0
        if a // self.per_node != b // self.per_node:
            return self.depth
        unit = 1
        inner = self._inner()
        for k, lv in enumerate(inner):
            unit *= lv.size
            if a // unit == b // unit:
                return k + 1
        return len(inner) + 1

    def link_at(self, distance: int) -> Link:
        """The link a copy over `distance` uses (`distance` as `distance()` gives it, at least 1)."""
        if not 1 <= distance <= self.depth:
            raise ModelError(f"expected a distance in 1..{self.depth}, but found {distance!r}")
        inner = self._inner()
        if distance <= len(inner):
            return inner[distance - 1].link
        return self.intra if distance == len(inner) + 1 else self.inter

    def level_name(self, distance: int) -> str:
        """What a copy over `distance` crosses, in words: the group that holds both ends, the node, the network."""
        if distance <= 0:
            return "none"
        levels = self.node_levels
        if distance < len(levels):
            return levels[len(levels) - 1 - distance].name
        return "node" if distance == len(levels) else "network"

    def port(self, processor: int, distance: int) -> tuple[int, int]:
        """The port of `processor` that a copy over `distance` goes through: (distance, the unit owning it).

        The innermost link's port is the processor's own; a level's port belongs to the group of the level
        below it (a socket's X-bus is shared by its GPUs); the network port to the node.
        """
        if distance >= self.depth:
            return (self.depth, processor // self.per_node)
        unit = math.prod(lv.size for lv in self._inner()[:distance - 1])
        return (distance, processor // unit)

    def with_(self, **changes: object) -> MachineModel:
        """A copy with some fields changed.

        With a new `per_node` the outermost node level takes the processors its inner levels leave
        (`lassen_gpu().with_(per_node=8)`: 4 sockets of 2 GPUs); when the inner levels no longer divide
        `per_node`, the node levels are dropped. A new `intra` becomes the outermost node level's link.
        """
        if self.levels and "levels" not in changes:
            outer, inner = self.levels[0], self.levels[1:]
            per_node = changes.get("per_node", self.per_node)
            intra = changes.get("intra", self.intra)
            group = math.prod(lv.size for lv in inner)
            if not isinstance(per_node, int) or not isinstance(intra, Link) or per_node % group:
                changes["levels"] = ()
            else:
                changes["levels"] = (Level(outer.name, per_node // group, intra, outer.kind), *inner)
        return replace(self, **changes)  # type: ignore[arg-type]

    def across_ranks(self, ranks: int, per_rank: int, link: Link, local: int | None = None) -> MachineModel:
        """This host's model for a run of `ranks` Legate ranks of `per_rank` processors each: a node is a rank.

        Inside a rank a tile moves at the memory's bandwidth (no latency), between ranks over `link`; the
        ranks on this host (`local`, default all of them) share its cores. A rank is a process of its own, so
        only its own memory is shared: the model is not `shared_memory` (a tile another rank holds is copied).
        One rank: this model unchanged.

        >>> m = MachineModel("this-machine", _POWER9, 2, XBUS_POWER9, EDR_LASSEN, cores=2, shared_memory=True)
        >>> r = m.across_ranks(2, 1, EDR_LASSEN)
        >>> r.per_node, r.cores, r.shared_memory, r.intra.name, r.inter.name, m.across_ranks(1, 2, EDR_LASSEN) is m
        (1, 1, False, 'memory', 'edr', True)
        """
        if ranks <= 1:
            return self
        if isinstance(per_rank, bool) or not isinstance(per_rank, int) or per_rank < 1:
            raise ModelError(f"expected a positive number of processors per rank, but found {per_rank!r}")
        cores = None if self.cores is None else max(1, self.cores // (local or ranks))
        return self.with_(per_node=per_rank, levels=(), shared_memory=False, cores=cores,
                          intra=Link("memory", self.processor.bandwidth, 0.0), inter=link)

    def describe(self) -> str:
        p = self.processor
        rates = ", ".join(f"{k} {v / 1e9:.3g}" for k, v in p.flops.items())
        node = self.node_levels
        levels = "".join(f"{node[j - 1].name} of {node[j].size}: {node[j].link}; " for j in range(len(node) - 1, 0, -1))
        return (f"{self.name}: {self.per_node} {p.kind} per node, GFLOP/s {rates}, memory "
                f"{p.bandwidth / 1e9:.3g} GB/s, {p.memory / GiB:.3g} GiB each; {levels}inside a node {self.intra}, "
                f"between nodes {self.inter}; broadcast {self.broadcast}, reductions {self.fold} (radix "
                f"{self.radix}); {self.plan_seconds * 1e6:.3g} us per plan, "
                f"{self.launch_seconds * 1e6:.3g} us per launch + {self.launch_point_seconds * 1e6:.3g} us per point"
                f"{f' + {self.launch_log_seconds * 1e6:.3g} us x P log2 P' if self.launch_log_seconds else ''}, "
                f"{self.task_seconds * 1e6:.3g} us per task"
                f"{_instance_text(self.reduction_instance_seconds, self.reduction_page_seconds)}"
                f"{' (one after the other per node)' if self.serial_tasks else ''}, overlap {self.overlap:g}"
                f"{_warmup_text(self.warmup_seconds)}")


def _warmup_text(seconds: float) -> str:
    """The warm-up in `MachineModel.describe`, where there is one."""
    return f", first {seconds * 1e3:.3g} ms of compute per run at half rate" if seconds else ""


def _instance_text(instance: float, per_byte: float) -> str:
    """The cost of reduction instances in `MachineModel.describe`, where there is one."""
    if not instance and not per_byte:
        return ""
    return (f", {instance * 1e6:.3g} us per reduction instance + {per_byte * 2**20 * 1e3:.3g} ms per MiB of its "
            "whole huge pages")


# -- presets (sources: docs/scaling.md, "The machines") ------------------------------------------------------------

# V100 SXM2 16 GB (Lassen): 7.8 TFLOP/s FP64 peak, 900 GB/s HBM2 (NVIDIA V100 datasheet). The paper's kernels
# reach "near-peak utilization on a single node" (7.1.2): cuBLAS DGEMM at about 90% of peak, the GEMM-cast TTM and
# MTTKRP a little less (7.2.1 casts them to loops of matrix products). Memory: 15 GiB of the 16 GB are what an
# AC922 8335-GTW (Lassen's node) exposes per V100 (hwloc's recorded topology of such a node, 15728640 KB each).
_V100 = ProcessorModel("gpu", {"GEMM": 7.0e12, "TTM": 6.5e12, "MTTKRP": 5.5e12, "TTV": 7.0e12,
                               "INNERPROD": 7.0e12, "GENERIC": 3.0e12}, 820e9, 15 * GiB)

# POWER9 socket of Lassen: 20 cores of which 18 compute (the paper gives Legion 4 of a node's 40 cores, 7.1.1),
# 3.45 GHz, 8 FP64 FLOPs per cycle per core (two 2-wide VSX FMA pipes): 497 GFLOP/s peak; OpenBLAS DGEMM about 75%
# of it. STREAM about 140 GB/s per socket; 124 GiB of the node's 256 GB per socket (hwloc's AC922 topology:
# 129839104 KB per NUMA node).
_POWER9 = ProcessorModel("cpu", {"GEMM": 370e9, "TTM": 340e9, "MTTKRP": 250e9, "TTV": 370e9,
                                 "INNERPROD": 370e9, "GENERIC": 100e9}, 140e9, 124 * GiB)

# A100 SXM4 40 GB: 19.5 TFLOP/s FP64 on tensor cores, 1555 GB/s HBM2 (NVIDIA A100 datasheet).
_A100 = ProcessorModel("gpu", {"GEMM": 17.5e12, "TTM": 16.0e12, "MTTKRP": 12.0e12, "TTV": 17.5e12,
                               "INNERPROD": 17.5e12, "GENERIC": 8.0e12}, 1400e9, 40 * GiB)

#: Paper 7.1.2: Legion's DMA moves 18 of the 25 GB/s out of a Lassen node when the data is in GPU memory.
EDR_FROM_FRAMEBUFFER = Link("edr_fb", 18e9, 1.5e-6)

#: A Lassen node (IBM AC922, 4-GPU configuration): two POWER9 sockets joined by the X-bus, each with two V100s joined
#: by 3 NVLink 2.0 bricks.
LASSEN_NODE = (Level("socket", 2, XBUS_POWER9, "gpu"), Level("gpu", 2, NVLINK2_LASSEN, "gpu"))

#: Per point of a launch, paid by the runtime issuing it on GPU presets: not measured; the order of magnitude that
#: makes TTV, whose kernels take a few milliseconds, lose a visible share at 256 GPU nodes (1024 points), as the
#: paper reports (7.2.2). On CPUs the points are 2 per node and the term hardly matters.
LAUNCH_POINT_SECONDS = 1e-6


def lassen_gpu() -> MachineModel:
    """A Lassen node's 4 V100 GPUs (paper section 7): NVLink 2.0 per socket pair, X-bus, InfiniBand EDR out.

    Overlap 0.5: paper 7.1.2 finds GPU runs "evenly balanced between communication
    and computation, and therefore extremely sensitive" to communication. The paper ran
    Legion of 2021 (commit 8ca3331c5d), before collective instances: broadcasts are copies
    from the nearest valid instance and reductions are folds into the holder.
    """
    return MachineModel("lassen-gpu", _V100, 4, XBUS_POWER9, EDR_FROM_FRAMEBUFFER, launch_seconds=40e-6,
                        task_seconds=25e-6, overlap=0.5, levels=LASSEN_NODE, broadcast="nearest",
                        fold="fold", launch_point_seconds=LAUNCH_POINT_SECONDS,
                        notes=("V100 7.8 TFLOP/s FP64, 900 GB/s, 15 GiB usable; NVLink 2.0 3 bricks x 25 GB/s between "
                               "the GPUs of a socket; X-bus 64 GB/s between sockets; EDR dual rail 25 GB/s of which "
                               "Legion reaches 18 GB/s from GPU memory (paper 7.1.2)",))


def lassen_cpu() -> MachineModel:
    """A Lassen node's 2 POWER9 sockets, one processor each (paper 7.1.1), X-bus inside, EDR out.

    Overlap 0.9: paper 7.1.1 finds "it is possible to hide nearly all
    communication costs with computation" on CPUs.
    """
    return MachineModel("lassen-cpu", _POWER9, 2, XBUS_POWER9, EDR_LASSEN, launch_seconds=40e-6,
                        task_seconds=25e-6, overlap=0.9, broadcast="nearest", fold="fold",
                        launch_point_seconds=LAUNCH_POINT_SECONDS,
                        notes=("POWER9 socket: 18 compute cores x 3.45 GHz x 8 FLOP/cycle, 140 GB/s, 124 GiB; "
                               "X-bus 64 GB/s; EDR dual rail 25 GB/s",))


def dgx_a100() -> MachineModel:
    """A DGX A100-like node: 8 A100 40 GB on NVSwitch (270 GB/s per direction), 8 x HDR 200 Gb/s out.

    Run by today's Legate: tiles read through projections are copied from the nearest valid instance,
    reductions are Legion's collective reductions (`fold="tree"`).
    """
    return MachineModel("dgx-a100", _A100, 8, NVSWITCH_A100, HDR_DGX_A100, launch_seconds=40e-6,
                        task_seconds=20e-6, overlap=0.5, broadcast="nearest", fold="tree",
                        launch_point_seconds=LAUNCH_POINT_SECONDS)
