"""What dt.einsum's host operands cost auto: moving them onto Legate and back, and the eager candidate.

`dt.einsum` takes NumPy operands as they come and hands back a result that
acts as an array. A Legate plan first copies the operands on the host onto
Legate, and its result is read back when it is used as an array
(`copy_in_seconds`: both, added to every Legate candidate's ranking); running
the statement eagerly in the calling process (`eager_prediction`) reads back
the operands that live on Legate instead, writes its result into a new host
array that the caller reads in place or is handed (`dt.Tensor.host_data`, and
`dt.einsum(...).to_numpy()` of a temporary), pays none of the runtime's fixed
costs, and runs its matrix products on every BLAS thread, as the NumPy call
it replaces does. The figures are measured (each constant names how);
`python bench/einsum.py --host-moves` measures the copy onto Legate, the
read-back and the eager GEMM's threads again, inside dt.einsum.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from dataclasses import replace
from typing import Any

import distal.model as time_model
import distal.runtime as rt
from distal import contract, tile_blas
from distal.lower import compile_schedule
from distal.model.hardware import MATRIX_KINDS
from distal.notation.storage import host_mirror
from distal.notation.visit import product_spec
from distal.schedule.commands import ScheduleBase

__all__ = ["COPY_IN", "EAGER_OVERHEAD", "FRESH_FROM", "HOST_COPY", "LOOP_SHARES", "NEW_PAGES",
           "NUMPY_KERNELS", "READ_BACK", "SPIN_SECONDS", "copy_in_seconds", "eager_kernels", "eager_prediction",
           "eager_threads", "host_bytes", "moving_seconds", "operand_bytes", "read_back_seconds",
           "shared_cores_seconds", "threaded"]

# seconds: an eager call's own Python on NumPy operands (arguments read, cached plan found, one contraction run):
# 33 us (fastest of 200) to 35 us (median) for `ij,jk->ik` on 8x8 operands, Legate started (load 1.5-2.5 in the
# run just before; not recorded in this one)
EAGER_OVERHEAD = 35e-6
# (seconds per operand, bytes per second) of copying a host operand onto Legate inside dt.einsum: least squares
# over the 12 statement sizes of bench/results/2026-11-28_7dc5878/einsum_drop_in.json (quiet, load under 1.9)
# that ran on Legate with both operand kinds, dt.einsum on the NumPy operands minus the same plan on placed
# dt.Tensors (medians): 0.68 ms + bytes / 4.0 GB/s (the fixed part is Legate's attach and a blocking detach)
COPY_IN = (0.68e-3, 4.0e9)
# (bytes, seconds) of reading a store back to the host (`to_numpy()`, a fresh NumPy array), interpolated
# between them (`_measured`): up to 64 MiB the fastest of 30 runs (10 from 16 MiB) after a fence, per size, at
# load 5 (runtime read_back); small copies stay in the cache and reuse freed memory, large ones fault in new
# pages. 256 MiB and 1 GiB: quiet (load 1.0-1.1), a placed `i,i->i` read back (`to_numpy()`) minus the same
# plan and a fence, medians of 15 and 7 interleaved rounds (/tmp probe of session 14); at 1 GiB the line
# through 16 and 64 MiB had given 188 ms (238 at attention's 1.36 GB result, which ran on Legate for it)
READ_BACK = ((8 << 10, 0.165e-3), (1 << 20, 0.261e-3), (4 << 20, 0.464e-3), (16 << 20, 2.280e-3),
             (64 << 20, 11.107e-3), (256 << 20, 29.15e-3), (1 << 30, 117.1e-3))
# (bytes, seconds) of copying a host array into a new one, interpolated: `ndarray.copy`, the fastest of 30 (10
# from 16 MiB) per size at load 4-5. What an eager call's large intermediate costs beside its leaves (below)
HOST_COPY = ((1 << 20, 0.019e-3), (4 << 20, 0.068e-3), (16 << 20, 0.646e-3), (64 << 20, 10.502e-3))
# bytes from which a fresh array gets fresh pages at every call: glibc's largest mmap threshold (32 MiB on 64-bit
# Linux); an eager call's intermediates this large (distal.contract.fresh_arrays) cost what writing a new array
# costs, priced as a host copy of that size (`HOST_COPY`, whose large sizes are the kernel's page faults: tucker at
# n = 76 writes four of 254 MiB, and ran its eager call in 470-500 ms where its leaves were predicted 199 ms)
FRESH_FROM = 32 << 20
# (bytes, seconds) the kernel takes to fault in the pages of a new array this large (from `FRESH_FROM`: smaller
# ones reuse freed memory), interpolated: `np.empty(n).fill(1.0)` minus the same fill of an array written before,
# medians of 9 interleaved rounds, quiet (load under 1; session 14; 32 MiB in a second run beside 64 MiB's 2.46
# ms). An eager call's result is such an array, which the caller then reads in place or is handed (the NumPy call
# it replaces writes the same)
NEW_PAGES = ((32 << 20, 1.49e-3), (64 << 20, 2.42e-3), (256 << 20, 8.43e-3), (1 << 30, 30.73e-3))
# seconds OpenBLAS's worker threads spin (a loop of `nop`, THREAD_TIMEOUT 28 in its blas_server.c: 2^28 cycles of
# the time-stamp counter, 0.103 s at this CPU's 2.6 GHz) after a threaded call before they sleep. Quiet, after
# numpy.einsum of 640^3 (lead, load under 1): distal's shares of the next 640^3 took 5.5-6.1 ms against 3.0-3.3
# with OPENBLAS_THREAD_TIMEOUT=4 (the minimum) set for NumPy's library; a Legate plan of 1400^3 on two processors
# 58.5 ms against its 34 ms predicted (shared_cores_seconds)
SPIN_SECONDS = 0.1
# NumPy's BLAS kernels' rate over distal's own (`distal.tile_blas`) where distal loaded its own: an eager call's
# products below distal.contract's `_OWN_FROM` run on NumPy's matmul and threads. Quiet probes (lead, load under
# 1, this machine's AVX-512 CPU, NumPy's OpenBLAS on its Haswell kernels): 640^3 on two threads 4.35 ms against
# 3.10 on distal's SkylakeX kernels, 3000^3 464 against 335 ms (bench/results/2026-11-28_bd427bc)
NUMPY_KERNELS = 0.71
# the rate of an eager call's einsum loops split over two threads (distal.contract's `loop_parts`) over one loop's:
# the median of the gains measured there (two shares took 0.67-1.01 of one loop's time, median 0.89)
LOOP_SHARES = 1.12


def _measured(points: tuple[tuple[int, float], ...], nbytes: float) -> float:
    """Seconds for `nbytes` on a measured curve of (bytes, seconds): linear between its points, its first
    point's seconds below them, its last segment's rate above."""
    if nbytes <= points[0][0]:
        return points[0][1]
    for (b0, s0), (b1, s1) in itertools.pairwise(points):
        if nbytes <= b1:
            return s0 + (s1 - s0) * (nbytes - b0) / (b1 - b0)
    (b0, s0), (b1, s1) = points[-2], points[-1]
    return s1 + (s1 - s0) * (nbytes - b1) / (b1 - b0)


def _result_bytes(sched: ScheduleBase) -> int:
    out = sched.source.lhs.tensor
    return math.prod(out.concrete_shape()) * out.dtype.itemsize


def moving_seconds(sched: ScheduleBase, on_legate: bool, mm: Any = None) -> float:
    """Seconds to move the inputs whose data is on the host onto Legate (on_legate=False, `COPY_IN` per operand
    and byte), or those on Legate back to the host (True, `READ_BACK` per operand): blocking transfers."""
    if not on_legate:
        count, nbytes = host_bytes(sched, False)
        return count * COPY_IN[0] + nbytes / COPY_IN[1]
    return sum(_measured(READ_BACK, n) for n in operand_bytes(sched, True))


def read_back_seconds(sched: ScheduleBase) -> float:
    """Reading the statement's result back to the host (`READ_BACK`): what a Legate plan's result costs when
    it is used as an array (the eager candidate's result is already there: it pays its new pages, `NEW_PAGES`)."""
    return _measured(READ_BACK, _result_bytes(sched))


def copy_in_seconds(sched: ScheduleBase, mm: Any = None) -> float:
    """What every Legate candidate of dt.einsum pays beside its plan: the host operands copied onto Legate
    before it runs and its result read back after."""
    return moving_seconds(sched, False, mm) + read_back_seconds(sched)


def host_bytes(sched: ScheduleBase, on_legate: bool) -> tuple[int, int]:
    """How many inputs have their data on the host (on_legate=False) or on Legate (True), and their bytes."""
    sizes = operand_bytes(sched, on_legate)
    return len(sizes), sum(sizes)


def operand_bytes(sched: ScheduleBase, on_legate: bool) -> list[int]:
    """The bytes of each input (once each) whose data is on the host (on_legate=False) or on Legate (True)."""
    out: list[int] = []
    seen: set[int] = set()
    for acc in sched.source.rhs.accesses():
        if acc.tensor.uid in seen:
            continue
        seen.add(acc.tensor.uid)
        t = sched.bindings.get_tensor(acc.tensor)
        if on_legate and t is not None and host_mirror(t.storage) is not None:
            continue  # read from the host array it was placed from: nothing to read back, nothing to copy in
        if t is not None and t.has_data and t.on_legate == on_legate:
            out.append(math.prod(acc.tensor.concrete_shape()) * acc.tensor.dtype.itemsize)
    return out


def eager_threads() -> int:
    """The threads an eager run's matrix products use: the user's BLAS thread count
    (`distal.runtime.blas_user_threads`, steady while distal's tasks are queued), at most one per core, as
    distal.contract splits them into shares."""
    return max(1, min(int(rt.blas_user_threads()), os.cpu_count() or 1))


def threaded(mm: Any, threads: int, kernels: float = 1.0, loops: float = 1.0) -> Any:
    """`mm` with its processor's matrix-product leaf kinds (`MATRIX_KINDS`) run on `threads` BLAS threads: a call
    of F FLOPs at `threads` times the rate the model has for a call of F / threads (each thread runs a share),
    times `kernels` (the rate of the kernels that run over the model's); the other kinds (einsum loops,
    element-wise work, sums) at `loops` times the model's rate (1: one thread, as NumPy runs them;
    `LOOP_SHARES` where an eager call splits its einsum loops)."""
    if threads <= 1 and kernels == 1.0 and loops == 1.0:
        return mm
    scale = max(threads, 1) * kernels
    p = mm.processor
    flops = {k: v * scale if k in MATRIX_KINDS else v * loops for k, v in p.flops.items()}
    curves = {k: tuple((f * threads, r * scale) for f, r in pts) if k in MATRIX_KINDS
              else tuple((f, r * loops) for f, r in pts) for k, pts in p.curves.items()}
    return replace(mm, processor=replace(p, flops=flops, curves=curves))


def shared_cores_seconds(seconds: float) -> float:
    """What a run on distal's own threads (Legate's processors, or an eager call's shares on distal's own
    kernels) pays for NumPy's BLAS workers, which spin on their cores for `SPIN_SECONDS` after each threaded
    NumPy call before they sleep: a run right after the user's NumPy call (as dt.einsum replacing numpy.einsum
    in a loop of NumPy work is) runs its first `SPIN_SECONDS` at half speed, since the slowest of its equal
    shares shares its core with a spinning worker: `min(seconds, SPIN_SECONDS)` more, where NumPy's BLAS has
    several threads; 0 on one thread, and for an eager call on NumPy's own threads (which are the spinners)."""
    if eager_threads() <= 1:
        return 0.0
    return min(seconds, SPIN_SECONDS)


def eager_kernels(multiply_adds: float) -> float:
    """The rate of the kernels an eager call's products of `multiply_adds` run on, over the model's (which has
    distal's own): `NUMPY_KERNELS` where they run on NumPy's matmul (distal.contract's `_numpy_pool`), else 1."""
    if tile_blas.library() is None or eager_threads() <= 1 or multiply_adds >= contract.OWN_FROM:
        return 1.0
    return NUMPY_KERNELS


def eager_prediction(schedule: ScheduleBase, one_task: ScheduleBase, mm: Any) -> tuple[float, int, float]:
    """The eager candidate's predicted seconds and peak bytes: `one_task` (the statement's one-task plan on
    shadow tensors)'s leaf work without the runtime's fixed costs, its matrix products on NumPy's BLAS threads
    (`threaded`; distal.contract runs them on distal.tile_blas or NumPy's matmul with as many; the count the
    user set, `distal.runtime.blas_user_threads`, steady while distal's tasks are queued), the read-back
    of `schedule`'s operands that live on Legate, the new pages of a large result (`NEW_PAGES`; a Legate
    candidate pays its result's read-back) and of large intermediates (`HOST_COPY`) and the eager call's own
    Python; and what
    it pays beside NumPy's spinning BLAS workers (`shared_cores_seconds`) where its products run on distal's own
    kernels (none on NumPy's own threads)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plan = compile_schedule(one_task)
        largest, fresh, split = _eager_contraction(schedule, eager_threads())
        kernels = eager_kernels(largest)
        loops = LOOP_SHARES if split >= 0.5 else 1.0  # most of its loop work in shares
        pred = time_model.predict(plan, threaded(mm, eager_threads(), kernels, loops), 1)
    back = moving_seconds(schedule, True, mm)
    result = _result_bytes(schedule)
    written = _measured(NEW_PAGES, result) if result >= FRESH_FROM else 0.0  # a new array, read where it is
    leaf = max(pred.compute_seconds - mm.task_seconds, 0.0)
    shared = shared_cores_seconds(leaf) if largest >= contract.OWN_FROM else 0.0  # some product on distal's kernels
    pages = sum(_measured(HOST_COPY, b) for b in fresh if b >= FRESH_FROM)  # its large intermediates' new pages
    return leaf + back + written + pages + EAGER_OVERHEAD, pred.peak_bytes, shared


def _eager_contraction(schedule: ScheduleBase, threads: int) -> tuple[float, list[int], float]:
    """What an eager run of the statement's contraction does on `threads` threads (a product of accesses, as
    dt.einsum's are): the multiply-adds of its largest matrix product (`distal.contract.largest_product`), the
    bytes of each fresh array it writes besides the output (`distal.contract.fresh_arrays`) and the share of its
    operations in einsum loops it splits (`distal.contract.split_loops`); (0, [], 0) for any other statement."""
    stmt = schedule.source
    found = product_spec(stmt.lhs, stmt.rhs)
    if found is None:
        return 0.0, [], 0.0
    spec, letters, accesses = found
    extents = {letters[v]: int(n) for acc in (*accesses, stmt.lhs)
               for v, n in zip(acc.indices, acc.tensor.concrete_shape())}
    itemsize = stmt.lhs.tensor.dtype.itemsize
    return (contract.largest_product(spec, extents, itemsize), contract.fresh_arrays(spec, extents, itemsize),
            contract.split_loops(spec, extents, itemsize, threads))
