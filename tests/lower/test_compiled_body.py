"""A task body is compiled once per launch point: later calls replay its steps, never re-walk the statement.

The first call of a point walks the scheduled statement (`Walker.stmt`,
`Provenance.recover`, affine forms) and keeps the steps it ran; every later
call of that point replays them. The replay gives the walk's result bit for
bit (the steps are the walk's own), on the library's kernels and on random
statements, formats and schedules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal import kernels
from distal.cin.walk import Walker
from distal.lower import task_body as kernel_module
from distal.schedule.provenance import Provenance
from tests._strategies import einsum_oracle, schedules, statements
from tests._strategies.machines import machine_schedules


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a compiled launch point walked the statement again")


def _library_plan(name: str) -> tuple[Any, dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(3)
    if name == "summa":
        n = 24
        A = dt.Tensor("A", (n, n))
        B = dt.Tensor.from_array("B", rng.random((n, n)))
        C = dt.Tensor.from_array("C", rng.random((n, n)))
        expected = B.to_numpy() @ C.to_numpy()
        return kernels.build("summa", kernels.machine("summa", 4), A, B, C).compile(), A, expected
    A = dt.Tensor("A", (10, 12))
    B = dt.Tensor.from_array("B", rng.random((10, 12, 7)))
    c = dt.Tensor.from_array("c", rng.random(7))
    expected = np.einsum("ijk,k->ij", B.to_numpy(), c.to_numpy())
    return kernels.build("ttv", kernels.machine("ttv", 4), A, B, c).compile(), A, expected


@pytest.mark.parametrize("name", ["summa", "ttv"])
def test_a_launch_point_walks_the_statement_only_on_its_first_call(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, A, expected = _library_plan(name)
    walks = [0]
    stmt = Walker.stmt

    def counted(self: Walker, s: Any, env: Any) -> None:
        walks[0] += 1
        stmt(self, s, env)

    with monkeypatch.context() as mp:
        mp.setattr(Walker, "stmt", counted)
        plan.run(backend="numpy")
    assert walks[0] > 0
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
    body = plan.groups[0].body
    calls = [p for _, launch in plan.launches() for p in launch.points()]
    assert len(body._programs) == len(set(calls)) > 1  # every point kept its program
    A.set_array(np.zeros(A.concrete_shape()))
    with monkeypatch.context() as mp:  # the second run replays: no walk, no recovery, no affine forms
        mp.setattr(Walker, "stmt", _refuse)
        mp.setattr(Provenance, "recover", _refuse)
        mp.setattr(Provenance, "affine_forms", _refuse)
        mp.setattr(Provenance, "block_points", _refuse)
        plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
    if name == "summa":
        assert body.leaf_calls.get("GEMM", 0) == 2 * len(calls)  # the GEMM leaf ran on both runs


def test_a_thread_pool_point_walks_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback: a loop run on a thread pool inside the task is not kept as steps."""
    i, j, k, io, ii = dt.index_vars("i j k io ii")
    rng = np.random.default_rng(5)
    A = dt.Tensor("A", (8, 6))
    B = dt.Tensor.from_array("B", rng.random((8, 5)))
    C = dt.Tensor.from_array("C", rng.random((5, 6)))
    A[i, j] = B[i, k] * C[k, j]
    plan = (A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2, kind="omp")))
            .reorder([io, ii, j, k]).parallelize(ii, "cpu_thread").compile())
    plan.run(backend="numpy")
    assert plan.groups[0].body._programs == {}
    walks = [0]
    stmt = Walker.stmt

    def counted(self: Walker, s: Any, env: Any) -> None:
        walks[0] += 1
        stmt(self, s, env)

    A.set_array(np.zeros((8, 6)))
    with monkeypatch.context() as mp:
        mp.setattr(Walker, "stmt", counted)
        plan.run(backend="numpy")
    assert walks[0] > 0
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def _run_twice_and_walked(plan: Any, drawn: Any) -> tuple[np.ndarray, ...]:
    """The output of a run that walks every point, of a first run (walk and keep) and of a replaying run."""
    out = plan.tensor(plan.output)
    results = []
    for g in plan.groups:
        g.body.keep_programs = False  # nothing is kept: every call walks
    drawn.reset()
    plan.run(backend="numpy")
    results.append(out.to_numpy().copy())
    assert all(g.body._programs == {} for g in plan.groups)
    for g in plan.groups:
        g.body.keep_programs = True
    for _ in range(2):
        drawn.reset()
        plan.run(backend="numpy")
        results.append(out.to_numpy().copy())
    for g in plan.groups:  # every point that ran kept its program, or says why it walks every time
        ran = {p for _, launch in plan.launches() for p in launch.points()}
        assert {point for point, _ in g.body._programs} | set(g.body.walks) == ran
        assert set(g.body.walks.values()) <= {
            "a loop runs on a thread pool", "an index-mode block too large to keep its index arrays",
            f"more than {kernel_module.PROGRAM_LIMIT} steps"}
    return tuple(results)


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)  # bit for bit: the replay runs the walk's own steps


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_replayed_points_equal_walked_points_on_random_schedules(data: st.DataObject) -> None:
    drawn = data.draw(statements())
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings, _ = data.draw(schedules(out.schedule()))
    plan = sched.compile(**bindings)  # type: ignore[arg-type]
    walked, first, replayed = _run_twice_and_walked(plan, drawn)
    _same(walked, first)
    _same(walked, replayed)
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(replayed, expected, rtol=1e-10, atol=1e-10 * scale)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_replayed_points_equal_walked_points_on_random_machines(data: st.DataObject) -> None:
    drawn = data.draw(statements(max_extent=9))
    sched, bindings = data.draw(machine_schedules(drawn.output.schedule()))
    plan = sched.compile(**bindings)
    walked, first, replayed = _run_twice_and_walked(plan, drawn)
    _same(walked, first)
    _same(walked, replayed)


def test_a_point_with_more_steps_than_the_limit_walks_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program longer than PROGRAM_LIMIT is not kept (it would be a per-element loop held in memory)."""
    plan, A, expected = _library_plan("summa")
    monkeypatch.setattr(kernel_module, "PROGRAM_LIMIT", 0)
    plan.run(backend="numpy")
    body = plan.groups[0].body
    assert body._programs == {}
    assert set(body.walks.values()) == {"more than 0 steps"}
    assert set(body.walks) == {p for _, launch in plan.launches() for p in launch.points()}
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
