"""substitute over the outer and inner loops of one split: the leaf gets the whole range (issue 11, item 6)."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

i, j, k, ko, ki, kio, kii = dt.index_vars("i j k ko ki kio kii")


def _matmul(seed: int) -> tuple[dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, c = rng.standard_normal((5, 7)), rng.standard_normal((7, 4))
    A = dt.Tensor("A", (5, 4))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i, j] = B[i, k] * C[k, j]
    return A, b @ c


@pytest.mark.parametrize("leaf", [dt.leaf.GEMM, dt.leaf.GENERIC])
def test_outer_and_inner_of_one_split(leaf: dt.leaf.Leaf) -> None:
    A, expected = _matmul(1)
    sched = A.schedule().split(k, ko, ki, 3).substitute([j, ko, ki], leaf)
    assert f"substitute({{j, ko, ki}}, {leaf.name})" in str(sched)
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def test_nested_splits_substituted_whole() -> None:
    A, expected = _matmul(2)
    sched = A.schedule().split(k, ko, ki, 3).split(ki, kio, kii, 2).substitute([ko, kio, kii], dt.leaf.GEMM)
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


@pytest.mark.legate
def test_outer_and_inner_of_one_split_on_legate(legate: object) -> None:
    A, expected = _matmul(3)
    A.schedule().distribute([i]).split(k, ko, ki, 3).substitute([j, ko, ki], dt.leaf.GEMM).evaluate()
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
