"""Redistribution synthesis on random problems of the paper's distribution (section 8).

1000 seeded problems per mesh family: three mesh axes, arrays of rank 1 to 6
with 16M-200M elements (64-800 MB of float32), each axis replicated or
splitting one dimension in both the source and the target type. Families:

* ``paper``: the paper's 8 TPU devices, axes a=2, b=2, c=2;
* ``mixed``: each axis of size 2, 3, 4, 6 or 8 (up to 512 devices, primes mixed).

For each problem: the synthesized program's cost against the naive
gather-then-slice program (Fig. 11 elements per device), the synthesis time
without cache, and the height against the bound max(localsize(src),
localsize(dst)). Writes bench/results/redist_synthesis.json with a machine
description. Run: ``python bench/redist_synthesis.py [--problems N]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from typing import Any

import _common  # bench/ is on sys.path when run as a script
from _common import machine

from distal.redist import AllPermute, synthesize
from distal.redist.synth import _synthesize
from distal.redist.testing import random_problem

RESULTS = _common.RESULTS / "redist_synthesis.json"  # bench/results/ unless distal bench --results
FAMILIES = {"paper": (2,), "mixed": (2, 3, 4, 6, 8)}
SEED = 2024




def run_family(name: str, sizes: tuple[int, ...], count: int) -> dict[str, Any]:
    rng = random.Random(f"{SEED}-{name}")
    ratios, times, heights, steps = [], [], [], []
    permuted = several = zero = free = 0
    worst: dict[str, Any] = {}
    for _ in range(count):
        mesh, src, dst = random_problem(rng, sizes=sizes)
        _synthesize.cache_clear()
        t0 = time.perf_counter()
        prog = synthesize(src, dst, mesh)
        elapsed = time.perf_counter() - t0
        naive = synthesize(src, dst, mesh, method="naive")
        times.append(elapsed)
        heights.append(prog.height / prog.bound)
        steps.append(len(prog.steps))
        n_perm = sum(isinstance(s, AllPermute) for s in prog.steps)
        permuted += n_perm > 0
        several += n_perm > 1
        if naive.cost == 0:
            zero += 1
            assert prog.cost == 0
        elif prog.cost == 0:
            free += 1  # dynslices only, where naive gathers first
        else:
            ratios.append(prog.cost / naive.cost)
        if elapsed >= worst.get("seconds", 0.0):
            worst = {"seconds": elapsed, "mesh": str(mesh), "src": str(src), "dst": str(dst)}
    return {
        "mesh_axis_sizes": list(sizes),
        "problems": count,
        "cost_ratio_vs_naive": {
            "geomean": math.exp(statistics.fmean(math.log(r) for r in ratios)),
            "max": max(ratios),
            "min": min(ratios),
            "over": "problems where both costs are above 0",
            "problems_with_naive_cost_0": zero,
            "problems_with_cost_0_but_naive_above_0": free,
        },
        "synthesis_ms": {
            "median": 1e3 * statistics.median(times),
            "p90": 1e3 * sorted(times)[int(0.9 * len(times))],
            "max": 1e3 * max(times),
            "slowest": worst,
        },
        "height_over_bound_max": max(heights),
        "height_never_above_bound": max(heights) <= 1.0,
        "programs_with_allpermute": permuted,
        "programs_with_more_than_one_allpermute": several,
        "steps_mean": statistics.fmean(steps),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=1000)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"machine": machine(), "seed": SEED, "families": {}}
    out["distribution"] = (
        "3 mesh axes (a, b, c); arrays of rank 1-6 with 16M-200M elements; in source and "
        "target each axis replicated or splitting one random dimension (random order within "
        "a dimension); extents multiples of what both types need"
    )
    for name, sizes in FAMILIES.items():
        res = run_family(name, sizes, args.problems)
        out["families"][name] = res
        cr, ms = res["cost_ratio_vs_naive"], res["synthesis_ms"]
        print(
            f"{name:6s} {args.problems} problems: cost/naive geomean {cr['geomean']:.3f} "
            f"max {cr['max']:.3f}; synthesis median {ms['median']:.2f} ms max {ms['max']:.1f} ms; "
            f"height/bound max {res['height_over_bound_max']:.2f}; "
            f"allpermute in {res['programs_with_allpermute']} "
            f"(>1 in {res['programs_with_more_than_one_allpermute']})"
        )
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
