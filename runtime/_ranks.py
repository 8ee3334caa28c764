"""Several ranks agree on kernel failures: one recorded on any rank is raised by every rank.

A kernel's exception is recorded in the process whose task raised it
(`_registry.record_failure`); with several ranks the other ranks know
nothing of it. Had only that rank raised, the others would go on issuing
launches that it no longer issues, and the program would hang or end with
a wrong number. So at each blocking fence after distal launched something
(`_store.fence`, which `to_numpy` calls then), with more than one rank, one
launch of distal's generic task with a point per rank takes what each
process recorded (`_registry.check_failures`) into that rank's row of a small
store; every rank reads the whole store, and if any rank had a failure,
every rank raises the same `RuntimeFailure`, naming the rank, the kernel,
the launch point and the trace. All ranks read the same store, so they agree.

Legate places point r of that launch on rank r (seen with one and two CPUs
per rank); each row says which rank wrote it. Were two points placed on one
rank, the rank without a point would keep its failures until a check that
reaches it; every rank would still raise alike.

With one rank this is `_registry.check_failures`. The random state and the
memory figure all ranks share are set at start-up (`_start`).
"""

from __future__ import annotations

import numpy as np

from distal.errors import RuntimeFailure

from ._registry import check_failures, register_kernel
from ._start import ensure_started, legate_runtime, work_queued
from ._tasks import generic_task

__all__ = ["check_failures_everywhere"]

_ROW = 4096  # bytes of each rank's row: the rank, whether it failed, then the failure's text, cut to fit
_key: list[int] = []  # the report kernel's key, once registered


def _failure_text() -> str:
    """'1' and this process's failures (taken: the next check sees only later ones), or '0'."""
    try:
        check_failures()
    except RuntimeFailure as failure:
        return f"1\n{failure}"
    return "0\n"


def _report(point: tuple[int, ...], row: np.ndarray) -> None:
    """Task body on one rank: the rank it runs on and `_failure_text()` in its row."""
    from legate.core import get_legate_runtime

    text = f"{get_legate_runtime().node_id} {_failure_text()}"
    data = np.frombuffer(text.encode()[: row.size], dtype=np.uint8)
    flat = row.reshape(-1)
    flat[...] = 0
    flat[: data.size] = data


def _reports(ranks: int) -> list[tuple[int, bool, str]]:
    """(rank, whether it had failures, their text) from a task on each rank, as every rank reads them."""
    from legate.core import constant, dimension, types

    if not _key:
        _key.append(register_kernel(_report, "failure report"))
    runtime = legate_runtime()
    task = generic_task(0, 1, 0)
    rows = runtime.create_store(types.uint8, (ranks, _ROW))
    launch = runtime.create_manual_task(task.library, task.task_id, (ranks,), (0,))
    launch.add_output(rows.partition_by_tiling((1, _ROW)), (dimension(0), constant(0)))  # every row: none unwritten
    launch.add_scalar_arg(_key[0], types.int64)
    launch.add_scalar_arg("o0", types.string_type)  # the generic task's layout: output 0
    work_queued()  # a Python task: no automatic collection until the next blocking fence
    launch.execute()
    found = []
    # the rows' own mapping (an attach and a copy cost twice as much across ranks); the store is dropped after
    # this read, which waited for the task, so neither its mapping nor its freeing meets a queued launch
    for row in np.array(np.asarray(rows.get_physical_store().get_inline_allocation())):
        head, _, text = bytes(row).rstrip(b"\0").decode(errors="replace").partition("\n")
        where, _, failed = head.partition(" ")
        found.append((int(where), failed == "1", text))
    return found


def check_failures_everywhere(ran: bool = True) -> None:
    """Raise a `RuntimeFailure` on every rank for the kernels that failed on any rank since the last check.

    Call it at the same point of the program on every rank, with nothing
    of distal's queued (`_store.fence` does). One rank:
    `_registry.check_failures`. With several ranks, `ran=False` (distal
    launched nothing since the last check, which every rank knows alike)
    skips the exchange: no kernel can have failed since.
    """
    machine = ensure_started()
    if machine.ranks <= 1:
        check_failures()
        return
    if not ran:
        return
    failed = [(rank, text) for rank, failure, text in _reports(machine.ranks) if failure]
    if failed:
        rank, text = failed[0]
        where = ", ".join(str(r) for r, _ in failed)
        raise RuntimeFailure(
            f"a kernel failed on rank {rank} of {machine.ranks} (failures on rank(s) {where}; every rank raises "
            f"this): {text}"
        )
