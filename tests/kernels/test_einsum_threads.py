"""An eager dt.einsum's matrix products on several BLAS threads (distal.contract): a large product, or a stack of
large products, is split into one share per thread, each share's GEMMs on one BLAS thread, as Legate's tasks
split them (the threads meet once per call). No Legate."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import distal.contract as contract
from distal import tile_blas

pytestmark = pytest.mark.skipif(tile_blas.library() is None, reason="distal's tile OpenBLAS is not loaded here")
RNG = np.random.default_rng(11)


@pytest.fixture
def two_threads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[int, ...], int]]:
    """NumPy's BLAS on two threads, two cores; each tile GEMM recorded with the BLAS threads it ran on."""
    monkeypatch.setattr(contract, "_blas_threads", lambda: 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    seen: list[tuple[tuple[int, ...], int]] = []
    gemm = tile_blas.gemm

    def recorded(a: np.ndarray, b: np.ndarray, out: Any = None, accumulate: bool = False) -> Any:
        threads = max(lib.num_threads for lib in contract._controller().lib_controllers)
        seen.append(((a.shape[0], a.shape[1], b.shape[1]), threads))
        return gemm(a, b, out=out, accumulate=accumulate)

    monkeypatch.setattr(tile_blas, "gemm", recorded)
    return seen


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk->ik", [(300, 200), (200, 250)]),  # split by rows
    ("ij,jk->ik", [(40, 300), (300, 900)]),  # by columns: the longer side
    ("ji,jk->ik", [(200, 300), (200, 250)]),  # a transposed operand
    ("ab,bcd,de->ace", [(40, 40), (40, 40, 40), (40, 40)]),  # two products, one written into the output
])
def test_a_large_product_is_split_over_the_blas_threads(spec: str, shapes: list[tuple[int, ...]],
                                                        two_threads: list[Any]) -> None:
    ops = [RNG.standard_normal(s) for s in shapes]
    got = contract.contraction(spec, ops).run(ops, np)
    np.testing.assert_allclose(got, np.einsum(spec, *ops), rtol=1e-12, atol=1e-12)
    assert two_threads and len(two_threads) % 2 == 0
    assert all(threads == 1 for _, threads in two_threads)  # each share on one BLAS thread


def test_a_stack_of_large_products_is_split_over_the_blas_threads(two_threads: list[Any]) -> None:
    a = RNG.standard_normal((5, 256, 64)).astype(np.float32)
    b = RNG.standard_normal((5, 64, 256)).astype(np.float32)
    got = contract._each_on_tile_blas(a, b, None)
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-4, atol=1e-4)
    assert len(two_threads) == 5 and all(threads == 1 for _, threads in two_threads)


def test_a_product_added_into_the_output_is_split_too(two_threads: list[Any]) -> None:
    a, b = RNG.standard_normal((300, 200)), RNG.standard_normal((200, 250))
    out = RNG.standard_normal((300, 250))
    want = out + a @ b
    assert contract._gemm(a, b, out, True) is out
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    assert [s for s, _ in two_threads] == [(150, 200, 250), (150, 200, 250)]


def test_one_blas_thread_runs_one_gemm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract, "_blas_threads", lambda: 1)
    calls: list[tuple[int, ...]] = []
    gemm = tile_blas.gemm
    monkeypatch.setattr(tile_blas, "gemm", lambda a, b, out=None, accumulate=False: (
        calls.append(a.shape), gemm(a, b, out=out, accumulate=accumulate))[1])
    a, b = RNG.standard_normal((300, 200)), RNG.standard_normal((200, 250))
    np.testing.assert_allclose(contract._gemm(a, b, None, False), a @ b, rtol=1e-12)
    assert calls == [(300, 200)]
