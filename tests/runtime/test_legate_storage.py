"""Tensor data on Legate laid out by its format: NumPy -> Legate -> NumPy gives the data back."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.errors import ShapeError
from distal.redist.finish import factor_grid
from distal.redist.formats import dist_type, mesh_of
from distal.redist.simulate import offsets
from distal.runtime._holders import holder_index
from distal.runtime._tensor_storage import FormatStore, adopt, from_store, native, place

pytestmark = pytest.mark.legate

M4 = dt.Machine(dt.Grid(4))
M22 = dt.Machine(dt.Grid(2, 2))
M222 = dt.Machine(dt.Grid(2, 2, 2))
MH = dt.Machine(dt.Grid(2, 2), dt.Grid(2))

# Figure 5 of the DISTAL paper: a vector, rows, columns, tiles, a fixed face, broadcast; plus hierarchy
FIGURE_5: list[tuple[str, object, dt.Machine]] = [
    ("vector", "x -> x", M4),
    ("rows", "xy -> x", M4),
    ("columns", "xy -> y", M4),
    ("tiles", "xy -> xy", M22),
    ("transposed tiles", "xy -> yx", M22),
    ("face", "xy -> xy0", M222),
    ("broadcast", "xy -> xy*", M222),
    ("rows broadcast", "xy -> x*", M22),
    ("replicated", "xy -> **", M22),
    ("hierarchical", ["xy -> xy", "xy -> x"], MH),
    ("hierarchical face", ["xy -> x*", "xy -> 1"], MH),
]
SHAPES = {1: [(10,), (7,), (3,), (0,)], 2: [(8, 8), (5, 7), (3, 2), (1, 9), (0, 4)]}


@pytest.fixture(scope="module", autouse=True)
def legate() -> rt.MachineInfo:
    """Legate, started once per process with distal's defaults."""
    return rt.ensure_started()


