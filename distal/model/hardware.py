"""Machine models as data: processors, their rates and memory, the links between them.

A `MachineModel` describes the real machine a plan runs on: nodes of
`per_node` processors of one kind (`ProcessorModel`: achieved FLOP/s per leaf
kind, memory bandwidth and capacity), one `Link` between the processors of a
node and one link out of each node (its port to the network, shared by the
node's processors), the runtime's cost per launch and per task, and how much
communication the runtime hides behind computation (`overlap`).

Presets:

- `lassen_gpu()`, `lassen_cpu()`: a node of the Lassen supercomputer (paper
  section 7: IBM AC922, 4 V100 GPUs and 2 POWER9 sockets, NVLink 2.0 inside the
  node, dual-rail InfiniBand EDR between nodes). GPU runs use the 4 V100s, CPU
  runs one abstract processor per socket ("we model each CPU socket as an
  abstract DISTAL processor", 7.1.1).
- `dgx_a100()`: a DGX A100-like node: 8 A100 40 GB on an NVSwitch, 8 HDR ports.
- `this_machine()`: the host distal runs on, its rates measured by a short
  calibration (`distal.model.calibrate`) and cached.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from distal.errors import DistalError
from distal.format.machine import KINDS
from distal.model.links import EDR_LASSEN, HDR_DGX_A100, NVLINK2_LASSEN, NVSWITCH_A100, XBUS_POWER9, Link

__all__ = [
    "LEAF_KINDS",
    "MachineModel",
    "ModelError",
    "ProcessorModel",
    "dgx_a100",
    "lassen_cpu",
    "lassen_gpu",
    "preset",
]

#: The leaf kinds a processor has a rate for (`distal.leaf` names).
LEAF_KINDS = ("GEMM", "TTV", "TTM", "MTTKRP", "INNERPROD", "GENERIC")

GiB = 1 << 30


class ModelError(DistalError):
    """A machine model that is malformed, or a plan the model cannot time."""


@dataclass(frozen=True)
class ProcessorModel:
    """One processor: its kind, achieved FLOP/s per leaf kind, memory bandwidth (bytes/s) and capacity.

    A leaf's time on a tile is the larger of its FLOPs at the leaf kind's rate
    and the bytes of its tiles at the memory bandwidth (a roofline). Leaf
    kinds in `bandwidth_bound` (TTV, innerprod: one or two FLOPs per element
    read) take the bytes of their tiles at the memory bandwidth alone, or at
    their own measured streaming rate (`streaming`, bytes/s) when given.
    `curves` gives, per leaf kind, FLOP/s measured at a few sizes as
    (FLOPs of one leaf call, FLOP/s) pairs: the rate of a call is
    interpolated between them in log FLOPs, and held at the ends (BLAS runs
    small tiles well below its rate on large ones).

    >>> p = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e9), 1e10, 1 << 30,
    ...                    curves={"GEMM": ((1e6, 1e9), (1e8, 3e9))})
    >>> p.rate("GEMM", 1e5), p.rate("GEMM", 1e7), p.rate("GEMM", 1e9), p.rate("TTM", 1e7)
    (1000000000.0, 2000000000.0, 3000000000.0, 1000000000.0)
    """

    kind: str
    flops: Mapping[str, float]
    bandwidth: float
    memory: int
    curves: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    bandwidth_bound: frozenset[str] = frozenset()
    streaming: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ModelError(f"expected a processor kind ({', '.join(KINDS)}), but found {self.kind!r}")
        missing = [k for k in LEAF_KINDS if k not in self.flops]
        if missing:
            raise ModelError(f"expected a FLOP/s rate for every leaf kind ({', '.join(LEAF_KINDS)}), "
                             f"but found none for {', '.join(missing)}")
        bad = {k: v for k, v in self.flops.items() if not v > 0}
        if bad or not self.bandwidth > 0 or not self.memory > 0:
            raise ModelError(f"expected positive rates, bandwidth and memory, but found flops={dict(self.flops)}, "
                             f"bandwidth={self.bandwidth!r}, memory={self.memory!r}")
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

    def rate(self, leaf: str, flops: float | None = None) -> float:
        """FLOP/s of leaf kind `leaf` on a call of `flops` FLOPs (interpolated on its curve when it has one)."""
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

    def leaf_seconds(self, leaf: str, flops: float, nbytes: float) -> float:
        """One leaf call's time: bytes at the bandwidth for a bandwidth-bound kind, else the roofline."""
        if leaf in self.bandwidth_bound:
            return nbytes / self.streaming.get(leaf, self.bandwidth)
        return max(flops / self.rate(leaf, flops), nbytes / self.bandwidth)


