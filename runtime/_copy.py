"""Copying one Legate store into another of the same shape (`copy_store`), and the copy kernel.

Every store-to-store copy distal makes goes through `copy_store`: arrays
copied in (`from_numpy`), results read back (`to_numpy`), copies handed to
other libraries and copies of reduction states. With one rank it is
Legate's own copy (`Runtime.issue_copy`). With several ranks it is distal's
generic task running `copy_kernel`, launched as an auto task whose two stores
Legate partitions alike (each rank copies the part it holds): legate 26.1's
`issue_copy` of a partitioned store aborts the process with two ranks
(`_versions.copies_by_task`).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ._registry import register_kernel
from ._start import legate_runtime, work_queued
from ._tasks import generic_task
from ._versions import copies_by_task

__all__ = ["copy_kernel", "copy_store"]

_lock = threading.Lock()
_key: list[int] = []  # the key of `copy_kernel`, once registered
_types: list[Any] = []  # Legate's int64 and string types, looked up once


def _copy_tile(point: tuple[int, ...], source: np.ndarray, out: np.ndarray) -> None:
    out[...] = source.reshape(out.shape)


def copy_kernel() -> int:
    """The key of the kernel that copies its first tile into its second, reshaped to it (same size).

    Placement replicates blocks with it, regridding and reductions move rows
    and blocks, a view of a cuPyNumeric array is copied into a store, and
    with several ranks every store-to-store copy runs it (`copy_store`).
    """
    with _lock:
        if not _key:
            _key.append(register_kernel(_copy_tile, "copy"))
        return _key[0]


def copy_store(target: Any, source: Any, by_task: bool | None = None) -> None:
    """Copy the Legate store `source` into `target` (same shape and type; views allowed).

    `by_task` (default: `_versions.copies_by_task`, true with several ranks)
    copies with distal's copy task, otherwise Legate copies. Asynchronous either
    way: a later read of `target` waits for it.
    """
    runtime = legate_runtime()
    if not (copies_by_task(runtime) if by_task is None else by_task):
        runtime.issue_copy(target, source)
        return
    if not _types:
        from legate.core import types

        _types.extend((types.int64, types.string_type))
    int64, string = _types
    task = generic_task(1, 1, 0)
    launch = runtime.create_auto_task(task.library, task.task_id)
    launch.add_input(source)
    launch.add_output(target)
    launch.add_alignment(source, target)  # each point copies its own part, whatever Legate's partition
    launch.add_scalar_arg(copy_kernel(), int64)
    launch.add_scalar_arg("i0,o0", string)  # the generic task's layout: input 0, then output 0
    work_queued()  # a Python task is queued: no automatic GC until the next blocking fence
    launch.execute()
