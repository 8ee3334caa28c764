"""A reduced output is reduced once per tile it owns, at the loop its `communicate` names (issue 34, item 1).

Sequential steps under the output's communicate loop (Johnson with B and C
fetched in two steps `kio` under `communicate(A, ko)`, Solomonik 2.5D's
Cannon steps, COSMA's steps) used to reduce each processor's tile once per
step: in the analysis (`stats()`'s reduced bytes and the traffic's "reduce"
transfers) and in the runtime (one Legate reduction per launch). The plan
now holds each processor's partial across the steps and reduces it once
after the last step (`distal.lower.reductions.HeldReduction`). Hand counts:
on `Grid(2,2,2)` with n = 8, A (`xy -> xy0`) is held by the processors with
z = 0; each of the four with z = 1 sends its 4x4 float64 tile (128 B) once,
512 B in all (1024 B before, with two steps).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal.api.plan import Plan

i, j, k, io, jo, ko, ii, ji, ki, kio, kii, kioo, kioi = dt.index_vars(
    "i j k io jo ko ii ji ki kio kii kioo kioi")

Z1 = {"(0,0,1)": 128, "(0,1,1)": 128, "(1,0,1)": 128, "(1,1,1)": 128}
HAND_8 = {"(0,0,0)": 0, "(0,1,0)": 0, "(1,0,0)": 0, "(1,1,0)": 0, **Z1}


def _operands(n: int, specs: tuple[str, str, str] | None, data: bool) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    m = dt.Machine(dt.Grid(2, 2, 2))
    rng = np.random.default_rng(n)
    fmts = [dt.Format(s, m) for s in specs] if specs is not None else [None, None, None]
    A = dt.Tensor("A", (n, n), fmts[0])
    if data:  # small integers: every order of summation gives numpy's result exactly
        B = dt.Tensor.from_array("B", rng.integers(-4, 5, (n, n)).astype(np.float64), fmts[1])
        C = dt.Tensor.from_array("C", rng.integers(-4, 5, (n, n)).astype(np.float64), fmts[2])
    else:
        B, C = dt.Tensor("B", (n, n), fmts[1]), dt.Tensor("C", (n, n), fmts[2])
    return A, B, C


def johnson_steps(n: int = 8, data: bool = False, a_at: Any = None, **options: Any) -> Plan:
    """Johnson on Grid(2,2,2) with communicate(A, ko) (or `a_at`) and B, C fetched in two steps kio under
    it, compiled with `options`."""
    A, B, C = _operands(n, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"), data)
    m = dt.Machine(dt.Grid(2, 2, 2))
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .split(ki, kio, kii, n // 4).reorder([kio, ii, ji, kii])
            .communicate(A, ko if a_at is None else a_at).communicate([B, C], kio).compile(**options))


def johnson_stages(n: int = 16, data: bool = False) -> Plan:
    """A user's schedule: steps kioo, kioi under ko, A communicated at kioo: reduced once per kioo value."""
    A, B, C = _operands(n, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"), data)
    m = dt.Machine(dt.Grid(2, 2, 2))
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .split(ki, kio, kii, n // 8).split(kio, kioo, kioi, 2).reorder([kioo, kioi, ii, ji, kii])
            .communicate(A, kioo).communicate([B, C], kioi).compile())


def library(name: str, n: int = 8, data: bool = False, **params: Any) -> Plan:
    A, B, C = _operands(n, None, data)
    return dt.kernels.build(name, dt.kernels.machine(name, 8), A, B, C, **params).compile()


def inner_product(data: bool = False) -> Plan:
    """A user's schedule: a scalar reduced over Grid(2), each processor's 8 elements in two steps iio."""
    iio, iii = dt.index_vars("iio iii")
    rng = np.random.default_rng(1)
    a = dt.Tensor("a", ())
    if data:
        b = dt.Tensor.from_array("b", rng.integers(-4, 5, 16).astype(np.float64))
        c = dt.Tensor.from_array("c", rng.integers(-4, 5, 16).astype(np.float64))
    else:
        b, c = dt.Tensor("b", (16,)), dt.Tensor("c", (16,))
    a[()] = b[i] * c[i]
    return (a.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2)))
            .split(ii, iio, iii, 4).reorder([iio, iii])
            .communicate(a, io).communicate([b, c], iio).compile())


