"""Redistribution on Legate with relabelled device maps (paper, Fig. 10; issue 15 item 6).

On meshes that mix primes in one dimension, the synthesized programs relabel
the device map (no data moves), then run collectives over the relabelled
points and return to the mesh's own map with one final allpermute. The
Legate executor (`runtime/_redistribute.py`) addresses the blocks through
each step's frame. These pairs of formats (found by a search over vector and
matrix formats on Grid(3, 4, 2) and Grid(2, 3, 5)) give such programs: the
data read back is the source array, every program is within Theorem 6.7's
bound (as tests/redist/test_bound.py computes it), and statements read the
redistributed tensors.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.redist import AllPermute, CollectiveProgram, DistType, Mesh, Relabel, synthesize
from distal.redist.finish import factor_grid, finish_program
from distal.redist.formats import plan_redistribution
from distal.redist.simulate import offsets
from distal.runtime._redistribute import StepRecord, run_program
from distal.runtime._tensor_storage import FormatStore, place
from tests.redist.moving import redistribute
from tests.redist.test_bound import weak_optimum

pytestmark = pytest.mark.legate

M342 = dt.Machine(dt.Grid(3, 4, 2))
M235 = dt.Machine(dt.Grid(2, 3, 5))

CASES = [
    (M342, "xy -> xy*", "xy -> y*x", (6, 12)),
    (M342, "xy -> y*x", "xy -> xy*", (6, 12)),
    (M342, "xy -> x*y", "xy -> y*x", (6, 6)),
    (M342, "xy -> y**", "xy -> x0y", (6, 12)),
    (M342, "xy -> x*y", "xy -> yx*", (6, 12)),  # with a repad between two programs
    (M235, "xy -> xy*", "xy -> y*x", (30, 6)),
    (M235, "xy -> yx*", "xy -> x*y", (6, 10)),
    (M235, "xy -> x**", "xy -> yx*", (6, 10)),
    (M235, "xy -> *yx", "xy -> yx*", (30, 6)),
]


@pytest.fixture(scope="module", autouse=True)
def legate() -> rt.MachineInfo:
    """Legate, started once per process with distal's defaults."""
    return rt.ensure_started()


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _programs(stages: tuple[object, ...]) -> list[CollectiveProgram]:
    return [s for s in stages if isinstance(s, CollectiveProgram)]


@pytest.mark.parametrize(("machine", "src", "dst", "shape"), CASES)
def test_relabelled_programs_move_the_data_within_the_bound(
    machine: dt.Machine, src: str, dst: str, shape: tuple[int, int]
) -> None:
    a = _data(shape, sum(shape))
    held = place(a, dt.Format(src, machine))
    trace: list[StepRecord] = []
    moved, plan = redistribute(held, dt.Format(dst, machine), trace=trace)
    progs = _programs(plan.stages)
    assert sum(p.relabels for p in progs) > 0, plan
    for prog in progs:
        bound = weak_optimum(prog.source, prog.target, prog.mesh) + prog.target.local_size
        assert prog.cost <= bound, f"cost {prog.cost} > bound {bound}:\n{prog}"
        assert sum(isinstance(s, AllPermute) for s in prog.steps) <= 1
        assert prog.frames[-1] == prog.frames[0]
        assert any(f != prog.frames[0] for f in prog.frames) == (prog.relabels > 0)
    # a relabel launches nothing; every store along the way is within the plan's height
    assert [r.launches for r in trace if r.label == "relabel"] == [0] * sum(p.relabels for p in progs)
    assert all(r.block <= plan.height for r in trace)
    assert moved.format == dt.Format(dst, machine)
    assert np.array_equal(moved.to_numpy(), a), plan


@pytest.mark.parametrize(("machine", "src", "dst", "shape"), [
    (M235, "xy -> yx*", "xy -> x*y", (6, 10)),
    (M235, "xy -> x**", "xy -> yx*", (6, 10)),
    (M342, "xy -> y**", "xy -> x0y", (6, 12)),
])
def test_the_mesh_s_own_map_needs_two_allpermutes_where_the_plan_relabels(
    machine: dt.Machine, src: str, dst: str, shape: tuple[int, int]
) -> None:
    """What relabelling buys on Legate: one allpermute (the paper's program form) and less data moved."""
    plan = plan_redistribution(dt.Format(src, machine), dt.Format(dst, machine), shape)
    (prog,) = _programs(plan.stages)
    fixed = synthesize(prog.source, prog.target, prog.mesh, relabel=False)
    assert prog.relabels == 1 and [type(s) for s in prog.steps].count(AllPermute) == 1
    assert fixed.relabels == 0 and [type(s) for s in fixed.steps].count(AllPermute) == 2
    assert prog.cost < fixed.cost
    a = _data(shape, 7)
    moved, _ = redistribute(place(a, dt.Format(src, machine)), dt.Format(dst, machine))
    assert np.array_equal(moved.to_numpy(), a)


