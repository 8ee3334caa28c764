"""The reference executor as an oracle: the tutorial's SUMMA at n = 1024 with `backend="reference"`.

SUMMA on a 2x2 machine, k split by 256, GEMM leaves (docs/tutorial.md):
`summa.evaluate(backend="reference")` runs the scheduled loops in one
process; each substituted leaf runs with the leaf's own NumPy kernel
(`distal.leaf.Leaf.run`, here `numpy.matmul`). Also timed: the same
statement without the leaf (the vectorised index-array blocks) at a smaller
n, and numpy's own product for scale. Median of 3 after a warm-up.
With `--index-path`, also the n = 1024 SUMMA once with the leaf path turned
off: every block through index arrays, as the executor ran GEMM leaves
before it used the leaf's kernel (about a minute). Writes
bench/results/reference_oracle.json with the machine description.

    .venv/bin/python bench/reference_oracle.py [n] [--index-path]
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from _common import median_seconds, write  # bench/ is on sys.path when run as a script

import distal as dt
from distal import reference


def _summa(n: int, leaf: bool) -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng(0)
    i, j, k = dt.index_vars("i j k")
    io, jo, ii, ji, ko, ki = dt.index_vars("io jo ii ji ko ki")
    m = dt.Machine(dt.Grid(2, 2))
    A = dt.Tensor("A", (n, n))
    B = dt.Tensor.from_array("B", rng.random((n, n)))
    C = dt.Tensor.from_array("C", rng.random((n, n)))
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule()
             .distribute([i, j], [io, jo], [ii, ji], m)
             .split(k, ko, ki, min(256, n))
             .reorder([ko, ii, ji, ki])
             .communicate(A, jo)
             .communicate([B, C], ko))
    if leaf:
        sched = sched.substitute([ii, ji, ki], dt.leaf.GEMM)
    return sched, B.to_numpy() @ C.to_numpy()


def _time(n: int, leaf: bool, repeats: int) -> float:
    sched, want = _summa(n, leaf)
    seconds, _ = median_seconds(lambda: sched.evaluate(backend="reference"), repeats=repeats, warmup=1)
    np.testing.assert_allclose(sched.output.to_numpy(), want, rtol=1e-10)
    return float(seconds)


def _index_path_once(n: int) -> float:
    """The SUMMA once with leaf blocks sent through index arrays (the executor's path before leaves ran)."""
    sched, want = _summa(n, True)
    leaf_block = reference._Executor.leaf_block
    reference._Executor.leaf_block = lambda self, *args: False  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        sched.evaluate(backend="reference")
        seconds = time.perf_counter() - start
    finally:
        reference._Executor.leaf_block = leaf_block  # type: ignore[method-assign]
    np.testing.assert_allclose(sched.output.to_numpy(), want, rtol=1e-10)
    return seconds


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 1024
    rows: dict[str, Any] = {"n": n, "machine_grid": [2, 2], "k_chunk": min(256, n)}
    rows["summa_gemm_leaf_seconds"] = round(_time(n, True, 3), 4)
    print(f"SUMMA n={n}, GEMM leaves, reference backend: {rows['summa_gemm_leaf_seconds']} s", flush=True)
    small = min(n, 256)
    rows["no_leaf_n"] = small
    rows["summa_no_leaf_seconds"] = round(_time(small, False, 3), 4)
    print(f"SUMMA n={small}, no leaf (index-array blocks): {rows['summa_no_leaf_seconds']} s", flush=True)
    if "--index-path" in sys.argv:
        rows["summa_index_path_seconds"] = round(_index_path_once(n), 2)
        print(f"SUMMA n={n}, leaf blocks through index arrays (before): {rows['summa_index_path_seconds']} s",
              flush=True)
    rng = np.random.default_rng(0)
    b, c = rng.random((n, n)), rng.random((n, n))
    rows["numpy_matmul_seconds"] = round(median_seconds(lambda: b @ c, repeats=3)[0], 4)
    print(f"numpy matmul n={n}: {rows['numpy_matmul_seconds']} s")
    path = write("reference_oracle", rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
