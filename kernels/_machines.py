"""Machine shapes for the algorithm library: grids that fit a processor count."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["cosma_grid", "cosma_steps", "cube_side", "factor2", "factor3", "johnson_side", "solomonik_grid",
           "summa_steps"]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def factor2(p: int) -> tuple[int, int]:
    """The most square gx x gy = p, gx >= gy (6 -> 3x2, 4 -> 2x2, 7 -> 7x1)."""
    gy = max(d for d in _divisors(p) if d * d <= p)
    return p // gy, gy


def factor3(p: int) -> tuple[int, int, int]:
    """The most cubic gx x gy x gz = p (8 -> 2x2x2, 12 -> 3x2x2)."""
    best = (p, 1, 1)
    for a in _divisors(p):
        for b in _divisors(p // a):
            c = p // a // b
            cand = tuple(sorted((a, b, c), reverse=True))
            if max(cand) - min(cand) < max(best) - min(best):
                best = cand  # type: ignore[assignment]
    return best


def cube_side(p: int) -> int:
    """The side of the largest cube of processors that fits in p."""
    root: float = float(p) ** (1 / 3)
    c = max(1, round(root))
    while c**3 > p:
        c -= 1
    return max(c, 1)


def johnson_side(p: int) -> int:
    """Johnson's cube side on p processors: the smallest c with c**3 >= p.

    A perfect cube gets one grid point per processor. Otherwise the cube is
    over-decomposed (paper 7.1.2): its c**3 points are bound block-wise to the
    p processors (`Machine.bind`), one or two points each, so none is idle
    (2 on 4 processors, 6 on 128, 7 on 256, as in the original DISTAL's scripts;
    on 16 they use 4, we use 3: 27 points, 11 processors run two).
    """
    c = cube_side(p)
    return c if c**3 == p else c + 1


def solomonik_grid(p: int, c: int | None = None) -> tuple[int, int, int]:
    """Solomonik's 2.5D grid q x q x c: c layers of a square grid, c <= q.

    When q*q*c == p for some c the grid uses every processor once (the most
    layers win). Otherwise, and when `c` is given and q*q*c == p has no
    solution, the grid is over-decomposed: the fewest points q*q*c >= p, bound
    block-wise to the p processors (`Machine.bind`) so that none is idle.
    """
    if c is not None:
        q = math.isqrt(p // c) if p >= c else 1
        if q * q * c != p:
            q = max(1, math.ceil(math.sqrt(p / c) - 1e-9))
            while q * q * c < p:
                q += 1
        return q, q, c
    exact = [(cand, math.isqrt(p // cand)) for cand in range(1, p + 1)
             if p % cand == 0 and math.isqrt(p // cand) ** 2 * cand == p and cand <= math.isqrt(p // cand)]
    if exact:
        cc, q = max(exact)
        return q, q, cc
    best: tuple[int, int, int] | None = None
    for q in range(1, math.isqrt(p) + 2):
        for cc in range(1, q + 1):
            if q * q * cc >= p and (best is None or q * q * cc < best[0] * best[0] * best[2]):
                best = (q, q, cc)
    assert best is not None
    return best


def cosma_grid(p: int, shape: Sequence[int] | None) -> tuple[int, int, int]:
    """COSMA's processor grid for an (m x k) @ (k x n) product on p processors.

    Chooses gx*gy*gz = p minimising the words each processor receives or
    sends: its tiles of B (m/gx x k/gz), C (k/gz x n/gy) and, when k is split
    (gz > 1), its partial tile of A (m/gx x n/gy).
    """
    m, n, k = (1024, 1024, 1024) if shape is None else shape
    best: tuple[float, tuple[int, int, int]] | None = None
    for gx in _divisors(p):
        for gy in _divisors(p // gx):
            gz = p // gx // gy
            a, b, c = m / gx, n / gy, k / gz
            volume = a * c + c * b + (a * b if gz > 1 else 0.0)
            key = (volume, (gx, gy, gz))
            if best is None or key < best:
                best = key
    assert best is not None
    return best[1]


def cosma_steps(grid: Sequence[int], shape: Sequence[int], memory: int | None, itemsize: int = 8) -> int:
    """COSMA's sequential steps over k: the fewest whose chunks fit in `memory` bytes per processor.

    A processor holds its tile of A (m/gx x n/gy) throughout and, at each step,
    a chunk of its B tile (m/gx x k/gz/steps) and of its C tile. Without a
    memory bound COSMA takes one step (it splits k sequentially only when memory
    requires it).
    """
    if memory is None:
        return 1
    gx, gy, gz = grid
    m, n, k = shape
    a = math.ceil(m / gx) * math.ceil(n / gy)
    bc = math.ceil(k / gz) * (math.ceil(m / gx) + math.ceil(n / gy))
    room = memory // itemsize - a
    if room < math.ceil(m / gx) + math.ceil(n / gy):
        from distal.errors import MachineError

        raise MachineError(
            f"expected at least {(a + math.ceil(m / gx) + math.ceil(n / gy)) * itemsize} bytes per processor for "
            f"COSMA on grid {tuple(grid)} (a tile of A and one column of B and C), but found memory={memory}"
        )
    return max(1, math.ceil(bc / room))


# Multiply-adds one processor does in one k-step of SUMMA below which the step is merged with the next: a
# launch costs about 0.3-1 ms of fixed cost on these machines (Legate's analysis, task starts, the task
# bodies' Python; bench/breakdown.py), so a step should run a few milliseconds of GEMM (2**26 multiply-adds
# are about 3 ms on one core at 45 GFLOP/s).
SUMMA_MIN_STEP = 1 << 26


def summa_steps(grid: Sequence[int], shape: Sequence[int]) -> int:
    """SUMMA's k-steps on `grid` for an (m, n, k) product: one per processor row or column (max(grid)), fewer
    where a step would give each processor less than `SUMMA_MIN_STEP` multiply-adds, at least one.

    >>> summa_steps((2, 1), (256, 256, 256)), summa_steps((2, 1), (1024, 1024, 1024))
    (1, 2)
    """
    m, n, k = shape
    per_processor = math.ceil(m / grid[0]) * math.ceil(n / grid[1]) * k
    return max(1, min(max(grid), per_processor // SUMMA_MIN_STEP))
