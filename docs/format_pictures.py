"""Draw the pictures of docs/format.md: the distributions of the paper's Figure 5, a few more, and a plan.

    python docs/format_pictures.py [OUTDIR]      # default: docs/img

Writes one PNG per distribution, named format_<name>.png (`Format.picture`),
and plan_summa.png, the launches of SUMMA on a 2x2 grid (`Plan.picture`).
The tests run this too (into a temporary folder), so every picture is drawn
on every test run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import distal as dt
from distal.format import Format
from distal.machine import Grid, Machine

# name -> (distribution text, machine, tensor shape, caption)
PICTURES: dict[str, tuple[str | list[str], Machine, tuple[int, ...], str]] = {
    "vector": ("x -> x", Machine(Grid(4)), (8,), "a vector in blocks over a line of 4 processors"),
    "rows": ("xy -> x", Machine(Grid(4)), (8, 8), "a matrix by rows over a line of 4 processors"),
    "columns": ("xy -> y", Machine(Grid(4)), (8, 8), "a matrix by columns over a line of 4 processors"),
    "tiles": ("xy -> xy", Machine(Grid(2, 2)), (8, 8), "a matrix in 2-D tiles over a 2x2 grid"),
    "face": ("xy -> xy0", Machine(Grid(2, 2, 2)), (4, 4), "tiles on the z = 0 face of a 2x2x2 cube"),
    "broadcast": ("xy -> xy*", Machine(Grid(2, 2, 2)), (4, 4), "tiles replicated along z of a 2x2x2 cube"),
    "transpose": ("xy -> yx", Machine(Grid(2, 2)), (8, 8), "tile (i, j) on processor (j, i)"),
    "uneven": ("xy -> xy", Machine(Grid(4, 2)), (5, 3), "extents that do not divide: an empty tile"),
    "hierarchical": (["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(4, kind="gpu")), (8, 8),
                     "tiles over 2x2 nodes, each tile by rows over a node's 4 GPUs"),
    "order3": ("xyz -> xy*", Machine(Grid(2, 2, 2)), (4, 4, 4),
               "a 3-tensor in slices: x and y partitioned, replicated along z"),
}


def summa() -> dt.Schedule:
    """SUMMA on a 2x2 grid (paper Figure 9): A, B and C in tiles, k in chunks of 4 as the outer loop."""
    m = dt.Machine(dt.Grid(2, 2))
    tiles = dt.Format("xy -> xy", m)
    i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
    A, B, C = (dt.Tensor(name, (8, 8), tiles) for name in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
            .split(k, ko, ki, 4).reorder([ko, ii, ji, ki])
            .communicate(A, jo).communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


def main(outdir: str | Path | None = None) -> list[Path]:
    """Draw every picture into `outdir` (default: docs/img next to this script)."""
    folder = Path(outdir) if outdir is not None else Path(__file__).resolve().parent / "img"
    written = []
    for name, (spec, machine, shape, _caption) in PICTURES.items():
        path = folder / f"format_{name}.png"
        Format(spec, machine).picture(shape, path)
        written.append(path)
    path = folder / "plan_summa.png"
    summa().compile().picture(path)
    written.append(path)
    return written


if __name__ == "__main__":
    for path in main(sys.argv[1] if len(sys.argv) > 1 else None):
        print(path)
