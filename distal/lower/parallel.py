"""Pass: how each `parallelize(v, unit)` runs inside the tasks of a plan.

A parallel loop is executed, never ignored. Inside a task, on processors
that have the unit:

* `cpu_vector` -- the loop and every loop inside it run as one vectorised
  block (slice mode where it applies, else index mode: `distal.lower.task_body`);
* `gpu_block`, `gpu_warp`, `gpu_thread` -- on GPU processors the same block
  runs as one CuPy-vectorised block (the GPU's threads and blocks run its
  points);
* `cpu_thread` -- on OpenMP processors (`Grid(..., kind="omp")`) the loop's
  iterations are split into contiguous chunks run by a thread pool inside
  the task. A loop that reduces into its output (`+=`, the loop does not
  index it) gives each thread its own zeroed copy of the output tile and
  adds the copies in after the loop (DISTAL's parallel reduction), so no two
  threads write one element.

Where the plan's processors lack the unit (a GPU unit on CPUs, `cpu_thread`
on CPUs: the Legate wheel has no OpenMP processors), or the loop cannot run
that way (it is a launch dimension or a sequential step, or a `where` or a
sequence sits inside it), the plan says what runs instead, in its notes and
in one `DistalFallbackWarning` per compile. The reference executor runs
loops one way only; parallelism never changes a result.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from distal.cin.relations import Parallelize, Relation
from distal.cin.statements import Assign, Forall, Stmt
from distal.errors import DistalFallbackWarning
from distal.machine.grid import processor_kind
from distal.notation.ast import IndexVar
from distal.schedule import tree
from distal.schedule.commands import PARALLEL_UNITS

__all__ = ["MODES", "ParallelLoop", "plan_parallel", "warn_fallbacks"]

#: How a parallel loop runs in a task: one vectorised block, a thread pool, or as if not parallel.
MODES = ("vector", "threads", "sequential")

_GPU_UNITS = tuple(u for u in PARALLEL_UNITS if u.startswith("gpu_"))  # of the units `parallelize` takes


@dataclass(frozen=True, slots=True)
class ParallelLoop:
    """One `parallelize(var, unit)` as the plan runs it: `mode` (in MODES) and why, as text."""

    var: IndexVar
    unit: str
    mode: str
    how: str
    fallback: bool = False

    def __str__(self) -> str:
        return f"parallelize({self.var}, {self.unit}): {self.how}"


def _perfect(stmt: Stmt, var: IndexVar) -> bool:
    """Whether the loop over `var` is a perfect nest down to one assignment."""
    path = tree.forall_path(stmt, var)
    if path is None:
        return False
    node = tree.node_at(stmt, path)
    while isinstance(node, Forall):
        node = node.body
    return isinstance(node, Assign)


def plan_parallel(stmt: Stmt, relations: Sequence[Relation], launch_vars: Sequence[IndexVar],
                  kind: str) -> tuple[ParallelLoop, ...]:
    """The mode of every parallel loop of a plan whose tasks run on `kind` processors."""
    out = []
    for r in relations:
        if not isinstance(r, Parallelize):
            continue
        v, unit = r.var, r.unit
        if v in launch_vars:
            out.append(ParallelLoop(v, unit, "sequential",
                                    f"{v} is a launch dimension or step of the plan, so its iterations run as "
                                    "separate launch points; nothing more runs in parallel inside the tasks", True))
            continue
        if not _perfect(stmt, v):
            out.append(ParallelLoop(v, unit, "sequential",
                                    f"a where or a sequence is inside {v}, so it cannot run as one block or "
                                    "on threads; its iterations run one after another", True))
            continue
        if unit == "cpu_vector":
            out.append(ParallelLoop(v, unit, "vector",
                                    f"{v} and the loops inside it run as one vectorised block"))
        elif unit in _GPU_UNITS:
            if processor_kind(kind).device_arrays:
                out.append(ParallelLoop(v, unit, "vector",
                                        f"{v} and the loops inside it run as one CuPy block on the GPU"))
            else:
                out.append(ParallelLoop(v, unit, "vector",
                                        f"the plan's processors are {kind}s, which have no {unit}; {v} and the "
                                        "loops inside it run as one vectorised NumPy block instead", True))
        elif processor_kind(kind).threads:
            out.append(ParallelLoop(v, unit, "threads",
                                    f"{v}'s iterations run on a thread pool inside each task"))
        else:
            out.append(ParallelLoop(v, unit, "sequential",
                                    f"the plan's processors are {kind}s, which have no OpenMP threads "
                                    f"(cpu_thread needs Grid(..., kind='omp')); {v}'s iterations run one after "
                                    "another in each task", True))
    return tuple(out)


def warn_fallbacks(loops: Sequence[ParallelLoop], stacklevel: int = 4) -> None:
    """One `DistalFallbackWarning` naming every parallel loop that does not run as asked."""
    fallen = [p for p in loops if p.fallback]
    if fallen:
        warnings.warn("; ".join(str(p) for p in fallen), DistalFallbackWarning, stacklevel=stacklevel)
