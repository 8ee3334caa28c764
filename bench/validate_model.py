"""Validate distal's time model on this machine: predicted vs measured time of the library's algorithms.

The default run (issue 34): the library's six matmul algorithms (SUMMA,
Cannon, PUMMA on the 2-D grids `Grid(2, 1)` and `Grid(2, 2)`; Johnson,
Solomonik, COSMA, which need three dimensions, on the cube `Grid(2, 2, 2)`;
a 1-D `Grid(2)` runs none of them) at n = 256, 512, 1024 and 2048, in a
Legate child per size on the processors distal configures by default (one CPU per
core), each predicted by `plan.predict()` with its defaults (this machine's
calibrated model, the Legate processors of the run). Then a held-out run
the model was not tuned on: n = 384, 768 and 1536, the 2-D algorithms on
`Grid(1, 2)` and `Grid(4, 2)`, the 3-D ones on `Grid(2, 2, 1)` and
`Grid(1, 2, 2)`. The cases of one size run in interleaved rounds (as
`_common.interleaved_rounds`: a warm-up round, then each case once per
round, so load from elsewhere hits every case alike; more rounds at small
sizes, where a run takes a millisecond), each round starting when no other
program has been runnable for 60 ms (`Quiet`: at most 3 s a round, 20 s a
size; the rounds that started while others ran are counted); a sample is
`plan.run()` and a fence, the figure the median of the samples. Each size
runs in a Legate child of its own (one process holding every size filled
its pool and waited forever at the held-out n = 1536). Where a ratio of predicted to
measured falls outside `BAND` the size's rounds run a second time and the
record keeps both; the figure is then the median of both runs' samples.
The summary counts ratios in the band, and the pairs of one size whose
measured times differ by more than `PAIR_GAP` that the model orders the
same way; the load average is recorded before and after each size.
Results go to `<results>/<date>_<commit>/model_validation_grids.json`
(`_common.record`, with the machine and its CPU).

Run (the whole validation, a few minutes on a quiet 2-core machine):
`python bench/validate_model.py` (this machine's cached model);
`--calibrate` measures the model again first, as `python -m
distal.model.calibrate` does (about 10-15 s; only on a quiet machine: the
new calibration is cached); `--quick` checks the pipeline (two sizes, 3
rounds; its figures are noise). `--sweep` runs the previous
validation instead: every library algorithm, the higher-order kernels
included, on the machine `dt.kernels.machine(name, N)` picks for 1, 2 and 4
Legate CPU processors (one child each, `plan.predict(model, N)`), with
`build("auto", ...)` measured in the same rounds (`auto_over_best`), written
to bench/results/model_validation.json (`--sweep --quick`:
model_validation_quick.json).
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
from _common import interleaved_rounds, model_error, record, validation_child, write

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


# the issue-34 validation: (algorithm, grid) per size, and the held-out run the model was not tuned on
GRID_CASES = [(name, (2, 1)) for name in MATMUL[:3]] + [(name, (2, 2)) for name in MATMUL[:3]] + [
    (name, (2, 2, 2)) for name in MATMUL[3:]]
GRID_SIZES = (256, 512, 1024, 2048)
HELD_OUT_CASES = [(name, (1, 2)) for name in MATMUL[:3]] + [(name, (4, 2)) for name in MATMUL[:3]] + [
    (name, g) for g in ((2, 2, 1), (1, 2, 2)) for name in MATMUL[3:]]
HELD_OUT_SIZES = (384, 768, 1536)
QUICK_GRID_SIZES, QUICK_HELD_OUT_SIZES = (256,), (384,)
BAND = (0.67, 1.5)  # predicted / measured: the target of issue 34
PAIR_GAP = 1.2  # pairs whose measured times differ by more than this factor are ordered


QUIET_WAIT = 3.0  # seconds a round waits at most for the other programs on the machine to leave the cores
QUIET_BUDGET = 20.0  # seconds one size's child waits at most (then rounds run as the load allows, counted)


def others_running() -> int:
    """Threads of other processes runnable now (state R in /proc/<pid>/task/<tid>/stat), this process's own
    (Legate's threads, idle between rounds, and the reading one) left out; 0 where /proc cannot be read."""
    me = os.getpid()
    count = 0
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != me]
    except OSError:
        return 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            count += stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"R"
    return count


