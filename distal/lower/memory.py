"""Memory checked before anything is queued (issue 15): a plan that cannot fit is refused, not aborted.

Legate aborts the whole process when an instance does not fit in its memory
(`LEGATE ERROR: Out of memory`, no Python exception). distal knows every
size before it launches, so `check_plan_memory` (called first thing by
`distal.runtime`'s `run_plan`) compares what the plan needs with the memory
Legate was started with and raises `OutOfMemory` instead.

What a plan needs in Legate's system memory (all CPU processors of a node
share it; `--sysmem`, or distal's default of half the available memory):

- resident: every tensor of the plan once, as its store (the analysis's
  global store for a tensor without a format; for a tensor with a format,
  what its format places, replicas of broadcast dimensions included, at
  least the whole tensor), and a synthesized reduction's partials (one per
  processor, and their copy with a row per device);
- the largest peak of one processor in the plan's analysis
  (`distal.lower.analysis`, `analysis_of(plan)`: what is
  placed on it plus, at its peak launch, received tiles, its output tiles
  and reduction buffers): processors of one node share the memory and read
  tiles of the resident stores in place, so the need is the larger of the
  two, not their sum (a bound that never refuses a plan that fits because
  of double counting; copies Legate makes beyond it are not predicted);
- overhead: `OVERHEAD_FRACTION` of that (instance alignment and padding,
  Legate's own allocations, the kernel's temporaries) plus `OVERHEAD_BYTES`.

The limit is the system memory Legate was started with, less what the stores
of other live tensors hold (`in_use`: every store distal made and still
references that is not one of the plan's own tensors, and every store
dropped since the last fence, which Legate frees only at the next one;
`distal.runtime` counts them, and fences once to free what nothing
references before it refuses). Memory held outside distal (cuPyNumeric
arrays) is not known and not subtracted; GPU framebuffers are not checked
(their size is not known before a task runs). The steps outside a plan are
checked by `check_store_memory` before they queue anything: placing a
tensor (its staging store and blocks), a redistribution (`Tensor.redistribute`:
every store its steps make, `distal.runtime`'s `made_bytes`), and reading a
store back (Legate copies it through its own memory). Host-side copies
(`Tensor.from_array`, an input without data made as zeros) are checked by
`distal.host.check_host_allocation` against the
memory the operating system reports available. Fragmentation of Legate's pool is not modelled beyond the
overhead below.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distal._text import bytes_text
from distal.errors import OutOfMemory
from distal.lower.analysis import PlanAnalysis, Proc, analyse, proc_text
from distal.lower.reductions import partials_reduction
from distal.lower.task_graph import PlanBase

__all__ = ["OVERHEAD_BYTES", "OVERHEAD_FRACTION", "MemoryNeed", "check_plan_memory",
           "check_store_memory", "memory_line", "plan_memory"]

OVERHEAD_FRACTION = 0.10
OVERHEAD_BYTES = 16 << 20
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class MemoryNeed:
    """What a plan needs in one memory, and the largest single processor's part of it."""

    resident: tuple[tuple[str, int], ...]  # (tensor text, bytes of its store(s))
    working: int  # the largest working set of one processor beyond what is placed on it
    processor: str | None  # that processor
    tiles: tuple[str, ...]  # its operand tiles at its peak launch
    peak: int  # that processor's peak (placed + working)

    @property
    def base(self) -> int:
        return max(self.resident_bytes, self.peak)

    @property
    def overhead(self) -> int:
        return int(OVERHEAD_FRACTION * self.base) + OVERHEAD_BYTES

    @property
    def resident_bytes(self) -> int:
        return sum(b for _, b in self.resident)

    @property
    def total(self) -> int:
        return self.base + self.overhead


