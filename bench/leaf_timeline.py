"""When each leaf GEMM of a plan runs, per Legate processor thread: do the two processors compute side by side?

A diagnostic for the time model (docs/scaling.md, session 11): on a loaded
machine the GEMMs of a launch's points on the two Legate CPU processors ran
one after the other (another program held the second core), where the model
has them run side by side. This runs a few library plans in one Legate child
(its default processors), wraps `distal.tile_blas.gemm` to record each
call's start and end, and prints, for the fastest runs of each plan, the wall
time of `plan.run()` and a fence, the predicted time, and every GEMM as
``[thread:start-end]`` in ms from the run's start, with the share of the
GEMMs' time during which two of them overlapped. It records nothing.

Run: ``python bench/leaf_timeline.py`` (about 10 s), or with plans
``summa:2x1:512 johnson:2x2x2:512`` (algorithm:grid:n).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

DEFAULT = ("summa:2x1:256", "summa:2x1:512", "summa:1x2:384", "summa:2x1:1024", "johnson:2x2x2:512")
RUNS = 9
SHOWN = 3


def overlap_share(spans: list[tuple[float, float]]) -> float:
    """The share of the summed span lengths during which at least two spans overlap.

    >>> overlap_share([(0.0, 2.0), (1.0, 3.0)]), overlap_share([(0.0, 1.0), (1.0, 2.0)])
    (0.5, 0.0)
    """
    total = sum(b - a for a, b in spans)
    if total <= 0:
        return 0.0
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    depth, last, both = 0, 0.0, 0.0
    for at, step in events:
        if depth >= 2:
            both += (at - last) * depth
        depth += step
        last = at
    return both / total


def main(argv: list[str]) -> int:
    import numpy as np

    import distal as dt
    from distal import kernels, tile_blas
    from distal.runtime import ensure_started, fence

    ensure_started()
    calls: list[tuple[int, float, float]] = []
    lock = threading.Lock()
    original = tile_blas.gemm

    def gemm(a: Any, b: Any, out: Any = None, accumulate: bool = False) -> Any:
        t0 = time.perf_counter()
        result = original(a, b, out, accumulate)
        t1 = time.perf_counter()
        with lock:
            calls.append((threading.get_native_id(), t0, t1))
        return result

    tile_blas.gemm = gemm  # the leaves look it up on the module at each call
    try:
        print(f"load average {os.getloadavg()}", flush=True)
        for spec in argv or DEFAULT:
            name, grid_text, size = spec.split(":")
            n, grid = int(size), tuple(int(x) for x in grid_text.split("x"))
            rng = np.random.default_rng(0)
            A = dt.Tensor("A", (n, n))
            B, C = dt.Tensor.from_array("B", rng.random((n, n))), dt.Tensor.from_array("C", rng.random((n, n)))
            plan = kernels.build(name, dt.Machine(dt.Grid(*grid)), A, B, C).compile()
            predicted = plan.predict().seconds
            for _ in range(3):
                plan.run()
                fence()
            rows = []
            for _ in range(RUNS):
                calls.clear()
                t0 = time.perf_counter()
                plan.run()
                fence()
                wall = time.perf_counter() - t0
                rows.append((wall, [(tid, a - t0, b - t0) for tid, a, b in sorted(calls, key=lambda c: c[1])]))
            rows.sort(key=lambda r: r[0])
            for wall, spans in rows[:SHOWN]:
                shown = " ".join(f"[{tid % 1000}:{a * 1e3:.2f}-{b * 1e3:.2f}]" for tid, a, b in spans)
                share = overlap_share([(a, b) for _, a, b in spans])
                print(f"{spec}: wall {wall * 1e3:.2f} ms, predicted {predicted * 1e3:.2f} ms, GEMMs overlapping "
                      f"{share:.0%}: {shown}", flush=True)
        print(f"load average {os.getloadavg()}", flush=True)
    finally:
        tile_blas.gemm = original
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
