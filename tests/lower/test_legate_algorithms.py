"""SUMMA, Cannon and Johnson, written with the scheduling language as in Figure 9, on Legate."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal.api.plan import Plan
from distal.format.format import Format
from distal.lower import lower
from distal.lower.task_graph import Privilege

pytestmark = pytest.mark.legate

i, j, k, io, jo, ko, ii, ji, ki, kos = dt.index_vars("i j k io jo ko ii ji ki kos")


def _operands(n: int, machine: dt.Machine, specs: tuple[str, str, str], seed: int = 0
              ) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    A = dt.Tensor("A", (n, n), Format(specs[0], machine))
    B = dt.Tensor.from_array("B", b, Format(specs[1], machine))
    C = dt.Tensor.from_array("C", c, Format(specs[2], machine))
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C, b @ c


def summa(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, m: dt.Machine, chunk: int) -> dt.Schedule:
    return (A.schedule()
            .distribute([i, j], [io, jo], [ii, ji], m)
            .split(k, ko, ki, chunk)
            .reorder([ko, ii, ji, ki])
            .communicate(A, jo)
            .communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


def cannon(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, m: dt.Machine) -> dt.Schedule:
    return (A.schedule()
            .distribute([i, j], [io, jo], [ii, ji], m)
            .divide(k, ko, ki, m.x)
            .reorder([ko, ii, ji, ki])
            .rotate(ko, [io, jo], kos)
            .communicate(A, jo)
            .communicate([B, C], kos)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


def johnson(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, m: dt.Machine) -> dt.Schedule:
    return (A.schedule()
            .distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .communicate([A, B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


def _check(A: dt.Tensor, expected: np.ndarray) -> None:
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("n", [1000, 1024])
@pytest.mark.parametrize("grid", [(2, 2), (2, 3)])
def test_summa(legate: object, n: int, grid: tuple[int, int]) -> None:
    m = dt.Machine(dt.Grid(*grid))
    A, B, C, expected = _operands(n, m, ("xy -> xy",) * 3)
    plan = summa(A, B, C, m, 256).compile()
    assert plan.launch_count() == -(-n // 256)
    plan.run()
    _check(A, expected)


@pytest.mark.parametrize("n", [1000, 1024])
@pytest.mark.parametrize("grid", [(2, 2), (2, 3)])
@pytest.mark.parametrize("rotation", ["points", "boxes"])
def test_cannon(legate: object, n: int, grid: tuple[int, int], rotation: str) -> None:
    m = dt.Machine(dt.Grid(*grid))
    A, B, C, expected = _operands(n, m, ("xy -> xy",) * 3)
    plan = Plan.of(lower(cannon(A, B, C, m), rotation=rotation))
    launches = [launch for _, launch in plan.launches()]
    assert all(launch.pinned for launch in launches) == (rotation == "points")
    plan.run()
    _check(A, expected)


@pytest.mark.parametrize("n", [1000, 1024])
def test_johnson(legate: object, n: int) -> None:
    m = dt.Machine(dt.Grid(2, 2, 2))
    A, B, C, expected = _operands(n, m, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"))
    plan = johnson(A, B, C, m).compile()
    (launch,) = [launch for _, launch in plan.launches()]
    assert launch.shape == (2, 2, 2)
    assert launch.operands[0].privilege is Privilege.REDUCE_ADD
    plan.run()
    _check(A, expected)


def test_summa_with_a_symbolic_chunk(legate: object) -> None:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C, expected = _operands(50, m, ("xy -> xy",) * 3)
    sched = summa(A, B, C, m, dt.Param("chunk"))  # type: ignore[arg-type]
    plan = sched.compile(chunk=16)
    assert plan.launch_count() == 4
    plan.run()
    _check(A, expected)


def test_hierarchical_summa_inside_nodes(legate: object) -> None:
    mh = dt.Machine(dt.Grid(2, 2), dt.Grid(2))
    A, B, C, expected = _operands(37, mh, ("[xy -> xy, xy -> x]",) * 3)
    iii, iio = dt.index_vars("iii iio")
    sched = (A.schedule()
             .distribute([i, j], [io, jo], [ii, ji], mh)
             .distribute([ii], [iio], [iii], mh, level=1)
             .split(k, ko, ki, 8)
             .reorder([ko, iii, ji, ki])
             .communicate([B, C], ko))
    plan = sched.compile()
    assert plan.groups[0].vars[:3] == (io, jo, iio)
    assert plan.machine is not None and plan.machine.levels == 2
    plan.run()
    _check(A, expected)


def test_innerprod_into_a_scalar(legate: object) -> None:
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(101), rng.standard_normal(101)
    a = dt.Tensor("a", ())
    X, Y = dt.Tensor.from_array("X", x), dt.Tensor.from_array("Y", y)
    a[()] = X[i] * Y[i]
    plan = a.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(3))).compile()
    assert plan.groups[0].launches[0].operands[0].privilege is Privilege.REDUCE_ADD
    plan.run()
    np.testing.assert_allclose(a.to_numpy(), x @ y, rtol=1e-12)


def test_accumulate_keeps_the_old_output(legate: object) -> None:
    m = dt.Machine(dt.Grid(2, 2))
    rng = np.random.default_rng(2)
    b, c, old = (rng.standard_normal((9, 9)) for _ in range(3))
    A = dt.Tensor.from_array("A", old, Format("xy -> xy", m))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i, j] += B[i, k] * C[k, j]
    summa(A, B, C, m, 4).evaluate()
    np.testing.assert_allclose(A.to_numpy(), old + b @ c, rtol=1e-12)
    summa(A, B, C, m, 4).evaluate()  # runs again on the result, which stays on Legate
    np.testing.assert_allclose(A.to_numpy(), old + 2 * b @ c, rtol=1e-12)


@pytest.mark.parametrize("rotation", ["points", "boxes"])
def test_points_run_on_the_processor_bound_to_their_grid_point(legate: object, rotation: str) -> None:
    from distal import runtime as rt

    m = dt.Machine(dt.Grid(2, 3))
    A, B, C, expected = _operands(24, m, ("xy -> xy",) * 3)
    for sched in (summa(A, B, C, m, 8), cannon(A, B, C, m)):
        plan = Plan.of(lower(sched, rotation=rotation))
        group = plan.groups[0]
        group.body.timings = []
        plan.run()
        _check(A, expected)
        bound = m.bind(rt.processor_count("cpu"))
        threads: dict[int, set[int]] = {}
        for point, _, thread in group.body.timings:
            threads.setdefault(bound[plan.processor_of(group, point)], set()).add(thread)
        # each real processor is one Legate thread; points bound to different processors never share one
        assert all(len(t) == 1 for t in threads.values()), threads
        assert len(set.union(*threads.values())) == len(threads)


def test_ttv_ttm_mttkrp_and_innerprod_leaves(legate: object) -> None:
    rng = np.random.default_rng(3)
    l_, = dt.index_vars("l")
    m = dt.Machine(dt.Grid(2, 2))
    cases: list[tuple[dt.Schedule, dt.Tensor, np.ndarray]] = []
    b3 = rng.standard_normal((9, 7, 5))
    # TTV: A(i,j) = B(i,j,k) c(k)
    A = dt.Tensor("A", (9, 7))
    B, c = dt.Tensor.from_array("B", b3), dt.Tensor.from_array("c", rng.standard_normal(5))
    A[i, j] = B[i, j, k] * c[k]
    s = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).substitute([ii, ji, k], dt.leaf.TTV)
    cases.append((s, A, np.einsum("ijk,k->ij", b3, c.to_numpy())))
    # TTM: A(i,j,l) = B(i,j,k) C(k,l)
    A2 = dt.Tensor("A", (9, 7, 4))
    B2, C2 = dt.Tensor.from_array("B", b3), dt.Tensor.from_array("C", rng.standard_normal((5, 4)))
    A2[i, j, l_] = B2[i, j, k] * C2[k, l_]
    s = A2.schedule().distribute([i, j], [io, jo], [ii, ji], m).substitute([ii, ji, l_, k], dt.leaf.TTM)
    cases.append((s, A2, np.einsum("ijk,kl->ijl", b3, C2.to_numpy())))
    # MTTKRP: A(i,l) = B(i,j,k) C(j,l) D(k,l)
    A3 = dt.Tensor("A", (9, 4))
    B3 = dt.Tensor.from_array("B", b3)
    C3, D3 = dt.Tensor.from_array("C", rng.standard_normal((7, 4))), dt.Tensor.from_array("D", rng.standard_normal((5, 4)))
    A3[i, l_] = B3[i, j, k] * C3[j, l_] * D3[k, l_]
    s = A3.schedule().distribute([i, l_], [io, jo], [ii, ji], m).reorder([io, jo, ii, ji, j, k])
    s = s.substitute([ii, ji, j, k], dt.leaf.MTTKRP)
    cases.append((s, A3, np.einsum("ijk,jl,kl->il", b3, C3.to_numpy(), D3.to_numpy())))
    # INNERPROD: a = B(i,j,k) C(i,j,k), reduced over a 2x2 grid of (i, j) blocks
    a = dt.Tensor("a", ())
    B4, C4 = dt.Tensor.from_array("B", b3), dt.Tensor.from_array("C", rng.standard_normal(b3.shape))
    a[()] = B4[i, j, k] * C4[i, j, k]
    s = a.schedule().distribute([i, j], [io, jo], [ii, ji], m).substitute([ii, ji, k], dt.leaf.INNERPROD)
    cases.append((s, a, np.einsum("ijk,ijk->", b3, C4.to_numpy())))
    for sched, out, want in cases:
        sched.evaluate()
        np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-12, atol=1e-12)


def test_a_dropped_plan_frees_its_tensors_at_the_next_fence(legate: object) -> None:
    """The kernel registry must not pin a plan's tensors (and their Legate data) forever."""
    import gc
    import weakref

    from distal import runtime as rt

    rng = np.random.default_rng(0)
    A = dt.Tensor("A", (40, 40))
    B = dt.Tensor.from_array("B", rng.standard_normal((40, 40)))
    C = dt.Tensor.from_array("C", rng.standard_normal((40, 40)))
    A[i, j] = B[i, k] * C[k, j]
    m = dt.Machine(dt.Grid(2, 2))
    A.schedule().distribute([i, j], [io, jo], [ii, ji], m).evaluate()
    expected = B.to_numpy() @ C.to_numpy()
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-10)
    gone = weakref.ref(B)
    del A, B, C
    rt.fence()
    gc.collect()
    assert gone() is None


