"""`np.asarray(tensor)` under NumPy 2's `__array__(dtype=None, copy=None)` protocol (issue 25)."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt


def _tensor() -> tuple[dt.Tensor, np.ndarray]:
    data = np.arange(12.0).reshape(3, 4)
    return dt.Tensor.from_array("T", data), data


@pytest.mark.parametrize("copy", [None, True])
def test_an_array_of_a_tensor_is_a_copy_of_its_data(copy: bool | None) -> None:
    t, data = _tensor()
    got = np.array(t, copy=copy)
    np.testing.assert_array_equal(got, data)
    got[0, 0] = -1.0  # the caller owns the array: the tensor keeps its data
    assert t.to_numpy()[0, 0] == data[0, 0]
    assert not np.shares_memory(np.asarray(t), np.asarray(t))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128])
def test_dtype_is_honoured(dtype: type) -> None:
    t, data = _tensor()
    for got in (np.asarray(t, dtype=dtype), np.array(t, dtype=dtype, copy=True), t.__array__(dtype)):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, data.astype(dtype))


def test_copy_false_raises_value_error_as_numpy_2_asks() -> None:
    t, _ = _tensor()
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, dtype=np.float32, copy=False)
    assert np.asarray(t, copy=None).shape == (3, 4)  # copy=None may copy


def test_a_tensor_without_data_reads_as_zeros() -> None:
    z = dt.Tensor("Z", (2, 2), dtype=np.float32)
    got = np.asarray(z)
    assert got.dtype == np.float32 and not got.any()
