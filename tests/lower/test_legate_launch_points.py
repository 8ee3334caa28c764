"""Launches over part of a domain run each point on its own tile (issue 11, reproducer 1).

A fused loop distributed onto more abstract processors than Legate has
makes launches over parts of the domain; the part bound to one real
processor can be a single point. Legate runs a one-point launch as a single
task that sees point 0 and whole stores, so that point used to write (or
add into) the first element instead of its own.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

pytestmark = pytest.mark.legate

i, j, k, f, io, ii, g = dt.index_vars("i j k f io ii g")


def _pair(n: int, m: int = 3) -> tuple[dt.Tensor, dt.Tensor, np.ndarray]:
    b = np.arange(1, n * m + 1, dtype=np.float64).reshape(n, m)
    return dt.Tensor.from_array("A", np.zeros((n, m))), dt.Tensor.from_array("B", b), b


@pytest.mark.parametrize("n", [3, 5, 7])
@pytest.mark.parametrize("accumulate", [False, True])
def test_fused_distributed_copy(legate: object, n: int, accumulate: bool) -> None:
    A, B, b = _pair(n)
    if accumulate:
        A[i, j] += B[i, j]
    else:
        A[i, j] = B[i, j]
    plan = A.schedule().fuse(i, j, f).distribute([f]).compile()
    # the launches split the fused loop by rows, and some parts span two processors
    assert len(list(plan.launches())) == n
    plan.run()
    np.testing.assert_array_equal(A.to_numpy(), b)
    # the same plan again: '=' gives the same, '+=' adds once more
    plan.run()
    np.testing.assert_array_equal(A.to_numpy(), 2 * b if accumulate else b)


@pytest.mark.parametrize(("n", "chunk"), [(5, 2), (7, 3)])
def test_split_reorder_fuse(legate: object, n: int, chunk: int) -> None:
    A, B, b = _pair(n)
    A[i, j] = B[i, j]
    A.schedule().split(i, io, ii, chunk).reorder([io, j, ii]).fuse(io, j, g).distribute([g]).evaluate()
    np.testing.assert_array_equal(A.to_numpy(), b)


def test_fused_loop_onto_grid_9(legate: object) -> None:
    A, B, b = _pair(3)
    A[i, j] = B[i, j]
    A.schedule().fuse(i, j, f).distribute([f], [io], [ii], dt.Grid(9)).evaluate()
    np.testing.assert_array_equal(A.to_numpy(), b)


@pytest.mark.parametrize("n", [3, 5])
def test_fused_distributed_reduction(legate: object, n: int) -> None:
    rng = np.random.default_rng(n)
    b, c = rng.integers(-5, 6, (n, 4)).astype(np.float64), rng.integers(-5, 6, (4, 3)).astype(np.float64)
    A = dt.Tensor.from_array("A", np.zeros((n, 3)))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i, j] = B[i, k] * C[k, j]
    plan = A.schedule().fuse(i, j, f).distribute([f]).compile()
    for _ in range(2):
        plan.run()
        np.testing.assert_array_equal(A.to_numpy(), b @ c)
