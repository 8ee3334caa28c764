"""Hypothesis strategy of random redistribution problems (`distal.redist.testing._build`'s drawing)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from distal.redist.mesh import Mesh
from distal.redist.testing import _build
from distal.redist.types import DistType

__all__ = ["problems"]


def problems(sizes: Sequence[int] = (2, 3, 4), max_rank: int = 6, max_elements: int = 4096) -> Any:
    """Hypothesis strategy of small problems (arrays small enough to simulate)."""
    @st.composite
    def draw_problem(draw: Any) -> tuple[Mesh, DistType, DistType]:
        def choice(seq: Sequence[Any]) -> Any:
            return draw(st.sampled_from(list(seq)))

        def shuffle(lst: list[Any]) -> list[Any]:
            return list(draw(st.permutations(lst))) if len(lst) > 1 else lst

        def grow(need: list[int]) -> list[int]:
            ext = list(need)
            for k in range(len(ext)):
                f = draw(st.sampled_from((1, 2, 2, 3, 4)))
                if math.prod(ext) * f <= max_elements:
                    ext[k] *= f
            return ext

        return _build(choice, shuffle, sizes, max_rank, grow)

    return draw_problem()
