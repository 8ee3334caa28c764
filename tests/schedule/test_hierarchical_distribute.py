"""Hierarchical distribute (paper 3.3) keeps the leaf's loops innermost; explain names machine levels (issue 27 item 5)."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt

i, j, k = dt.index_vars("i j k")
io, jo, ii, ji, ko, ki = dt.index_vars("io jo ii ji ko ki")
iio, jio, iii, jii = dt.index_vars("iio jio iii jii")


def _matmul(n: int, m: dt.Machine | None = None, spec: list[str] | None = None) -> tuple[dt.Tensor, ...]:
    rng = np.random.default_rng(5)
    f = dt.Format(spec, m) if spec is not None and m is not None else None
    A = dt.Tensor("A", (n, n), f)
    B = dt.Tensor.from_array("B", rng.random((n, n)), f)
    C = dt.Tensor.from_array("C", rng.random((n, n)), f)
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def test_a_level_one_distribute_goes_below_the_level_zero_loops() -> None:
    # main left jo below ii (∀io ∀ii ∀jo ∀ji ∀k) and refused the substitute until a hand-written reorder([jo, ii])
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    A, B, C = _matmul(8)
    sched = A.schedule().distribute([i], [io], [ii], m).distribute([j], [jo], [ji], m, level=1)
    assert str(sched).splitlines()[0] == "∀io ∀jo ∀ii ∀ji ∀k A(i,j) += B(i,k) * C(k,j)"
    plan = sched.substitute([ii, ji, k], dt.leaf.GEMM).compile()
    assert plan.groups[0].vars == (io, jo) and plan.machine == m
    assert "on the machine: io along x of level 0 (between nodes), jo along x of level 1 (inside each node)" in str(plan)
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_the_library_form_and_a_flat_distribute_keep_their_order() -> None:
    m = dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))
    A, _, _ = _matmul(8)
    flat = A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
    assert str(flat).splitlines()[0] == "∀io ∀jo ∀ii ∀ji ∀k A(i,j) += B(i,k) * C(k,j)"
    two = flat.distribute([ii, ji], [iio, jio], [iii, jii], m, level=1)
    assert str(two).splitlines()[0] == "∀io ∀jo ∀iio ∀jio ∀iii ∀jii ∀k A(i,j) += B(i,k) * C(k,j)"
    # a loop the user put above the distributed ones stays where it is
    outer = A.schedule().reorder([k, i, j]).distribute([i, j], [io, jo], [ii, ji], dt.Grid(2, 2))
    assert str(outer).splitlines()[0] == "∀k ∀io ∀jo ∀ii ∀ji A(i,j) += B(i,k) * C(k,j)"


def test_a_level_one_distribute_after_a_split_goes_above_the_step() -> None:
    m = dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))
    A, B, C = _matmul(8, m, ["xy -> xy", "xy -> xy"])
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 4)
             .reorder([ko, ii, ji, ki]).distribute([ii, ji], [iio, jio], [iii, jii], m, level=1))
    assert str(sched).splitlines()[0].startswith("∀io ∀jo ∀iio ∀jio ∀ko ∀iii ∀jii ∀ki")
    sched = sched.communicate(A, jio).communicate([B, C], ko).substitute([iii, jii, ki], dt.leaf.GEMM)
    text = sched.compile().explain()
    assert ("on the machine: io along x of level 0 (between nodes), jo along y of level 0 (between nodes), "
            "iio along x of level 1 (inside each node), jio along y of level 1 (inside each node)") in text
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_a_flat_machine_names_its_dimensions() -> None:
    m = dt.Machine(dt.Grid(2, 2))
    A, _, _ = _matmul(4, m, ["xy -> xy"])
    text = str(A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile())
    assert "on the machine: io along x, jo along y" in text


@pytest.fixture(scope="module")
def legate() -> object:
    """Legate, started once per process with distal's defaults."""
    from distal import runtime as rt

    return rt.ensure_started()


@pytest.mark.legate
def test_the_level_one_distribute_runs_on_legate(legate: object) -> None:
    m = dt.Machine(dt.Grid(2), dt.Grid(2))
    A, B, C = _matmul(6)
    (A.schedule().distribute([i], [io], [ii], m).distribute([j], [jo], [ji], m, level=1)
     .substitute([ii, ji, k], dt.leaf.GEMM).evaluate())
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)
