"""Where the time of distal's higher-order kernels goes (issue 14, items 1 and 3).

For each of TTV, innerprod, TTM and MTTKRP at the suite's sizes
(`bench/suite.py` HIGHER; `--scale` shrinks them) on 2 CPU processors, this
runs the benchmark's measured step (`plan.run()` then `out.to_numpy()`)
`--rounds` times and splits it:

* **Python side** (main thread): `plan.run()` submission, and `to_numpy()`
  (waiting for the tasks, then copying the result to the host); a cProfile
  of both (top functions by cumulative time, `--cprofile`).
* **Inside the task bodies** (timestamps taken in each task, summed over
  tasks and divided by the 2 processors): store -> array conversion
  (`np.asarray` of each store), zero-fill of an output tile (`task_body.zero_fill`:
  only where a task's first step does not write its whole tile),
  the leaf's kernel (`Leaf.compute_into`: BLAS or the reduction), and the
  rest of the task body (views, dtype checks, block tiling).

Each category is printed as seconds per run and as a fraction of the wall
time, next to `numpy.einsum` (2 BLAS threads) of the same statement measured
in the same process, interleaved. Wall times on a busy machine are noise;
the fractions and the ratio within one run are what to compare.

Run: `python bench/profile_higher.py [--kernels ttm ttv] [--scale 0.5] [--rounds 3] [--json PATH]`.
LEGATE_CONFIG defaults to "--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem 12000".
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("LEGATE_CONFIG", "--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem 12000")

import numpy as np  # noqa: E402
from suite import HIGHER, SPECS, _inputs, _out_shape  # noqa: E402

_lock = threading.Lock()
_totals: dict[str, float] = defaultdict(float)
_span: list[tuple[float, float]] = []  # (start, end) of each task body


def _add(what: str, seconds: float) -> None:
    with _lock:
        _totals[what] += seconds


def instrument() -> None:
    """Wrap the task machinery with timestamps (store -> array, zero-fill, leaf kernel, whole task)."""
    import contextlib

    from distal import leaf as leaf_module
    from distal.lower import task_body
    from distal.runtime import _tasks

    original_scope = _tasks.device_scope

    @contextlib.contextmanager
    def timed_scope(ctx: Any) -> Iterator[Callable[[Any], Any]]:
        with original_scope(ctx) as view:
            def timed_view(store: Any) -> Any:
                start = time.perf_counter()
                try:
                    return view(store)
                finally:
                    _add("store->array", time.perf_counter() - start)
            yield timed_view

    _tasks.device_scope = timed_scope  # type: ignore[assignment]

    original_kernel = _tasks.kernel

    def timed_kernel(key: int) -> Any:
        name, fn = original_kernel(key)

        def run(point: tuple[int, ...], *tiles: Any) -> None:
            start = time.perf_counter()
            try:
                fn(point, *tiles)
            finally:
                end = time.perf_counter()
                _add("task body", end - start)
                with _lock:
                    _span.append((start, end))
        return name, run

    _tasks.kernel = timed_kernel  # type: ignore[assignment]

    zero_fill = task_body.zero_fill

    def timed_zero(tile: Any) -> None:
        start = time.perf_counter()
        zero_fill(tile)
        _add("zero-fill", time.perf_counter() - start)

    task_body.zero_fill = timed_zero

    compute_into = leaf_module.Leaf.compute_into

    def timed_compute_into(self: Any, out: Any, *operands: Any, **kw: Any) -> None:
        start = time.perf_counter()
        try:
            compute_into(self, out, *operands, **kw)
        finally:
            _add("leaf kernel", time.perf_counter() - start)

    leaf_module.Leaf.compute_into = timed_compute_into  # type: ignore[method-assign]


def profile_kernel(name: str, n: int, l: int, rounds: int, cprofile: int, cupy: bool = False) -> dict[str, Any]:
    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    sys.path.insert(0, str(HERE))
    from check import numpy_threads

    set_threads = numpy_threads()
    arrays = _inputs(name, n, l)
    cn_args: list[Any] = []
    if cupy:  # as bench/suite.py interleaves it
        import cupynumeric as cn

        cn_args = [cn.asarray(a) for a in arrays]
    spec = SPECS[name][0]
    names = "aBCD" if name == "innerprod" else "ABCD"
    ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
    out = dt.Tensor(names[0], _out_shape(name, n, l))
    plan = kernels.build(name, kernels.machine(name, 2), out, *ins).compile()
    plan.run()
    out.to_numpy()  # warm-up: placement of the inputs, task registration
    rt.fence()
    set_threads(2)
    np.einsum(spec, *arrays, optimize=True)
    set_threads(1)
    rows: list[dict[str, float]] = []
    profiler = cProfile.Profile()
    for _ in range(rounds):
        set_threads(2)
        start = time.perf_counter()
        np.einsum(spec, *arrays, optimize=True)
        numpy_s = time.perf_counter() - start
        set_threads(1)
        if cn_args:
            start = time.perf_counter()
            float(cn.einsum(spec, *cn_args).sum())
            cupy_s = time.perf_counter() - start
        _totals.clear()
        _span.clear()
        profiler.enable()
        start = time.perf_counter()
        plan.run()
        submitted = time.perf_counter()
        result = out.to_numpy()
        end = time.perf_counter()
        profiler.disable()
        del result
        task = dict(_totals)
        body = task.get("task body", 0.0)
        row = {"wall": end - start, "numpy": numpy_s, "submit": submitted - start, "to_numpy": end - submitted}
        if cn_args:
            row["cupynumeric"] = cupy_s
        procs = 2.0
        row["tasks: store->array"] = task.get("store->array", 0.0) / procs
        row["tasks: zero-fill"] = task.get("zero-fill", 0.0) / procs
        row["tasks: leaf kernel"] = task.get("leaf kernel", 0.0) / procs
        row["tasks: rest of body"] = max(0.0, body - task.get("zero-fill", 0.0) - task.get("leaf kernel", 0.0)) / procs
        first, last = min(a for a, _ in _span), max(b for _, b in _span)
        row["before first task"] = first - start
        row["task span"] = last - first
        row["after last task"] = end - last
        rows.append(row)
        timeline = [(round(a - start, 4), round(b - start, 4)) for a, b in sorted(_span)]
        rt.fence()
    expected = np.einsum(spec, *arrays, optimize=True)
    got = out.to_numpy()
    error = float(np.abs(got - expected).max() / max(1.0, float(np.abs(expected).max())))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    report: dict[str, Any] = {"size": [n, l], "seconds": med, "vs_numpy": med["numpy"] / med["wall"],
                              "fractions_of_wall": {k: v / med["wall"] for k, v in med.items()
                                                    if k not in ("wall", "numpy", "cupynumeric")},
                              "max_rel_error": error, "last_timeline": timeline}
    if cprofile:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(cprofile)
        report["cprofile"] = text.getvalue()
    return report


def ab_fresh(name: str, n: int, l: int, rounds: int) -> dict[str, Any]:
    """Interleaved rounds of numpy.einsum (2 BLAS threads), the plan with its first launch writing the new
    output (`TaskBody.run_fresh`) and the plan with each task zeroing its tile and then adding (as before
    run_fresh; `_ZeroFirst` with the kernel's `run_fresh` hidden): medians and ratios."""
    import distal as dt
    from distal import kernels
    from distal import runtime as rt
    from distal.runtime import _execute, _tasks

    sys.path.insert(0, str(HERE))
    from check import numpy_threads

    set_threads = numpy_threads()
    arrays = _inputs(name, n, l)
    spec = SPECS[name][0]
    names = "aBCD" if name == "innerprod" else "ABCD"
    ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
    out = dt.Tensor(names[0], _out_shape(name, n, l))
    plan = kernels.build(name, kernels.machine(name, 2), out, *ins).compile()
    fresh_call = _execute._ZeroFirst.__call__

    def zero_then_add(self: Any, point: tuple[int, ...], *tiles: Any) -> None:
        tiles[self.position][...] = 0
        self.kernel(point, *tiles)

    cpu: list[float] = []  # thread CPU seconds of the task bodies (less sensitive to a loaded machine than wall)
    original_kernel = _tasks.kernel

    def cpu_kernel(key: int) -> Any:
        kname, fn = original_kernel(key)

        def timed(point: tuple[int, ...], *tiles: Any) -> None:
            start = time.thread_time()
            try:
                fn(point, *tiles)
            finally:
                with _lock:
                    cpu.append(time.thread_time() - start)
        return kname, timed

    _tasks.kernel = cpu_kernel  # type: ignore[assignment]

    def run(fresh: bool) -> float:
        _execute._ZeroFirst.__call__ = fresh_call if fresh else zero_then_add  # type: ignore[method-assign]
        try:
            cpu.clear()
            start = time.perf_counter()
            plan.run()
            out.to_numpy()
            wall = time.perf_counter() - start
            rt.fence()
            times[("fresh" if fresh else "zero then add") + " task cpu"].append(sum(cpu))
            return wall
        finally:
            rt.fence()
            _execute._ZeroFirst.__call__ = fresh_call  # type: ignore[method-assign]

    times: dict[str, list[float]] = {"numpy": [], "fresh": [], "zero then add": [], "fresh task cpu": [],
                                     "zero then add task cpu": []}
    run(True)
    run(False)  # warm-up: placement, task registration, both variants' programs
    for v in times.values():
        v.clear()
    for r in range(rounds):
        set_threads(2)
        start = time.perf_counter()
        np.einsum(spec, *arrays, optimize=True)
        times["numpy"].append(time.perf_counter() - start)
        set_threads(1)
        order = (True, False) if r % 2 == 0 else (False, True)
        for fresh in order:
            times["fresh" if fresh else "zero then add"].append(run(fresh))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"size": [n, l], "median_seconds": med, "seconds": times,
            "vs_numpy": {k: med["numpy"] / med[k] for k in ("fresh", "zero then add")}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", nargs="*", default=["ttv", "innerprod", "ttm", "mttkrp"])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the suite's extents by this")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cprofile", type=int, default=0, help="print this many cProfile lines per kernel")
    parser.add_argument("--cupynumeric", action="store_true",
                        help="run cupynumeric.einsum before each distal run, as bench/suite.py interleaves it")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--ab-fresh", action="store_true",
                        help="instead: interleave numpy, the plan writing its new output (run_fresh), and the "
                             "plan zeroing each tile then adding (as before); medians and ratios")
    args = parser.parse_args(argv)
    from distal import runtime as rt

    rt.ensure_started()
    if args.ab_fresh:
        found: dict[str, Any] = {"legate_config": os.environ.get("LEGATE_CONFIG"),
                                 "loadavg_before": list(os.getloadavg()), "kernels": {}}
        for name in args.kernels:
            n, l = HIGHER[name]
            n, l = max(4, int(n * args.scale)), max(1, int(l * args.scale)) if l else 0
            rep = ab_fresh(name, n, l, args.rounds)
            found["kernels"][name] = rep
            med = rep["median_seconds"]
            print(f"== {name} size {rep['size']}: numpy {med['numpy']:.4f} s, fresh {med['fresh']:.4f} s "
                  f"({rep['vs_numpy']['fresh']:.2f}x numpy), zero then add {med['zero then add']:.4f} s "
                  f"({rep['vs_numpy']['zero then add']:.2f}x numpy); fresh / zero-then-add wall "
                  f"{med['fresh'] / med['zero then add']:.3f}, task CPU {med['fresh task cpu']:.4f} s / "
                  f"{med['zero then add task cpu']:.4f} s = "
                  f"{med['fresh task cpu'] / med['zero then add task cpu']:.3f}")
        found["loadavg_after"] = list(os.getloadavg())
        print(f"load average before {found['loadavg_before']}, after {found['loadavg_after']}")
        if args.json is not None:
            args.json.write_text(json.dumps(found, indent=2) + "\n")
        return 0
    instrument()
    results: dict[str, Any] = {"legate_config": os.environ.get("LEGATE_CONFIG"),
                               "loadavg_before": list(os.getloadavg()), "kernels": {}}
    for name in args.kernels:
        n, l = HIGHER[name]
        n, l = max(4, int(n * args.scale)), max(1, int(l * args.scale)) if l else 0
        rep = profile_kernel(name, n, l, args.rounds, args.cprofile, args.cupynumeric)
        results["kernels"][name] = rep
        cupy_text = (f", cupynumeric {rep['seconds']['cupynumeric']:.3f} s" if "cupynumeric" in rep["seconds"] else "")
        print(f"== {name} size {rep['size']}: distal {rep['seconds']['wall']:.3f} s, numpy "
              f"{rep['seconds']['numpy']:.3f} s{cupy_text}, vs numpy {rep['vs_numpy']:.2f}x, "
              f"error {rep['max_rel_error']:.1e}")
        print(f"   tasks (start, end) after plan.run() began, last round: {rep['last_timeline']}")
        for k, v in rep["fractions_of_wall"].items():
            print(f"   {k:22s} {rep['seconds'][k]:8.4f} s  {100 * v:5.1f}% of wall")
        if "cprofile" in rep:
            print(rep["cprofile"])
    results["loadavg_after"] = list(os.getloadavg())
    print(f"load average before {results['loadavg_before']}, after {results['loadavg_after']}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
