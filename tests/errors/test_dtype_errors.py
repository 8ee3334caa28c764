"""One case per dtype mistake, each asserting its message; all raised when the tensor or statement is built."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import distal as dt

i, j, k = dt.index_vars("i j k")


def _float_into_int() -> None:
    A = dt.Tensor("A", (2, 2), dtype=np.int64)
    B = dt.Tensor.from_array("B", np.full((2, 2), 0.5))
    C = dt.Tensor.from_array("C", np.ones((2, 2), np.int64))
    A[i, j] = B[i, k] * C[k, j]


def _float_into_int_text() -> None:
    A = dt.Tensor("A", (2,), dtype=np.int32)
    B = dt.Tensor.from_array("B", np.full(2, 0.5))
    dt.parse("A(i) = B(i)", A=A, B=B)


def _int_division_into_int() -> None:
    A, B = dt.Tensor("A", (2,), dtype=np.int64), dt.Tensor("B", (2,), dtype=np.int64)
    A[i] = B[i] / 2


def _float_literal_into_int() -> None:
    A, B = dt.Tensor("A", (2,), dtype=np.int16), dt.Tensor("B", (2,), dtype=np.int16)
    A[i] = B[i] * 2.5


def _complex_into_float() -> None:
    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2,), dtype=np.complex64)
    A[i] = B[i]


def _uint64_into_signed() -> None:
    A, B = dt.Tensor("A", (2,), dtype=np.int8), dt.Tensor("B", (2,), dtype=np.uint64)
    A[i] += B[i]


def _literal_out_of_range() -> None:
    A, B = dt.Tensor("A", (2,), dtype=np.int8), dt.Tensor("B", (2,), dtype=np.int8)
    A[i] = B[i] * 1000


def _unsafe_with_a_sum() -> None:
    A = dt.Tensor("A", (2,), dtype=np.int64, casting="unsafe")
    B = dt.Tensor("B", (2, 2))
    A[i] = B[i, j]


def _bad_casting() -> None:
    dt.Tensor("A", (2,), casting="always")


def _longdouble() -> None:
    dt.Tensor("A", (2,), dtype=np.longdouble)


def _string_data() -> None:
    dt.Tensor.from_array("A", np.array(["x", "y"]))


def _bool_data() -> None:
    dt.Tensor.from_array("A", np.array([True, False]))


CASES: list[tuple[str, Callable[[], None], str]] = [
    ("float-into-int", _float_into_int,
     "expected a right side castable to int64 (the dtype of A) under casting='same_kind', but found float64; "
     "give A a dtype of that kind, or make it with casting='unsafe'"),
    ("float-into-int-text", _float_into_int_text, "castable to int32 (the dtype of A) under casting='same_kind', "
     "but found float64"),
    ("int-division", _int_division_into_int, "castable to int64 (the dtype of A) under casting='same_kind', "
     "but found float64"),
    ("float-literal", _float_literal_into_int, "castable to int16 (the dtype of A) under casting='same_kind', "
     "but found float64"),
    ("complex-into-float", _complex_into_float, "castable to float64 (the dtype of A) under casting='same_kind', "
     "but found complex64"),
    ("uint64-into-signed", _uint64_into_signed, "castable to int8 (the dtype of A) under casting='same_kind', but "
     "found uint64, computed in float64 with the output's int8 as NumPy promotes them"),
    ("literal-range", _literal_out_of_range, "expected operands NumPy can combine, but found Python integer 1000 "
     "out of bounds for int8"),
    ("unsafe-sum", _unsafe_with_a_sum, "expected a statement without sums for casting='unsafe' from float64 into "
     "int64 (A), but found summed variables"),
    ("bad-casting", _bad_casting, "expected casting= one of no, equiv, safe, same_kind, unsafe for A, but found "
     "'always'"),
    ("longdouble", _longdouble, f"for A, but found {np.dtype(np.longdouble).name}"),
    ("string-data", _string_data, "expected a numeric dtype (float64, float32, float16, int64, int32, int16, "
     "int8, uint64, uint32, uint16, uint8, complex128, complex64) for A, but found str"),
    ("bool-data", _bool_data, "for A, but found bool"),
]


@pytest.mark.parametrize("name,fn,message", CASES, ids=[c[0] for c in CASES])
def test_dtype_error_message(name: str, fn: Callable[[], None], message: str) -> None:
    with pytest.raises(dt.DtypeError) as err:
        fn()
    assert message in str(err.value)


def test_refused_statement_leaves_the_output_without_one() -> None:
    A = dt.Tensor("A", (2,), dtype=np.int64)
    with pytest.raises(dt.DtypeError):
        A[i] = dt.Tensor.from_array("B", np.full(2, 0.5))[i]
    assert A.assignment is None


def test_int16_data_is_accepted() -> None:
    """The issue's case: int16 was refused with "expected a numeric array"."""
    B = dt.Tensor.from_array("B", np.arange(4, dtype=np.int16))
    A = dt.Tensor("A", (4,), dtype=np.int16)
    A[i] = B[i] * 2
    np.testing.assert_array_equal(A.schedule().evaluate(backend="reference").to_numpy(), np.arange(4) * 2)
