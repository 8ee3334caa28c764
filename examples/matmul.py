"""SUMMA matrix multiplication (paper Figure 9) on Legate, checked against NumPy.

Prints the concrete index notation, the plan (launches, tiles, projections)
with the bytes each processor receives under the paper's execution-space
model, runs it on Legate, and compares with `b @ c`.

Runs under plain `python examples/matmul.py` (Legate starts with distal's
embedded defaults) and under `legate --cpus 2 examples/matmul.py`.
Pass `--backend reference` to use the NumPy reference executor instead.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import distal as dt
from distal.format.format import Format


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=256, help="matrix size (default 256)")
    parser.add_argument("--grid", type=int, nargs=2, default=(2, 2), metavar=("GX", "GY"))
    parser.add_argument("--chunk", type=int, default=64, help="SUMMA's k chunk size")
    parser.add_argument("--backend", default="legate", choices=("legate", "reference"))
    args = parser.parse_args()

    n = args.n
    rng = np.random.default_rng(0)
    b, c = rng.random((n, n)), rng.random((n, n))
    m = dt.Machine(dt.Grid(*args.grid))
    fmt = Format("xy -> xy", m)  # each matrix in tiles over the processor grid
    A = dt.Tensor("A", (n, n), fmt)
    B = dt.Tensor.from_array("B", b, fmt)
    C = dt.Tensor.from_array("C", c, fmt)

    i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
    A[i, j] = B[i, k] * C[k, j]
    summa = (
        A.schedule()
        .distribute([i, j], [io, jo], [ii, ji], m)
        .split(k, ko, ki, args.chunk)
        .reorder([ko, ii, ji, ki])
        .communicate(A, jo)
        .communicate([B, C], ko)
        .substitute([ii, ji, ki], dt.leaf.GEMM)
    )
    print("statement:", A.assignment)
    print("schedule (concrete index notation):")
    print(summa)
    start = time.perf_counter()
    plan = summa.compile()
    print(f"compiled to a plan in {(time.perf_counter() - start) * 1e3:.1f} ms:")
    print(plan.explain())
    if args.backend == "legate":
        from distal import runtime

        runtime.ensure_started()  # start Legate before the clock starts
    start = time.perf_counter()
    if args.backend == "legate":
        plan.run()
        A.to_numpy()  # waits for the launches
    else:
        summa.evaluate(backend="reference")
    seconds = time.perf_counter() - start
    error = float(np.abs(A.to_numpy() - b @ c).max())
    ok = np.allclose(A.to_numpy(), b @ c, rtol=1e-10, atol=1e-10 * n)
    print(f"backend={args.backend} n={n} grid={tuple(args.grid)} time={seconds:.3f}s "
          f"max|A - B@C|={error:.3e} {'OK' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
