"""Random redistribution problems of the paper's distribution (section 8).

A problem has a mesh of three axes and an array of rank 1 to 6; in the source
and in the target type each mesh axis either replicates the array or splits
one dimension (several axes splitting one dimension come in random order).
Extents are multiples of what both types need. `random_problem` draws from a
`random.Random` (the benchmark); the same as a Hypothesis strategy
(`problems`, for the property tests) lives in tests/_strategies/redist.py, since
Hypothesis is a test-only dependency.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

from distal.redist.mesh import Mesh
from distal.redist.types import Dim, DistType

__all__ = ["AXES", "random_problem"]

AXES = ("a", "b", "c")


def _build(
    choice: Callable[[Sequence[Any]], Any],
    shuffle: Callable[[list[Any]], list[Any]],
    sizes: Sequence[int],
    max_rank: int,
    grow: Callable[[list[int]], list[int]],
) -> tuple[Mesh, DistType, DistType]:
    mesh = Mesh(tuple((n, choice(sizes)) for n in AXES))
    rank = choice(range(1, max_rank + 1))
    placements = []
    for _ in range(2):
        per_dim: list[list[str]] = [[] for _ in range(rank)]
        for name in AXES:
            where = choice([None, *range(rank)])
            if where is not None:
                per_dim[where].append(name)
        placements.append([shuffle(lst) for lst in per_dim])
    need = []
    for i in range(rank):
        parts = [math.prod(mesh.axis_size(a) for a in p[i]) for p in placements]
        need.append(math.lcm(*parts))
    extents = grow(need)
    src, dst = (
        DistType(
            tuple(Dim(g // math.prod(mesh.axis_size(a) for a in axes), tuple(axes), g) for axes, g in zip(p, extents))
        )
        for p in placements
    )
    return mesh, src, dst


def random_problem(
    rng: random.Random,
    sizes: Sequence[int] = (2, 3, 4, 6, 8),
    max_rank: int = 6,
    elements: tuple[int, int] = (16 * 2**20, 200 * 2**20),
) -> tuple[Mesh, DistType, DistType]:
    """One problem; global sizes between ``elements`` (64-800 MB of float32)."""

    def grow(need: list[int]) -> list[int]:
        ext = list(need)
        target = rng.randint(*elements)
        while math.prod(ext) < target:
            k = rng.randrange(len(ext))
            ext[k] *= rng.choice((2, 2, 2, 3, 5))
        return ext

    def shuffle(lst: list[Any]) -> list[Any]:
        rng.shuffle(lst)
        return lst

    return _build(rng.choice, shuffle, sizes, max_rank, grow)
