"""The library benchmark suite (issue: algorithm library and benchmarks).

Matmul algorithms against `cupynumeric.matmul` and `numpy.matmul` at n = 2048
and 4096 on 1, 2 and 4 CPU processors; TTV, innerprod, TTM and MTTKRP against
`cupynumeric.einsum` and `numpy.einsum` on 2 CPU processors at sizes where
NumPy takes about half a second or more. Each figure is the median of 5 runs
after a warm-up; rates are GFLOP/s (matmul, TTM, MTTKRP) or GB/s (TTV,
innerprod), as the paper reports them.

Legate starts once per process, so each processor count runs in a child
process (`--child P`) with LEGATE_CONFIG="--cpus P ..."; NumPy runs in a
child without Legate with 2 BLAS threads (`--numpy`). All children belong to
one run of this script, and ratios are taken within it.

Run: `python bench/suite.py [--quick]`; writes bench/results/suite.json and
bench/results/suite_*.png.

`--interleaved` (the issue's targets, measured in one run): TTV, innerprod,
TTM and MTTKRP on 2 CPU processors against `numpy.einsum` (2 BLAS threads)
and `cupynumeric.einsum` at sizes where NumPy takes 0.1 s or more, then the
matmul sweep n = 256, 512, 1024, 2048, 4096 (`--sizes`) for every distal
algorithm and `auto` against `numpy.matmul` and `cupynumeric.matmul`.

Higher-order kernels: a NumPy child times each kernel at a small size, and
the size is scaled so that NumPy takes about `--target` seconds (0.2),
lowered where the three systems' children would not fit in the available
memory (`choose_size`, `child_memory`). Then, kernel by kernel, `--rounds`
rounds (5), each running one child per system (numpy without Legate,
distal, cupynumeric), the systems' order rotated each round; each child
makes its operands, warms up with one run and times one (`sample_child`
says what a timed run includes). The three systems never hold their copies
at once, which at these sizes would not fit 24 GiB. Then bench/check.py, run
as a child (`--baseline-child`: one Legate process, its pool sized by
check), records `distal bench check`'s ratios at check's sizes as its
baseline.

Matmul: one Legate child per size with --sysmem sized for it, the methods in
interleaved rounds (median of `--rounds`) after a warm-up round.

A child that gives no result within `--timeout` seconds is killed and
reported as a hang; a child whose memory need exceeds the machine's
available memory is refused before it starts. Writes
bench/results/suite_interleaved.json (with NumPy's time of each size, the
sizing, every child's samples and peak RSS), matmul_sweep.json and
matmul_sweep.png, with the machine description; `--quick` is a smoke run at
small sizes, 1 round (`*_quick` files).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import (  # bench/ is on sys.path when run as a script
    NUMPY_AVX512,
    ChildHung,
    Progress,
    available_mib,
    blas_kernels,
    check_host_memory,
    child,
    fingerprint,
    fingerprint_error,
    interleaved_rounds,
    legate_env,
    median_seconds,
    numpy_env,
    numpy_threads,
    record,
    record_path,
    round_order,
)
from _common.workloads import (
    HIGHER,
    SPECS,
    SYSTEMS,
    child_memory,
    distal_names,
    higher_systems,
    inputs,
    operand,
    operand_shapes,
    out_shape,
    ratios,
)

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "suite.py"
CHECK = HERE / "check.py"  # run as a child for its baseline, never imported
MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]
PROCS = (1, 2, 4)
def flops(name: str, n: int, l: int) -> tuple[float, str]:
    """Work of one run: (amount, unit) — FLOPs for products, bytes read for TTV and innerprod."""
    if name == "matmul":
        return 2.0 * n**3, "GFLOP/s"
    if name == "ttv":
        return 8.0 * (n**3 + n), "GB/s"
    if name == "innerprod":
        return 8.0 * 2 * n**3, "GB/s"
    if name == "ttm":
        return 2.0 * n**3 * l, "GFLOP/s"
    return 3.0 * n**3 * l, "GFLOP/s"  # mttkrp: two multiplies and an add per (i, j, k, l)


# -- children -------------------------------------------------------------------


def numpy_child(sizes: list[int], repeats: int, higher: dict[str, tuple[int, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {"matmul": {}, "higher": {}}
    for n in sizes:
        rng = np.random.default_rng(0)
        b, c = rng.random((n, n)), rng.random((n, n))
        out["matmul"][str(n)] = median_seconds(lambda b=b, c=c: b @ c, repeats)[0]
    for name, (n, l) in higher.items():
        arrays = inputs(name, n, l)
        spec = SPECS[name][0]
        out["higher"][name] = median_seconds(
            lambda spec=spec, arrays=arrays: np.einsum(spec, *arrays, optimize=True), repeats)[0]
    return out


def legate_child(procs: int, sizes: list[int], repeats: int, higher: dict[str, tuple[int, int]]) -> dict[str, Any]:
    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    rt.ensure_started()  # loads the driver stand-in where there is no GPU driver, then Legate
    import cupynumeric as cn

    out: dict[str, Any] = {"matmul": {}, "higher": {}}
    for n in sizes:
        rng = np.random.default_rng(0)
        b, c = rng.random((n, n)), rng.random((n, n))
        row: dict[str, Any] = {}
        cb, cc = cn.asarray(b), cn.asarray(c)

        def cupy_matmul(cb: Any = cb, cc: Any = cc) -> None:
            float(cn.matmul(cb, cc)[0, 0])  # reading one element waits for the product

        row["cupynumeric"] = median_seconds(cupy_matmul, repeats)[0]
        for name in MATMUL:
            m = kernels.machine(name, procs, (n, n, n))
            A = dt.Tensor("A", (n, n))
            B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
            plan = kernels.build(name, m, A, B, C).compile()

            def run(plan: Any = plan, A: dt.Tensor = A) -> None:
                plan.run()
                A.to_numpy()

            row[name] = median_seconds(run, repeats)[0]
            row[f"{name}_machine"] = repr(m)
            err = float(np.abs(A.to_numpy() - b @ c).max())
            row[f"{name}_max_error"] = err
        out["matmul"][str(n)] = row
    for name, (n, l) in higher.items():
        arrays = inputs(name, n, l)
        spec = SPECS[name][0]
        cargs = [cn.asarray(a) for a in arrays]

        def cupy_einsum(spec: str = spec, cargs: list[Any] = cargs) -> None:
            r = cn.einsum(spec, *cargs)
            float(r.sum())

        row = {"cupynumeric": median_seconds(cupy_einsum, repeats)[0]}
        names = distal_names(name)
        ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
        A = dt.Tensor(names[0], out_shape(name, n, l))
        m = kernels.machine(name, procs)
        plan = kernels.build(name, m, A, *ins).compile()

        def run_kernel(plan: Any = plan, A: dt.Tensor = A) -> None:
            plan.run()
            A.to_numpy()

        row["distal"] = median_seconds(run_kernel, repeats)[0]
        row["distal_machine"] = repr(m)
        expected = np.einsum(spec, *arrays, optimize=True)
        row["distal_max_rel_error"] = float(np.abs(A.to_numpy() - expected).max() / max(1.0, np.abs(expected).max()))
        out["higher"][name] = row
    return out


SWEEP = [256, 512, 1024, 2048, 4096]
SWEEP_ALGORITHMS = [*MATMUL, "auto"]
# the machine's BLAS limit on its 2 cores: one GEMM on distal's AVX-512 OpenBLAS (distal/tile_blas.py), 2 threads
MACHINE_BLAS = "openblas_avx512_2_threads"
CHILD_TIMEOUT = 900.0  # seconds one child may take before the runner calls it a hang


def interleaved_child(sizes: list[int], repeats: int) -> dict[str, Any]:
    """Matmul sizes, each in interleaved rounds (one Legate process).

    The runner (`interleaved_main`) gives each matmul size its own child;
    operands of one size are dropped (and a fence waits for their deletion)
    before the next size allocates. The higher-order kernels run one child
    per system instead (`run_higher`).
    """
    import gc
    import resource
    import statistics

    import distal as dt
    from distal import kernels, tile_blas
    from distal import runtime as rt

    rt.ensure_started()
    import cupynumeric as cn

    set_threads = numpy_threads()
    out: dict[str, Any] = {"matmul": {}, "legate_config": os.environ.get("LEGATE_CONFIG")}
    for n in sizes:
        rng = np.random.default_rng(0)
        b, c = rng.random((n, n)), rng.random((n, n))
        cb, cc = cn.asarray(b), cn.asarray(c)

        def numpy_run(b: Any = b, c: Any = c) -> None:
            set_threads(2)  # NumPy with 2 BLAS threads; Legate's tasks use 1 each
            try:
                np.matmul(b, c)
            finally:
                set_threads(1)

        def cupy_run(cb: Any = cb, cc: Any = cc) -> None:
            float(cn.matmul(cb, cc)[0, 0])

        runs: dict[str, Any] = {"numpy": numpy_run, "cupynumeric": cupy_run}
        blas = tile_blas.library()
        if blas is not None:  # the machine's BLAS: distal's AVX-512 OpenBLAS, one GEMM on 2 threads

            into = np.empty((n, n))

            def blas_run(b: Any = b, c: Any = c, into: Any = into, lib: Any = blas) -> None:
                lib.set_threads(2)
                try:
                    tile_blas.gemm(b, c, out=into)
                finally:
                    lib.set_threads(1)

            runs[MACHINE_BLAS] = blas_run
        machines: dict[str, str] = {}
        outputs: dict[str, dt.Tensor] = {}
        for name in SWEEP_ALGORITHMS:
            m = kernels.machine(name, 2, (n, n, n))
            A = dt.Tensor("A", (n, n))
            plan = kernels.build(name, m, A, dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)).compile()
            machines[name] = repr(m)
            outputs[name] = A

            def run(plan: Any = plan) -> None:
                plan.run()
                rt.fence()

            runs[name] = run
        samples = interleaved_rounds(runs, repeats)
        expected = b @ c
        errors = {name: float(np.abs(A.to_numpy() - expected).max()) for name, A in outputs.items()}
        secs = {k: statistics.median(v) for k, v in samples.items()}
        best = min(SWEEP_ALGORITHMS, key=lambda x: secs[x])
        out["matmul"][str(n)] = {"seconds": secs, "all": samples, "machines": machines, "best": best,
                                 "max_error": errors,
                                 "vs_numpy": secs["numpy"] / secs[best],
                                 "vs_cupynumeric": secs["cupynumeric"] / secs[best],
                                 **({"vs_machine_blas": secs[MACHINE_BLAS] / secs[best]} if blas is not None else {}),
                                 "tile_blas": tile_blas.describe()}
        # Drop this size's operands before the next one allocates: every store is
        # idle after the fence in each run, so deleting them here cannot deadlock.
        del runs, outputs, cb, cc, b, c, expected, run, numpy_run, cupy_run, blas
        into = None
        rt.fence()
        gc.collect()
        rt.fence()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["blas"] = blas_kernels()  # the kernels NumPy's, cuPyNumeric's and distal's BLAS ran in this process
    return out


def plot_sweep(results: dict[str, Any], path: Path) -> Path:
    """Time and ratios against n for the matmul sweep (results["matmul"]), written to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["matmul"]
    ns = sorted(int(n) for n in rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for who in ("numpy", "cupynumeric", MACHINE_BLAS, *SWEEP_ALGORITHMS):
        if who not in rows[str(ns[0])]["seconds"]:
            continue
        left.plot(ns, [rows[str(n)]["seconds"][who] for n in ns], marker="o", label=who,
                  linewidth=2.5 if who in ("numpy", "cupynumeric", MACHINE_BLAS) else 1)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("n")
    left.set_ylabel("seconds (median)")
    left.legend(fontsize=7)
    for key in ("vs_numpy", "vs_cupynumeric", "vs_machine_blas"):
        if key in rows[str(ns[0])]:
            right.plot(ns, [rows[str(n)][key] for n in ns], marker="o", label=f"best distal {key.replace('_', ' ')}")
    right.axhline(1.0, color="gray", linewidth=0.8)
    right.axhline(0.9, color="gray", linewidth=0.8, linestyle="--")  # the issue's target against NumPy from n = 1024
    right.set_xscale("log", base=2)
    right.set_xlabel("n")
    right.set_ylabel("ratio (theirs / distal's)")
    right.legend(fontsize=7)
    fig.suptitle("float64 matmul on 2 CPU processors, interleaved rounds")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- higher-order kernels: one child per system and round --------------------------------------
#
# At sizes where numpy.einsum takes 0.1 s or more, TTV's tensor is about 6 GB
# and innerprod's two about 4 GB each. One process holding NumPy's,
# distal's and cuPyNumeric's copies of them does not fit a 24 GiB machine
# (distal's placement alone holds the host array, its attached copy and the
# placed store at its peak), so each system runs in its own child process,
# which makes its operands, runs once to warm up and times one run; the
# children of one kernel alternate round by round (the order rotates), so
# that load from elsewhere on the machine affects the three systems alike.

# the sizes NumPy is timed at to choose the measured ones ((n, l) as in HIGHER), and what it should take there
CALIBRATION = {"ttv": (300, 0), "innerprod": (300, 0), "ttm": (150, 900), "mttkrp": (200, 128)}
QUICK_CALIBRATION = {"ttv": (40, 0), "innerprod": (40, 0), "ttm": (20, 90), "mttkrp": (24, 16)}
TARGET_NUMPY_S = 0.2  # aimed at, so that the measured NumPy median stays at 0.1 s or more under noise
# the sizes measured: where NumPy takes about 0.2 s, and where it takes about 0.03 s (the fixed costs show there)
TARGETS_NUMPY_S = (TARGET_NUMPY_S, 0.03)
MIN_NUMPY_S = 0.1  # the issue's condition on the sizes
def largest_fitting(name: str, l: int, available_mib: float, start: int, step: int = 10) -> int:
    """The largest n (a multiple of `step`, at most `start`) whose children all fit in `available_mib`; 0 if none."""
    n = start - start % step
    while n > 0 and max(child_memory(name, s, n, l)[1] for s in SYSTEMS) > available_mib:
        n -= step
    return max(n, 0)


def choose_size(name: str, base: tuple[int, int], base_seconds: float, target: float,
                available_mib: float, step: int = 10) -> dict[str, Any]:
    """The measured size of one kernel: NumPy's time at `base` scaled to `target`, within memory.

    NumPy's einsum does work proportional to n^3 at fixed l for all four
    kernels, so n = base_n * (target / base_seconds)^(1/3), rounded up to a
    multiple of `step` and never below base_n; then lowered until every
    system's child fits in `available_mib` (`child_memory`). The answer says
    which bound decided it.
    """
    n0, l = base
    scale = (target / max(base_seconds, 1e-9)) ** (1.0 / 3.0)
    wanted = max(n0, int(np.ceil(n0 * scale / step)) * step)
    n = largest_fitting(name, l, available_mib, wanted, step)
    return {"size": [n, l], "wanted_n": wanted, "calibration_size": [n0, l], "calibration_numpy_s": base_seconds,
            "target_numpy_s": target, "capped_by_memory": n < wanted,
            "predicted_numpy_s": base_seconds * (n / n0) ** 3 if n else 0.0}


def sample_child(system: str, name: str, n: int, l: int, warmup: int, samples: int) -> dict[str, Any]:
    """Make the operands of `name` at (n, l) for `system`, run `warmup` times, then time `samples` runs.

    What one timed run includes: numpy, the `numpy.einsum` call (its result
    in host memory); distal, `plan.run()` and a fence (the result ready in
    its Legate store, no host copy); cupynumeric, the `cupynumeric.einsum`
    call and a fence (the same). Each creates its output in the run. The
    previous run's result is dropped before the next starts.
    """
    import gc
    import resource

    spec = SPECS[name][0]
    count = len(operand_shapes(name, n, l)[0])
    start = time.perf_counter()
    run: Any
    result: Any = None
    if system in ("numpy", NUMPY_AVX512):
        arrays = [operand(name, n, l, k) for k in range(count)]

        def run() -> Any:
            return np.einsum(spec, *arrays, optimize=True)

        def host(r: Any) -> Any:
            return r
    else:
        import distal as dt
        from distal import kernels
        from distal import runtime as rt

        rt.ensure_started()
        if system == "distal":
            names = distal_names(name)
            ins = [dt.Tensor(x, s) for x, s in zip(names[1:], operand_shapes(name, n, l)[0])]
            out = dt.Tensor(names[0], out_shape(name, n, l))
            plan = kernels.build(name, kernels.machine(name, 2), out, *ins).compile()
            for k, t in enumerate(ins):  # placed one at a time; the host copy goes before the next is made
                data = operand(name, n, l, k)
                assert t.format is not None
                t.bind(rt.adopt(None, lambda data=data: data, t.format, data.dtype, data.shape))
                del data
                rt.fence()
                gc.collect()

            def run() -> Any:
                plan.run()
                rt.fence()
                return out

            def host(r: Any) -> Any:
                return r.to_numpy()
        elif system == "cupynumeric":
            import cupynumeric as cn
            from legate.core import get_legate_runtime

            cargs = []
            for k in range(count):
                data = operand(name, n, l, k)
                cargs.append(cn.array(data))  # a copy on Legate: an attached host array slows later launches
                del data
            legate = get_legate_runtime()
            legate.issue_execution_fence(block=True)
            gc.collect()

            def run() -> Any:
                r = cn.einsum(spec, *cargs)
                legate.issue_execution_fence(block=True)
                return r

            def host(r: Any) -> Any:
                return np.asarray(r)
        else:
            raise ValueError(f"expected a system in {SYSTEMS}, but found {system!r}")
    setup = time.perf_counter() - start
    for _ in range(warmup):
        result = None
        result = run()
    times = []
    for _ in range(samples):
        result = None  # the previous result is freed before the next run allocates its own
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
    return {"system": system, "kernel": name, "size": [n, l], "seconds": times, "setup_s": setup,
            "fingerprint": fingerprint(host(result)), "legate_config": os.environ.get("LEGATE_CONFIG"),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "blas": blas_kernels()}


def calibrate_child(bases: dict[str, tuple[int, int]], repeats: int = 3) -> dict[str, float]:
    """NumPy's median einsum time of each kernel at its calibration size (in a child without Legate)."""
    out = {}
    for name, (n, l) in bases.items():
        arrays = [operand(name, n, l, k) for k in range(len(operand_shapes(name, n, l)[0]))]
        spec = SPECS[name][0]

        def run(spec: str = spec, arrays: list[np.ndarray] = arrays) -> Any:
            return np.einsum(spec, *arrays, optimize=True)

        out[name] = median_seconds(run, repeats)[0]
    return out


def higher_plan(sizes: dict[str, tuple[int, int]], rounds: int,
                systems: tuple[str, ...] = SYSTEMS) -> list[dict[str, Any]]:
    """The children of the higher-order measurement, in the order they run.

    Kernel by kernel; within a kernel a warm-up-free sequence of `rounds`
    rounds, each running every system's child once in `round_order`. Each
    entry gives the kernel, size, round, system and the child's --sysmem and
    host memory need (`child_memory`).
    """
    jobs = []
    for name, (n, l) in sizes.items():
        for r in range(rounds):
            for system in round_order(systems, r):
                sysmem, need = child_memory(name, system, n, l)
                jobs.append({"kernel": name, "size": [n, l], "round": r, "system": system, "sysmem": sysmem,
                             "need_mib": need})
    return jobs


def summarise_higher(samples: dict[str, list[float]], prints: dict[str, dict[str, list[float]]]
                     ) -> dict[str, Any]:
    """Medians, ratios (theirs over distal's), NumPy's medians against the 0.1 s condition, and result checks."""
    import statistics

    seconds = {k: statistics.median(v) for k, v in samples.items() if v}
    kernels_ = sorted({k.split(":")[0] for k in samples}, key=list(SPECS).index)
    numpy_s = {k: seconds[f"{k}:numpy"] for k in kernels_ if f"{k}:numpy" in seconds}
    errors = {k: {s: fingerprint_error(p, prints[k]["numpy"]) for s, p in prints[k].items() if s != "numpy"}
              for k in kernels_ if "numpy" in prints.get(k, {})}
    return {"seconds": seconds, "all": samples, "ratios": ratios(samples), "numpy_seconds": numpy_s,
            "numpy_at_least_0_1s": {k: t >= MIN_NUMPY_S for k, t in numpy_s.items()},
            "max_rel_error_vs_numpy": errors}


def run_higher(sizes: dict[str, tuple[int, int]], rounds: int, timeout: float,
               progress: Callable[[str], None],
               record: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run `higher_plan` child by child (memory checked before each) and summarise it.

    `record` (if given) gets the summary so far after each child, so that a
    long run stopped by a failing child keeps what it measured.
    """
    systems = higher_systems()
    samples: dict[str, list[float]] = {f"{k}:{s}": [] for k in sizes for s in systems}
    prints: dict[str, dict[str, list[float]]] = {k: {} for k in sizes}
    children = []
    blas: dict[str, Any] = {}  # per system, the BLAS libraries its child loaded and the kernels each runs
    for job in higher_plan(sizes, rounds, systems):
        name, system = job["kernel"], job["system"]
        n, l = job["size"]
        label = f"{name} ({n}, {l}) round {job['round'] + 1}/{rounds} {system}"
        check_host_memory(label, job["need_mib"])
        env = numpy_env() if system == "numpy" else \
            {**numpy_env(), "OPENBLAS_CORETYPE": "SkylakeX"} if system == NUMPY_AVX512 else legate_env(job["sysmem"])
        start = time.perf_counter()
        part = _child(["--sample-child", system, "--kernels", name, "--shape", str(n), str(l)], env,
                      timeout=timeout)
        wall = time.perf_counter() - start
        samples[f"{name}:{system}"].extend(part["seconds"])
        prints[name][system] = part["fingerprint"]
        blas[system] = part.get("blas", {})
        children.append({**job, "seconds": part["seconds"], "setup_s": part["setup_s"], "wall_s": wall,
                         "peak_rss_mib": part["peak_rss_mib"]})
        progress(f"{label}: {part['seconds'][0]:.3f} s (peak RSS {part['peak_rss_mib']:.0f} MiB, "
                 f"estimated {job['need_mib']:.0f}; child {wall:.0f} s)")
        if record is not None:
            record({**summarise_higher(samples, prints), "children": list(children), "blas": blas})
    return {**summarise_higher(samples, prints), "children": children, "blas": blas}


def _child(args: list[str], env_extra: dict[str, str], timeout: float | None = None) -> dict[str, Any]:
    """Run this script with `args` in a child process (`_common.child`); its answer."""
    return child(SCRIPT, args, env_extra, timeout)


def sweep_sysmem(n: int) -> int:
    """Legate system memory (MB) for one matmul size: the operands of 7 distal plans (A, B, C each),
    cuPyNumeric's B, C and product, partition copies, and 512 MB headroom."""
    return max(1000, int(30 * n * n * 8 / 2**20) + 512)


def host_need_mib(sysmem: int, numpy_words: int) -> float:
    """Host memory one child needs: Legate's pool, the NumPy operands (and one result), 1.5 GB of runtime."""
    return sysmem + numpy_words * 8 / 2**20 + 1536


# -- parent -------------------------------------------------------------------


def plot(results: dict[str, Any]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for n in results["sizes"]:
        fig, ax = plt.subplots(figsize=(8, 3.8))
        names = ["numpy", "cupynumeric", *MATMUL]
        width = 0.8 / len(PROCS)
        for k, p in enumerate(PROCS):
            row = results["legate"][str(p)]["matmul"][str(n)]
            secs = [results["numpy"]["matmul"][str(n)] if x == "numpy" else row[x] for x in names]
            rates = [2.0 * n**3 / s / 1e9 for s in secs]
            ax.bar([i + k * width for i in range(len(names))], rates, width, label=f"{p} CPU processor(s)")
        ax.set_xticks([i + width for i in range(len(names))], names, rotation=20)
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"float64 matmul, n = {n} (numpy: 2 BLAS threads, no Legate)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = record_path(f"suite_matmul_{n}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    if results["higher"]:
        fig, ax = plt.subplots(figsize=(8, 3.8))
        kinds = list(results["higher"])
        for k, who in enumerate(("numpy", "cupynumeric", "distal")):
            vals = []
            for name in kinds:
                n, l = results["higher"][name]["size"]
                work, _ = flops(name, n, l)
                secs = (results["numpy"]["higher"][name] if who == "numpy"
                        else results["legate"]["2"]["higher"][name][who])
                vals.append(work / secs / 1e9)
            ax.bar([i + k * 0.27 for i in range(len(kinds))], vals, 0.27, label=who)
        ax.set_xticks([i + 0.27 for i in range(len(kinds))],
                      [f"{x}\n({flops(x, 1, 1)[1]})" for x in kinds])
        ax.set_title("higher-order kernels, 2 CPU processors")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = record_path("suite_higher.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and 3 repeats (a smoke run)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--numpy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--no-higher", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--interleaved", action="store_true",
                        help="one Legate process, interleaved rounds: higher-order kernels and the matmul sweep")
    parser.add_argument("--interleaved-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kernels", nargs="*", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds after the warm-up (default 5; 1 with --quick)")
    parser.add_argument("--target", type=float, nargs="*", default=None,
                        help="NumPy seconds the higher-order sizes aim at, one measurement per value (default "
                             f"{' and '.join(map(str, TARGETS_NUMPY_S))}; 0.003 with --quick)")
    parser.add_argument("--sample-child", choices=(*SYSTEMS, NUMPY_AVX512), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--shape", type=int, nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--calibrate-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT,
                        help=f"seconds each child may run before it is called a hang (default {CHILD_TIMEOUT:.0f})")
    args = parser.parse_args(argv)
    if args.interleaved or args.interleaved_child or args.sample_child or args.calibrate_child:
        try:
            return interleaved_main(args)
        except (ChildHung, MemoryError) as e:
            print(f"bench/suite.py: {e}", file=sys.stderr)
            return 2
    sizes = args.sizes if args.sizes is not None else ([256, 512] if args.quick else [2048, 4096])
    repeats = 3 if args.quick else 5
    higher = {k: (max(8, n // 6), max(1, l // 6)) for k, (n, l) in HIGHER.items()} if args.quick else dict(HIGHER)
    if args.numpy:
        print(json.dumps(numpy_child(sizes, repeats, higher)))
        return 0
    if args.child is not None:
        print(json.dumps(legate_child(args.child, sizes, repeats, {} if args.no_higher else higher)))
        return 0
    progress = Progress(1 + len(PROCS))
    results: dict[str, Any] = {"sizes": sizes, "repeats": repeats, "procs": list(PROCS),
                               "higher": {k: {"size": list(v)} for k, v in higher.items()}, "legate": {}}
    start = time.perf_counter()
    results["numpy"] = _child(["--numpy", *(["--quick"] if args.quick else []), "--sizes", *map(str, sizes)],
                              {"OPENBLAS_NUM_THREADS": "2"})
    progress.step("numpy (2 BLAS threads)")
    # One child per processor count and size: Legate starts once per process,
    # and a process that ran n = 2048 still held those stores' instances when
    # n = 4096 ran out of its system memory (seen here; see docs/benchmarks.md).
    quick = ["--quick"] if args.quick else []
    for p in PROCS:
        sysmem = 12000 if not args.quick else 2000
        env = legate_env(sysmem, p)
        merged: dict[str, Any] = {"matmul": {}, "higher": {}}
        for n in sizes:
            part = _child([*map(str, ["--child", p]), *quick, "--sizes", str(n), "--no-higher"], env)
            merged["matmul"].update(part["matmul"])
        if p == 2:
            part = _child([*map(str, ["--child", p]), *quick, "--sizes"], env)
            merged["higher"] = part["higher"]
        results["legate"][str(p)] = merged
        progress.step(f"Legate with {p} CPU processor(s)")
    results["seconds"] = time.perf_counter() - start
    summary = {}
    for n in sizes:
        row = results["legate"]["2"]["matmul"][str(n)]
        best = min(MATMUL, key=lambda x: row[x])
        summary[f"matmul_{n}_p2"] = {
            "best_distal": best, "best_distal_s": row[best], "cupynumeric_s": row["cupynumeric"],
            "numpy_s": results["numpy"]["matmul"][str(n)],
            "vs_cupynumeric": row["cupynumeric"] / row[best],
            "vs_numpy": results["numpy"]["matmul"][str(n)] / row[best],
        }
    for name in higher:
        row = results["legate"]["2"]["higher"][name]
        summary[f"{name}_p2"] = {"distal_s": row["distal"], "cupynumeric_s": row["cupynumeric"],
                                 "numpy_s": results["numpy"]["higher"][name],
                                 "vs_cupynumeric": row["cupynumeric"] / row["distal"],
                                 "vs_numpy": results["numpy"]["higher"][name] / row["distal"]}
    results["summary"] = summary
    path = record("suite_quick" if args.quick else "suite", results)
    if not args.quick:
        plot(results)
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")
    return 0


def calibrate(quick: bool, kernels_: list[str], timeout: float) -> dict[str, float]:
    """NumPy's time of each kernel at its calibration size (a child without Legate)."""
    bases = QUICK_CALIBRATION if quick else CALIBRATION
    names = [k for k in bases if k in kernels_]
    return _child(["--calibrate-child", *(["--quick"] if quick else []), "--kernels", *names], numpy_env(),
                  timeout=timeout)


def higher_sizes(quick: bool, target: float, times: dict[str, float]) -> dict[str, Any]:
    """Each calibrated kernel's size for NumPy to take about `target` seconds (`choose_size`)."""
    bases = QUICK_CALIBRATION if quick else CALIBRATION
    have = available_mib()
    budget = 0.9 * have if have is not None else 16000.0  # the needs are upper bounds; a tenth is left over
    return {name: {**choose_size(name, bases[name], times[name], target, budget), "available_mib": have}
            for name in bases if name in times}


def interleaved_main(args: argparse.Namespace) -> int:
    sizes = args.sizes if args.sizes is not None else ([64, 128] if args.quick else SWEEP)
    repeats = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    kernels_ = list(SPECS) if args.kernels is None else [k for k in SPECS if k in args.kernels]
    if args.sample_child is not None:
        n, l = args.shape
        print(json.dumps(sample_child(args.sample_child, kernels_[0], n, l, warmup=1, samples=1)))
        return 0
    if args.calibrate_child:
        bases = QUICK_CALIBRATION if args.quick else CALIBRATION
        print(json.dumps(calibrate_child({k: bases[k] for k in kernels_})))
        return 0
    if args.interleaved_child:
        print(json.dumps(interleaved_child(sizes, repeats)))
        return 0
    # The matmul sweep: one child per size, each with a Legate pool sized for it
    # (one process for everything reached 19 GB of resident memory on this
    # 24 GiB machine and hung, docs/benchmarks.md).
    common = [*(["--quick"] if args.quick else []), "--rounds", str(repeats)]
    jobs: list[tuple[str, list[str], int, int]] = []  # (label, child args, sysmem MB, NumPy words)
    for n in sizes:
        jobs.append((f"matmul n={n}", ["--interleaved-child", *common, "--sizes", str(n)], sweep_sysmem(n),
                     4 * n * n))
    for label, _, sysmem, words in jobs:
        check_host_memory(label, host_need_mib(sysmem, words))
    start = time.perf_counter()
    results: dict[str, Any] = {"sizes": sizes, "repeats": repeats}
    if not args.no_higher:
        targets = args.target or ([0.003] if args.quick else list(TARGETS_NUMPY_S))
        times = calibrate(args.quick, kernels_, args.timeout)
        sizing_by = {t: higher_sizes(args.quick, t, times) for t in targets}
        chosen_by = {t: {k: (int(v["size"][0]), int(v["size"][1])) for k, v in sz.items()}
                     for t, sz in sizing_by.items()}
        for t, chosen in chosen_by.items():
            for name, (n, _) in chosen.items():
                if n == 0:
                    raise MemoryError(f"expected room for {name} at its calibration size, but found "
                                      f"{sizing_by[t][name]['available_mib']:.0f} MiB available; run on a quieter "
                                      "machine")
        count = sum(len(higher_plan(c, repeats, higher_systems())) for c in chosen_by.values()) + 2
        progress = Progress(count + len(jobs))  # children so far go to suite_interleaved_partial.json
        progress.step("calibration: " + "; ".join(
            f"{t} s: " + ", ".join(f"{k} ({n}, {l})" + (" (memory)" if sizing_by[t][k]["capped_by_memory"] else "")
                                   for k, (n, l) in chosen.items()) for t, chosen in chosen_by.items()))
        partial = f"suite_interleaved_partial{'_quick' if args.quick else ''}"
        by_target: dict[str, Any] = {}
        for t, chosen in chosen_by.items():

            def save(so_far: dict[str, Any], t: float = t, chosen: dict[str, tuple[int, int]] = chosen) -> None:
                record(partial, {"higher_targets": {**by_target, str(t): {
                    "higher_sizes": {k: list(v) for k, v in chosen.items()},
                    "higher": {**so_far, "sizing": sizing_by[t]}}}, "repeats": repeats})

            higher = run_higher(chosen, repeats, args.timeout, progress.step, save)
            by_target[str(t)] = {"target_numpy_s": t, "higher_sizes": {k: list(v) for k, v in chosen.items()},
                                 "higher": {**higher, "sizing": sizing_by[t],
                                            "method": HIGHER_METHOD.format(rounds=repeats)}}
        first = by_target[str(targets[0])]
        results["higher_targets"] = by_target  # every target; "higher" is the first (0.2 s by default)
        results["higher_sizes"], results["higher"] = first["higher_sizes"], first["higher"]
        # bench/check.py sizes its own pool and refuses to start where the machine cannot hold it
        results["check"] = child(CHECK, ["--baseline-child", *common], {}, timeout=args.timeout)
        progress.step("distal bench check's baseline (one process, check's sizes)")
    else:
        progress = Progress(len(jobs))
        results["higher_sizes"], results["higher"] = {}, {}
    matmul_part: dict[str, Any] = {}
    for label, child_args, sysmem, words in jobs:
        check_host_memory(label, host_need_mib(sysmem, words))
        part = _child(child_args, legate_env(sysmem), timeout=args.timeout)
        for n, row in part["matmul"].items():
            matmul_part[n] = {**row, "legate_config": part["legate_config"], "peak_rss_mib": part["peak_rss_mib"],
                              "blas": part.get("blas", {})}
        progress.step(f"{label} (--sysmem {sysmem}, peak RSS {part['peak_rss_mib']:.0f} MiB)")
    method = (f"matmul: median of {repeats} interleaved rounds after a warm-up round, one Legate process "
              "(--cpus 2) per size, --sysmem sized for it, numpy with 2 BLAS threads set around each run; "
              "higher-order kernels: see higher.method")
    results = {"method": method, **results, "matmul": matmul_part,
               "seconds_total": time.perf_counter() - start, "loadavg_after": list(os.getloadavg())}
    quick = "_quick" if args.quick else ""
    path = record(f"suite_interleaved{quick}", results)
    print(json.dumps({"higher": results["higher"].get("ratios", {}),
                      "numpy_seconds": results["higher"].get("numpy_seconds", {}),
                      "matmul": {n: {k: r[k] for k in ("best", "vs_numpy", "vs_cupynumeric")}
                                 for n, r in matmul_part.items()}}, indent=2))
    if matmul_part:
        sweep = {"method": method, "sizes": sizes, "repeats": repeats, "algorithms": SWEEP_ALGORITHMS,
                 "matmul": matmul_part, "seconds_total": results["seconds_total"],
                 "loadavg_after": results["loadavg_after"]}
        sweep_path = record(f"matmul_sweep{quick}", sweep)
        plot_sweep(sweep, record_path(f"matmul_sweep{quick}.png"))
        print(f"wrote {sweep_path} and its plot")
    print(f"wrote {path} in {results['seconds_total']:.0f} s")
    return 0


HIGHER_METHOD = (
    "one child process per system per round: numpy (no Legate, OPENBLAS_NUM_THREADS=2; numpy_avx512 the same "
    "with OPENBLAS_CORETYPE=SkylakeX, where distal's tiles run those kernels), distal and cupynumeric "
    "(each LEGATE_CONFIG --cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem sized for it); each child makes its "
    "operands (the same seeded values), runs once to warm up and times one run; {rounds} rounds per kernel, the "
    "order of the systems rotated each round; medians of the {rounds} samples. Timed: numpy.einsum(optimize=True) "
    "returning its result in host memory; distal plan.run() and a fence (result ready in its Legate store, no host "
    "copy); cupynumeric.einsum and a fence (the same). Sizes from a NumPy calibration (sizing)."
)


if __name__ == "__main__":
    raise SystemExit(main())
