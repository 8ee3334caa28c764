"""`dt.einsum` against `numpy.einsum` over a random generator of calls, refusals included (issue 33 item 5).

Each case draws subscripts (explicit, implicit, `...`, repeated letters, size-one dimensions, letters no
operand has, a letter twice in the output, extents that do not match), operands (every dtype distal
computes with, either byte order, C, Fortran, negative-stride, sliced, unaligned and read-only layouts) and
NumPy's keywords (`dtype=`, `casting=`, `out=`, `optimize=`, `order=`). Where `numpy.einsum` raises a
ValueError or TypeError, `dt.einsum` must raise a `DistalError` that is also that class; where NumPy
computes, distal must give the same dtype (in native byte order) and values. The differences
docs/reference.md names are the only ones allowed: bool, longdouble and object operands are refused, as a
`DtypeError` (a TypeError); with `optimize=` and `dtype=`, `casting=` or `out=`, NumPy's pairwise path
checks casts step by step (some steps not at all, its last one by its own rule), where distal checks the
operands as without `optimize=` and `out=` by `same_kind`: either may refuse a cast the other takes.
Data are small integers, so that every dtype computes exactly and sums in any order agree.
"""

from __future__ import annotations

import importlib.util
import os
import string
from typing import Any

import numpy as np
import pytest

import distal as dt

pytestmark = pytest.mark.legate  # a case auto runs on Legate needs it started

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]
REFUSED = [np.bool_, np.longdouble, object]  # NumPy computes with them; distal refuses them by name
CASTINGS = ["no", "equiv", "safe", "same_kind", "unsafe"]
CASES = int(os.environ.get("DISTAL_EINSUM_NUMPY_CASES", "300"))


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if dtype is object:
        return rng.integers(0, 3, shape).astype(object)
    low = 0 if np.dtype(dtype).kind in "ub" else -2
    return rng.integers(low, 3, shape).astype(dtype)


