"""Machine shapes for the algorithm library: grids that fit a processor count."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["cosma_grid", "cosma_steps", "cube_side", "factor2", "factor3", "solomonik_grid"]


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


def solomonik_grid(p: int, c: int | None = None) -> tuple[int, int, int]:
    """Solomonik's 2.5D grid q x q x c with q*q*c <= p (c layers of a square grid)."""
    if c is None:
        c = 1
        for cand in range(1, cube_side(p) + 1):
            q = math.isqrt(p // cand)
            if q * q * cand == p:
                c = cand
    q = max(1, math.isqrt(p // c))
    return q, q, c


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
