"""Where the time of distal's higher-order kernels goes, as the caller sees it (issue 14, items 1 and 3).

For each of TTV, innerprod, TTM and MTTKRP at the suite's sizes
(`_common.workloads.HIGHER`; `--scale` shrinks them) on 2 CPU processors,
this runs the benchmark's measured step (`plan.run()` then `out.to_numpy()`)
`--rounds` times and splits it on the Python side (main thread):
`plan.run()` submission, and `to_numpy()` (waiting for the tasks, then
copying the result to the host), with a cProfile of both (top functions by
cumulative time, `--cprofile`).

Each part is printed as seconds per run and as a fraction of the wall time,
next to `numpy.einsum` (2 BLAS threads) of the same statement measured in
the same process, interleaved (and `cupynumeric.einsum` with
`--cupynumeric`). Wall times on a busy machine are noise; the fractions and
the ratio within one run are what to compare.

It uses distal's public API only. What it measured before through
distal's runtime internals is gone: the split inside the task bodies (store
-> array views, zero-fill, the leaf's kernel, the rest of the body; the span
of the tasks) and `--ab-fresh` (the plan's first launch writing its output
against zeroing each tile then adding); bench/breakdown.py splits a plan's
time by its parts.

Run: `python bench/profile_higher.py [--kernels ttm ttv] [--scale 0.5] [--rounds 3] [--json PATH]`;
records `profile_higher.json` (`_common.record`). LEGATE_CONFIG defaults to
"--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem 12000".
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # the harness, bench/_common, also when loaded by path

import _common  # noqa: E402
import numpy as np  # noqa: E402
from _common.workloads import HIGHER, SPECS, distal_names, inputs, out_shape  # noqa: E402


def profile_kernel(name: str, n: int, l: int, rounds: int, cprofile: int, cupy: bool = False) -> dict[str, Any]:
    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    set_threads = _common.numpy_threads()
    arrays = inputs(name, n, l)
    cn_args: list[Any] = []
    if cupy:  # as bench/suite.py interleaves it
        import cupynumeric as cn

        cn_args = [cn.asarray(a) for a in arrays]
    spec = SPECS[name][0]
    names = distal_names(name)
    ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
    out = dt.Tensor(names[0], out_shape(name, n, l))
    plan = kernels.build(name, kernels.machine(name, 2), out, *ins).compile()
    plan.run()
    out.to_numpy()  # warm-up: placement of the inputs, task registration
    rt.fence()
    set_threads(2)
    np.einsum(spec, *arrays, optimize=True)
    set_threads(1)
    rows: list[dict[str, float]] = []
    profiler = cProfile.Profile()
    for _ in range(rounds):
        set_threads(2)
        start = time.perf_counter()
        np.einsum(spec, *arrays, optimize=True)
        numpy_s = time.perf_counter() - start
        set_threads(1)
        if cn_args:
            start = time.perf_counter()
            float(cn.einsum(spec, *cn_args).sum())
            cupy_s = time.perf_counter() - start
        profiler.enable()
        start = time.perf_counter()
        plan.run()
        submitted = time.perf_counter()
        result = out.to_numpy()
        end = time.perf_counter()
        profiler.disable()
        del result
        row = {"wall": end - start, "numpy": numpy_s, "submit": submitted - start, "to_numpy": end - submitted}
        if cn_args:
            row["cupynumeric"] = cupy_s
        rows.append(row)
        rt.fence()
    expected = np.einsum(spec, *arrays, optimize=True)
    got = out.to_numpy()
    error = float(np.abs(got - expected).max() / max(1.0, float(np.abs(expected).max())))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    report: dict[str, Any] = {"size": [n, l], "seconds": med, "vs_numpy": med["numpy"] / med["wall"],
                              "fractions_of_wall": {k: v / med["wall"] for k, v in med.items()
                                                    if k not in ("wall", "numpy", "cupynumeric")},
                              "max_rel_error": error}
    if cprofile:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(cprofile)
        report["cprofile"] = text.getvalue()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", nargs="*", default=["ttv", "innerprod", "ttm", "mttkrp"])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the suite's extents by this")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cprofile", type=int, default=0, help="print this many cProfile lines per kernel")
    parser.add_argument("--cupynumeric", action="store_true",
                        help="run cupynumeric.einsum before each distal run, as bench/suite.py interleaves it")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("LEGATE_CONFIG", _common.legate_config(12000))
    from distal import runtime as rt

    rt.ensure_started()
    results: dict[str, Any] = {"legate_config": os.environ.get("LEGATE_CONFIG"),
                               "loadavg_before": list(os.getloadavg()), "kernels": {}}
    for name in args.kernels:
        n, l = HIGHER[name]
        n, l = max(4, int(n * args.scale)), max(1, int(l * args.scale)) if l else 0
        rep = profile_kernel(name, n, l, args.rounds, args.cprofile, args.cupynumeric)
        results["kernels"][name] = rep
        cupy_text = (f", cupynumeric {rep['seconds']['cupynumeric']:.3f} s" if "cupynumeric" in rep["seconds"] else "")
        print(f"== {name} size {rep['size']}: distal {rep['seconds']['wall']:.3f} s, numpy "
              f"{rep['seconds']['numpy']:.3f} s{cupy_text}, vs numpy {rep['vs_numpy']:.2f}x, "
              f"error {rep['max_rel_error']:.1e}")
        for k, v in rep["fractions_of_wall"].items():
            print(f"   {k:22s} {rep['seconds'][k]:8.4f} s  {100 * v:5.1f}% of wall")
        if "cprofile" in rep:
            print(rep["cprofile"])
    results["loadavg_after"] = list(os.getloadavg())
    print(f"load average before {results['loadavg_before']}, after {results['loadavg_after']}")
    print(f"wrote {_common.record('profile_higher', results)}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
