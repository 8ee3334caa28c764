"""Placing host data copies it onto Legate once: no host copy of the tensor's data, no private copy first."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.notation.storage import HostStorage
from distal.runtime import _make
from distal.runtime import _tensor_storage as ts
from distal.runtime._store import to_numpy


def test_host_storage_view_is_the_data_read_only() -> None:
    data = np.arange(6.0).reshape(2, 3)
    view = HostStorage(data).view()
    assert np.shares_memory(view, data) and not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0] = 1.0


@pytest.mark.legate
def test_adopt_places_host_storage_without_asking_for_a_copy(machine: rt.MachineInfo) -> None:
    data = np.random.default_rng(3).random((7, 5))
    fmt = dt.Format("xy -> xy", dt.Machine(dt.Grid(2, 2)))

    def no_copy() -> np.ndarray:
        raise AssertionError("adopt asked for a host copy of data it holds")

    held = ts.adopt(HostStorage(data), no_copy, fmt, data.dtype, data.shape)
    assert np.array_equal(held.to_numpy(), data)


@pytest.mark.legate
def test_from_numpy_attaches_a_c_ordered_array_as_it_is(machine: rt.MachineInfo,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    attached: list[Any] = []
    real = _make.legate_runtime

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(real(), name)

        def create_store_from_buffer(self, kind: Any, shape: Any, data: Any, read_only: bool) -> Any:
            attached.append((data, read_only))
            return real().create_store_from_buffer(kind, shape, data, read_only)

    monkeypatch.setattr(_make, "legate_runtime", Spy)
    ordered = np.random.default_rng(4).random((6, 4))
    assert np.array_equal(to_numpy(_make.from_numpy(ordered)), ordered)
    transposed = ordered.T  # not C-ordered: converted first
    assert np.array_equal(to_numpy(_make.from_numpy(transposed)), transposed)
    assert attached[0][0] is ordered and attached[0][1] is True
    assert attached[1][0] is not transposed and attached[1][0].flags.c_contiguous