class Quiet:
    """Rounds that start when the cores are free: before each round, wait (at most QUIET_WAIT seconds, and
    QUIET_BUDGET over the run) until no other task has been runnable for three reads 20 ms apart; rounds
    that started while others ran are counted (`busy_starts`)."""

    def __init__(self) -> None:
        self.waited = 0.0
        self.rounds = 0
        self.busy_starts = 0

    def wait(self) -> None:
        import time

        start = time.perf_counter()
        calm = 0
        while calm < 3:
            if time.perf_counter() - start > QUIET_WAIT or self.waited + time.perf_counter() - start > QUIET_BUDGET:
                self.busy_starts += 1
                break
            calm = calm + 1 if others_running() == 0 else 0
            time.sleep(0.02)
        self.waited += time.perf_counter() - start
        self.rounds += 1

    def rounds_of(self, runs: dict[str, Callable[[], None]], repeats: int) -> dict[str, list[float]]:
        """`interleaved_rounds` whose rounds start in quiet moments (the warm-up round too), each after one
        untimed run of its first case (measured: the first run after the wait took twice its time, SUMMA
        at n = 256 2.3 ms against 1.2), the cases' order rotated by one each round: the runs just after the
        wait stay slower than the later ones (the model's warm-up), so no case is always first (unrotated, in
        a quiet run of session 12, the first case measured slowest of its size: SUMMA on Grid(1, 2) at
        n = 768 10.5 ms against 6.6-7.4 for the others)."""
        import time

        samples: dict[str, list[float]] = {name: [] for name in runs}
        names = list(runs)
        for round_ in range(repeats + 1):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            self.wait()
            runs[order[0]]()  # untimed: the first run after an idle wait pays the wake-up of Legate's threads
            for name in order:
                run = runs[name]
                t0 = time.perf_counter()
                run()
                if round_:
                    samples[name].append(time.perf_counter() - t0)
        return samples


def rounds_for(n: int, quick: bool) -> int:
    """Interleaved rounds at size n: more where a run takes a millisecond (its noise is the runtime's)."""
    if quick:
        return 3
    return 15 if n <= 384 else 11 if n <= 512 else 9 if n <= 768 else 7 if n <= 1024 else 5


def grid_sizes(quick: bool) -> list[tuple[str, int]]:
    """(set, size) of every child of the validation: the validation's sizes, then the held-out run's."""
    return ([("validation", n) for n in (QUICK_GRID_SIZES if quick else GRID_SIZES)]
            + [("held_out", n) for n in (QUICK_HELD_OUT_SIZES if quick else HELD_OUT_SIZES)])


def grid_child(quick: bool, only: tuple[str, int]) -> list[dict[str, Any]]:
    """One size of the issue-34 validation or its held-out run in this process (Legate on its configured
    processors; a process per size, so that no size's stores and Legate's instances wait on another's)."""
    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    rt.ensure_started()
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    quiet = Quiet()
    sets = [(only[0], GRID_CASES if only[0] == "validation" else HELD_OUT_CASES, (only[1],))]
    for which, grid_cases, sizes in sets:
        for n in sizes:
            b, c = rng.random((n, n)), rng.random((n, n))
            expected = b @ c
            plans: dict[str, Any] = {}
            runs: dict[str, Callable[[], None]] = {}
            made: dict[str, dict[str, Any]] = {}
            outs: dict[str, Any] = {}
            for name, grid in grid_cases:
                A = dt.Tensor("A", (n, n))
                ins = [dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)]
                plan = kernels.build(name, dt.Machine(dt.Grid(*grid)), A, *ins).compile()
                key = f"{name} {'x'.join(map(str, grid))}"
                pred = plan.predict()  # the default: this machine's model, the Legate processors of this run
                plans[key], outs[key] = plan, A
                made[key] = {"set": which, "algorithm": name, "grid": list(grid), "size": n,
                             "processors": pred.processors_total, "predicted_seconds": pred.seconds,
                             "predicted": pred.as_dict(), "runtime_share": pred.launch_seconds / pred.seconds}

                def run(plan: Any = plan) -> None:
                    plan.run()
                    rt.fence()

                runs[key] = run
            repeats = rounds_for(n, quick)
            load = [list(os.getloadavg())]
            before = (quiet.rounds, quiet.busy_starts, quiet.waited)
            samples = quiet.rounds_of(runs, repeats)
            load.append(list(os.getloadavg()))
            firsts = {k: statistics.median(v) for k, v in samples.items()}
            outside = [k for k, m in firsts.items() if not BAND[0] <= made[k]["predicted_seconds"] / m <= BAND[1]]
            again: dict[str, list[float]] = {}
            if outside and not quick:  # a second run of the size's rounds, recorded with the first
                again = quiet.rounds_of(runs, repeats)
                load.append(list(os.getloadavg()))
            quiet_part = {"rounds": quiet.rounds - before[0], "started_busy": quiet.busy_starts - before[1],
                          "waited_seconds": quiet.waited - before[2]}
            for key, row in made.items():
                got = outs[key].to_numpy()
                err = float(np.abs(got - expected).max() / max(1.0, float(np.abs(expected).max())))
                pooled = samples[key] + again.get(key, [])
                seconds = statistics.median(pooled)
                row.update({"measured_seconds": seconds, "ratio": row["predicted_seconds"] / seconds,
                            "first_run_seconds": firsts[key], "first_run_ratio": row["predicted_seconds"] / firsts[key],
                            "samples": samples[key], "second_run_samples": again.get(key), "rounds": repeats,
                            "loadavg": load, "quiet": quiet_part, "max_rel_error": err})
                rows.append(row)
                print(f"  {which} n={n} {key}: measured {seconds * 1e3:.2f} ms, predicted "
                      f"{row['predicted_seconds'] * 1e3:.2f} ms (ratio {row['ratio']:.2f}"
                      f"{', first run ' + format(row['first_run_ratio'], '.2f') if again else ''})",
                      file=sys.stderr, flush=True)
            del plans, runs, outs
            gc.collect()
            rt.fence()  # the stores of this size are freed before the next size allocates
    return rows