def _fast_fit(plan: PlanBase, limit: int) -> bool:
    """True when the plan fits whatever its schedule: every processor could hold every tensor."""
    procs = math.prod(plan.machine.full_shape) if plan.machine is not None else 1
    total = sum(t.size * t.itemsize for t in plan.tensors)
    # placement holds at most every tensor on every processor; a peak adds at most a few tensors' worth
    return total * (procs + 4) * (1 + OVERHEAD_FRACTION) + OVERHEAD_BYTES <= limit


# the last plans checked (weakly: a dropped plan is not kept), with their tensors' formats: a plan run again
# is not recounted
_RECENT: list[tuple[weakref.ref[PlanBase], tuple[object, ...], MemoryNeed]] = []


def plan_memory(plan: PlanBase, analysis: Callable[[], PlanAnalysis] | None = None) -> MemoryNeed:
    """The plan's need in system memory, from its analysis (``analysis()``, default `analyse(plan)`; see the
    module docstring)."""
    formats = tuple(getattr(t.tensor, "format", None) for t in plan.tensors)
    for seen, fmts, need in _RECENT:
        if seen() is plan and all(a is b for a, b in zip(fmts, formats)):
            return need
    need = _plan_memory(plan, analysis() if analysis is not None else analyse(plan))
    _RECENT.insert(0, (weakref.ref(plan), formats, need))
    del _RECENT[8:]
    return need


def _plan_memory(plan: PlanBase, data: PlanAnalysis) -> MemoryNeed:
    placed = data.placement.per_tensor
    resident = []
    for info in plan.tensors:
        whole = info.size * info.itemsize
        held = sum(placed[info.name].values()) if info.name in placed else 0
        where = "its format's tiles" if info.name in placed else "one global store"
        resident.append((f"{info.name}{list(info.shape)} {info.dtype} ({where})", max(whole, held)))
    red = partials_reduction(plan)
    if red is not None and plan.machine is not None:
        # per-processor partials: a synthesized program's, with their copy of one row per device it reduces;
        # a held reduction's, one store kept with the finished plan between runs
        procs = math.prod(plan.machine.full_shape)
        name = plan.tensors[red.tensor].name
        if red.synthesized:
            resident.append((f"partials of the synthesized reduction into {name} ({procs} x {list(red.row)}, "
                             "twice)", int(2 * procs * red.nbytes)))
        else:
            one = math.prod(red.row) * plan.tensors[red.tensor].itemsize
            resident.append((f"partials of the held reduction into {name} ({procs} x {list(red.row)})",
                             int(procs * one)))
    per_proc = data.placement.per_processor
    best: Proc | None = None
    working = 0
    for p, b in data.peak.items():
        extra = b - per_proc.get(p, 0)
        if best is None or extra > working:
            best, working = p, extra
    tiles: tuple[str, ...] = ()
    if best is not None and best in data.peak_launch:
        launch = data.launches[data.peak_launch[best]]
        tiles = tuple(f"{op.tensor} {'whole ' if op.whole else 'tile '}{list(op.tile)}" for op in launch.operands)
    peak = data.peak.get(best, 0) if best is not None else 0
    return MemoryNeed(tuple(resident), working, proc_text(best) if best is not None else None, tiles, peak)


def memory_line(plan: PlanBase, data: PlanAnalysis) -> str:
    """One line for `explain()`: what `plan.run()` will check against Legate's system memory."""
    need = _plan_memory(plan, data)
    where = f", processor {need.processor} at its peak {bytes_text(need.peak)}" if need.processor is not None else ""
    return (f"  memory checked by run(): stores {bytes_text(need.resident_bytes)}{where}; "
            f"need {bytes_text(need.total)} "
            f"with runtime overhead ({OVERHEAD_FRACTION:.0%} + {OVERHEAD_BYTES // _MIB} MiB), "
            "against Legate's --sysmem")