def _data(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    rng = np.random.default_rng(len(shape) * 100 + sum(shape))
    if np.dtype(dtype).kind == "i":
        return rng.integers(-(2**40), 2**40, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize(("name", "spec", "machine"), FIGURE_5, ids=[f[0] for f in FIGURE_5])
def test_round_trip(name: str, spec: object, machine: dt.Machine, dtype: type) -> None:
    fmt = dt.Format(spec, machine)  # type: ignore[arg-type]
    for shape in SHAPES[fmt.order]:
        a = _data(shape, dtype)
        held = place(a, fmt)
        back = held.to_numpy()
        assert back.dtype == a.dtype and back.shape == a.shape
        assert np.array_equal(back, a), (name, shape)


@pytest.mark.parametrize(("name", "spec", "machine"), FIGURE_5, ids=[f[0] for f in FIGURE_5])
def test_blocks_are_the_tiles_of_their_processors(name: str, spec: object, machine: dt.Machine) -> None:
    """Each processor's block holds exactly the format's tiles F(P(.)) gives it; the rest is padding."""
    fmt = dt.Format(spec, machine)  # type: ignore[arg-type]
    shape = (7,) if fmt.order == 1 else (5, 7)
    a = _data(shape, np.float64)
    held = place(a, fmt)
    blocks = held.device_blocks()
    lay = held.layout
    held_by: dict[tuple[int, ...], float] = {}
    for color, bounds in fmt.tiles(shape):
        tile = a[tuple(slice(lo, hi) for lo, hi in bounds)]
        for p in fmt.owners(color):
            assert p in blocks
            held_by[p] = held_by.get(p, 0) + tile.size
            off = offsets(dist_type(lay), mesh_of(machine), p)
            assert off == lay.offset(p)
            pos = [lay.positions()[d][lo:hi] - off[d] for d, (lo, hi) in enumerate(bounds)]
            assert np.array_equal(blocks[p][np.ix_(*pos)], tile)
    sizes = fmt.local_size(shape)
    assert {p for p, n in sizes.items() if n} <= set(blocks)
    for p, block in blocks.items():
        assert np.count_nonzero(block) == sizes[p] == held_by.get(p, 0)


def test_broadcast_dimensions_are_replicated() -> None:
    held = place(_data((4, 4), np.float64), dt.Format("xy -> xy*", M222))
    blocks = held.device_blocks()
    assert len(blocks) == 8
    for (x, y, z), block in blocks.items():
        assert np.array_equal(block, blocks[(x, y, 1 - z)])


def test_fixed_dimensions_live_only_on_their_face() -> None:
    held = place(_data((4, 4), np.float64), dt.Format("xy -> xy1", M222))
    assert sorted(held.device_blocks()) == [(0, 0, 1), (0, 1, 1), (1, 0, 1), (1, 1, 1)]
    assert held.blocks.shape == (2, 2, 1, 4)
    assert factor_grid(mesh_of(M222)).shape({"z"}) == (2, 2, 1)
    assert holder_index(held.layout, (1, 0, 1)) == (1, 0, 0)


def test_global_store_holds_the_tensor() -> None:
    a = _data((5, 3), np.int64)
    held = place(a, dt.Format("xy -> x*", M22))
    assert held.store.shape == (5, 3)
    assert np.array_equal(rt.to_numpy(held.store), a)
    assert held.store is held.store


def test_tensor_from_array_on_legate_round_trips() -> None:
    a = _data((5, 7), np.float32)
    A = dt.Tensor.from_array("A", a, dt.Format("xy -> xy", M22))
    A.bind(place(a, A.format))
    assert isinstance(A.storage, FormatStore)
    assert np.array_equal(np.asarray(A), a) and A.to_numpy().dtype == np.float32


def test_cupynumeric_input() -> None:
    cn = pytest.importorskip("cupynumeric")
    a = cn.arange(35, dtype=np.float64).reshape(5, 7)
    held = place(a, dt.Format("xy -> yx", M22))
    assert np.array_equal(held.to_numpy(), np.arange(35.0).reshape(5, 7))


def test_zero_dimensional_machine_blocks() -> None:
    held = place(np.arange(6.0).reshape(2, 3), dt.Format("xy -> x", dt.Machine(dt.Grid(1))))
    assert held.blocks.shape == (1, 6)
    assert math.prod(held.layout.tile) == 6
    assert np.array_equal(held.to_numpy(), np.arange(6.0).reshape(2, 3))


def test_refuses_an_array_of_another_order() -> None:
    with pytest.raises(ShapeError, match=r"expected a 2-dimensional array for format 'xy -> xy', but found shape \(4,\)"):
        place(np.ones(4), dt.Format("xy -> xy", M22))


@pytest.mark.parametrize(
    ("spec", "machine", "is_native"),
    [("xy -> xy", M22, True), ("xy -> x*", M22, True), ("xy -> xy0", M222, True), ("xy -> *y", M22, True),
     ("xy -> x", M4, True), (["xy -> xy", "xy -> x"], MH, False)],
)
def test_global_store_and_back_by_launches(spec: object, machine: dt.Machine, is_native: bool) -> None:
    """Blocks -> global store -> blocks by launches; `native` says whether a plan can read the blocks in place."""
    fmt = dt.Format(spec, machine)  # type: ignore[arg-type]
    for shape in [(5, 7), (4, 4), (1, 3)]:
        a = _data(shape, np.float64)
        held = place(a, fmt)
        assert native(held.layout) is is_native
        assert np.array_equal(rt.to_numpy(held.store), a)
        back = from_store(rt.from_numpy(a), fmt)
        assert back.format == fmt
        assert np.array_equal(back.to_numpy(), a)
        assert np.array_equal(rt.to_numpy(back.blocks), rt.to_numpy(held.blocks))


def test_adopt_takes_a_lowered_output_store() -> None:
    """An object with a `store` of the tensor's shape (the lowering's outputs) is laid out by launches."""

    class Output:
        def __init__(self, store: rt.Store) -> None:
            self.store = store

    a = _data((5, 7), np.float32)
    fmt = dt.Format("xy -> yx", M22)
    held = adopt(Output(rt.from_numpy(a)), lambda: pytest.fail("no host copy expected"), fmt, np.float32, (5, 7))
    assert np.array_equal(held.to_numpy(), a)
    assert adopt(held, lambda: None, fmt, np.float32, (5, 7)) is held
    other = adopt(None, lambda: a, fmt, np.float64, (5, 7))
    assert other.dtype == np.float64 and np.array_equal(other.to_numpy(), a.astype(np.float64))


def test_a_redistributed_tensor_feeds_a_plan_without_a_host_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """After `redistribute`, a plan reads the tensor's blocks through its global store (one launch)."""
    i, j, k = dt.index_vars("i j k")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    b, c = _data((6, 5), np.float64), _data((5, 6), np.float64)
    A = dt.Tensor("A", (6, 6), dt.Format("xy -> xy", M22))
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> yx", M22))
    C = dt.Tensor.from_array("C", c, dt.Format("xy -> xy", M22))
    B.redistribute(dt.Format("xy -> xy", M22))
    assert isinstance(B.storage, FormatStore) and native(B.storage.layout)
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], M22)
             .communicate([A, B, C], jo).substitute([ii, ji, k], dt.leaf.GEMM))
    monkeypatch.setattr(FormatStore, "to_numpy", lambda self: pytest.fail("the blocks went through the host"))
    sched.evaluate()
    monkeypatch.undo()
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12)
    assert isinstance(B.storage, FormatStore)  # still laid out by its format