def ordered_pairs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Pairs of one size whose measured times differ by more than PAIR_GAP, and how many the model orders
    the same way (the faster measured is predicted faster), with the ones it does not."""
    total = same = ties = 0
    wrong: list[str] = []
    for n in sorted({r["size"] for r in rows}):
        at = [r for r in rows if r["size"] == n]
        for k, a in enumerate(at):
            for b in at[k + 1:]:
                fast, slow = (a, b) if a["measured_seconds"] < b["measured_seconds"] else (b, a)
                if slow["measured_seconds"] <= PAIR_GAP * fast["measured_seconds"]:
                    continue
                total += 1
                if fast["predicted_seconds"] < slow["predicted_seconds"]:
                    same += 1
                else:
                    ties += abs(fast["predicted_seconds"] / slow["predicted_seconds"] - 1) < 0.01
                    wrong.append(f"n={n}: {_key(fast)} measured {fast['measured_seconds'] * 1e3:.2f} ms < "
                                 f"{_key(slow)} {slow['measured_seconds'] * 1e3:.2f} ms, predicted "
                                 f"{fast['predicted_seconds'] * 1e3:.2f} >= {slow['predicted_seconds'] * 1e3:.2f} ms")
    # a tie (predicted within 1%) counts as misordered: the model does not tell the two apart
    return {"pairs": total, "same_order": same, "share": same / total if total else None, "ties": ties,
            "misordered": wrong}


def _key(row: dict[str, Any]) -> str:
    return f"{row['algorithm']} {'x'.join(map(str, row['grid']))}"


def grid_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per set (validation, held-out): ratios in BAND, the ordering of pairs, the fixed-cost-dominated cases."""
    out: dict[str, Any] = {}
    for which in ("validation", "held_out"):
        got = [r for r in rows if r["set"] == which]
        if not got:
            continue
        ratios = [r["ratio"] for r in got]
        fixed = [r for r in got if r["runtime_share"] >= 0.5]
        out[which] = {
            "cases": len(got),
            "in_band": sum(1 for x in ratios if BAND[0] <= x <= BAND[1]),
            "band": list(BAND),
            "ratio_range": [min(ratios), max(ratios)],
            "median_ratio": statistics.median(ratios),
            "median_error": statistics.median(model_error(x) for x in ratios),
            "outside_band": [f"n={r['size']} {_key(r)}: {r['ratio']:.2f}" for r in got
                             if not BAND[0] <= r["ratio"] <= BAND[1]],
            "second_runs": sum(1 for r in got if r["second_run_samples"]),
            "rounds": sum({r["size"]: r["quiet"]["rounds"] for r in got}.values()),
            "rounds_started_busy": sum({r["size"]: r["quiet"]["started_busy"] for r in got}.values()),
            "quiet_wait_seconds": sum({r["size"]: r["quiet"]["waited_seconds"] for r in got}.values()),
            "pairs": ordered_pairs(got),
            "fixed_cost_dominated": {"cases": len(fixed), "in_band": sum(1 for r in fixed if BAND[0] <= r["ratio"]
                                                                         <= BAND[1]),
                                     "ratios": {f"n={r['size']} {_key(r)}": round(r["ratio"], 3) for r in fixed}},
        }
    return out


def sweep_child(procs: int, quick: bool, repeats: int) -> list[dict[str, Any]]:
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


