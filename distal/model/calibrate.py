"""The model of this machine: leaf rates, memory bandwidth, the runtime's costs and overlap, measured once and cached.

`python -m distal.model.calibrate` measures again and caches the result (about
9 s on a quiet 2-core machine). `calibrate()` measures what runs:

- compute-bound leaves (GEMM, TTM, MTTKRP): the leaf kernel itself
  (`distal.leaf`, its matrix products on `distal.tile_blas`, whose choice is
  part of the cache key), on one BLAS thread as a Legate CPU processor runs it
  (`runtime/_blas.py`), at a few tile sizes, the fastest of a few calls
  (load from elsewhere only slows a kernel down), the curve made
  non-decreasing in size (`_monotone`); the model interpolates the rate
  between them (`ProcessorModel.curves`), FLOPs counted as
  `distal.model.predict` counts them (one per operation of the statement,
  one per summed iteration); and the GEMM leaf on the largest of those tiles
  in single precision over double (`ProcessorModel.single`: a leaf multiplying
  float32 or complex64 runs that much faster);
- bandwidth-bound leaves (TTV, innerprod): the bytes they stream per second,
  on tiles larger than the caches: each leaf is timed by its bytes at its
  own rate (`bandwidth_bound`, `streaming`), and the median of the two is
  the memory bandwidth of the model's roofline;
- element-wise work (`GENERIC`): `a * 2 + b` on a 256x256 tile for its FLOP
  rate, and the generic leaf's element-wise product on tiles larger than the
  caches for the rate its bytes stream at (`streaming["GENERIC"]`: copies,
  transposes and additions are bound by it);
- the runtime's costs and how they grow with a launch's points: a child
  process (`python -m distal.calibrate_cli --fixed-costs-child`: it runs the
  algorithm library through the facade, so it is an entry point above the
  library, not a module this one imports) starts Legate on as many CPU
  processors as distal runs by default (one per core) and times tiny plans of
  1 to 8 launches of one point, and one launch of 1 to 256 points with
  every point its own task and with the points of a processor grouped
  (`plan.run()` and reading the output back; interleaved rounds, the fastest
  kept, as for the leaves: the model is of a quiet machine); a least-squares
  fit of relative residuals (`distal.model.runtime_costs`) gives the cost per
  plan run, per launch, per launch point, per point and doubling of a
  launch's points where the timings show such growth, and per task. Task
  bodies are Python and Legate runs them under one interpreter lock per
  process, so a node pays the per-task cost once per task of a launch,
  whichever processor runs it (`MachineModel.serial_tasks`). When Legate
  cannot start, the figures of bench/fixed_cost.py on this kind of machine
  are used instead and the cache says so;
- the overlap of communication with computation: the same child times four
  plans with the same steps (`distal.calibrate_cli.overlap_plans`: a copy and
  a heavier element-wise leaf, each on tiles held or assembled from the other
  processor's instances) in interleaved rounds; the share of the communication
  hidden behind the computation in each round, the median over the rounds
  (`OverlapTimes.paired`), held to [0, 1], is the model's overlap (0.3 when a
  record has none measured);
- Legate's reduction instances: the same child times Johnson with Legate's
  reduction (`Grid(2, 2, 2)`, a reduction instance per point) and the same
  products without (`Grid(2, 2, 1)`) at two sizes (`calibrate_cli.reduction_rows`);
  `fit_reduction` gives the cost per instance and per byte of its whole huge
  pages (`MachineModel.reduction_seconds`; `DEFAULT_REDUCTION_COSTS` for a
  record that has none).

`this_machine()` reads the result from the user's cache directory
(`$DISTAL_CACHE_DIR`, else `$XDG_CACHE_HOME/distal`, else `~/.cache/distal`),
keyed by host name, core count and NumPy version, and measures only when
nothing is cached. Plans follow what is cached, so the directory is made
0700 and refused where another user owns it, and a cached file is read
only when it is a regular file of the user's own that group and others
cannot write (otherwise it is measured again and replaced), the rule
runtime/_shim.py keeps for the driver stand-in. With `$DISTAL_MACHINE_MODEL` set to a calibration file
(the cache file of one machine, copied where every process can read it),
`this_machine()` reads that file and nothing else: it never measures and
never writes. A run of several ranks needs it: every rank issues the same
launches only if every rank chooses the same plans, and `Schedule.auto`,
`dt.einsum` and `build("auto", ...)` choose by this model (docs/multinode.md).
"""

