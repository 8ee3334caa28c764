"""`python -m distal.calibrate_cli`: measure this machine for the time model, above the library it measures.

Calibration (`distal.model.calibrate`) times the leaf kernels in-process, and
the runtime's costs by running plans on Legate in a child process. That child
is this module (`--fixed-costs-child`): it builds plans through the public
facade and `distal.kernels`, which sit above the time model, so it is an
entry point run as its own process, never imported by the library. It prints
one JSON line: ``{"runtime": rows, "overlap": rounds, "reduction": rows, "cpus": N}``
(`runtime_rows`, `overlap_rounds`, `reduction_rows`), which `distal.model.runtime_costs` and
`distal.model.calibrate` fit.

- *Costs that grow* (`runtime_rows`): tiny plans of 1 to 8 launches of one
  point (SUMMA on one processor in 1 to 8 steps), and one launch of P = 1, 4,
  16, 64, 256 points (`GROWTH_POINTS`; bench/runtime_costs.py takes every
  power of 2 to 512: `a(i) = b(i)` on `Grid(P)`, 8 elements a point, so the
  leaf costs nothing), run once with every point its own Legate task and once with the
  points of a processor grouped into one task (`distal.lower.grouping`), so
  that the cost per point and the cost per task separate and the tasks per
  processor grow with P. Each plan is one run and a read of its output,
  timed in interleaved rounds (every other round in reverse order), the
  fastest round kept (the model is of a quiet machine). (A run and a fence
  instead, what `Plan.predict()` predicts, gave fixed costs that put the
  library's plans at n = 256 at about half their measured time: a run of a
  real plan costs more than a tiny plan's run, and the read-back carries
  that; which part of a run it is was not found.)
- *Overlap* (`overlap_plans`, `overlap_rounds`): `A(i,j) = B(i,j)` and
  `A(i,j) = B(i,j) * D(i,j) * ... * D(i,j)` (`OVERLAP_MULTS` products) on
  `Grid(2)` over rows, in `OVERLAP_STEPS` sequential steps per processor (a
  split of its rows, `communicate` under the step), B held in rows (each
  step's tile is the processor's own) or in columns (each step's tile is
  assembled from both processors' instances: a copy); the four plans of
  `distal.model.runtime_costs.OverlapTimes`, in interleaved rounds, each run
  followed by a fence (reading the output back would add as much as the copies).
- *Reduction instances* (`reduction_rows`): Johnson on `Grid(2, 2, 2)` (one
  launch whose 8 points reduce into A with Legate's reduction, each with a
  reduction instance of its tile) against Johnson on `Grid(2, 2, 1)` (the same
  products, no reduction) at `REDUCTION_SIZES` (n = 512: tiles of 512 KiB, no
  whole huge page; n = 1536: 4.5 MiB), in interleaved rounds, the median kept
  (the cost is erratic and a typical run pays it); `distal.model.calibrate`
  fits the cost per instance and per byte of its whole huge pages.

Without arguments it does what `python -m distal.model.calibrate` does:
measures again, caches the result and prints the model (`calibrate_main`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["FIXED_COSTS_CHILD", "GROWTH_POINTS", "OVERLAP_MULTS", "OVERLAP_N", "OVERLAP_STEPS", "REDUCTION_SIZES",
           "calibrate_main", "growth_plans", "overlap_plans", "overlap_rounds", "reduction_rows", "runtime_rows",
           "timed_rounds"]

#: The argument that makes this module the fixed-costs child of `distal.model.calibrate.measure_fixed_costs`.
FIXED_COSTS_CHILD = "--fixed-costs-child"
#: Points of the one-launch plans whose cost per point and per task the growth law is fitted to.
GROWTH_POINTS = (1, 4, 16, 64, 256)
#: The overlap plans: n x n matrices, sequential steps per processor, products of the computing leaf.
OVERLAP_N, OVERLAP_STEPS, OVERLAP_MULTS = 3072, 8, 4
#: The reduction-instance plans' sizes: tiles below a huge page, and of two whole huge pages (n / 2 = 768).
REDUCTION_SIZES = (512, 1536)

_GROUPING = "DISTAL_GROUP_TASKS"  # distal.lower.grouping.ENV, read when a plan runs


def timed_rounds(runs: dict[str, Callable[[], None]], repeats: int) -> dict[str, list[float]]:
    """Seconds of each run in `repeats` rounds after a warm-up round, every other round in reverse order."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for round_ in range(repeats + 1):
        for name in names if round_ % 2 else names[::-1]:
            start = time.perf_counter()
            runs[name]()
            if round_:
                samples[name].append(time.perf_counter() - start)
    return samples