@dataclass(frozen=True)
class MachineModel:
    """A real machine: nodes of `per_node` processors, their links and the runtime's costs.

    `intra` joins the processors of one node (each has a port); `inter` is a
    node's port to the network, shared by its processors. `launch_seconds` is
    paid once per launch (the runtime issuing it), `task_seconds` per launch
    point a processor runs. `overlap` in [0, 1] is the share of a step's
    communication hidden behind the previous step's computation. `cores`,
    when set, is how many cores the processors of a node share (this machine:
    more Legate CPU processors than cores run slower). `plan_seconds` is paid
    once per run of a plan (issuing it, reading its output back). With
    `serial_tasks` the per-point cost is paid one point after the other by
    the whole node (Python task bodies under one interpreter lock per
    process, as Legate runs them): the plan's time includes the node's
    points over all launches times `task_seconds`.
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

    def __post_init__(self) -> None:
        if isinstance(self.per_node, bool) or not isinstance(self.per_node, int) or self.per_node < 1:
            raise ModelError(f"expected a positive number of processors per node, but found {self.per_node!r}")
        if not 0.0 <= self.overlap <= 1.0:
            raise ModelError(f"expected an overlap in [0, 1], but found {self.overlap!r}")
        if self.launch_seconds < 0 or self.task_seconds < 0 or self.plan_seconds < 0:
            raise ModelError(f"expected non-negative runtime costs, but found launch {self.launch_seconds!r}, "
                             f"task {self.task_seconds!r}, plan {self.plan_seconds!r}")

    def node_of(self, processor: int) -> int:
        """The node of real processor `processor` (processors of a node are consecutive)."""
        return processor // self.per_node

    def with_(self, **changes: object) -> MachineModel:
        """A copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> str:
        p = self.processor
        rates = ", ".join(f"{k} {v / 1e9:.3g}" for k, v in p.flops.items())
        return (f"{self.name}: {self.per_node} {p.kind} per node, GFLOP/s {rates}, memory "
                f"{p.bandwidth / 1e9:.3g} GB/s, {p.memory / GiB:.3g} GiB; inside a node {self.intra}, "
                f"between nodes {self.inter}; {self.plan_seconds * 1e6:.3g} us per plan, "
                f"{self.launch_seconds * 1e6:.3g} us per launch, {self.task_seconds * 1e6:.3g} us per task"
                f"{' (one after the other per node)' if self.serial_tasks else ''}, overlap {self.overlap:g}")


# -- presets -------------------------------------------------------------------------------------------------------

# V100 SXM2 16 GB (Lassen): 7.8 TFLOP/s FP64 peak, 900 GB/s HBM2 (NVIDIA V100
# datasheet); cuBLAS DGEMM reaches about 90% of peak, the GEMM-cast TTM and MTTKRP
# a little less (paper 7.2.1 casts them to loops of matrix products).
_V100 = ProcessorModel("gpu", {"GEMM": 7.0e12, "TTM": 6.5e12, "MTTKRP": 5.5e12, "TTV": 7.0e12,
                               "INNERPROD": 7.0e12, "GENERIC": 3.0e12}, 820e9, 16 * GiB)

