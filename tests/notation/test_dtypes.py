"""Dtypes by NumPy's rules, the same in every backend (reference executor, NumPy plan executor, Legate).

A statement computes as `numpy.einsum(..., out=output)` does: in the promotion
(`np.result_type`) of its right side and its output, then cast into the
output; a right side that the output's casting rule (`same_kind` unless the
tensor says otherwise) refuses is a `dt.DtypeError` when the statement is built.
Values are small integers, so every dtype's sums are exact and the backends
are compared with numpy exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal.lower.numpy_exec import run_numpy
from distal.notation.check import compute_dtype, result_dtype

DTYPES = [np.dtype(d) for d in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                "float16", "float32", "float64", "complex64", "complex128")]
N = 5  # extents that do not divide the 2x2 machine or the k split
i, j, k = dt.index_vars("i j k")


def _data(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    low = 0 if dtype.kind in "ub" else -3
    return rng.integers(low, 4, shape).astype(dtype)


def _gemm(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, accumulate: bool) -> dt.Schedule:
    if accumulate:
        A[i, j] += B[i, k] * C[k, j]
    else:
        A[i, j] = B[i, k] * C[k, j]
    io, jo, ii, ji, ko, ki = dt.index_vars("io jo ii ji ko ki")
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2)))
            .split(k, ko, ki, 2).reorder([ko, ii, ji, ki]).substitute([ii, ji, ki], dt.leaf.GEMM))


def _oracle_gemm(b: np.ndarray, c: np.ndarray, a0: np.ndarray, accumulate: bool) -> np.ndarray:
    out = a0.copy() if accumulate else np.zeros_like(a0)
    value = np.einsum("ik,kj->ij", b, c, dtype=np.result_type(b, c, out))
    np.add(out, value, out=out, casting="same_kind")  # NumPy's `+=`
    return out


def _elementwise(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, accumulate: bool) -> dt.Schedule:
    A[i, j] = B[i, j] - C[i, j] * 2
    return A.schedule()


def _oracle_elementwise(b: np.ndarray, c: np.ndarray, a0: np.ndarray, accumulate: bool) -> np.ndarray:
    ct = np.result_type(b, c, a0, 2)
    return (b.astype(ct) - c.astype(ct) * 2).astype(a0.dtype)


def _inner(a: dt.Tensor, B: dt.Tensor, C: dt.Tensor, accumulate: bool) -> dt.Schedule:
    a[()] = B[i, j] * C[i, j]
    io, ii = dt.index_vars("io ii")
    return a.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2)))


def _oracle_inner(b: np.ndarray, c: np.ndarray, a0: np.ndarray, accumulate: bool) -> np.ndarray:
    out = np.zeros_like(a0)
    np.einsum("ij,ij->", b, c, out=out, dtype=np.result_type(b, c, out), casting="same_kind")
    return out


CASES: dict[str, tuple[Callable[..., dt.Schedule], Callable[..., np.ndarray], bool, bool]] = {
    # name: (schedule, oracle, accumulate, scalar output)
    "gemm": (_gemm, _oracle_gemm, False, False),
    "gemm+=": (_gemm, _oracle_gemm, True, False),
    "elementwise": (_elementwise, _oracle_elementwise, False, False),
    "inner": (_inner, _oracle_inner, False, True),
}


def _build(case: str, db: np.dtype, dc: np.dtype, da: np.dtype) -> tuple[dt.Schedule, np.ndarray, dict[str, Any]]:
    sched_of, oracle, accumulate, scalar = CASES[case]
    b, c = _data(db, (N, N), 1), _data(dc, (N, N), 2)
    a0 = _data(da, () if scalar else (N, N), 3)
    A = dt.Tensor("A", a0.shape, dtype=da)
    A.set_array(a0)
    sched = sched_of(A, dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c), accumulate)
    return sched, oracle(b, c, a0, accumulate), {"a0": a0}


def _allowed(case: str, db: np.dtype, dc: np.dtype, da: np.dtype) -> bool:
    literal: tuple[Any, ...] = (2,) if case == "elementwise" else ()
    rhs = np.result_type(np.ones(1, db) * np.ones(1, dc) if not literal else np.ones(1, db) - np.ones(1, dc) * 2)
    return bool(np.can_cast(np.result_type(rhs, da), da, "same_kind"))  # NumPy's out= rule


def _check(sched: dt.Schedule, expected: np.ndarray, a0: np.ndarray, run: Callable[[dt.Schedule], None]) -> None:
    out = sched.output
    out.set_array(a0)
    run(sched)
    got = out.to_numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def _reference(sched: dt.Schedule) -> None:
    sched.evaluate(backend="reference")


def _numpy_plan(sched: dt.Schedule) -> None:
    run_numpy(sched.compile())


def _legate(sched: dt.Schedule) -> None:
    sched.evaluate()


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_dtype_pair_equals_numpy_reference_and_plan(case: str) -> None:
    """All pairs of operand dtypes, into outputs of several kinds; refused exactly where NumPy refuses."""
    outputs = [np.dtype(d) for d in ("int8", "uint16", "int64", "float16", "float64", "complex64")]
    refused = 0
    for db, dc, da in itertools.product(DTYPES, DTYPES, outputs):
        if not _allowed(case, db, dc, da):
            with pytest.raises(dt.DtypeError, match=f"castable to {da.name}"):
                _build(case, db, dc, da)
            refused += 1
            continue
        sched, expected, extra = _build(case, db, dc, da)
        for run in (_reference, _numpy_plan):
            _check(sched, expected, extra["a0"], run)
    assert refused > 0


def test_small_integer_sums_follow_einsum_with_out() -> None:
    """int8 products that overflow int8: into int8 they wrap, into int64 they do not (einsum's out=)."""
    b = np.full((N, N), 100, np.int8)
    for da in (np.dtype(np.int8), np.dtype(np.int64), np.dtype(np.float32)):
        A = dt.Tensor("A", (N, N), dtype=da)
        sched = _gemm(A, dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", b), False)
        expected = np.zeros((N, N), da)
        np.einsum("ik,kj->ij", b, b, out=expected)
        for run in (_reference, _numpy_plan):
            _check(sched, expected, np.zeros((N, N), da), run)
    assert expected[0, 0] == 50000  # computed in float32, not wrapped in int8


def test_result_and_compute_dtypes_follow_numpy() -> None:
    B8 = dt.Tensor("B8", (N,), dtype=np.int8)
    F32 = dt.Tensor("F32", (N,), dtype=np.float32)
    U8 = dt.Tensor("U8", (N,), dtype=np.uint8)
    A64 = dt.Tensor("A64", (N,), dtype=np.int64)
    assert result_dtype(B8[i] * B8[i]) == np.int8  # einsum keeps the type
    assert result_dtype(B8[i] / B8[i]) == np.float64  # true division of integers
    assert result_dtype(F32[i] * 2.5) == np.float32  # Python literals are weak (NEP 50)
    assert result_dtype(B8[i] * U8[i]) == np.int16
    assert result_dtype(dt.Sum(j, B8[i])) == np.int8 if hasattr(dt, "Sum") else True
    assert compute_dtype(A64[i], B8[i] * B8[i]) == np.int64


def _unsafe(accumulate: bool) -> tuple[dt.Schedule, np.ndarray, np.ndarray]:
    """`A(i,j) = B(i,j) * C(i,j)` (or `+=`), float64 into int64 under casting="unsafe", with NumPy's answer."""
    rng = np.random.default_rng(5)
    b, c = rng.uniform(-2, 2, (N, N)), rng.integers(-2, 3, (N, N))
    a0 = rng.integers(-3, 4, (N, N))
    A = dt.Tensor("A", (N, N), dtype=np.int64, casting="unsafe")
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    if accumulate:
        A[i, j] += B[i, j] * C[i, j]
    else:
        A[i, j] = B[i, j] * C[i, j]
    expected = a0.copy() if accumulate else np.zeros_like(a0)
    np.add(expected, b * c, out=expected, casting="unsafe")  # the sum, then truncated (NumPy's +=)
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2)))
    return sched, expected, a0


