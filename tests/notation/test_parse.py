"""The text form: parsing, printing round trips, and a fuzz."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distal as dt
from tests._strategies import statements

i, j, k, l = dt.index_vars("i j k l")


def tensors() -> dict[str, dt.Tensor]:
    return {
        "A": dt.Tensor("A", (3, 4)),
        "B": dt.Tensor("B", (3, 5)),
        "C": dt.Tensor("C", (5, 4)),
        "D": dt.Tensor("D", (5, 4)),
        "a": dt.Tensor("a", ()),
        "T": dt.Tensor("T", (3, 4, 5)),
        "v": dt.Tensor("v", (5,)),
    }


@pytest.mark.parametrize(
    "text",
    [
        "A(i,j) = B(i,k) * C(k,j)",
        "A(i,j) += B(i,k) * C(k,j)",
        "a = T(i,j,k) * T(i,j,k)",
        "A(i,j) = T(i,j,k) * v(k)",
        "A(i,j) = B(i,k) * (C(k,j) + D(k,j))",
        "A(i,j) = B(i,k) * C(k,j) - D(k,j) / 2",
        "A(i,j) = -B(i,k) * C(k,j)",
        "A(i,j) = B(i,k) - (C(k,j) - D(k,j))",
        "A(i,j) = B(i,k) / (C(k,j) / D(k,j))",
        "A(i,j) = 0.5 * B(i,k) * C(k,j) + 1e-05",
        "A(i,j) = sum(k, B(i,k) * C(k,j))",
        "A(i,j) = -(B(i,k) + C(k,j))",
    ],
)
def test_print_parse_round_trip(text: str) -> None:
    stmt = dt.parse(text, **tensors())
    assert str(stmt) == text
    assert dt.parse(str(stmt), **tensors()) != stmt  # different tensor objects: not equal
    ts = tensors()
    assert dt.parse(str(dt.parse(text, **ts)), **ts) == dt.parse(text, **ts)


def test_python_and_text_forms_build_the_same_statement() -> None:
    ts = tensors()
    A, B, C = ts["A"], ts["B"], ts["C"]
    A[i, j] = B[i, k] * C[k, j]
    assert A.assignment == dt.parse("A(i,j) = B(i,k) * C(k,j)", A=A, B=B, C=C)
    A[i, j] += B[i, k] * C[k, j]
    assert A.assignment == dt.parse("A(i,j) += B(i,k) * C(k,j)", A=A, B=B, C=C)
    a, T, v = ts["a"], ts["T"], ts["v"]
    a[()] = T[i, j, k] * T[i, j, k]
    assert str(a.assignment) == "a = T(i,j,k) * T(i,j,k)"
    A[i, j] = T[i, j, k] * v[k] * 2 - 1
    assert A.assignment == dt.parse("A(i,j) = T(i,j,k) * v(k) * 2 - 1", A=A, T=T, v=v)


def test_negative_numbers_become_unary_minus() -> None:
    ts = tensors()
    A, B = ts["A"], ts["B"]
    A[i, j] = B[i, k] * -2 * ts["C"][k, j]
    assert str(A.assignment) == "A(i,j) = B(i,k) * -2 * C(k,j)"
    assert dt.parse(str(A.assignment), **ts) == A.assignment


@settings(max_examples=200, deadline=None)
@given(statements())
def test_random_statements_round_trip(drawn: object) -> None:
    stmt = drawn.assignment  # type: ignore[attr-defined]
    ts = {t.name: t for t in stmt.tensors()}
    assert dt.parse(str(stmt), **ts) == stmt


ALPHABET = st.sampled_from(list("ABCTvaijk()+-*/=,. 0123456789e_sum\t"))


@settings(max_examples=600, deadline=None)
@given(st.text(ALPHABET, max_size=40) | st.text(max_size=20))
def test_any_text_gives_a_statement_or_a_distal_error(text: str) -> None:
    try:
        stmt = dt.parse(text, **tensors())
    except dt.DistalError:
        return
    assert isinstance(stmt, dt.Assignment)


@pytest.mark.parametrize("text", ["A(i,j) = " + "(" * 5000 + "B(i,j)" + ")" * 5000, "A(i,j) = " + "-" * 5000 + "B(i,j)"])
def test_deep_nesting_is_a_parse_error(text: str) -> None:
    with pytest.raises(dt.ParseError, match="nested too deeply"):
        dt.parse(text, **tensors())
