"""Running a `=` plan again writes its output into the store of the previous run (no fresh pool memory)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.runtime import FormatStore, TensorStore
from distal.runtime._execute import reusable
from distal.runtime._make import unwritten, zeros

pytestmark = pytest.mark.legate


def _held(t: dt.Tensor) -> Any:
    """The Legate store a tensor's data lives in: its blocks when formatted, else its store."""
    held = t.storage
    if isinstance(held, FormatStore):
        return held.blocks
    assert isinstance(held, TensorStore)
    return held.store


@pytest.mark.parametrize("formatted", [True, False], ids=["placed-output", "unformatted-output"])
def test_a_rerun_writes_the_previous_store_and_gives_the_new_result(machine: rt.MachineInfo, formatted: bool) -> None:
    i, j, k = dt.index_vars("i j k")
    rng = np.random.default_rng(5)
    fmt = dt.Format("xy -> xy", dt.Machine(dt.Grid(2, 2))) if formatted else None
    A = dt.Tensor("A", (9, 7), fmt)
    B = dt.Tensor.from_array("B", rng.random((9, 5)))
    C = dt.Tensor.from_array("C", rng.random((5, 7)))
    A[i, j] = B[i, k] * C[k, j]
    plan = A.schedule().compile()
    plan.run()
    first = _held(A)
    assert isinstance(A.storage, FormatStore) == formatted
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy())
    B.set_array(rng.random((9, 5)))  # new input data: the rerun must not keep anything of the first result
    plan.run()
    assert _held(A) is first
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy())


def test_a_reader_queued_before_the_rerun_sees_the_previous_result(machine: rt.MachineInfo) -> None:
    i = dt.index_vars("i")
    fmt = dt.Format("x -> x", dt.Machine(dt.Grid(4)))
    data = np.arange(10.0)
    A = dt.Tensor("A", (10,), fmt)
    B = dt.Tensor.from_array("B", data, fmt)
    D = dt.Tensor("D", (10,), fmt)
    A[i] = B[i] * 2
    D[i] = A[i] * 3
    write_a, read_a = A.schedule().compile(), D.schedule().compile()
    write_a.run()
    read_a.run()  # queued on Legate before A is written again
    B.set_array(data + 100)
    write_a.run()
    np.testing.assert_array_equal(D.to_numpy(), data * 6)
    np.testing.assert_array_equal(A.to_numpy(), (data + 100) * 2)


def test_only_a_store_of_the_same_shape_and_dtype_is_reused(machine: rt.MachineInfo) -> None:
    store = zeros((4, 3), np.float64)
    assert reusable(store, (4, 3), np.dtype(np.float64))
    assert not reusable(store, (3, 4), np.dtype(np.float64))
    assert not reusable(store, (4, 3), np.dtype(np.float32))
    assert reusable(unwritten((6,), np.int64), (6,), np.dtype(np.int64))
