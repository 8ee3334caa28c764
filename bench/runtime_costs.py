"""The runtime's costs as launches grow to 512 points, and the overlap of communication with computation.

What `python -m distal.model.calibrate` measures in a few seconds for the time
model, measured at length and on 1 and 2 CPU processors:

- *growth*: SUMMA on one processor in 1 to 8 steps (launches of one point) and
  one launch of P = 1, 2, 4, ..., 512 points (`a(i) = b(i)` on `Grid(P)`, 8
  elements a point: the leaf costs nothing), each with one Legate task per
  point and with the points of a processor grouped into one task, so that the
  tasks per processor grow with P (`distal.calibrate_cli.runtime_rows`); each
  plan's fastest and median round. Both growth laws of
  `distal.model.runtime_costs` (linear in the points; with a P log2 P term)
  are fitted to the fastest rounds and to the medians, with every row's
  relative residual, and the law the data supports is named;
- *the model*: this machine's cached calibration (`distal.model.this_machine()`,
  measured first when there is none) predicts the same plans, beside the measurements;
- *overlap*: the four plans of `distal.calibrate_cli.overlap_plans` (a copy
  and an element-wise product of 4 factors over `Grid(2)`'s rows in 8
  sequential steps, on tiles held or assembled from both processors'
  instances) in interleaved rounds; the overlap of each round and their
  median (`OverlapTimes.paired`), and the overlap of the plans' medians.

One child process per processor count (`--cpus 1`, `--cpus 2`), the load
average before and after. Results: a dated record `runtime_costs.json`
(`--quick`: points to 64, 2 rounds, n = 1024: a pipeline check, its figures
are noise). Run on a quiet machine: `python bench/runtime_costs.py` (about
a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _common import child, legate_env, record

HERE = Path(__file__).resolve().parent
POINTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
QUICK_POINTS = (1, 4, 16, 64)


def run_child(cpus: int, quick: bool, repeats: int, n: int) -> dict[str, Any]:
    """In a Legate process: the growth rows and the overlap rounds."""
    from distal import calibrate_cli
    from distal import runtime as rt

    got = rt.ensure_started().cpus
    assert got == cpus, f"expected {cpus} CPU processors, but Legate runs {got}"
    points = QUICK_POINTS if quick else POINTS
    rows = calibrate_cli.runtime_rows(repeats, points, cpus)
    rounds = calibrate_cli.overlap_rounds(repeats, n)
    # what this machine's model (its cached calibration) predicts for the same plans
    from distal import model

    machine_model = model.this_machine()
    predicted = {}
    for name, (plan, _out, grouped) in calibrate_cli.growth_plans(points).items():
        os.environ["DISTAL_GROUP_TASKS"] = "1" if grouped else "0"  # predict counts the tasks as the run does
        predicted[name] = plan.predict(machine_model, cpus).seconds
    os.environ.pop("DISTAL_GROUP_TASKS", None)
    for name, (plan, _out) in calibrate_cli.overlap_plans(n).items():
        got = plan.predict(machine_model, cpus)
        predicted[f"overlap {name}"] = got.seconds
        predicted[f"overlap {name} exposed comm"] = got.exposed_comm_seconds
        predicted[f"overlap {name} comm"] = got.comm_seconds
    return {"cpus": cpus, "runtime": rows, "overlap": rounds, "predicted": predicted,
            "model": machine_model.describe()}


def _fits(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    from distal.model.runtime_costs import RuntimeRow, fit_law, fit_runtime_costs

    timed = [RuntimeRow(tuple(r["points"]), tuple(r["tasks"]), float(r[key]), r["label"]) for r in rows]
    out: dict[str, Any] = {law: fit_law(timed, law).as_record() for law in ("linear", "log")}
    out["chosen"] = fit_runtime_costs(timed).law
    return out


def summarize(found: dict[str, Any]) -> dict[str, Any]:
    """The fits of both laws on the fastest and the median rounds, per launch the costs the chosen law gives,
    and the overlap."""
    from distal.model.runtime_costs import OverlapTimes, RuntimeRow, fit_runtime_costs

    rows = found["runtime"]
    fastest, median = _fits(rows, "seconds"), _fits(rows, "median")
    law = fit_runtime_costs([RuntimeRow.of_record(r) for r in rows])
    predicted = found.get("predicted", {})
    table = [{"label": r["label"], "points": r["points"], "tasks": r["tasks"], "fastest": r["seconds"],
              "median": r["median"], "fitted": law.seconds(r["points"], r["tasks"]),
              "model_predicted": predicted.get(r["label"])} for r in rows]
    rounds = [OverlapTimes(**{k: float(r[k]) for k in ("fixed", "comm", "comp", "both")}) for r in found["overlap"]]
    try:
        paired: float | None = OverlapTimes.paired(rounds)
    except ValueError:
        paired = None
    return {"cpus": found["cpus"], "fit_fastest": fastest, "fit_median": median, "rows": table,
            "overlap_paired": paired, "overlap_of_medians": OverlapTimes.median_of(rounds).as_record(),
            "overlap_rounds": [r.as_record() for r in rounds],
            "overlap_predicted": {k[len("overlap "):]: v for k, v in predicted.items() if k.startswith("overlap ")}}


def _print(summary: dict[str, Any]) -> None:
    cpus = summary["cpus"]
    for which in ("fit_fastest", "fit_median"):
        fits = summary[which]
        for law in ("linear", "log"):
            f = fits[law]
            print(f"{cpus} cpus {which} {law}: plan {f['plan_seconds'] * 1e6:.0f} us, launch "
                  f"{f['launch_seconds'] * 1e6:.0f} us, point {f['launch_point_seconds'] * 1e6:.1f} us, "
                  f"P log2 P {f['launch_log_seconds'] * 1e6:.2f} us, task {f['task_seconds'] * 1e6:.0f} us; "
                  f"relative residuals rms {f['rms_relative_residual']:.3f}, worst {f['worst_relative_residual']:.3f}"
                  + (" (chosen)" if fits["chosen"] == law else ""))
    for r in summary["rows"]:
        model = r["model_predicted"]
        print(f"  {r['label']:24s} tasks {sum(r['tasks']):4d}: fastest {r['fastest'] * 1e3:8.2f} ms, median "
              f"{r['median'] * 1e3:8.2f} ms, fitted {r['fitted'] * 1e3:8.2f} ms"
              + ("" if model is None else f", this machine's model {model * 1e3:8.2f} ms"))
    o = summary["overlap_of_medians"]
    per_round = [None if r["overlap"] is None else round(r["overlap"], 3) for r in summary["overlap_rounds"]]
    print(f"{cpus} cpus overlap: per round {per_round}, "
          f"median {summary['overlap_paired']}; of the medians {o['overlap']} (fixed {o['fixed'] * 1e3:.1f} ms, "
          f"comm +{o['comm_seconds'] * 1e3:.1f} ms, comp +{o['comp_seconds'] * 1e3:.1f} ms, both "
          f"{o['both'] * 1e3:.1f} ms); the model predicts "
          + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in summary["overlap_predicted"].items() if " " not in k))


def _load() -> list[str] | None:
    path = Path("/proc/loadavg")
    return path.read_text().split()[:3] if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="points to 64, 2 rounds, n = 1024: pipeline check only")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 9, --quick 2)")
    parser.add_argument("--procs", default="1,2", help="comma-separated CPU counts (default 1,2)")
    parser.add_argument("--n", type=int, default=None, help="the overlap plans' n (default 3072, --quick 1024)")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 9)
    n = args.n if args.n is not None else (1024 if args.quick else 3072)
    if args.child is not None:
        print(json.dumps(run_child(args.child, args.quick, repeats, n)))
        return 0
    from distal import model

    described = model.this_machine().describe()  # calibrated (and cached) before the children read it
    before, t0 = _load(), time.perf_counter()
    summaries = []
    for cpus in (int(x) for x in args.procs.split(",")):
        print(f"== {cpus} CPU processor(s)", file=sys.stderr, flush=True)
        extra = ["--quick"] if args.quick else []
        found = child(HERE / "runtime_costs.py", ["--child", str(cpus), "--repeats", str(repeats), "--n", str(n),
                                                  *extra], legate_env(4000, cpus), timeout=900.0)
        summary = summarize(found)
        _print(summary)
        summaries.append({**summary, "raw": found})
    after = _load()
    note = ("fastest and median of interleaved rounds (every other round reversed) per plan: one run and a read of "
            "its output (growth), one run and a fence (overlap); relative residual = fitted / measured - 1; overlap "
            "= (comp + comm - fixed - both) / min(comp - fixed, comm - fixed), the model takes it held to [0, 1]. "
            + ("--quick: pipeline check only. " if args.quick else "")
            + "Re-run on a quiet machine: python bench/runtime_costs.py")
    name = "runtime_costs_quick" if args.quick else "runtime_costs"
    path = record(name, {"model": described, "repeats": repeats, "overlap_n": n, "loadavg_before": before,
                         "loadavg_after": after, "wall_seconds": time.perf_counter() - t0, "note": note,
                         "per_cpus": summaries})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