from __future__ import annotations

import functools
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from distal import leaf
from distal.host import configured_processors, meminfo_kib, private_dir, trusted_file
from distal.machine.links import Link
from distal.machine.ranks import RANK_LINK, local_ranks, running_ranks
from distal.model.hardware import (
    HUGE_PAGE,
    LEAF_KINDS,
    MachineModel,
    ModelError,
    ProcessorModel,
    dgx_a100,
    lassen_cpu,
    lassen_gpu,
)
from distal.model.runtime_costs import OverlapTimes, RuntimeFit, RuntimeRow, fit_runtime_costs

__all__ = ["BANDWIDTH_BOUND", "DEFAULT_FIXED_COSTS", "DEFAULT_OVERLAP", "DEFAULT_REDUCTION_COSTS", "PINNED",
           "cache_path", "calibrate", "fastest_of", "fit_child", "measure_fixed_costs", "model_of", "pinned_model",
           "preset", "this_machine"]

# 12: the GEMM leaf's rate in single precision over double (`single`); 11: the runtime's costs per launch point
# and their growth (launch_point_seconds, launch_log_seconds), and the measured overlap, from a child on one CPU
# processor per core; records of versions 10 and 11 still read (model_of: `single` 1)
_VERSION = 12

#: Leaf kinds timed by the bytes they stream (one or two FLOPs per element read).
BANDWIDTH_BOUND = frozenset({"TTV", "INNERPROD"})

#: Per plan run, per launch, per task point (seconds): bench/fixed_cost.py and tiny plans on a quiet
#: 2-core machine of this kind (a 1-point plan about 1.0 ms, each further launch 0.45 ms, each point 0.11 ms).
DEFAULT_FIXED_COSTS = {"plan_seconds": 0.5e-3, "launch_seconds": 0.35e-3, "task_seconds": 0.11e-3}
#: The overlap of a calibration record that has none measured (version 10 and earlier, or no Legate).
DEFAULT_OVERLAP = 0.3
#: A Legate reduction instance's cost (`MachineModel.reduction_seconds`) where a record has none measured (one of before
#: the child measured it, or made without Legate): per instance, and per byte of its whole huge pages. From quiet runs
#: of bench/validate_model.py's cases on this 2-core machine (load average 0.6-1.5): Johnson and COSMA on Grid(2, 2, 2)
#: (one REDUCE_ADD launch of 8 points, 4 per processor) took 0.9-1.2 ms more than the same products without REDUCE_ADD
#: (SUMMA on Grid(2, 2)) at n = 256 and 512 (tiles of 128 and 512 KiB, no whole huge page: about 0.25 ms an instance),
#: 18-35 ms more at n = 1024 (2 MiB tiles) and 210-280 ms more at n = 2048 (8 MiB): system time (150-500 ms a run at n =
#: 2048) of the kernel zeroing the instances' fresh huge pages (perf: clear_page_erms under do_huge_pmd_anonymous_page),
#: not glibc's (its trim and mmap thresholds changed nothing). Per MiB of whole huge pages on one processor that is
#: 2.2-4.4 ms at n = 1024 and 6.5-8.7 ms at n = 2048: the one rate 4.5 ms keeps both within 0.67-1.5 of the medians
#: measured.
# a run's first seconds of compute at half rate (`MachineModel.warmup_seconds`), not measured by calibration: the
# issue-34 validation's gaps (measured minus predicted, bench/results/2026-11-28_bd427bc/model_validation_grids.json,
# quiet rounds after 60 ms idle waits) grew with the critical processor's compute and stopped near 2 ms: 0.1 ms at
# 0.2 ms of compute, 0.4-1.2 at 0.6-0.8, 0.9-2.0 at 1.4-1.8, 1.1-3.0 from 4.8 ms to 96 ms; back to back (no idle
# wait) SUMMA at n = 512 on Grid(2, 1) took 2.5-2.7 ms, after a 60 ms idle wait and one run 3.9-4.1 ms (model 2.3)
DEFAULT_WARMUP = 2.0e-3
DEFAULT_REDUCTION_COSTS = {"reduction_instance_seconds": 0.25e-3, "reduction_page_seconds": 4.5e-3 / 2**20}

