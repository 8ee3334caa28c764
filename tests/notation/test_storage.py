"""A tensor's data behind the storage protocol, and its read-only identity."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal.notation.storage import HostStorage, Storage


def test_host_storage_implements_the_protocol_and_hands_out_copies() -> None:
    a = np.arange(6.0).reshape(2, 3)
    h = HostStorage(a)
    assert isinstance(h, Storage)
    assert (h.shape, h.dtype, h.format, h.nbytes, h.on_legate) == ((2, 3), np.dtype(np.float64), None, 48, False)
    out = h.to_numpy()
    out[0, 0] = 7.0
    assert a[0, 0] == 0.0 and h.to_numpy()[0, 0] == 0.0


def test_a_tensor_holds_one_storage_set_by_set_array_and_bind() -> None:
    T = dt.Tensor("T", (2, 2))
    assert T.storage is None and not T.has_data and not T.on_legate
    assert np.array_equal(T.to_numpy(), np.zeros((2, 2)))
    T.set_array(np.eye(2))
    assert isinstance(T.storage, HostStorage) and T.has_data and not T.on_legate
    T.bind(HostStorage(np.full((2, 2), 3.0)))
    assert np.array_equal(T.to_numpy(), np.full((2, 2), 3.0))
    T.bind(None)
    assert T.storage is None and np.array_equal(T.to_numpy(), np.zeros((2, 2)))


def test_from_array_keeps_a_host_copy() -> None:
    a = np.arange(4.0)
    X = dt.Tensor.from_array("X", a)
    a[0] = 9.0
    assert isinstance(X.storage, HostStorage) and X.to_numpy()[0] == 0.0


def test_storage_is_replaced_only_through_bind() -> None:
    T = dt.Tensor("T", (2,))
    with pytest.raises(AttributeError):
        T.storage = HostStorage(np.zeros(2))  # type: ignore[misc]


@pytest.mark.parametrize(
    ("attr", "value"), [("name", "U"), ("shape", (3, 3)), ("dtype", np.dtype(np.float32)), ("casting", "unsafe")]
)
def test_a_tensors_identity_is_read_only(attr: str, value: object) -> None:
    T = dt.Tensor("T", (2, 2))
    before = getattr(T, attr)
    with pytest.raises(AttributeError):
        setattr(T, attr, value)
    assert getattr(T, attr) == before


def test_set_format_checks_the_format_and_keeps_the_data() -> None:
    m = dt.Machine(dt.Grid(2, 2))
    T = dt.Tensor.from_array("T", np.arange(16.0).reshape(4, 4))
    T.set_format(dt.Format("xy -> xy", m))
    assert str(T.format) == "xy -> xy" and np.array_equal(T.to_numpy(), np.arange(16.0).reshape(4, 4))
    with pytest.raises(dt.FormatError):
        T.set_format("xy -> xy")
