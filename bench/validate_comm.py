"""Validate distal's time model where data movement dominates: predicted vs measured on 1 and 2 CPU processors.

bench/validate_model.py times the algorithm library, whose plans compute far
more than they move. The plans here move data between the processors' tiles
and compute almost nothing (a copy or an addition per element), so their
time is what the model says about communication, the runtime's fixed costs
and memory bandwidth:

- `transpose`: A(i,j) = B(j,i), both in rows (`xy -> x`), distributed over
  rows: each processor reads columns of B, half of them held by the other;
- `rows<-cols`: A(i,j) = B(i,j), A in rows and B in columns (`yx -> x`):
  a redistribution written as a plan, half of every tile remote;
- `from-one`: A(i,j) = B(i,j) with B held whole by processor 0 (`xy -> 0`):
  every other processor reads its rows from processor 0;
- `broadcast`: A(i,j) = B(i,j) + C(i,j) with C replicated (`xy -> *`):
  nothing to move (the control: only local reads);
- `shifts`: Cannon's matrix product on Grid(2, 2) with a tiny k extent
  (n x 8 times 8 x n): its rotations move tiles, its products are cheap.

Each runs with `--cpus 1` and `--cpus 2` (one child process each, its plans
in interleaved rounds after a warm-up round, the median of the rounds) and
is predicted by `plan.predict(this_machine(), N)`; the record keeps per case
the measured and predicted seconds, the model's communication share
(`comm_seconds`, `exposed_comm_seconds`) and the bytes it moves between
processors, and per processor count the median and worst error, with the
load average before and after. Results: bench/results/model_validation_comm.json
(`--quick`: model_validation_comm_quick.json, small sizes, 2 rounds).

Run (on a quiet machine): `python bench/validate_comm.py` (about 2 minutes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import interleaved_rounds, model_error, validation_child, write

HERE = Path(__file__).resolve().parent
PROCS = (1, 2)
SIZES = {"transpose": 3072, "rows<-cols": 3072, "from-one": 3072, "broadcast": 3072, "shifts": 3072}
QUICK = {"transpose": 512, "rows<-cols": 512, "from-one": 512, "broadcast": 512, "shifts": 512}


def _cases(sizes: dict[str, int], rng: np.random.Generator) -> list[tuple[str, int, Any, Any, np.ndarray]]:
    """(name, n, plan, output tensor, expected result) of every case."""
    import distal as dt
    from distal import kernels

    i, j, io, ii = dt.index_vars("i j io ii")
    m = dt.Machine(dt.Grid(2))
    rows, cols = dt.Format("xy -> x", m), dt.Format("yx -> x", m)
    out: list[tuple[str, int, Any, Any, np.ndarray]] = []

    def elementwise(name: str, fa: Any, fb: Any, fc: Any = None) -> None:
        n = sizes[name]
        b = rng.random((n, n))
        A = dt.Tensor("A", (n, n), format=fa)
        B = dt.Tensor.from_array("B", b, fb)
        if name == "transpose":
            A[i, j] = B[j, i]
            expected = b.T.copy()
        elif fc is not None:
            c = rng.random((n, n))
            C = dt.Tensor.from_array("C", c, fc)
            A[i, j] = B[i, j] + C[i, j]
            expected = b + c
        else:
            A[i, j] = B[i, j]
            expected = b
        sched = A.schedule().distribute([i], [io], [ii], m).communicate(A, io)
        plan = sched.compile()
        out.append((name, n, plan, A, expected))

    if "transpose" in sizes:
        elementwise("transpose", rows, rows)
    if "rows<-cols" in sizes:
        elementwise("rows<-cols", rows, cols)
    if "from-one" in sizes:
        elementwise("from-one", rows, dt.Format("xy -> 0", m))
    if "broadcast" in sizes:
        elementwise("broadcast", rows, rows, dt.Format("xy -> *", m))
    if "shifts" in sizes:
        n = sizes["shifts"]
        b, c = rng.random((n, 8)), rng.random((8, n))
        A = dt.Tensor("A", (n, n))
        plan = kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), A, dt.Tensor.from_array("B", b),
                             dt.Tensor.from_array("C", c)).compile()
        out.append(("shifts", n, plan, A, b @ c))
    return out


def child(procs: int, quick: bool, repeats: int) -> list[dict[str, Any]]:
    from distal import model
    from distal import runtime as rt

    rt.ensure_started()
    machine_model = model.this_machine()
    rng = np.random.default_rng(0)
    cases = _cases(QUICK if quick else SIZES, rng)
    runs: dict[str, Callable[[], None]] = {}
    for name, _n, plan, _out, _expected in cases:
        def run(plan: Any = plan) -> None:
            plan.run()
            rt.fence()

        runs[name] = run
    samples = interleaved_rounds(runs, repeats)
    rows = []
    for name, n, plan, out, expected in cases:
        err = float(np.abs(out.to_numpy() - expected).max())
        pred = plan.predict(machine_model, procs)
        moved = sum(r["intra_bytes"] + r["inter_bytes"] + r["reduced_bytes"] for r in pred.per_processor)
        seconds = statistics.median(samples[name])
        rows.append({"case": name, "n": n, "processors": procs, "machine": repr(plan.machine),
                     "measured_seconds": seconds, "samples": samples[name], "predicted_seconds": pred.seconds,
                     "ratio": pred.seconds / seconds, "moved_bytes": moved, "max_abs_error": err,
                     "predicted": pred.as_dict()})
        print(f"  {procs} cpus {name} n={n}: measured {seconds * 1e3:.1f} ms, predicted {pred.seconds * 1e3:.1f} ms "
              f"(comm {pred.comm_seconds * 1e3:.1f} ms, {moved / 2**20:.0f} MiB moved)", file=sys.stderr, flush=True)
    return rows






def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for procs in sorted({r["processors"] for r in rows}):
        mine = [r for r in rows if r["processors"] == procs]
        errors = [model_error(r["ratio"]) for r in mine]
        worst = max(range(len(mine)), key=lambda k: errors[k])
        out[f"{procs} cpus"] = {"cases": len(mine), "median_ratio": statistics.median(r["ratio"] for r in mine),
                                "median_error": statistics.median(errors), "worst_error": errors[worst],
                                "worst_case": mine[worst]["case"]}
    errors = [model_error(r["ratio"]) for r in rows]
    out["all"] = {"cases": len(rows), "median_error": statistics.median(errors), "worst_error": max(errors)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 rounds: checks the pipeline only")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 7, --quick 2)")
    parser.add_argument("--procs", default=",".join(map(str, PROCS)), help="comma-separated CPU counts")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 7)
    if args.child is not None:
        print(json.dumps(child(args.child, args.quick, repeats)))
        return 0
    from distal import model

    load_before = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else None
    t0 = time.perf_counter()
    described = model.this_machine().describe()  # calibrated (and cached) before the children read it
    rows: list[dict[str, Any]] = []
    for p in (int(x) for x in args.procs.split(",")):
        print(f"== {p} CPU processor(s)", file=sys.stderr, flush=True)
        rows += validation_child(HERE / "validate_comm.py", p, args.quick, repeats, 4000)
    summary = summarize(rows)
    summary["wall_seconds"] = time.perf_counter() - t0
    summary["loadavg_before"] = load_before
    summary["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3] if load_before else None
    note = ("predicted / measured seconds per case (ratio > 1: the model is pessimistic); error is max(r, 1/r) - 1; "
            f"median of {repeats} interleaved rounds per case (plan.run() + fence). "
            + ("--quick: small sizes, pipeline check only. " if args.quick else "")
            + "Re-run on a quiet machine: python bench/validate_comm.py")
    name = "model_validation_comm_quick" if args.quick else "model_validation_comm"
    path = write(name, {"model": described, "summary": summary, "note": note, "rows": rows})
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
