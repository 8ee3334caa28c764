"""What large host arrays cost dt.einsum's candidates: a copy, new pages, a Legate read-back; and sgemm over dgemm.

The figures behind `distal.search.host_moves` `NEW_PAGES` and the large points
of `READ_BACK`, and behind the time model's single-precision rate
(`ProcessorModel.single`). Per size (1 MiB to 1 GiB of float64), in
alternating rounds (every other round reversed), medians:

- `copy`: `ndarray.copy()` of an array of that size;
- `fresh_fill`: `np.empty(n).fill(1.0)`, a new array (from 32 MiB glibc maps
  new pages at every call); `warm_fill`: the same fill of an array written
  before; their difference is what the kernel takes to fault in new pages;
- `read_back`: `dt.einsum("i,i->i")` of two placed tensors on Legate
  (`DISTAL_EAGER=0`) with its result read back (`to_numpy()`), minus the same
  plan followed by a fence.

Then the GEMM leaf at 512 in float64 and float32 on one BLAS thread
(`distal.model.calibrate._single`, as the calibration times it).

Run: ``python bench/host_pages.py [--rounds 15]`` or ``distal bench host-pages`` (about 1.5 minutes; Legate is
started with `--cpus 2 --sysmem 8000` unless LEGATE_CONFIG says otherwise).
Session 14 (quiet, load under 1.1; `/tmp` probes that this script gathers): copy 94 ms at 1 GiB, new pages
31 ms (fill 64 against 33), read-back 117 ms (29 at 256 MiB); sgemm 2.35-2.38x dgemm. This script's first run
(bench/results/2026-11-29_15fca1d/host_pages.json) gave read-backs of 64 ms at 32 MiB and 55 at 256 MiB: a
read-back's copy (Legate's, into the new host array) sometimes takes 10-40x its usual time (48 MiB: 60-300 ms
against 6-8; 256 MiB: up to 1.3 s against 29 ms median), in bursts of about a second, in 18 of 60 read-backs
of one 48 MiB store and in none of 60 where the host array's pages were written first (`fill`), at a cost of
+1-12 ms a read-back (median). This machine is a virtual machine whose kernel runs DAMON (`kdamond`): new pages
are sometimes very slow to fault in (a fill of a fresh 1 GiB array once took 5.5 s), so these medians are
less steady than the copy's.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from typing import Any

import _common  # bench/ is on sys.path when run as a script

MIB = 1 << 20
SIZES = (1, 4, 16, 32, 64, 256, 1024)  # MiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds per size (half as many at 1 GiB)")
    args = parser.parse_args()
    os.environ.setdefault("LEGATE_CONFIG", "--cpus 2 --sysmem 8000")
    os.environ["DISTAL_EAGER"] = "0"
    import numpy as np
    from threadpoolctl import threadpool_limits

    import distal as dt
    from distal import runtime as rt
    from distal.model import calibrate

    rt.ensure_started()
    load = os.getloadavg()
    sizes: dict[str, Any] = {}
    for mib in SIZES:
        n = mib * MIB // 8
        arrays = [np.random.default_rng(k).random(n) for k in range(2)]
        tensors = [dt.Tensor.from_array(f"V{k}", a).place() for k, a in enumerate(arrays)]
        warm = np.ones(n)
        rt.fence()

        def fresh(n: int = n) -> np.ndarray:
            out = np.empty(n)
            out.fill(1.0)
            return out

        runs: dict[str, Callable[[], Any]] = {
            "copy": lambda a=arrays[0]: a.copy(), "fresh_fill": fresh, "warm_fill": lambda w=warm: w.fill(1.0),
            "plan": lambda t=tensors: (dt.einsum("i,i->i", *t), rt.fence()),
            "plan_read": lambda t=tensors: dt.einsum("i,i->i", *t).to_numpy()}
        samples = _common.alternating_rounds(runs, args.rounds if mib < 1024 else max(args.rounds // 2, 1))
        med = {k: statistics.median(v) for k, v in samples.items()}
        sizes[str(mib * MIB)] = {
            "bytes": mib * MIB, "seconds": med, "new_pages_s": med["fresh_fill"] - med["warm_fill"],
            "read_back_s": med["plan_read"] - med["plan"], "loadavg": list(os.getloadavg())}
        print(f"{mib} MiB: copy {1e3 * med['copy']:.2f} ms, new pages {1e3 * sizes[str(mib * MIB)]['new_pages_s']:.2f}"
              f" ms, read-back {1e3 * sizes[str(mib * MIB)]['read_back_s']:.2f} ms", flush=True)
        del runs, tensors, arrays, warm
        rt.fence()
    del os.environ["DISTAL_EAGER"]
    with threadpool_limits(1):
        single = [calibrate._single(np.random.default_rng(k)) for k in range(3)]
    print(f"GEMM leaf at 512, float32 over float64 (one thread): {', '.join(f'{s:.2f}' for s in single)}")
    path = _common.record("host_pages", {
        "sizes": sizes, "single": single, "rounds": args.rounds, "loadavg_before": list(load),
        "loadavg_after": list(os.getloadavg()), "legate_config": os.environ.get("LEGATE_CONFIG"),
        "blas": _common.blas_kernels(),
        "method": "medians of alternating rounds per size (half as many at 1 GiB); new pages = fresh fill - warm "
                  "fill; read-back = placed i,i->i read back - the same plan and a fence (DISTAL_EAGER=0)"})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
