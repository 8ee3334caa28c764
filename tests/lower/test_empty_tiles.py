"""Empty tiles and empty steps are not launched and count zero (issue 27 item 2).

Extents that do not divide leave empty blocks: n = 9 over 4 processors gives
blocks of 3, the fourth empty; `divide(k, ko, ki, 9)` at n = 8 leaves the
ninth chunk empty. A launch point whose block is empty has no work: it is not
launched, so it is handed no tile (it used to get the tile its projection
wrapped to, another processor's) and explain() counts nothing for it. The
counts below are by hand, from what each processor holds under its format
and what its busy points read.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import distal as dt
from distal.api.plan import Plan

i, j, k = dt.index_vars("i j k")
io, jo, ko, ii, ji, ki, kos = dt.index_vars("io jo ko ii ji ki kos")
F64 = 8


def _blocks(n: int, g: int) -> list[int]:
    """The sizes of the g blocks of an extent n (blocks of ceil(n/g), the last ones smaller or empty)."""
    t = -(-n // g)
    return [max(0, min(t, n - x * t)) for x in range(g)]


def _operands(n: int, m: dt.Machine, formats: tuple[str, str, str], seed: int = 0) -> tuple[dt.Tensor, ...]:
    rng = np.random.default_rng(seed)
    A = dt.Tensor("A", (n, n), dt.Format(formats[0], m))
    B = dt.Tensor.from_array("B", rng.random((n, n)), dt.Format(formats[1], m))
    C = dt.Tensor.from_array("C", rng.random((n, n)), dt.Format(formats[2], m))
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


XY = ("xy -> xy",) * 3


def _summa(n: int, gx: int, gy: int, *, chunk: int | None = None, parts: int | None = None,
           seed: int = 0) -> tuple[dt.Schedule, tuple[dt.Tensor, ...]]:
    m = dt.Machine(dt.Grid(gx, gy))
    A, B, C = _operands(n, m, XY, seed)
    s = A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
    s = s.divide(k, ko, ki, parts) if parts is not None else s.split(k, ko, ki, chunk or 1)
    return (s.reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM)), (A, B, C)


def _cannon(n: int, gx: int, gy: int, seed: int = 0) -> tuple[dt.Schedule, tuple[dt.Tensor, ...]]:
    m = dt.Machine(dt.Grid(gx, gy))
    A, B, C = _operands(n, m, XY, seed)
    s = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).divide(k, ko, ki, m.x)
         .reorder([ko, ii, ji, ki]).rotate(ko, [io, jo], kos)
         .communicate(A, jo).communicate([B, C], kos).substitute([ii, ji, ki], dt.leaf.GEMM))
    return s, (A, B, C)


def _matmul_2d_by_hand(n: int, gx: int, gy: int) -> dict[str, int]:
    """Bytes each processor of a gx x gy grid receives in SUMMA or Cannon, all three matrices `xy -> xy`.

    (x, y) holds B's block (x, y) (rows by gx, k by gy) and C's block (x, y)
    (k by gx, columns by gy). If its A block is not empty it reads B's whole
    row block x and C's whole column block y once each; it receives what it
    does not hold. With an empty A block it does nothing.
    """
    rows, cols = _blocks(n, gx), _blocks(n, gy)
    out = {}
    for x in range(gx):
        for y in range(gy):
            busy = rows[x] > 0 and cols[y] > 0
            got = rows[x] * (n - cols[y]) + cols[y] * (n - rows[x]) if busy else 0
            out[f"({x},{y})"] = got * F64
    return out


def _no_point_has_an_empty_tile(plan: Plan) -> None:
    for _, launch in plan.launches():
        for point in launch.points():
            for op in launch.operands:
                box = op.box(point, plan.tensors[op.tensor].shape)
                assert all(lo < hi for lo, hi in box), (launch, point, op)


def test_summa_n9_on_4x4_receives_the_hand_count() -> None:
    # blocks of 3: processors in row 3 or column 3 hold empty blocks and do nothing; each of the
    # other 9 receives 2 blocks of B and 2 of C (3x3 each) = 36 elements. Main counted 3888 B.
    sched, _ = _summa(9, 4, 4, chunk=3)
    plan = sched.compile()
    data = plan.stats()
    assert data["received_bytes"] == _matmul_2d_by_hand(9, 4, 4)
    assert data["total_received_bytes"] == 9 * 36 * F64 == 2592
    assert sum(item["points"] for item in data["launches"]) == 3 * 9
    _no_point_has_an_empty_tile(plan)


def test_summa_with_k_divided_past_the_extent_launches_no_empty_step() -> None:
    # n = 8, k divided into 9 parts: chunks of 1, the ninth empty. 8 launches, not 9; each of the 4
    # processors receives a 4x4 block of B and of C: 1024 B in all (main: 1216 B, 9 launches).
    sched, _ = _summa(8, 2, 2, parts=9)
    plan = sched.compile()
    data = plan.stats()
    assert plan.launch_count() == 8
    assert data["total_received_bytes"] == 4 * 2 * 16 * F64 == 1024
    assert data["received_bytes"] == _matmul_2d_by_hand(8, 2, 2)
    assert any("4 of 36 launch point(s) have no work" in note for note in data["notes"])


def test_summa_with_k_divided_into_four_at_n9_on_4x4() -> None:
    # k in 4 parts of 3, the fourth empty: still 2592 B (main: 6048 B), and 3 launches
    sched, _ = _summa(9, 4, 4, parts=4)
    plan = sched.compile()
    assert plan.stats()["total_received_bytes"] == 2592
    assert plan.launch_count() == 3


def test_cannon_n9_on_4x4_receives_the_hand_count_and_skips_each_points_empty_step() -> None:
    # the rotation gives each busy processor the empty fourth k block at one of the 4 steps: 27 busy
    # points in all. Point (1,3) used to get A's tile (0,0) read-write (main: 6840 B received).
    sched, _ = _cannon(9, 4, 4)
    plan = sched.compile()
    data = plan.stats()
    assert data["received_bytes"] == _matmul_2d_by_hand(9, 4, 4)
    assert data["total_received_bytes"] == 2592
    assert sum(item["points"] for item in data["launches"]) == 27
    _no_point_has_an_empty_tile(plan)
    # no launch reduces into A: each point of a launch writes its own tile
    assert all(op.privilege is not dt.lower.Privilege.REDUCE_ADD
               for _, launch in plan.launches() for op in launch.operands)


def test_johnson_n9_on_4x4x4() -> None:
    # blocks of 3 along x, y, z: the 27 processors with x, y, z < 3 are busy. (x,y,z) reads B(x,z),
    # held by (x,0,z), and C(z,y), held by (0,y,z): 9 elements each when y != 0 (B) or x != 0 (C),
    # 18 of the 27 each; it reduces its 3x3 part of A(x,y) into (x,y,0) when z != 0 (18 of 27).
    m = dt.Machine(dt.Grid(4, 4, 4))
    A, B, C = _operands(9, m, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"))
    plan = dt.kernels.build("johnson", m, A, B, C).compile()
    data = plan.stats()
    assert data["total_received_bytes"] == (18 * 9 + 18 * 9) * F64 == 2592
    assert data["total_reduced_bytes"] == 18 * 9 * F64
    assert sum(item["points"] for item in data["launches"]) == 27
    idle = [p for p, b in data["peak_bytes"].items() if b == data["placement"]["per_processor"][p]]
    assert len(idle) == 64 - 27
    _no_point_has_an_empty_tile(plan)


def test_cosma_with_an_empty_k_block() -> None:
    # Grid(2, 2, 4), n = 9, 3 steps: i and j in blocks of 5 and 4, k in blocks of 3 (the fourth empty) in chunks of 1; the
    # 4 processors with z = 3 are idle. B(x,z) (rows 5|4 by 3) is on (x,0,z) and read by (x,1,z);
    # C(z,y) (3 by 5|4) is on (0,y,z) and read by (1,y,z): 81 + 81 elements. A(x,y) is on (x,y,0);
    # z = 1 and z = 2 hold their A tiles across the 3 steps and reduce them once (issue 34): 162 elements.
    m = dt.Machine(dt.Grid(2, 2, 4))
    A, B, C = _operands(9, m, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"))
    plan = dt.kernels.build("cosma", m, A, B, C, steps=3).compile()
    data = plan.stats()
    assert data["total_received_bytes"] == 162 * F64
    assert data["total_reduced_bytes"] == 162 * F64
    for x in range(2):
        for y in range(2):
            assert data["received_bytes"][f"({x},{y},3)"] == 0
            assert data["reduced_bytes"][f"({x},{y},3)"] == 0
    _no_point_has_an_empty_tile(plan)


def test_a_matmul_on_a_machine_larger_than_its_tiles_launches_only_the_busy_quarter() -> None:
    # 8x8 on Grid(16, 16): blocks of 1, so only the 8x8 processors in the corner have work
    m = dt.Machine(dt.Grid(16, 16))
    A, _, _ = _operands(8, m, XY)
    plan = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile()
    (launch,) = plan.groups[0].launches
    assert (launch.lower, launch.upper) == ((0, 0), (8, 8))
    assert plan.stats()["received_bytes"]["(9,9)"] == 0


def _random_cases(count: int) -> list[tuple[str, int, int, int, int]]:
    rng = random.Random(27)
    out = []
    for _ in range(count):
        algo = rng.choice(["summa", "cannon"])
        gx, gy = rng.randint(1, 5), rng.randint(1, 5)
        n = rng.randint(2, 13)
        out.append((algo, n, gx, gy, rng.randint(1, 5)))
    return out


@pytest.mark.parametrize(("algo", "n", "gx", "gy", "chunk"), _random_cases(24))
def test_random_extents_and_grids_receive_the_hand_count_and_equal_numpy(
        algo: str, n: int, gx: int, gy: int, chunk: int) -> None:
    sched, (A, B, C) = _summa(n, gx, gy, chunk=chunk, seed=n) if algo == "summa" else _cannon(n, gx, gy, seed=n)
    plan = sched.compile()
    assert plan.stats()["received_bytes"] == _matmul_2d_by_hand(n, gx, gy)
    _no_point_has_an_empty_tile(plan)
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


@pytest.mark.legate
@pytest.mark.parametrize("algo", ["summa", "cannon", "johnson", "cosma", "summa-divide"])
def test_plans_with_empty_tiles_equal_numpy_on_legate(legate: object, algo: str) -> None:
    if algo in ("summa", "cannon"):
        sched, (A, B, C) = _summa(9, 4, 4, chunk=3) if algo == "summa" else _cannon(9, 4, 4)
    elif algo == "summa-divide":
        sched, (A, B, C) = _summa(8, 2, 2, parts=9)
    else:
        m = dt.Machine(dt.Grid(4, 4, 4) if algo == "johnson" else dt.Grid(2, 2, 4))
        A, B, C = _operands(9, m, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"))
        sched = dt.kernels.build(algo, m, A, B, C, **({"steps": 3} if algo == "cosma" else {}))
    for _ in range(2):  # a second run starts from the first one's output
        sched.evaluate()
        np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)
