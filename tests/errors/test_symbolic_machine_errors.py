"""One case per user error around symbolic machines (`Grid(dt.Param(...))`), each asserting its message."""

from __future__ import annotations

import ast
from collections.abc import Callable

import numpy as np
import pytest

import distal as dt

gx, gy = dt.Param("gx"), dt.Param("gy")
i, j, io, ii, jo, ji = dt.index_vars("i j io ii jo ji")


def _symbolic() -> dt.Machine:
    return dt.Machine(dt.Grid(gx, gy))


def _compile_unbound() -> None:
    m = _symbolic()
    A, B = dt.Tensor("A", (4, 4)), dt.Tensor.from_array("B", np.ones((4, 4)))
    A[i, j] = B[i, j]
    A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile(gy=2)


def _picture_unbound() -> None:
    from distal.format.picture import describe

    describe(dt.Format("xy -> xy", _symbolic()))


CASES: list[tuple[str, Callable[[], object], type[dt.DistalError], str]] = [
    ("grid-size", lambda: dt.Grid(2, "gx"), dt.MachineError,
     "expected positive integer grid sizes or dt.Param, but found 'gx'"),
    ("processor-count", lambda: _symbolic().size, dt.MachineError,
     "expected concrete grid sizes for the processor count of Machine(Grid(gx, gy)), but found parameter(s) "
     "gx, gy; bind them first (sched.compile(gx=..., gy=...) or machine.bound({'gx': ..., 'gy': ...}))"),
    ("bind", lambda: _symbolic().bind(2), dt.MachineError,
     "expected concrete grid sizes for binding to real processors of Machine(Grid(gx, gy))"),
    ("coords", lambda: list(_symbolic().coords()), dt.MachineError,
     "expected concrete grid sizes for the processor coordinates of Machine(Grid(gx, gy))"),
    ("machine-dim", lambda: int(_symbolic().x), dt.DistalError,
     "expected a concrete machine dimension, but m.x has symbolic size gx; bind it first (gx=... at compile)"),
    ("format-tiles", lambda: dt.Format("xy -> xy", _symbolic()).tile_shape((4, 4)), dt.MachineError,
     "expected concrete grid sizes for Grid(gx, gy), but found parameter(s) gx, gy; bind them first"),
    ("picture", _picture_unbound, dt.MachineError, "expected concrete grid sizes for Grid(gx, gy)"),
    ("bound-missing", lambda: _symbolic().bound({"gx": 2}), dt.MachineError,
     "expected concrete grid sizes for Machine(Grid(gx, gy)), but found parameter(s) gy"),
    ("bound-value", lambda: _symbolic().bound({"gx": 0, "gy": 1}), dt.DistalError,
     "expected a positive integer for gx, but found 0"),
    ("bound-fixed", lambda: dt.Format("xy -> xy1", dt.Machine(dt.Grid(2, 2, gx))).bound({"gx": 1}),
     dt.FormatError, "machine dimension 2 is fixed to index 1, but the grid has extent 1 there"),
    ("compile-unbound", _compile_unbound, dt.DistalError, "parameter gx is not bound; pass gx=... to compile"),
]


@pytest.mark.parametrize(("name", "make", "kind", "message"), CASES, ids=[c[0] for c in CASES])
def test_symbolic_machine_error(name: str, make: Callable[[], object], kind: type[dt.DistalError],
                                message: str) -> None:
    with pytest.raises(kind) as err:
        make()
    assert message in str(err.value)


def test_the_unbound_grid_hint_is_python() -> None:
    """Both ways the message offers to bind the sizes parse as Python calls (`{'gx', 'gy': ...}` did not)."""
    with pytest.raises(dt.MachineError) as err:
        _ = _symbolic().size
    hint = str(err.value).split("bind them first (", 1)[1].split("\n", 1)[0].removesuffix(")")
    calls = hint.split(" or ")
    assert calls == ["sched.compile(gx=..., gy=...)", "machine.bound({'gx': ..., 'gy': ...})"]
    for call in calls:
        assert isinstance(ast.parse(call, mode="eval").body, ast.Call)