def _layout(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """`x` (values kept) in a random layout and byte order."""
    kind = rng.integers(0, 7)
    if kind == 1 and x.dtype != object:
        x = x.astype(x.dtype.newbyteorder(">" if x.dtype.isnative else "<"))
    elif kind == 2:
        x = np.asfortranarray(x)
    elif kind == 3 and x.ndim:
        axis = int(rng.integers(0, x.ndim))
        x = np.flip(np.flip(x, axis=axis).copy(), axis=axis)  # the same values, a negative stride
    elif kind == 4 and x.dtype != object and x.dtype.itemsize > 1:
        buf = np.zeros(x.nbytes + 1, dtype=np.uint8)[1:]
        y = buf.view(x.dtype).reshape(x.shape) if x.size else x
        y[...] = x
        x = y  # unaligned
    elif kind == 5:
        x = x.copy()
        x.flags.writeable = False
    elif kind == 6 and x.ndim:
        big = np.repeat(x, 2, axis=-1)
        x = big[..., ::2]  # a strided view
    return x


def draw(rng: np.random.Generator) -> tuple[str, list[np.ndarray], dict[str, Any]]:
    """One random call: subscripts, operands, keywords."""
    letters = list("abcdef") + (list("XY") if rng.random() < 0.2 else [])
    extent = {c: int(rng.integers(1, 4)) for c in letters}
    n_ops = int(rng.integers(1, 4))
    ell = int(rng.integers(0, 3)) if rng.random() < 0.25 else -1
    ell_shape = tuple(int(rng.integers(1, 3)) for _ in range(max(ell, 0)))
    terms, ops = [], []
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    for _ in range(n_ops):
        k = int(rng.integers(0, 4))
        term = "".join(rng.choice(letters[:5], size=k)) if k else ""
        shape = [extent[c] for c in term]
        if rng.random() < 0.1 and shape:  # a size-one dimension (broadcast), or a mismatch
            shape[int(rng.integers(len(shape)))] = 1 if rng.random() < 0.7 else 5
        if ell >= 0 and rng.random() < 0.7:
            cut = int(rng.integers(0, len(ell_shape) + 1))
            term, shape = "..." + term, [*ell_shape[cut:], *shape]
        d = dtype if rng.random() < 0.7 else DTYPES[int(rng.integers(len(DTYPES)))]
        if rng.random() < 0.03:
            d = REFUSED[int(rng.integers(len(REFUSED)))]
        ops.append(_layout(rng, _data(rng, tuple(shape), d)))
        terms.append(term)
    subscripts = ",".join(terms)
    used = "".join(t.replace("...", "") for t in terms)
    if rng.random() < 0.7:
        once = sorted({c for c in used if used.count(c) == 1})
        pool = sorted(set(used))
        out = "".join(rng.permutation(pool)[: int(rng.integers(0, len(pool) + 1))]) if rng.random() < 0.5 \
            else "".join(once)
        if rng.random() < 0.05:
            out += "z"  # in no operand
        if rng.random() < 0.05 and out:
            out += out[0]  # twice
        if any("..." in t for t in terms) and rng.random() < 0.8:
            out = "..." + out
        subscripts += "->" + out
    kwargs: dict[str, Any] = {}
    if rng.random() < 0.2:
        kwargs["dtype"] = DTYPES[int(rng.integers(len(DTYPES)))]
    if rng.random() < 0.3:
        kwargs["casting"] = CASTINGS[int(rng.integers(len(CASTINGS)))]
    if rng.random() < 0.2:
        kwargs["optimize"] = [False, True, "greedy", "optimal"][int(rng.integers(4))]
    if rng.random() < 0.05:
        kwargs["order"] = ["C", "F", "A", "K", "Q"][int(rng.integers(5))]
    if rng.random() < 0.2:
        try:
            shape = np.einsum(subscripts, *[np.zeros(o.shape) for o in ops]).shape
        except (ValueError, TypeError):
            shape = (2,)
        kwargs["out"] = np.zeros(shape, dtype=DTYPES[int(rng.integers(len(DTYPES)))])
    return subscripts, ops, kwargs


def _outcome(f: Any) -> tuple[str, Any]:
    try:
        return "ok", f()
    except (ValueError, TypeError) as exc:
        return "error", exc
    except (IndexError, KeyError) as exc:  # NumPy's pairwise path fails so on some bad calls (e.g. ',,->' on a 1-D)
        return "other", exc


def _as_kind(rng: np.random.Generator, x: np.ndarray, legate: bool) -> Any:
    """`x` as NumPy gives it, or (sometimes) as a dt.Tensor or, on Legate, a cuPyNumeric array."""
    if x.dtype.kind in "bO" or x.dtype.itemsize > 16 or (x.dtype.kind == "f" and x.dtype.itemsize > 8):
        return x
    if not x.dtype.isnative:  # a Tensor holds native data: casting='no' would see another dtype than NumPy's
        return x
    draw = rng.random()
    if draw < 0.15:
        return dt.Tensor.from_array(f"user{int(rng.integers(3))}", x)  # names repeat: two tensors of one name
    if draw < 0.25 and legate and importlib.util.find_spec("cupynumeric") is not None:
        import cupynumeric as cn

        return cn.asarray(np.array(x, dtype=x.dtype.newbyteorder("="), order="C"))
    return x


def check_case(seed: int, case: int, legate: bool = False) -> str | None:
    """None when distal agrees with NumPy on the case (or differs only as documented); else what differs.
    Operands are NumPy arrays, and some dt.Tensors and (with `legate`) cuPyNumeric arrays of the same data."""
    rng = np.random.default_rng([seed, case])
    subscripts, ops, kwargs = draw(rng)
    np_kwargs = {k: (v.copy() if k == "out" else v) for k, v in kwargs.items()}
    dt_kwargs = {k: (v.copy() if k == "out" else v) for k, v in kwargs.items()}
    if "out" in kwargs and rng.random() < 0.3:  # out= a dt.Tensor, under NumPy's same rules
        dt_kwargs["out"] = dt.Tensor.from_array("out", kwargs["out"])
    given = [_as_kind(rng, o, legate) for o in ops]
    with np.errstate(all="ignore"):
        want_kind, want = _outcome(lambda: np.einsum(subscripts, *ops, **np_kwargs))
        got_kind, got = _outcome(lambda: dt.einsum(subscripts, *given, **dt_kwargs))
    kinds = [f"{type(g).__module__.split('.')[0]}.{type(g).__name__}" for g in given]
    where = f"case {case}: einsum({subscripts!r}, {[(o.shape, o.dtype.str) for o in ops]}, {kwargs}) on {kinds}"
    refused = any(o.dtype.kind in "bO" or (o.dtype.kind == "f" and o.dtype.itemsize > 8)
                  or (o.dtype.kind == "c" and o.dtype.itemsize > 16) for o in ops)
    if refused and want_kind == "ok":  # the documented difference: refused by name, as a TypeError
        if got_kind == "error" and isinstance(got, dt.DtypeError):
            return None
        return f"{where}: expected a DtypeError for the dtype distal does not compute with, got {got!r}"
    # NumPy's pairwise path (optimize= other than False) checks dtype= and casting= only in the steps it runs
    # with its C einsum (not in its BLAS steps), and in another order: distal checks them as without optimize=
    loose = kwargs.get("optimize", False) is not False and ("dtype" in kwargs or "casting" in kwargs
                                                             or "out" in kwargs)
    if loose and got_kind == "error" and isinstance(got, dt.DistalError) and isinstance(got, TypeError | ValueError):
        return None
    if loose and want_kind == "error" and isinstance(want, TypeError) and got_kind == "ok":
        return None  # a cast NumPy's pairwise path refuses in one of its steps, which distal's same_kind rule takes
    if want_kind == "other":  # NumPy refused with an exception of no documented class: any DistalError will do
        return None if isinstance(got, dt.DistalError) else f"{where}: NumPy raised {want!r}, distal gave {got!r}"
    if want_kind == "error":
        if got_kind != "error":
            return f"{where}: NumPy raised {type(want).__name__}({want}), distal computed"
        if not isinstance(got, dt.DistalError):
            return f"{where}: distal raised {type(got).__name__}({got}), not a DistalError"
        cls = TypeError if isinstance(want, TypeError) else ValueError
        if not isinstance(got, cls):
            return f"{where}: NumPy raised {type(want).__name__}({want}), distal {type(got).__name__}({got})"
        return None
    if got_kind != "ok":
        return f"{where}: NumPy computed, distal raised {type(got).__name__}: {got}"
    value = np.asarray(got if isinstance(got, np.ndarray) else got.to_numpy())
    if value.dtype != want.dtype.newbyteorder("=") or value.shape != want.shape:  # distal's are native
        return f"{where}: expected {want.dtype} {want.shape}, got {value.dtype} {value.shape}"
    if not np.allclose(value.astype(np.complex128), np.asarray(want).astype(np.complex128), rtol=1e-3, atol=1e-3):
        return f"{where}: values differ:\n{value}\n{want}"
    if "out" in kwargs and got is not dt_kwargs["out"]:
        return f"{where}: out= was not returned"
    return None


@pytest.mark.parametrize("eager", ["1", "0"])
def test_random_calls_equal_numpy_results_and_refusals(eager: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_EAGER", eager)
    cases = CASES if eager == "1" else CASES // 3
    failures = [f for case in range(cases) if (f := check_case(int(eager), case, eager == "0")) is not None]
    assert not failures, f"{len(failures)} of {cases} cases differ from numpy.einsum:\n" + "\n".join(failures[:8])


def test_the_generator_draws_what_it_says() -> None:
    """Refusals, results, keywords and layouts all occur in the cases the test runs."""
    rng_cases = [draw(np.random.default_rng([1, c])) for c in range(CASES)]
    errors = 0
    for subscripts, ops, kwargs in rng_cases:
        try:
            with np.errstate(all="ignore"):
                np.einsum(subscripts, *ops, **{k: (v.copy() if k == "out" else v) for k, v in kwargs.items()})
        except (ValueError, TypeError):
            errors += 1
    assert CASES // 20 < errors < CASES // 2
    assert any("..." in s for s, _, _ in rng_cases)
    assert any(not o.dtype.isnative for _, ops, _ in rng_cases for o in ops)
    assert any(not o.flags.aligned for _, ops, _ in rng_cases for o in ops)
    assert any("out" in k for _, _, k in rng_cases) and any("optimize" in k for _, _, k in rng_cases)
    assert set(string.ascii_letters) >= {c for s, _, _ in rng_cases for c in s if c.isalpha()}
