"""One case per user error of parallelize, each asserting its message."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

i, j, k, w1 = dt.index_vars("i j k w1")


def _schedule() -> dt.Schedule:
    A = dt.Tensor("A", (3, 3))
    B, C = dt.Tensor.from_array("B", np.ones((3, 4))), dt.Tensor.from_array("C", np.ones((4, 3)))
    A[i, j] = B[i, k] * C[k, j]
    return A.schedule().precompute(B[i, k] * C[k, j], [k], [w1])


def test_cpu_thread_over_iterations_that_overwrite_one_element() -> None:
    with pytest.raises(dt.ScheduleError) as err:
        _schedule().parallelize(j, "cpu_thread")
    assert ("parallelize: expected a loop whose threads write distinct elements, but every iteration of j "
            "overwrites w0(w1) in w0(w1) = B(i,w1) * C(w1,j) (a race; cpu_vector runs it as one block)") in str(err.value)
    assert "A(i,j) = B(i,k) * C(k,j)" in str(err.value)


def test_an_unknown_unit() -> None:
    with pytest.raises(dt.ScheduleError) as err:
        _schedule().parallelize(i, "simd")
    assert "parallelize: expected a unit in ('cpu_thread', 'cpu_vector', 'gpu_block', 'gpu_warp', 'gpu_thread'), " \
           "but found 'simd'" in str(err.value)
