"""Small user mistakes that used to be accepted or misreported (issue 15, item 4), and two printing slips."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import distal as dt

i, j, k, ko, ki, io, ii = dt.index_vars("i j k ko ki io ii")
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _matmul(n: int = 8) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    A, B, C = dt.Tensor("A", (n, n)), dt.Tensor("B", (n, n)), dt.Tensor("C", (n, n))
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def test_index_vars_refuses_a_name_listed_twice() -> None:
    with pytest.raises(dt.NotationError, match="expected distinct index variable names, but i is listed twice"):
        dt.index_vars("i i")
    with pytest.raises(dt.NotationError, match="but j is listed twice"):
        dt.index_vars("i, j, k, j")


def test_compile_refuses_an_unknown_binding() -> None:
    A, _, _ = _matmul()
    with pytest.raises(dt.ScheduleError, match=r"expected bindings for the schedule's parameters \(none\), "
                                               r"but found foo=3"):
        A.schedule().compile(foo=3)


def test_compile_names_the_misspelt_binding_and_the_parameter_it_should_bind() -> None:
    A, _, _ = _matmul()
    cs = dt.Param("cs")
    sched = A.schedule().split(k, ko, ki, cs)
    with pytest.raises(dt.ScheduleError, match=r"parameters \(cs\), but found chunk=4"):
        sched.compile(chunk=4)
    with pytest.raises(dt.ScheduleError, match=r"but found chunk=4"):
        sched.evaluate(backend="reference", chunk=4)
    assert sched.parameters() == ("cs",)
    assert sched.compile(cs=4).launch_count() == 1  # the right name still binds


def test_distribute_reports_a_variable_listed_twice() -> None:
    A, _, _ = _matmul()
    m = dt.Machine(dt.Grid(2, 2))
    with pytest.raises(dt.ScheduleError, match="distribute: expected distinct loop variables, but i is listed twice"):
        A.schedule().distribute([i, i], [io, ko], [ii, ki], m)
    with pytest.raises(dt.ScheduleError, match="but i is listed twice"):
        A.schedule().distribute([i, i])


def test_trace_prints_machine_dimensions_as_written() -> None:
    A, B, C = _matmul()
    m = dt.Machine(dt.Grid(2, 2))
    sched = A.schedule().divide(i, io, ii, m.x)
    text = sched.trace_text()
    assert ".divide(i, io, ii, m.x)" in text and "MachineDim" not in text
    namespace = {"dt": dt, "A": A, "B": B, "C": C, "m": m, "i": i, "io": io, "ii": ii}
    assert eval(text, namespace) == sched
    mh = dt.Machine(dt.Grid(2), dt.Grid(3))
    assert ".divide(i, io, ii, m.dim('x', 1))" in A.schedule().divide(i, io, ii, mh.dim("x", 1)).trace_text()


def test_plan_marks_the_untiled_dimensions_its_note_speaks_of() -> None:
    x = dt.Tensor.from_array("x", np.arange(10.0))
    y = dt.Tensor("y", (10,))
    y[i] = x[i] * 3
    text = str(y.schedule().split(i, io, ii, 3).distribute([ii]).compile())
    assert "dimensions marked * are not tiled" in text or "not tiled, every task gets the whole" in text
    B = dt.Tensor("B", (6, 4))
    a = dt.Tensor("a", (6,))
    a[i] = B[i, j]
    text = str(a.schedule().split(i, io, ii, 3).distribute([io]).compile())
    # B is cut along i in blocks of 3, and every task gets all of j: its tile line shows the * the note names
    assert "B: read, tile [3, *] of [2, 1]" in text
    assert "B: dimensions marked * are not tiled" in text


def test_format_doc_color_example_is_what_color_returns() -> None:
    text = (DOCS / "format.md").read_text()
    m = dt.Machine(dt.Grid(2, 2, 2))
    fmt = dt.Format("xy -> xy*", m)
    shape = (4, 4)
    found = re.search(r"fmt\.color\(\(0, 1\), A\.shape\)\s+# P: (\(\d+, \d+\))", text)
    assert found is not None
    assert str(fmt.color((0, 1), shape)) == found.group(1) == "(0, 0)"
