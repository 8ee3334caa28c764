"""The fixed cost of running a plan: an almost empty statement on 4 points.

`A(i) = B(i)` with n = 8 (two elements per point) on a 4-processor machine
(`Grid(4)`), one launch of 4 points; the same with the output zero-filled by
a launch of its own first, as before the first launch wrote it
(`assign_fill_first`: `runtime._execute._first_launch_writes` answers None
for it); and `A(i) += B(i)` (no zero-fill in any version). Each run is `plan.run()` until its launches finished
(`runtime.fence()`); the figure is the median over interleaved rounds, in
microseconds per plan. Also recorded: the launches Legate received per run
of each plan (the `=` plan's zero-fill launch, when there is one, counts).

Writes bench/results/plan_overhead.json with the machine description and the
load average (`os.getloadavg`): on a loaded machine the figure is noise.
Run: `python bench/plan_overhead.py [--rounds N] [--label before|after]`
(a label keeps earlier labels' figures in the file, to compare).
"""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

import _common  # bench/ is on sys.path when run as a script
import numpy as np

import distal as dt
from distal import runtime as rt


def _plans(n: int = 8) -> dict[str, Any]:
    i, io, ii = dt.index_vars("i io ii")
    machine = dt.Machine(dt.Grid(4))
    fmt = dt.Format("x -> x", machine)
    plans = {}
    for name, accumulate in (("assign", False), ("accumulate", True)):
        A = dt.Tensor("A", (n,), format=fmt)
        B = dt.Tensor.from_array("B", np.arange(float(n)), fmt)
        if accumulate:
            A[i] += B[i]  # type: ignore[misc]
        else:
            A[i] = B[i]
        sched = A.schedule().distribute([i], [io], [ii], machine).communicate([A, B], io)
        plans[name] = sched.compile()
    return plans


def _launches(plan: Any) -> int:
    """Legate launches of one run of `plan` (counted by wrapping the runtime's launch functions)."""
    from distal.runtime import _execute, _launch, _make

    count = [0]
    saved = {}
    for module in (_execute, _make, _launch):
        for name in ("index_launch", "point_launch"):
            fn = getattr(module, name, None)
            if fn is not None:
                saved[(module, name)] = fn

                def counted(*args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
                    count[0] += 1
                    return _fn(*args, **kwargs)

                setattr(module, name, counted)
    try:
        plan.run()
        rt.fence()
    finally:
        for (module, name), fn in saved.items():
            setattr(module, name, fn)
    return count[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--label", default="current")
    args = parser.parse_args()
    rt.ensure_started()
    plans = _plans()

    def runner(plan: Any) -> Any:
        def run() -> None:
            plan.run()
            rt.fence()
        return run

    for plan in plans.values():  # warm-up: kernels registered, stores made
        runner(plan)()
    from distal.runtime import _execute

    def fill_first(plan: Any) -> Any:
        def run() -> None:
            saved = _execute._first_launch_writes
            _execute._first_launch_writes = lambda *a: None  # type: ignore[assignment]
            try:
                plan.run()
                rt.fence()
            finally:
                _execute._first_launch_writes = saved
        return run

    runs = {name: runner(p) for name, p in plans.items()}
    runs["assign_fill_first"] = fill_first(plans["assign"])
    samples = _common.interleaved_rounds(runs, args.rounds)
    counts = {name: _launches(p) for name, p in plans.items()}
    saved = _execute._first_launch_writes
    _execute._first_launch_writes = lambda *a: None  # type: ignore[assignment]
    try:
        counts["assign_fill_first"] = _launches(plans["assign"])
    finally:
        _execute._first_launch_writes = saved
    figures = {name: {"median_us": statistics.median(s) * 1e6, "min_us": min(s) * 1e6,
                      "launches_per_run": counts[name]} for name, s in samples.items()}
    load = os.getloadavg()
    previous = _common.labels("plan_overhead")
    previous[args.label] = {"plans": figures, "rounds": args.rounds, "loadavg": list(load),
                            "cores": os.cpu_count()}
    path = _common.record("plan_overhead", {
        "what": "A(i) = B(i) and A(i) += B(i), n = 8, Grid(4): one plan.run() + fence, median over rounds",
        "labels": previous,
    })
    for name, fig in figures.items():
        print(f"{args.label} {name}: median {fig['median_us']:.0f} us, min {fig['min_us']:.0f} us, "
              f"{fig['launches_per_run']} launches per run (load average {load[0]:.1f})")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