def _runner(plan: Any, out: Any, grouped: bool) -> Callable[[], None]:
    """One run of `plan` and a read of its output `out` (None: a fence instead, where reading the output back
    would cost more than what is measured)."""
    import distal.runtime as rt

    def once() -> None:
        os.environ[_GROUPING] = "1" if grouped else "0"
        plan.run()
        if out is not None:
            out.to_numpy()
        else:
            rt.fence()

    return once


def _shape_of(plan: Any, cpus: int, grouped: bool) -> tuple[list[int], list[int]]:
    """Points and Legate tasks of each launch of `plan` on `cpus` processors."""
    from distal.lower.grouping import plan_tasks

    points = [len(list(launch.points())) for _, launch in plan.launches()]
    tasks = [t.tasks for t in plan_tasks(plan, cpus, enabled=grouped)]
    return points, tasks


def growth_plans(points: tuple[int, ...] = GROWTH_POINTS) -> dict[str, tuple[Any, Any, bool]]:
    """(plan, output, grouped) of one launch of P points for each P, ungrouped and grouped: `a(i) = b(i)`, 8 each."""
    import distal as dt

    i, io, ii = dt.index_vars("i io ii")
    out: dict[str, tuple[Any, Any, bool]] = {}
    for p in points:
        m = dt.Machine(dt.Grid(p))
        fmt = dt.Format("x -> x", m)
        for grouped in (False, True):
            a = dt.Tensor("a", (8 * p,), format=fmt)
            b = dt.Tensor.from_array("b", np.arange(8.0 * p), fmt)
            a[i] = b[i]
            plan = a.schedule().distribute([i], [io], [ii], m).communicate([a, b], io).compile()
            out[f"copy P={p} {'grouped' if grouped else 'ungrouped'}"] = (plan, a, grouped)
    return out


def _tiny_plans() -> dict[str, tuple[Any, Any, bool]]:
    """SUMMA on one processor in 1 to 8 steps (launches of one point), one task per point."""
    import distal as dt
    from distal import kernels

    rng = np.random.default_rng(0)
    out: dict[str, tuple[Any, Any, bool]] = {}
    for chunk in (8, 4, 2, 1):
        a = dt.Tensor("A", (8, 8))
        ins = [dt.Tensor.from_array(x, rng.random((8, 8))) for x in "BC"]
        plan = kernels.build("summa", dt.Machine(dt.Grid(1, 1)), a, *ins, chunk=chunk).compile()
        out[f"summa chunk={chunk}"] = (plan, a, False)
    return out


def runtime_rows(repeats: int = 7, points: tuple[int, ...] = GROWTH_POINTS, cpus: int | None = None
                 ) -> list[dict[str, Any]]:
    """In a process running Legate: the tiny plans and the growth plans, each a row of
    `distal.model.runtime_costs.RuntimeRow` (as a record) with its fastest round and the median in `median`."""
    import distal.runtime as rt

    procs = cpus if cpus is not None else rt.ensure_started().cpus
    plans = {**_tiny_plans(), **growth_plans(points)}
    samples = timed_rounds({name: _runner(*entry) for name, entry in plans.items()}, repeats)
    os.environ.pop(_GROUPING, None)
    rows = []
    for name, (plan, _out, grouped) in plans.items():
        pts, tasks = _shape_of(plan, procs, grouped)
        rows.append({"points": pts, "tasks": tasks, "seconds": min(samples[name]),
                     "median": float(np.median(samples[name])), "label": name})
    return rows


