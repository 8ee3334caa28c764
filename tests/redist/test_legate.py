"""Redistribution executed on Legate: data identical for every pair of formats."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.errors import FormatError
from distal.redist import Mesh, synthesize
from distal.redist.finish import factor_grid, finish, finish_program
from distal.redist.formats import mesh_of, plan_redistribution
from distal.redist.simulate import offsets
from distal.runtime._redistribute import StepRecord, run_plan_steps, run_program
from distal.runtime._tensor_storage import FormatStore, place
from tests.redist.moving import redistribute

pytestmark = pytest.mark.legate

M22 = dt.Machine(dt.Grid(2, 2))
M222 = dt.Machine(dt.Grid(2, 2, 2))
M4 = dt.Machine(dt.Grid(4))
M24 = dt.Machine(dt.Grid(2, 4))
MH = dt.Machine(dt.Grid(2, 2), dt.Grid(2))

FORMATS_22 = ["xy -> xy", "xy -> yx", "xy -> x*", "xy -> *x", "xy -> y*", "xy -> **", "xy -> x0", "xy -> 1y"]


@pytest.fixture(scope="module", autouse=True)
def legate() -> rt.MachineInfo:
    """Legate, started once per process with distal's defaults."""
    return rt.ensure_started()


def _data(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    rng = np.random.default_rng(sum(shape) + len(shape))
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _all_pairs(machine: dt.Machine, specs: list[object], shape: tuple[int, ...], dtype: type = np.float64) -> int:
    fmts = [dt.Format(s, machine) for s in specs]  # type: ignore[arg-type]
    a = _data(shape, dtype)
    count = 0
    for src in fmts:
        held = place(a, src)
        for dst in fmts:
            trace: list[StepRecord] = []
            moved, plan = redistribute(held, dst, trace=trace)
            got = moved.to_numpy()
            assert got.dtype == a.dtype
            assert np.array_equal(got, a), f"{src} -> {dst} for shape {shape}:\n{plan}"
            assert moved.format == dst
            assert all(r.block <= plan.height for r in trace)
            count += 1
    return count


@pytest.mark.parametrize(("shape", "dtype"), [((4, 6), np.float64), ((5, 3), np.float32), ((3, 7), np.int64)])
def test_every_pair_of_formats_on_2x2(shape: tuple[int, int], dtype: type) -> None:
    assert _all_pairs(M22, FORMATS_22, shape, dtype) == 64  # type: ignore[arg-type]


def test_pairs_on_2x2x2() -> None:
    specs: list[object] = ["xy -> xy*", "xy -> xy0", "xy -> x1y", "xy -> *yx", "xy -> **0"]
    for shape in [(3, 5), (4, 4)]:
        _all_pairs(M222, specs, shape)


def test_pairs_on_4() -> None:
    for shape in [(5, 3), (8, 4), (2, 2)]:
        _all_pairs(M4, ["xy -> x", "xy -> y", "xy -> *", "xy -> 2"], shape, np.int64)


def test_pairs_whose_padding_conflicts() -> None:
    """On a 2x4 machine 5 rows pad to 6 over x and to 8 over y: gather, repad, slice."""
    _all_pairs(M24, ["xy -> xy", "xy -> yx", "xy -> x*", "xy -> *y", "xy -> 0x"], (5, 6))


def test_pairs_on_a_hierarchical_machine() -> None:
    specs: list[object] = [["xy -> xy", "xy -> x"], ["xy -> xy", "xy -> y"], ["xy -> x*", "xy -> y"],
                           ["xy -> **", "xy -> *"], ["xy -> yx", "xy -> 0"]]
    _all_pairs(MH, specs, (5, 7), np.float32)


def test_three_dimensional_tensors() -> None:
    _all_pairs(M222, ["xyz -> xyz", "xyz -> zxy", "xyz -> x*0", "xyz -> ***"], (3, 4, 5))


def test_naive_programs_move_the_same_data() -> None:
    a = _data((5, 6), np.float64)
    held = place(a, dt.Format("xy -> xy", M22))
    moved, plan = redistribute(held, dt.Format("xy -> *y", M22), method="naive")
    assert np.array_equal(moved.to_numpy(), a)
    assert plan.cost >= plan_redistribution(held.format, moved.format, a.shape).cost


def test_steps_hold_no_more_than_the_bound() -> None:
    """Without conflicting padding, every block along the way is within max(source, target)."""
    a = _data((8, 8), np.float64)
    held = place(a, dt.Format("xy -> xy", M22))
    trace: list[StepRecord] = []
    moved, plan = redistribute(held, dt.Format("xy -> y*", M22), trace=trace)
    assert [r.label for r in trace] == [str(s) for s in plan.steps]
    assert max(r.block for r in trace) <= plan.bound == 32
    assert np.array_equal(moved.to_numpy(), a)


def test_permutation_without_an_affine_holder_uses_pinned_launches() -> None:
    """Mixed primes in one dimension: the holder of a tile is no affine map of the device."""
    mesh = Mesh(x=2, y=3)
    src, dst = "[1{x,y}6, 4]", "[1{y,x}6, 4]"
    prog = synthesize(src, dst, mesh)
    assert [str(s) for s in prog.steps] == ["allpermute"]
    a = np.arange(24.0).reshape(6, 4)
    grid = factor_grid(mesh).shape()
    blocks = np.zeros((*grid, 4))
    for d in mesh.devices():
        o = offsets(prog.source, mesh, d)
        blocks[mesh.factor_coords(d)] = a[o[0] : o[0] + 1].reshape(-1)
    trace: list[StepRecord] = []
    out = rt.to_numpy(run_program(finish_program(prog), rt.from_numpy(blocks), trace))
    assert trace[0].launches == mesh.size
    for d in mesh.devices():
        o = offsets(prog.target, mesh, d)
        assert np.array_equal(out[mesh.factor_coords(d)], a[o[0] : o[0] + 1].reshape(-1))


def test_tensor_redistribute_keeps_the_data() -> None:
    a = _data((5, 7), np.float32)
    A = dt.Tensor.from_array("A", a, dt.Format("xy -> xy", M22))
    plan = A.redistribute(dt.Format("xy -> y0", M22))
    assert str(A.format) == "xy -> y0"
    assert isinstance(A.storage, FormatStore)
    assert np.array_equal(np.asarray(A), a) and A.to_numpy().dtype == np.float32
    assert "allgather" in str(plan) and plan.height <= plan.bound
    A.redistribute(dt.Format("xy -> **", M22))
    assert np.array_equal(A.to_numpy(), a)
    assert np.array_equal(rt.to_numpy(A.storage.store), a)


def test_tensor_without_data_takes_the_format() -> None:
    A = dt.Tensor("A", (4, 4), dt.Format("xy -> xy", M22))
    plan = A.redistribute(dt.Format("xy -> yx", M22))
    assert A.storage is None and str(A.format) == "xy -> yx"
    assert [str(s) for s in plan.steps] == ["allpermute"]
    P = dt.Tensor("P", (dt.Param("n"), 4), dt.Format("xy -> xy", M22))
    assert P.redistribute(dt.Format("xy -> x*", M22)) is None and str(P.format) == "xy -> x*"


def test_tensor_redistribute_refuses_another_machine() -> None:
    A = dt.Tensor.from_array("A", np.ones((4, 4)), dt.Format("xy -> xy", M22))
    with pytest.raises(FormatError, match=r"expected a format on the machine of A \(Machine\(Grid\(2, 2\)\)\), "
                                          r"but found Format\('xy -> xy', Machine\(Grid\(2, 4\)\)\)"):
        A.redistribute(dt.Format("xy -> xy", M24))
    assert str(A.format) == "xy -> xy" and np.array_equal(A.to_numpy(), np.ones((4, 4)))


def test_tensor_redistribute_refuses_another_order() -> None:
    A = dt.Tensor.from_array("A", np.ones((4, 4)), dt.Format("xy -> xy", M22))
    with pytest.raises(FormatError, match="expected a 3-dimensional tensor for format 'xyz -> xy', but found A"):
        A.redistribute(dt.Format("xyz -> xy", M22))
    assert str(A.format) == "xy -> xy"


def test_tensor_redistribute_needs_a_format() -> None:
    X = dt.Tensor.from_array("X", np.ones((4, 4)))
    with pytest.raises(FormatError, match="expected a tensor with a format to redistribute, but found X without one"):
        X.redistribute(dt.Format("xy -> xy", M22))


def test_run_refuses_data_in_another_format() -> None:
    held = place(np.ones((4, 4)), dt.Format("xy -> xy", M22))
    plan = plan_redistribution(dt.Format("xy -> yx", M22), dt.Format("xy -> **", M22), (4, 4))
    with pytest.raises(FormatError, match="expected data in format xy -> yx of shape"):
        run_plan_steps(finish(plan), held)


def test_block_sizes_match_the_types() -> None:
    held = place(np.ones((5, 7)), dt.Format("xy -> x*", M22))
    assert held.blocks.shape == (*factor_grid(mesh_of(M22)).shape(), math.prod(held.layout.tile))
    for src, dst in itertools.product(["xy -> xy"], ["xy -> **"]):
        moved, _ = redistribute(place(np.ones((5, 7)), dt.Format(src, M22)), dt.Format(dst, M22))
        assert moved.blocks.shape == (2, 2, 35)


# -- machines of prime size and one-point launches (issue 11, reproducers 2 and 3) -----------------

VECTOR_SPECS = ["a -> a", "a -> 0", "a -> 1", "a -> *"]


def test_all_sixteen_vector_pairs_on_two_processors() -> None:
    """A one-point 1-D launch (the face of 'a -> 0' on Grid(2)) used to get the whole block store."""
    m = dt.Machine(dt.Grid(2))
    a = np.arange(1.0, 12.0)
    for src, dst in itertools.product(VECTOR_SPECS, VECTOR_SPECS):
        X = dt.Tensor.from_array("X", a, dt.Format(src, m))
        X.redistribute(dt.Format(dst, m))
        assert np.array_equal(X.to_numpy(), a), f"{src} -> {dst}"
    assert _all_pairs(m, VECTOR_SPECS, (5,)) == 16


@pytest.mark.parametrize("grid", [(2,), (3,), (5,), (7,), (2, 1), (1, 3)])
def test_fixed_faces_on_machines_of_prime_size(grid: tuple[int, ...]) -> None:
    m = dt.Machine(dt.Grid(*grid))
    specs = ["a -> a", "a -> 0", "a -> *"] if len(grid) == 1 else ["a -> a0", "a -> 0a", "a -> *a", "a -> 00"]
    _all_pairs(m, specs, (11,))


def test_a_redistributed_vector_is_read_by_a_statement() -> None:
    m = dt.Machine(dt.Grid(2))
    x = dt.Tensor.from_array("x", np.arange(1.0, 6.0), dt.Format("a -> a", m))
    x.redistribute(dt.Format("a -> *", m))
    y = dt.Tensor("y", (5,))
    (i,) = dt.index_vars("i")
    y[i] = x[i] * 2
    y.schedule().evaluate()
    assert np.array_equal(y.to_numpy(), np.arange(2.0, 12.0, 2.0))


@pytest.mark.parametrize(("src", "dst"), [("-> **", "-> 01"), ("-> 01", "-> **"), ("-> 10", "-> 01"), ("-> **", "-> **")])
def test_a_redistributed_scalar_keeps_its_shape(src: str, dst: str) -> None:
    m = dt.Machine(dt.Grid(2, 2))
    X = dt.Tensor.from_array("X", np.array(2.5), dt.Format(src, m))
    X.redistribute(dt.Format(dst, m))
    got = X.to_numpy()
    assert got.shape == () and got == 2.5


def _differently_placed(name: str, data: np.ndarray, machine: dt.Machine) -> dt.Tensor:
    spec = "".join("abcdef"[: data.ndim]) + " -> " + "*" * machine.grids[0].ndim
    return dt.Tensor.from_array(name, data, dt.Format(spec, machine))


@pytest.mark.parametrize(("name", "procs", "shapes", "expr"), [
    ("cosma", 3, [(6, 3), (6, 9), (9, 3)], "ik,kj->ij"),
    ("mttkrp", 2, [(4, 3), (4, 5, 6), (5, 3), (6, 3)], "ijk,jl,kl->il"),
    ("ttv", 3, [(5, 4), (5, 4, 6), (6,)], "ijk,k->ij"),
    ("ttm", 3, [(5, 4, 3), (5, 4, 6), (6, 3)], "ijk,kl->ijl"),
])
def test_algorithms_redistribute_operands_on_prime_machines(name: str, procs: int, shapes: list[tuple[int, ...]],
                                                           expr: str) -> None:
    m = dt.kernels.machine(name, procs)
    rng = np.random.default_rng(procs)
    ins = [rng.standard_normal(s) for s in shapes[1:]]
    out = dt.Tensor(name.upper(), shapes[0])
    ops = [_differently_placed(f"T{k}", a, m) for k, a in enumerate(ins)]
    dt.kernels.build(name, m, out, *ops).evaluate()
    assert np.allclose(out.to_numpy(), np.einsum(expr, *ins), rtol=1e-10)


def test_cosma_on_three_with_b_on_a_face() -> None:
    """Issue 11's reproducer: B in 'xy -> xy0' is redistributed by build (used to fail on 3 processors)."""
    m = dt.kernels.machine("cosma", 3)
    rng = np.random.default_rng(3)
    b, c = rng.standard_normal((6, 9)), rng.standard_normal((9, 3))
    A = dt.Tensor("A", (6, 3))
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy0", m))
    C = dt.Tensor.from_array("C", c)
    dt.kernels.build("cosma", m, A, B, C).evaluate()
    assert np.allclose(A.to_numpy(), b @ c, rtol=1e-10)
