"""Distributed reductions on hierarchical machines run a synthesized program of collectives.

Johnson-like matrix products (the reduction variable k distributed across
nodes and inside them) and inner products on hierarchical machines: the
plan picks a multi-step program, and on Legate (and with the NumPy
executor) the result equals the single-step Legate reduction and numpy
exactly for int64 and within 1e-12 for float64.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal.api.plan import Plan
from distal.errors import DistalError
from distal.lower import lower
from distal.lower.task_graph import Privilege
from tests._strategies import einsum_oracle, statements
from tests._strategies.machines import MACHINES, machine_schedules

pytestmark = pytest.mark.legate


def _plan(*args: Any, **kwargs: Any) -> Plan:
    """`distal.lower.lower`'s plan as the user's `Plan` (`Plan.of`), which runs, explains and analyses."""
    return Plan.of(lower(*args, **kwargs))

i, j, k = dt.index_vars("i j k")
io, jo, ko, ii, ji, ki, kio, kii, iio, iii, jio, jii, ks, kt = dt.index_vars(
    "io jo ko ii ji ki kio kii iio iii jio jii ks kt")

Case = tuple[dt.Schedule, dt.Tensor, Callable[[], np.ndarray]]


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "int64":
        return rng.integers(-10**6, 10**6, shape)
    return rng.standard_normal(shape)


def _matmul(shape: tuple[int, int, int], dtype: str, seed: int = 0
            ) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor, np.ndarray]:
    n, l_, m = shape
    rng = np.random.default_rng(seed)
    b, c = _data(rng, (n, l_), dtype), _data(rng, (l_, m), dtype)
    A = dt.Tensor("A", (n, m), dtype=dtype)
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C, b @ c


def johnson_2x1_2x2(dtype: str) -> Case:
    """k across the 2 nodes and across 2 processors of a node, i over the other 2: groups of 4 per tile of A."""
    m = dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2))
    A, _, _, want = _matmul((7, 12, 5), dtype)
    s = (A.schedule().distribute([k, j], [ko, jo], [ki, ji], m)
         .distribute([ki, i], [kio, iio], [kii, iii], m, level=1))
    return s, A, lambda: want


def johnson_2_2(dtype: str) -> Case:
    """k split over both levels of 2 nodes of 2 processors: one group of 4, A given whole."""
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    A, _, _, want = _matmul((5, 11, 6), dtype, seed=1)
    s = (A.schedule().distribute([k], [ko], [ki], m)
         .distribute([ki], [kio], [kii], m, level=1)
         .reorder([ko, kio, i, j, kii])
         .substitute([i, j, kii], dt.leaf.GEMM))
    return s, A, lambda: want


def johnson_cube_2(dtype: str) -> Case:
    """Johnson on a 2x2x2 grid of nodes, k split again over 2 processors per node: groups of 4 per tile."""
    m = dt.Machine(dt.Grid(2, 2, 2), dt.Grid(2))
    A, _, _, want = _matmul((6, 9, 7), dtype, seed=2)
    s = (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
         .distribute([ki], [kio], [kii], m, level=1)
         .communicate(A, ko))
    return s, A, lambda: want


def innerprod_2_2(dtype: str) -> Case:
    """a = x(i) y(i), i over 2 nodes of 2 processors: one group of 4 into a scalar."""
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    rng = np.random.default_rng(3)
    x, y = _data(rng, (101,), dtype), _data(rng, (101,), dtype)
    a = dt.Tensor("a", (), dtype=dtype)
    X, Y = dt.Tensor.from_array("X", x), dt.Tensor.from_array("Y", y)
    a[()] = X[i] * Y[i]
    s = a.schedule().distribute([i], [io], [ii], m).distribute([ii], [iio], [iii], m, level=1)
    return s, a, lambda: np.asarray(x @ y)


def innerprod_3d_2x1_2x2(dtype: str) -> Case:
    """a = B(i,j,k) C(i,j,k) with (i, j) over 2x1 nodes and 2x2 processors, INNERPROD leaf."""
    m = dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2))
    rng = np.random.default_rng(4)
    b, c = _data(rng, (9, 6, 5), dtype), _data(rng, (9, 6, 5), dtype)
    a = dt.Tensor("a", (), dtype=dtype)
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    a[()] = B[i, j, k] * C[i, j, k]
    s = (a.schedule().distribute([i, j], [io, jo], [ii, ji], m)
         .distribute([ii, ji], [iio, jio], [iii, jii], m, level=1)
         .substitute([iii, jii, k], dt.leaf.INNERPROD))
    return s, a, lambda: np.asarray(np.einsum("ijk,ijk->", b, c))


def steps_along_the_output(dtype: str) -> Case:
    """A(i) = B(i,k) c(k), k over both levels, i in sequential steps: partials are the whole output."""
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    rng = np.random.default_rng(5)
    b, c = _data(rng, (7, 8), dtype), _data(rng, (8,), dtype)
    A = dt.Tensor("A", (7,), dtype=dtype)
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("c", c)
    A[i] = B[i, k] * C[k]
    s = (A.schedule().distribute([k], [ko], [ki], m).distribute([ki], [kio], [kii], m, level=1)
         .split(i, ks, kt, 3).reorder([ko, kio, ks, kii, kt]).communicate(B, ks))
    return s, A, lambda: b @ c


CASES = {f.__name__: f for f in (johnson_2x1_2x2, johnson_2_2, johnson_cube_2, innerprod_2_2,
                                 innerprod_3d_2x1_2x2, steps_along_the_output)}


def _equal(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    if dtype == "int64":
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    else:
        scale = max(1.0, float(np.abs(want).max(initial=0)))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * scale)


def _synthesized(plan: Plan) -> None:
    red = plan.reduction
    assert red is not None and red.synthesized, red
    assert len(red.steps) > 1, red.steps
    assert red.plan is not None and len(red.plan.best.lowered.steps) == len(red.steps)
    assert red.seconds < red.allreduce_seconds
    assert all(launch.operands[red.tensor].privilege is Privilege.REDUCE_ADD for _, launch in plan.launches())


@pytest.mark.parametrize("dtype", ["int64", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_synthesized_program_equals_the_single_step_reduction(legate: object, name: str, dtype: str) -> None:
    from distal.runtime._execute import run_plan
    from distal.runtime._reduce import ReduceRecord

    sched, out, want = CASES[name](dtype)
    plan = sched.compile()
    _synthesized(plan)
    assert plan.reduction is not None
    trace: list[ReduceRecord] = []
    run_plan(plan, trace=trace)
    got = out.to_numpy()
    assert len(trace) == len(plan.reduction.steps) > 1
    _equal(got, want(), dtype)

    single = _plan(sched, reduction="legate")
    assert single.reduction is not None and not single.reduction.synthesized
    single.run()
    _equal(got, out.to_numpy(), dtype)

    plan.run(backend="numpy")
    _equal(out.to_numpy(), want(), dtype)


def test_partial_launches(legate: object) -> None:
    # johnson_2x1_2x2 splits its launch per node (k's color is 2 * p_node + p_proc): two
    # launches over part of the domain, each run pinned per processor, into one set of partials
    sched, out, want = johnson_2x1_2x2("int64")
    plan = _plan(sched, rotation="boxes")
    assert plan.launch_count() == 2 and not any(g.covers_domain(launch) for g, launch in plan.launches())
    _synthesized(plan)
    plan.run()
    _equal(out.to_numpy(), want(), "int64")
    # one pinned launch per point: each point updates its tile in turn (read-write), no reduction
    points = _plan(sched, rotation="points")
    assert points.launch_count() == 8 and points.reduction is None
    points.run()
    _equal(out.to_numpy(), want(), "int64")


def test_accumulate_adds_the_reduction_to_the_old_output(legate: object) -> None:
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    rng = np.random.default_rng(6)
    b, c, old = (rng.integers(-1000, 1000, s) for s in ((6, 10), (10, 4), (6, 4)))
    A = dt.Tensor.from_array("A", old)
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i, j] += B[i, k] * C[k, j]
    sched = A.schedule().distribute([k], [ko], [ki], m).distribute([ki], [kio], [kii], m, level=1)
    plan = sched.compile()
    _synthesized(plan)
    plan.run()
    np.testing.assert_array_equal(A.to_numpy(), old + b @ c)
    plan.run()  # again, on the result that stays on Legate
    np.testing.assert_array_equal(A.to_numpy(), old + 2 * (b @ c))


def test_explain_shows_the_program_and_both_predicted_times() -> None:
    sched, _, _ = johnson_2x1_2x2("float64")
    plan = sched.compile()
    red = plan.reduction
    assert red is not None
    text = plan.explain()
    assert "distributed reduction into A: synthesized program of collectives" in text
    assert red.program in text and "ReduceScatter-AllReduce-AllGather" in text
    assert "predicted" in text and "single AllReduce" in text
    for step in red.steps:
        assert step in text
    assert "reduced together: [[0, 2, 4, 6], [1, 3, 5, 7]]" in text
    assert "reduction into A: synthesized" in str(plan)
    data = plan.stats()["reduction"]
    assert data["strategy"] == "synthesized" and data["groups"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert data["program_shape"] == "ReduceScatter-AllReduce-AllGather" and len(data["steps"]) == 3
    assert 0 < data["predicted_seconds"] < data["allreduce_seconds"]
    assert data["partial_shape"] == [4, 5] and data["partial_bytes"] == 160.0


def test_flat_machines_keep_legates_reduction_unless_asked(legate: object) -> None:
    m = dt.Machine(dt.Grid(2, 2, 2))
    A, _, _, want = _matmul((6, 6, 6), "int64")
    sched = A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
    plan = sched.compile()
    assert plan.reduction is not None and plan.reduction.strategy == "legate"
    assert plan.reduction.reason == "flat machine: one Legate reduction"
    assert "distributed reduction into A: flat machine: one Legate reduction" in plan.explain()
    assert plan.stats()["reduction"]["program"] is None
    forced = sched.compile(reduction="synthesized")  # type: ignore[arg-type]
    assert forced.reduction is not None and forced.reduction.synthesized
    assert forced.reduction.groups == ((0, 1), (2, 3), (4, 5), (6, 7))
    for p in (plan, forced):
        p.run()
        np.testing.assert_array_equal(A.to_numpy(), want)


def test_plans_without_a_distributed_reduction_have_none() -> None:
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    A, _, _, _ = _matmul((8, 6, 6), "int64")
    plan = A.schedule().distribute([i], [io], [ii], m).distribute([ii], [iio], [iii], m, level=1).compile()
    assert plan.reduction is None and plan.stats()["reduction"] is None
    assert "reduction into" not in plan.explain()


def test_single_allreduce_inside_nodes_keeps_legates_reduction(legate: object) -> None:
    # (i, j) over 2x2 nodes, k over 2 processors of a node: each tile is reduced inside
    # one node, where the simulated-best program is the single AllReduce.
    m = dt.Machine(dt.Grid(2, 2), dt.Grid(2))
    A, _, _, want = _matmul((6, 7, 5), "int64")
    sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).distribute([k], [kio], [kii], m, level=1)
    plan = sched.compile()
    red = plan.reduction
    assert red is not None and red.strategy == "legate"
    assert red.reason == "the simulated-best program is the single AllReduce: one Legate reduction"
    assert red.groups == ((0, 1), (2, 3), (4, 5), (6, 7)) and red.shape == "AllReduce"
    assert "the program it would run" in plan.explain()
    forced = _plan(sched, reduction="synthesized")
    assert forced.reduction is not None and forced.reduction.synthesized and len(forced.reduction.steps) == 1
    for p in (plan, forced):
        p.run()
        np.testing.assert_array_equal(A.to_numpy(), want)


def test_environment_variable_and_refused_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    sched, _, _ = innerprod_2_2("float64")
    monkeypatch.setenv("DISTAL_REDUCTION", "legate")
    plan = sched.compile()
    assert plan.reduction is not None and plan.reduction.strategy == "legate"
    assert plan.reduction.reason == "reduction='legate': one Legate reduction"
    monkeypatch.setenv("DISTAL_REDUCTION", "auto")
    auto = sched.compile().reduction
    assert auto is not None and auto.synthesized
    with pytest.raises(DistalError, match="expected a reduction strategy in"):
        _plan(sched, reduction="tree")


HIERARCHICAL = (dt.Machine(dt.Grid(2), dt.Grid(2)), dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2)),
                dt.Machine(dt.Grid(2, 2), dt.Grid(2)))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_schedules_with_the_synthesized_reduction(legate: object, data: st.DataObject) -> None:
    """Any machine, flat ones too, with reduction="synthesized": Legate and NumPy equal numpy.einsum."""
    drawn = data.draw(statements(max_extent=9))
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    machines = data.draw(st.sampled_from([MACHINES, HIERARCHICAL]))
    sched, bindings = data.draw(machine_schedules(out.schedule(), machines=machines))
    plan = _plan(sched, bindings, reduction="synthesized", rotation=data.draw(st.sampled_from(["points", "boxes"])))
    for backend in ("legate", "numpy"):
        drawn.reset()
        plan.run(backend=backend)
        got = out.to_numpy()
        scale = max(1.0, float(np.abs(expected).max(initial=0)))
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


def test_the_random_schedules_lower_to_synthesized_programs() -> None:
    # Its own draws of the random test's cases (lowered, not run), seeded, so
    # that it passes alone and in any order: some are synthesized, some multi-step.
    seen: collections.Counter[str] = collections.Counter()

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def draw(data: st.DataObject) -> None:
        drawn = data.draw(statements(max_extent=9))
        out = drawn.output
        machines = data.draw(st.sampled_from([MACHINES, HIERARCHICAL]))
        sched, bindings = data.draw(machine_schedules(out.schedule(), machines=machines))
        red = _plan(sched, bindings, reduction="synthesized",
                    rotation=data.draw(st.sampled_from(["points", "boxes"]))).reduction
        seen["synthesized"] += red is not None and red.synthesized
        seen["multi-step"] += red is not None and red.synthesized and len(red.steps) > 1

    draw()
    for kind in ("synthesized", "multi-step"):
        assert seen[kind] > 0, f"no random case was {kind}: {dict(seen)}"
