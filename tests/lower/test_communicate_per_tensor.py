"""communicate(T, v) is per tensor: each tensor gets the tile of its own communicate loop (paper 3.3, 6.2)."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal.api.plan import Plan

i, j, k, io, jo, ii, ji, ko, ki, kio, kii = dt.index_vars("i j k io jo ii ji ko ki kio kii")


def _matmul(seed: int, n: int = 6, depth: int = 12, m: int = 4) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, c = rng.standard_normal((n, depth)), rng.standard_normal((depth, m))
    A, B, C = dt.Tensor("A", (n, m)), dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C, b @ c


def _tiles(plan: Plan) -> dict[str, set[tuple[int, ...] | None]]:
    out: dict[str, set[tuple[int, ...] | None]] = {}
    for _, launch in plan.launches():
        for op in launch.operands:
            out.setdefault(plan.tensors[op.tensor].name, set()).add(op.tile)
    return out


def _split_twice(A: dt.Tensor) -> dt.Schedule:
    return (A.schedule().distribute([i], [io], [ii], dt.Grid(2))
            .split(k, ko, ki, 6).split(ki, kio, kii, 3).reorder([ko, kio, ii, j, kii]))


@pytest.mark.parametrize("backend", ["numpy", pytest.param("legate", marks=pytest.mark.legate)])
def test_each_tensor_gets_the_tile_of_its_own_loop(backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "legate":
        request.getfixturevalue("legate")
    A, B, C, expected = _matmul(0)
    plan = _split_twice(A).communicate(B, ko).communicate(C, kio).compile()
    # k (12) split into ko (2) x kio (2) x kii (3): B's tiles hold a ko chunk (6 columns),
    # C's a kio chunk (3 rows); one launch per (ko, kio)
    assert _tiles(plan)["B"] == {(3, 6)}
    assert _tiles(plan)["C"] == {(3, 4)}
    assert plan.launch_count() == 4
    # B's tile does not change with kio: the two launches of one ko read the same tile
    colors = {tuple(p.at(launch.lower) for p in launch.operands[1].projection or ()) for _, launch in plan.launches()}
    assert colors == {(0, 0), (0, 1)}
    plan.run(backend=backend)
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def test_the_other_way_round() -> None:
    A, B, C, expected = _matmul(1)
    plan = _split_twice(A).communicate(B, kio).communicate(C, ko).compile()
    assert _tiles(plan)["B"] == {(3, 3)}
    assert _tiles(plan)["C"] == {(6, 4)}
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def _summa(A: dt.Tensor, B_at: dt.IndexVar) -> Plan:
    B, C = (acc.tensor for acc in A.assignment.rhs.accesses())  # type: ignore[union-attr]
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Grid(2, 2))
            .split(k, ko, ki, 4).reorder([ko, ii, ji, ki])
            .communicate(A, jo).communicate(B, B_at).communicate(C, ko).compile())


@pytest.mark.parametrize("backend", ["numpy", pytest.param("legate", marks=pytest.mark.legate)])
def test_communicating_at_jo_instead_of_ko_changes_the_plan(backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "legate":
        request.getfixturevalue("legate")
    A, _, _, expected = _matmul(2, n=6, depth=12, m=6)
    at_ko, at_jo = _summa(A, ko), _summa(A, jo)
    assert _tiles(at_ko)["B"] == {(3, 4)}   # a k chunk per step
    assert _tiles(at_jo)["B"] == {(3, 12)}  # the whole row block, fetched once per task
    assert _tiles(at_ko)["C"] == _tiles(at_jo)["C"] == {(4, 3)}
    assert str(at_ko) != str(at_jo)
    for plan in (at_ko, at_jo):
        plan.run(backend=backend)
        np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def test_unnamed_tensors_get_the_tile_of_one_launch() -> None:
    A, B, _, expected = _matmul(3)
    plan = _split_twice(A).communicate(B, ko).compile()
    # steps stop at ko (the deepest communicate); C, not named, gets what one launch needs
    assert plan.launch_count() == 2
    assert _tiles(plan)["C"] == {(6, 4)}
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
