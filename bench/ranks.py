"""The library's algorithms and five einsum statements on 1 rank x 2 CPUs against 2 ranks x 1 CPU.

    .venv/bin/python bench/ranks.py [--quick] [--repeats N] [--out ranks]      (or: distal bench ranks)
    .venv/bin/python bench/ranks.py --link [--repeats N]      (the link between two ranks, about a minute)

Builds the multi-rank environment once (tools/multirank_env.sh: legate 26.1, Open MPI and UCX from
PyPI, under .multirank/), then runs this script twice as a child there: under `mpirun -n 1` with two
CPU processors in the one rank, and under `mpirun -n 2` with one CPU processor per rank. Both run the
same plans on the same distal machines (one processor per machine coordinate folded onto the two
real processors), so the difference is where the two processors live: one process, or two processes
talking through UCX over shared memory. Each workload is compiled once, then run `repeats` times
(median, after one warm-up run), each run fenced. Recorded per workload and configuration: the
median and all times, the model's prediction (`Plan.predict()` on this machine's calibration; on two
ranks a node per rank, `RANK_LINK` between them: `distal.model.calibrate.this_machine`) and the most
bytes one processor receives from other coordinates of the plan's outermost machine level as the
model counts them (`between_nodes_bytes`). That is not the bytes between ranks: the plans' machines
have 2 to 8 coordinates folded onto the 2 ranks (bench/rank_traffic.py compares explain()'s bytes with
Legate's on machines whose outer level is the ranks). A last workload launches nothing
and times the fence alone.

`--link` measures the link between two ranks that `distal.machine.ranks.RANK_LINK` records: under
`mpirun -n 2` (one CPU per rank) a copy `y[i] = x[i]` on `Machine(Grid(2), Grid(1))` with x held
whole by rank 0 and y in halves, so that rank 1 reads its half of x from rank 0, against the same
copy with x in halves too (nothing crosses), run interleaved; each run first writes x anew where it is
held (from z, placed alike: nothing crosses), so that the copy of x on rank 1 from the run before is
stale and the bytes cross every run. The plans' wall times are recorded, but on a loaded 2-core machine
their differences do not grow with the bytes (a crossing run took 0.25-0.7 s more at every size), so
the figures come from Legion's profiler (`--profile`, read by tools/legion_prof.py): Realm's own start
and stop of every copy between ranks. Latency: the fastest copy under 64 KiB; bandwidth: the
least-squares slope of the fastest copy of each size of 1 MiB or more.

On this project's 2-core machines these times are the mechanics of several ranks (start-up, copies
made as tasks, launches through Legion's distributed runtime), not scaling figures: two ranks share
the same two cores as the one rank's two processors.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {"1 rank x 2 CPUs": (1, 2), "2 ranks x 1 CPU": (2, 1)}
EINSUMS = ("ij,jk->ik", "ijk,k->ij", "ij->j", "ij,ij->", "ijk,jl->ilk")
GRIDS = {"summa": (2, 2), "cannon": (2, 2), "pumma": (2, 2), "johnson": (2, 2, 2), "solomonik": (2, 2, 2),
         "cosma": (2, 2, 2), "ttv": (2, 2), "innerprod": (4,), "ttm": (4,), "mttkrp": (2, 2, 2)}


# -- the child: one configuration, every workload ----------------------------------------------------

def _workloads(quick: bool) -> list[tuple[str, Callable[[], Any], Any]]:
    """(name, a function running it once, its compiled plan or None) per workload."""
    import numpy as np

    import distal as dt
    from distal import kernels

    n = 128 if quick else 512
    t = 24 if quick else 64
    rng = np.random.default_rng(11)
    found: list[tuple[str, Callable[[], Any], Any]] = []
    for name in kernels.names():
        m = dt.Machine(dt.Grid(*GRIDS.get(name, (2,))))
        if name in ("summa", "cannon", "pumma", "johnson", "solomonik", "cosma"):
            ops = [dt.Tensor(f"A_{name}", (n, n)), dt.Tensor.from_array(f"B_{name}", rng.random((n, n))),
                   dt.Tensor.from_array(f"C_{name}", rng.random((n, n)))]
        elif name == "ttv":
            ops = [dt.Tensor("A_ttv", (t, t)), dt.Tensor.from_array("B_ttv", rng.random((t, t, t))),
                   dt.Tensor.from_array("c_ttv", rng.random(t))]
        elif name == "innerprod":
            ops = [dt.Tensor("a_ip", ()), dt.Tensor.from_array("B_ip", rng.random((t, t, t))),
                   dt.Tensor.from_array("C_ip", rng.random((t, t, t)))]
        elif name == "ttm":
            ops = [dt.Tensor("A_ttm", (t, t, t)), dt.Tensor.from_array("B_ttm", rng.random((t, t, t))),
                   dt.Tensor.from_array("M_ttm", rng.random((t, t)))]
        else:
            ops = [dt.Tensor("A_mk", (t, 16)), dt.Tensor.from_array("B_mk", rng.random((t, t, t))),
                   dt.Tensor.from_array("C_mk", rng.random((t, 16))), dt.Tensor.from_array("D_mk", rng.random((t, 16)))]
        plan = kernels.build(name, m, *ops).compile()
        found.append((f"library {name} on Grid{GRIDS.get(name, (2,))}", plan.run, plan))
    found.append(("a fence alone (nothing launched)", _nothing, None))
    os.environ["DISTAL_EAGER"] = "0"  # the statements run as Legate plans, as the library's do
    # 3-d operands of 128^3 at most (16 MiB): every workload's tensors stay alive, in 512 MiB a rank
    extents = {"i": n // 4, "j": n // 4, "k": n // 4, "l": 16}
    for spec in EINSUMS:
        inputs = spec.split("->")[0].split(",")
        tensors = [dt.Tensor.from_array(f"E{len(found)}_{p}", rng.random(tuple(extents[c] for c in s)))
                   for p, s in enumerate(inputs)]
        machine = dt.Machine(dt.Grid(2))
        found.append((f"einsum {spec}", partial(dt.einsum, spec, *tensors, machine=machine), None))
    return found


def _nothing() -> None:
    """The workload that launches nothing: its time is the fence's (with several ranks, an exchange)."""


