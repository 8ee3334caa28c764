"""Draw each library algorithm's communication pattern from its compiled plan.

For the first steps of each algorithm, every processor is a box of its grid
(3-D grids are drawn as their z layers side by side) and an arrow runs from
the processor that owns a tile of an input to the processor whose task reads
it, black for A, blue for B, red for C (as in the paper's Figure 9). The
arrows come from the plan: each launch point's tile of each operand, and the
operand's format saying who owns that tile.

Run: `python docs/algorithm_pictures.py [OUTDIR]` (default docs/img).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import distal as dt
from distal import kernels
from distal.lower.task_graph import Privilege

COLORS = {"A": "black", "B": "tab:blue", "C": "tab:red", "D": "tab:green", "c": "tab:red", "M": "tab:red"}
CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    # name: (grid, shape m, n, k)
    "summa": ((3, 3), (12, 12, 12)),
    "cannon": ((3, 3), (12, 12, 12)),
    "pumma": ((3, 3), (12, 12, 12)),
    "johnson": ((2, 2, 2), (8, 8, 8)),
    "solomonik": ((2, 2, 2), (8, 8, 8)),
    "cosma": ((2, 2, 2), (8, 8, 8)),
}


def transfers(sched: dt.Schedule, steps: int) -> list[list[tuple[str, tuple[int, ...], tuple[int, ...]]]]:
    """Per step: (tensor, from processor, to processor) for every input tile a task fetches.

    A step is a value of the plan's sequential launch variables (rotated
    schedules run as one launch per point, so steps are gathered by point).
    A tile comes from the nearest processor that used it in the step before
    (so systolic algorithms show their shifts, as in the paper's Figure 12),
    or else from the nearest owner under its format.
    """
    plan = sched.compile()
    points: dict[tuple[int, ...], list[tuple[Any, Any]]] = {}
    for group, launch in plan.launches():
        for point in launch.points():
            points.setdefault(tuple(point[group.distributed:]), []).append((group, (launch, point)))
    out = []
    held: dict[tuple[str, Any], set[tuple[int, ...]]] = {}
    for step in sorted(points)[:steps]:
        moves: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []
        now: dict[tuple[str, Any], set[tuple[int, ...]]] = {}
        for group, (launch, point) in points[step]:
            dest = plan.processor_of(group, point)
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                fmt = info.tensor.format
                if op.privilege is not Privilege.READ or fmt is None:
                    continue
                box = op.box(point, info.shape)
                if any(lo >= hi for lo, hi in box):
                    continue
                color = fmt.color(tuple(lo for lo, _ in box), info.shape)
                key = (info.name, box)
                now.setdefault(key, set()).add(dest)
                owners = set(fmt.owners(color))
                if dest in owners or dest in held.get(key, set()):
                    continue
                holders = sorted(held.get(key) or owners)
                src = min(holders, key=lambda o: sum(abs(a - b) for a, b in zip(o, dest)))
                moves.append((info.name, src, dest))
        held = now
        out.append(moves)
    return out


def _xy(coord: tuple[int, ...], grid: tuple[int, ...]) -> tuple[float, float]:
    """Drawing position of a processor: 2-D grids as rows/columns, 3-D as z layers side by side."""
    x, y = coord[0], coord[1] if len(coord) > 1 else 0
    z = coord[2] if len(coord) > 2 else 0
    layer_width = (grid[1] if len(grid) > 1 else 1) + 1.0
    return y + z * layer_width + 0.5, -(x + 0.5)


def draw(name: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    grid, (m, n, k) = CASES[name]
    A, B, C = dt.Tensor("A", (m, n)), dt.Tensor("B", (m, k)), dt.Tensor("C", (k, n))
    sched = kernels.build(name, dt.Machine(dt.Grid(*grid)), A, B, C)
    steps = transfers(sched, 2)
    fig, axes = plt.subplots(1, len(steps), figsize=(max(7.0, 4.2 * len(steps)), 3.6), squeeze=False)
    procs = list(dt.Grid(*grid).coords())
    for s, (ax, moves) in enumerate(zip(axes[0], steps)):
        for p in procs:
            cx, cy = _xy(p, grid)
            ax.add_patch(Rectangle((cx - 0.4, cy - 0.4), 0.8, 0.8, fill=False, lw=1.2))
            ax.text(cx, cy - 0.28, ",".join(map(str, p)), ha="center", va="center", fontsize=7, color="gray")
        for tensor, src, dst in moves:
            (x0, y0), (x1, y1) = _xy(src, grid), _xy(dst, grid)
            bend = 0.25 if tensor == "B" else -0.25
            ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=9,
                                         color=COLORS.get(tensor, "purple"), lw=1.1, alpha=0.8,
                                         connectionstyle=f"arc3,rad={bend}", shrinkA=8, shrinkB=8))
        if len(grid) > 2:
            for z in range(grid[2]):
                cx, _ = _xy((0, 0, z), grid)
                ax.text(cx + (grid[1] - 1) / 2, 0.25, f"z = {z}", ha="center", fontsize=8)
        counts: dict[str, int] = {}
        for tensor, _, _ in moves:
            counts[tensor] = counts.get(tensor, 0) + 1
        summary = ", ".join(f"{t}: {c}" for t, c in sorted(counts.items())) or "no transfers"
        ax.set_title(f"step {s}: {summary}", fontsize=9)
        ax.set_aspect("equal")
        ax.autoscale_view()
        ax.margins(0.08)
        ax.axis("off")
    fig.suptitle(f"{name} on Grid{grid}: tiles fetched per step (A black, B blue, C red)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(__file__).resolve().parent / "img"
    out.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        draw(name, out / f"algorithm_{name}.png")
        print(out / f"algorithm_{name}.png")
    return 0

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
