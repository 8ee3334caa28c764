"""Matrix products of NumPy tiles on distal's own OpenBLAS (distal/tile_blas.py): the choice, and results.

The products are checked against NumPy over layouts (C and Fortran order,
views with a larger leading dimension, transposes, single rows/columns),
dtypes, `=` and `+=`; the cases BLAS cannot take must fall back (None).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import leaf, tile_blas
from distal.errors import DistalError

AVX512 = tile_blas._AVX512_FLAGS


@pytest.mark.parametrize("setting, flags, numpy_blas, core, why", [
    ("numpy", AVX512, ("openblas", "Haswell"), None, "DISTAL_TILE_BLAS=numpy"),
    ("auto", frozenset({"avx2", "fma"}), ("openblas", "Haswell"), None, "no AVX-512"),
    ("auto", AVX512, ("mkl", "SkylakeX"), None, "mkl, not OpenBLAS"),
    ("auto", AVX512, ("openblas", "SkylakeX"), None, "already runs SkylakeX"),
    ("auto", AVX512 | {"avx2"}, ("openblas", "Haswell"), "SkylakeX", "runs Haswell kernels"),
    ("auto", AVX512 - {"avx512vl"}, ("openblas", "Zen"), None, "no AVX-512"),
    ("Haswell", frozenset(), ("", ""), "Haswell", "DISTAL_TILE_BLAS=Haswell"),
    (" NumPy ", AVX512, ("openblas", "Haswell"), None, "numpy"),
])
def test_the_choice_of_kernels(setting: str, flags: frozenset[str], numpy_blas: tuple[str, str],
                               core: str | None, why: str) -> None:
    got, reason = tile_blas.choice(setting, flags, numpy_blas)
    assert got == core and why in reason


def test_a_bad_setting_is_refused() -> None:
    with pytest.raises(DistalError, match="expected DISTAL_TILE_BLAS to be auto, numpy or an OpenBLAS core type"):
        tile_blas.choice("Skylake X!", AVX512, ("openblas", "Haswell"))


def test_this_machine_gets_avx512_kernels_exactly_when_numpy_does_not_use_its_avx512() -> None:
    core, _ = tile_blas.choice()
    lib = tile_blas.library()
    if core is None:
        assert lib is None and tile_blas.short() == "NumPy's BLAS"
    else:
        assert lib is not None and lib.core.lower() == core.lower()
        assert tile_blas.short() == (f"OpenBLAS {lib.core} kernels (distal's) for float32/float64 from 32768 multiply-adds, "
                                      "NumPy's BLAS otherwise")
        assert tile_blas.short("dot") == (f"OpenBLAS {lib.core} kernels (distal's) for float32/float64 from 65536 elements, "
                                           "NumPy's BLAS otherwise")
        assert lib.path not in {str(x) for x in np.__path__}


@pytest.mark.parametrize("shape, order, layout", [
    ((3, 4), "C", (111, 4)), ((3, 4), "F", (112, 3)), ((1, 5), "C", (111, 5)), ((5, 1), "C", (111, 1)),
    ((5, 1), "F", (111, 1)), ((1, 1), "C", (111, 1)),
])
def test_how_blas_reads_a_matrix(shape: tuple[int, int], order: str, layout: tuple[int, int]) -> None:
    assert tile_blas._layout(np.zeros(shape, order=order)) == layout  # type: ignore[call-overload]


def test_layouts_blas_cannot_read() -> None:
    x = np.zeros((6, 8))
    assert tile_blas._layout(x[:, ::2]) is None  # no unit stride
    assert tile_blas._layout(x[::-1]) is None  # negative stride
    assert tile_blas._layout(x[:, :3]) == (111, 8)  # a view: leading dimension 8
    assert tile_blas._layout(x[:3].T) == (112, 8)


@pytest.fixture
def blas() -> Iterator[tile_blas.TileBlas]:
    lib = tile_blas.library()
    if lib is None:
        pytest.skip(f"matrix products of tiles run on NumPy's BLAS here: {tile_blas.describe()}")
    yield lib


def _operand(rng: np.random.Generator, shape: tuple[int, int], how: str, dtype: type) -> np.ndarray:
    rows, cols = shape
    if how == "C":
        return rng.random(shape).astype(dtype)
    if how == "F":
        return np.asfortranarray(rng.random(shape).astype(dtype))
    if how == "view":  # leading dimension larger than the row
        return rng.random((rows + 3, cols + 5)).astype(dtype)[2:2 + rows, 1:1 + cols]
    return rng.random((cols, rows)).astype(dtype).T  # "T": a transposed C array


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_over_layouts_match_numpy(blas: tile_blas.TileBlas, dtype: type) -> None:
    rng = np.random.default_rng(1)
    m, k, n = 37, 41, 29
    tol = 1e-12 if dtype is np.float64 else 1e-4
    for ha, hb, ho, acc in itertools.product(("C", "F", "view", "T"), ("C", "F", "view", "T"), ("C", "view"),
                                              (False, True)):
        a, b = _operand(rng, (m, k), ha, dtype), _operand(rng, (k, n), hb, dtype)
        out = _operand(rng, (m, n), ho, dtype)
        before = out.copy()
        done = tile_blas.gemm(a, b, out=out, accumulate=acc)
        assert done is out, (ha, hb, ho, acc)
        want = (before if acc else 0) + a.astype(np.float64) @ b.astype(np.float64)
        assert np.allclose(out, want, rtol=tol, atol=tol), (ha, hb, ho, acc)
        new = tile_blas.gemm(a, b)
        assert new is not None and new.flags.c_contiguous and np.allclose(new, a @ b, rtol=tol, atol=tol)


def test_what_blas_cannot_take_falls_back(blas: tile_blas.TileBlas) -> None:
    rng = np.random.default_rng(2)
    a, b = rng.random((40, 40)), rng.random((40, 40))
    assert tile_blas.gemm(a.astype(np.int64), b.astype(np.int64)) is None  # dtype
    assert tile_blas.gemm(a, b.astype(np.float32)) is None  # mixed dtypes
    assert tile_blas.gemm(a.astype(np.complex128), b.astype(np.complex128)) is None
    assert tile_blas.gemm(a[:, ::2], b[::2]) is None  # strides
    assert tile_blas.gemm(a[:4, :4], b[:4, :4]) is None  # too small for a ctypes call to pay
    assert tile_blas.gemm(a, b, out=a) is None  # the output overlaps an operand
    assert tile_blas.gemm(a, b, out=np.zeros((40, 40), dtype=np.float32)) is None  # output dtype
    assert tile_blas.gemm(a, b, out=np.zeros((40, 40), order="F")) is None  # a Fortran-ordered output
    assert tile_blas.gemm(a, b[:, :0]) is None  # empty
    for x, y in ((a.astype(np.int64), b.astype(np.int64)), (a[:, ::2], b[::2]), (a[:4, :4], b[:4, :4])):
        assert np.array_equal(tile_blas.matmul(x, y), x @ y)  # matmul runs NumPy there


def test_leaves_run_their_products_on_it(blas: tile_blas.TileBlas, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for dtype, fn in list(blas.gemm.items()):
        def spy(*args: object, fn: object = fn, dtype: object = dtype) -> None:
            calls.append(str(dtype))
            fn(*args)  # type: ignore[operator]
        monkeypatch.setitem(blas.gemm, dtype, spy)
    rng = np.random.default_rng(3)
    b, c = rng.random((30, 20, 40)), rng.random((40, 50))
    out = np.full((30, 20, 50), np.nan)
    leaf.TTM.compute_into(out, b, c)
    assert np.allclose(out, np.einsum("abd,dc->abc", b, c)) and calls == ["float64"]
    leaf.TTM.compute_into(out, b, c, accumulate=True)
    assert np.allclose(out, 2 * np.einsum("abd,dc->abc", b, c)) and len(calls) == 2
    m = rng.random((64, 48)).astype(np.float32)
    n = rng.random((48, 32)).astype(np.float32)
    assert np.allclose(leaf.GEMM.compute(m, n), m @ n, rtol=1e-5) and calls[-1] == "float32"
    t, f1, f2 = rng.random((60, 30, 40)), rng.random((30, 16)), rng.random((40, 16))
    assert np.allclose(leaf.MTTKRP.compute(t, f1, f2), np.einsum("acd,cb,db->ab", t, f1, f2))
    assert len(calls) > 3


def test_explain_names_the_blas_of_matrix_products() -> None:
    i, j, k = dt.index_vars("i j k")
    A, B, C = (dt.Tensor(n, (64, 64)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    text = A.schedule().substitute([i, j, k], dt.leaf.GEMM).compile().explain()
    assert f"GEMM the leaf's matmul (NumPy tiles: {tile_blas.short()}; CuPy/cuBLAS on GPUs)" in text
    a, X, Y = dt.Tensor("a", ()), dt.Tensor("X", (4, 4, 4)), dt.Tensor("Y", (4, 4, 4))
    a[()] = X[i, j, k] * Y[i, j, k]
    text = a.schedule().substitute([i, j, k], dt.leaf.INNERPROD).compile().explain()
    assert f"INNERPROD the leaf's vector-vector dot of the flattened tiles (NumPy tiles: {tile_blas.short('dot')}" in text


def test_numpy_can_be_asked_for_by_name() -> None:
    code = ("import numpy as np; from distal import tile_blas; "
            "print(tile_blas.library() is None, tile_blas.describe()); "
            "print(tile_blas.matmul(np.ones((64, 64)), np.ones((64, 64)))[0, 0])")
    env = {"DISTAL_TILE_BLAS": "numpy", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["True NumPy's BLAS (DISTAL_TILE_BLAS=numpy)", "64.0"]


def test_a_core_type_asked_for_but_not_run_is_said() -> None:
    code = ("import warnings, numpy as np; from distal import tile_blas\n"
            "with warnings.catch_warnings(record=True) as seen:\n    warnings.simplefilter('always')\n"
            "    tile_blas.library()\nprint('warned:', seen[0].message)\n"
            "print(tile_blas.library() is None, tile_blas.describe())")
    env = {"DISTAL_TILE_BLAS": "NoSuchCore", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("warned: DISTAL_TILE_BLAS=NoSuchCore was not honoured: NumPy's BLAS (OpenBLAS ran ")
    assert lines[1].startswith("True NumPy's BLAS (OpenBLAS ran ") and "where NoSuchCore was asked for" in lines[1]


def _counting(fn: Any, calls: list[int]) -> Any:
    def spy(*args: Any) -> Any:
        calls.append(1)
        return fn(*args)
    return spy


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dots_match_numpy_and_fall_back_where_blas_cannot(blas: tile_blas.TileBlas, dtype: type) -> None:
    rng = np.random.default_rng(4)
    x, y = rng.random(3 * tile_blas._MIN_DOT).astype(dtype), rng.random(3 * tile_blas._MIN_DOT).astype(dtype)
    for a, b in ((x, y), (x[::3], y[1::3]), (x[: tile_blas._MIN_DOT], y[-tile_blas._MIN_DOT:])):
        got = tile_blas.dot(a, b)
        assert type(got) is np.dtype(dtype).type
        assert np.isclose(got, np.dot(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5 if dtype is np.float32
                          else 1e-12)
    calls: list[int] = []
    real = blas.dot[np.dtype(dtype)]
    try:
        blas.dot[np.dtype(dtype)] = _counting(real, calls)
        tile_blas.dot(x, y)
        assert calls == [1]
        for a, b in ((x[::-1], y[::-1]), (x[:100], y[:100]), (x.astype(np.int64), y.astype(np.int64)),
                     (x, y.astype(np.float16))):
            assert np.isclose(tile_blas.dot(a, b), np.dot(a, b), rtol=1e-3)
        assert calls == [1]  # negative strides, short, integer, mixed: NumPy's dot
    finally:
        blas.dot[np.dtype(dtype)] = real


def test_innerprod_runs_its_dot_on_it(blas: tile_blas.TileBlas, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = blas.dot[np.dtype(np.float64)]
    monkeypatch.setitem(blas.dot, np.dtype(np.float64), _counting(real, calls))
    rng = np.random.default_rng(5)
    b, c = rng.random((40, 50, 60)), rng.random((40, 50, 60))
    out = np.full((), np.nan)
    leaf.INNERPROD.compute_into(out, b, c)
    assert np.isclose(out, np.einsum("abc,abc->", b, c)) and calls == [1]
