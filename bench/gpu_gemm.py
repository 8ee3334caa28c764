"""GEMM GFLOP/s on GPU processors: distal's SUMMA with GEMM leaves against CuPy and cuPyNumeric.

Needs Legate started with GPUs and CuPy (`pip install 'distal[gpu]'`):

    legate --gpus 1 bench/gpu_gemm.py            # or LEGATE_CONFIG="--gpus 1" python bench/gpu_gemm.py

For each dtype (float64, float32) and n (default 8192): `cupy.matmul` on one
GPU (a lower bound on time: no runtime in between), `cupynumeric.matmul`,
and distal's SUMMA on a `g x 1` grid of GPU processors (g = GPUs Legate
runs), k split into chunks of n / 2. Median of 5 interleaved rounds after a
warm-up round; GFLOP/s = 2 n^3 / seconds. Writes bench/results/gpu_gemm.json
with the machine description. Without GPUs it says so and writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
from _common import interleaved_rounds, write  # bench/ is on sys.path when run as a script

import distal as dt

i, j, k, io, jo, ko, ii, ji, ki = dt.index_vars("i j k io jo ko ii ji ki")


def _summa(n: int, gpus: int, b: np.ndarray, c: np.ndarray) -> tuple[dt.Schedule, dt.Tensor]:
    m = dt.Machine(dt.Grid(gpus, 1, kind="gpu"))
    fmt = dt.Format("xy -> xy", m)
    A = dt.Tensor("A", (n, n), fmt, dtype=b.dtype)
    B, C = dt.Tensor.from_array("B", b, fmt), dt.Tensor.from_array("C", c, fmt)
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
             .split(k, ko, ki, max(n // 2, 1)).reorder([ko, ii, ji, ki])
             .communicate(A, jo).communicate([B, C], ko)
             .substitute([ii, ji, ki], dt.leaf.GEMM))
    return sched, A


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="gpu_gemm")
    options = parser.parse_args()
    from distal import runtime as rt

    info = rt.ensure_started()
    if info.gpus == 0:
        print("gpu_gemm: Legate runs no GPU processors; run it as `legate --gpus 1 bench/gpu_gemm.py` "
              "on a machine with a GPU (needs distal[gpu]). Nothing recorded.", file=sys.stderr)
        return 2
    import cupy

    try:
        import cupynumeric as cn
    except ImportError:  # a machine with Legate and CuPy but not cuPyNumeric: the other two are measured
        cn = None

    n, repeats = options.n, options.repeats
    flops = 2.0 * n**3
    record: dict[str, Any] = {"n": n, "repeats": repeats, "gpus": info.gpus,
                              "method": "median of interleaved rounds", "results": {}}
    for dtype in (np.float64, np.float32):
        rng = np.random.default_rng(0)
        b = rng.standard_normal((n, n)).astype(dtype)
        c = rng.standard_normal((n, n)).astype(dtype)
        gb, gc = cupy.asarray(b), cupy.asarray(c)
        nb, nc = (cn.array(b), cn.array(c)) if cn is not None else (None, None)
        sched, A = _summa(n, info.gpus, b, c)
        plan = sched.compile()

        def cupy_run(gb: Any = gb, gc: Any = gc) -> None:
            cupy.matmul(gb, gc)
            cupy.cuda.Device().synchronize()

        def cupynumeric_run(nb: Any = nb, nc: Any = nc) -> None:
            out = cn.matmul(nb, nc)
            float(out[0, 0])  # waits for the result

        def distal_run(plan: Any = plan) -> None:
            plan.run()
            rt.fence()

        methods = {"cupy": cupy_run, "cupynumeric": cupynumeric_run, "distal_summa": distal_run}
        if cn is None:
            del methods["cupynumeric"]
        samples = interleaved_rounds(methods, repeats)
        got = A.to_numpy()
        expected = (gb @ gc).get()
        error = float(np.abs(got - expected).max() / max(1.0, float(np.abs(expected).max())))
        entry: dict[str, Any] = {"relative_error_vs_cupy": error}
        for name, times in samples.items():
            med = statistics.median(times)
            entry[name] = {"seconds": round(med, 5), "gflops": round(flops / med / 1e9, 1),
                           "all": [round(t, 5) for t in times]}
        entry["distal_vs_cupy"] = round(entry["cupy"]["seconds"] / entry["distal_summa"]["seconds"], 3)
        if "cupynumeric" in entry:
            entry["distal_vs_cupynumeric"] = round(
                entry["cupynumeric"]["seconds"] / entry["distal_summa"]["seconds"], 3)
        record["results"][np.dtype(dtype).name] = entry
        print(f"{np.dtype(dtype).name}: " + ", ".join(
            f"{name} {entry[name]['gflops']} GFLOP/s" for name in samples) + f", error {error:.1e}", flush=True)
    record["legate"] = info.as_dict()
    path = write(options.out, record)
    print(f"wrote {Path(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
