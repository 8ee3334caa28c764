"""Predict the paper's weak-scaling experiments (Figures 15 and 16) with the Lassen-like machine model.

Matrix multiplication (SUMMA, Cannon, PUMMA, Johnson, Solomonik 2.5D, COSMA):
square matrices of n = 8192 per node on CPUs and 20000 on GPUs, n growing with
the square root of the node count (memory per node constant, paper 7.1),
rounded to a multiple of 256.
Higher-order kernels (TTV, innerprod, TTM, MTTKRP): B of n x n x n with n
growing with the cube root of the node count (paper 7.2; the paper gives no
initial sizes, ours are below). 1 to 256 nodes, square and non-square counts.

Plans are compiled from shadow tensors (shapes, no data) on one abstract
processor per GPU or per CPU socket, as the paper's Figure 15 counts them
("we model each CPU socket as an abstract DISTAL processor", 7.1.1; Johnson's
algorithm "when the number of GPUs is a perfect cube", 7.1.2): the library's
machine for `nodes * per_node` processors (`kernels.machine`), timed on
`lassen_gpu()` (4 V100 per node, two per socket on NVLink, the X-bus between
sockets, EDR out) or `lassen_cpu()` (2 sockets per node). Each processor has
its own memory, the copies of a launch share the ports of their links
(`distal.model.transfers`), and a tile read by many processors is delivered
as Legion of the paper's time did it (copies from the nearest valid
instance). Bytes are estimated from the formats (`predict(..., exact=False)`:
explain's exact accounting takes minutes at this scale). Writes
bench/results/weak_scaling.json and weak_scaling_matmul.png,
weak_scaling_higher.png (per-node GFLOP/s, or GB/s for TTV and innerprod).

The library chooses as DISTAL did (issue 34): Solomonik's layers c and COSMA's
grid fit the processor's memory (`kernels.machine(name, p, shape,
memory=...)`), and innerprod runs on a two-level machine of the nodes
(`kernels.machine("innerprod", p, nodes=...)`): its partial sums are reduced by
the reduction synthesizer's program, within the node, then between nodes
(paper 7.2.2: "a node-level reduction followed by a global reduction").

Run: `python bench/weak_scaling.py` or `distal bench weak-scaling`
(`--nodes 1,2,4` for fewer points; `--update` replaces only the cases run in
the recorded JSON and redraws the plots from all of them).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from _common import RESULTS, write

NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MATMUL = ("summa", "cannon", "pumma", "johnson", "solomonik", "cosma")
MATMUL_N0 = {"cpu": 8192, "gpu": 20000}
# per node at 1 node: (n, extra mode l); B is n^3 doubles (TTV 8.6 GB, innerprod 2 x 3.6 GB, TTM/MTTKRP 1.1 GB)
HIGHER_N0 = {"ttv": (1024, 0), "innerprod": (768, 0), "ttm": (512, 512), "mttkrp": (512, 64)}


def machine_model(kind: str) -> Any:
    """A Lassen node as the paper used it: 4 V100 processors, or 2 POWER9 socket processors."""
    from distal import model

    return model.lassen_gpu() if kind == "gpu" else model.lassen_cpu()


def _shapes(name: str, nodes: int, kind: str) -> list[tuple[int, ...]]:
    if name in MATMUL:
        # a multiple of 256: distal's lowering hands a rotated operand whole along k when the k slabs do not
        # divide evenly (Solomonik on c = 2 layers at n = 56569 moved ten times the bytes it needs)
        n = 256 * round(MATMUL_N0[kind] * math.sqrt(nodes) / 256)
        return [(n, n)] * 3
    n0, l0 = HIGHER_N0[name]
    n = round(n0 * nodes ** (1 / 3))
    return {"ttv": [(n, n), (n, n, n), (n,)], "innerprod": [(), (n, n, n), (n, n, n)],
            "ttm": [(n, n, l0), (n, n, n), (n, l0)], "mttkrp": [(n, l0), (n, n, n), (n, l0), (n, l0)]}[name]


def _work(name: str, shapes: list[tuple[int, ...]]) -> tuple[float, str]:
    """FLOPs (or bytes read, for TTV and innerprod) of one run, and the unit of the rate."""
    n = shapes[1][0]
    if name in MATMUL:
        return 2.0 * n**3, "GFLOP/s"
    if name == "ttv":
        return 8.0 * (n**3 + n), "GB/s"
    if name == "innerprod":
        return 16.0 * n**3, "GB/s"
    if name == "ttm":
        return 2.0 * n**3 * shapes[0][2], "GFLOP/s"
    return 3.0 * n**3 * shapes[0][1], "GFLOP/s"


def predict_case(name: str, nodes: int, kind: str) -> dict[str, Any]:
    import distal as dt
    from distal import kernels, model
    from distal.kernels._machines import cosma_bytes, solomonik_bytes

    shapes = _shapes(name, nodes, kind)
    letters = "aBCD" if name == "innerprod" else "ABCD"
    ops = [dt.Tensor(x, s) for x, s in zip(letters, shapes)]
    shape = (shapes[0][0], shapes[0][1], shapes[1][1]) if name in MATMUL else None
    mm = machine_model(kind)
    procs = nodes * mm.per_node
    if name in ("solomonik", "cosma"):  # c and the grid fit the processor's memory, as DISTAL chose them
        machine = kernels.machine(name, procs, shape, memory=mm.processor.memory)
    elif name == "innerprod" and nodes > 1:  # a node-level, then a global reduction (paper 7.2.2)
        machine = kernels.machine(name, procs, nodes=nodes)
    else:
        machine = kernels.machine(name, procs, shape)
    t0 = time.perf_counter()
    plan = kernels.build(name, machine, *ops).compile()
    compile_s = time.perf_counter() - t0
    red = plan.reduction
    lowering_seconds = best = single = None
    if red is not None and red.synthesized and red.plan is not None:
        from distal.reduction.machines import retimed_seconds

        # The synthesized program as the lowering timed it runs on default links (8 GB/s, 10 us between nodes);
        # the prediction (distal.model.predict) re-times the same steps and groups on the model's own links (the
        # node's port `inter`, its outermost link `intra`): the record keeps both.
        lowering_seconds = red.seconds
        best, single = retimed_seconds(red.plan, red.nbytes, (mm.inter, mm.intra))
    t1 = time.perf_counter()
    pred = model.predict(plan, mm, procs, exact=False)
    predict_s = time.perf_counter() - t1
    work, unit = _work(name, shapes)
    rate = work / pred.seconds / 1e9 / nodes
    into_node: dict[int, float] = {}
    for r in pred.per_processor:
        into_node[r["node"]] = into_node.get(r["node"], 0.0) + r["inter_bytes"]
    reduced = max((r["reduced_bytes"] for r in pred.per_processor), default=0.0)
    reduction = None if red is None else {
        "strategy": red.strategy, "reason": red.reason, "program": red.program or None,
        "steps": [step.split(" over ")[0] for step in red.steps], "groups": len(red.groups),
        "seconds": red.seconds if best is None else best,
        "allreduce_seconds": red.allreduce_seconds if single is None else single,
        "seconds_on_lowering_links": lowering_seconds}
    # the peak of the plan's own analysis (what `kernels.machine(..., memory=)` fits; the prediction's
    # `peak_bytes_per_processor` is estimated from the formats and leaves out the buffer A's partials reduce in)
    m_, n_, k_ = shape if shape is not None else (0, 0, 0)
    analysis_peak = {"solomonik": lambda: solomonik_bytes(machine.shape, (m_, n_, k_), procs),
                     "cosma": lambda: cosma_bytes(machine.shape, (m_, n_, k_))}.get(name, lambda: None)()
    return {"algorithm": name, "kind": kind, "nodes": nodes, "processors": procs,
            "shape": [list(s) for s in shapes], "machine": repr(machine), "launches": plan.launch_count(),
            "compile_seconds": compile_s, "predict_seconds": predict_s, "seconds": pred.seconds, "per_node": rate,
            "unit": unit, "fits": pred.fits, "peak_bytes_per_processor": pred.peak_bytes,
            "memory_per_processor": pred.memory_bytes, "idle_processors": pred.idle,
            "max_inter_node_bytes": max(into_node.values(), default=0.0), "max_reduced_bytes": reduced,
            "compute_seconds": pred.compute_seconds, "comm_seconds": pred.comm_seconds,
            "exposed_comm_seconds": pred.exposed_comm_seconds, "runtime_seconds": pred.launch_seconds,
            "reduction": reduction, "analysis_peak_bytes_per_processor": analysis_peak,
            "fits_analysis": None if analysis_peak is None else analysis_peak <= mm.processor.memory}


def plot(rows: list[dict[str, Any]]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, kind in zip(axes, ("cpu", "gpu")):
        for name in MATMUL:
            pts = [r for r in rows if r["algorithm"] == name and r["kind"] == kind]
            ok = [r for r in pts if r["fits"]]
            line, = ax.plot([r["nodes"] for r in ok], [r["per_node"] for r in ok], marker="o", label=name)
            oom = [r for r in pts if not r["fits"]]
            if oom:
                ax.plot([r["nodes"] for r in oom], [r["per_node"] for r in oom], marker="x", linestyle="none",
                        color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
        ax.set_ylabel("predicted GFLOP/s per node")
        ax.set_title(f"matmul, Lassen {kind.upper()}s (n = {MATMUL_N0[kind]} x sqrt(nodes)); x: out of memory")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("distal's model: weak scaling of matrix multiplication (cf. paper Figure 15)")
    fig.tight_layout()
    path = RESULTS / "weak_scaling_matmul.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    for ax, name in zip(axes, HIGHER_N0):
        for kind in ("cpu", "gpu"):
            pts = [r for r in rows if r["algorithm"] == name and r["kind"] == kind]
            if pts:
                ax.plot([r["nodes"] for r in pts], [r["per_node"] for r in pts], marker="o", label=kind.upper())
        unit = next((r["unit"] for r in rows if r["algorithm"] == name), "")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
        ax.set_ylabel(f"predicted {unit} per node")
        ax.set_title(name)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("distal's model: weak scaling of higher-order kernels (cf. paper Figure 16)")
    fig.tight_layout()
    path = RESULTS / "weak_scaling_higher.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", default=",".join(map(str, NODES)))
    parser.add_argument("--algorithms", default=",".join((*MATMUL, *HIGHER_N0)))
    parser.add_argument("--kinds", default="cpu,gpu", help="cpu, gpu or both")
    parser.add_argument("--update", action="store_true",
                        help="replace only the cases run in the recorded weak_scaling.json, keep the others")
    args = parser.parse_args(argv)
    nodes = [int(x) for x in args.nodes.split(",")]
    names = args.algorithms.split(",")
    rows = []
    for kind in args.kinds.split(","):
        for name in names:
            for n in nodes:
                row = predict_case(name, n, kind)
                rows.append(row)
                print(f"{kind} {name} {n} nodes: {row['per_node']:.0f} {row['unit']}/node, {row['seconds']:.3g} s, "
                      f"{'fits' if row['fits'] else 'OUT OF MEMORY'} ({row['peak_bytes_per_processor'] / 2**30:.1f} "
                      f"GiB), compile {row['compile_seconds']:.2f} s, predict {row['predict_seconds']:.2f} s",
                      file=sys.stderr, flush=True)
    if args.update and (RESULTS / "weak_scaling.json").exists():
        from _common.results import read_record  # a cached record only where the private-directory rule allows

        ran = {(r["kind"], r["algorithm"], r["nodes"]) for r in rows}
        kept = [r for r in (read_record(RESULTS / "weak_scaling.json", RESULTS) or {"rows": []})["rows"]
                if (r["kind"], r["algorithm"], r["nodes"]) not in ran]
        order = {(k, a): i for i, (k, a) in enumerate((k, a) for k in ("cpu", "gpu") for a in (*MATMUL, *HIGHER_N0))}
        rows = sorted(kept + rows, key=lambda r: (order.get((r["kind"], r["algorithm"]), 99), r["nodes"]))
        nodes = sorted({r["nodes"] for r in rows})
    at_max = [r for r in rows if r["nodes"] == max(nodes)]
    summary = {
        "max_nodes": max(nodes),
        "compile_seconds_at_max_nodes": {f"{r['kind']} {r['algorithm']}": round(r["compile_seconds"], 3)
                                         for r in at_max},
        "models": {k: machine_model(k).describe() for k in ("cpu", "gpu")},
    }
    write("weak_scaling", {"summary": summary, "rows": rows,
                           "note": "predicted by distal.model (not measured); see docs/scaling.md. "
                                   "Re-run: python bench/weak_scaling.py"})
    for path in plot(rows):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