def _between(plan: Any) -> tuple[float | None, float | None]:
    """The model's predicted seconds and the bytes between the plan's outermost coordinates (most of one)."""
    if plan is None:
        return None, None
    prediction = plan.predict()
    between = max((float(p.get("between_nodes_bytes", 0.0)) for p in prediction.per_processor), default=0.0)
    return prediction.seconds, between


def child(quick: bool, repeats: int, out: Path) -> int:
    from distal import runtime as rt

    info = rt.ensure_started()
    legate = rt.legate_runtime()
    rows = []
    for name, run, plan in _workloads(quick):
        run()  # warm-up: compiles, copies, registers
        rt.fence()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            rt.fence()
            times.append(time.perf_counter() - start)
        predicted, between = _between(plan)
        rows.append({"workload": name, "median_s": statistics.median(times), "times_s": times,
                     "predicted_s": predicted, "between_bytes": between})
        if legate.node_id == 0:
            print(f"  {name}: {statistics.median(times) * 1e3:.1f} ms", flush=True)
    if legate.node_id == 0:
        out.write_text(json.dumps({"legate": info.as_dict(), "ranks": int(legate.node_count), "rows": rows}))
    return 0


# -- the link between two ranks -----------------------------------------------------------------------

LINK_SIZES = (8, 1 << 21, 1 << 22, 1 << 23)  # float64 elements of x: 64 B, 16, 32 and 64 MiB