@pytest.mark.parametrize("accumulate", [False, True])
def test_unsafe_casting_truncates_as_numpy(accumulate: bool) -> None:
    sched, expected, a0 = _unsafe(accumulate)
    for run in (_reference, _numpy_plan):
        _check(sched, expected, a0, run)
        _check(sched.output.schedule(), expected, a0, run)


@pytest.fixture(scope="module")
def legate() -> object:
    from distal import runtime as rt

    return rt.ensure_started()


LEGATE_TRIPLES = [(d, d, d) for d in DTYPES] + [
    (np.dtype(a), np.dtype(b), np.dtype(c)) for a, b, c in (
        ("int8", "int8", "int64"), ("float32", "int16", "float64"), ("uint8", "int8", "int16"),
        ("complex64", "float32", "complex128"), ("float16", "float16", "float32"), ("uint64", "int64", "float64"),
        ("int32", "float64", "float32"))]


@pytest.mark.legate
@pytest.mark.parametrize("case", sorted(CASES))
def test_dtypes_on_legate(legate: object, case: str) -> None:
    """Every dtype, and mixed triples, on Legate equal numpy and the reference executor."""
    for db, dc, da in LEGATE_TRIPLES:
        if not _allowed(case, db, dc, da):
            continue
        sched, expected, extra = _build(case, db, dc, da)
        _check(sched, expected, extra["a0"], _reference)
        _check(sched, expected, extra["a0"], _legate)


@pytest.mark.legate
@pytest.mark.parametrize("accumulate", [False, True])
def test_unsafe_casting_on_legate(legate: object, accumulate: bool) -> None:
    sched, expected, a0 = _unsafe(accumulate)
    _check(sched, expected, a0, _legate)


@pytest.mark.legate
def test_small_integer_sums_on_legate(legate: object) -> None:
    b = np.full((N, N), 100, np.int8)
    for da in (np.dtype(np.int8), np.dtype(np.int64)):
        A = dt.Tensor("A", (N, N), dtype=da)
        sched = _gemm(A, dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", b), False)
        expected = np.zeros((N, N), da)
        np.einsum("ik,kj->ij", b, b, out=expected)
        _check(sched, expected, np.zeros((N, N), da), _legate)
