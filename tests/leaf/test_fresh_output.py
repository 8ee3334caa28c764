"""`=` outputs written by their first step: `TaskBody.run_fresh` without a zero fill where none is needed.

The first launch of an `=` plan may get the output's tiles unwritten (on
Legate: a new store, `runtime._fresh_output.first_launch_writes`). A task body
then writes the leaf's result straight into a tile its first step covers
whole, and zero-fills the tile first only where a step covers part of it (or
reads it, or runs on a thread pool). The NumPy executor takes the same path
(`numpy_exec.first_launch_fresh`); these tests make its fresh output start
as NaN (a task that added into a fresh tile without zeroing it would give
NaN) and count the zero fills with a spy on `distal.lower.task_body.zero_fill`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal import kernels
from distal.api.plan import Plan
from distal.lower import numpy_exec, task_body
from distal.lower.device_standin import to_device
from distal.lower.steps import SliceStep
from tests._strategies import einsum_oracle, statements
from tests._strategies.machines import machine_schedules

i, j, k, l = dt.index_vars("i j k l")
io, ii, jo, ji, ko, ki, iio, iii = dt.index_vars("io ii jo ji ko ki iio iii")


@pytest.fixture
def fills(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, ...]]]:
    """The shapes of the tiles task bodies zero-filled (a spy on `task_body.zero_fill`)."""
    seen: list[tuple[int, ...]] = []
    original = task_body.zero_fill

    def spy(tile: Any) -> None:
        seen.append(tuple(tile.shape))
        original(tile)

    monkeypatch.setattr(task_body, "zero_fill", spy)
    yield seen


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """New `=` outputs of the NumPy executor start as NaN: a task that added into one without zeroing it gives NaN."""
    monkeypatch.setattr(numpy_exec, "unwritten", lambda shape, dtype: np.full(shape, np.nan, dtype=dtype))


def run_fresh_numpy(plan: Plan, device: Callable[[np.ndarray], Any] | None = None) -> bool:
    """Run `plan` with the NumPy executor (`run_numpy`); returns whether its first launch wrote the output
    unwritten (`first_launch_fresh`: then the output started as NaN and that launch's points ran `run_fresh`)."""
    fresh = numpy_exec.first_launch_fresh(plan)
    numpy_exec.run_numpy(plan, device)
    return fresh


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


_LIBRARY = [  # (algorithm, its statement, operand shapes, output shape, processors, first launch writes fresh)
    ("ttm", "ijk,kl->ijl", [(9, 6, 5), (5, 7)], (9, 6, 7), 2, True),
    ("ttv", "ijk,k->ij", [(9, 6, 5), (5,)], (9, 6), 2, True),
    ("mttkrp", "ijk,jl,kl->il", [(9, 6, 5), (6, 3), (5, 3)], (9, 3), 2, True),
    ("summa", "ik,kj->ij", [(9, 7), (7, 8)], (9, 8), 4, True),
    ("cannon", "ik,kj->ij", [(8, 8), (8, 8)], (8, 8), 4, False),  # one point per launch: the output is filled
]


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
@pytest.mark.parametrize(("name", "spec", "shapes", "out_shape", "procs", "fresh"), _LIBRARY,
                         ids=[c[0] for c in _LIBRARY])
def test_library_plans_write_their_fresh_output_without_a_zero_fill(
        fills: list[tuple[int, ...]], name: str, spec: str, shapes: list[tuple[int, ...]],
        out_shape: tuple[int, ...], procs: int, fresh: bool, device: bool) -> None:
    rng = np.random.default_rng(1)
    arrays = [rng.random(s) for s in shapes]
    ins = [dt.Tensor.from_array(x, a) for x, a in zip("BCD", arrays)]
    out = dt.Tensor("A", out_shape)
    plan = kernels.build(name, kernels.machine(name, procs), out, *ins).compile()
    assert run_fresh_numpy(plan, to_device if device else None) is fresh
    _close(out.to_numpy(), np.einsum(spec, *arrays))
    assert fills == []  # each task computes its whole tile in its first step (later launches add)
    plan.run(backend="numpy")  # the NumPy executor (zeros, then the body adds) agrees
    _close(out.to_numpy(), np.einsum(spec, *arrays))


def _gemm() -> tuple[dt.Tensor, dict[str, np.ndarray]]:
    rng = np.random.default_rng(2)
    data = {"B": rng.random((8, 48)), "C": rng.random((48, 5))}  # blocks large enough for slice mode
    B, C = (dt.Tensor.from_array(x, a) for x, a in data.items())
    A = dt.Tensor("A", (8, 5))
    A[i, j] = B[i, k] * C[k, j]
    return A, data


def test_a_reduction_split_over_steps_writes_in_its_first_step_then_adds(fills: list[tuple[int, ...]]) -> None:
    A, data = _gemm()
    m = dt.Machine(dt.Grid(2))
    sched = (A.schedule().distribute([i], [io], [ii], m).split(k, ko, ki, 16).reorder([io, ko, ii, j, ki])
             .substitute([ii, j, ki], dt.leaf.GEMM))
    plan = sched.compile()
    assert run_fresh_numpy(plan)
    _close(A.to_numpy(), data["B"] @ data["C"])
    assert fills == []
    assert plan.groups[0].body.leaf_calls["GEMM"] == 6  # 3 steps of k on each of 2 points


def test_a_first_step_over_part_of_the_tile_zero_fills_it_first(fills: list[tuple[int, ...]]) -> None:
    A, data = _gemm()
    m = dt.Machine(dt.Grid(2))
    sched = (A.schedule().distribute([i], [io], [ii], m).split(ii, iio, iii, 2).reorder([io, iio, iii, j, k])
             .substitute([iii, j, k], dt.leaf.GEMM))
    plan = sched.compile()
    assert run_fresh_numpy(plan)
    _close(A.to_numpy(), data["B"] @ data["C"])
    assert fills == [(4, 5), (4, 5)]  # one fill of each point's tile: its steps write two rows each
    fills.clear()
    assert run_fresh_numpy(plan)  # the points' kept programs decide the same
    _close(A.to_numpy(), data["B"] @ data["C"])
    assert fills == [(4, 5), (4, 5)]


def test_a_kept_program_writes_without_a_fill_on_later_fresh_runs(fills: list[tuple[int, ...]]) -> None:
    A, data = _gemm()
    plan = A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).substitute([ii, j, k], dt.leaf.GEMM)\
        .compile()
    for _ in range(3):
        assert run_fresh_numpy(plan)
        _close(A.to_numpy(), data["B"] @ data["C"])
    assert fills == []
    assert not plan.groups[0].body.walks


