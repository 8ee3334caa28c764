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

`--interleaved` (the issue's targets, measured in one run): interleaved
rounds (median of 5) on 2 CPU processors of TTV, innerprod, TTM and MTTKRP
against `numpy.einsum` (2 BLAS threads, set around each NumPy run) and
`cupynumeric.einsum`, then matmul at n = 256, 512, 1024, 2048, 4096
(`--sizes`) for every distal algorithm and `auto` on 2 processors against
`numpy.matmul` and `cupynumeric.matmul`. Each kernel and each size runs in
its own Legate child with --sysmem sized for it (one process for all of it
reached 19 GB resident on a 24 GiB machine and hung); a child that gives no
result within `--timeout` seconds is killed and reported as a hang. Writes
bench/results/suite_interleaved.json, matmul_sweep.json and
matmul_sweep.png (time and ratios against n), with the machine description.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import RESULTS, Progress, median_seconds, write

HERE = Path(__file__).resolve().parent
MATMUL = ["summa", "cannon", "pumma", "johnson", "solomonik", "cosma"]
PROCS = (1, 2, 4)
# higher-order sizes: (B's extent per mode, the extra mode's extent)
HIGHER = {"ttv": (600, 0), "innerprod": (520, 0), "ttm": (300, 900), "mttkrp": (400, 128)}
SPECS = {
    "ttv": ("ijk,k->ij", lambda n, l: [(n, n, n), (n,)]),
    "innerprod": ("ijk,ijk->", lambda n, l: [(n, n, n), (n, n, n)]),
    "ttm": ("ijk,kl->ijl", lambda n, l: [(n, n, n), (n, l)]),
    "mttkrp": ("ijk,jl,kl->il", lambda n, l: [(n, n, n), (n, l), (n, l)]),
}


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


def _inputs(name: str, n: int, l: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random(s) for s in SPECS[name][1](n, l)]


# -- children -------------------------------------------------------------------


def numpy_child(sizes: list[int], repeats: int, higher: dict[str, tuple[int, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {"matmul": {}, "higher": {}}
    for n in sizes:
        rng = np.random.default_rng(0)
        b, c = rng.random((n, n)), rng.random((n, n))
        out["matmul"][str(n)] = median_seconds(lambda b=b, c=c: b @ c, repeats)[0]
    for name, (n, l) in higher.items():
        arrays = _inputs(name, n, l)
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
        arrays = _inputs(name, n, l)
        spec = SPECS[name][0]
        cargs = [cn.asarray(a) for a in arrays]

        def cupy_einsum(spec: str = spec, cargs: list[Any] = cargs) -> None:
            r = cn.einsum(spec, *cargs)
            float(r.sum())

        row = {"cupynumeric": median_seconds(cupy_einsum, repeats)[0]}
        names = "aBCD" if name == "innerprod" else "ABCD"
        ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
        A = dt.Tensor(names[0], _out_shape(name, n, l))
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
CHILD_TIMEOUT = 900.0  # seconds one child may take before the runner calls it a hang


def interleaved_child(sizes: list[int], repeats: int, higher: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """Higher-order kernels and matmul sizes, each in interleaved rounds (one Legate process).

    The runner (`interleaved_main`) gives each kernel and each matmul size its own
    child; operands of one size are dropped (and a fence waits for their
    deletion) before the next size allocates.
    """
    import gc
    import resource
    import statistics

    from _common import interleaved_rounds
    from check import _runs, numpy_threads, ratios

    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    rt.ensure_started()
    import cupynumeric as cn

    set_threads = numpy_threads()
    out: dict[str, Any] = {"higher": {}, "matmul": {}, "legate_config": os.environ.get("LEGATE_CONFIG")}
    if higher:
        samples = interleaved_rounds(_runs(higher, 0), repeats)
        out["higher"] = {"seconds": {k: statistics.median(v) for k, v in samples.items()},
                         "all": samples, "ratios": ratios(samples)}
        rt.fence()
        gc.collect()
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
                                 "vs_cupynumeric": secs["cupynumeric"] / secs[best]}
        # Drop this size's operands before the next one allocates: every store is
        # idle after the fence in each run, so deleting them here cannot deadlock.
        del runs, outputs, cb, cc, b, c, expected, run, numpy_run, cupy_run
        rt.fence()
        gc.collect()
        rt.fence()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def plot_sweep(results: dict[str, Any], path: Path) -> Path:
    """Time and ratios against n for the matmul sweep (results["matmul"]), written to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["matmul"]
    ns = sorted(int(n) for n in rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for who in ("numpy", "cupynumeric", *SWEEP_ALGORITHMS):
        left.plot(ns, [rows[str(n)]["seconds"][who] for n in ns], marker="o", label=who,
                  linewidth=2.5 if who in ("numpy", "cupynumeric") else 1)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("n")
    left.set_ylabel("seconds (median)")
    left.legend(fontsize=7)
    for key in ("vs_numpy", "vs_cupynumeric"):
        right.plot(ns, [rows[str(n)][key] for n in ns], marker="o", label=f"best distal {key.replace('_', ' ')}")
    right.axhline(1.0, color="gray", linewidth=0.8)
    right.axhline(0.9, color="gray", linewidth=0.8, linestyle="--")  # the target against NumPy from n = 1024
    right.set_xscale("log", base=2)
    right.set_xlabel("n")
    right.set_ylabel("ratio (theirs / distal's)")
    right.legend(fontsize=7)
    fig.suptitle("float64 matmul on 2 CPU processors, interleaved rounds")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _out_shape(name: str, n: int, l: int) -> tuple[int, ...]:
    return {"ttv": (n, n), "innerprod": (), "ttm": (n, n, l), "mttkrp": (n, l)}[name]


def _child(args: list[str], env_extra: dict[str, str], timeout: float | None = None,
           script: Path = HERE / "suite.py") -> dict[str, Any]:
    """Run this script with `args` in a child process; its last line of output is JSON.

    A child that gives no result within `timeout` seconds is killed and reported
    as a hang (a Legate process that waits forever shows no error of its own).
    """
    env = dict(os.environ)
    env.pop("LEGATE_CONFIG", None)
    env.update(env_extra)
    command = [sys.executable, str(script), *args]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=HERE.parent, check=False,
                              timeout=timeout)
    except subprocess.TimeoutExpired as hung:
        tail = hung.stdout if isinstance(hung.stdout, str) else (hung.stdout or b"").decode(errors="replace")
        err = hung.stderr if isinstance(hung.stderr, str) else (hung.stderr or b"").decode(errors="replace")
        raise ChildHung(f"child {' '.join(args)} (LEGATE_CONFIG={env.get('LEGATE_CONFIG')!r}) gave no result "
                        f"within {timeout:.0f} s and was killed: a hang (e.g. an allocation waiting for memory "
                        f"that never frees, or a blocking fence); its last output:\n{tail[-2000:]}\n"
                        f"{err[-2000:]}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


class ChildHung(RuntimeError):
    """A benchmark child process gave no result within its time limit."""


def available_mib() -> float | None:
    """MemAvailable of this machine in MiB (None where /proc/meminfo is missing)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def sweep_sysmem(n: int) -> int:
    """Legate system memory (MB) for one matmul size: the operands of 7 distal plans (A, B, C each),
    cuPyNumeric's B, C and product, partition copies, and 512 MB headroom."""
    return max(1000, int(30 * n * n * 8 / 2**20) + 512)


def higher_sysmem(name: str, n: int, l: int) -> int:
    """Legate system memory (MB) for one higher-order kernel: distal's and cuPyNumeric's copies of the
    operands and outputs, twice over for cuPyNumeric's temporaries, and 512 MB headroom."""
    shapes = [*SPECS[name][1](n, l), _out_shape(name, n, l)]
    words = sum(int(np.prod(s)) for s in shapes)
    return min(16000, int(4 * words * 8 / 2**20) + 512)


def host_need_mib(sysmem: int, numpy_words: int) -> float:
    """Host memory one child needs: Legate's pool, the NumPy operands (and one result), 1.5 GB of runtime."""
    return sysmem + numpy_words * 8 / 2**20 + 1536


def check_host_memory(what: str, need: float) -> None:
    """Refuse a child that would not fit in this machine's available memory (it would hang or be killed)."""
    have = available_mib()
    if have is not None and need > have:
        raise MemoryError(f"expected at least {need:.0f} MiB of available host memory for {what}, but found "
                          f"{have:.0f} MiB (MemAvailable); run on a quieter machine or with smaller sizes")


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
        path = RESULTS / f"suite_matmul_{n}.png"
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
        path = RESULTS / "suite_higher.png"
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
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT,
                        help=f"seconds each child may run before it is called a hang (default {CHILD_TIMEOUT:.0f})")
    args = parser.parse_args(argv)
    if args.interleaved or args.interleaved_child:
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
        env = {"LEGATE_CONFIG": f"--cpus {p} --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"}
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
    path = write("suite_quick" if args.quick else "suite", results)
    if not args.quick:
        plot(results)
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}")
    return 0


def interleaved_main(args: argparse.Namespace) -> int:
    sizes = args.sizes if args.sizes is not None else ([64, 128] if args.quick else SWEEP)
    repeats = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    higher = {k: (max(8, n // 10), max(1, l // 10)) for k, (n, l) in HIGHER.items()} if args.quick else dict(HIGHER)
    if args.kernels is not None:
        higher = {k: v for k, v in higher.items() if k in args.kernels}
    if args.interleaved_child:
        print(json.dumps(interleaved_child(sizes, repeats, {} if args.no_higher else higher)))
        return 0
    # One child per kernel and per matmul size, each with a Legate pool sized for it:
    # one process for everything (sysmem 12000) reached 19 GB of resident memory on
    # this 24 GiB machine before the sweep began, and the sweep then hung (docs/benchmarks.md).
    common = [*(["--quick"] if args.quick else []), "--rounds", str(repeats)]
    jobs: list[tuple[str, list[str], int, int]] = []  # (label, child args, sysmem MB, NumPy words)
    if not args.no_higher:
        for name, (n, l) in higher.items():
            words = sum(int(np.prod(s)) for s in [*SPECS[name][1](n, l), _out_shape(name, n, l)])
            jobs.append((name, ["--interleaved-child", *common, "--kernels", name, "--sizes"],
                         higher_sysmem(name, n, l), 2 * words))
    for n in sizes:
        jobs.append((f"matmul n={n}", ["--interleaved-child", *common, "--no-higher", "--sizes", str(n)],
                     sweep_sysmem(n), 4 * n * n))
    for label, _, sysmem, words in jobs:
        check_host_memory(label, host_need_mib(sysmem, words))
    progress = Progress(len(jobs))
    start = time.perf_counter()
    higher_part: dict[str, Any] = {"seconds": {}, "all": {}, "ratios": {}}
    matmul_part: dict[str, Any] = {}
    for label, child_args, sysmem, words in jobs:
        check_host_memory(label, host_need_mib(sysmem, words))
        env = {"LEGATE_CONFIG": f"--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"}
        part = _child(child_args, env, timeout=args.timeout)
        for key in ("seconds", "all", "ratios"):
            higher_part[key].update(part["higher"].get(key, {}))
        for n, row in part["matmul"].items():
            matmul_part[n] = {**row, "legate_config": part["legate_config"], "peak_rss_mib": part["peak_rss_mib"]}
        progress.step(f"{label} (--sysmem {sysmem}, peak RSS {part['peak_rss_mib']:.0f} MiB)")
    method = (f"median of {repeats} interleaved rounds after a warm-up; one Legate process (--cpus 2) per "
              "kernel and per matmul size, --sysmem sized for it; numpy with 2 BLAS threads set around each run")
    results: dict[str, Any] = {"method": method, "sizes": sizes, "repeats": repeats,
               "higher_sizes": {k: list(v) for k, v in higher.items()},
               "higher": higher_part if not args.no_higher else {}, "matmul": matmul_part,
               "seconds_total": time.perf_counter() - start, "loadavg_after": list(os.getloadavg())}
    quick = "_quick" if args.quick else ""
    path = write(f"suite_interleaved{quick}", results)
    sweep = {"method": method, "sizes": sizes, "repeats": repeats, "algorithms": SWEEP_ALGORITHMS,
             "matmul": matmul_part, "seconds_total": results["seconds_total"],
             "loadavg_after": results["loadavg_after"]}
    sweep_path = write(f"matmul_sweep{quick}", sweep)
    plot_sweep(sweep, RESULTS / f"matmul_sweep{quick}.png")
    print(json.dumps({"higher": results["higher"].get("ratios", {}),
                      "matmul": {n: {k: r[k] for k in ("best", "vs_numpy", "vs_cupynumeric")}
                                 for n, r in matmul_part.items()}}, indent=2))
    print(f"wrote {path}, {sweep_path} and its plot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
