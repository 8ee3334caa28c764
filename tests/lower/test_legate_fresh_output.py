"""On Legate: an `=` plan's first launch writes its new output store, zero-filling a tile only where needed.

Spies count the two kinds of zero fill: `distal.lower.task_body.zero_fill`
(a task zeroing its tile or block before its steps add into it) and the
runtime's `fill` (a separate fill of the new store before the launches). A
task whose first step computes its whole output tile (TTM, TTV, MTTKRP,
SUMMA's first step of k) writes the leaf's result there with neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal.lower import task_body

pytestmark = pytest.mark.legate

i, j, k = dt.index_vars("i j k")
io, ii, iio, iii, ko, ki = dt.index_vars("io ii iio iii ko ki")


@pytest.fixture
def fills(legate: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """What was zero-filled: 'task' (tiles or blocks, by shape) and 'store' (the runtime's fill launches)."""
    from distal.runtime import _execute

    seen: dict[str, list[Any]] = {"task": [], "store": []}
    zero_fill, fill = task_body.zero_fill, _execute.fill

    def task_spy(tile: Any) -> None:
        seen["task"].append(tuple(tile.shape))
        zero_fill(tile)

    def store_spy(store: Any, value: Any, tile: Any = None) -> None:
        seen["store"].append(tuple(store.shape))
        fill(store, value, tile)

    monkeypatch.setattr(task_body, "zero_fill", task_spy)
    monkeypatch.setattr(_execute, "fill", store_spy)
    yield seen


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


_CASES = [  # (algorithm, its statement, operand shapes, output shape, processors, task fills, store fills)
    ("ttm", "ijk,kl->ijl", [(8, 6, 5), (5, 7)], (8, 6, 7), 2, 0, 0),
    ("ttv", "ijk,k->ij", [(8, 6, 5), (5,)], (8, 6), 2, 0, 0),
    ("mttkrp", "ijk,jl,kl->il", [(8, 6, 5), (6, 3), (5, 3)], (8, 3), 2, 0, 0),
    ("summa", "ik,kj->ij", [(8, 8), (8, 8)], (8, 8), 4, 0, 0),
    ("ttm", "ijk,kl->ijl", [(9, 6, 5), (5, 7)], (9, 6, 7), 2, 1, 0),  # the last block has padding: zeroed
    ("cannon", "ik,kj->ij", [(8, 8), (8, 8)], (8, 8), 4, 0, 1),  # one point per launch: the store is filled
    ("innerprod", "ijk,ijk->", [(8, 6, 5), (8, 6, 5)], (), 2, 0, 1),  # reduced into: the store starts at zero
]


@pytest.mark.parametrize(("name", "spec", "shapes", "out_shape", "procs", "task_fills", "store_fills"), _CASES)
def test_library_plans_on_legate_zero_fill_only_where_needed(
        fills: dict[str, list[Any]], name: str, spec: str, shapes: list[tuple[int, ...]],
        out_shape: tuple[int, ...], procs: int, task_fills: int, store_fills: int) -> None:
    from distal import runtime as rt

    rng = np.random.default_rng(3)
    arrays = [rng.random(s) for s in shapes]
    names = "aBCD" if name == "innerprod" else "ABCD"
    ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
    out = dt.Tensor(names[0], out_shape)
    plan = kernels.build(name, kernels.machine(name, procs), out, *ins).compile()
    for _ in range(2):  # the first run walks each point, the second replays its kept program
        fills["task"].clear()
        fills["store"].clear()
        plan.run()
        _close(out.to_numpy(), np.einsum(spec, *arrays))
        rt.fence()
        assert len(fills["task"]) == task_fills
        assert len(fills["store"]) == store_fills


def _gemm() -> tuple[dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(4)
    b, c = rng.random((8, 48)), rng.random((48, 5))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A = dt.Tensor("A", (8, 5))
    A[i, j] = B[i, k] * C[k, j]
    return A, b @ c


def test_a_reduction_split_over_a_tasks_steps_writes_first_then_adds(fills: dict[str, list[Any]]) -> None:
    A, expected = _gemm()
    sched = (A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).split(k, ko, ki, 16)
             .reorder([io, ko, ii, j, ki]).substitute([ii, j, ki], dt.leaf.GEMM))
    sched.evaluate()
    _close(A.to_numpy(), expected)
    assert fills == {"task": [], "store": []}


def test_a_first_step_over_part_of_its_tile_zero_fills_the_tile(fills: dict[str, list[Any]]) -> None:
    A, expected = _gemm()
    sched = (A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).split(ii, iio, iii, 2)
             .reorder([io, iio, iii, j, k]).substitute([iii, j, k], dt.leaf.GEMM))
    sched.evaluate()
    _close(A.to_numpy(), expected)
    assert sorted(fills["task"]) == [(4, 5), (4, 5)] and fills["store"] == []