def test_an_undistributed_scaled_copy_writes_its_fresh_tile(fills: list[tuple[int, ...]]) -> None:
    body = _body_of("A(i,j) = B(i,j) * 2", (4, 3))
    tile = np.full((4, 3), np.nan)
    b = np.arange(12.0).reshape(4, 3)
    body.run_fresh((0,), 0, tile, b)
    np.testing.assert_array_equal(tile, b * 2)
    assert fills == []


def test_a_step_writes_only_a_whole_tile_it_does_not_read() -> None:
    tiles: list[Any] = [np.zeros((4, 2)), np.ones((4, 3)), np.ones((3, 2))]
    gemm = SliceStep(0, (Ellipsis,), True, np.dtype(float), dt.leaf.GEMM, ((1, (Ellipsis,)), (2, (Ellipsis,))),
                     None, "ab")
    writer = gemm.writing(tiles)
    assert writer is not None and not writer.accumulate and writer.uses(0) and writer.uses(2)
    part = SliceStep(0, (slice(0, 2), Ellipsis), True, np.dtype(float), dt.leaf.GEMM,
                     ((1, (slice(0, 2), Ellipsis)), (2, (Ellipsis,))), None, "ab")
    assert part.writing(tiles) is None  # rows 0-1 of 4
    reads_out = SliceStep(0, (Ellipsis,), True, np.dtype(float), dt.leaf.GEMM,
                          ((0, (Ellipsis,)), (2, (Ellipsis,))), None, "ab")
    assert reads_out.writing([np.zeros((2, 2)), None, np.ones((2, 2))]) is None


def _body_of(text: str, shape: tuple[int, ...]) -> Any:
    """The task body of `text` (over A and B of `shape`) compiled without a schedule."""
    A, B = dt.Tensor("A", shape), dt.Tensor.from_array("B", np.zeros(shape))
    dt.parse(text, A=A, B=B)
    return A.schedule().compile().groups[0].body


def test_run_fresh_refuses_a_position_outside_its_operands() -> None:
    body = _body_of("A(i,j) = B(i,j)", (2, 2))
    with pytest.raises(dt.DistalError, match="expected an output position below 2, but found 5"):
        body.run_fresh((0,), 5, np.zeros((2, 2)), np.zeros((2, 2)))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), device=st.booleans())
def test_random_distributed_plans_with_a_fresh_output_equal_einsum(data: st.DataObject, device: bool) -> None:
    drawn = data.draw(statements(max_extent=9))
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings = data.draw(machine_schedules(out.schedule()))
    drawn.reset()
    plan = sched.compile(**bindings)
    run_fresh_numpy(plan, to_device if device else None)
    _close(out.to_numpy(), expected)


def test_explain_says_which_tasks_write_their_fresh_tile_with_their_first_step() -> None:
    rng = np.random.default_rng(5)
    B, C = dt.Tensor.from_array("B", rng.random((8, 6, 5))), dt.Tensor.from_array("C", rng.random((5, 7)))
    ttm = kernels.build("ttm", kernels.machine("ttm", 2), dt.Tensor("A", (8, 6, 7)), B, C).compile().explain()
    assert "output starts at zero (a new store: where the first launch writes every output tile" in ttm
    assert "TTM the leaf's matmul of the reshaped tile" in ttm and "its one step per task writes the whole output " \
        "tile (= into a new output, no zero fill)" in ttm
    inner = kernels.build("innerprod", kernels.machine("innerprod", 2), dt.Tensor("a", ()), B, B).compile().explain()
    assert "writes the whole output tile (=" not in inner  # reduced into, not written
    A, _ = _gemm()
    parts = (A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).split(ii, iio, iii, 2)
             .reorder([io, iio, iii, j, k]).substitute([iii, j, k], dt.leaf.GEMM)).compile().explain()
    assert "output starts at zero" in parts and "writes the whole output tile (=" not in parts  # steps of two rows
    rng2 = np.random.default_rng(6)
    X, Y = (dt.Tensor.from_array(n, rng2.random((8, 8))) for n in "XY")
    for name, says in (("summa", True), ("cannon", False)):  # Cannon's first launch is one point per launch
        text = kernels.build(name, kernels.machine(name, 4), dt.Tensor("Z", (8, 8)), X, Y).compile().explain()
        assert ("its one step per task writes the whole output tile (=" in text) is says