def check_plan_memory(plan: PlanBase, machine: Any, in_use: int = 0, staging: int = 0,
                      analysis: Callable[[], PlanAnalysis] | None = None) -> Any:
    """Raise `OutOfMemory` when `plan` cannot fit in the system memory of `machine`; return `machine`.

    `machine` describes the started runtime (`distal.runtime.MachineInfo`:
    `sysmem_mb`, `cpus`); `in_use` is what other live tensors' stores hold
    in that memory; `staging` the bytes of the largest input the run copies
    onto Legate from host memory first (its attached host data sits next to
    its new store while it is copied). Nothing is queued before this check. ``analysis`` gives the plan's
    analysis when it is needed (the cached one, `distal.lower.executable.analysis_of`; default `analyse`).
    """
    sysmem_mb = getattr(machine, "sysmem_mb", None)
    if not isinstance(sysmem_mb, int) or sysmem_mb <= 0:
        return machine
    limit = sysmem_mb * _MIB - max(in_use, 0)
    if _fast_fit(plan, limit - staging):
        return machine
    need = plan_memory(plan, analysis)
    if need.total + staging <= limit:
        return machine
    cpus = getattr(machine, "cpus", None)
    shared = f", shared by its {cpus} CPU processor(s)" if isinstance(cpus, int) else ""
    stores = "; ".join(f"{text} {bytes_text(b)}" for text, b in need.resident)
    where = ""
    if need.processor is not None:
        tiles = f" ({', '.join(need.tiles)})" if need.tiles else ""
        where = (f"; processor {need.processor} needs {bytes_text(need.peak)} at its peak, "
                 f"{bytes_text(need.working)} of it beyond its placement{tiles}")
    held = (f", of which other live tensors' stores hold {bytes_text(in_use)}, leaving {bytes_text(max(limit, 0))}"
            if in_use > 0 else "")
    raise OutOfMemory(
        f"expected the plan to fit in Legate's system memory of {bytes_text(sysmem_mb * _MIB)} "
        f"(--sysmem {sysmem_mb}{shared}{held}), "
        f"but it needs {bytes_text(need.total)}: stores {stores} ({bytes_text(need.resident_bytes)} in all){where}; "
        f"plus {bytes_text(need.overhead)} runtime overhead "
        f"({OVERHEAD_FRACTION:.0%} + {OVERHEAD_BYTES // _MIB} MiB)"
        + (f"; plus {bytes_text(staging)} while the largest input is copied onto Legate from host memory"
           if staging else "")
        + ". Nothing was queued; use a smaller problem, "
        "more processors' memory (LEGATE_CONFIG='--sysmem ...'), fewer live tensors, or a schedule "
        "that moves less",
        plan.statement.splitlines()[0],
    )


def check_store_memory(what: str, nbytes: int, machine: Any, in_use: int = 0) -> None:
    """Raise `OutOfMemory` when a new store of `nbytes` (`what`: which, and why) cannot fit in Legate's
    system memory next to the `in_use` bytes live tensors' stores hold (placing a tensor by its format
    stages it in one store and copies it into its blocks: both are checked before they are made)."""
    sysmem_mb = getattr(machine, "sysmem_mb", None)
    if not isinstance(sysmem_mb, int) or sysmem_mb <= 0:
        return
    need = nbytes + int(OVERHEAD_FRACTION * nbytes) + OVERHEAD_BYTES
    left = sysmem_mb * _MIB - max(in_use, 0)
    if need <= left:
        return
    raise OutOfMemory(
        f"expected {what} to fit in Legate's system memory of {bytes_text(sysmem_mb * _MIB)} (--sysmem {sysmem_mb}), "
        f"of which live tensors' stores hold {bytes_text(in_use)}, leaving {bytes_text(max(left, 0))}, but it needs "
        f"{bytes_text(need)} ({bytes_text(nbytes)} plus {OVERHEAD_FRACTION:.0%} + {OVERHEAD_BYTES // _MIB} MiB runtime "
        "overhead). Nothing was queued; use a smaller tensor, more memory (LEGATE_CONFIG='--sysmem ...'), "
        "or fewer live tensors"
    )
