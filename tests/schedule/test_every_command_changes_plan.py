"""Every scheduling command changes the plan where docs/reference.md says it does ("What each command changes").

Each case compiles a schedule with and without one command and compares the
part of the plan the documentation says the command changes: the launches
(domains, operand tiles and projections), the tile each tensor gets, the
loops the task body runs, its leaf, or its parallel loops. A command that is
accepted and leaves that part unchanged fails its case.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import distal as dt

i, j, k, f, io, ii, jo, ji, ko, ki, kos, w1 = dt.index_vars("i j k f io ii jo ji ko ki kos w1")
M = dt.Machine(dt.Grid(2, 2))


def parts(plan: Any) -> dict[str, Any]:
    """The parts of a plan a command may change, as comparable values."""
    out: dict[str, Any] = {"launches": [], "tiles": {}, "loops": [], "leaf": [], "parallel": []}
    for g in plan.groups:
        out["loops"].append(str(g.body.stmt))
        out["leaf"].append(tuple(sorted(f"{sorted(map(str, vs))}:{leaf}" for vs, leaf in g.body.leaves)))
        out["parallel"].append(tuple((str(p.var), p.unit, p.mode) for p in getattr(g.body, "parallel", ())))
        for launch in g.launches:
            ops = tuple((op.tensor, op.privilege.value, op.tile, tuple(map(str, op.projection or ())))
                        for op in launch.operands)
            out["launches"].append((launch.lower, launch.upper, launch.pinned, ops))
            for op in launch.operands:
                out["tiles"].setdefault(plan.tensors[op.tensor].name, set()).add(op.tile)
    return out


def matmul() -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(4)
    A = dt.Tensor("A", (8, 8))
    B = dt.Tensor.from_array("B", rng.random((8, 8)))
    C = dt.Tensor.from_array("C", rng.random((8, 8)))
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def summa(s: dt.Schedule) -> dt.Schedule:
    return s.distribute([i, j], [io, jo], [ii, ji], M).split(k, ko, ki, 2).reorder([ko, ii, ji, ki])


S = dt.Schedule
Case = tuple[str, Callable[[S, Any, Any], S], Callable[[S, Any, Any], S], str]

# (command, schedule without it, the same with it, the part of the plan that must differ)
CASES: list[Case] = [
    ("divide", lambda s, B, C: s.distribute([i]), lambda s, B, C: s.divide(i, io, ii, 2).distribute([io]), "launches"),
    ("divide-in-task", lambda s, B, C: s, lambda s, B, C: s.divide(k, ko, ki, 2), "loops"),
    ("split", lambda s, B, C: s.distribute([i]), lambda s, B, C: s.split(i, io, ii, 2).distribute([io]), "launches"),
    ("split-in-task", lambda s, B, C: s, lambda s, B, C: s.split(k, ko, ki, 3), "loops"),
    ("reorder", lambda s, B, C: s, lambda s, B, C: s.reorder([k, i]), "loops"),
    ("reorder-steps", lambda s, B, C: summa(s).communicate(B, ko),
     lambda s, B, C: summa(s).reorder([ii, ko]).communicate(B, ko), "launches"),
    ("fuse", lambda s, B, C: s.distribute([i]), lambda s, B, C: s.fuse(i, j, f).distribute([f]), "launches"),
    ("fuse-in-task", lambda s, B, C: s, lambda s, B, C: s.fuse(i, j, f), "loops"),
    ("parallelize", lambda s, B, C: s.distribute([i]),
     lambda s, B, C: s.distribute([i]).parallelize(j, "cpu_vector"), "parallel"),
    ("parallelize-fallback", lambda s, B, C: s.distribute([i]),
     lambda s, B, C: s.distribute([i]).parallelize(j, "cpu_thread"), "parallel"),
    ("precompute", lambda s, B, C: s, lambda s, B, C: s.precompute(B[i, k] * C[k, j], [k], [w1]), "loops"),
    ("distribute", lambda s, B, C: s, lambda s, B, C: s.distribute([i]), "launches"),
    ("distribute-compound", lambda s, B, C: s, lambda s, B, C: s.distribute([i, j], [io, jo], [ii, ji], M),
     "launches"),
    # each tensor gets the tile of its own communicate loop (B at jo: a whole k row; unnamed: one step's tile)
    ("communicate", lambda s, B, C: summa(s).communicate(C, ko),
     lambda s, B, C: summa(s).communicate(C, ko).communicate(B, jo), "tiles"),
    ("communicate-steps", lambda s, B, C: summa(s), lambda s, B, C: summa(s).communicate([B, C], ko), "launches"),
    ("rotate", lambda s, B, C: summa(s).communicate([B, C], ko),
     lambda s, B, C: summa(s).rotate(ko, [io, jo], kos).communicate([B, C], kos), "launches"),
    ("rotate-in-task", lambda s, B, C: s.divide(k, ko, ki, 2),
     lambda s, B, C: s.divide(k, ko, ki, 2).rotate(ko, [i], kos), "loops"),
    ("substitute", lambda s, B, C: s.distribute([i], [io], [ii], dt.Machine(dt.Grid(2))),
     lambda s, B, C: s.distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).substitute([ii, j, k], dt.leaf.GEMM),
     "leaf"),
]

COMMANDS = {"divide", "split", "reorder", "fuse", "parallelize", "precompute", "distribute", "communicate", "rotate",
            "substitute"}


def test_every_command_has_a_case() -> None:
    assert {name.split("-")[0] for name, *_ in CASES} == COMMANDS


@pytest.mark.parametrize(("name", "without", "with_it", "part"), CASES, ids=[c[0] for c in CASES])
def test_the_command_changes_the_documented_part_of_the_plan(
        name: str, without: Callable[[S, Any, Any], S], with_it: Callable[[S, Any, Any], S], part: str) -> None:
    A, B, C = matmul()
    base, changed = without(A.schedule(), B, C), with_it(A.schedule(), B, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before, after = parts(base.compile()), parts(changed.compile())
    assert before[part] != after[part], f"{name}: {part} unchanged"
    changed.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_communicate_gives_each_tensor_the_tile_of_its_own_loop() -> None:
    """communicate(B, jo): B's tile holds all of k (fetched once per processor); C at ko: one k chunk per step."""
    A, B, C = matmul()
    tiles = parts(summa(A.schedule()).communicate(C, ko).communicate(B, jo).compile())["tiles"]
    assert tiles["B"] == {(4, 8)} and tiles["C"] == {(2, 4)}
    moved = parts(summa(A.schedule()).communicate(C, ko).communicate(B, ko).compile())["tiles"]
    assert moved["B"] == {(4, 2)} and moved["C"] == {(2, 4)}


def test_documented_no_change_reorder_to_the_current_order() -> None:
    """docs/reference.md: reorder to the order the loops already have changes nothing."""
    A, _, _ = matmul()
    s = A.schedule()
    assert parts(s.reorder([i, j]).compile()) == parts(s.compile())


@pytest.mark.parametrize("command", ["communicate", "distribute"])
def test_documented_no_change_annotating_a_loop_inside_the_tasks(command: str) -> None:
    """docs/reference.md: communicate or distribute at a loop outside the outermost nest (here under a where)
    changes no launch and no tile; the plan's notes say it runs inside the tasks."""
    A, B, C = matmul()
    s = A.schedule().distribute([i]).precompute(B[i, k] * C[k, j], [k], [w1])
    annotated = s.communicate(B, w1) if command == "communicate" else s.distribute([w1])
    plan = annotated.compile()
    assert parts(plan) == parts(s.compile())
    assert any("w1" in note and ("inside the tasks" in note or "whole task" in note) for note in plan.notes)
