"""Index launches of the generic task agree with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from distal import runtime as rt
from distal.errors import DistalError, NotSupportedYet, RuntimeFailure

R, W, RW, ADD = rt.Privilege.READ, rt.Privilege.WRITE, rt.Privilege.READ_WRITE, rt.Privilege.REDUCE_ADD
Affine = rt.Affine


def _gemm(point: tuple[int, ...], a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    c += a @ b


def _scale(point: tuple[int, ...], x: np.ndarray, y: np.ndarray) -> None:
    y[...] = 2.0 * x + point[0] * 100 + point[1] * 10


def _partial_sum(point: tuple[int, ...], x: np.ndarray, acc: np.ndarray) -> None:
    acc += x.sum(axis=1)


GEMM = rt.register_kernel(_gemm)
SCALE = rt.register_kernel(_scale)
PARTIAL_SUM = rt.register_kernel(_partial_sum)


def _blocked(shape: tuple[int, int], tile: tuple[int, int]) -> np.ndarray:
    """NumPy model of _scale on a blocked layout: 2x + 100 * row block + 10 * column block."""
    rows = np.arange(shape[0])[:, None] // tile[0]
    cols = np.arange(shape[1])[None, :] // tile[1]
    return (100 * rows + 10 * cols).astype(float)


@pytest.mark.legate
@pytest.mark.parametrize(("shape", "tile"), [((8, 6), (4, 3)), ((7, 5), (4, 3))])
def test_tiled_launch_over_a_2d_domain(machine: rt.MachineInfo, shape: tuple[int, int],
                                       tile: tuple[int, int]) -> None:
    x_np = np.arange(shape[0] * shape[1], dtype=float).reshape(shape)
    x, y = rt.from_numpy(x_np), rt.zeros(shape)
    rt.index_launch(SCALE, rt.tile_colors(shape, tile), [rt.Arg(x, R, tile), rt.Arg(y, W, tile)])
    assert np.array_equal(rt.to_numpy(y), 2.0 * x_np + _blocked(shape, tile))


@pytest.mark.legate
@pytest.mark.parametrize(("n", "m", "kk", "grid"), [(8, 8, 8, 2), (7, 5, 6, 2), (9, 4, 7, 3)])
def test_summa_as_launches_over_k(machine: rt.MachineInfo, n: int, m: int, kk: int,
                                  grid: int) -> None:
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((n, kk)), rng.standard_normal((kk, m))
    tn, tm, tk = -(-n // grid), -(-m // grid), -(-kk // grid)
    a, b, c = rt.from_numpy(a_np), rt.from_numpy(b_np), rt.zeros((n, m))
    steps = rt.tile_colors((kk,), (tk,))[0]
    for k in range(steps):  # C[i, j] += A[i, k] B[k, j]
        rt.index_launch(GEMM, (grid, grid), [
            rt.Arg(a, R, (tn, tk), (Affine(0), Affine(None, 0, k)), colors=(grid, steps)),
            rt.Arg(b, R, (tk, tm), (Affine(None, 0, k), Affine(1)), colors=(steps, grid)),
            rt.Arg(c, RW, (tn, tm), colors=(grid, grid)),
        ])
    np.testing.assert_allclose(rt.to_numpy(c), a_np @ b_np, rtol=1e-12, atol=1e-12)


@pytest.mark.legate
def test_reduction_over_a_launch_dimension(machine: rt.MachineInfo) -> None:
    x_np = np.arange(7.0 * 9).reshape(7, 9)
    x, total = rt.from_numpy(x_np), rt.full((7,), 1.0)
    # point (i, j) sums row block i, column block j into block i of total: j is reduced
    rt.index_launch(PARTIAL_SUM, (2, 3), [
        rt.Arg(x, R, (4, 3)),
        rt.Arg(total, ADD, (4,), (Affine(0),)),
    ])
    np.testing.assert_allclose(rt.to_numpy(total), 1.0 + x_np.sum(axis=1))


@pytest.mark.legate
def test_reduction_of_a_whole_store(machine: rt.MachineInfo) -> None:
    def dot(point: tuple[int, ...], a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        out += np.dot(a, b)

    a_np, b_np = np.arange(10.0), np.arange(10.0, 20.0)
    a, b, out = rt.from_numpy(a_np), rt.from_numpy(b_np), rt.zeros((1,))
    rt.index_launch(rt.register_kernel(dot), (3,), [rt.Arg(a, R, (4,)), rt.Arg(b, R, (4,)),
                                                    rt.Arg(out, ADD)])
    assert rt.to_numpy(out)[0] == pytest.approx(float(a_np @ b_np))


@pytest.mark.legate
def test_extra_colors_are_empty_tiles(machine: rt.MachineInfo) -> None:
    shapes: list[tuple[int, ...]] = []

    def shape_of(point: tuple[int, ...], x: np.ndarray, y: np.ndarray) -> None:
        shapes.append(x.shape)
        y[...] = x + 1

    x, y = rt.from_numpy(np.arange(5.0)), rt.zeros((5,))
    # 5 elements over 4 processors: blocks of ceil(5/4) = 2 -> 2, 2, 1, 0
    rt.index_launch(rt.register_kernel(shape_of), (4,),
                    [rt.Arg(x, R, (2,), colors=(4,)), rt.Arg(y, W, (2,), colors=(4,))])
    assert np.array_equal(rt.to_numpy(y), np.arange(5.0) + 1)
    assert sorted(s[0] for s in shapes) == [0, 1, 2, 2]


@pytest.mark.legate
def test_lower_bounds_shift_the_domain(machine: rt.MachineInfo) -> None:
    y = rt.zeros((4, 4))
    x = rt.from_numpy(np.zeros((4, 4)))
    rt.index_launch(SCALE, (1, 2), [rt.Arg(x, R, (2, 2)), rt.Arg(y, W, (2, 2))], lower=(1, 0))
    expected = np.zeros((4, 4))
    expected[2:, :2], expected[2:, 2:] = 100.0, 110.0
    assert np.array_equal(rt.to_numpy(y), expected)


@pytest.mark.legate
def test_cannon_rotation_with_pinned_point_launches(machine: rt.MachineInfo) -> None:
    g, n = 2, 6
    rng = np.random.default_rng(1)
    a_np, b_np = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    a, b, c = rt.from_numpy(a_np), rt.from_numpy(b_np), rt.zeros((n, n))
    t = (n // g, n // g)
    for k in range(g):
        for i in range(g):
            for j in range(g):
                kk = (i + j + k) % g  # not affine in one launch dimension
                rt.point_launch(GEMM, [rt.tile_of(a, t, (i, kk)), rt.tile_of(b, t, (kk, j)),
                                       (rt.tile_of(c, t, (i, j)), RW)],
                                point=(i, j, k), processor=(i * g + j) % machine.cpus)
    np.testing.assert_allclose(rt.to_numpy(c), a_np @ b_np, rtol=1e-12, atol=1e-12)


@pytest.mark.legate
def test_kernel_failure_is_reported_not_fatal(machine: rt.MachineInfo) -> None:
    def broken(point: tuple[int, ...], x: np.ndarray) -> None:
        raise ValueError(f"broken at {point}")

    x = rt.zeros((4,))
    rt.index_launch(rt.register_kernel(broken), (2,), [rt.Arg(x, R, (2,))])
    with pytest.raises(RuntimeFailure, match="broken"):
        rt.fence()
    rt.fence()  # reported once


@pytest.mark.legate
def test_projection_outside_the_tiles_is_refused(machine: rt.MachineInfo) -> None:
    x, y = rt.zeros((4, 4)), rt.zeros((4, 4))
    with pytest.raises(DistalError, match="outside"):
        rt.index_launch(SCALE, (3, 2), [rt.Arg(x, R, (2, 2)), rt.Arg(y, W, (2, 2))])


@pytest.mark.legate
def test_a_written_store_may_appear_once(machine: rt.MachineInfo) -> None:
    x = rt.zeros((4, 4))
    with pytest.raises(NotSupportedYet, match="appear"):
        rt.index_launch(SCALE, (2, 2), [rt.Arg(x, R, (2, 2)), rt.Arg(x, W, (2, 2))])


def test_bad_arguments_are_refused() -> None:
    x = rt.Store(handle=None, shape=(4, 4), dtype=np.dtype(float))
    with pytest.raises(DistalError):
        rt.Arg(x, R, (2,))
    with pytest.raises(DistalError):
        rt.Arg(x, R, (2, 2), (Affine(0),))
    with pytest.raises(DistalError):
        rt.Arg(x, R, None, (Affine(0), Affine(1)))


@pytest.mark.legate
def test_empty_domains_launch_nothing(machine: rt.MachineInfo) -> None:
    x = rt.zeros((4,))
    rt.index_launch(SCALE, (0,), [rt.Arg(x, W, (2,))])
    assert np.array_equal(rt.to_numpy(x), np.zeros(4))


@pytest.mark.legate
def test_refusals_name_the_offender(machine: rt.MachineInfo) -> None:
    x = rt.zeros((4, 4))
    with pytest.raises(DistalError, match="launch dimension"):
        Affine(-1)
    with pytest.raises(DistalError, match="tile color"):
        rt.tile_of(x, (2, 2), (2, 0))
    with pytest.raises(DistalError, match="processor kind"):
        rt.processor_count("tpu")
    with pytest.raises(DistalError, match="CPU processor"):
        rt.point_launch(SCALE, [x], (0,), processor=machine.cpus)
    with pytest.raises(DistalError, match="launch dimension 2"):
        rt.index_launch(SCALE, (2, 2), [rt.Arg(x, R, (2, 2), (Affine(0), Affine(2)))])


@pytest.mark.legate
def test_written_tiles_are_not_shared_between_points(machine: rt.MachineInfo) -> None:
    x = rt.zeros((4, 4))
    with pytest.raises(DistalError, match="its own tile"):
        rt.index_launch(SCALE, (2, 2), [rt.Arg(rt.zeros((4, 4)), R, (2, 2)),
                                        rt.Arg(x, W, (2, 2), (Affine(0), Affine(None, 0, 0)))])
    with pytest.raises(DistalError, match="without a tile"):
        rt.index_launch(SCALE, (2, 2), [rt.Arg(x, RW)])


@pytest.mark.legate
def test_zero_dimensional_stores(machine: rt.MachineInfo) -> None:
    assert rt.to_numpy(rt.from_numpy(np.array(3.0))) == 3.0
    scalar = rt.full((), 2.5)
    assert rt.to_numpy(scalar).shape == () and rt.to_numpy(scalar) == 2.5
    with pytest.raises(NotSupportedYet, match="0-d"):
        rt.Arg(scalar, R)


def _copy_row(point: tuple[int, ...], src: np.ndarray, out: np.ndarray) -> None:
    out[...] = src + point[0]


COPY_ROW = rt.register_kernel(_copy_row)


@pytest.mark.legate
@pytest.mark.parametrize(("domain", "lower"), [((1,), (0,)), ((1,), (1,)), ((1, 1), (0, 1))])
def test_a_one_point_launch_sees_only_its_tile(machine: rt.MachineInfo, domain: tuple[int, ...],
                                              lower: tuple[int, ...]) -> None:
    """Legate hands a one-point 1-D launch the whole store unless it is given the tile itself."""
    src = rt.from_numpy(np.arange(24.0).reshape(2, 12))
    out = rt.zeros((2, 12))
    row = Affine(0) if len(domain) == 1 else Affine(1)
    rt.index_launch(COPY_ROW, domain, [rt.Arg(src, R, (1, 12), (row, Affine(None, 0, 0))),
                                       rt.Arg(out, W, (1, 12), (row, Affine(None, 0, 0)))], lower=lower)
    got = rt.to_numpy(out)
    r = lower[-1]
    want = np.zeros((2, 12))
    want[r] = np.arange(24.0).reshape(2, 12)[r] + lower[0]
    assert np.array_equal(got, want)
