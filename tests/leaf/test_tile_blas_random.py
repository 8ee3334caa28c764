"""The algorithm library's leaves on Legate with every float product on distal's own OpenBLAS (tile_blas.py).

Random cases: an algorithm of the library (SUMMA, Cannon, PUMMA, Johnson, Solomonik, COSMA, TTV, innerprod,
TTM, MTTKRP: each substitutes its BLAS-shaped leaf), extents of 1-13 (primes, extents that do not divide the
grid), 1-7 processors, float64 or float32, `kernels.build` then one or two runs. The sizes from which distal
calls its OpenBLAS are lowered to one element, so that every float product of a leaf on a NumPy tile goes
through `tile_blas.gemm`/`tile_blas.dot` inside Legate's tasks (tile views of the placed data, `=` into a
new output and `+=` across SUMMA's and Cannon's steps). Each result must equal `numpy.einsum`, and both
routines must have been called. (The statement-level random cases, tests/lower/test_legate_random_suite.py,
rarely draw a statement a leaf matches.)
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import kernels, tile_blas
from distal import runtime as rt

pytestmark = [pytest.mark.legate, pytest.mark.slow]

CASES = int(os.environ.get("DISTAL_TILE_BLAS_CASES", "150"))
SEED = int(os.environ.get("DISTAL_DIFFERENTIAL_SEED", "0")) + 11

# (algorithm, einsum spec with the output last, operand index letters) for the drawn extents i, j, k, l
SPECS = {
    **{name: ("ik,kj->ij", "ij", ("ik", "kj")) for name in ("summa", "cannon", "pumma", "johnson", "solomonik",
                                                            "cosma")},
    "ttv": ("ijk,k->ij", "ij", ("ijk", "k")),
    "innerprod": ("ijk,ijk->", "", ("ijk", "ijk")),
    "ttm": ("ijk,kl->ijl", "ijl", ("ijk", "kl")),
    "mttkrp": ("ijk,jl,kl->il", "il", ("ijk", "jl", "kl")),
}


def _case(rng: random.Random) -> tuple[str, int, dict[str, int], Any]:
    name = rng.choice(sorted(SPECS))
    procs = rng.randint(1, 7)
    sizes = {v: rng.choice([1, 2, 3, 5, 7, 8, 11, 12, 13]) for v in "ijkl"}
    return name, procs, sizes, rng.choice([np.float64, np.float32])


def test_random_library_cases_on_the_tile_blas_equal_einsum(machine: rt.MachineInfo,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    blas = tile_blas.library()
    if blas is None:
        pytest.skip(f"matrix products of tiles run on NumPy's BLAS here: {tile_blas.describe()}")
    monkeypatch.setattr(tile_blas, "_MIN_WORK", 1)
    monkeypatch.setattr(tile_blas, "_MIN_DOT", 1)
    calls = {"gemm": 0, "dot": 0}
    for kind, table in (("gemm", blas.gemm), ("dot", blas.dot)):
        for dtype, fn in list(table.items()):
            def spy(*args: Any, fn: Any = fn, kind: str = kind) -> Any:
                calls[kind] += 1  # under the interpreter lock: Legate's task threads count one at a time
                return fn(*args)
            monkeypatch.setitem(table, dtype, spy)
    rng = random.Random(SEED)
    failures: list[str] = []
    refused: list[str] = []
    for n in range(CASES):
        name, procs, sizes, dtype = _case(rng)
        spec, out_idx, in_idx = SPECS[name]
        data = [np.random.default_rng(n).random(tuple(sizes[v] for v in idx)).astype(dtype) for idx in in_idx]
        repro = f"case {n}: {name} on {procs} processors, extents {sizes}, {np.dtype(dtype).name}"
        try:
            m = kernels.machine(name, procs, (sizes["i"], sizes["j"], sizes["k"]) if out_idx == "ij" and
                                len(in_idx) == 2 and in_idx[1] == "kj" else None)
            out = dt.Tensor("A", tuple(sizes[v] for v in out_idx), dtype=dtype)
            ins = [dt.Tensor.from_array(x, a) for x, a in zip("BCD", data)]
            plan = kernels.build(name, m, out, *ins).compile()
            for _ in range(1 + n % 2):  # a second run writes into its previous output store
                plan.run()
            got = out.to_numpy()
        except dt.DistalError as exc:  # the library's own refusals (e.g. a grid larger than an extent)
            refused.append(f"{repro}: {str(exc).splitlines()[0]}")
            continue
        want = np.einsum(spec, *(a.astype(np.float64) for a in data))
        tol = (1e-4 if dtype is np.float32 else 1e-11) * max(1, sizes["k"] * sizes["j"])
        if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol):
            failures.append(f"{repro}: max error {np.abs(got - want).max()}")
    assert not failures, "\n".join(failures[:5])
    assert len(refused) <= CASES // 4, "\n".join(refused[:10])
    assert calls["gemm"] > 0 and calls["dot"] > 0, calls
