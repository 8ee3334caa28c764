"""Tensors with a format live on Legate as their format places them; plans read and write them in place."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.runtime import _store, _tensor_storage
from distal.runtime._tensor_storage import FormatStore

pytestmark = pytest.mark.legate

M22 = dt.Machine(dt.Grid(2, 2))
M222 = dt.Machine(dt.Grid(2, 2, 2))
M2 = dt.Machine(dt.Grid(2))
M3 = dt.Machine(dt.Grid(3))
M4 = dt.Machine(dt.Grid(4))
MH = dt.Machine(dt.Grid(2, 2), dt.Grid(2))


@pytest.fixture(scope="module", autouse=True)
def legate() -> rt.MachineInfo:
    return rt.ensure_started()


def _data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


def _matmul(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, machine: dt.Machine) -> dt.Schedule:
    i, j, k = dt.index_vars("i j k")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], machine)
            .communicate([A, B, C], jo).substitute([ii, ji, k], dt.leaf.GEMM))


# -- placement ------------------------------------------------------------------------------


def test_from_array_places_at_once_when_legate_runs() -> None:
    a = _data((5, 7))
    B = dt.Tensor.from_array("B", a, dt.Format("xy -> xy", M22))
    assert isinstance(B.storage, FormatStore) and B.on_legate
    assert np.array_equal(B.to_numpy(), a)


@pytest.mark.parametrize(("spec", "machine", "shape"), [
    ("xy -> xy", M22, (5, 7)), ("xy -> x*", M22, (5, 3)), ("xy -> xy0", M222, (4, 5)), ("xy -> *y", M22, (3, 3)),
    ("xy -> x", M4, (7, 2)), (["xy -> xy", "xy -> x"], MH, (5, 7)), (["xy -> x*", "xy -> 1"], MH, (6, 3)),
    ("x -> x", M3, (7,)), ("x -> 0", M2, (5,)),
])
def test_from_array_blocks_hold_what_the_format_says(spec: object, machine: dt.Machine,
                                                     shape: tuple[int, ...]) -> None:
    fmt = dt.Format(spec, machine)  # type: ignore[arg-type]
    a = _data(shape, 1)
    T = dt.Tensor.from_array("T", a, fmt)
    held = T.storage
    assert isinstance(held, FormatStore)
    blocks = held.device_blocks()
    lay = held.layout
    assert set(blocks) == set(lay.holders())
    for color, bounds in fmt.tiles(shape):
        tile = a[tuple(slice(lo, hi) for lo, hi in bounds)]
        for p in fmt.owners(color):
            off = lay.offset(p)
            pos = [lay.positions()[d][lo:hi] - off[d] for d, (lo, hi) in enumerate(bounds)]
            assert np.array_equal(blocks[p][np.ix_(*pos)], tile)
    sizes = fmt.local_size(shape)
    for p, block in blocks.items():
        assert np.count_nonzero(block) == sizes[p]  # the rest of a block is zero padding


def test_placement_launches_run_on_the_bound_processors(monkeypatch: pytest.MonkeyPatch) -> None:
    """One launch per holding device, pinned to the CPU Machine.bind gives it (a broadcast copy too)."""
    calls: list[tuple[tuple[int, ...], int]] = []
    real = _tensor_storage.point_launch

    def spy(key: int, args: Any, point: tuple[int, ...], processor: int, target: str = "cpu") -> None:
        calls.append((tuple(point), processor))
        real(key, args, point, processor, target)

    monkeypatch.setattr(_tensor_storage, "point_launch", spy)
    fmt = dt.Format("xy -> x*", M22)
    dt.Tensor.from_array("T", _data((4, 4)), fmt)
    binding = M22.bind(rt.processor_count("cpu"))
    assert sorted(calls) == sorted((d, binding[d]) for d in M22.coords())
    calls.clear()
    dt.Tensor.from_array("F", _data((4, 4)), dt.Format("xy -> xy1", M222))
    binding = M222.bind(rt.processor_count("cpu"))
    assert sorted(calls) == sorted((d, binding[d]) for d in M222.coords() if d[2] == 1)


def test_from_array_does_not_start_legate_in_a_compiler_session() -> None:
    code = (
        "import sys, numpy as np, distal as dt\n"
        "m = dt.Machine(dt.Grid(2, 2))\n"
        "B = dt.Tensor.from_array('B', np.ones((4, 4)), dt.Format('xy -> xy', m))\n"
        "assert not B.on_legate and 'legate' not in sys.modules, sorted(k for k in sys.modules if 'legate' in k)\n"
        "i, j = dt.index_vars('i j'); A = dt.Tensor('A', (4, 4)); A[i, j] = B[i, j] * 2\n"
        "A.schedule().evaluate(backend='reference')\n"
        "assert 'legate' not in sys.modules and (A.to_numpy() == 2).all()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_tensor_made_before_legate_ran_is_placed_at_its_first_use() -> None:
    a = _data((6, 5))
    B = dt.Tensor("B", (6, 5), dt.Format("xy -> xy", M22))
    B.set_array(a)  # host data, like from_array before Legate started
    assert not B.on_legate
    C = dt.Tensor.from_array("C", _data((5, 6), 2), dt.Format("xy -> xy", M22))
    A = dt.Tensor("A", (6, 6), dt.Format("xy -> xy", M22))
    _matmul(A, B, C, M22).evaluate()
    assert isinstance(B.storage, FormatStore) and B.storage.format == B.format
    np.testing.assert_allclose(A.to_numpy(), a @ C.to_numpy(), rtol=1e-12)


# -- plans on placed tensors ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 5, 6), (5, 7, 3), (2, 3, 2)])
def test_a_plan_reads_and_writes_placed_tensors_in_place(moves: list[str],
                                                         shape: tuple[int, int, int]) -> None:
    n, k, m = shape
    b, c = _data((n, k), 3), _data((k, m), 4)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> x*", M22))
    C = dt.Tensor.from_array("C", c, dt.Format("xy -> *y", M22))
    A = dt.Tensor("A", (n, m), dt.Format("xy -> xy", M22))
    sched = _matmul(A, B, C, M22)
    moves.clear()
    sched.evaluate()
    assert moves == []
    assert isinstance(A.storage, FormatStore) and A.storage.format == A.format
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12)


def test_the_same_plan_run_twice(moves: list[str]) -> None:
    b, c = _data((6, 4), 5), _data((4, 6), 6)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> x*", M22))
    C = dt.Tensor.from_array("C", c, dt.Format("xy -> *y", M22))
    A = dt.Tensor("A", (6, 6), dt.Format("xy -> xy", M22))
    plan = _matmul(A, B, C, M22).compile()
    moves.clear()
    plan.run()
    first = A.storage
    plan.run()
    assert moves == []
    assert A.storage is not first
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12)


def test_an_accumulating_plan_updates_the_blocks_in_place(moves: list[str]) -> None:
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    a0, b = _data((5, 5), 7), _data((5, 5), 8)
    A = dt.Tensor.from_array("A", a0, dt.Format("xy -> xy", M22))
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy", M22))
    A[i, j] += B[i, j] * 2  # type: ignore[misc]
    sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], M22)
    moves.clear()
    sched.evaluate()
    sched.evaluate()
    assert moves == []
    np.testing.assert_allclose(A.to_numpy(), a0 + 4 * b, rtol=1e-12)


def test_a_broadcast_output_is_replicated_and_a_face_output_stays_on_its_face() -> None:
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    b = _data((5, 3), 9)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy", M22))
    A = dt.Tensor("A", (5, 3), dt.Format("xy -> x*", M22))
    A[i, j] = B[i, j] + 1
    A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).evaluate()
    held = A.storage
    assert isinstance(held, FormatStore) and held.format == A.format
    blocks = held.device_blocks()
    assert len(blocks) == 4
    for (x, y), block in blocks.items():
        assert np.array_equal(block, blocks[(x, 1 - y)])
    np.testing.assert_allclose(A.to_numpy(), b + 1, rtol=1e-12)
    F = dt.Tensor("F", (5, 3), dt.Format("xy -> xy0", M222))
    F[i, j] = B[i, j] * 3
    F.schedule().distribute([i, j], [io, jo], [ii, ji], M22).evaluate()
    assert isinstance(F.storage, FormatStore)
    assert sorted(F.storage.device_blocks()) == [d for d in M222.coords() if d[2] == 0]
    np.testing.assert_allclose(F.to_numpy(), b * 3, rtol=1e-12)


@pytest.mark.parametrize(("b_spec", "a_spec", "machine"), [
    ("xy -> x", "xy -> x", M4),                                # rows over 4 read by a plan on 2x2
    (["xy -> xy", "xy -> x"], ["xy -> x*", "xy -> *"], MH),      # hierarchical
    ("xy -> yx", "xy -> y*", M22),                              # transposed blocks are read in place
    ("xy -> x*", "xy -> xy", M22),                               # rows: tiles that are not the plan's
])
def test_tiles_that_are_not_blocks_are_gathered_and_laid_out_by_launches(
        monkeypatch: pytest.MonkeyPatch, b_spec: object, a_spec: object, machine: dt.Machine) -> None:
    """Where a plan's tiles are not the format's blocks it reads a global store gathered by launches and its
    output is laid out again by launches; never through the host, and the answer is numpy's."""
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    b = _data((7, 5), 10)
    B = dt.Tensor.from_array("B", b, dt.Format(b_spec, machine))  # type: ignore[arg-type]
    A = dt.Tensor("A", (7, 5), dt.Format(a_spec, machine))  # type: ignore[arg-type]
    A[i, j] = B[i, j] * 2 - 1
    sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], M22)
    monkeypatch.setattr(FormatStore, "to_numpy", lambda self: pytest.fail("went through the host"))
    monkeypatch.setattr(_store, "to_numpy", lambda store: pytest.fail("went through the host"))
    sched.evaluate()
    monkeypatch.undo()
    assert isinstance(A.storage, FormatStore) and A.storage.format == A.format
    np.testing.assert_allclose(A.to_numpy(), b * 2 - 1, rtol=1e-12)


