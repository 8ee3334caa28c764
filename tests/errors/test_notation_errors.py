"""One case per user error of the notation frontend, each asserting its message."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import distal as dt

i, j, k = dt.index_vars("i j k")


def _arity() -> None:
    B = dt.Tensor("B", (2, 2))
    B[i, j, k]


def _extent() -> None:
    A, B = dt.Tensor("A", (2, 3)), dt.Tensor("B", (4, 3))
    A[i, j] = B[i, j]


def _output_read() -> None:
    A, B = dt.Tensor("A", (2, 2)), dt.Tensor("B", (2, 2))
    A[i, j] = A[i, k] * B[k, j]


def _lhs_repeat() -> None:
    A, B = dt.Tensor("A", (2, 2)), dt.Tensor("B", (2, 2))
    A[i, i] = B[i, k]


def _same_name() -> None:
    A, B1, B2 = dt.Tensor("A", (2,)), dt.Tensor("B", (2,)), dt.Tensor("B", (2,))
    A[i] = B1[i] + B2[i]


def _unbound_var() -> None:
    A = dt.Tensor("A", (2,))
    dt.parse("A(i) = X(i)", A=A, X=dt.TensorVar("X", (2,), np.dtype(np.float64)))


def _not_var() -> None:
    B = dt.Tensor("B", (2, 2))
    B[i, 3]


def _scalar_indexed() -> None:
    a, B = dt.Tensor("a", ()), dt.Tensor("B", (2,))
    a[i] = B[i]


def _bad_name() -> None:
    dt.Tensor("2B", (2,))


def _bad_shape() -> None:
    dt.Tensor("B", (2, -1))


def _bad_dtype() -> None:
    dt.Tensor("B", (2,), dtype=np.bool_)


def _bad_data() -> None:
    dt.Tensor.from_array("B", np.array(["a", "b"]))


def _set_wrong_shape() -> None:
    dt.Tensor("B", (2,)).set_array(np.zeros(3))


def _no_statement() -> None:
    dt.Tensor("B", (2,)).schedule()


def _not_finite() -> None:
    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2,))
    A[i] = B[i] * float("inf")


def _unknown_tensor() -> None:
    dt.parse("A(i) = Q(i)", A=dt.Tensor("A", (2,)))


def _parse_garbage() -> None:
    dt.parse("A(i) = B(i) $ 2", A=dt.Tensor("A", (2,)), B=dt.Tensor("B", (2,)))


def _parse_incomplete() -> None:
    dt.parse("A(i) = B(i) *", A=dt.Tensor("A", (2,)), B=dt.Tensor("B", (2,)))


def _parse_wrong_kwarg() -> None:
    dt.parse("A(i) = B(i)", A=dt.Tensor("A", (2,)), C=dt.Tensor("B", (2,)))


def _parse_not_text() -> None:
    dt.parse(42)  # type: ignore[arg-type]


def _sum_free_var() -> None:
    dt.parse("A(i) = sum(i, B(i))", A=dt.Tensor("A", (2,)), B=dt.Tensor("B", (2,)))


def _index_vars_empty() -> None:
    dt.index_vars("  ")


def _bad_backend() -> None:
    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2,))
    A[i] = B[i]
    A.schedule().evaluate(backend="cuda")


def _data_as_format() -> None:
    dt.Tensor("B", (2,), np.ones(2))


CASES: list[tuple[str, Callable[[], None], type[Exception], str]] = [
    ("arity", _arity, dt.NotationError, "expected 2 index variable(s) for B of shape (2, 2), but found 3"),
    ("extent", _extent, dt.NotationError, "expected index variable i to have one extent, but found 2 in A(i,j) and 4"),
    ("output-read", _output_read, dt.NotationError, "expected the output A only on the left, but found A(i,k)"),
    ("lhs-repeat", _lhs_repeat, dt.NotationError, "expected distinct index variables on the left, but found A(i,i)"),
    ("same-name", _same_name, dt.NotationError, "expected one tensor per name, but found two tensors named B"),
    ("unbound-var", _unbound_var, dt.NotationError, "expected a live tensor for X"),
    ("not-var", _not_var, dt.NotationError, "expected index variables to index B, but found 3"),
    ("scalar-indexed", _scalar_indexed, dt.NotationError, "expected 0 index variable(s) for a"),
    ("bad-name", _bad_name, dt.NotationError, "expected an identifier as tensor name, but found '2B'"),
    ("bad-shape", _bad_shape, dt.ShapeError, "expected non-negative integer extents for B, but found -1"),
    ("bad-dtype", _bad_dtype, dt.DtypeError, "expected a numeric dtype (float64, float32, float16, int64, "
     "int32, int16, int8, uint64, uint32, uint16, uint8, complex128, complex64) for B, but found bool"),
    ("bad-data", _bad_data, dt.DtypeError, "expected a numeric dtype (float64,"),
    ("set-wrong-shape", _set_wrong_shape, dt.ShapeError, "expected data of shape (2,) for B, but found (3,)"),
    ("no-statement", _no_statement, dt.NotationError, "expected a statement computing B"),
    ("not-finite", _not_finite, dt.NotationError, "expected a finite number, but found inf"),
    ("unknown-tensor", _unknown_tensor, dt.ParseError, "expected a known tensor (given: A), but found 'Q'"),
    ("parse-garbage", _parse_garbage, dt.ParseError, "unexpected character '$' at position 12"),
    ("parse-incomplete", _parse_incomplete, dt.ParseError, "expected a tensor, a number, '-' or '(', but found end of text"),
    ("parse-wrong-kwarg", _parse_wrong_kwarg, dt.NotationError, "expected tensor B to be passed as B=, but found C="),
    ("parse-not-text", _parse_not_text, dt.NotationError, "expected statement text, but found int"),
    ("sum-free-var", _sum_free_var, dt.NotationError, "expected sum over a variable that is not already bound"),
    ("index-vars-empty", _index_vars_empty, dt.NotationError, "expected at least one index variable name"),
    ("data-as-format", _data_as_format, dt.FormatError, "expected a dt.Format as the format of B, but found ndarray"),
    ("bad-backend", _bad_backend, dt.ScheduleError, "expected backend 'legate' or 'reference', but found 'cuda'"),
]


@pytest.mark.parametrize("name,fn,kind,message", CASES, ids=[c[0] for c in CASES])
def test_user_error_message(name: str, fn: Callable[[], None], kind: type[Exception], message: str) -> None:
    with pytest.raises(kind) as err:
        fn()
    assert isinstance(err.value, dt.DistalError)
    assert message in str(err.value)


def test_failed_assignment_leaves_the_old_statement() -> None:
    A, B = dt.Tensor("A", (2, 2)), dt.Tensor("B", (2, 2))
    A[i, j] = B[i, j]
    before = A.assignment
    with pytest.raises(dt.NotationError):
        A[i, j] = A[i, j] * B[i, j]
    assert A.assignment is before
