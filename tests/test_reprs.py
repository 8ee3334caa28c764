"""Every `repr` of distal's public objects reads as English (issue 25).

A repr reads as English when it is one of two things:

* the Python expression that makes the object (`Grid(2, 2)`, `IndexVar('i')`,
  `DistType.parse('[32{x,y}512, 128]')`): evaluated with the public names of
  `distal` (also as `dt`) and of the subpackage that exports the class, it
  gives an equal object;
* a description `<Kind words>`: the class name, then words and the object's
  own notation on one line, with no field dump (`name=value`), no nested
  `<...>` or memory address, no hedged plural (`launch(es)`, `group(s)`), no
  number used as an adjective of a machine (`a 2 machine`), and `an` before
  a number read with a vowel (`an 8x8 grid`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import distal as dt
import distal.reduction as red
from distal import kernels

i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
gx = dt.Param("gx")


def _matmul(m: dt.Machine | None, n: int = 8) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    tiles = dt.Format("xy -> xy", m) if m is not None and m.levels == 1 and m.ndim == 2 else None
    A, B, C = (dt.Tensor(name, (n, n), tiles) for name in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def _plan(m: dt.Machine | None) -> Any:
    A, _, _ = _matmul(m)
    sched = A.schedule()
    if m is not None and m.ndim == 2:
        sched = sched.distribute([i, j], [io, jo], [ii, ji], m)
    elif m is not None:
        sched = sched.distribute([i], [io], [ii], m)
    return sched.compile()


def _tensor_on_legate_or_host() -> dt.Tensor:
    return dt.Tensor.from_array("D", np.arange(6.0).reshape(2, 3))


def _reduction_plan() -> Any:
    return red.plan_reduction([("node", 2, red.NIC), ("gpu", 4, red.NVSWITCH_A100)], range(8))


def _redist_program() -> Any:
    return dt.synthesize(dt.DistType.parse("[2{x}8, 8]"), dt.DistType.parse("[8, 2{x}8]"), dt.Mesh(x=4))


OBJECTS: dict[str, Callable[[], Any]] = {
    "Machine": lambda: dt.Machine(dt.Grid(2, 2)),
    "Machine, hierarchical": lambda: dt.Machine(dt.Grid(2, 2), dt.Grid(4, kind="gpu")),
    "Machine, symbolic": lambda: dt.Machine(dt.Grid(gx, 2)),
    "Grid": lambda: dt.Grid(3, names="i", kind="gpu", memory="zcmem"),
    "Format": lambda: dt.Format("xy -> xy*", dt.Machine(dt.Grid(2, 2, 2))),
    "Format, hierarchical": lambda: dt.Format(["xy -> xy", "xy -> x"], dt.Machine(dt.Grid(2, 2), dt.Grid(4))),
    "Distribution": lambda: dt.Distribution.parse("xy -> x*"),
    "Tensor without data": lambda: _matmul(dt.Machine(dt.Grid(2, 2)))[0],
    "Tensor with data": _tensor_on_legate_or_host,
    "Tensor, scalar": lambda: dt.Tensor("s", ()),
    "Tensor, symbolic": lambda: dt.Tensor("v", (dt.Param("n"), 3), dtype=np.float32),
    "IndexVar": lambda: i,
    "TensorVar": lambda: _matmul(dt.Machine(dt.Grid(2, 2)))[0].var,
    "Access": lambda: _matmul(None)[1][i, k],
    "Assignment": lambda: _matmul(None)[0].assignment,
    "Mul": lambda: _matmul(None)[0].assignment.rhs,  # type: ignore[union-attr]
    "Call": lambda: dt.sqrt(_matmul(None)[1][i, k]),
    "HostStorage": lambda: dt.Tensor.from_array("H", np.ones((2, 3))).storage,
    "Param": lambda: gx,
    "MachineDim": lambda: dt.Machine(dt.Grid(2, 3)).y,
    "Schedule": lambda: _matmul(None)[0].schedule(),
    "Schedule, distributed": lambda: _plan_schedule(),
    "Plan, one processor": lambda: _plan(None),
    "Plan, a line": lambda: _plan(dt.Machine(dt.Grid(2))),
    "Plan, a grid": lambda: _plan(dt.Machine(dt.Grid(2, 2))),
    "Plan, an 8x8 grid": lambda: _plan(dt.Machine(dt.Grid(8, 8))),
    "Plan, hierarchical": lambda: kernels.build("summa", dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2)),
                                                *_matmul(None)).compile(),
    "Leaf": lambda: dt.leaf.GEMM,
    "Mesh": lambda: dt.Mesh(x=4, y=2),
    "Mesh, keyword axis": lambda: dt.Mesh((("if", 2),)),
    "DistType": lambda: dt.DistType.parse("[32{x,y}512, 128]"),
    "DistType's Dim": lambda: dt.DistType.parse("[32{x,y}512, 128]").dims[0],
    "Mesh's FactorAxis": lambda: dt.Mesh(x=4, y=6).factors[3],
    "redistribution CollectiveProgram": _redist_program,
    "redistribution collective": lambda: _redist_program().steps[0],
    "System": lambda: red.a100_system(2),
    "Level": lambda: red.Level("gpu", 4, red.Link("ring", 5e10, 1e-6)),
    "reduction ReductionProgram": lambda: _reduction_plan().program,
    "reduction ReductionProgram, empty": lambda: red.ReductionProgram(()),
    "reduction Step": lambda: _reduction_plan().program.steps[1],
    "CollectiveKind": lambda: red.CollectiveKind.REDUCE_SCATTER,
    "ReductionPlan": _reduction_plan,
    "Ranked": lambda: _reduction_plan().best,
    "LoweredProgram": lambda: _reduction_plan().best.lowered,
    "Synthesis": lambda: red.synthesize_programs(red.SynthesisHierarchy(("gpu",), (4,), (1,))),
    "Placement": lambda: red.enumerate_placements(red.a100_system(2), [32], [0])[0],
}


def _plan_schedule() -> dt.Schedule:
    A, _, _ = _matmul(None)
    return A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2))).split(k, ko, ki, 4)


def _namespace(obj: object) -> dict[str, Any]:
    ns: dict[str, Any] = {"dt": dt, "gx": gx}
    ns.update({name: getattr(dt, name) for name in dt.__all__})
    package = importlib.import_module(".".join(type(obj).__module__.split(".")[:2]))
    ns.update({name: getattr(package, name) for name in getattr(package, "__all__", ())})
    return ns


def _english_problems(text: str, kind: str) -> list[str]:
    problems = []
    if not (text.startswith(f"<{kind} ") and text.endswith(">")):
        problems.append(f"not <{kind} ...>")
    body = text[1:-1]
    if "\n" in text:
        problems.append("several lines")
    if re.search(r"\w=\S", body):
        problems.append("a field dump (name=value)")
    if "<" in body or re.search(r"0x[0-9a-f]{6,}", body):
        problems.append("a nested <...> or an address")
    if re.search(r"\((s|es)\)", body):
        problems.append("a hedged plural")
    if re.search(r"\ban? [\dx ]+ machine\b", body):
        problems.append("a number as the adjective of a machine")
    if re.search(r"\ba (8|11\D|18\D)", body) or re.search(r"\ban [1-79]", body):
        problems.append("a or an before a number")
    return problems


@pytest.mark.parametrize("label", list(OBJECTS))
def test_repr_reads_as_english(label: str) -> None:
    obj = OBJECTS[label]()
    text = repr(obj)
    if text.startswith("<"):
        assert _english_problems(text, type(obj).__name__) == [], text
    else:
        assert eval(text, _namespace(obj)) == obj, text  # the expression that makes it


def test_the_english_check_finds_what_main_printed() -> None:
    old = "<Plan A(i,j) = B(i,k) * C(k,j): 1 launch(es) in 1 group(s) on a 2 machine, output A[4, 4] float64>"
    assert _english_problems(old, "Plan") == ["a hedged plural", "a number as the adjective of a machine"]
    assert _english_problems("<ReductionPlan best=Ranked(program=<ReductionProgram AllReduce>)>", "ReductionPlan") == [
        "a field dump (name=value)", "a nested <...> or an address"]
    assert _english_problems("<Plan x: on a 8x8 grid>", "Plan") == ["a or an before a number"]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: _plan(dt.Machine(dt.Grid(2))),
         "<Plan A(i,j) = B(i,k) * C(k,j): 1 launch in 1 group on a line of 2 cpu processors, output A (8x8 float64)>"),
        (lambda: _plan(None), "<Plan A(i,j) = B(i,k) * C(k,j): 1 launch in 1 group on one processor, "
                              "output A (8x8 float64)>"),
        (lambda: _matmul(dt.Machine(dt.Grid(2, 2)))[0],
         "<Tensor A: 8x8 float64, distributed xy -> xy over a 2x2 grid of cpu processors, no data yet "
         "(it reads as zeros)>"),
        (_tensor_on_legate_or_host, "<Tensor D: 2x3 float64, data on the host>"),
        (lambda: dt.Tensor("v", (dt.Param("n"), 3), dtype=np.float32),
         "<Tensor v: n x 3 float32, no data yet (it reads as zeros)>"),
        (lambda: dt.Mesh(x=4, y=2), "Mesh(x=4, y=2)"),
        (lambda: _matmul(dt.Machine(dt.Grid(2, 2)))[0].var, "<TensorVar A: 8x8 float64, format xy -> xy>"),
        (lambda: _matmul(None)[0].assignment, "<Assignment A(i,j) = B(i,k) * C(k,j)>"),
        (lambda: dt.Tensor.from_array("H", np.ones((2, 3))).storage, "<HostStorage 2x3 float64 on the host>"),
        (lambda: red.a100_system(2), "System((Level('node', 2, NIC), Level('gpu', 16, NVSWITCH_A100)))"),
        (lambda: red.ReductionProgram(()), "<ReductionProgram with no steps: nothing to reduce>"),
    ],
)
def test_reprs_say(make: Callable[[], Any], expected: str) -> None:
    assert repr(make()) == expected


def test_machine_in_words() -> None:
    assert [dt.Machine(*g).describe() for g in [
        (dt.Grid(1),), (dt.Grid(4),), (dt.Grid(2, 3),), (dt.Grid(8, 8),), (dt.Grid(11, 2),), (dt.Grid(2, 2, 2),),
        (dt.Grid(2, 2), dt.Grid(4, kind="gpu")), (dt.Grid(2), dt.Grid(2), dt.Grid(2, 2)),
        (dt.Grid(1), dt.Grid(1, kind="gpu", memory="zcmem")),
    ]] == [
        "one cpu processor", "a line of 4 cpu processors", "a 2x3 grid of cpu processors",
        "an 8x8 grid of cpu processors", "an 11x2 grid of cpu processors", "a 2x2x2 grid of cpu processors",
        "2x2 nodes of 4 gpu processors", "2 nodes of 2 groups of 2x2 cpu processors",
        "one node of one gpu processor (data in zcmem)",
    ]
