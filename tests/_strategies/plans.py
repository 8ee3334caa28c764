"""Small plans that several test files count tasks, points and costs of."""

from __future__ import annotations

from typing import Any

import numpy as np

import distal as dt


def copy_plan(n: int = 8, points: int = 4) -> tuple[Any, dt.Tensor, np.ndarray]:
    """`a(i) = b(i)` distributed over `Grid(points)` with both tensors in `x -> x`: (plan, a, b's data)."""
    i, io, ii = dt.index_vars("i io ii")
    m = dt.Machine(dt.Grid(points))
    fmt = dt.Format("x -> x", m)
    data = np.arange(float(n)) + 1
    a = dt.Tensor("a", (n,), format=fmt)
    b = dt.Tensor.from_array("b", data, fmt)
    a[i] = b[i]
    return a.schedule().distribute([i], [io], [ii], m).communicate([a, b], io).compile(), a, data


# The end of a subprocess script that drove Legate to the edge of its memory: a small plan still runs
# (prints "usable True"); needs `np` and `dt` imported by the script.
STILL_USABLE = """
i = dt.index_vars("i")[0]
x, y = dt.Tensor.from_array("x", np.arange(6.0)), dt.Tensor("y", (6,))
y[i] = x[i] * 2
y.schedule().evaluate()
print("usable", (y.to_numpy() == np.arange(6.0) * 2).all())
"""
