"""substitute refuses loops that do not run inside a task, saying so (not "transform loops before ...")."""

from __future__ import annotations

import pytest

import distal as dt

i, j, k, ko, ki = dt.index_vars("i j k ko ki")


def _matmul() -> dt.Tensor:
    A, B, C = dt.Tensor("A", (4, 4)), dt.Tensor("B", (4, 5)), dt.Tensor("C", (5, 4))
    A[i, j] = B[i, k] * C[k, j]
    return A


def test_substitute_on_a_distributed_loop() -> None:
    sched = _matmul().schedule().reorder([j, k, i]).distribute([i])
    with pytest.raises(dt.ScheduleError) as err:
        sched.substitute([i], dt.leaf.GENERIC)
    message = str(err.value)
    assert message.startswith("substitute: expected loops that run inside a task, but i is distributed: "
                              "its iterations are tasks, not loops inside one (distribute({i}))")
    assert "transform" not in message
    assert "A(i,j) = B(i,k) * C(k,j)" in message


def test_substitute_twice_on_one_loop() -> None:
    sched = _matmul().schedule().substitute([k], dt.leaf.GENERIC)
    with pytest.raises(dt.ScheduleError) as err:
        sched.substitute([j, k], dt.leaf.GENERIC)
    assert str(err.value).startswith("substitute: expected loops that run inside a task, but k already runs "
                                     "as a leaf (substitute({k}, GENERIC))")


def test_substitute_an_outer_loop_without_its_inner() -> None:
    sched = _matmul().schedule().split(k, ko, ki, 2).reorder([ko, i, j, ki])
    with pytest.raises(dt.ScheduleError) as err:
        sched.substitute([ko, i, j], dt.leaf.GENERIC)
    assert "expected the innermost loops above a statement" in str(err.value)
    with pytest.raises(dt.ScheduleError) as err:
        sched.reorder([ki, i, j, ko]).substitute([j, ko], dt.leaf.GENERIC)
    assert str(err.value).startswith("substitute: expected loops over contiguous blocks (original, inner of "
                                     "divide/split, or outer with its inner), but ko comes from split(k, ko, ki, 2)")
