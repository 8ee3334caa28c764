"""The fixed cost of a plan and of one task point: a copy on 4 points and small SUMMAs.

Four plans: `a(i) = b(i)` and `c(i) += d(i)` with n = 8 on `Grid(4)` (one
launch of 4 points; the second was bench/plan_overhead.py's, folded in
here: its other figures, the `=` plan with the old zero-fill launch forced
through a private runtime function and launches counted by wrapping the
runtime's, are kept in bench/results/history.json), and SUMMA
(`A(i,j) = B(i,k) * C(k,j)`, the library's schedule) at n = 128 on
`Grid(2, 1)` and on `Grid(2, 2)` (two steps of 4 points). Each run is
`plan.run()` until its launches finished (`runtime.fence()`); the figure is
the median over interleaved rounds, every other round in reverse order
(`_common.alternating_rounds`).

The machine is shared and noisy, so the task body's own cost is also
counted with cProfile: every task point of a few runs executes under a
profiler of its own (task bodies run on Legate's threads), and the figures
are the Python calls (function and builtin calls the profiler saw) and the
seconds per task point. The call count does not depend on load.

Writes bench/results/fixed_cost.json with the machine description and the
load average. Run: `LEGATE_CONFIG="--cpus 2 --sysmem 3000 --utility 1"
python bench/fixed_cost.py [--rounds N] [--label before|after|compiled]` (a
label keeps earlier labels' figures in the file, to compare). `--ungrouped` adds each plan again with one
Legate task per launch point (`DISTAL_GROUP_TASKS=0`; by default the points a processor runs are one task,
`distal.lower.grouping`), measured in the same interleaved rounds. `--walked` adds each
plan again with task bodies that walk the statement at every call
(`TaskBody.keep_programs = False`), measured in the same interleaved rounds. From label
"compiled" on, the whole Python task (`distal.runtime.observed`: layout, store ->
array views and the body) is profiled too (`task_python_calls_per_point`).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import statistics
import threading
import time
from typing import Any

import _common  # bench/ is on sys.path when run as a script
import numpy as np

import distal as dt
from distal import runtime as rt
from distal.lower.grouping import ENV as GROUPING
from distal.lower.task_body import TaskBody


def _plans(walked: bool) -> dict[str, Any]:
    i, io, ii = dt.index_vars("i io ii")
    m4 = dt.Machine(dt.Grid(4))
    fmt = dt.Format("x -> x", m4)
    a = dt.Tensor("a", (8,), format=fmt)
    b = dt.Tensor.from_array("b", np.arange(8.0), fmt)
    a[i] = b[i]
    copy = a.schedule().distribute([i], [io], [ii], m4).communicate([a, b], io)
    c = dt.Tensor("c", (8,), format=fmt)
    d = dt.Tensor.from_array("d", np.arange(8.0), fmt)
    c[i] += d[i]  # type: ignore[misc]
    accumulate = c.schedule().distribute([i], [io], [ii], m4).communicate([c, d], io)
    n = 128
    m21 = dt.Machine(dt.Grid(2, 1))
    rng = np.random.default_rng(0)
    A = dt.Tensor("A", (n, n))
    B = dt.Tensor.from_array("B", rng.random((n, n)))
    C = dt.Tensor.from_array("C", rng.random((n, n)))
    summa = dt.kernels.build("summa", m21, A, B, C)
    A4 = dt.Tensor("A4", (n, n))
    B4, C4 = dt.Tensor.from_array("B4", rng.random((n, n))), dt.Tensor.from_array("C4", rng.random((n, n)))
    summa4 = dt.kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A4, B4, C4)
    plans = {"copy_n8_grid4": copy.compile(), "accumulate_n8_grid4": accumulate.compile(),
             "summa_2x1_n128": summa.compile(), "summa_2x2_n128": summa4.compile()}
    if walked:  # the same plans with task bodies that walk the statement at every call (no kept programs)
        for name, sched in (("copy_n8_grid4", copy), ("summa_2x1_n128", summa)):
            plan = sched.compile()
            for group in plan.groups:
                group.body.keep_programs = False
            plans[f"{name}_walked"] = plan
    return plans


def _profiled(original: Any, lock: threading.Lock, totals: list[float]) -> Any:
    """`original` run under a profiler of its own at each call; adds (calls, seconds, 1) into `totals`."""

    def profiled(*args: Any) -> None:
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.runcall(original, *args)
        spent = time.perf_counter() - start
        counted = sum(entry.callcount for entry in prof.getstats())
        with lock:
            totals[0] += counted
            totals[1] += spent
            totals[2] += 1

    return profiled


def _profile_points(plan: Any, runs: int) -> dict[str, float]:
    """Python calls and seconds per task point over `runs` runs of `plan`, each point under its own profiler.

    Twice: the task body alone (`TaskBody.__call__`), then the whole Python task (`distal.runtime.observed`'s
    task hook: the layout, the store -> array views and the body).
    """
    lock = threading.Lock()
    body, task = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    original = TaskBody.__call__
    TaskBody.__call__ = _profiled(original, lock, body)  # type: ignore[method-assign]
    try:
        for _ in range(runs):
            plan.run()
            rt.fence()
    finally:
        TaskBody.__call__ = original  # type: ignore[method-assign]
    with rt.observed(task=_profiled(lambda work: work(), lock, task)):
        for _ in range(runs):
            plan.run()
            rt.fence()
    n, m = max(1.0, body[2]), max(1.0, task[2])
    return {"points": int(body[2]), "python_calls_per_point": body[0] / n,
            "profiled_us_per_point": body[1] / n * 1e6,
            "task_python_calls_per_point": task[0] / m, "task_profiled_us_per_point": task[1] / m * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--profile-runs", type=int, default=10)
    parser.add_argument("--label", default="current")
    parser.add_argument("--walked", action="store_true",
                        help="also run each plan with task bodies that walk the statement at every call, interleaved")
    parser.add_argument("--ungrouped", action="store_true",
                        help="also run each plan with one Legate task per launch point (DISTAL_GROUP_TASKS=0), "
                             "interleaved")
    args = parser.parse_args()
    rt.ensure_started()
    plans = _plans(args.walked)

    if args.ungrouped:  # the same plans again, one Legate task per launch point (DISTAL_GROUP_TASKS=0)
        plans = {k: v for name, plan in plans.items() for k, v in ((name, plan), (f"{name}_ungrouped", plan))}

    def runner(name: str, plan: Any) -> Any:
        grouping = "0" if name.endswith("_ungrouped") else "1"

        def run() -> None:
            os.environ[GROUPING] = grouping
            plan.run()
            rt.fence()
        return run

    runs = {name: runner(name, p) for name, p in plans.items()}
    for run in runs.values():  # warm-up: kernels registered, stores made
        run()
    samples = _common.alternating_rounds(runs, args.rounds)
    figures: dict[str, Any] = {}
    for name, s in samples.items():
        os.environ[GROUPING] = "0" if name.endswith("_ungrouped") else "1"
        figures[name] = {"median_us": statistics.median(s) * 1e6, "min_us": min(s) * 1e6,
                         "legate_tasks": plans[name].stats()["legate_task_count"],
                         **_profile_points(plans[name], args.profile_runs)}
    os.environ.pop(GROUPING, None)
    load = os.getloadavg()
    previous = _common.labels("fixed_cost")
    previous[args.label] = {"plans": figures, "rounds": args.rounds, "loadavg": list(load),
                            "legate_config": os.environ.get("LEGATE_CONFIG", "")}
    path = _common.record("fixed_cost", {
        "what": "plan.run() + fence, median over interleaved rounds; cProfile calls and seconds per task point",
        "labels": previous,
    })
    for name, fig in figures.items():
        print(f"{args.label} {name}: median {fig['median_us']:.0f} us, min {fig['min_us']:.0f} us, "
              f"{fig['legate_tasks']} Legate tasks; "
              f"{fig['python_calls_per_point']:.0f} Python calls and {fig['profiled_us_per_point']:.0f} us "
              f"(profiled) per task point over {fig['points']} points; whole Python task "
              f"{fig['task_python_calls_per_point']:.0f} calls, {fig['task_profiled_us_per_point']:.0f} us "
              f"(load {load[0]:.1f})")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