def test_launches_have_at_most_six_dimensions(legate: object) -> None:
    """Legate crashes on launches of more than 6 dimensions; extra distributed loops run inside the tasks."""
    a, b, c, d, a1, a2, b1, b2, c1, c2 = dt.index_vars("a b c d a1 a2 b1 b2 c1 c2")
    data = np.random.default_rng(3).standard_normal((4, 4, 4, 2))
    A = dt.Tensor("A", (4, 4, 4, 2))
    B = dt.Tensor.from_array("B", data)
    A[a, b, c, d] = B[a, b, c, d] * 2
    sched = (A.schedule().divide(a, a1, a2, 2).divide(b, b1, b2, 2).divide(c, c1, c2, 2)
             .distribute([a1, a2, b1, b2, c1, c2, d]))
    assert len(sched.distributed_vars()) == 7
    plan = sched.compile()
    assert max(len(launch.lower) for _, launch in plan.launches()) == 6
    plan.run()
    np.testing.assert_allclose(A.to_numpy(), 2 * data, rtol=1e-12)


def test_tensors_of_order_seven_are_refused_on_legate(legate: object) -> None:
    seven = dt.index_vars("a b c d e f g")
    A = dt.Tensor("A", (1,) * 7)
    B = dt.Tensor.from_array("B", np.ones((1,) * 7))
    A[seven] = B[seven]
    with pytest.raises(dt.NotSupportedYet, match="expected at most 6 dimensions for a Legate store"):
        A.schedule().evaluate()
