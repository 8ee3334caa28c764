"""What dt.einsum's candidates pay for host data (distal.search.host_moves): the eager candidate's matrix products
on every BLAS thread, the Legate candidates' copies of host operands onto Legate and of the result back.

No Legate: the schedules are priced on the session's pinned model of this machine (tests/conftest.py), with the
BLAS thread count fixed by the test.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

import distal as dt
import distal.runtime as rt
from distal import model
from distal.search import host_moves

einsum_module = importlib.import_module("distal.api.einsum")


def _schedule(spec: str, *shapes: tuple[int, ...]) -> dt.Schedule:
    """The default schedule of `spec` over host tensors of these shapes (float64 zeros)."""
    lhs, out = spec.split("->")
    letters = {c: v for c, v in zip(dict.fromkeys(lhs.replace(",", "") + out),
                                    dt.index_vars(" ".join(dict.fromkeys(lhs.replace(",", "") + out))))}
    tensors = [dt.Tensor.from_array(f"T{n}", np.zeros(s)) for n, s in enumerate(shapes)]
    ext = {c: k for term, s in zip(lhs.split(","), shapes) for c, k in zip(term, s)}
    R = dt.Tensor("R", tuple(ext[c] for c in out))
    rhs = tensors[0][tuple(letters[c] for c in lhs.split(",")[0])]
    for t, term in zip(tensors[1:], lhs.split(",")[1:]):
        rhs = rhs * t[tuple(letters[c] for c in term)]
    R[tuple(letters[c] for c in out)] = rhs
    return R.schedule()


def _eager(sched: dt.Schedule, threads: int, monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(rt, "blas_user_threads", lambda: threads)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # the shares are capped at the cores
    return host_moves.eager_prediction(sched, sched, model.this_machine())[0]


def test_eager_matrix_products_run_on_every_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The eager candidate was timed on one processor although its GEMMs use every BLAS thread (issue 33)."""
    sched = _schedule("ij,jk->ik", (1400, 1400), (1400, 1400))
    one, two = _eager(sched, 1, monkeypatch), _eager(sched, 2, monkeypatch)
    assert two < 0.6 * one / host_moves.eager_kernels(1400 ** 3)  # on NumPy's kernels where they are not distal's


def test_eager_products_below_own_from_are_priced_at_numpys_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """An eager call's products below distal.contract.OWN_FROM run on NumPy's matmul and threads (one pool of
    BLAS threads with the user's NumPy calls): priced at NumPy's kernels where distal loaded kernels of its own."""
    from distal import contract, tile_blas

    monkeypatch.setattr(rt, "blas_user_threads", lambda: 2)
    own = tile_blas.library() is not None
    assert host_moves.eager_kernels(contract.OWN_FROM / 2) == (host_moves.NUMPY_KERNELS if own else 1.0)
    assert host_moves.eager_kernels(contract.OWN_FROM) == 1.0
    monkeypatch.setattr(rt, "blas_user_threads", lambda: 1)  # one thread: distal's own kernels, no pool
    assert host_moves.eager_kernels(contract.OWN_FROM / 2) == 1.0
    mm = model.this_machine()
    slower = host_moves.threaded(mm, 2, 0.5)  # two threads at half the kernels' rate: one thread's rate
    assert slower.processor.rate("GEMM", 2e8) == pytest.approx(mm.processor.rate("GEMM", 1e8))


def test_eager_element_wise_work_stays_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    sched = _schedule("ij,ij->ij", (1400, 1400), (1400, 1400))
    assert _eager(sched, 2, monkeypatch) == _eager(sched, 1, monkeypatch)


def test_legate_candidates_pay_the_copies_in_and_the_result_back() -> None:
    sched = _schedule("ij,jk->ik", (300, 200), (200, 100))
    fixed_in, rate_in = host_moves.COPY_IN
    copy_in = 2 * fixed_in + (300 * 200 + 200 * 100) * 8 / rate_in
    assert host_moves.moving_seconds(sched, False) == pytest.approx(copy_in)
    back = host_moves.read_back_seconds(sched)
    assert host_moves.READ_BACK[0][1] < back < host_moves.READ_BACK[1][1]  # 240 KB: between 8 KiB and 1 MiB
    assert host_moves.copy_in_seconds(sched) == pytest.approx(copy_in + back)


def test_measured_curves_interpolate_and_extend() -> None:
    points = host_moves.READ_BACK
    assert host_moves._measured(points, 1) == points[0][1]
    (b0, s0), (b1, s1) = points[1], points[2]
    assert host_moves._measured(points, (b0 + b1) / 2) == pytest.approx((s0 + s1) / 2)
    (b0, s0), (b1, s1) = points[-2], points[-1]
    assert host_moves._measured(points, 2 * b1 - b0) == pytest.approx(2 * s1 - s0)


