"""Redistribution on Legate: synthesized vs naive programs, timed on 4 CPU processors.

20 seeded problems of the paper's distribution (section 8; `distal.redist.testing`):
the mesh a=2, b=2, c=2 (8 devices), arrays of rank 1 to 6, each axis
replicating the array or splitting one dimension in the source and in the
target type. The paper's arrays hold 16M-200M elements; here they hold
4M-16M float32 elements (16-64 MB) so that the naive programs, which gather
the whole array on each of the 8 devices, fit this 2-core machine.

For each problem both programs run as Legate launches (`run_program`: one
index launch per collective over the 8 devices, data in per-device blocks)
on a fresh copy of the same source blocks; the result of each is checked
against the target type's tiles once, then each program is timed
`--repeats` times, alternating, in one process (time from the first launch
to a fence after the last). Writes bench/results/redist_legate.json.

Run: ``python bench/redist_legate.py [--problems 20] [--repeats 5]``; it
re-runs itself with LEGATE_CONFIG="--cpus 4 ..." unless LEGATE_CONFIG is set.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _common  # bench/ is on sys.path when run as a script
import numpy as np

RESULTS = _common.RESULTS / "redist_legate.json"  # bench/results/ unless distal bench --results
SEED = 2024
CPUS = 4
CONFIG = _common.legate_config(8000, CPUS)


def _blocks(a: np.ndarray, t: Any, mesh: Any) -> np.ndarray:
    from distal.redist.finish import factor_grid
    from distal.redist.simulate import offsets

    grid = factor_grid(mesh).shape()
    out = np.zeros((*grid, t.local_size), dtype=a.dtype)
    for d in mesh.devices():
        off = offsets(t, mesh, d)
        tile = a[tuple(slice(o, o + n) for o, n in zip(off, t.local_type))]
        out[mesh.factor_coords(d) or (0,)] = tile.reshape(-1)
    return out


def _time(prog: Any, source: Any) -> float:
    """Seconds to run the finished program `prog` (`finish_program`) on `source`."""
    import distal.runtime as rt

    rt.fence()
    t0 = time.perf_counter()
    rt.run_program(prog, source)
    rt.fence()
    return time.perf_counter() - t0


def run(problems: int, repeats: int, elements: tuple[int, int]) -> dict[str, Any]:
    import distal.runtime as rt
    from distal.redist import synthesize
    from distal.redist.finish import finish_program
    from distal.redist.testing import random_problem

    info = rt.ensure_started()
    rng = random.Random(f"{SEED}-legate")
    results = []
    for k in range(problems):
        mesh, src, dst = random_problem(rng, sizes=(2,), elements=elements)
        synth = synthesize(src, dst, mesh)
        naive = synthesize(src, dst, mesh, method="naive")
        finished = {id(synth): finish_program(synth), id(naive): finish_program(naive)}  # outside the timings
        a = np.random.default_rng(k).standard_normal(src.global_type).astype(np.float32)
        source = rt.from_numpy(_blocks(a, src, mesh))
        expected = _blocks(a, dst, mesh)
        for prog in (synth, naive):  # check once (and warm up the kernels)
            got = rt.to_numpy(rt.run_program(finished[id(prog)], source))
            assert np.array_equal(got, expected), (str(src), str(dst), str(prog))
        times: dict[str, list[float]] = {"synthesized": [], "naive": []}
        for _ in range(repeats):
            times["synthesized"].append(_time(finished[id(synth)], source))
            times["naive"].append(_time(finished[id(naive)], source))
        ms = {key: statistics.median(v) * 1e3 for key, v in times.items()}
        row = {
            "mesh": str(mesh),
            "source": str(src),
            "target": str(dst),
            "elements": math.prod(src.global_type),
            "bytes": 4 * math.prod(src.global_type),
            "synthesized": {"steps": [str(s) for s in synth.steps], "cost": synth.cost, "height": synth.height,
                            "bound": synth.bound, "median_ms": round(ms["synthesized"], 3),
                            "runs_ms": [round(t * 1e3, 3) for t in times["synthesized"]]},
            "naive": {"steps": [str(s) for s in naive.steps], "cost": naive.cost, "height": naive.height,
                      "median_ms": round(ms["naive"], 3), "runs_ms": [round(t * 1e3, 3) for t in times["naive"]]},
            "speedup": round(ms["naive"] / ms["synthesized"], 3) if ms["synthesized"] > 0 else None,
        }
        results.append(row)
        print(f"{k + 1:2d} {src!s:>40} -> {dst!s:<40} synth {ms['synthesized']:8.2f} ms "
              f"naive {ms['naive']:8.2f} ms  x{row['speedup']}", flush=True)
    speedups = [r["speedup"] for r in results if r["speedup"]]
    return {
        "machine": info.as_dict(),
        "description": __doc__.split("\n\n")[1] if __doc__ else "",
        "seed": SEED,
        "problems": problems,
        "repeats": repeats,
        "element_range": list(elements),
        "dtype": "float32",
        "summary": {
            "geomean_speedup": round(math.exp(statistics.mean(math.log(s) for s in speedups)), 3),
            "median_speedup": round(statistics.median(speedups), 3),
            "min_speedup": min(speedups),
            "max_speedup": max(speedups),
            "synthesized_faster": sum(s > 1 for s in speedups),
            "total_synthesized_ms": round(sum(r["synthesized"]["median_ms"] for r in results), 2),
            "total_naive_ms": round(sum(r["naive"]["median_ms"] for r in results), 2),
        },
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-elements", type=int, default=4 * 2**20)
    parser.add_argument("--max-elements", type=int, default=16 * 2**20)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if "LEGATE_CONFIG" not in os.environ:
        env = dict(os.environ, LEGATE_CONFIG=CONFIG, OPENBLAS_NUM_THREADS="1")
        sys.exit(subprocess.call([sys.executable, *sys.argv], env=env))
    out = run(args.problems, args.repeats, (args.min_elements, args.max_elements))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
