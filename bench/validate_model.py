"""Validate distal's time model on this machine: predicted vs measured time of the library's algorithms.

For 1, 2 and 4 Legate CPU processors (LEGATE_CONFIG --cpus N, one child
process each) and two sizes per algorithm, every matmul algorithm (SUMMA,
Cannon, PUMMA, Johnson, Solomonik, COSMA) and the four higher-order kernels
(TTV, innerprod, TTM, MTTKRP) run on the machine `dt.kernels.machine(name, N)`
picks (over-decomposed where it does so). Sizes are chosen so that a case
takes at least about 30 ms on this 2-core machine (shorter cases measure the
runtime's noise, not the plan). Within one size the cases of a child run in
interleaved rounds (`_common.interleaved_rounds`: one warm-up round, then
each case once per round, so load from elsewhere hits every case alike);
a sample is `plan.run()` and a fence, and the figure is the median of the
samples. Each case is predicted with `plan.predict(model, N)`, the model
being this machine's cached calibration (`distal.model.this_machine()`:
leaf rates at several sizes, streaming bandwidth, fixed costs of Legate per
plan, launch and task point; `python -m distal.model.calibrate` renews it).
For each matmul size and processor count `build("auto", ...)` on `Grid(N)`
runs in the same rounds; the table `auto` records its time over the best
measured library algorithm's, for matmul and for the higher-order kernels
(where auto picks among the kernels' machines). Results, with predicted /
measured per case and the median and worst error, go to
bench/results/model_validation.json.

Run (on a quiet machine): `python bench/validate_model.py` (188 s on
2 cores at load 5, 5 rounds). `--quick` checks the pipeline with small sizes and 2
rounds (about 12 s; its figures are noise) and writes
model_validation_quick.json instead.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import interleaved_rounds, model_error, validation_child, write

HERE = Path(__file__).resolve().parent
PROCS = (1, 2, 4)
MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]
MATMUL_SIZES = (1024, 1536)
QUICK_MATMUL = (384,)
# higher-order sizes: (B's extent per mode, the extra mode's extent)
HIGHER = {"ttv": [(384, 0), (448, 0)], "innerprod": [(320, 0), (384, 0)], "ttm": [(192, 128), (256, 128)],
          "mttkrp": [(256, 32), (320, 32)]}
QUICK_HIGHER = {"ttv": [(96, 0)], "innerprod": [(96, 0)], "ttm": [(64, 32)], "mttkrp": [(64, 16)]}
SPECS = {
    "ttv": ("ijk,k->ij", lambda n, l: [(n, n, n), (n,)], lambda n, l: (n, n)),
    "innerprod": ("ijk,ijk->", lambda n, l: [(n, n, n), (n, n, n)], lambda n, l: ()),
    "ttm": ("ijk,kl->ijl", lambda n, l: [(n, n, n), (n, l)], lambda n, l: (n, n, l)),
    "mttkrp": ("ijk,jl,kl->il", lambda n, l: [(n, n, n), (n, l), (n, l)], lambda n, l: (n, l)),
}


def child(procs: int, quick: bool, repeats: int) -> list[dict[str, Any]]:
    import distal as dt
    from distal import kernels, model
    from distal import runtime as rt

    rt.ensure_started()
    machine_model = model.this_machine()
    print(f"  {procs} cpus: {machine_model.describe()}", file=sys.stderr, flush=True)
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(0)

    def timed_group(cases: list[dict[str, Any]]) -> None:
        """Run the cases of one size in interleaved rounds, check each result, record measured and predicted."""
        runs: dict[str, Callable[[], None]] = {}
        def runner(plan: Any) -> Callable[[], None]:
            def run() -> None:
                plan.run()
                rt.fence()

            return run

        for case in cases:
            runs[case["key"]] = runner(case.pop("plan"))
        samples = interleaved_rounds(runs, repeats)
        for case in cases:
            out, expected = case.pop("out"), case.pop("expected")
            err = float(np.abs(out.to_numpy() - expected).max() / max(1.0, float(np.abs(expected).max())))
            got = samples[case.pop("key")]
            seconds = statistics.median(got)
            row = {**case, "measured_seconds": seconds, "samples": got, "max_rel_error": err,
                   "ratio": case["predicted_seconds"] / seconds}
            rows.append(row)
            print(f"  {procs} cpus {row['algorithm']} {row['size']}: measured {seconds * 1e3:.1f} ms, predicted "
                  f"{row['predicted_seconds'] * 1e3:.1f} ms (ratio {row['ratio']:.2f})", file=sys.stderr, flush=True)

    def case(name: str, size: Any, plan: Any, out: dt.Tensor, expected: Any, **extra: Any) -> dict[str, Any]:
        pred = plan.predict(machine_model, procs)
        return {"key": f"{name} {size}", "algorithm": name, "size": size, "processors": procs,
                "machine": repr(plan.machine), "predicted_seconds": pred.seconds, "predicted": pred.as_dict(),
                "plan": plan, "out": out, "expected": expected, **extra}

    for n in QUICK_MATMUL if quick else MATMUL_SIZES:
        b, c = rng.random((n, n)), rng.random((n, n))
        expected = b @ c
        cases = []
        for name in MATMUL:
            A = dt.Tensor("A", (n, n))
            ins = [dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)]
            plan = kernels.build(name, kernels.machine(name, procs, (n, n, n)), A, *ins).compile()
            cases.append(case(name, [n, n, n], plan, A, expected))
        A = dt.Tensor("A", (n, n))
        auto = kernels.build("auto", dt.Machine(dt.Grid(procs)), A, dt.Tensor.from_array("B", b),
                             dt.Tensor.from_array("C", c), model=machine_model)
        chosen = next(x for x in auto.notes if x.startswith("auto: chose"))
        cases.append(case("auto", [n, n, n], auto.compile(), A, expected, chosen=chosen, kind="matmul"))
        timed_group(cases)
        del cases, A, auto
        gc.collect()
        rt.fence()
    for name, sizes in (QUICK_HIGHER if quick else HIGHER).items():
        spec, shapes, out_shape = SPECS[name]
        letters = "aBCD" if name == "innerprod" else "ABCD"
        for n, l in sizes:
            arrays = [rng.random(s) for s in shapes(n, l)]
            expected = np.einsum(spec, *arrays, optimize=True)
            size = [n, l] if l else [n]
            out = dt.Tensor(letters[0], out_shape(n, l))
            ins = [dt.Tensor.from_array(x, a) for x, a in zip(letters[1:], arrays)]
            lib_machine = kernels.machine(name, procs)
            cases = [case(name, size, kernels.build(name, lib_machine, out, *ins).compile(), out, expected)]
            # auto's choice, from shadow operands (no data): a second copy of the operands only when it differs
            shadows = [dt.Tensor(t.name, t.shape) for t in (out, *ins)]
            cands = [c for c in kernels.candidates(dt.Machine(dt.Grid(procs)), *shadows, model=machine_model) if c.fits]
            best = min(cands, key=lambda c: (c.seconds, c.idle, c.peak_bytes))
            chosen = f"auto: chose {best.describe()}"
            if best.algorithm == name and best.machine == lib_machine and not best.params:
                timed_group(cases)
                lib = rows[-1]
                rows.append({**lib, "algorithm": "auto", "chosen": chosen, "kind": name, "same_plan_as": name})
            else:
                out2 = dt.Tensor(letters[0], out_shape(n, l))
                ins2 = [dt.Tensor.from_array(x, a) for x, a in zip(letters[1:], arrays)]
                plan = kernels.build(best.algorithm, best.machine, out2, *ins2, **dict(best.params)).compile()
                cases.append(case("auto", size, plan, out2, expected, chosen=chosen, kind=name))
                timed_group(cases)
                del out2, ins2, plan
            del cases, out, ins, arrays, expected, shadows
            gc.collect()
            rt.fence()  # the stores of this size are freed before the next size allocates
    return rows






def summarize(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The summary, the library rows and the auto rows (each with its time over the best library algorithm's)."""
    autos = [r for r in rows if r["algorithm"] == "auto"]
    lib = [r for r in rows if r["algorithm"] != "auto"]
    for a in autos:
        names = MATMUL if a["kind"] == "matmul" else [a["kind"]]
        same = [r for r in lib if r["algorithm"] in names and r["size"] == a["size"]
                and r["processors"] == a["processors"]]
        best = min(same, key=lambda r: r["measured_seconds"])
        a["best_library"] = best["algorithm"]
        a["best_library_seconds"] = best["measured_seconds"]
        a["auto_over_best"] = a["measured_seconds"] / best["measured_seconds"]
    errors = [model_error(r["ratio"]) for r in lib]
    worst = max(range(len(lib)), key=lambda k: errors[k])
    matmul_auto = [a["auto_over_best"] for a in autos if a["kind"] == "matmul"]
    higher_auto = [a["auto_over_best"] for a in autos if a["kind"] != "matmul"]
    summary = {
        "cases": len(lib),
        "median_ratio": statistics.median(r["ratio"] for r in lib),
        "median_error": statistics.median(errors),
        "worst_error": errors[worst],
        "worst_case": {k: lib[worst][k] for k in ("algorithm", "size", "processors", "ratio")},
        "within_2x": sum(1 for e in errors if e <= 1.0),
        "shortest_measured_seconds": min(r["measured_seconds"] for r in rows),
        "auto_over_best_measured_median": statistics.median(a["auto_over_best"] for a in autos) if autos else None,
        "auto_over_best_matmul_median": statistics.median(matmul_auto) if matmul_auto else None,
        "auto_over_best_higher_median": statistics.median(higher_auto) if higher_auto else None,
    }
    return summary, lib, autos


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 rounds: checks the pipeline only")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 5, --quick 2)")
    parser.add_argument("--procs", default=",".join(map(str, PROCS)), help="comma-separated CPU counts")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    if args.child is not None:
        print(json.dumps(child(args.child, args.quick, repeats)))
        return 0
    import time

    from distal import model

    load_before = list(os.getloadavg())
    t0 = time.perf_counter()
    described = model.this_machine().describe()  # calibrated (and cached) before the children read it
    rows: list[dict[str, Any]] = []
    for p in (int(x) for x in args.procs.split(",")):
        print(f"== {p} CPU processor(s)", file=sys.stderr, flush=True)
        rows += validation_child(HERE / "validate_model.py", p, args.quick, repeats, 6000)
    summary, lib, autos = summarize(rows)
    summary["wall_seconds"] = time.perf_counter() - t0
    summary["loadavg_before"] = load_before
    summary["loadavg_after"] = list(os.getloadavg())
    table = [f"{a['kind']} {a['size']} on {a['processors']}: auto {a['measured_seconds'] * 1e3:.1f} ms "
             f"({a['chosen']}) vs best {a['best_library']} {a['best_library_seconds'] * 1e3:.1f} ms: "
             f"{a['auto_over_best']:.2f}x" for a in autos]
    note = ("predicted / measured seconds per case (ratio > 1: the model is pessimistic); error is max(r, 1/r) - 1; "
            f"median of {repeats} interleaved samples per case (plan.run() + fence). The 4-processor runs "
            "oversubscribe the 2 cores (the model knows the core count). "
            + ("--quick: small sizes, pipeline check only, figures are noise. " if args.quick else "")
            + "Re-run on a quiet machine: python bench/validate_model.py")
    name = "model_validation_quick" if args.quick else "model_validation"
    path = write(name, {"model": described, "summary": summary, "note": note, "auto_table": table,
                        "rows": lib, "auto": autos})
    print("\n".join(table))
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
