"""One case per user error of the unary functions (conj, abs, sqrt, exp), each asserting its message."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import distal as dt
from distal.notation.ast import Call

i, j = dt.index_vars("i j")
jo, ji = dt.index_vars("jo ji")


def _unknown_function() -> None:
    Call("log", dt.Tensor("B", (2,))[i])


def _operand_not_an_expression() -> None:
    Call("sqrt", "B(i)")  # type: ignore[arg-type]


def _function_of_a_tensor() -> None:
    dt.sqrt(dt.Tensor("B", (2,)))  # type: ignore[arg-type]


def _sqrt_into_integers() -> None:
    A, B = dt.Tensor("A", (2,), dtype=np.int64), dt.Tensor("B", (2,), dtype=np.int64)
    A[i] = dt.sqrt(B[i])


def _abs_of_complex_into_integers() -> None:
    A, X = dt.Tensor("A", (2,), dtype=np.int32), dt.Tensor("X", (2,), dtype=np.complex64)
    A[i] = abs(X[i])


def _parse_no_parenthesis() -> None:
    dt.parse("A(i) = sqrt B(i)", A=dt.Tensor("A", (2,)), B=dt.Tensor("B", (2,)))


def _parse_unclosed() -> None:
    dt.parse("A(i) = exp(B(i)", A=dt.Tensor("A", (2,)), B=dt.Tensor("B", (2,)))


def _split_inside_sqrt() -> None:
    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2, 3))
    dt.parse("A(i) = sqrt(sum(j, B(i,j)))", A=A, B=B)
    A.schedule().split(j, jo, ji, 2)


def _distribute_inside_a_divisor() -> None:
    A, B = dt.Tensor("A", (2, 3)), dt.Tensor("B", (2, 3))
    dt.parse("A(i,k) = B(i,k) / sum(j, B(i,j))", A=A, B=B)
    A.schedule().distribute([j], [jo], [ji], dt.Machine(dt.Grid(2)))


def _summed_both_ways() -> None:
    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2, 3))
    dt.parse("A(i) = sqrt(sum(j, B(i,j)) + B(i,j))", A=A, B=B)


CASES: list[tuple[str, Callable[[], None], type[Exception], str]] = [
    ("unknown-function", _unknown_function, dt.NotationError,
     "expected a function of abs, conj, exp, sqrt, but found 'log'"),
    ("operand-not-an-expression", _operand_not_an_expression, dt.NotationError,
     "expected an expression as the operand of sqrt, but found 'B(i)'"),
    ("function-of-a-tensor", _function_of_a_tensor, dt.NotationError,
     "expected a number or an expression, but found <Tensor B: 2 float64"),
    ("sqrt-into-integers", _sqrt_into_integers, dt.DtypeError,
     "expected a right side castable to int64 (the dtype of A) under casting='same_kind', but found float64"),
    ("abs-of-complex-into-integers", _abs_of_complex_into_integers, dt.DtypeError,
     "expected a right side castable to int32 (the dtype of A) under casting='same_kind', but found float32"),
    ("summed-both-ways", _summed_both_ways, dt.NotationError,
     "expected j to be summed either implicitly or by sum(j, ...), but found both: the implicit sum over j of "
     "sqrt(sum(j, B(i,j)) + B(i,j)) would hold sum(j, B(i,j)); give the explicit sum another variable"),
    ("parse-no-parenthesis", _parse_no_parenthesis, dt.ParseError, "expected '(', but found 'B'"),
    ("parse-unclosed", _parse_unclosed, dt.ParseError, "expected ')', but found end of text"),
    ("split-inside-sqrt", _split_inside_sqrt, dt.ScheduleError,
     "split: expected j to be a loop variable (loops: i), but it is not; j is summed inside sqrt: "
     "sqrt(sum(j, B(i,j))) is computed whole where it stands (a sum inside a function is never computed in pieces)"),
    ("distribute-inside-a-divisor", _distribute_inside_a_divisor, dt.ScheduleError,
     "expected j to be a loop variable (loops: i, k), but it is not; j is summed inside the divisor of "
     "B(i,k) / sum(j, B(i,j)), which is computed whole where it stands (a sum in a divisor is never computed in pieces)"),
]


@pytest.mark.parametrize("name,fn,kind,message", CASES, ids=[c[0] for c in CASES])
def test_user_error_message(name: str, fn: Callable[[], None], kind: type[Exception], message: str) -> None:
    with pytest.raises(kind) as err:
        fn()
    assert isinstance(err.value, dt.DistalError)
    assert message in str(err.value)
