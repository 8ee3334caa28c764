"""A store placed from a host array keeps that array beside it (its host mirror) until a plan writes the store.

An eager dt.einsum on placed tensors reads the mirror instead of reading the store back from Legate (issue 33's
drop-in table: two 3.3 MB operands cost 1.6 ms of a 5 ms call). Every test checks the one invariant that
matters: what an eager run reads equals the data on Legate, whatever wrote the store since it was placed.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal.notation.storage import host_mirror
from runtime import _tensor_storage

pytestmark = pytest.mark.legate

RNG = np.random.default_rng(21)


def _refuse_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object) -> np.ndarray:
        raise AssertionError("an eager run read a placed operand back from Legate")

    monkeypatch.setattr(_tensor_storage.TensorStore, "to_numpy", refuse)
    monkeypatch.setattr(_tensor_storage.FormatStore, "to_numpy", refuse)


@pytest.mark.parametrize("formatted", [False, True])
def test_an_eager_run_reads_placed_operands_from_their_mirror(formatted: bool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = RNG.random((30, 20)), RNG.random((20, 10))
    fmt = dt.Format("xy -> x", dt.Machine(dt.Grid(2))) if formatted else None
    ta = dt.Tensor.from_array("A", a, fmt).place()
    tb = dt.Tensor.from_array("B", b).place()
    mirror = host_mirror(ta.storage)
    assert ta.storage.on_legate and mirror is not None and not mirror.flags.writeable
    np.testing.assert_array_equal(mirror, a)
    a[...] = 0.0  # the user's own array: the tensor holds a copy, and so does its mirror
    np.testing.assert_array_equal(host_mirror(ta.storage), ta.to_numpy())
    _refuse_reads(monkeypatch)
    plan = dt.einsum_plan("ij,jk->ik", ta, tb)
    assert plan.eager
    np.testing.assert_allclose(dt.einsum("ij,jk->ik", ta, tb).to_numpy(), host_mirror(ta.storage) @ b, rtol=1e-12)


def test_a_plan_writing_the_store_drops_the_mirror_and_eager_reads_the_new_data(monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    a, b = RNG.random((24, 16)), RNG.random((16, 16))
    ta = dt.Tensor.from_array("A", a).place()
    tb = dt.Tensor.from_array("B", b).place()
    shared = dt.Tensor("S", ta.concrete_shape())
    shared.bind(ta.storage)  # two tensors over one storage: a write through either is a write to both
    monkeypatch.setenv("DISTAL_EAGER", "0")  # the write runs on Legate
    dt.einsum("ij,jk->ik", RNG.random((24, 16)), b, out=shared)  # written in place, into the shared store
    monkeypatch.delenv("DISTAL_EAGER")
    assert not np.allclose(ta.to_numpy(), a)  # the write reached ta's store
    for t in (ta, shared):
        on_legate = t.to_numpy()
        got = dt.einsum("ij,jk->ik", t, tb).to_numpy()
        np.testing.assert_allclose(got, on_legate @ b, rtol=1e-12)
        mirror = host_mirror(t.storage)
        assert mirror is None or np.array_equal(mirror, on_legate)


def test_only_distals_own_arrays_of_the_stores_shape_up_to_the_cap_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    a = RNG.random((8, 6))
    placed = dt.Tensor.from_array("P", a).place().storage
    placed.mirror = None
    assert host_mirror(_tensor_storage.with_mirror(placed, a[::1, ::2].copy()[:, :3])) is None  # another shape
    assert host_mirror(_tensor_storage.with_mirror(placed, a.view())) is None  # a view of someone's data
    assert host_mirror(_tensor_storage.with_mirror(placed, a.astype(np.float32))) is None  # another dtype
    monkeypatch.setattr(_tensor_storage, "MIRROR_MAX", a.nbytes - 1)
    assert host_mirror(_tensor_storage.with_mirror(placed, a.copy())) is None  # over the cap
    monkeypatch.setattr(_tensor_storage, "MIRROR_MAX", a.nbytes)
    assert host_mirror(_tensor_storage.with_mirror(placed, a.copy())) is not None


def test_repeated_eager_calls_on_host_data_run_the_contraction_straight(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second eager call on placed tensors with mirrors, or on an earlier result, runs its cached contraction
    on their host arrays without binding a plan (108 us a call had been spent there against 45 us on NumPy
    operands), and still reads what the store holds once a plan has written it."""
    from distal.api import einsum as einsum_module
    from distal.api.plan import Plan

    a, b = RNG.random((28, 18)), RNG.random((18, 12))
    ta = dt.Tensor.from_array("A", a).place()
    tb = dt.Tensor.from_array("B", b).place()
    first = dt.einsum("ij,jk->ik", ta, tb)  # compiles (or finds) the eager plan
    runs: list[Plan] = []
    run = Plan.run
    monkeypatch.setattr(Plan, "run", lambda self, *args, **kw: (runs.append(self), run(self, *args, **kw))[1])
    _refuse_reads(monkeypatch)
    again = dt.einsum("ij,jk->ik", ta, tb)
    chained = dt.einsum("ik,jk->ij", again, tb)  # an eager result (host data) as an operand
    chained_again = dt.einsum("ik,jk->ij", first, tb)
    assert len(runs) == 1, runs  # only the plan of the new statement, on its first call
    np.testing.assert_allclose(again.to_numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(chained_again.to_numpy(), a @ b @ b.T, rtol=1e-12)
    np.testing.assert_allclose(chained.to_numpy(), a @ b @ b.T, rtol=1e-12)
    monkeypatch.undo()
    new = RNG.random((28, 18))
    monkeypatch.setenv("DISTAL_EAGER", "0")  # a plan on Legate writes ta's store: its mirror goes
    dt.einsum("ij,jk->ik", new, np.eye(18), out=ta)
    monkeypatch.delenv("DISTAL_EAGER")
    assert host_mirror(ta.storage) is None
    np.testing.assert_allclose(dt.einsum("ij,jk->ik", ta, tb).to_numpy(), new @ b, rtol=1e-12)
    assert einsum_module.cache_info()["hits"] > 0
