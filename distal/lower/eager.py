"""Running a one-task plan eagerly: in the calling process, with NumPy, on the tensors' own arrays.

`Schedule.auto` chooses this for a problem too small to pay for Legate's
fixed costs (a plan run, a launch, a task: about a millisecond here), as
cuPyNumeric runs small arrays eagerly. The plan is the statement's one-task
plan: its one task body runs once on whole arrays, read where they are
(no copies of host inputs; inputs on Legate are read back, or read from the
host array they were placed from while no plan has written them since:
`host_array`), and the output
gets a new host array. A schedule you write never runs this way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distal.contract import on_user_threads
from distal.errors import RuntimeFailure
from distal.host import check_host_allocation
from distal.lower.task_graph import PlanBase, Privilege
from distal.notation.storage import HostStorage, host_array

__all__ = ["run_eager"]


def _host(plan: PlanBase, n: int) -> np.ndarray:
    """Tensor n's data as a NumPy array: a read-only view of host data, a copy of data on Legate, zeros."""
    info = plan.tensors[n]
    storage = plan.tensor(info).storage
    if storage is None:
        return np.zeros(info.shape, dtype=info.dtype)
    data = host_array(storage)  # host data, or the host array a store on Legate was placed from (no plan wrote it)
    if data is None:
        data = storage.to_numpy()
    if data.shape != info.shape:
        raise RuntimeFailure(f"expected data of shape {info.shape} for {info.name}, but found {data.shape}")
    return data if data.dtype == info.dtype else data.astype(info.dtype)


def run_eager(plan: PlanBase) -> None:
    """Run `plan` (one launch of one point over whole tensors) in this process; the output gets the result."""
    launches = list(plan.launches())
    if len(launches) > 1 or any(launch.volume != 1 for _, launch in launches) or plan.machine is not None:
        raise RuntimeFailure(f"expected a plan of one task to run eagerly, but found {plan.launch_count()} "
                             f"launch(es) on {plan.machine!r}")
    out = plan.tensors.index(plan.output)
    info = plan.output
    source = plan.source
    reads_output = source is None or any(a.tensor.uid == info.tensor.uid for a in source.rhs.accesses())
    fresh = plan.zero_output and not reads_output
    # an eager run allocates its output on the host: refused (OutOfMemory) before anything is allocated or run,
    # as a plan on Legate is by its memory check, not a MemoryError from NumPy halfway
    check_host_allocation(f"the output {info.name} of an eager run", info.shape, info.dtype)
    if plan.zero_output:  # `=`: the output starts at zero (unwritten where the task writes it all first)
        result = np.empty(info.shape, dtype=info.dtype) if fresh else np.zeros(info.shape, dtype=info.dtype)
    else:
        result = _host(plan, out).copy()
    if not launches:  # an empty tensor: nothing to compute
        if fresh:
            result[...] = 0
        plan.tensor(info).bind(HostStorage(result))
        return
    group, launch = launches[0]
    point = next(launch.points())
    tiles: list[Any] = []
    for op in launch.operands:
        if op.tensor == out:
            tiles.append(result)
        elif op.privilege is Privilege.READ:
            tiles.append(_host(plan, op.tensor))
        else:
            raise RuntimeFailure(f"expected only the output {info.name} written by an eager plan, but found "
                                 f"{plan.tensors[op.tensor].name} {op.privilege.value}")
    with on_user_threads():  # the caller's BLAS threads: small products on NumPy's own pool (distal.contract)
        if fresh:
            group.body.run_fresh(point, [op.tensor for op in launch.operands].index(out), *tiles)
        else:
            group.body(point, *tiles)
    plan.tensor(info).bind(HostStorage(result))