# (leaf kind, operand shapes) per calibrated size; FLOPs per call as predict counts them
_GEMM_SIZES = (32, 64, 128, 256, 512)
_TTM_SIZES = (16, 32, 64, 96)
_MTTKRP_SIZES = (32, 64, 128)
_RANK = 32


def cache_path() -> Path:
    """Where this machine's calibration is cached."""
    base = os.environ.get("DISTAL_CACHE_DIR")
    if base:
        return Path(base) / "machine-model.json"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "distal" / "machine-model.json"


def _key() -> str:
    """What the cached figures hold for: host, cores, NumPy, the BLAS tiles' products run on, this file's version."""
    from distal import tile_blas

    return f"{socket.gethostname()}|{os.cpu_count()}|{np.__version__}|{tile_blas.short()}|v{_VERSION}"


def _times(fn: Callable[[], Any], repeats: int) -> list[float]:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def fastest_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """The fastest of `repeats` timed calls after one warm-up: a kernel's own speed (load elsewhere only slows it)."""
    return max(min(_times(fn, repeats)), 1e-9)


def _monotone(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A rate curve made non-decreasing in size: a larger tile that measured slower met load, not BLAS.

    >>> _monotone([(1.0, 5.0), (2.0, 9.0), (3.0, 6.0), (4.0, 10.0)])
    [(1.0, 5.0), (2.0, 9.0), (3.0, 9.0), (4.0, 10.0)]
    """
    out: list[tuple[float, float]] = []
    for f, r in sorted(points):
        out.append((f, max(r, out[-1][1]) if out else r))
    return out


def _curves(rng: np.random.Generator) -> dict[str, list[tuple[float, float]]]:
    """(FLOPs per call, FLOP/s) of the compute-bound leaves at a few sizes."""
    out: dict[str, list[tuple[float, float]]] = {"GEMM": [], "TTM": [], "MTTKRP": []}
    for n in _GEMM_SIZES:
        a, b = rng.random((n, n)), rng.random((n, n))
        flops = 2.0 * n**3  # one multiply, one add per iteration
        out["GEMM"].append((flops, flops / fastest_of(functools.partial(leaf.GEMM.compute, a, b))))
    for n in _TTM_SIZES:
        b3, c = rng.random((n, n, n)), rng.random((n, n))
        flops = 2.0 * n**4
        out["TTM"].append((flops, flops / fastest_of(functools.partial(leaf.TTM.compute, b3, c))))
    for n in _MTTKRP_SIZES:
        b3, c, d = rng.random((n, n, n)), rng.random((n, _RANK)), rng.random((n, _RANK))
        flops = 3.0 * n**3 * _RANK  # two multiplies, one add per iteration
        out["MTTKRP"].append((flops, flops / fastest_of(functools.partial(leaf.MTTKRP.compute, b3, c, d), 3)))
    return {k: _monotone(v) for k, v in out.items()}


def _single(rng: np.random.Generator) -> float:
    """The GEMM leaf's rate in single precision over its rate in double, on the largest calibrated tile
    (`ProcessorModel.single`): at least 1 (a single-precision call that measured slower met load, not BLAS)."""
    n = _GEMM_SIZES[-1]
    a, b = rng.random((n, n)), rng.random((n, n))
    s, t = a.astype(np.float32), b.astype(np.float32)
    double = fastest_of(functools.partial(leaf.GEMM.compute, a, b))
    return max(1.0, double / fastest_of(functools.partial(leaf.GEMM.compute, s, t)))


def _streaming(rng: np.random.Generator) -> dict[str, float]:
    """Bytes per second TTV, innerprod and an element-wise generic leaf stream on tiles larger than the caches."""
    n = 256
    b, c = rng.random((n, n, n)), rng.random((n, n, n))
    v = rng.random(n)
    ttv = (b.nbytes + v.nbytes + n * n * 8) / fastest_of(lambda: leaf.TTV.compute(b, v), 3)
    inner = (b.nbytes + c.nbytes) / fastest_of(lambda: leaf.INNERPROD.compute(b, c), 3)
    # element-wise work on tiles larger than the caches (two 32 MiB operands and the result): a generic leaf's
    # bytes go at this rate when its FLOPs are few (transposes, copies, additions: the data-movement plans)
    x, y = b[:64], c[:64]
    generic = 3 * x.nbytes / fastest_of(lambda: leaf.GENERIC.compute(x, y, pattern="abc,abc->abc"), 3)
    return {"TTV": ttv, "INNERPROD": inner, "GENERIC": generic}


def calibrate(fixed_costs: bool = True) -> dict[str, Any]:
    """Measure this machine: leaf rates at a few sizes, streaming bandwidth, the runtime's fixed costs.

    With `fixed_costs=False` (or when Legate cannot start) the fixed costs
    are `DEFAULT_FIXED_COSTS`; `fixed_costs_source` says which.
    """
    from distal import tile_blas

    tile_blas.library()  # loaded before the limit below, so that it is limited too
    try:
        from threadpoolctl import threadpool_limits

        limit: Any = threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl ships with the test extra
        limit = None
    rng = np.random.default_rng(0)
    try:
        curves = _curves(rng)
        single = _single(rng)
        streams = _streaming(rng)
        a, b = rng.random((256, 256)), rng.random((256, 256))
        generic = 2 * a.size / fastest_of(lambda: a * 2.0 + b)
        big = np.ones(4 << 20)
        copy = 2 * big.nbytes / fastest_of(lambda: big.copy(), 3)
    finally:
        if limit is not None:
            limit.unregister()
    bandwidth = statistics.median(streams[k] for k in BANDWIDTH_BOUND)
    flops: dict[str, float] = {k: max(r for _, r in pts) for k, pts in curves.items()}
    # bandwidth-bound leaves: their nominal FLOP/s at the streaming rate (2 FLOPs per 8-byte element)
    flops.update({k: bw / 4 for k, bw in streams.items() if k in BANDWIDTH_BOUND})
    flops["GENERIC"] = generic
    assert set(flops) == set(LEAF_KINDS)
    costs: dict[str, Any] | None = measure_fixed_costs() if fixed_costs else None
    source = (f"measured: Legate plans of 1 to 256 points on {costs.get('fixed_costs_cpus', 1)} CPU processor(s)"
              if costs else "default: bench/fixed_cost.py figures")
    return {"key": _key(), "flops": flops, "curves": curves, "single": single, "streaming": streams,
            "bandwidth": bandwidth,
            "copy_bandwidth": copy, **(costs or DEFAULT_FIXED_COSTS), "fixed_costs_source": source,
            "cores": os.cpu_count() or 1, "memory": _memory_bytes(), "measured": time.strftime("%Y-%m-%d %H:%M:%S")}


def measure_fixed_costs(timeout: float = 120.0) -> dict[str, Any] | None:
    """The runtime's costs (per plan run, launch, launch point, their growth, task) and the overlap of
    communication with computation, from plans in a Legate child (`fit_child`).

    None when the child fails (no Legate, or it did not finish in `timeout` seconds).
    """
    env = dict(os.environ)
    # one CPU processor per core, as distal runs by default (runtime/_config.py); the child sets
    # DISTAL_GROUP_TASKS per plan (its plans run once with a task per point, once grouped)
    env["LEGATE_CONFIG"] = f"--cpus {max(1, os.cpu_count() or 1)} --gpus 0 --omps 0 --utility 1 --sysmem 2048"
    env.pop("DISTAL_GROUP_TASKS", None)
    try:
        # the child runs plans through the facade and the algorithm library, above this module: it is an entry
        # point of its own (distal/calibrate_cli.py), run as a process, never imported here
        proc = subprocess.run([sys.executable, "-m", "distal.calibrate_cli", "--fixed-costs-child"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                              timeout=timeout)
        found = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        found = None
    if not found:
        return None
    if isinstance(found, list):  # a child of version 10: (launches, points, seconds) rows only
        return dict(fit_fixed_costs(found))
    return fit_child(found)


def fit_child(found: dict[str, Any]) -> dict[str, Any]:
    """The calibration record's runtime terms from what the Legate child printed: the law the timings
    support (`runtime_costs.fit_runtime_costs`) with its residuals, and the measured overlap.

    >>> run = lambda p, t: {"points": [p], "tasks": [t], "seconds": 1e-3 + 3e-5 * p + 7e-5 * t}
    >>> rounds = [{"fixed": 1.0, "comm": 3.0, "comp": 5.0, "both": 6.0}] * 3
    >>> got = fit_child({"runtime": [run(p, p) for p in (1, 8, 64)] + [run(p, 2) for p in (8, 64)],
    ...                  "overlap": rounds, "cpus": 2})
    >>> round(got["task_seconds"] * 1e6), round(got["launch_point_seconds"] * 1e6), got["overlap"]
    (70, 30, 0.5)
    """
    rows = [RuntimeRow.of_record(r) for r in found["runtime"]]
    fit = fit_runtime_costs(rows)
    out: dict[str, Any] = {**fit.costs(), "runtime_law": fit.law, "runtime_fit": fit.as_record(),
                           "runtime_rows": [{**r, "predicted": fit.seconds(r["points"], r["tasks"])}
                                            for r in found["runtime"]],
                           "fixed_costs_cpus": int(found.get("cpus", 1))}
    if found.get("reduction"):
        out.update(fit_reduction(found["reduction"], fit))
    rounds = [OverlapTimes(**{k: float(r[k]) for k in ("fixed", "comm", "comp", "both")})
              for r in found.get("overlap", [])]
    if rounds:
        try:
            measured = OverlapTimes.paired(rounds)
        except ValueError:  # communication or computation not visible above the fixed plan: not measured
            pass
        else:
            out["overlap"] = min(1.0, max(0.0, measured))
            out["overlap_measurement"] = {"paired_overlap": measured,
                                          "of_medians": OverlapTimes.median_of(rounds).as_record(),
                                          "rounds": [r.as_record() for r in rounds]}
    return out


def fit_reduction(rows: list[dict[str, Any]], fit: RuntimeFit) -> dict[str, Any]:
    """A Legate reduction instance's cost (`MachineModel.reduction_seconds`) from the child's reduction rows
    (`distal.calibrate_cli.reduction_rows`): a row's extra time is its plan with Legate's reduction less the
    same products without, less what the fitted runtime terms charge for the first's further points and
    tasks; a processor makes its instances one after the other, so the extra over the instances on one
    processor is one instance's. Rows whose instances fill no whole huge page give the cost per instance,
    the others (less that) the cost per byte of whole huge pages; each is the median over its rows, 0 when
    negative, `DEFAULT_REDUCTION_COSTS` when no row gives it.

    >>> flat = RuntimeFit("linear", 0.0, 0.0, 0.0, 0.0, 1e-4)
    >>> row = lambda n, w: {"n": n, "with": w, "without": 0.01, "points_with": [8], "tasks_with": [8],
    ...                     "points_without": [4], "tasks_without": [4], "instance_bytes": (n // 2) ** 2 * 8,
    ...                     "per_processor": 4}
    >>> got = fit_reduction([row(512, 0.0114), row(1536, 0.0514)], flat)  # 4 tasks more; 4 x (0.25 ms + 2 pages)
    >>> round(got["reduction_instance_seconds"] * 1e3, 3), round(got["reduction_page_seconds"] * 2**20 * 1e3, 3)
    (0.25, 2.5)
    """
    per_instance: list[float] = []
    paged: list[tuple[float, float]] = []  # (extra seconds per instance, bytes of whole huge pages)
    for r in rows:
        runtime = fit.seconds(r["points_with"], r["tasks_with"]) - fit.seconds(r["points_without"], r["tasks_without"])
        extra = (float(r["with"]) - float(r["without"]) - runtime) / max(int(r["per_processor"]), 1)
        pages = math.floor(float(r["instance_bytes"]) / HUGE_PAGE) * HUGE_PAGE
        if pages:
            paged.append((extra, pages))
        else:
            per_instance.append(extra)
    instance = (max(0.0, statistics.median(per_instance)) if per_instance
                else DEFAULT_REDUCTION_COSTS["reduction_instance_seconds"])
    page = (max(0.0, statistics.median((e - instance) / b for e, b in paged)) if paged
            else DEFAULT_REDUCTION_COSTS["reduction_page_seconds"])
    return {"reduction_instance_seconds": instance, "reduction_page_seconds": page, "reduction_rows": rows}


def fit_fixed_costs(rows: list[list[float]]) -> dict[str, float]:
    """Least squares of seconds = plan + launches * launch + points * task over (launches, points, seconds) rows.

    >>> rows = [[1, k, 1e-3 + 1e-4 * k] for k in (1, 2, 4, 8)] + [[k, k, 7e-4 + 4e-4 * k] for k in (2, 4, 8)]
    >>> {k: round(v * 1e6) for k, v in fit_fixed_costs(rows).items()}
    {'plan_seconds': 700, 'launch_seconds': 300, 'task_seconds': 100}
    """
    a = np.array([[1.0, r[0], r[1]] for r in rows])
    y = np.array([r[2] for r in rows])
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    plan, launch, task = (max(float(x), 0.0) for x in coef)
    return {"plan_seconds": plan, "launch_seconds": launch, "task_seconds": task}


def _memory_bytes() -> int:
    total = meminfo_kib("MemTotal")
    return total * 1024 if total is not None else 8 << 30


def _private_dir(path: Path) -> Path:
    """`path` as a directory only this user can write (`distal.host.private_dir`, as the driver stand-in's);
    `ModelError` where it is not a directory or another user owns it (plans follow what is cached in it)."""
    return private_dir(path, "the machine model's cache directory", "distal chooses plans by what is cached there "
                       "and will not read what another user could have written", "DISTAL_CACHE_DIR", ModelError)


def _load() -> dict[str, Any] | None:
    """The cached calibration of this machine; None where there is none, it is of another key, or the file is
    not one this user alone could have written (then it is measured again and replaced)."""
    path = cache_path()
    if not trusted_file(path):
        return None
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("key") == _key() else None


def model_of(data: dict[str, Any]) -> MachineModel:
    """The machine model a calibration record describes (one node of `cores` CPU processors)."""
    cores = int(data["cores"])
    curves = {k: tuple((float(f), float(r)) for f, r in pts) for k, pts in data.get("curves", {}).items()}
    proc = ProcessorModel("cpu", data["flops"], float(data["bandwidth"]), int(data["memory"]) // max(cores, 1),
                          curves=curves, bandwidth_bound=BANDWIDTH_BOUND, single=float(data.get("single", 1.0)),
                          streaming={k: float(v) for k, v in data.get("streaming", {}).items()})
    copy_bw = float(data.get("copy_bandwidth", data["bandwidth"]))
    copy = Link("copy", copy_bw / 2, 50e-6)
    fixed = {k: float(data.get(k, v)) for k, v in DEFAULT_FIXED_COSTS.items()}
    overlap = float(data.get("overlap", DEFAULT_OVERLAP))
    law = data.get("runtime_law", "linear in the points, none per point (version 10)")
    reduction = {k: float(data.get(k, v)) for k, v in DEFAULT_REDUCTION_COSTS.items()}
    return MachineModel("this-machine", proc, 1 << 16, copy, copy, launch_seconds=fixed["launch_seconds"],
                        task_seconds=fixed["task_seconds"], plan_seconds=fixed["plan_seconds"], serial_tasks=True,
                        shared_memory=True,
                        launch_point_seconds=float(data.get("launch_point_seconds", 0.0)),
                        launch_log_seconds=float(data.get("launch_log_seconds", 0.0)),
                        reduction_instance_seconds=reduction["reduction_instance_seconds"],
                        reduction_page_seconds=reduction["reduction_page_seconds"],
                        overlap=overlap, cores=cores,
                        warmup_seconds=float(data.get("warmup_seconds", DEFAULT_WARMUP)),
                        notes=(f"calibrated {data.get('measured', '?')}; fixed costs "
                               f"{data.get('fixed_costs_source', 'default')}, growth law {law}; overlap "
                               f"{'measured' if 'overlap' in data else 'default'}",))


#: A calibration file every process reads instead of measuring (the same model on every rank).
PINNED = "DISTAL_MACHINE_MODEL"


def pinned_model(path: str) -> MachineModel:
    """The model a calibration file describes (`$DISTAL_MACHINE_MODEL`), read as it is."""
    try:
        data = json.loads(Path(path).read_text())
        return model_of(data)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ModelError(f"expected {PINNED} to name a calibration file of distal.model.calibrate, but found "
                         f"{path!r} ({type(error).__name__}: {error})") from error


def this_machine(recalibrate: bool = False) -> MachineModel:
    """The model of this machine: cached calibration (measured now when there is none or `recalibrate`).

    With `$DISTAL_MACHINE_MODEL` set, the model of that file (`pinned_model`), whatever `recalibrate` says.
    With several Legate ranks (`distal.machine.ranks.running_ranks`, read from the launcher's variables, the
    same on every rank), the model of the run: a node is a rank of the processors each rank configures, ranks
    joined by `RANK_LINK`, the ranks on this host sharing its cores (`MachineModel.across_ranks`).
    """
    ranks = running_ranks()
    host = _host_model(recalibrate)
    if ranks <= 1:
        return host
    return host.across_ranks(ranks, configured_processors("cpu"), RANK_LINK, local_ranks())


def _host_model(recalibrate: bool) -> MachineModel:
    """This host's model: the pinned file, else the cache, else measured now (and cached)."""
    pinned = os.environ.get(PINNED)
    if pinned:
        return pinned_model(pinned)
    data = None if recalibrate else _load()
    if data is None:
        data = calibrate()
        path = cache_path()
        try:
            _private_dir(path.parent)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=2))
            os.chmod(tmp, 0o644)
            tmp.replace(path)  # atomic: concurrent readers never see half a file (a planted one is replaced)
        except OSError:
            pass  # a read-only home: the model still works, it is measured again next time
    return model_of(data)


def preset(name: str) -> MachineModel:
    """A model by name: lassen-gpu, lassen-cpu, dgx-a100 (`distal.model.hardware`), or this (this machine,
    calibrated and cached).

    >>> preset("Lassen-GPU").name
    'lassen-gpu'
    """
    key = name.strip().lower().replace("_", "-") if isinstance(name, str) else ""
    if key in ("this", "this-machine", "local"):
        return this_machine()
    table = {"lassen-gpu": lassen_gpu, "lassen-cpu": lassen_cpu, "dgx-a100": dgx_a100}
    if key not in table:
        raise ModelError(f"expected a machine model (lassen-gpu, lassen-cpu, dgx-a100, this), but found {name!r}")
    return table[key]()


def main(argv: list[str] | None = None) -> int:
    """`python -m distal.model.calibrate`: measure this machine again, cache it, print the model."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--fixed-costs-child"]:  # the child is an entry point above the library now
        print("the fixed-costs child is `python -m distal.calibrate_cli --fixed-costs-child`", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    model = this_machine(recalibrate=True)
    print(model.describe())
    print(f"cached in {cache_path()} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
