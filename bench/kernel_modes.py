"""Task bodies: slice mode against index mode for loops fused inside a task.

`A(i,j) = B(i,j) * c(j)` with i and j fused into one loop f, run by the
NumPy plan executor (no Legate): slice mode takes no loop into its block, so
it makes one array call per element of f; index mode enumerates f's points
as index arrays in one call. distal chooses by a cost model
(`distal.lower.task_body._Run._index_is_cheaper`); this measures both choices
forced, the choice made, and the per-point cost of a large slice block that
the model's constants come from. Median of 5. Writes
bench/results/kernel_modes.json with the machine description.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _common import median_seconds, record  # bench/ is on sys.path when run as a script

import distal as dt
from distal.lower import task_body as kernel
from distal.lower.numpy_exec import run_numpy

i, j, f = dt.index_vars("i j f")


def _plan(n: int, fuse: bool) -> Any:
    rng = np.random.default_rng(0)
    A = dt.Tensor("A", (n, n))
    B = dt.Tensor.from_array("B", rng.random((n, n)))
    c = dt.Tensor.from_array("c", rng.random(n))
    A[i, j] = B[i, j] * c[j]
    sched = A.schedule()
    return (sched.fuse(i, j, f) if fuse else sched).compile()


def _seconds(plan: Any, force: bool | None) -> float:
    chosen = kernel._Run._index_is_cheaper
    for group in plan.groups:
        group.body.forget()  # the choice and the points' programs are cached per task body
    if force is not None:
        kernel._Run._index_is_cheaper = lambda self, chain, start: force  # type: ignore[method-assign]
    try:
        return median_seconds(lambda: run_numpy(plan))[0]
    finally:
        kernel._Run._index_is_cheaper = chosen  # type: ignore[method-assign]


def main() -> None:
    rows = []
    for n in (10, 100, 300):
        plan = _plan(n, fuse=True)
        points = n * n
        row = {"n": n, "points": points}
        for name, force in (("slice", False), ("index", True), ("chosen", None)):
            t = _seconds(plan, force)
            row[f"{name}_seconds"] = round(t, 6)
            row[f"{name}_us_per_point"] = round(t / points * 1e6, 3)
        rows.append(row)
        print(row, flush=True)
    block = _plan(2000, fuse=False)
    per_point = _seconds(block, None) / 2000**2
    print(f"slice block, 2000x2000 unfused: {per_point * 1e9:.2f} ns per point")
    path = record("kernel_modes", {"fused": rows, "slice_block_ns_per_point": round(per_point * 1e9, 2)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
