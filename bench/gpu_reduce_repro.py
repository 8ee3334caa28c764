"""A reduction over a distributed loop on GPU processors, run many times: how often is it wrong?

The GPU run of tests/lower/test_legate_differential.py found (once, not on a rerun) a wrong
result for A(i,l,j) = (B(i) + 1.5) * abs(C(j,i,k,l)) with k distributed over Grid(3, kind="gpu")
on one GPU: half of A's values lacked one processor's partial sum. This runs that case and
variants of it `--repeats` times each and prints how many results differ from NumPy.

    LEGATE_CONFIG="--gpus 1" python bench/gpu_reduce_repro.py
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import distal as dt

i, j, k, l, u1, u2, u3, u4 = dt.index_vars("i j k l u1 u2 u3 u4")


def case(points: int, kind: str, leaf: str, kext: int, rng: np.random.Generator) -> bool:
    m = dt.Machine(dt.Grid(points, kind=kind))
    b, c = rng.standard_normal(5), rng.standard_normal((7, 5, kext, 2))
    A = dt.Tensor("A", (5, 2, 7))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    if leaf == "abs":
        A[i, l, j] = (B[i] + 1.5) * dt.abs(C[j, i, k, l])
        expected = np.einsum("i,jikl->ilj", b + 1.5, np.abs(c))
    else:
        A[i, l, j] = B[i] * C[j, i, k, l]
        expected = np.einsum("i,jikl->ilj", b, c)
    sched = A.schedule().distribute([k], [u1], [u2], m).substitute([u2], dt.leaf.GENERIC)
    sched.evaluate()
    return bool(np.allclose(A.to_numpy(), expected, rtol=1e-10, atol=1e-10))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--kind", default="gpu")
    options = parser.parse_args()
    from distal import runtime as rt

    print(rt.ensure_started().as_dict(), flush=True)
    rng = np.random.default_rng(0)
    bad_total = 0
    for points, leaf, kext in ((3, "abs", 2), (3, "mul", 2), (2, "abs", 2), (3, "abs", 3), (3, "abs", 6),
                               (1, "abs", 2)):
        bad = sum(not case(points, options.kind, leaf, kext, rng) for _ in range(options.repeats))
        bad_total += bad
        print(f"Grid({points}) {leaf} k={kext}: {bad} of {options.repeats} wrong", flush=True)
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