# POWER9 socket of Lassen: 20 cores of which 18 compute (the paper gives Legion
# 4 of a node's 40 cores), 3.45 GHz, 8 FP64 FLOPs per cycle per core (two 2-wide
# VSX FMA pipes): 18 * 3.45e9 * 8 = 497 GFLOP/s peak; OpenBLAS DGEMM about 75% of
# it. STREAM about 140 GB/s per socket; 128 GiB of the node's 256 GiB each.
_POWER9 = ProcessorModel("cpu", {"GEMM": 370e9, "TTM": 340e9, "MTTKRP": 250e9, "TTV": 370e9,
                                 "INNERPROD": 370e9, "GENERIC": 100e9}, 140e9, 128 * GiB)

# A100 SXM4 40 GB: 19.5 TFLOP/s FP64 on tensor cores, 1555 GB/s HBM2 (NVIDIA A100 datasheet).
_A100 = ProcessorModel("gpu", {"GEMM": 17.5e12, "TTM": 16.0e12, "MTTKRP": 12.0e12, "TTV": 17.5e12,
                               "INNERPROD": 17.5e12, "GENERIC": 8.0e12}, 1400e9, 40 * GiB)

#: Paper 7.1.2: Legion's DMA moves 18 of the 25 GB/s out of a Lassen node when the data is in GPU memory.
EDR_FROM_FRAMEBUFFER = Link("edr_fb", 18e9, 1.5e-6)


def lassen_gpu() -> MachineModel:
    """A Lassen node's 4 V100 GPUs (paper section 7), NVLink 2.0 inside, InfiniBand EDR out.

    Overlap 0.5: paper 7.1.2 finds GPU runs "evenly balanced between communication
    and computation, and therefore extremely sensitive" to communication.
    """
    return MachineModel("lassen-gpu", _V100, 4, NVLINK2_LASSEN, EDR_FROM_FRAMEBUFFER, launch_seconds=40e-6,
                        task_seconds=25e-6, overlap=0.5,
                        notes=("V100 7.8 TFLOP/s FP64, 900 GB/s, 16 GiB; NVLink 2.0 3 bricks x 25 GB/s; "
                               "EDR dual rail 25 GB/s of which Legion reaches 18 GB/s from GPU memory (paper 7.1.2)",))


def lassen_cpu() -> MachineModel:
    """A Lassen node's 2 POWER9 sockets, one abstract processor each (paper 7.1.1), X-bus inside, EDR out.

    Overlap 0.9: paper 7.1.1 finds "it is possible to hide nearly all
    communication costs with computation" on CPUs.
    """
    return MachineModel("lassen-cpu", _POWER9, 2, XBUS_POWER9, EDR_LASSEN, launch_seconds=40e-6,
                        task_seconds=25e-6, overlap=0.9,
                        notes=("POWER9 socket: 18 compute cores x 3.45 GHz x 8 FLOP/cycle, 140 GB/s, 128 GiB; "
                               "X-bus 64 GB/s; EDR dual rail 25 GB/s",))


def dgx_a100() -> MachineModel:
    """A DGX A100-like node: 8 A100 40 GB on NVSwitch (270 GB/s per direction), 8 x HDR 200 Gb/s out."""
    return MachineModel("dgx-a100", _A100, 8, NVSWITCH_A100, HDR_DGX_A100, launch_seconds=40e-6,
                        task_seconds=20e-6, overlap=0.5)


def preset(name: str) -> MachineModel:
    """A model by name: lassen-gpu, lassen-cpu, dgx-a100, or this (this machine, calibrated and cached)."""
    key = name.strip().lower().replace("_", "-") if isinstance(name, str) else ""
    if key in ("this", "this-machine", "local"):
        from distal.model.calibrate import this_machine

        return this_machine()
    table = {"lassen-gpu": lassen_gpu, "lassen-cpu": lassen_cpu, "dgx-a100": dgx_a100}
    if key not in table:
        raise ModelError(f"expected a machine model (lassen-gpu, lassen-cpu, dgx-a100, this), but found {name!r}")
    return table[key]()
