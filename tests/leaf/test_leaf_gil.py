"""Leaves on NumPy tiles call only NumPy routines that release the GIL during the product.

Legate runs every Python task of this process under one GIL: a leaf that
holds it for its whole product keeps the other processors' tasks from
starting (measured on innerprod: the second task started when the first
was nearly done). NumPy's `matmul` of two 1-D arrays holds the GIL; `dot`
and `matmul` with a 2-D operand release it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from distal import leaf


def _no_vector_matmul(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    if np.ndim(a) < 2 and np.ndim(b) < 2:
        raise AssertionError("numpy.matmul of two 1-D arrays holds the GIL for the whole product")
    return np.matmul(a, b, *args, **kwargs)


XP = SimpleNamespace(**{name: getattr(np, name) for name in ("dot", "einsum", "zeros", "asarray")},
                     matmul=_no_vector_matmul)


@pytest.mark.parametrize(("name", "shapes"), [
    ("INNERPROD", [(3, 4, 5), (3, 4, 5)]),
    ("TTV", [(3, 4, 5), (5,)]),
    ("TTM", [(3, 4, 5), (5, 2)]),
    ("MTTKRP", [(3, 4, 5), (4, 2), (5, 2)]),
])
def test_leaves_release_the_gil(name: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(0)
    operands = [rng.random(s) for s in shapes]
    chosen = leaf.get(name)
    assert chosen.pattern is not None
    got = chosen.kernel(chosen.pattern, XP, *operands)
    np.testing.assert_allclose(got, np.einsum(chosen.pattern, *operands), rtol=1e-12)