def _reduce_transfers(plan: Plan) -> list[tuple[int | None, int]]:
    return sorted((t.launch, t.nbytes) for t in plan.analysis().traffic.transfers if t.kind == "reduce")


# -- the analysis: hand counts -------------------------------------------------------------------------------


def test_johnson_with_steps_reduces_each_tile_once() -> None:
    plan = johnson_steps()
    assert len(plan.groups[0].launches) == 2  # the two steps kio
    stats = plan.stats()
    assert stats["total_reduced_bytes"] == 512  # 1024 before: once per step
    assert stats["reduced_bytes"] == HAND_8
    # every processor with z = 1 sends its tile to its z = 0 holder once, after the last step (launch 1)
    assert _reduce_transfers(plan) == [(1, 128)] * 4
    assert "adds it into its tile once, after the last step" in plan.explain()
    assert "across step(s) kio" in stats["reduction"]["reason"]


@pytest.mark.parametrize("n", [8, 16])
def test_library_solomonik_reduces_each_tile_once(n: int) -> None:
    plan = library("solomonik", n)
    assert plan.machine is not None and plan.machine.full_shape == (2, 2, 2)
    assert len(plan.groups[0].launches) == 8  # two Cannon steps, each split by its rotation
    tile = (n // 2) ** 2 * 8
    assert plan.stats()["total_reduced_bytes"] == 4 * tile  # 512 B at n = 8 (1024 B before)
    assert plan.stats()["reduced_bytes"] == {p: (tile if p.endswith("1)") else 0) for p in HAND_8}
    assert [launch for launch, _ in _reduce_transfers(plan)] == [7] * 4


def test_library_cosma_with_steps_reduces_each_tile_once() -> None:
    plan = library("cosma", 8, steps=2)
    assert len(plan.groups[0].launches) == 2
    assert plan.stats()["total_reduced_bytes"] == 512  # 1024 before
    assert plan.stats()["reduced_bytes"] == HAND_8


def test_library_johnson_reduces_each_tile_once() -> None:
    plan = library("johnson", 8)
    assert plan.stats()["total_reduced_bytes"] == 512
    assert plan.stats()["reduced_bytes"] == HAND_8


def test_user_inner_product_with_steps_reduces_once() -> None:
    plan = inner_product()
    assert len(plan.groups[0].launches) == 2
    # a has no format: each processor sends its 8-byte partial to the global store once (32 B before)
    assert plan.stats()["total_reduced_bytes"] == 16
    assert _reduce_transfers(plan) == [(1, 8), (1, 8)]


def test_communicate_at_a_step_reduces_once_per_iteration_of_that_step() -> None:
    plan = johnson_stages()
    assert len(plan.groups[0].launches) == 4  # kioo x kioi
    # A communicated at kioo: held across kioi, reduced once per kioo value (two stages), 8x8 tiles
    assert plan.stats()["total_reduced_bytes"] == 2 * 4 * 512
    assert [launch for launch, _ in _reduce_transfers(plan)] == [1] * 4 + [3] * 4


def test_a_synthesized_reduction_is_counted_once_too() -> None:
    # reduction="synthesized": every point adds into its processor's partial, the program runs once at the end
    plan = johnson_steps(reduction="synthesized")
    assert plan.reduction is not None and plan.reduction.synthesized
    assert plan.stats()["total_reduced_bytes"] == 512  # 1024 before
    assert [launch for launch, _ in _reduce_transfers(plan)] == [1] * 4


def test_a_plan_without_repeated_tiles_keeps_one_legate_reduction_per_launch() -> None:
    # communicate(A, kio): the user asked for A per step; each launch reduces as it ends
    plan = johnson_steps(a_at=kio)
    assert plan.reduction is not None and plan.reduction.reason == "flat machine: one Legate reduction"
    assert plan.stats()["total_reduced_bytes"] == 1024


@pytest.mark.parametrize("make", [
    lambda: johnson_steps(data=True),
    lambda: library("solomonik", 16, data=True),
    lambda: johnson_stages(data=True),
], ids=["johnson-steps", "solomonik-16", "stages"])
def test_the_numpy_executor_holds_the_partials_too(make: Callable[[], Plan],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from distal.lower import numpy_exec

    plan = make()
    b, c = _operand_arrays(plan)
    folded: list[int] = []
    original = numpy_exec.partial_view

    def view(red: Any, flat: np.ndarray, box: Any) -> np.ndarray:
        folded.append(1)
        return original(red, flat, box)

    monkeypatch.setattr(numpy_exec, "partial_view", view)
    numpy_exec.run_numpy(plan)
    np.testing.assert_array_equal(plan.tensor(plan.output).to_numpy(), np.einsum("ik,kj->ij", b, c))
    assert folds_of(plan) * 8 <= len(folded)


def folds_of(plan: Plan) -> int:
    from distal.lower.reductions import HeldReduction

    assert isinstance(plan.reduction, HeldReduction)
    return len(plan.reduction.folds)


# -- on Legate: numpy's result, one reduction per tile ----------------------------------------------------------


@pytest.fixture
def reductions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Every launch the runtime submits for a plan with an argument reduced into (REDUCE_ADD): (how, points)."""
    from distal.runtime import _execute, _reduce
    from distal.runtime._launch import Privilege

    seen: list[tuple[str, int]] = []

    def watch(module: Any, name: str) -> None:
        original: Callable[..., None] = getattr(module, name)

        def wrapped(key: int, *args: Any, **kwargs: Any) -> None:
            operands = args[1] if name == "index_launch" else args[0]
            privileges = [getattr(a, "privilege", None) or (a[1] if isinstance(a, tuple) else None)
                          for a in operands]
            if Privilege.REDUCE_ADD in privileges:
                points = int(np.prod(args[0])) if name == "index_launch" else 1
                seen.append((name, points))
            original(key, *args, **kwargs)

        monkeypatch.setattr(module, name, wrapped)

    for module in (_execute, _reduce):
        watch(module, "index_launch")
        watch(module, "point_launch")
    yield seen


def _run(plan: Plan) -> tuple[np.ndarray, list[Any]]:
    from distal.runtime import run_plan

    trace: list[Any] = []
    run_plan(plan, trace=trace, wait=True)
    return plan.tensor(plan.output).to_numpy(), trace


def _operand_arrays(plan: Plan) -> list[np.ndarray]:
    return [plan.tensor(t).to_numpy() for t in plan.tensors if not t.output]


@pytest.mark.legate
@pytest.mark.parametrize("make", [
    lambda: johnson_steps(data=True),
    lambda: library("solomonik", 8, data=True),
    lambda: library("solomonik", 16, data=True),
    lambda: library("cosma", 8, data=True, steps=2),
], ids=["johnson-steps", "solomonik-8", "solomonik-16", "cosma-steps"])
def test_on_legate_each_tile_is_reduced_once(make: Callable[[], Plan], reductions: list[tuple[str, int]]) -> None:
    plan = make()
    b, c = _operand_arrays(plan)
    got, trace = _run(plan)
    np.testing.assert_array_equal(got, np.einsum("ik,kj->ij", b, c))
    # one fold: each of the 8 processors adds its held partial into its tile once, in a launch pinned to it
    # that reads and writes the tile (before: one REDUCE_ADD launch per step, and per rotation box for
    # Solomonik); no Legate reduction (REDUCE_ADD) at all: its reduction instances cost ~170 ms of system
    # time a run at n = 2048 (`distal.runtime._reduce.fold_held`)
    assert reductions == []
    assert [(record.tasks, record.launches) for record in trace] == [(8, 8)]


@pytest.mark.legate
def test_on_legate_a_stage_per_iteration_of_the_communicate_loop(reductions: list[tuple[str, int]]) -> None:
    plan = johnson_stages(data=True)
    b, c = _operand_arrays(plan)
    got, trace = _run(plan)
    np.testing.assert_array_equal(got, np.einsum("ik,kj->ij", b, c))
    assert reductions == []
    assert [(record.tasks, record.launches) for record in trace] == [(8, 8)] * 2


@pytest.mark.legate
def test_on_legate_an_inner_product_with_steps(reductions: list[tuple[str, int]]) -> None:
    plan = inner_product(data=True)
    b, c = _operand_arrays(plan)
    got, trace = _run(plan)
    np.testing.assert_array_equal(got.reshape(()), np.einsum("i,i->", b, c))
    assert reductions == []
    assert [(record.tasks, record.launches) for record in trace] == [(2, 2)]


@pytest.mark.legate
def test_on_legate_idle_processors_fold_pinned_once_each(reductions: list[tuple[str, int]]) -> None:
    # Grid(2, 2, 4), n = 9, 3 steps: the 4 processors with z = 3 have no work; the 12 others each reduce
    # their held tile once, in a launch pinned to them
    m = dt.Machine(dt.Grid(2, 2, 4))
    rng = np.random.default_rng(9)
    b, c = (rng.integers(-4, 5, (9, 9)).astype(np.float64) for _ in range(2))
    A = dt.Tensor("A", (9, 9), dt.Format("xy -> xy0", m))
    B = dt.Tensor.from_array("B", b, dt.Format("xz -> x0z", m))
    C = dt.Tensor.from_array("C", c, dt.Format("zy -> 0yz", m))
    plan = dt.kernels.build("cosma", m, A, B, C, steps=3).compile()
    got, trace = _run(plan)
    np.testing.assert_array_equal(got, b @ c)
    assert reductions == []
    assert [(record.tasks, record.launches) for record in trace] == [(12, 12)]


def _random_cases(count: int) -> list[tuple[int, tuple[int, int, int], int, bool, bool]]:
    rng = np.random.default_rng(34)
    grids = [(2, 2, 2), (2, 1, 2), (1, 2, 3), (2, 2, 3), (3, 1, 2)]
    return [(int(rng.integers(5, 14)), grids[int(rng.integers(len(grids)))], int(rng.integers(2, 4)),
             bool(rng.integers(2)), bool(rng.integers(2))) for _ in range(count)]


def _random_plan(n: int, grid: tuple[int, int, int], steps: int, placed: bool, accumulate: bool,
                 data: bool) -> tuple[Plan, np.ndarray, np.ndarray, np.ndarray]:
    """Johnson's cube with k's block fetched in `steps` chunks under communicate(A, ko)."""
    m = dt.Machine(dt.Grid(*grid))
    rng = np.random.default_rng(n * 100 + steps)
    b, c, a0 = (rng.integers(-4, 5, (n, n)).astype(np.float64) for _ in range(3))
    fmts = [dt.Format(s, m) for s in ("xy -> xy0", "xz -> x0z", "zy -> 0yz")] if placed else [None] * 3
    A = dt.Tensor.from_array("A", a0, fmts[0]) if data and accumulate else dt.Tensor("A", (n, n), fmts[0])
    B = dt.Tensor.from_array("B", b, fmts[1]) if data else dt.Tensor("B", (n, n), fmts[1])
    C = dt.Tensor.from_array("C", c, fmts[2]) if data else dt.Tensor("C", (n, n), fmts[2])
    if accumulate:
        A[i, j] += B[i, k] * C[k, j]
    else:
        A[i, j] = B[i, k] * C[k, j]
    kblock = -(-n // grid[2])
    chunk = max(1, -(-kblock // steps))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # idle processors, where the grid is larger than the blocks
        plan = (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
                .split(ki, kio, kii, chunk).reorder([kio, ii, ji, kii])
                .communicate(A, ko).communicate([B, C], kio).compile())
    return plan, b, c, (a0 if accumulate else np.zeros_like(a0))


def _hand_reduced(n: int, grid: tuple[int, int, int], placed: bool) -> int:
    """Each processor with work sends its A tile once: all of it (no format), or nothing where it holds it
    (z = 0 with `xy -> xy0`)."""
    total = 0
    blocks = [-(-n // g) for g in grid]
    for x in range(grid[0]):
        for y in range(grid[1]):
            for z in range(grid[2]):
                rows = max(min(n, (x + 1) * blocks[0]) - x * blocks[0], 0)
                cols = max(min(n, (y + 1) * blocks[1]) - y * blocks[1], 0)
                ks = max(min(n, (z + 1) * blocks[2]) - z * blocks[2], 0)
                if rows and cols and ks and not (placed and z == 0):
                    total += rows * cols * 8
    return total


@pytest.mark.parametrize("case", _random_cases(24))
def test_random_held_plans_count_each_tile_once(case: tuple[int, tuple[int, int, int], int, bool, bool]) -> None:
    n, grid, steps, placed, accumulate = case
    plan, _, _, _ = _random_plan(n, grid, steps, placed, accumulate, False)
    assert plan.stats()["total_reduced_bytes"] == _hand_reduced(n, grid, placed)


@pytest.mark.legate
def test_random_held_plans_on_legate_equal_einsum() -> None:
    held = 0
    for n, grid, steps, placed, accumulate in _random_cases(24):
        plan, b, c, a0 = _random_plan(n, grid, steps, placed, accumulate, True)
        from distal.lower.reductions import HeldReduction

        held += isinstance(plan.reduction, HeldReduction)
        got, _ = _run(plan)
        np.testing.assert_array_equal(got, a0 + np.einsum("ik,kj->ij", b, c), err_msg=str((n, grid, steps)))
    assert held >= 12  # most cases hold their partials (a single step per processor does not)


@pytest.mark.parametrize(("procs", "grid", "steps"), [(18, (3, 3, 2), 3), (32, (4, 4, 2), 4), (27, (3, 3, 3), 3)])
def test_library_solomonik_reduces_once_however_many_cannon_steps(procs: int, grid: tuple[int, int, int],
                                                                 steps: int) -> None:
    # n = 12: each processor with z != 0 sends its (12/gx x 12/gy) tile of A once; before, once per Cannon step
    A, B, C = _operands(12, None, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = dt.kernels.build("solomonik", dt.kernels.machine("solomonik", procs), A, B, C).compile()
    assert plan.machine is not None and plan.machine.full_shape == grid
    assert len({launch.lower[-1] for launch in plan.groups[0].launches}) == steps
    tile = (12 // grid[0]) * (12 // grid[1]) * 8
    assert plan.stats()["total_reduced_bytes"] == grid[0] * grid[1] * (grid[2] - 1) * tile


@pytest.mark.legate
@pytest.mark.parametrize("accumulate", [False, True])
def test_on_legate_a_held_plan_runs_again_and_is_replayed(accumulate: bool) -> None:
    # the partials are kept per finished plan and zeroed at each run: the second run makes no store, the
    # third replays its launches; every run gives numpy's result (`+=` adds it again each time)
    from distal.runtime import _execute

    plan, b, c, a0 = _random_plan(8, (2, 2, 2), 2, True, accumulate, True)
    expected = a0.copy()
    for _ in range(3):
        plan.run()
        expected = (expected if accumulate else np.zeros_like(expected)) + b @ c
        np.testing.assert_array_equal(plan.tensor(plan.output).to_numpy(), expected)
    assert _execute.replay_of(_execute.executable_of(plan)) is not None


def test_the_memory_check_counts_the_held_partials() -> None:
    """A held reduction keeps one partial per processor (8 x A's 4x4 tile of float64 here) with the plan: the
    memory run() checks lists it among the stores."""
    from distal.lower.memory import plan_memory

    plan = johnson_steps()
    need = plan_memory(plan)
    held = [(what, n) for what, n in need.resident if what.startswith("partials of the held reduction")]
    assert held == [("partials of the held reduction into A (8 x [4, 4])", 8 * 4 * 4 * 8)]
