"""What dt.einsum's host operands cost auto: moving them onto Legate and back, and the eager candidate.

`dt.einsum` takes NumPy operands as they come and hands back a result that
acts as an array. A Legate plan first copies the operands on the host onto
Legate, and its result is read back when it is used as an array
(`copy_in_seconds`: both, added to every Legate candidate's ranking); running
the statement eagerly in the calling process (`eager_prediction`) reads back
the operands that live on Legate instead, pays none of the runtime's fixed
costs, and runs its matrix products on every BLAS thread, as the NumPy call
it replaces does. The figures are measured (each constant names its record);
`python bench/einsum.py --host-moves` measures them again.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import replace
from typing import Any

import distal.model as time_model
import distal.runtime as rt
from distal.lower import compile_schedule
from distal.schedule.commands import ScheduleBase

__all__ = ["BLAS_KINDS", "COPY_IN", "EAGER_OVERHEAD", "READ_BACK", "copy_in_seconds", "eager_prediction",
           "host_bytes", "moving_seconds", "read_back_seconds", "threaded"]

# seconds: an eager call's own Python on NumPy operands (arguments read, cached plan found, one contraction run):
# 33 us (fastest of 200) to 35 us (median) for `ij,jk->ik` on 8x8 operands, Legate started (load 1.5-2.5 in the
# run just before; not recorded in this one)
EAGER_OVERHEAD = 35e-6
# (seconds per operand, bytes per second) of copying a host operand onto Legate inside dt.einsum: least squares
# over the 12 statement sizes of bench/results/2026-11-28_7dc5878/einsum_drop_in.json (quiet, load under 1.9)
# that ran on Legate with both operand kinds, dt.einsum on the NumPy operands minus the same plan on placed
# dt.Tensors (medians): 0.68 ms + bytes / 4.0 GB/s (the fixed part is Legate's attach and a blocking detach)
COPY_IN = (0.68e-3, 4.0e9)
# (seconds, bytes per second) of reading a store back to the host (`to_numpy()`, a fresh NumPy array): the
# fastest of 30 runs after a fence, per size, 8 KiB to 64 MiB, at load 4-5 (runtime read_back): 0.17 ms at
# 8 KiB, 2.3 ms at 16 MiB, 11.1 ms at 64 MiB
READ_BACK = (0.17e-3, 6.0e9)
BLAS_KINDS = ("GEMM", "TTM", "MTTKRP")  # leaf kinds that run as matrix products on every BLAS thread


def moving_seconds(sched: ScheduleBase, on_legate: bool, mm: Any = None) -> float:
    """Seconds to move the inputs whose data is on the host onto Legate (on_legate=False, `COPY_IN`), or those
    on Legate back to the host (True, `READ_BACK`): per operand a blocking transfer and its bytes."""
    count, nbytes = host_bytes(sched, on_legate)
    fixed, rate = READ_BACK if on_legate else COPY_IN
    return count * fixed + nbytes / rate


def read_back_seconds(sched: ScheduleBase) -> float:
    """Reading the statement's result back to the host (`READ_BACK`): what a Legate plan's result costs when
    it is used as an array, which the eager candidate's result, already on the host, does not."""
    out = sched.source.lhs.tensor
    return READ_BACK[0] + math.prod(out.concrete_shape()) * out.dtype.itemsize / READ_BACK[1]


def copy_in_seconds(sched: ScheduleBase, mm: Any = None) -> float:
    """What every Legate candidate of dt.einsum pays beside its plan: the host operands copied onto Legate
    before it runs and its result read back after."""
    return moving_seconds(sched, False, mm) + read_back_seconds(sched)


def host_bytes(sched: ScheduleBase, on_legate: bool) -> tuple[int, int]:
    """How many inputs have their data on the host (on_legate=False) or on Legate (True), and their bytes."""
    total = count = 0
    seen: set[int] = set()
    for acc in sched.source.rhs.accesses():
        if acc.tensor.uid in seen:
            continue
        seen.add(acc.tensor.uid)
        t = sched.bindings.get_tensor(acc.tensor)
        if t is not None and t.has_data and t.on_legate == on_legate:
            total += math.prod(acc.tensor.concrete_shape()) * acc.tensor.dtype.itemsize
            count += 1
    return count, total


def threaded(mm: Any, threads: int) -> Any:
    """`mm` with its processor's matrix-product leaf kinds (`BLAS_KINDS`) run on `threads` BLAS threads: a call
    of F FLOPs at `threads` times the rate the model has for a call of F / threads (each thread runs a share);
    the other kinds (einsum loops, element-wise work, sums) run on one thread, as NumPy runs them."""
    if threads <= 1:
        return mm
    p = mm.processor
    flops = {k: v * threads if k in BLAS_KINDS else v for k, v in p.flops.items()}
    curves = {k: tuple((f * threads, r * threads) for f, r in pts) if k in BLAS_KINDS else pts
              for k, pts in p.curves.items()}
    return replace(mm, processor=replace(p, flops=flops, curves=curves))


def eager_prediction(schedule: ScheduleBase, one_task: ScheduleBase, mm: Any) -> tuple[float, int]:
    """The eager candidate's predicted seconds and peak bytes: `one_task` (the statement's one-task plan on
    shadow tensors)'s leaf work without the runtime's fixed costs, its matrix products on NumPy's BLAS threads
    (`threaded`; distal.contract runs them on distal.tile_blas or NumPy's matmul with as many; the count the
    user set, `distal.runtime.blas_user_threads`, steady while distal's tasks are queued), the read-back
    of `schedule`'s operands that live on Legate, and the eager call's own Python."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        threads = min(rt.blas_user_threads(), os.cpu_count() or 1)  # distal.contract's shares: one per core at most
        pred = time_model.predict(compile_schedule(one_task), threaded(mm, threads), 1)
    back = moving_seconds(schedule, True, mm)
    leaf = max(pred.compute_seconds - mm.task_seconds, 0.0)
    return leaf + back + EAGER_OVERHEAD, pred.peak_bytes