def test_a_redistributed_tensor_is_read_in_place(moves: list[str]) -> None:
    b, c = _data((6, 5), 11), _data((5, 6), 12)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> yx", M22))
    C = dt.Tensor.from_array("C", c, dt.Format("xy -> *y", M22))
    B.redistribute(dt.Format("xy -> x*", M22))
    A = dt.Tensor("A", (6, 6), dt.Format("xy -> xy", M22))
    sched = _matmul(A, B, C, M22)
    moves.clear()
    sched.evaluate()
    assert moves == []
    assert isinstance(B.storage, FormatStore) and str(B.storage.format) == "xy -> x*"
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12)


def test_unformatted_tensors_keep_one_store() -> None:
    i, j = dt.index_vars("i j")
    b = _data((4, 3), 13)
    B = dt.Tensor.from_array("B", b)
    A = dt.Tensor("A", (4, 3))
    A[i, j] = B[i, j] + B[i, j]
    A.schedule().evaluate()
    assert isinstance(A.storage, _tensor_storage.TensorStore)
    assert isinstance(B.storage, _tensor_storage.TensorStore)
    np.testing.assert_allclose(A.to_numpy(), 2 * b, rtol=1e-12)


def test_the_trap_sees_a_gather_where_tiles_are_not_blocks(moves: list[str]) -> None:
    """The traps above do catch data leaving the blocks: a plan whose tiles are not B's blocks gathers B."""
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    B = dt.Tensor.from_array("B", _data((4, 4), 14), dt.Format("xy -> xy", M22))  # point (p, q) reads block
    A = dt.Tensor("A", (4, 4), dt.Format("xy -> y", M4))  # (p // 2, q // 2); points (0, q), (1, q) write one
    A[i, j] = B[i, j]
    sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(4, 4)))
    moves.clear()
    sched.evaluate()
    assert moves.count("gather") == 1 and moves.count("from_store") == 1
    assert "to_numpy" not in moves and "from_numpy" not in moves


