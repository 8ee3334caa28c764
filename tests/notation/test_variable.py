"""The IR refers to immutable tensor variables; data is reached only through a plan's or schedule's bindings."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal.cin.relations import Communicate, Precompute
from distal.cin.statements import assignments
from distal.notation.ast import Access, Expr
from distal.notation.variable import Bindings
from tests._strategies import schedules, statements
from tests._strategies.machines import machine_schedules

i, j, k = dt.index_vars("i j k")


def test_a_var_is_immutable() -> None:
    v = dt.Tensor("B", (2, 3)).var
    assert isinstance(v, dt.TensorVar)
    for name, value in (("name", "C"), ("shape", (3, 2)), ("format", None), ("uid", 0)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(v, name, value)


def test_tensor_var_changes_with_the_format_only() -> None:
    m = dt.Machine(dt.Grid(2))
    B = dt.Tensor("B", (4, 4))
    before = B.var
    assert B.var is before  # the same object while nothing changed
    B.set_format(dt.Format("xy -> x", m))
    after = B.var
    assert after is not before and after != before
    assert (after.name, after.shape, after.uid, after.format) == (before.name, before.shape, before.uid, B.format)
    assert before.format is None  # the old var keeps what it named
    assert B[i, j].tensor is after and B.var is after


def test_an_access_holds_the_var_not_the_tensor() -> None:
    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2,))
    A[i] = B[i] * 2
    assert A.assignment is not None
    assert A.assignment.lhs.tensor is A.var and A.assignment.tensors() == (A.var, B.var)
    assert A.operands == (A, B)  # the data side: the user tensors of its vars, kept alive by the output


def test_two_tensors_with_one_name_stay_distinct() -> None:
    first = dt.Tensor.from_array("B", np.array([1.0, 2.0]))
    second = dt.Tensor.from_array("B", np.array([10.0, 20.0]))
    assert first.var != second.var and first.var.uid != second.var.uid
    A = dt.Tensor("A", (2,))
    A[i] = first[i]
    np.testing.assert_array_equal(A.schedule().compile().run(backend="numpy").to_numpy(), [1.0, 2.0])
    A[i] = second[i]
    np.testing.assert_array_equal(A.schedule().compile().run(backend="numpy").to_numpy(), [10.0, 20.0])


def _plan_of_dropped_tensors() -> dt.Tensor:
    B = dt.Tensor.from_array("B", np.arange(6.0).reshape(2, 3))
    c = dt.Tensor.from_array("c", np.array([1.0, 2.0, 3.0]))
    a = dt.Tensor("a", (2,))
    a[i] = B[i, k] * c[k]
    return a.schedule().compile()  # type: ignore[return-value]


def test_a_plan_keeps_its_tensors_alive() -> None:
    plan = _plan_of_dropped_tensors()  # B, c and a are gone from every scope
    gc.collect()
    out = plan.run(backend="numpy")  # type: ignore[attr-defined]
    np.testing.assert_array_equal(out.to_numpy(), np.arange(6.0).reshape(2, 3) @ np.array([1.0, 2.0, 3.0]))


def test_an_inline_tensor_keeps_its_data() -> None:
    A = dt.Tensor("A", (3,))
    A[i] = dt.Tensor.from_array("B", np.array([1.0, 2.0, 3.0]))[i] + 1
    gc.collect()
    np.testing.assert_array_equal(A.schedule().evaluate("reference").to_numpy(), [2.0, 3.0, 4.0])


def test_a_format_change_after_the_schedule_is_used_by_compile_and_not_by_an_earlier_plan() -> None:
    m = dt.Machine(dt.Grid(2))
    A, B = dt.Tensor("A", (4,)), dt.Tensor.from_array("B", np.arange(4.0))
    A[i] = B[i]
    sched = A.schedule()
    before = sched.compile()
    B.set_format(dt.Format("x -> x", m))
    assert sched.tensors()[1].format is None  # the schedule keeps the vars it was made with
    after = sched.compile()
    assert [t.tensor.format for t in before.tensors] == [None, None]
    assert [t.tensor.format for t in after.tensors] == [None, B.format]
    assert A.schedule().tensors()[1] == B.var  # a new schedule takes the current vars


def test_commands_take_tensors_or_their_vars() -> None:
    A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    s = A.schedule()
    by_tensor = s.communicate(B, k).relations_of(Communicate)
    by_var = s.communicate(B.var, k).relations_of(Communicate)
    assert by_tensor == by_var == (Communicate((B.var,), k),)


def test_a_workspace_is_a_var_without_a_tensor() -> None:
    A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    s = A.schedule().precompute(B[i, k] * C[k, j], [k], [dt.IndexVar("kw")], workspace="w")
    (w,) = s.workspaces()
    assert isinstance(w, dt.TensorVar) and s.bindings.get_tensor(w) is None
    assert w.uid not in {t.var.uid for t in (A, B, C)}


def test_bindings_refuse_a_var_without_a_live_tensor() -> None:
    orphan = dt.TensorVar("X", (2,), np.dtype(np.float64))
    with pytest.raises(dt.DistalError, match="expected a live tensor for X"):
        Bindings.of_vars([orphan])


def _accesses(e: Expr) -> list[Access]:
    if isinstance(e, Access):
        return [e]
    return [a for c in e.children() for a in _accesses(c)]


def _no_tensor_in_ir(sched: dt.Schedule) -> None:
    found: list[Access] = [sched.source.lhs, *_accesses(sched.source.rhs)]
    for a in assignments(sched.stmt):
        found += [a.lhs, *_accesses(a.rhs)]
    for r in sched.relations:
        if isinstance(r, Communicate):
            assert all(isinstance(t, dt.TensorVar) for t in r.tensors)
        if isinstance(r, Precompute):
            found += _accesses(r.expr)
            assert isinstance(r.workspace, dt.TensorVar)
    assert found and all(type(a.tensor) is dt.TensorVar for a in found)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_built_schedules_and_plans_hold_only_vars(data: st.DataObject) -> None:
    drawn = data.draw(statements())
    sched, bindings, _ = data.draw(schedules(drawn.output.schedule()))
    _no_tensor_in_ir(sched)
    distributed, binds = data.draw(machine_schedules(drawn.output.schedule()))
    _no_tensor_in_ir(distributed)
    for s, b in ((sched, bindings), (distributed, binds)):
        try:
            plan = s.compile(**b)
        except dt.DistalError:
            continue
        assert all(type(t.tensor) is dt.TensorVar for t in plan.tensors)
        for g in plan.groups:
            assert all(type(t) is dt.TensorVar for t in g.body.tensors)


def test_recorded_statements_do_not_keep_dropped_tensors_alive() -> None:
    import weakref

    A, B = dt.Tensor("A", (2,)), dt.Tensor("B", (2,))
    A[i] = B[i]
    B[i] = A[i] * 2  # each statement reads the other's output
    gone = weakref.ref(A), weakref.ref(B)
    del A, B
    gc.collect()
    assert [r() for r in gone] == [None, None]
