"""What dt.einsum's host operands cost auto: moving them onto Legate and back, and the eager candidate.

`dt.einsum` takes NumPy operands as they come. A Legate plan first copies
the ones on the host onto Legate (`copy_in_seconds`, added to every Legate
candidate's ranking); running the statement eagerly in the calling process
(`eager_option`) reads back the operands that live on Legate instead, and
pays none of the runtime's fixed costs.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import distal.model as time_model
from distal.lower import compile_schedule
from distal.schedule.commands import ScheduleBase

__all__ = ["EAGER_OVERHEAD", "copy_in_seconds", "eager_prediction", "host_bytes", "moving_seconds"]

EAGER_OVERHEAD = 30e-6  # seconds: an eager run's Python (planning cached, one task body call)


def moving_seconds(sched: ScheduleBase, on_legate: bool, mm: Any) -> float:
    """Seconds to move the inputs whose data is on the host onto Legate (on_legate=False), or those on Legate
    back to the host (True): per operand a blocking transfer (the model's cost of a plan run, a fence and a
    mapping) and its bytes at a quarter of the memory bandwidth (Legate's copy between a NumPy buffer and a
    store: 1.0-2.6 GB/s measured here at 7.6 GB/s of bandwidth)."""
    count, nbytes = host_bytes(sched, on_legate)
    return float(count * mm.plan_seconds + nbytes / (mm.processor.bandwidth / 4))


def copy_in_seconds(sched: ScheduleBase, mm: Any) -> float:
    """What every Legate candidate of dt.einsum pays before its plan runs: the host operands copied onto Legate."""
    return moving_seconds(sched, False, mm)


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


def eager_prediction(schedule: ScheduleBase, one_task: ScheduleBase, mm: Any) -> tuple[float, int]:
    """The eager candidate's predicted seconds and peak bytes: `one_task` (the statement's one-task plan on
    shadow tensors)'s leaf work without the runtime's fixed costs, the read-back of `schedule`'s operands that
    live on Legate, and the eager call's own Python."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pred = time_model.predict(compile_schedule(one_task), mm, 1)
    back = moving_seconds(schedule, True, mm)
    leaf = max(pred.compute_seconds - mm.task_seconds, 0.0)
    return leaf + back + EAGER_OVERHEAD, pred.peak_bytes

