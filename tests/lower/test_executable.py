"""The finished plan (`distal.lower.executable`): frozen, cached per plan, processors and configuration, and
the only part of lowering (with `distal.lower.task_graph`) that the runtime modules import."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from dataclasses import dataclass
from types import MappingProxyType

import pytest

import distal as dt
from distal.lower.executable import (
    CollectiveStep,
    Executable,
    InPlaceViews,
    ReductionRun,
    TaskGrouping,
    analysis_of,
    configuration,
    finalize,
)
from distal.lower.grouping import ENV, plan_tasks

i, j, k = dt.index_vars("i j k")
io, ii, jo, ji, ko, ki = dt.index_vars("io ii jo ji ko ki")


def _copy(points: int = 4, n: int = 16) -> dt.Plan:
    """y(i) = x(i) on Grid(points), both laid out x -> x."""
    m = dt.Machine(dt.Grid(points))
    x = dt.Tensor("x", (n,), dt.Format("x -> x", m))
    y = dt.Tensor("y", (n,), dt.Format("x -> x", m))
    y[i] = x[i]
    return y.schedule().distribute([i], [io], [ii], m).compile()


def _johnson() -> dt.Plan:
    """Johnson's matrix product on 2x2x2 with a synthesized reduction over ko."""
    m = dt.Machine(dt.Grid(2, 2, 2))
    A, B, C = (dt.Tensor(x, (8, 8)) for x in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .communicate([A, B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM)).compile(reduction="synthesized")


def test_the_executable_is_frozen() -> None:
    exe = finalize(_copy(), 2)
    assert isinstance(exe, Executable)
    with pytest.raises(dataclasses.FrozenInstanceError):
        exe.grouping = False  # type: ignore[misc]
    assert isinstance(exe.binding, MappingProxyType)
    assert isinstance(exe.whole, MappingProxyType) and isinstance(exe.parts, MappingProxyType)
    for found in exe.whole.values():
        assert isinstance(found, TaskGrouping) and isinstance(found.members, MappingProxyType)
    views = [v for v in exe.views if v is not None]
    assert views and all(isinstance(v, InPlaceViews) and isinstance(v.views, MappingProxyType) for v in views)


def test_finalize_is_cached_per_plan_processors_and_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    plan = _copy()
    exe = finalize(plan, 2)
    assert finalize(plan, 2) is exe
    assert finalize(plan, 4) is not exe and finalize(plan, 4).processors == 4
    assert finalize(dataclasses.replace(plan), 2) is not exe  # another plan (by identity), finished again
    assert exe.configuration == configuration(plan, 2) and exe.grouping
    monkeypatch.setenv(ENV, "0")
    off = finalize(plan, 2)
    assert off is not exe and not off.grouping and not off.whole and not off.parts
    monkeypatch.setenv(ENV, "1")
    assert finalize(plan, 2) is exe


def test_the_analysis_is_cached_with_it() -> None:
    plan = _copy()
    assert analysis_of(plan) is analysis_of(plan)
    assert analysis_of(plan, 2) is analysis_of(plan, 2)


def test_a_dropped_plan_is_freed() -> None:
    plan = _copy()
    exe = weakref.ref(finalize(plan, 2))
    held = weakref.ref(plan)
    del plan
    gc.collect()
    assert held() is None and exe() is None


def test_grouped_launches_are_what_explain_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    plan = _copy(points=8, n=32)
    exe = finalize(plan, 2)
    counted = plan_tasks(plan, 2)
    for (_, n), found in exe.whole.items():
        assert found.groups.tasks == counted[n].tasks == 2
    assert sorted(exe.binding.values()) == [0] * 4 + [1] * 4


def test_a_synthesized_reduction_carries_its_program_as_plain_steps() -> None:
    plan = _johnson()
    exe = finalize(plan, 2)
    red = plan.reduction
    assert red is not None and exe.reduction is red and exe.partials is not None
    program = exe.program
    assert isinstance(program, ReductionRun) and program.devices == 8
    assert all(isinstance(s, CollectiveStep) for s in program.steps)
    assert tuple(str(s) for s in program.steps) == red.steps  # as explain() prints them
    assert exe.views[red.tensor] is None  # its launches write partials, not the output's blocks
    launch = plan.groups[0].launches[0]
    ran = exe.launch(launch)
    assert [op for op in ran.operands if op.tensor == red.tensor] == [exe.partials]


@dataclass(frozen=True)
class _Runtime:
    sysmem_mb: int
    cpus: int = 2


def test_the_memory_check_goes_through_the_executable() -> None:
    A, B, C = dt.Tensor("A", (200000, 200000)), dt.Tensor("B", (200000,)), dt.Tensor("C", (200000,))
    A[i, j] = B[i] * C[j]
    plan = A.schedule().compile()
    with pytest.raises(dt.OutOfMemory):
        finalize(plan, 2).check_memory(plan, _Runtime(3000))


# What the runtime imports of the compiler: tests/test_layers.py (runtime_imports_of_the_compiler).


def test_a_dropped_plan_with_an_analysis_is_freed() -> None:
    plan = _johnson()
    analysis_of(plan)
    finalize(plan, 2)
    held = weakref.ref(plan)
    del plan
    gc.collect()
    assert held() is None


def test_a_plan_whose_memory_was_counted_is_freed() -> None:
    A, B, C = dt.Tensor("A", (20000, 20000)), dt.Tensor("B", (20000,)), dt.Tensor("C", (20000,))
    A[i, j] = B[i] * C[j]
    plan = A.schedule().compile()
    finalize(plan, 2).check_memory(plan, _Runtime(4000))  # fits, but only the counted need says so
    held = weakref.ref(plan)
    del plan, A, B, C
    gc.collect()
    assert held() is None
