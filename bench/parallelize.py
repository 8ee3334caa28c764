"""What parallelize changes where it can run here: cpu_vector and cpu_thread inside tasks.

Cases, each run with and without the parallel loop, interleaved rounds
(`_common.interleaved_rounds`), median of 7 after a warm-up round:

* `fused-reduction`: `A(i,j) = B(i,k) * C(k,j)` (4x4 output, k = 100,000),
  distributed over `Grid(2)` as `distribute([i], [io], [ii])`, then ii and j
  fused into f inside each task. Without parallelize the kernel's cost model
  runs one slice block per value of f (6 einsum calls per task over k);
  `parallelize(f, "cpu_vector")` runs f and k as one index-mode block.
* `fused-elementwise`: `A(i,j) = B(i,j) * c(j)`, 300x300, i and j fused: the
  cost model already picks one index-mode block, so cpu_vector changes
  nothing measurable (the control).
* `threads`: TTV `A(i,j) = B(i,j,k) * c(k)` (64x64x4096) on
  `Grid(2, kind="omp")`, `distribute([i], [io], [ii])` and
  `parallelize(ii, "cpu_thread")` (the paper's CPU leaf): on OpenMP
  processors the iterations of ii run on a thread pool (2 cores here), each
  running its j and k loops as one block; without it one block covers ii, j
  and k. The
  Legate wheel has no OpenMP processors, so this case runs the plan's task
  bodies with the NumPy plan executor (the same kernels Legate runs).

The NumPy plan executor (`plan.run(backend="numpy")`) runs every case; the
first also runs on Legate (2 CPU processors). Writes
bench/results/parallelize.json with the machine description.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import interleaved_rounds, write  # bench/ is on sys.path when run as a script

import distal as dt
from distal.errors import DistalFallbackWarning

i, j, k, f, io, ii = dt.index_vars("i j k f io ii")
ROUNDS = 7


def _matmul(n: int, kk: int, m: int) -> tuple[dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(0)
    A = dt.Tensor("A", (n, m))
    B = dt.Tensor.from_array("B", rng.random((n, kk)))
    C = dt.Tensor.from_array("C", rng.random((kk, m)))
    A[i, j] = B[i, k] * C[k, j]
    return A, B.to_numpy() @ C.to_numpy()


def _cases() -> list[tuple[str, str, dt.Schedule, dt.Schedule, dt.Tensor, np.ndarray]]:
    out = []
    A, expected = _matmul(4, 100_000, 4)
    s = A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).fuse(ii, j, f)
    out.append(("fused-reduction", "cpu_vector", s, s.parallelize(f, "cpu_vector"), A, expected))
    rng = np.random.default_rng(1)
    A2 = dt.Tensor("A", (300, 300))
    B2, c2 = dt.Tensor.from_array("B", rng.random((300, 300))), dt.Tensor.from_array("c", rng.random(300))
    A2[i, j] = B2[i, j] * c2[j]
    s2 = A2.schedule().fuse(i, j, f)
    out.append(("fused-elementwise", "cpu_vector", s2, s2.parallelize(f, "cpu_vector"), A2,
                B2.to_numpy() * c2.to_numpy()))
    A3 = dt.Tensor("A", (64, 64))
    b3, v3 = rng.random((64, 64, 4096)), rng.random(4096)
    B3, c3 = dt.Tensor.from_array("B", b3), dt.Tensor.from_array("c", v3)
    A3[i, j] = B3[i, j, k] * c3[k]
    s3 = A3.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2, kind="omp")))
    out.append(("threads", "cpu_thread", s3, s3.parallelize(ii, "cpu_thread"), A3, np.einsum("ijk,k->ij", b3, v3)))
    return out


def _runner(plan: Any, out: dt.Tensor, backend: str) -> Callable[[], None]:
    def run() -> None:
        plan.run(backend=backend)
        if backend == "legate":
            out.to_numpy()  # wait for the result
    return run


def main() -> None:
    rows = []
    for name, unit, plain, parallel, out, expected in _cases():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DistalFallbackWarning)
            plans = {"none": plain.compile(), unit: parallel.compile()}
        how = [str(p) for g in plans[unit].groups for p in g.body.parallel]
        backends = ["numpy", "legate"] if name == "fused-reduction" else ["numpy"]
        for backend in backends:
            runs = {label: _runner(plan, out, backend) for label, plan in plans.items()}
            for label, run in runs.items():  # each is right before it is timed
                out.set_array(np.zeros(out.concrete_shape()))
                run()
                assert np.allclose(out.to_numpy(), expected), (name, label, backend)
            samples = interleaved_rounds(runs, ROUNDS)
            medians = {label: statistics.median(ts) for label, ts in samples.items()}
            row = {"case": name, "backend": backend, "unit": unit, "parallel": how,
                   "median_seconds": {label: round(t, 6) for label, t in medians.items()},
                   "speedup": round(medians["none"] / medians[unit], 3),
                   "samples": {label: [round(t, 6) for t in ts] for label, ts in samples.items()}}
            rows.append(row)
            print({key: row[key] for key in ("case", "backend", "median_seconds", "speedup")}, flush=True)
    path = write("parallelize", {"rounds": ROUNDS, "cases": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
