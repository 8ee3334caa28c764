"""On Legate: the unary functions (conj, abs, sqrt, exp) in distributed plans equal NumPy's ufuncs.

A few cases of tests/notation/test_unary.py run as Legate tasks: the complex
Frobenius norm of issue 26 (a distributed reduction), abs and sqrt of tensors
of several dtypes into outputs of NumPy's result dtypes, and a sum inside
sqrt computed whole in every task.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

pytestmark = pytest.mark.legate

i, j = dt.index_vars("i j")
io, ii, jo, ji = dt.index_vars("io ii jo ji")


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype
    scale = max(1.0, float(np.nanmax(np.abs(expected), initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-6 if expected.dtype.itemsize <= 4 else 1e-10,
                               atol=1e-10 * scale)


def test_squared_frobenius_norm_of_a_complex_matrix(legate: object) -> None:
    rng = np.random.default_rng(26)
    x = rng.standard_normal((11, 7)) * 30 + 1j * rng.standard_normal((11, 7)) * 30
    X = dt.Tensor.from_array("X", x, dt.Format("xy -> x", dt.Machine(dt.Grid(2))))
    n = dt.Tensor("n", (), dtype="complex128")
    dt.parse("n = X(i,j) * conj(X(i,j))", n=n, X=X)
    expected = np.asarray(np.einsum("ij,ij->", x, x.conj()))
    for sched in (n.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))),
                  n.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2)))):
        sched.evaluate()
        _close(n.to_numpy(), expected)


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float32", "complex64", "complex128"])
def test_abs_and_sqrt_of_every_kind(legate: object, dtype: str) -> None:
    rng = np.random.default_rng(4)
    b = rng.integers(0 if dtype == "uint8" else -3, 9, (9, 5)).astype(dtype)
    if b.dtype.kind == "c":
        b = b + 1j * rng.integers(-3, 9, (9, 5)).astype(dtype)
    B = dt.Tensor.from_array("B", b)
    with np.errstate(invalid="ignore"):
        expected = np.sqrt(np.abs(b)) + np.abs(b) * np.sqrt(b)
    A = dt.Tensor("A", b.shape, dtype=expected.dtype)
    A[i, j] = dt.sqrt(abs(B[i, j])) + abs(B[i, j]) * dt.sqrt(B[i, j])
    A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2))).evaluate()
    _close(A.to_numpy(), expected)


def test_a_sum_inside_sqrt_is_computed_whole_in_every_task(legate: object) -> None:
    rng = np.random.default_rng(5)
    b = rng.standard_normal((10, 6))
    B = dt.Tensor.from_array("B", b)
    A = dt.Tensor("A", (10,))
    dt.parse("A(i) = sqrt(sum(k, B(i,k) * B(i,k))) + exp(B(i,j))", A=A, B=B)
    assert str(A.schedule()) == "∀i A(i) = sqrt(sum(k, B(i,k) * B(i,k))) + sum(j, exp(B(i,j)))"
    for sched in (A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))),
                  A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(3)))):
        sched.evaluate()
        _close(A.to_numpy(), np.sqrt((b * b).sum(1)) + np.exp(b).sum(1))
