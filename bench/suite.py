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


def _out_shape(name: str, n: int, l: int) -> tuple[int, ...]:
    return {"ttv": (n, n), "innerprod": (), "ttm": (n, n, l), "mttkrp": (n, l)}[name]


def _child(args: list[str], env_extra: dict[str, str]) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("LEGATE_CONFIG", None)
    env.update(env_extra)
    proc = subprocess.run([sys.executable, str(HERE / "suite.py"), *args], capture_output=True, text=True,
                          env=env, cwd=HERE.parent, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
