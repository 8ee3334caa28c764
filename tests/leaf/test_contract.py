"""distal.contract: any einsum of tiles as GEMMs after reshapes (TTGT), pairwise, against numpy.einsum.

Random patterns (1-4 operands, repeated letters, letters summed in one operand only, extents 0-7),
dtypes, layouts (C, Fortran, transposed and sliced views), `=` and `+=` into an output; the calls
described before a run are the calls that ran; device tiles (the stand-in) go through the namespace.
"""

from __future__ import annotations

import numpy as np
import pytest

from distal import contract, leaf
from distal.lower.device_standin import namespace, to_device

LETTERS = "abcdefg"


def _random_spec(rng: np.random.Generator) -> str:
    count = int(rng.integers(1, 5))
    inputs = []
    for _ in range(count):
        order = int(rng.integers(0, 4))
        inputs.append("".join(rng.choice(list(LETTERS[:5]), size=order)))
    present = sorted(set("".join(inputs)))
    out = "".join(c for c in present if rng.random() < 0.5)
    out = "".join(rng.permutation(list(out))) if out else ""
    return ",".join(inputs) + "->" + out


def _operands(spec: str, rng: np.random.Generator, dtype: type, zero: bool = False) -> list[np.ndarray]:
    ins = spec.split("->")[0].split(",")
    ext = {c: int(rng.integers(0 if zero else 1, 6)) for c in set("".join(ins))}
    ops = []
    for ax in ins:
        x = rng.standard_normal([ext[c] for c in ax]) * 3
        if dtype is np.complex128:
            x = x + 1j * rng.standard_normal(x.shape)
        ops.append(x.astype(dtype))
    return ops


