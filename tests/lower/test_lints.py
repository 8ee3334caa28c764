"""Performance lints (issue 27 item 3): each trap is a DistalPerformanceWarning at compile, kept in
plan.lints and stats()["warnings"], shown by explain(), and silenceable; docs/reference.md lists them."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import distal as dt
from distal.api.plan import Plan
from distal.lower.lints import CODES

i, j, k = dt.index_vars("i j k")
io, jo, ko, ii, ji, ki, kos = dt.index_vars("io jo ko ii ji ki kos")
REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def _matmul(n: int, m: dt.Machine | None) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    f = dt.Format("xy -> xy", m) if m is not None else None
    A, B, C = dt.Tensor("A", (n, n), f), dt.Tensor("B", (n, n), f), dt.Tensor("C", (n, n), f)
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def _summa_base(n: int = 8) -> tuple[dt.Schedule, tuple[dt.Tensor, ...]]:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _matmul(n, m)
    s = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 2).reorder([ko, ii, ji, ki])
    return s, (A, B, C)


def _compile(sched: dt.Schedule) -> tuple[Plan, list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plan = sched.compile()
    return plan, [str(w.message) for w in seen if issubclass(w.category, dt.DistalPerformanceWarning)]


def _check(sched: dt.Schedule, code: str, *fragments: str) -> Plan:
    plan, messages = _compile(sched)
    assert [lint.code for lint in plan.lints] == [code]
    (message,) = messages
    assert message.endswith(f"[{code}]")
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert plan.stats()["warnings"][0] == message
    assert f"  warning: {message}" in plan.explain()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # silenced by category, nothing else is raised
        warnings.simplefilter("ignore", dt.DistalPerformanceWarning)
        sched.compile()
    return plan


def test_communicate_at_a_loop_of_the_leaf() -> None:
    s, (A, B, C) = _summa_base()
    sched = s.communicate(A, jo).communicate([B, C], ki).substitute([ii, ji, ki], dt.leaf.GEMM)
    plan = _check(sched, "communicate-in-leaf", "communicate({B, C}, ki): ki is a loop of the GEMM leaf",
                  "128 launch(es)", "B 1x1", "communicate B, C at ko, the innermost loop outside the leaf")
    assert plan.launch_count() == 128


def test_rotate_by_loops_that_are_not_distributed() -> None:
    A, _, _ = _matmul(8, None)
    sched = (A.schedule().divide(i, io, ii, 2).divide(j, jo, ji, 2).reorder([io, jo, ii, ji])
             .divide(k, ko, ki, 2).reorder([ko, ii, ji, ki]).rotate(ko, [io, jo], kos))
    _check(sched, "rotate-undistributed", "io, jo are not distributed",
           "only changes the order of ko's iterations inside each task", "distribute io, jo")


def test_a_bare_distribute_next_to_a_machine_makes_the_machine_of_extents() -> None:
    s, (A, B, C) = _summa_base()
    sched = s.communicate(A, jo).communicate([B, C], ko).distribute([ko]).substitute([ii, ji, ki], dt.leaf.GEMM)
    plan = _check(sched, "machine-from-extents",
                  "distribute([ko]) names no machine, so the plan's machine is made of the distributed loops' "
                  "extents, Machine(Grid(2, 2, 4)), not the grid of distribute({io, jo}, Grid(2, 2))",
                  "the formats of A, B, C are on Machine(Grid(2, 2)) and place nothing on it",
                  "or drop distribute([ko])")
    assert plan.machine == dt.Machine(dt.Grid(2, 2, 4))


def test_a_machine_larger_than_the_problem_leaves_processors_idle() -> None:
    m = dt.Machine(dt.Grid(16, 16))
    A, _, _ = _matmul(8, m)
    _check(A.schedule().distribute([i, j], [io, jo], [ii, ji], m), "idle-processors",
           "192 of 256 processors of Machine(Grid(16, 16)) (three quarters) run no launch point",
           "a machine of shape (8, 8) does the same work")


def test_a_machine_dimension_no_loop_runs_along_leaves_processors_idle() -> None:
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    x = dt.Tensor("x", (8,), dt.Format(["x -> x", "x -> *"], m))
    y = dt.Tensor("y", (8,), dt.Format(["x -> x", "x -> *"], m))
    y[i] = x[i]
    _check(y.schedule().distribute([i], [io], [ii], m), "idle-processors",
           "2 of 4 processors", "no distributed loop runs along x@1")


def test_a_plan_without_traps_has_no_lints() -> None:
    s, (A, B, C) = _summa_base()
    plan, messages = _compile(s.communicate(A, jo).communicate([B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM))
    assert plan.lints == () and messages == []
    assert plan.stats()["warnings"] == []


def test_every_lint_is_in_the_reference_table() -> None:
    text = REFERENCE.read_text()
    section = text[text.index("### Performance lints"):]
    section = section[:section.index("\n#", 1)]
    assert set(re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE)) == set(CODES)
    tests = Path(__file__).read_text()  # and each has a test above
    assert all(f'"{code}"' in tests for code in CODES)


def test_two_communicates_of_one_tensor_are_refused_saying_what_each_does() -> None:
    s, (_, B, _) = _summa_base()
    with pytest.raises(dt.ScheduleError) as err:
        s.communicate(B, jo).communicate(B, ko)
    assert str(err.value).startswith(
        "communicate: expected one communicate loop per tensor, but B is already communicated at jo and would "
        "also be at ko (a tensor's data moves at one granularity); keep one: communicate(B, jo) fetches B once "
        "per iteration of jo (fewer, larger transfers), communicate(B, ko) once per iteration of ko")
    with pytest.raises(dt.ScheduleError, match="B is already communicated at ko and would also be at jo"):
        s.communicate([B], ko).communicate(B, jo)