def run_grids(quick: bool, calibrate: bool = False) -> int:
    """The issue-34 validation (default): a Legate child per size on distal's default processors, then the record;
    with `calibrate`, this machine's model is measured again first (`python -m distal.model.calibrate`)."""
    import subprocess
    import time

    from _common import legate_config

    from distal import model
    from distal.host import configured_processors

    t0 = time.perf_counter()
    load_before = list(os.getloadavg())
    if calibrate:
        print("calibrating this machine's model again", file=sys.stderr, flush=True)
    described = model.this_machine(recalibrate=calibrate).describe()  # cached before the child reads it
    calibrated_seconds = time.perf_counter() - t0
    procs = configured_processors("cpu", {})  # distal's default: one CPU processor per core
    env = dict(os.environ)
    env["LEGATE_CONFIG"] = legate_config(6000, procs)
    rows: list[dict[str, Any]] = []
    for which, n in grid_sizes(quick):
        args = [sys.executable, str(HERE / "validate_model.py"), "--grid-child", f"{which}:{n}"]
        proc = subprocess.run(args + (["--quick"] if quick else []), stdout=subprocess.PIPE, text=True, env=env,
                              cwd=HERE.parent, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"the validation child of {which} n = {n} failed ({proc.returncode})")
        rows += list(json.loads(proc.stdout.strip().splitlines()[-1]))
    summary = grid_summary(rows)
    summary["wall_seconds"] = time.perf_counter() - t0
    summary["loadavg_before"] = load_before
    summary["loadavg_after"] = list(os.getloadavg())
    summary["calibrated_first_seconds"] = calibrated_seconds if calibrate else None
    summary["niceness"] = os.nice(0)  # below 0: run ahead of the machine's other programs (`nice -n -20 ...`)
    note = (f"predicted (plan.predict(): this machine's model, the run's {procs} Legate CPU processors) / measured "
            "(median of interleaved plan.run() + fence) per case; ratio > 1: the model is pessimistic. Where a "
            f"ratio fell outside {BAND[0]}-{BAND[1]} the size ran a second time (second_run_samples) and the "
            "figure is the median of both runs. Pairs: cases of one size whose measured times differ by more than "
            f"{PAIR_GAP:g}x. Fixed-cost dominated: the model's runtime terms are at least half its time. The "
            "machine is shared: loadavg per size (before, after the rounds, after a second run)."
            + (" --quick: pipeline check only, figures are noise." if quick else ""))
    name = "model_validation_grids_quick" if quick else "model_validation_grids"
    path = record(name, {"model": described, "summary": summary, "note": note, "rows": rows,
                         "command": "python bench/validate_model.py" + (" --calibrate" if calibrate else "")
                         + (" --quick" if quick else "")})
    for which, part in summary.items():
        if isinstance(part, dict):
            pairs = part["pairs"]
            print(f"{which}: {part['in_band']} of {part['cases']} ratios in {BAND[0]}-{BAND[1]} (range "
                  f"{part['ratio_range'][0]:.2f}-{part['ratio_range'][1]:.2f}); pairs ordered as measured "
                  f"{pairs['same_order']} of {pairs['pairs']} ({pairs['ties']} of the others tied); "
                  f"fixed-cost dominated "
                  f"{part['fixed_cost_dominated']['in_band']} of {part['fixed_cost_dominated']['cases']} in band")
            for line in part["outside_band"] + pairs["misordered"]:
                print(f"  {line}")
    print(f"wrote {path} ({summary['wall_seconds']:.0f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--grid-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds: checks the pipeline only")
    parser.add_argument("--calibrate", action="store_true",
                        help="measure this machine's model again first (on a quiet machine; about 10 s)")
    parser.add_argument("--sweep", action="store_true",
                        help="the previous validation: the library at 1, 2 and 4 CPU processors")
    parser.add_argument("--repeats", type=int, default=None, help="--sweep: interleaved rounds (default 5, --quick 2)")
    parser.add_argument("--procs", default=",".join(map(str, PROCS)), help="--sweep: comma-separated CPU counts")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    if args.grid_child:
        which, n = args.grid_child.split(":")
        print(json.dumps(grid_child(args.quick, (which, int(n)))))
        return 0
    if args.child is not None:
        print(json.dumps(sweep_child(args.child, args.quick, repeats)))
        return 0
    if not args.sweep:
        return run_grids(args.quick, args.calibrate)
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
            + "Re-run on a quiet machine: python bench/validate_model.py --sweep")
    name = "model_validation_quick" if args.quick else "model_validation"
    path = write(name, {"model": described, "summary": summary, "note": note, "auto_table": table,
                        "rows": lib, "auto": autos})
    print("\n".join(table))
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
