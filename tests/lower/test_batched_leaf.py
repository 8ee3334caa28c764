"""substitute() takes a matrix product under batch loops: GEMM over (i, j, k) with b outside, or
dt.leaf.BATCHED_GEMM over (b, i, j, k); both compute C(b,i,j) = A(b,i,k) * B(b,k,j) as batched GEMMs."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

RNG = np.random.default_rng(3)


def _batched() -> tuple[dt.Tensor, np.ndarray, tuple[dt.IndexVar, ...]]:
    b, i, j, k, bo, bi = dt.index_vars("b i j k bo bi")
    a, c = RNG.standard_normal((6, 20, 30)), RNG.standard_normal((6, 30, 10))
    A, B = dt.Tensor.from_array("A", a), dt.Tensor.from_array("B", c)
    C = dt.Tensor("C", (6, 20, 10))
    C[b, i, j] = A[b, i, k] * B[b, k, j]
    return C, a @ c, (b, i, j, k, bo, bi)


def _schedules() -> list[tuple[dt.Tensor, np.ndarray, dt.Schedule]]:
    out = []
    for leaf in ("GEMM", "BATCHED_GEMM"):
        C, want, (b, i, j, k, bo, bi) = _batched()
        sched = C.schedule().distribute([b], [bo], [bi], dt.Machine(dt.Grid(2)))
        loops = [i, j, k] if leaf == "GEMM" else [bi, i, j, k]
        out.append((C, want, sched.substitute(loops, dt.leaf.get(leaf))))
    return out


def test_gemm_under_a_batch_loop_and_batched_gemm_are_accepted_and_compute_the_product() -> None:
    for C, want, sched in _schedules():
        plan = sched.compile()
        plan.run(backend="numpy")
        np.testing.assert_allclose(C.to_numpy(), want, rtol=1e-12)
        leaf = next(line for line in str(plan).splitlines() if "leaf:" in line)
        assert "batched GEMM 3 x [20x30] @ [30x10] by " in leaf  # each task's blocks: one batched GEMM
        assert plan.groups[0].body.ran and all(call in leaf for call in plan.groups[0].body.ran)
        sched.evaluate(backend="reference")
        np.testing.assert_allclose(C.to_numpy(), want, rtol=1e-12)


def test_gemm_over_all_four_loops_is_still_refused_naming_the_batched_leaf() -> None:
    C, _, (b, i, j, k, _, _) = _batched()
    with pytest.raises(dt.ScheduleError, match=r"expected a statement of pattern ac,cb->ab for GEMM, but found "
                       r"abd,adc->abc in C\(b,i,j\) \+= A\(b,i,k\) \* B\(b,k,j\); dt.leaf.BATCHED_GEMM matches it"):
        C.schedule().substitute([b, i, j, k], dt.leaf.GEMM)


@pytest.mark.legate
def test_batched_leaves_on_legate() -> None:
    for C, want, sched in _schedules():
        plan = sched.compile()
        plan.run()
        np.testing.assert_allclose(C.to_numpy(), want, rtol=1e-12)