def link_child(repeats: int, out: Path) -> int:
    """Rank 1 reads half of a vector that rank 0 holds, against a copy that reads nothing from another rank."""
    import numpy as np

    import distal as dt
    from distal import runtime as rt

    rt.ensure_started()
    legate = rt.legate_runtime()
    i, io, ii = dt.index_vars("i io ii")
    m = dt.Machine(dt.Grid(2), dt.Grid(1))
    halves = dt.Format(["x -> x", "x -> x"], m)
    rows = []
    for n in LINK_SIZES:
        plans = {}
        for label, held in (("crossing", dt.Format(["x -> 0", "x -> 0"], m)), ("local", halves)):
            # x is written anew each run where its format holds it (from z, held alike), so that Legion's copy of
            # x on rank 1 from the run before is stale and the read crosses again
            z = dt.Tensor.from_array(f"z_{label}_{n}", np.arange(n, dtype=np.float64), held)
            x = dt.Tensor(f"x_{label}_{n}", (n,), held)
            y = dt.Tensor(f"y_{label}_{n}", (n,), halves)
            x[i] = z[i]
            write = x.schedule().distribute([i], [io], [ii], m).communicate([x, z], io).compile()
            y[i] = x[i]
            read = y.schedule().distribute([i], [io], [ii], m).communicate([x, y], io).compile()
            plans[label] = (write, read)
            write.run()
            read.run()
            rt.fence()
        times: dict[str, list[float]] = {label: [] for label in plans}
        for _ in range(repeats):  # interleaved: a burst of load meets both
            for label, (write, read) in plans.items():
                start = time.perf_counter()
                write.run()
                read.run()
                rt.fence()
                times[label].append(time.perf_counter() - start)
        between = plans["crossing"][1].stats()["traffic"].split().between_nodes
        best = {label: min(t) for label, t in times.items()}
        rows.append({"elements": n, "bytes_between_ranks": between, "times_s": times,
                     **{f"{k}_min_s": v for k, v in best.items()},
                     **{f"{k}_median_s": statistics.median(t) for k, t in times.items()},
                     "difference_s": best["crossing"] - best["local"]})
        if legate.node_id == 0:
            print(f"  {n * 8} B of x, {between} B between ranks: fastest crossing {best['crossing'] * 1e3:.2f} ms, "
                  f"local {best['local'] * 1e3:.2f} ms", flush=True)
        del plans
    if legate.node_id == 0:
        out.write_text(json.dumps({"ranks": int(legate.node_count), "rows": rows}))
    return 0


