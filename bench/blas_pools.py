"""dt.einsum's eager product right after NumPy's own BLAS call: two OpenBLAS thread pools on the same cores.

A diagnostic for issue 33's drop-in table (bench/einsum.py --drop-in): there
distal's calls are interleaved with numpy.einsum's and opt_einsum's, and at
the 5 ms sizes distal measured far slower than it does alone. distal's eager
GEMMs run on its own OpenBLAS (scipy-openblas64, `distal.tile_blas`), NumPy's
on NumPy's OpenBLAS; each library has its own pool of threads. This times,
in one Legate process (its default processors), `dt.einsum("ij,jk->ik")` of
two n x n NumPy arrays with its result read back, and `numpy.einsum` of the
same, each alone (a block of calls of one kind) and alternated (one of each
in turn), median of the rounds, and records them with the BLAS kernels and
the load.

Run: ``python bench/blas_pools.py [--n 640] [--rounds 15]`` (about 10 s).

Seen at 50177ff (lead, load under 1): alone, distal 5.7-7.6 ms and NumPy 4.5-5.1; alternated, distal
8.0-9.0 and NumPy 5.9-6.7. The cause, found in session 12: OpenBLAS's worker threads spin on their core for
about 0.1 s after each threaded call before they sleep (THREAD_TIMEOUT, 2^28 time-stamp cycles of `nop`), so
distal's products on its own OpenBLAS ran beside NumPy's spinning worker (what made this script's "alone"
figure differ from the shorter probe's was not found). With `OPENBLAS_THREAD_TIMEOUT=4` set for NumPy's
library only, a probe's distal call alternated with NumPy's took 3.0-3.3 ms against 5.5-6.1. Since 6eda27d an
eager call's products of this size run on NumPy's own threads (`distal.contract.OWN_FROM`): at 0bc0101,
quiet (load 0.1), two runs: alone distal 5.01-5.19 ms and NumPy 4.85-4.93, alternated distal 5.18-5.22 and
NumPy 4.90-4.98 (0.95-0.97): the alternation costs nothing now, and distal's call is NumPy's own on the same
kernels plus its Python.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import _common  # bench/ is on sys.path when run as a script


def medians(runs: dict[str, Callable[[], Any]], order: list[str], rounds: int) -> dict[str, float]:
    """Median seconds of each run over `rounds` rounds, each round running `order` once (a warm-up round first)."""
    samples: dict[str, list[float]] = {k: [] for k in order}
    for round_ in range(rounds + 1):
        for k in order:
            start = time.perf_counter()
            runs[k]()
            if round_:
                samples[k].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=640, help="matrix size (640: NumPy takes about 5 ms here)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    import numpy as np

    import distal as dt

    rng = np.random.default_rng(0)
    a, b = rng.random((args.n, args.n)), rng.random((args.n, args.n))
    runs: dict[str, Callable[[], Any]] = {
        "numpy": lambda: np.einsum("ij,jk->ik", a, b, optimize=True),
        "distal": lambda: dt.einsum("ij,jk->ik", a, b).to_numpy(),
    }
    load = os.getloadavg()
    found = {"alone": {k: medians(runs, [k], args.rounds)[k] for k in ("distal", "numpy")},
             "alternated": medians(runs, ["numpy", "distal"], args.rounds)}
    explain = dt.einsum_plan("ij,jk->ik", a, b).explain().splitlines()
    for how, secs in found.items():
        print(f"{how}: " + ", ".join(f"{k} {1e3 * s:.2f} ms" for k, s in secs.items())
              + f" (NumPy over distal {secs['numpy'] / secs['distal']:.2f})")
    path = _common.record("blas_pools", {
        "n": args.n, "rounds": args.rounds, "seconds": found, "load_before": list(load),
        "load_after": list(os.getloadavg()), "blas": _common.blas_kernels(), "distal_plan": explain[:2],
        "method": "median of rounds; alone: a block of calls of one kind; alternated: numpy then distal in turn"})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
