"""Draw the paper's two common optimal reduction programs (Figure 10) step by step.

Writes docs/img/reduction_rab.png (Reduce-AllReduce-Broadcast) and
docs/img/reduction_rsag.png (ReduceScatter-AllReduce-AllGather), computed with
distal.reduction's own semantics on 2 nodes of 4 GPUs, and
docs/img/reduction_speedups.png from bench/results/reduction_synthesis.json.
Run: `python docs/reduction_pictures.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Rectangle

from distal.reduction import SynthesisHierarchy, groups, parse_program
from distal.reduction.semantics import apply_step, initial_state

HERE = Path(__file__).resolve().parent
IMG = HERE / "img"
NODES, GPUS = 2, 4
K = NODES * GPUS
HIER = SynthesisHierarchy(("node", "gpu"), (NODES, GPUS), (0, 1))
GROUP_COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]

PROGRAMS = {
    "rab": ("Reduce-AllReduce-Broadcast (Figure 10 i)",
            "(node, InsideGroup, Reduce) ; (node, Master(root), AllReduce) ; "
            "(node, InsideGroup, Broadcast)"),
    "rsag": ("ReduceScatter-AllReduce-AllGather (Figure 10 ii)",
             "(node, InsideGroup, ReduceScatter) ; (node, Parallel(root), AllReduce) ; "
             "(node, InsideGroup, AllGather)"),
}


def device_xy(d: int) -> tuple[float, float]:
    node, gpu = divmod(d, GPUS)
    return 0.3 + gpu * 1.1, 0.3 + (NODES - 1 - node) * 2.0


def draw_state(ax: Any, state: tuple[tuple[int, ...], ...], grps: tuple[tuple[int, ...], ...]) -> None:
    for node in range(NODES):
        y = 0.3 + (NODES - 1 - node) * 2.0
        ax.add_patch(FancyBboxPatch((0.1, y - 0.2), GPUS * 1.1 + 0.1, 1.6,
                                    boxstyle="round,pad=0.02", fc="#f4f4f4", ec="#999999"))
        ax.text(0.15, y + 1.45, f"node {node}", fontsize=7, color="#555555", va="top")
    for d in range(K):
        x, y = device_xy(d)
        ax.add_patch(Rectangle((x, y), 0.9, 1.2, fc="white", ec="black", lw=0.8))
        for r, cols in enumerate(state[d]):
            if not cols:
                continue
            share = bin(cols).count("1") / K
            ax.add_patch(Rectangle((x + 0.05, y + 1.2 - (r + 1) * 0.14), 0.8 * share, 0.11,
                                   fc=plt.cm.viridis(0.15 + 0.8 * share), ec="none"))
        ax.text(x + 0.45, y - 0.08, f"GPU {d}", ha="center", va="top", fontsize=6)
    for i, g in enumerate(grps):
        color = GROUP_COLORS[i % len(GROUP_COLORS)]
        pts = [device_xy(d) for d in g]
        xs = [p[0] + 0.45 for p in pts]
        ys = [p[1] + 0.6 + 0.04 * i for p in pts]
        ax.plot(xs, ys, "-", color=color, lw=1.6, alpha=0.8)
        ax.plot(xs[0], ys[0], "o", color=color, ms=5)
        ax.plot(xs[1:], ys[1:], "s", color=color, ms=3)
    ax.set_xlim(0, GPUS * 1.1 + 0.4)
    ax.set_ylim(0, NODES * 2.0 + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")


def draw_program(key: str) -> Path:
    title, text = PROGRAMS[key]
    prog = parse_program(text)
    state = initial_state(K)
    fig, axes = plt.subplots(1, len(prog) + 1, figsize=(3.2 * (len(prog) + 1), 3.6))
    draw_state(axes[0], state, ())
    axes[0].set_title("initial: each GPU holds\nits own 8 chunks", fontsize=8)
    for n, step in enumerate(prog.steps, 1):
        grps = groups(HIER, step)
        nxt = apply_step(state, grps, step.collective)
        assert not isinstance(nxt, str), nxt
        state = nxt
        draw_state(axes[n], state, grps)
        axes[n].set_title(f"step {n}: {step.collective}\n{step}", fontsize=7)
    fig.suptitle(f"{title}: 2 nodes x 4 GPUs; bar length = share of the 8 GPUs summed into a "
                 "chunk; lines = device groups (circle = root)", fontsize=8)
    fig.tight_layout()
    IMG.mkdir(exist_ok=True)
    path = IMG / f"reduction_{key}.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def draw_speedups() -> Path | None:
    src = HERE.parent / "bench" / "results" / "reduction_synthesis.json"
    if not src.exists():
        return None
    data = json.loads(src.read_text())
    rows = [(r["system"], str(r["axes"]), str(r["reduce"]), p) for r in data["rows"]
            for p in r["placements"] if p["crosses_nodes"]]
    fig, ax = plt.subplots(figsize=(12, 4.6))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [p["ring"]["speedup"] for *_, p in rows], 0.4, label="ring")
    ax.bar([x + 0.2 for x in xs], [p["tree"]["speedup"] for *_, p in rows], 0.4, label="tree")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{s} {a}r{r} {p['matrix']}" for s, a, r, p in rows], rotation=90, fontsize=5)
    ax.set_ylabel("speedup over AllReduce")
    ax.set_title("Cross-node placements of the paper's appendix: best synthesized program vs "
                 "a single AllReduce (simulated)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = IMG / "reduction_speedups.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


if __name__ == "__main__":
    for k in PROGRAMS:
        print(draw_program(k))
    print(draw_speedups())
