"""Mistakes a new user makes first (issue 25): asking NumPy for no copy, naming a machine axis that does not exist."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt


def test_asarray_without_a_copy_is_refused_and_says_how_to_get_one() -> None:
    t = dt.Tensor.from_array("T", np.arange(6.0).reshape(2, 3))
    expected = (r"expected copy=None or copy=True to make an array of T \(a distal tensor cannot share its memory "
                r"with NumPy\), but found copy=False; np.asarray\(T\) or T.to_numpy\(\) gives a copy")
    with pytest.raises(ValueError, match=expected):
        np.asarray(t, copy=False)
    with pytest.raises(ValueError, match=expected):
        np.array(t, copy=False)
    with pytest.raises(ValueError, match=expected):
        t.__array__(copy=False)


@pytest.mark.parametrize(
    ("machine", "axis", "message"),
    [
        (dt.Machine(dt.Grid(2, 2)), "z", "expected one of the axes x, y of Machine(Grid(2, 2)), but found 'z'"),
        (dt.Machine(dt.Grid(4)), "y", "expected the axis x of Machine(Grid(4)), but found 'y'"),
        (dt.Machine(dt.Grid(2, 3, names="ab")), "x",
         "expected one of the axes a, b of Machine(Grid(2, 3, names=('a', 'b'))), but found 'x'"),
        (dt.Machine(dt.Grid(2), dt.Grid(2, 2)), "y",
         "expected the axis x of Machine(Grid(2), Grid(2, 2)), but found 'y'; y is an axis of level 1: "
         "write m.dim('y', 1)"),
    ],
)
def test_a_machine_axis_that_does_not_exist_is_a_machine_error(machine: dt.Machine, axis: str, message: str) -> None:
    with pytest.raises(dt.MachineError) as info:
        getattr(machine, axis)
    assert str(info.value) == message
    assert isinstance(info.value, AttributeError) and info.value.name == axis  # hasattr and getattr keep working
    assert not hasattr(machine, axis) and getattr(machine, axis, None) is None


def test_a_plan_picture_of_no_steps_is_refused() -> None:
    pytest.importorskip("matplotlib")
    i, io, ii = dt.index_vars("i io ii")
    a, b = dt.Tensor("a", (4,)), dt.Tensor("b", (4,))
    a[i] = b[i]
    plan = a.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).compile()
    with pytest.raises(dt.DistalError, match=r"^expected a positive number of steps to draw, but found 0$"):
        plan.picture(steps=0)
