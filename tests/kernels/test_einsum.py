"""dt.einsum: NumPy's einsum semantics, dtypes, operands of every kind, the plan cache, out=, einsum_plan.

Small problems run eagerly in this process; tests marked `legate` set DISTAL_EAGER=0 so that the same
calls run as Legate plans (the random suite in test_einsum_random.py covers many more cases).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import distal as dt

# the module (distal.api's attribute `einsum` is the function)
einsum_module = importlib.import_module("distal.api.einsum")
RNG = np.random.default_rng(7)

CASES = [
    ("ij,jk->ik", [(5, 4), (4, 3)]),
    ("ij,jk", [(5, 4), (4, 3)]),  # implicit: letters once, sorted
    ("ba", [(2, 3)]),  # implicit transpose
    ("ii", [(4, 4)]),  # trace
    ("ii->i", [(4, 4)]),  # diagonal
    ("iij->j", [(3, 3, 5)]),
    ("ij->", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("b...,b...->...", [(3, 2, 2), (3, 2, 2)]),
    ("ij,j->i", [(3, 4), (1,)]),  # a size-one dimension broadcasts
    ("abc,cde,efa->bdf", [(2, 3, 4), (4, 3, 2), (2, 5, 2)]),
    ("ijk,jl->ilk", [(3, 4, 5), (4, 6)]),
    ("bik,bkj->bij", [(2, 3, 4), (2, 4, 5)]),
    (",ij->ij", [(), (2, 3)]),
]


@pytest.mark.parametrize("subscripts,shapes", CASES)
def test_subscripts_mean_what_numpy_says(subscripts: str, shapes: list[tuple[int, ...]]) -> None:
    ops = [RNG.standard_normal(s) for s in shapes]
    got = dt.einsum(subscripts, *ops)
    want = np.einsum(subscripts, *ops)
    assert isinstance(got, dt.Tensor)
    assert got.concrete_shape() == want.shape
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int64, np.int64), (np.int64, np.float32),
                                    (np.complex128, np.float64), (np.int32, np.int64)])
def test_the_result_has_numpy_s_dtype(dtypes: tuple[type, type]) -> None:
    a = (RNG.standard_normal((4, 5)) * 4).astype(dtypes[0])
    b = (RNG.standard_normal((5, 3)) * 4).astype(dtypes[1])
    got = dt.einsum("ij,jk->ik", a, b)
    want = np.einsum("ij,jk->ik", a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5)


def test_the_sublist_form() -> None:
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    got = dt.einsum(a, [0, 1], b, [1, 2], [0, 2])
    np.testing.assert_allclose(got.to_numpy(), a @ b, rtol=1e-12)


def test_tensor_operands_and_out() -> None:
    a = dt.Tensor.from_array("a", RNG.standard_normal((6, 4)))
    b = RNG.standard_normal((4, 2))
    out = dt.Tensor("out", (6, 2))
    assert dt.einsum("ij,jk->ik", a, b, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy() @ b, rtol=1e-12)
    host = np.zeros((6, 2))
    assert dt.einsum("ij,jk->ik", a, b, out=host) is host
    np.testing.assert_allclose(host, a.to_numpy() @ b, rtol=1e-12)


def test_repeated_calls_reuse_the_plan_and_keep_earlier_results() -> None:
    einsum_module.clear_cache()
    a1, a2 = RNG.standard_normal((5, 5)), RNG.standard_normal((5, 5))
    r1 = dt.einsum("ij,jk->ik", a1, a1)
    before = einsum_module.cache_info()
    r2 = dt.einsum("ij,jk->ik", a2, a2)
    after = einsum_module.cache_info()
    assert after["hits"] == before["hits"] + 1 and after["plans"] == before["plans"]
    np.testing.assert_allclose(r1.to_numpy(), a1 @ a1, rtol=1e-12)  # the first result is its own
    np.testing.assert_allclose(r2.to_numpy(), a2 @ a2, rtol=1e-12)
    dt.einsum("ij,jk->ik", RNG.standard_normal((5, 6)), RNG.standard_normal((6, 5)))  # another shape
    assert einsum_module.cache_info()["misses"] == after["misses"] + 1


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(einsum_module, "CACHE_SIZE", 3)
    einsum_module.clear_cache()
    for n in range(2, 8):
        dt.einsum("ij,jk->ik", np.ones((n, n)), np.ones((n, n)))
    assert einsum_module.cache_info()["plans"] == 3


def test_einsum_plan_says_what_auto_chose_and_why() -> None:
    a = RNG.standard_normal((4, 4))
    plan = dt.einsum_plan("ij,jk->ik", a, a)
    text = plan.explain()
    assert "auto: chose" in text and "auto: considered" in text
    assert plan.eager  # a 4x4 product is too small to pay for Legate tasks
    assert "eagerly in this process" in plan.notes[0]
    out = plan.run()
    np.testing.assert_allclose(out.to_numpy(), a @ a, rtol=1e-12)


@pytest.mark.legate
def test_on_legate_without_eager_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_EAGER", "0")
    einsum_module.clear_cache()
    for subscripts, shapes in CASES:
        ops = [RNG.standard_normal(s) for s in shapes]
        plan = dt.einsum_plan(subscripts, *ops, machine=dt.Machine(dt.Grid(2)))
        assert not plan.eager
        got = dt.einsum(subscripts, *ops, machine=dt.Machine(dt.Grid(2)))
        np.testing.assert_allclose(got.to_numpy(), np.einsum(subscripts, *ops), rtol=1e-12, atol=1e-12,
                                   err_msg=subscripts)


@pytest.mark.legate
@pytest.mark.cupynumeric
def test_cupynumeric_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    import cupynumeric as cn

    monkeypatch.setenv("DISTAL_EAGER", "0")
    a = RNG.standard_normal((20, 30))
    b = RNG.standard_normal((30, 10))
    got = dt.einsum("ij,jk->ik", cn.asarray(a), cn.asarray(b))
    np.testing.assert_allclose(got.to_numpy(), a @ b, rtol=1e-12)


@pytest.mark.legate
def test_a_large_contraction_runs_distributed_on_every_processor(monkeypatch: pytest.MonkeyPatch) -> None:
    # on Legate (with NumPy operands on two cores the eager run on NumPy's two BLAS threads is predicted faster)
    monkeypatch.setenv("DISTAL_EAGER", "0")
    t = RNG.standard_normal((28, 28, 28, 28))
    v = RNG.standard_normal((28, 28, 28, 28))
    plan = dt.einsum_plan("abij,cdij->abcd", t, v, machine=dt.Machine(dt.Grid(2)))
    assert not plan.eager and plan.machine is not None and plan.machine.size == 2
    got = plan.run()
    np.testing.assert_allclose(got.to_numpy(), np.einsum("abij,cdij->abcd", t, v), rtol=1e-10, atol=1e-10)
    ran = plan.groups[0].body.ran
    leaf = next(line for line in str(plan).splitlines() if "leaf:" in line)
    assert ran and all(call in leaf for call in ran)  # explain names the calls that ran


def test_a_cached_plan_follows_distal_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random suite found a plan cached while eager runs were allowed reused after DISTAL_EAGER=0."""
    a = np.ones((3, 4))
    assert dt.einsum_plan("ij->i", a).eager
    dt.einsum("ij->i", a)
    monkeypatch.setenv("DISTAL_EAGER", "0")
    assert not dt.einsum_plan("ij->i", a).eager


@pytest.mark.legate
def test_a_dropped_result_s_store_takes_the_next_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated einsum writes into the store of its last result when that result is gone (memory Legate
    has touched already), never into a result the caller still holds."""
    monkeypatch.setenv("DISTAL_EAGER", "0")
    einsum_module.clear_cache()
    a, b = RNG.standard_normal(50), RNG.standard_normal(40)
    first = dt.einsum("i,j->ij", a, b)
    held = first.storage.store.handle  # type: ignore[union-attr]
    second = dt.einsum("i,j->ij", a, 2 * b)
    assert second.storage.store.handle is not held  # type: ignore[union-attr]  # `first` is alive: its data stays
    np.testing.assert_allclose(first.to_numpy(), np.multiply.outer(a, b), rtol=1e-12)
    spare = second.storage.store.handle  # type: ignore[union-attr]
    del first, second
    third = dt.einsum("i,j->ij", a, 3 * b)
    assert third.storage.store.handle is spare  # type: ignore[union-attr]
    np.testing.assert_allclose(third.to_numpy(), np.multiply.outer(a, 3 * b), rtol=1e-12)
