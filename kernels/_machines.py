"""Machine shapes for the algorithm library: grids that fit a processor count."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["cosma_bytes", "cosma_grid", "cosma_steps", "cube_side", "factor2", "factor3", "johnson_side",
           "solomonik_bytes", "solomonik_grid", "summa_steps"]


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


def solomonik_bytes(grid: Sequence[int], shape: Sequence[int], nprocs: int | None = None, itemsize: int = 8) -> int:
    """The most bytes one processor holds running Solomonik 2.5D on `grid` (q x q x c) for an (m, n, k) product.

    A processor of layer 0 holds its tiles of A (m/q x n/q), B (m/q x k/q) and C (k/q x n/q), receives, per
    step of its layer's Cannon, a chunk of B and of C a c-th of those tiles, and with c > 1 reduces its partial
    A in a buffer of A's tile: (A + B + C + (B + C) / c + (A if c > 1)) elements, times the points bound to it
    when the grid has more points than the `nprocs` processors (block-wise, as `Machine.bind`). This is the
    peak `distal.lower.analysis` counts for the library's plan (25.3 GiB per V100 on 8 x 8 x 8 at n = 226304).

    >>> solomonik_bytes((2, 2, 2), (1024, 1024, 1024))
    10485760
    """
    q, _, c = grid
    m, n, k = shape
    mq, nq, kq = math.ceil(m / q), math.ceil(n / q), math.ceil(k / q)
    b, cc = mq * kq, kq * nq
    per = mq * nq * (2 if c > 1 else 1) + b + cc + math.ceil((b + cc) / c)
    points = q * q * c
    share = 1 if nprocs is None else math.ceil(points / nprocs)
    return int(per * share * itemsize)


def _solomonik_candidates(p: int) -> list[tuple[int, int, int]]:
    """Every q x q x c grid for p processors, c <= q: the exact ones (q*q*c == p), then for each c the fewest
    points q*q*c >= p (over-decomposed)."""
    exact = [(math.isqrt(p // c), math.isqrt(p // c), c) for c in range(1, p + 1)
             if p % c == 0 and math.isqrt(p // c) ** 2 * c == p and c <= math.isqrt(p // c)]
    over = []
    for c in range(1, cube_side(p) + 2):
        q = max(1, math.ceil(math.sqrt(p / c) - 1e-9))
        while q * q * c < p:
            q += 1
        if c <= q and q * q * c != p:
            over.append((q, q, c))
    return exact + over


def solomonik_grid(p: int, c: int | None = None, shape: Sequence[int] | None = None, memory: int | None = None,
                   itemsize: int = 8) -> tuple[int, int, int]:
    """Solomonik's 2.5D grid q x q x c: c layers of a square grid, c <= q.

    When q*q*c == p for some c the grid uses every processor once (the most
    layers win). Otherwise, and when `c` is given and q*q*c == p has no
    solution, the grid is over-decomposed: the fewest points q*q*c >= p, bound
    block-wise to the p processors (`Machine.bind`) so that none is idle.

    With `memory` (bytes per processor) and `shape` (m, n, k), c is chosen to
    fit, as DISTAL chose it on Lassen (paper 7.1.2: "we utilize extra memory on
    the non-square node counts"): the most layers of an exact grid whose
    `solomonik_bytes` fit, else the over-decomposed grid of fewest points that
    fits, else (nothing fits) the grid that needs the least memory. Without
    `memory` the choice is the one above.

    >>> solomonik_grid(512)
    (8, 8, 8)
    >>> solomonik_grid(512, shape=(226304,) * 3, memory=15 * 2**30)
    (16, 16, 2)
    """
    if c is not None:
        q = math.isqrt(p // c) if p >= c else 1
        if q * q * c != p:
            q = max(1, math.ceil(math.sqrt(p / c) - 1e-9))
            while q * q * c < p:
                q += 1
        return q, q, c
    if memory is not None and shape is not None:
        cands = _solomonik_candidates(p)
        need = {g: solomonik_bytes(g, shape, p, itemsize) for g in cands}
        layered = [g for g in cands if g[0] * g[1] * g[2] == p and need[g] <= memory]
        if layered:
            return max(layered, key=lambda g: g[2])
        over = [g for g in cands if need[g] <= memory]
        if over:
            return min(over, key=lambda g: (g[0] * g[1] * g[2], -g[2]))
        return min(cands, key=lambda g: (need[g], g[0] * g[1] * g[2]))
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


def cosma_bytes(grid: Sequence[int], shape: Sequence[int], itemsize: int = 8) -> int:
    """The most bytes one processor holds running the library's COSMA on `grid` for an (m, n, k) product.

    Processor (0, 0, 0) holds its tiles of A (m/gx x n/gy), B (m/gx x k/gz) and C (k/gz x n/gy) whole (their
    formats place them on the grid's faces), whatever COSMA's sequential steps over k, and with gz > 1 reduces
    its partial A in a buffer of A's tile: the peak `distal.lower.analysis` counts (23.8 GiB per V100 on
    8 x 8 x 8 at n = 226304).

    >>> cosma_bytes((2, 2, 2), (1024, 1024, 1024))
    8388608
    """
    gx, gy, gz = grid
    m, n, k = shape
    a, b, c = math.ceil(m / gx), math.ceil(n / gy), math.ceil(k / gz)
    return int((a * b * (2 if gz > 1 else 1) + a * c + c * b) * itemsize)


def cosma_grid(p: int, shape: Sequence[int] | None, memory: int | None = None,
               itemsize: int = 8) -> tuple[int, int, int]:
    """COSMA's processor grid for an (m x k) @ (k x n) product on p processors.

    Chooses gx*gy*gz = p minimising the words each processor receives or
    sends: its tiles of B (m/gx x k/gz), C (k/gz x n/gy) and, when k is split
    (gz > 1), its partial tile of A (m/gx x n/gy). With `memory` (bytes per
    processor) only the grids whose tiles fit (`cosma_bytes`) are considered,
    as COSMA's own strategy takes the memory limit; when none fits, the grid
    that needs the least memory.

    >>> cosma_grid(8, (64, 64, 64)), cosma_bytes((2, 2, 2), (64, 64, 64))
    ((2, 2, 2), 32768)
    >>> cosma_grid(8, (64, 64, 64), memory=30000), cosma_bytes((2, 4, 1), (64, 64, 64))
    ((2, 4, 1), 28672)
    """
    m, n, k = (1024, 1024, 1024) if shape is None else shape
    grids = [(gx, gy, p // gx // gy) for gx in _divisors(p) for gy in _divisors(p // gx)]
    if memory is not None:
        fit = [g for g in grids if cosma_bytes(g, (m, n, k), itemsize) <= memory]
        if not fit:
            return min(grids, key=lambda g: (cosma_bytes(g, (m, n, k), itemsize), g))
        grids = fit
    best: tuple[float, tuple[int, int, int]] | None = None
    for gx, gy, gz in grids:
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