def link(repeats: int, name: str) -> int:
    """Run `link_child` under mpirun -n 2 with Legion's profiler on; fit latency and bandwidth from the copies
    between ranks Realm itself timed; record them with the plans' wall times."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(ROOT))
    from _common import record

    from tools import legion_prof

    env_file, env = _environment()
    if env_file is None:
        return 1
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "link.json"
        config = f"--cpus 1 --gpus 0 --omps 0 --sysmem 1500 --utility 1 --profile --logdir {scratch}"
        command = (f"source {env_file} && export LEGATE_CONFIG='{config}' && exec mpirun --bind-to none -n 2 "
                   f"python {Path(__file__).resolve()} --repeats {repeats} --link-child {out}")
        done = subprocess.run(["bash", "-c", command], env=env, cwd=str(ROOT), timeout=1800, check=False)
        if done.returncode != 0 or not out.exists():
            print(f"the child failed ({done.returncode})", file=sys.stderr)
            return 1
        found = json.loads(out.read_text())
        profiles = legion_prof.profiles_in([scratch])
        timed = {int(r["fevent"]): (int(r["stop"]) - int(r["start"])) * 1e-9
                 for prof in profiles for r in prof.records.get("CopyInfo", ())}
        crossing = [(c.size, timed[c.fevent]) for c in legion_prof.copies(profiles)
                    if c.between_ranks and c.fevent in timed]
    fastest: dict[int, float] = {}
    for size, seconds in crossing:
        fastest[size] = min(seconds, fastest.get(size, math.inf))
    # the fastest copy of each size met the least load: latency from the small ones, bandwidth from the slope
    small = [t for size, t in fastest.items() if size < 1 << 16]
    big = sorted((size, t) for size, t in fastest.items() if size >= 1 << 20)
    latency = min(small) if small else math.nan
    bandwidth = math.nan
    if len(big) >= 2:
        mean_s = statistics.fmean(size for size, _ in big)
        mean_t = statistics.fmean(t for _, t in big)
        slope = (sum((size - mean_s) * (t - mean_t) for size, t in big) / sum((size - mean_s) ** 2 for size, _ in big))
        bandwidth = 1.0 / slope if slope > 0 else math.nan
    print("fastest copy between ranks per size (Realm's own times): "
          + ", ".join(f"{size} B {t * 1e3:.2f} ms" for size, t in sorted(fastest.items())))
    print(f"latency {latency * 1e3:.2f} ms, bandwidth {bandwidth / 1e9:.2f} GB/s (load {load[0]:.1f}): "
          f"Link('ucx_shm', {bandwidth:.3g}, {latency:.3g})")
    path = record(name, {"rows": found["rows"], "copies_between_ranks": sorted(crossing),
                         "fastest_by_size": {str(k): v for k, v in sorted(fastest.items())},
                         "latency_s": latency, "bandwidth_Bps": bandwidth, "repeats": repeats,
                         "load": load, "load_after": os.getloadavg(),
                         "note": "two ranks of one CPU each over UCX shared memory on this host; copy times are "
                                 "Realm's (Legion's profile, tools/legion_prof.py), the fastest of each size"})
    print(f"wrote {path}")
    return 0


def _environment() -> tuple[str | None, dict[str, str]]:
    from _common import multirank_environment  # bench/ is on sys.path when run as a script

    return multirank_environment()


# -- the parent: both configurations, one record -------------------------------------------------------

def parent(quick: bool, repeats: int, name: str) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import record

    env_file, env = _environment()
    if env_file is None:
        return 1
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, (ranks, cpus) in CONFIGS.items():
            out = Path(scratch) / f"{ranks}x{cpus}.json"
            config = f"--cpus {cpus} --gpus 0 --omps 0 --sysmem {1024 // ranks} --utility 1"
            flags = f"{'--quick ' if quick else ''}--repeats {repeats} --child {out}"
            command = (f"source {env_file} && export LEGATE_CONFIG='{config}' && "
                       f"exec mpirun --bind-to none -n {ranks} python {Path(__file__).resolve()} {flags}")
            print(f"{label}:", flush=True)
            start = time.perf_counter()
            done = subprocess.run(["bash", "-c", command], env=env, cwd=str(ROOT), timeout=1800, check=False)
            if done.returncode != 0 or not out.exists():
                print(f"{label}: the child failed ({done.returncode})", file=sys.stderr)
                return 1
            results[label] = {**json.loads(out.read_text()), "wall_s": time.perf_counter() - start}
    one, two = (results[label] for label in CONFIGS)
    print(f"{'workload':34} {'1x2 ms':>9} {'2x1 ms':>9} {'ratio':>6} {'predicted 1x2':>13} {'2x1':>7} "
          f"{'bytes between':>14}")
    for a, b in zip(one["rows"], two["rows"], strict=True):
        predicted = "" if a["predicted_s"] is None else f"{a['predicted_s'] * 1e3:.1f}"
        on_ranks = "" if b["predicted_s"] is None else f"{b['predicted_s'] * 1e3:.1f}"  # a node per rank
        between = "" if b["between_bytes"] is None else f"{b['between_bytes']:.0f}"
        print(f"{a['workload']:34} {a['median_s'] * 1e3:9.1f} {b['median_s'] * 1e3:9.1f} "
              f"{b['median_s'] / a['median_s']:6.2f} {predicted:>13} {on_ranks:>7} {between:>14}")
    path = record(name, {"configs": results, "quick": quick, "repeats": repeats, "load": os.getloadavg(),
                        "note": "2-core machine: the mechanics of several ranks, not scaling figures"})
    print(f"wrote {path}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (n = 128)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="ranks")
    parser.add_argument("--link", action="store_true", help="measure the link between two ranks")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--link-child", type=Path, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.link_child is not None:
        return link_child(options.repeats, options.link_child)
    if options.link:
        return link(options.repeats, "ranks_link" if options.out == "ranks" else options.out)
    if options.child is not None:
        return child(options.quick, options.repeats, options.child)
    return parent(options.quick, options.repeats, options.out)


if __name__ == "__main__":
    raise SystemExit(main())