def test_statements_read_relabelled_redistributions() -> None:
    """A tensor moved by a relabelled program is read by a statement in place: numpy's answer."""
    i, j, k = dt.index_vars("i j k")
    b, c = _data((6, 12), 1), _data((12, 6), 2)
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy*", M342))
    B.redistribute(dt.Format("xy -> y*x", M342))
    assert isinstance(B.storage, FormatStore) and str(B.storage.format) == "xy -> y*x"
    C = dt.Tensor.from_array("C", c, dt.Format("xy -> ***", M342))
    A = dt.Tensor("A", (6, 6), dt.Format("xy -> ***", M342))
    A[i, j] = B[i, k] * C[k, j]
    A.schedule().evaluate()
    np.testing.assert_allclose(A.to_numpy(), b @ c, rtol=1e-12)
    D = dt.Tensor.from_array("D", c.T.copy(), dt.Format("xy -> x*y", M235))
    D.redistribute(dt.Format("xy -> yx*", M235))
    E = dt.Tensor("E", (6, 12), dt.Format("xy -> x*y", M235))
    E[i, j] = D[i, j] + D[i, j]
    E.schedule().evaluate()
    np.testing.assert_allclose(E.to_numpy(), 2 * c.T, rtol=1e-12)


SPECS_342 = ["xy -> xy*", "xy -> yx*", "xy -> x*y", "xy -> *xy", "xy -> y*x", "xy -> *yx", "xy -> x**",
             "xy -> y**", "xy -> *y*", "xy -> x0y", "xy -> 2*x"]


@pytest.mark.parametrize("shape", [(6, 12), (5, 11)])
def test_every_pair_on_a_mesh_mixing_primes(shape: tuple[int, int]) -> None:
    """All pairs of these formats on Grid(3, 4, 2) (x's 4 is 2x2, mixed with 3 and 2 in one dimension):
    exact data, every relabelling program within the bound, and some pairs relabel."""
    a = _data(shape, 3)
    fmts = [dt.Format(s, M342) for s in SPECS_342]
    relabelled = 0
    for src in fmts:
        held = place(a, src)
        for dst in fmts:
            moved, plan = redistribute(held, dst)
            assert np.array_equal(moved.to_numpy(), a), f"{src} -> {dst} for shape {shape}:\n{plan}"
            for prog in _programs(plan.stages):
                relabelled += prog.relabels > 0
                bound = weak_optimum(prog.source, prog.target, prog.mesh) + prog.target.local_size
                assert prog.cost <= bound and sum(isinstance(s, AllPermute) for s in prog.steps) <= 1, prog
    assert relabelled > 0


def _blocks(t: DistType, mesh: Mesh, a: np.ndarray) -> np.ndarray:
    """Every device's tile of ``a`` under ``t`` (mesh's own map), as a store's blocks."""
    blocks = np.zeros((*factor_grid(mesh).shape(), t.local_size))
    for d in mesh.devices():
        o = offsets(t, mesh, d)
        blocks[mesh.factor_coords(d)] = a[tuple(slice(x, x + n) for x, n in zip(o, t.local_type))].reshape(-1)
    return blocks


@pytest.mark.parametrize(
    ("src", "dst", "mesh"),
    [
        ("[6, 1{y,x}12]", "[1{z,x}6, 3{y}12]", "x=3,y=4,z=2"),  # issue 15: dynslice, relabel, alltoall, allpermute
        ("[2{x}6, 12{y}48]", "[3{z}6, 4{y,x}48]", "x=3,y=4,z=2"),
        ("[2{y}6, 5{x}10]", "[3{x}6, 2{z}10]", "x=2,y=3,z=5"),
    ],
)
def test_relabelled_programs_run_step_by_step_like_the_simulator(src: str, dst: str, mesh: str) -> None:
    """`run_program` on a store of blocks: every device ends with the tile the simulator gives it."""
    m, s, d = Mesh.parse(mesh), DistType.parse(src), DistType.parse(dst)
    prog = synthesize(s, d, m)
    assert prog.relabels > 0, prog
    a = np.arange(float(s.global_size)).reshape(s.global_type)
    trace: list[StepRecord] = []
    out = rt.to_numpy(run_program(finish_program(prog), rt.from_numpy(_blocks(s, m, a)), trace))
    assert [r.launches for r, st in zip(trace, prog.steps) if isinstance(st, Relabel)] == [0] * prog.relabels
    tiles = prog.simulate(a)
    for dev in m.devices():
        assert np.array_equal(out[m.factor_coords(dev)], tiles[dev].reshape(-1)), (dev, prog)
    assert np.array_equal(out, _blocks(prog.target, m, a))