def _layouts(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`x` as C order, Fortran order, a transposed view or a strided slice of a larger array."""
    how = int(rng.integers(0, 4))
    if how == 1 and x.ndim > 0:
        return np.asfortranarray(x)
    if how == 2 and x.ndim > 1:
        return np.ascontiguousarray(x.T).T
    if how == 3 and x.ndim > 0:
        big = np.zeros(tuple(n + 2 for n in x.shape), dtype=x.dtype)
        view = big[tuple(slice(1, 1 + n) for n in x.shape)]
        view[...] = x
        return view
    return x


@pytest.mark.parametrize("seed", range(12))
def test_random_patterns_equal_einsum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(40):
        spec = _random_spec(rng)
        dtype = [np.float64, np.float32, np.int64, np.complex128][int(rng.integers(0, 4))]
        ops = [_layouts(x, rng) for x in _operands(spec, rng, dtype, zero=rng.random() < 0.1)]
        want = np.einsum(spec, *ops)
        tol = {"rtol": 1e-4, "atol": 1e-3} if dtype is np.float32 else {"rtol": 1e-10, "atol": 1e-10}
        got = contract.run(spec, ops)
        assert got.shape == want.shape, spec
        np.testing.assert_allclose(got, want, **tol, err_msg=spec)
        out = np.full(want.shape, 2, dtype=want.dtype)
        contract.run(spec, ops, out=out, accumulate=True)
        np.testing.assert_allclose(out, want + 2, **tol, err_msg=spec)
        out = np.full(want.shape, 7, dtype=want.dtype)
        contract.run(spec, ops, out=out)
        np.testing.assert_allclose(out, want, **tol, err_msg=spec)


@pytest.mark.parametrize("spec", [
    "ij,jk->ik", "abij,cdij->abcd", "bik,bkj->bij", "abc,cde,efa->bdf", "ij,ij->", "ij->i", "i,j->ij",
    "ij,ij->ij", "ii->i", "abc,bd->acd", "ijk,jl->ilk", "ijk,ir,kr->jr", "ij,jk,kl->il", "abc,c->ab",
    "xij,yjk->xyik", "ij,jk->ki",
])
def test_the_calls_described_are_the_calls_that_run(spec: str) -> None:
    rng = np.random.default_rng(1)
    ins, out = spec.split("->")
    ext = {c: int(rng.integers(2, 9)) for c in set(ins.replace(",", ""))}
    ops = [rng.standard_normal([ext[c] for c in ax]) for ax in ins.split(",")]
    plan = contract.contraction(spec, ops)
    calls: dict[str, int] = {}
    result = np.empty([ext[c] for c in out])
    plan.run(ops, out=result, calls=calls)
    assert list(calls) == [plan.describe()]
    np.testing.assert_allclose(result, np.einsum(spec, *ops), rtol=1e-10, atol=1e-10)


def test_a_matrix_product_runs_as_one_gemm_without_copies() -> None:
    a, b = np.ones((300, 200)), np.ones((200, 100))
    text = contract.contraction("ij,jk->ik", (a, b)).describe()
    assert text.startswith("GEMM [300x200] @ [200x100] by ") and "copying" not in text


def test_the_four_index_contraction_is_one_gemm_on_reshaped_views() -> None:
    t, v = np.ones((4, 5, 6, 7)), np.ones((2, 3, 6, 7))
    text = contract.contraction("abij,cdij->abcd", (t, v)).describe()
    assert text.startswith("GEMM [20x42] @ [42x6]") and "copying" not in text and text.endswith("into the output")


def test_a_batched_matmul_is_one_batched_gemm_and_ttm_on_the_middle_mode_is_copy_free() -> None:
    a, b = np.ones((8, 30, 20)), np.ones((8, 20, 10))
    text = contract.contraction("bik,bkj->bij", (a, b)).describe()
    assert text.startswith("batched GEMM 8 x [30x20] @ [20x10] by ") and "copying" not in text
    x, u = np.ones((10, 20, 30)), np.ones((20, 40))
    text = contract.contraction("ijk,jl->ilk", (x, u)).describe()
    assert "copying" not in text and text.endswith("; into the output"), text


def test_a_matrix_vector_product_that_would_copy_its_matrix_streams_it_instead() -> None:
    # ijab,jb->ia reads operand 1 as an (ia) x (jb) matrix only after copying it; einsum's loop reads it as it lies
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((6, 7, 8, 9)), rng.standard_normal((7, 9))
    plan = contract.contraction("ijab,jb->ia", (x, y))
    text = plan.describe()
    assert text.startswith("einsum loop ijab,jb->ia") and "copying" not in text, text
    calls: dict[str, int] = {}
    np.testing.assert_allclose(plan.run((x, y), calls=calls), np.einsum("ijab,jb->ia", x, y), rtol=1e-10, atol=1e-12)
    assert list(calls) == [text]
    # a matrix-vector product BLAS reads as it lies stays one GEMM
    text = contract.contraction("ij,j->i", (np.ones((300, 200)), np.ones(200))).describe()
    assert text.startswith("GEMM [300x200] @ [200x1]") and "copying" not in text, text


def test_three_operands_run_pairwise_not_as_one_loop() -> None:
    ops = [np.ones((6, 6, 6))] * 3
    plan = contract.contraction("abc,cde,efa->bdf", ops)
    assert len(plan.pairs) == 2 and all(p.mode == "gemm" for p in plan.pairs)
    assert plan.flops < 2 * 6 ** 6  # the six-deep loop would be 2 * 6**6


def test_a_layout_that_cannot_be_viewed_is_copied_and_said_so() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((30, 20, 10))
    b = rng.standard_normal((20, 40))
    calls: dict[str, int] = {}
    got = contract.run("ajc,jd->acd", (a, b), calls=calls)
    np.testing.assert_allclose(got, np.einsum("ajc,jd->acd", a, b), rtol=1e-10, atol=1e-12)
    ran = next(iter(calls))
    assert ran == contract.contraction("ajc,jd->acd", (a, b)).describe()


def test_device_tiles_run_through_their_namespace() -> None:
    rng = np.random.default_rng(4)
    calls = namespace().calls
    cases = {"ij,jk->ik": "matmul", "bik,bkj->bij": "matmul", "bij,bj->bi": "einsum", "ii->i": "einsum"}
    for spec, routine in cases.items():
        ins = spec.split("->")[0]
        ext = {c: 5 for c in set(ins.replace(",", ""))}
        host = [rng.standard_normal([ext[c] for c in ax]) for ax in ins.split(",")]
        before = calls.get(routine, 0)
        got = contract.run(spec, [to_device(x) for x in host], namespace())
        assert calls.get(routine, 0) > before, spec
        np.testing.assert_allclose(got.get(), np.einsum(spec, *host), rtol=1e-12)


def test_the_generic_leaf_and_batched_gemm_compute_through_the_engine() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 5, 6))
    np.testing.assert_allclose(leaf.BATCHED_GEMM.compute(a, b), a @ b, rtol=1e-12)
    out = np.ones((3, 4, 6))
    calls: dict[str, int] = {}
    leaf.BATCHED_GEMM.compute_into(out, a, b, accumulate=True, calls=calls)
    np.testing.assert_allclose(out, a @ b + 1, rtol=1e-12)
    assert next(iter(calls)).startswith("batched GEMM 3 x [4x5] @ [5x6] by ")
    x = rng.standard_normal((40, 30))
    np.testing.assert_allclose(leaf.GENERIC.compute(x, x, pattern="ab,cb->ac"), x @ x.T, rtol=1e-12)


def _stacked_equals_matmul(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> None:
    """`contract._stacked_matmul` of a and b (into a new array and into `out`) and an einsum of a stack of
    float32 products equal NumPy's."""
    np.testing.assert_allclose(contract._stacked_matmul(a, b), np.matmul(a, b), rtol=1e-12, atol=1e-12)
    out = np.full((*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1]), np.nan)
    assert contract._stacked_matmul(a, b, out) is out
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    x, y = rng.standard_normal((2, 3, 8, 5)).astype(np.float32), rng.standard_normal((2, 3, 9, 5)).astype(np.float32)
    np.testing.assert_allclose(contract.run("bhqd,bhkd->bhqk", (x, y)), np.einsum("bhqd,bhkd->bhqk", x, y),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_stack_of_small_products_split_over_threads_equals_matmul(threads: int, monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    monkeypatch.setattr(contract, "_blas_threads", lambda: threads)
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((5, 1, 6, 4)), rng.standard_normal((1, 3, 4, 7))  # broadcast both ways
    _stacked_equals_matmul(a, b, rng)


def test_a_stack_of_large_products_runs_each_on_the_tile_blas_and_equals_matmul(monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    monkeypatch.setattr(contract, "_SMALL_MATRIX", 1)  # every product counts as large
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((3, 1, 40, 30)), rng.standard_normal((1, 2, 30, 50))
    _stacked_equals_matmul(a, b, rng)


@pytest.mark.parametrize("spec, shapes", [("ij,jk->ik", [(64, 48), (48, 80)]),
                                          ("bij,bjk->bik", [(3, 20, 16), (3, 16, 24)])])
def test_an_eager_calls_products_run_on_numpys_own_threads_as_described(spec: str, shapes: list[tuple[int, ...]],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # eager (on_user_threads) with several BLAS threads: NumPy's matmul on its pool, said so, and distal's own
    # kernels never called; outside it (a Legate task, the NumPy backend) the description names no NumPy pool
    from distal import tile_blas

    if tile_blas.library() is None:
        pytest.skip("distal loaded no BLAS of its own here: every product runs on NumPy's matmul already")
    monkeypatch.setattr(contract, "_blas_threads", lambda: 2)
    rng = np.random.default_rng(5)
    ops = [rng.standard_normal(s) for s in shapes]
    plan = contract.contraction(spec, ops)
    assert "NumPy's 2 BLAS threads" not in plan.describe()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("distal's own kernels ran an eager call's small product")

    monkeypatch.setattr(tile_blas, "gemm", refuse)
    with contract.on_user_threads():
        text = plan.describe()
        calls: dict[str, int] = {}
        got = plan.run(ops, calls=calls)
    assert "by numpy.matmul on NumPy's 2 BLAS threads" in text
    assert list(calls) == [text]
    np.testing.assert_allclose(got, np.einsum(spec, *ops), rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(contract, "OWN_FROM", 1)  # every product counts as large: distal's own kernels again
    with contract.on_user_threads():
        assert "NumPy's" not in contract._gemm_routine(np.float64, 300, 300, 300, 1, "numpy")


def test_the_largest_product_is_what_the_numpy_pool_rule_decides_by() -> None:
    assert contract.largest_product("ij,jk->ik", {"i": 64, "j": 32, "k": 16}) == 64 * 32 * 16
    assert contract.largest_product("bij,bjk->bik", {"b": 3, "i": 8, "j": 5, "k": 7}) == 3 * 8 * 5 * 7
    assert contract.largest_product("ij,ij->ij", {"i": 64, "j": 32}) == 0.0  # no GEMM
    ext = {c: 6 for c in "pqrsijkl"}
    c = contract.contraction("pqrs,pi,qj,rk,sl->ijkl", [np.ones((6,) * 4)] + [np.ones((6, 6))] * 4)
    sizes = [np.prod(p.sizes) for p in c.pairs if p.mode == "gemm"]
    assert contract.largest_product("pqrs,pi,qj,rk,sl->ijkl", ext) == max(sizes) == 6 ** 5


def test_the_fresh_arrays_are_the_copies_and_the_products_but_the_last() -> None:
    assert contract.fresh_arrays("ij,jk->ik", {"i": 8, "j": 4, "k": 2}) == []  # written into the output
    n = 6
    c = contract.contraction("pqrs,pi,qj,rk,sl->ijkl", [np.ones((n,) * 4)] + [np.ones((n, n))] * 4)
    got = contract.fresh_arrays("pqrs,pi,qj,rk,sl->ijkl", {ch: n for ch in "pqrsijkl"})
    copies = sum(p.a_copy + p.b_copy for p in c.pairs)
    assert len(got) == len(c.pairs) - 1 + copies and all(b == n ** 4 * 8 for b in got)
    assert contract.fresh_arrays("ij,jk->ki", {"i": 8, "j": 4, "k": 2}, 4) == []  # (B^T A^T) into the output


@pytest.mark.parametrize("threads", [2, 3])
def test_einsum_loops_split_over_threads_equal_einsum_as_described(threads: int, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    # every loop counts as large: random patterns, dtypes and layouts, `=` and `+=`, in an eager call's shares;
    # the loops described as split (", in N shares on N threads") are the loops that ran split
    monkeypatch.setattr(contract, "_LOOP_SPLIT_FROM", 1)
    monkeypatch.setattr(contract, "_blas_threads", lambda: threads)
    monkeypatch.setattr(contract.os, "cpu_count", lambda: threads)
    rng = np.random.default_rng(40 + threads)
    specs = ["ijab,jb->ia", "ij,ij->i", "bij,bj->bi", "ijk,ik->ij"]
    for n in range(160):
        spec = specs[n] if n < len(specs) else _random_spec(rng)
        dtype = [np.float64, np.float32, np.complex128][int(rng.integers(0, 3))]
        ops = _operands(spec, rng, dtype)
        if n < len(specs):  # C order, extents of 6: split along their first letter
            ops = [rng.standard_normal((6,) * x.ndim).astype(dtype) for x in ops]
        else:
            ops = [_layouts(x, rng) for x in ops]
        want = np.einsum(spec, *ops)
        tol = {"rtol": 1e-4, "atol": 1e-3} if dtype is np.float32 else {"rtol": 1e-10, "atol": 1e-10}
        plan = contract.contraction(spec, ops)
        with contract.on_user_threads():
            text = plan.describe(dtype)
            calls: dict[str, int] = {}
            got = plan.run(ops, calls=calls)
            out = np.full(want.shape, 2, dtype=want.dtype)
            plan.run(ops, out=out, accumulate=True)
            real = np.zeros(want.shape, dtype=np.float64)  # a complex product into a real output: its real part
            plan.run(ops, out=real)
        (ran,) = calls  # (the copies it predicts for the planned layouts may differ from the views it got)
        shares = f"in {threads} shares on {threads} threads"
        assert ran.count(shares) == text.count(shares), (spec, ran, text)
        assert n >= len(specs) or shares in text, (spec, text)
        np.testing.assert_allclose(got, want, **tol, err_msg=spec)
        np.testing.assert_allclose(out, want + 2, **tol, err_msg=spec)
        np.testing.assert_allclose(real, want.real, **tol, err_msg=spec)
