"""Matrix multiplication: distal's SUMMA and Cannon on Legate against NumPy and cuPyNumeric.

All in one run (one process), float64, n = 4096 by default, median of 5 rounds after
one warm-up round; each round runs every method once (interleaved):

* `numpy.matmul` with 2 BLAS threads (set around each run; Legate tasks use 1);
* `cupynumeric.matmul` under the Legate configuration of this process;
* distal plans (SUMMA on 2x2 and 2x1 grids, Cannon on 2x2 with both rotation
  strategies), each run = `plan.run()` until its launches finished; input
  stores are made once (cached on the tensors), the output store is new
  every run.

Also measured: compiling SUMMA's schedule to a plan, and the cost per launch
of a plan of tiny tiles run as index launches vs as pinned per-point launches.
Writes bench/results/matmul.json with the machine description.
Run: `python bench/matmul.py` or `legate --cpus 2 bench/matmul.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # bench/ is on sys.path when run as a script
import numpy as np
from _common import interleaved_rounds, median_seconds  # bench/ is on sys.path when run as a script

import distal as dt

i, j, k, io, jo, ko, ii, ji, ki, kos = dt.index_vars("i j k io jo ko ii ji ki kos")


def _schedules(n: int, b: np.ndarray, c: np.ndarray) -> dict[str, tuple[dt.Schedule, dict[str, Any], dt.Tensor]]:
    out: dict[str, tuple[dt.Schedule, dict[str, Any], dt.Tensor]] = {}

    def operands(m: dt.Machine) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
        A = dt.Tensor("A", (n, n), dt.Format("xy -> xy", m))
        B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy", m))
        C = dt.Tensor.from_array("C", c, dt.Format("xy -> xy", m))
        A[i, j] = B[i, k] * C[k, j]
        return A, B, C

    for grid, chunk in (((2, 2), n // 2), ((2, 2), n), ((2, 1), n)):
        m = dt.Machine(dt.Grid(*grid))
        A, B, C = operands(m)
        sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
                 .split(k, ko, ki, chunk).reorder([ko, ii, ji, ki])
                 .communicate(A, jo).communicate([B, C], ko)
                 .substitute([ii, ji, ki], dt.leaf.GEMM))
        out[f"summa_{grid[0]}x{grid[1]}_chunk{chunk}"] = (sched, {}, A)
    for rotation in ("points", "boxes"):
        m = dt.Machine(dt.Grid(2, 2))
        A, B, C = operands(m)
        sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
                 .divide(k, ko, ki, m.x).reorder([ko, ii, ji, ki])
                 .rotate(ko, [io, jo], kos)
                 .communicate(A, jo).communicate([B, C], kos)
                 .substitute([ii, ji, ki], dt.leaf.GEMM))
        out[f"cannon_2x2_{rotation}"] = (sched, {"rotation": rotation}, A)
    return out


def _compile_ms(n: int) -> float:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = (dt.Tensor(x, (n, n), dt.Format("xy -> xy", m)) for x in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
             .split(k, ko, ki, 256).reorder([ko, ii, ji, ki])
             .communicate(A, jo).communicate([B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM))
    sched.compile()
    times = []
    for _ in range(20):
        start = time.perf_counter()
        sched.compile()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 3)


def _launch_overhead(repeats: int) -> dict[str, Any]:
    """Microseconds per launch of a Cannon plan on 8x8 matrices (GEMMs of 4x4 tiles)."""
    from distal import runtime as rt

    m = dt.Machine(dt.Grid(2, 2))
    rng = np.random.default_rng(0)
    A = dt.Tensor("A", (8, 8))
    B, C = dt.Tensor.from_array("B", rng.random((8, 8))), dt.Tensor.from_array("C", rng.random((8, 8)))
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
             .divide(k, ko, ki, m.x).reorder([ko, ii, ji, ki]).rotate(ko, [io, jo], kos)
             .communicate([B, C], kos).substitute([ii, ji, ki], dt.leaf.GEMM))
    summa = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
             .divide(k, ko, ki, m.x).reorder([ko, ii, ji, ki])
             .communicate([B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM))
    out: dict[str, Any] = {}
    for name, plan in (("index_launches_summa", summa.compile()),
                       ("pinned_point_launches_cannon", sched.compile(rotation="points")),
                       ("subdomain_launches_cannon", sched.compile(rotation="boxes"))):
        def run(plan: Any = plan) -> None:
            for _ in range(20):
                plan.run()
            rt.fence()

        seconds, _ = median_seconds(run, repeats)
        launches = plan.launch_count()
        points = sum(launch.volume for _, launch in plan.launches())
        out[name] = {"launches_per_run": launches, "points_per_run": points,
                     "us_per_launch": round(seconds / 20 / launches * 1e6, 1),
                     "us_per_point": round(seconds / 20 / points * 1e6, 1),
                     "us_per_run": round(seconds / 20 * 1e6, 1)}
    return out


def _breakdown(plan: Any, b: np.ndarray, c: np.ndarray, cpus: int) -> dict[str, Any]:
    """Where a plan's time goes: its tasks' time in the leaf kernel per processor vs wall time,
    and the same GEMMs run by one BLAS thread outside Legate."""
    from distal import runtime as rt

    group = plan.groups[0]
    binding = plan.machine.bind(cpus) if plan.machine is not None else {}
    group.body.timings = []
    start = time.perf_counter()
    plan.run()
    rt.fence()
    wall = time.perf_counter() - start
    timings, group.body.timings = group.body.timings, None
    per_proc: dict[int, float] = {}
    for point, seconds, _ in timings:
        proc = binding.get(plan.processor_of(group, point), 0)
        per_proc[proc] = per_proc.get(proc, 0.0) + seconds
    # the same leaf GEMMs, one BLAS thread, outside Legate, in sequence
    _common.openblas_threads(1)
    alone = 0.0
    for _, launch in plan.launches():
        for point in launch.points():
            _, b_box, c_box = (op.box(point, info.shape) for op, info in zip(launch.operands, plan.tensors))
            bt = b[b_box[0][0]:b_box[0][1], b_box[1][0]:b_box[1][1]]
            ct = c[c_box[0][0]:c_box[0][1], c_box[1][0]:c_box[1][1]]
            t0 = time.perf_counter()
            np.matmul(bt, ct)
            alone += time.perf_counter() - t0
    busiest = max(per_proc.values(), default=0.0)
    return {"wall_seconds": round(wall, 4),
            "kernel_seconds_per_processor": {str(k): round(v, 4) for k, v in sorted(per_proc.items())},
            "kernel_seconds_total": round(sum(per_proc.values()), 4),
            "outside_kernels_seconds": round(wall - busiest, 4),
            "same_gemms_one_blas_thread_in_sequence_seconds": round(alone, 4),
            "ideal_two_processors_seconds": round(alone / max(cpus, 1), 4)}


def _rotation(repeats: int) -> dict[str, Any]:
    """Cannon with pinned per-point launches vs sub-domain launches: median ms per run, interleaved."""
    from distal import runtime as rt

    out: dict[str, Any] = {}
    for grid, n in (((2, 2), 64), ((3, 3), 64), ((2, 2), 1024), ((3, 3), 1536)):
        m = dt.Machine(dt.Grid(*grid))
        rng = np.random.default_rng(0)
        A = dt.Tensor("A", (n, n), dt.Format("xy -> xy", m))
        B = dt.Tensor.from_array("B", rng.random((n, n)), dt.Format("xy -> xy", m))
        C = dt.Tensor.from_array("C", rng.random((n, n)), dt.Format("xy -> xy", m))
        A[i, j] = B[i, k] * C[k, j]
        sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
                 .divide(k, ko, ki, m.x).reorder([ko, ii, ji, ki]).rotate(ko, [io, jo], kos)
                 .communicate(A, jo).communicate([B, C], kos).substitute([ii, ji, ki], dt.leaf.GEMM))
        plans = {r: sched.compile(rotation=r) for r in ("points", "boxes")}

        def run(plan: Any) -> Callable[[], None]:
            return lambda: (plan.run(), rt.fence())

        samples = interleaved_rounds({r: run(plan) for r, plan in plans.items()},
                                     4 * repeats if n < 256 else repeats)
        out[f"cannon_{grid[0]}x{grid[1]}_n{n}"] = {
            r: {"ms_per_run": round(statistics.median(v) * 1e3, 2), "launches": plans[r].launch_count()}
            for r, v in samples.items()}
    return out


def main() -> None:
    """Measure everything and write the JSON record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None,
                        help="file to write (default: the dated record matmul.json, _common.record)")
    options = parser.parse_args()
    n, repeats = options.n, options.repeats
    rng = np.random.default_rng(0)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    expected = b @ c

    from distal import runtime as rt

    info = rt.ensure_started()
    import cupynumeric as cn

    cb, cc = cn.array(b), cn.array(c)

    def numpy_run() -> None:
        _common.openblas_threads(2)  # NumPy with 2 BLAS threads; Legate's tasks use 1 each
        try:
            np.matmul(b, c)
        finally:
            _common.openblas_threads(1)

    def cupy_run() -> None:
        out = cn.matmul(cb, cc)
        float(out[0, 0])  # waits for the result

    runs: dict[str, Callable[[], Any]] = {"numpy": numpy_run, "cupynumeric": cupy_run}
    plans: dict[str, tuple[Any, dt.Tensor]] = {}
    for name, (sched, opts, A) in _schedules(n, b, c).items():
        plan = sched.compile(rotation=opts.get("rotation"))
        plans[name] = (plan, A)

        def run(plan: Any = plan) -> None:
            plan.run()
            rt.fence()

        runs[name] = run
    def report(round_: int, samples: dict[str, list[float]]) -> None:
        print(f"round {round_}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in samples.items() if v),
              flush=True)

    samples = interleaved_rounds(runs, repeats, report)
    med = {name: statistics.median(v) for name, v in samples.items()}
    record: dict[str, Any] = {
        "n": n, "dtype": "float64", "repeats": repeats, "method": "median of interleaved rounds",
        "numpy": {"seconds": round(med["numpy"], 4), "all": [round(x, 4) for x in samples["numpy"]],
                  "blas_threads": 2},
        "cupynumeric": {"seconds": round(med["cupynumeric"], 4),
                        "all": [round(x, 4) for x in samples["cupynumeric"]]},
        "distal": {},
    }
    for name, (plan, A) in plans.items():
        error = float(np.abs(A.to_numpy() - expected).max())
        record["distal"][name] = {
            "seconds": round(med[name], 4), "all": [round(x, 4) for x in samples[name]],
            "launches": plan.launch_count(), "max_abs_error": error,
            "vs_numpy": round(med["numpy"] / med[name], 3),
            "vs_cupynumeric": round(med["cupynumeric"] / med[name], 3)}
        print(f"distal {name}: {med[name]:.3f} s ({med['numpy'] / med[name]:.2f}x numpy, "
              f"{med['cupynumeric'] / med[name]:.2f}x cupynumeric), max error {error:.1e}")
    print(f"numpy {med['numpy']:.3f} s, cupynumeric {med['cupynumeric']:.3f} s")
    best = min(record["distal"], key=lambda x: record["distal"][x]["seconds"])
    record["best"] = {"name": best, **{k: record["distal"][best][k] for k in ("vs_numpy", "vs_cupynumeric")}}
    record["breakdown"] = _breakdown(plans[best][0], b, c, rt.processor_count("cpu"))
    print("breakdown:", json.dumps(record["breakdown"]), flush=True)
    record["compile_summa_ms"] = _compile_ms(n)
    record["launch_overhead"] = _launch_overhead(repeats)
    record["rotation"] = _rotation(repeats)
    print("rotation:", json.dumps(record["rotation"]), flush=True)
    record["legate_machine"] = info.as_dict()
    record["load_average_after"] = list(os.getloadavg())
    record["environment"] = {"OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
                             "LEGATE_CONFIG": os.environ.get("LEGATE_CONFIG")}
    if options.out is None:
        print(f"wrote {_common.record('matmul', record)}")
    else:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(json.dumps({"machine": _common.machine(), **record}, indent=2) + "\n")
    print(json.dumps({"best": record["best"], "compile_summa_ms": record["compile_summa_ms"],
                      "launch_overhead": record["launch_overhead"]}, indent=2))


if __name__ == "__main__":
    main()