def test_threaded_models_only_the_matrix_product_kinds() -> None:
    mm = model.this_machine()
    two = host_moves.threaded(mm, 2)
    assert two.processor.rate("GEMM", 2e8) == pytest.approx(2 * mm.processor.rate("GEMM", 1e8))
    assert two.processor.rate("GENERIC", 2e8) == mm.processor.rate("GENERIC", 2e8)
    assert host_moves.threaded(mm, 1) is mm


def test_a_matmul_numpy_does_in_milliseconds_runs_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33's table: at NumPy's 5 ms sizes auto chose Legate for NumPy operands (0.33-0.48x NumPy's time):
    copying them on and the result back costs more than the second processor saves over NumPy's two BLAS
    threads."""
    monkeypatch.setattr(rt, "blas_user_threads", lambda: 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    einsum_module.clear_cache()
    a = np.zeros((640, 640))
    plan = dt.einsum_plan("ij,jk->ik", a, a, machine=dt.Machine(dt.Grid(2)))
    assert plan.eager, plan.notes[0]
    einsum_module.clear_cache()



def test_the_eager_price_holds_while_distal_s_tasks_are_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """distal limits BLAS to one thread while its Legate tasks are queued; the eager candidate is priced on the
    user's count all the same, so a plan cached then is the one of the user's setting."""
    from threadpoolctl import threadpool_limits

    from distal.runtime import _blas

    sched = _schedule("ij,jk->ik", (1400, 1400), (1400, 1400))
    mm = model.this_machine()
    with threadpool_limits(2, user_api="blas"):  # the user's setting: two threads
        before = host_moves.eager_prediction(sched, sched, mm)[0]
        monkeypatch.setattr(_blas, "_threads", 1)
        _blas.limit()
        try:
            during = host_moves.eager_prediction(sched, sched, mm)[0]
        finally:
            _blas.restore()
    assert during == before


def test_the_eager_candidate_pays_its_large_result_s_new_pages_not_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """An eager result is read where it is (`host_data`) or handed over (`dt.einsum(...).to_numpy()`): the eager
    candidate pays the new pages of a result from FRESH_FROM (NEW_PAGES), not a copy of it, which had sent
    attention's 1.36 GB result to Legate at twice NumPy's time; a Legate candidate pays the read-back."""
    small = _schedule("ij,jk->ik", (4096, 4), (4, 1000))  # under 32 MiB: below FRESH_FROM
    large = _schedule("ij,jk->ik", (4096, 4), (4, 8192))  # 256 MiB
    with_pages = {k: _eager(s, 1, monkeypatch) for k, s in (("small", small), ("large", large))}
    monkeypatch.setattr(host_moves, "NEW_PAGES", ((1, 0.0), (2, 0.0)))
    without = {k: _eager(s, 1, monkeypatch) for k, s in (("small", small), ("large", large))}
    assert with_pages["small"] == without["small"]
    assert with_pages["large"] - without["large"] == pytest.approx(8.43e-3)  # NEW_PAGES at 256 MiB
    assert host_moves.read_back_seconds(large) == pytest.approx(29.15e-3)  # READ_BACK at 256 MiB
    assert host_moves.read_back_seconds(large) > 3 * 8.43e-3


def test_candidates_on_distals_own_threads_pay_for_numpys_spinning_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a threaded NumPy call OpenBLAS's workers spin for SPIN_SECONDS: dt.einsum's candidates that run on
    distal's own threads (Legate's processors) pay min(time, SPIN_SECONDS) beside them, said in their notes;
    the eager candidate on NumPy's own threads does not; with one BLAS thread nobody does."""
    from distal.search import auto

    monkeypatch.setattr(rt, "blas_user_threads", lambda: 2)
    assert host_moves.shared_cores_seconds(0.01) == 0.01
    assert host_moves.shared_cores_seconds(5.0) == host_moves.SPIN_SECONDS
    sched = _schedule("ij,jk->ik", (640, 640), (640, 640))
    found = auto.options(sched, dt.Grid(2), model=model.this_machine(), eager=True)
    legate = [o for o in found if o.kind != "eager"]
    eager = [o for o in found if o.kind == "eager"]
    assert legate and all(o.shared_seconds == pytest.approx(min(o.seconds, host_moves.SPIN_SECONDS)) for o in legate)
    assert all("sharing the cores with NumPy's BLAS threads" in o.describe() for o in legate)
    assert len(eager) == 1 and eager[0].shared_seconds == 0.0
    assert all(o.total_seconds == o.seconds + o.copy_seconds + o.shared_seconds for o in found)
    monkeypatch.setattr(rt, "blas_user_threads", lambda: 1)
    assert host_moves.shared_cores_seconds(0.01) == 0.0
    assert all(o.shared_seconds == 0.0 for o in auto.options(sched, dt.Grid(2), model=model.this_machine(),
                                                              eager=True))
    assert all(o.shared_seconds == 0.0 for o in auto.options(sched, dt.Grid(2), model=model.this_machine()))


def test_the_eager_candidate_is_priced_by_its_largest_product_not_its_total(monkeypatch: pytest.MonkeyPatch) -> None:
    """tucker at n = 76: four products of 2.5e9 multiply-adds (1e10 in all) each run on NumPy's own threads
    (each below OWN_FROM), so the eager candidate pays nothing beside NumPy's spinning workers; matmul at
    n = 3000 (2.7e10 in one product) runs on distal's own kernels and pays it."""
    from distal import contract, tile_blas

    monkeypatch.setattr(rt, "blas_user_threads", lambda: 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    n = 76
    tucker = _schedule("pqrs,pi,qj,rk,sl->ijkl", (n,) * 4, *[(n, n)] * 4)
    assert host_moves._eager_contraction(tucker, 2)[0] == n ** 5 < contract.OWN_FROM
    assert host_moves.eager_prediction(tucker, tucker, model.this_machine())[2] == 0.0
    big = _schedule("ij,jk->ik", (3000, 3000), (3000, 3000))
    assert host_moves._eager_contraction(big, 2)[0] == 3000 ** 3 >= contract.OWN_FROM
    assert host_moves.eager_prediction(big, big, model.this_machine())[2] == host_moves.SPIN_SECONDS
    assert host_moves.eager_kernels(n ** 5) == (host_moves.NUMPY_KERNELS if tile_blas.library() else 1.0)


def test_the_eager_candidate_pays_for_its_large_intermediates_new_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """tucker at n = 76 writes four fresh arrays of 254 MiB (above glibc's largest mmap threshold: new pages at
    every call), each priced as a host copy of its size, and its result's new pages; matmul writes none."""
    monkeypatch.setattr(rt, "blas_user_threads", lambda: 2)
    n = 76
    tucker = _schedule("pqrs,pi,qj,rk,sl->ijkl", (n,) * 4, *[(n, n)] * 4)
    largest, fresh, _ = host_moves._eager_contraction(tucker, 2)
    assert largest == n ** 5 and len(fresh) >= 3 and all(b == n ** 4 * 8 >= host_moves.FRESH_FROM for b in fresh)
    with_pages = host_moves.eager_prediction(tucker, tucker, model.this_machine())[0]
    monkeypatch.setattr(host_moves, "FRESH_FROM", 1 << 62)
    without = host_moves.eager_prediction(tucker, tucker, model.this_machine())[0]
    result = host_moves._measured(host_moves.NEW_PAGES, n ** 4 * 8)  # its result's new pages too
    assert with_pages - without == pytest.approx(sum(host_moves._measured(host_moves.HOST_COPY, b) for b in fresh)
                                                 + result)
    assert host_moves._eager_contraction(_schedule("ij,jk->ik", (64, 64), (64, 64)), 2)[1] == []


def test_the_eager_candidate_prices_the_einsum_loops_it_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ijab,jb->ia` at 64 is one einsum loop over a 16.8M-element operand, cut along i into one share per
    thread: priced at LOOP_SHARES times one loop's rate on two threads, at one loop's on one; a loop too small
    to split, or cut along a letter the result does not keep, is priced as one loop."""
    from distal import contract

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    n = 64
    sched = _schedule("ijab,jb->ia", (n,) * 4, (n, n))
    assert host_moves._eager_contraction(sched, 2)[2] == 1.0
    assert host_moves._eager_contraction(sched, 1)[2] == 0.0
    assert contract.split_loops("ijab,jb->ia", dict.fromkeys("ijab", 8), 8, 2) == 0.0  # 4096 elements
    assert contract.split_loops("jiab,jb->ia", dict.fromkeys("ijab", n), 8, 2) == 0.0  # cut along j: summed
    times = {}
    for threads in (1, 2):
        monkeypatch.setattr(rt, "blas_user_threads", lambda threads=threads: threads)
        times[threads] = host_moves.eager_prediction(sched, sched, model.this_machine())[0]
    leaf = times[1] - host_moves.EAGER_OVERHEAD  # (its 32 KiB result: no new pages)
    # (the warm-up term, the smaller of the compute and 2 ms, is not scaled)
    assert times[1] - times[2] == pytest.approx(leaf * (1 - 1 / host_moves.LOOP_SHARES), rel=0.05)