def test_composite_machine_dimensions_are_read_in_place(moves: list[str]) -> None:
    """Blocks keep one coordinate per machine dimension, so rows over Grid(4) (= 2x2 prime factors) are a
    launch's tiles; after a redistribution (run on the factor grid) too."""
    i, j, k = dt.index_vars("i j k")
    io, ii = dt.index_vars("io ii")
    b, c = _data((7, 5), 15), _data((5, 3), 16)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> *", M4))
    B.redistribute(dt.Format("xy -> x", M4))
    C = dt.Tensor.from_array("C", c, dt.Format("xy -> *", M4))
    A = dt.Tensor("A", (7, 3), dt.Format("xy -> x", M4))
    A[i, j] = B[i, k] * C[k, j]
    sched = A.schedule().distribute([i], [io], [ii], M4)
    moves.clear()
    sched.evaluate()
    assert moves == []
    assert A.storage.blocks.shape == (4, 2 * 3)
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12)


def test_a_tensor_copies_a_tensor() -> None:
    """From a placed tensor on Legate (no host copy); from one with host data, on the host."""
    a = _data((5, 4), 17)
    P = dt.Tensor.from_array("P", a, dt.Format("xy -> xy", M22))
    Q = dt.Tensor.from_array("Q", P, dt.Format("xy -> *y", M22))
    assert isinstance(Q.storage, FormatStore) and np.array_equal(Q.to_numpy(), a)
    H = dt.Tensor("H", (5, 4))
    H.set_array(a)
    R = dt.Tensor.from_array("R", H)
    assert not R.on_legate and np.array_equal(R.to_numpy(), a)
