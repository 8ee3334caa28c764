"""The finished plan (`distal.lower.executable`): frozen, cached per plan, processors and configuration, and
the only part of lowering (with `distal.lower.task_graph`) that the runtime modules import."""

from __future__ import annotations

import ast
import dataclasses
import gc
import importlib.util
import weakref
from dataclasses import dataclass
from pathlib import Path
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


# -- what the runtime imports --------------------------------------------------------------------------

RUNTIME = Path(importlib.util.find_spec("distal.runtime").origin).parent  # type: ignore[arg-type, union-attr]
OTHERS = {"_redistribute.py", "_factor_grid.py", "_tensor_storage.py", "_holders.py", "_interop.py",
          "_tensor_data.py"}  # the formatted data's modules (their own test)
ALLOWED = ("distal.errors", "distal.host", "distal.machine", "distal.format", "distal.notation.storage",
           "distal.tile_blas", "distal.contract", "distal.lower.task_graph", "distal.lower.executable")


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[str]:
    """Every module a file imports of distal (at any level, in functions too), but under `if TYPE_CHECKING:`."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None
              and (node.module == "distal" or node.module.startswith("distal."))):
            for a in node.names:  # `from distal import tile_blas` imports the module distal.tile_blas
                sub = f"{node.module}.{a.name}"
                out.append(sub if _is_module(sub) else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [m for m in out if m == "distal" or m.startswith("distal.")]


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("path", sorted(p for p in RUNTIME.glob("*.py") if p.name not in OTHERS), ids=str)
def test_the_runtime_imports_only_the_executables_types_of_the_compiler(path: Path) -> None:
    found = _imports(ast.parse(path.read_text()))
    wrong = [m for m in found
             if not (m == "distal.runtime" or m.startswith("distal.runtime."))
             and not any(m == a or m.startswith(a + ".") for a in ALLOWED)]
    assert not wrong, f"{path.name} imports {wrong}; of the compiler the runtime imports only {ALLOWED}"


def test_the_import_check_sees_function_level_imports_and_skips_type_checking_ones() -> None:
    code = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from distal.lower.grouping import Cut\n"
            "def f():\n    from distal.reduction.machines import machine_plan\n"
            "    from distal import tile_blas\n")
    assert _imports(ast.parse(code)) == ["distal.reduction.machines", "distal.tile_blas"]


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