def overlap_plans(n: int = OVERLAP_N, steps: int = OVERLAP_STEPS, mults: int = OVERLAP_MULTS
                  ) -> dict[str, tuple[Any, Any]]:
    """(plan, output) of the four overlap plans: fixed, comm, comp, both (module docstring)."""
    import distal as dt

    i, j, io, ii, s, si = dt.index_vars("i j io ii s si")
    m = dt.Machine(dt.Grid(2))
    rows, cols = dt.Format("xy -> x", m), dt.Format("yx -> x", m)
    rng = np.random.default_rng(0)
    b = rng.random((n, n))
    held = {rows: dt.Tensor.from_array("B", b, rows), cols: dt.Tensor.from_array("B", b, cols)}  # shared by plans
    d = dt.Tensor.from_array("D", rng.random((n, n)), rows)
    chunk = max(1, n // 2 // steps)

    def build(b_format: Any, heavy: bool) -> tuple[Any, Any]:
        a = dt.Tensor("A", (n, n), format=rows)
        bt = held[b_format]
        moved = [a, bt]
        if heavy:
            expr: Any = bt[i, j]
            for _ in range(mults):
                expr = expr * d[i, j]
            a[i, j] = expr
            moved.append(d)
        else:
            a[i, j] = bt[i, j]
        plan = a.schedule().distribute([i], [io], [ii], m).split(ii, s, si, chunk).communicate(moved, s).compile()
        return plan, a

    return {"fixed": build(rows, False), "comm": build(cols, False), "comp": build(rows, True),
            "both": build(cols, True)}


def overlap_rounds(repeats: int = 5, n: int = OVERLAP_N) -> list[dict[str, float]]:
    """In a process running Legate: seconds of the four overlap plans in each of `repeats` interleaved rounds."""
    plans = overlap_plans(n)
    samples = timed_rounds({name: _runner(plan, None, True) for name, (plan, _out) in plans.items()}, repeats)
    os.environ.pop(_GROUPING, None)
    return [{name: samples[name][k] for name in plans} for k in range(repeats)]


def reduction_rows(repeats: int = 5, sizes: tuple[int, ...] = REDUCTION_SIZES, cpus: int | None = None
                   ) -> list[dict[str, Any]]:
    """In a process running Legate: per size n, Johnson with Legate's reduction (`Grid(2, 2, 2)`) and without
    (`Grid(2, 2, 1)`), medians of interleaved rounds, with each plan's launch points and Legate tasks and the
    reduction instances of the first (count, bytes of each, the most on one processor)."""
    import distal as dt
    import distal.runtime as rt
    from distal import kernels

    procs = cpus if cpus is not None else rt.ensure_started().cpus
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        b, c = rng.random((n, n)), rng.random((n, n))
        plans = {}
        for grid in ((2, 2, 2), (2, 2, 1)):
            a = dt.Tensor("A", (n, n))
            ins = [dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)]
            plans[grid] = kernels.build("johnson", dt.Machine(dt.Grid(*grid)), a, *ins).compile()
        samples = timed_rounds({str(g): _runner(plan, None, True) for g, plan in plans.items()}, repeats)
        os.environ.pop(_GROUPING, None)
        shape = {g: _shape_of(plan, procs, True) for g, plan in plans.items()}
        rows.append({"n": n, "with": float(np.median(samples[str((2, 2, 2))])),
                     "without": float(np.median(samples[str((2, 2, 1))])),
                     "with_fastest": min(samples[str((2, 2, 2))]), "without_fastest": min(samples[str((2, 2, 1))]),
                     "points_with": shape[(2, 2, 2)][0], "tasks_with": shape[(2, 2, 2)][1],
                     "points_without": shape[(2, 2, 1)][0], "tasks_without": shape[(2, 2, 1)][1],
                     "instances": 8, "instance_bytes": (n // 2) ** 2 * 8, "per_processor": -(-8 // procs)})
        del plans
        rt.fence()
    return rows


def calibrate_main(argv: list[str] | None = None) -> int:
    """Measure this machine again, cache it and print the model; with `--fixed-costs-child`, be that child
    (print the runtime rows, the overlap rounds and the CPU processors as one JSON line)."""
    args = sys.argv[1:] if argv is None else argv
    if args == [FIXED_COSTS_CHILD]:
        import distal.runtime as rt

        cpus = rt.ensure_started().cpus
        print(json.dumps({"runtime": runtime_rows(cpus=cpus), "overlap": overlap_rounds(),
                          "reduction": reduction_rows(cpus=cpus), "cpus": cpus}))
        return 0
    from distal.model.calibrate import main

    return main(args)


if __name__ == "__main__":
    raise SystemExit(calibrate_main())
