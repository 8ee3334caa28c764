"""Random `dt.einsum` cases on Legate, drawn with `random.Random` and run many to a process.

Each case draws, from its own seed (`case_seed(seed, n)`, so any case can be
replayed alone), one of three kinds:

* **einsum** (most cases): random subscripts over 1-4 operands of order 0-4
  (letters repeated within an operand for diagonals, letters only one
  operand has summed there, sometimes `...` with a size-one dimension
  broadcast in a NumPy operand), written in the explicit or the implicit
  form or as sublists; extents 1 to 17, primes among them (the iteration
  space kept under `LIMIT` points); dtypes float32, float64, int64 and
  complex128, sometimes mixed across operands; operands as NumPy arrays,
  cuPyNumeric arrays (some of them transposed or offset views) and
  `dt.Tensor`s (some with a format on a machine of their own), sometimes
  one object passed twice; `machine=` None (every processor), 1-, 2-, 3-D or
  hierarchical. A share of cases runs with `DISTAL_EAGER=0` (auto then
  never runs eagerly: the plan must run on Legate), some call `dt.einsum`
  twice with the same shapes and new data (the second call must reuse the
  cached plan, and the first result stay as it was), some pass `out=` (a
  `dt.Tensor` or a NumPy array), and some write subscripts NumPy refuses
  (distal must refuse them with a `DistalError`).
* **options**: the same kind of statement in index notation over
  `dt.Tensor`s; `dt.kernels.options(...)` lists auto's candidates on a
  machine of 2 to 8 processors (sometimes under a memory bound no whole
  tile fits, so that summed variables are fetched in steps) and one random
  candidate other than the library's is built with
  `dt.kernels.realise(option, schedule, machine, formats=...)` and run on
  Legate: one task, 1-, 2- and 3-D grids, distributed sums,
  over-decomposition, split steps.
* **auto**: a statement of the differential generator
  (`tests._strategies.legate_cases`: + and *, literals, `+=`, formats on
  its machine) scheduled by `Schedule.auto` on its machine (or on every
  processor), half of them with a time model whose leaves are slow enough
  that distributing pays, and run on Legate.

Results are compared with `numpy.einsum` (`einsum_oracle` for the auto
kind): the result's dtype must be NumPy's, int64 results exact, float and
complex ones within a tolerance scaled by the sum of the terms' magnitudes.
Any exception or difference is a failure.

`python -m tests._strategies.einsum_cases --cases N --seed S` runs N cases and
prints one JSON line per case (the test reads them); `--case n` replays one
(in a fresh process, so with an empty plan cache).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.machinery
import json
import os
import random
import re
import string
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import distal as dt
import distal.api.einsum
import distal.search
from distal.errors import DistalError
from tests._strategies import einsum_oracle, legate_cases

__all__ = ["FEATURES", "KINDS", "LIMIT", "Case", "case_seed", "run_case"]

KINDS = ("einsum", "options", "auto")
# cuPyNumeric's operands only where it is installed (legate 26.1's multi-rank environment has none); looked up on
# sys.path alone, without importing it (an import starts Legate)
HAS_CUPYNUMERIC = importlib.machinery.PathFinder.find_spec("cupynumeric") is not None

FEATURES = tuple(f for f in (
    # subscripts
    "operands-1", "operands-2", "operands-3", "operands-4", "order-0", "order-4", "diagonal",
    "summed-in-one-operand", "scalar-output", "implicit", "explicit", "ellipsis", "sublist",
    "size-one-broadcast", "extent-1", "prime-extent", "extent-17", "uppercase",
    # data
    "float32", "float64", "int64", "complex128", "mixed-dtypes", "numpy-operand", "cupynumeric-operand",
    "tensor-operand", "formatted-operand", "transposed-view", "offset-view", "repeated-operand",
    # dt.einsum calls
    "machine-none", "machine-1d", "machine-2d", "machine-3d", "machine-hierarchical", "eager-off",
    "ran-eagerly", "ran-on-legate", "plan-cache", "out-tensor", "out-array", "refused",
    # options / realise
    "option-one-task", "option-grid-1d", "option-grid-2d", "option-grid-3d", "option-distributed-sum",
    "option-over-decomposed", "option-split", "option-formats", "option-no-formats",
    # Schedule.auto on the differential generator's statements
    "auto-one-task", "auto-distributed", "auto-accumulate",
) if f != "cupynumeric-operand" or HAS_CUPYNUMERIC)

LIMIT = 20_000  # most points in a case's iteration space (the product of its letters' extents)
EXTENTS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17)
PRIMES = frozenset((5, 7, 11, 13, 17))
DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.complex128))
MACHINES: tuple[tuple[str, Any], ...] = (
    ("none", None), ("none", None),
    ("1d", dt.Grid(2)), ("1d", dt.Grid(3)), ("1d", dt.Machine(dt.Grid(4))),
    ("2d", dt.Grid(2, 2)), ("2d", dt.Machine(dt.Grid(1, 3))), ("2d", dt.Grid(3, 2)),
    ("3d", dt.Machine(dt.Grid(2, 2, 2))),
    ("hierarchical", dt.Machine(dt.Grid(2), dt.Grid(2))),
)
FORMAT_GRIDS = ((2,), (3,), (2, 1), (1, 2), (2, 2), (1, 3))
OPTION_MACHINES: tuple[Any, ...] = (None, dt.Grid(2), dt.Grid(3), dt.Grid(2, 2), dt.Machine(dt.Grid(6)),
                                    dt.Machine(dt.Grid(2, 2, 2)), dt.Machine(dt.Grid(8)), dt.Grid(2, 4),
                                    dt.Grid(2, 2, 2))  # 8 processors: grids of 3 dimensions among the options


def case_seed(seed: int, n: int) -> int:
    """The seed of case `n` of a run seeded `seed`."""
    return (seed * 1_000_033 + n * 7919 + 17) & 0xFFFF_FFFF


@dataclass
class Case:
    """One drawn case: what it ran and what it found."""

    number: int
    kind: str = ""
    features: set[str] = field(default_factory=set)
    text: list[str] = field(default_factory=list)  # the reproducer, as Python-ish lines

    def note(self, line: str) -> None:
        self.text.append(line)


class Wrong(Exception):
    """A result that differs from NumPy's (the case's status is "wrong")."""


# -- subscripts ------------------------------------------------------------------------------------------


@dataclass
class Spec:
    """Subscripts: each operand's letters (`...` expanded into `ell` letters) and the output's."""

    inputs: list[str]
    output: str
    extents: dict[str, int]
    ell: str  # the letters standing for `...` (NumPy aligns them from the right)
    ell_at: list[int]  # where `...` stands in each operand (-1: none)
    out_ell_at: int  # where `...` stands in the output (-1: none)
    implicit: bool

    @property
    def explicit_text(self) -> str:
        return ",".join(self.inputs) + "->" + self.output

    def _term(self, term: str, at: int) -> str:
        if at < 0:
            return term
        n = sum(c in self.ell for c in term)
        return term[:at] + "..." + term[at + n:]

    def text(self) -> str:
        """The subscripts as written: `...` where the spec has it, implicit output where it has none."""
        lhs = ",".join(self._term(t, at) for t, at in zip(self.inputs, self.ell_at))
        return lhs if self.implicit else lhs + "->" + self._term(self.output, self.out_ell_at)

    def sublists(self) -> tuple[list[list[Any]], list[Any] | None]:
        """The subscripts as NumPy's sublists (letters as their index in a-zA-Z, `...` as Ellipsis)."""
        def sub(term: str, at: int) -> list[Any]:
            written = self._term(term, at)
            out: list[Any] = []
            k = 0
            while k < len(written):
                if written.startswith("...", k):
                    out.append(Ellipsis)
                    k += 3
                else:
                    out.append(string.ascii_letters.index(written[k]))
                    k += 1
            return out

        ins = [sub(t, at) for t, at in zip(self.inputs, self.ell_at)]
        return ins, None if self.implicit else sub(self.output, self.out_ell_at)


def _extents(rng: random.Random, letters: str) -> dict[str, int]:
    ext = {c: rng.choice(EXTENTS) for c in letters}
    while int(np.prod(list(ext.values()))) > LIMIT:
        big = max(ext, key=lambda c: ext[c])
        ext[big] = rng.choice([e for e in EXTENTS if e < ext[big]])
    return ext


def draw_spec(rng: random.Random, case: Case, *, ellipsis: bool = True) -> Spec:
    """Random subscripts (see the module docstring)."""
    nops = rng.choices((1, 2, 3, 4), (2, 4, 2, 1.5))[0]
    alphabet = string.ascii_lowercase if rng.random() < 0.85 else string.ascii_letters
    pool = rng.sample(alphabet, rng.randint(1, 6))
    ell_n = rng.randint(1, 2) if ellipsis and rng.random() < 0.15 else 0
    spare = [c for c in string.ascii_letters if c not in pool]
    ell = "".join(rng.sample(spare, ell_n))
    inputs, ell_at = [], []
    for k in range(nops):
        has_ell = ell_n > 0 and (k == 0 or rng.random() < 0.6)
        n_ell = (ell_n if k == 0 else rng.randint(0, ell_n)) if has_ell else 0
        order = rng.randint(0, 4 - n_ell)
        letters = ""
        for _ in range(order):
            if letters and rng.random() < 0.15:
                letters += rng.choice(letters)  # a diagonal
            else:
                letters += rng.choice(pool)
        at = rng.randint(0, len(letters)) if has_ell else -1
        inputs.append(letters if at < 0 else letters[:at] + ell[ell_n - n_ell:] + letters[at:])
        ell_at.append(at)
    used = "".join(inputs)
    named = [c for c in dict.fromkeys(used) if c not in ell]
    implicit = rng.random() < 0.35
    if implicit:
        output = ell + "".join(sorted(c for c in named if used.count(c) == 1))
        out_at = 0 if ell else -1
    else:
        keep = rng.sample(named, rng.randint(0, len(named)))
        out_at = rng.randint(0, len(keep)) if ell else -1
        output = "".join(keep) if out_at < 0 else "".join(keep[:out_at]) + ell + "".join(keep[out_at:])
    spec = Spec(inputs, output, _extents(rng, "".join(dict.fromkeys(used))), ell, ell_at, out_at, implicit)
    case.features.add(f"operands-{nops}")
    case.features.add("implicit" if implicit else "explicit")
    if ell:
        case.features.add("ellipsis")
    if any(len(t) == 0 for t in inputs):
        case.features.add("order-0")
    if any(len(t) == 4 for t in inputs):
        case.features.add("order-4")
    if any(len(set(t)) < len(t) for t in inputs):
        case.features.add("diagonal")
    if any(sum(c in t for t in inputs) == 1 and c not in output for c in used):
        case.features.add("summed-in-one-operand")
    if not output:
        case.features.add("scalar-output")
    if any(c.isupper() for c in used):
        case.features.add("uppercase")
    values = set(spec.extents.values())
    if 1 in values:
        case.features.add("extent-1")
    if values & PRIMES:
        case.features.add("prime-extent")
    if 17 in values:
        case.features.add("extent-17")
    return spec


# -- operands --------------------------------------------------------------------------------------------


def _data(nrng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    if dtype.kind == "i":
        data = nrng.integers(-4, 5, shape)
    elif dtype.kind == "c":
        data = nrng.standard_normal(shape) + 1j * nrng.standard_normal(shape)
    else:
        data = nrng.standard_normal(shape)
    return np.asarray(data, dtype=dtype)  # an array also of order 0


def _format(rng: random.Random, order: int) -> dt.Format:
    """A random format of an order-`order` tensor on a small machine of its own."""
    return legate_cases.draw_format(rng, order, dt.Machine(dt.Grid(*rng.choice(FORMAT_GRIDS))))


@dataclass
class Operands:
    """One call's operands: the NumPy data, how each is passed, and what distal receives."""

    arrays: list[np.ndarray]
    kinds: list[str]  # "numpy", "cupynumeric", "tensor"
    formats: list[dt.Format | None]
    views: list[str]  # "" (the array itself), "transposed" (a transposed view), "offset" (a view inside a larger one)
    alias: list[int]  # the earlier operand this one is (the same object passed again), or -1

    def passed(self) -> list[Any]:
        out: list[Any] = []
        for k, (a, kind, fmt, view) in enumerate(zip(self.arrays, self.kinds, self.formats, self.views)):
            if self.alias[k] >= 0:
                out.append(out[self.alias[k]])
            elif kind == "tensor":
                out.append(dt.Tensor.from_array(f"X{k}", a, fmt))
            else:
                if kind == "numpy":
                    xp: Any = np
                else:
                    import cupynumeric

                    xp = cupynumeric
                if view == "transposed":  # the same values, stored with the axes reversed
                    out.append(xp.array(np.ascontiguousarray(a.T)).T)
                elif view == "offset":  # the same values, a view one element in along each axis
                    big = np.zeros(tuple(n + 1 for n in a.shape), a.dtype)
                    big[(slice(1, None),) * a.ndim] = a
                    out.append(xp.array(big)[(slice(1, None),) * a.ndim])
                else:
                    out.append(a if kind == "numpy" else xp.array(a))
        return out

    def describe(self, k: int) -> str:
        if self.alias[k] >= 0:
            return f"operand {self.alias[k]} again (the same object)"
        a, fmt, view = self.arrays[k], self.formats[k], self.views[k]
        return (f"{self.kinds[k]} {a.dtype} {a.shape}" + (f", a {view} view" if view else "")
                + (f", format {fmt!r}" if fmt else ""))

    def again(self, nrng: np.random.Generator) -> Operands:
        """New data of the same shapes and dtypes, passed the same ways."""
        arrays: list[np.ndarray] = []
        for a, alias in zip(self.arrays, self.alias):
            arrays.append(arrays[alias] if alias >= 0 else _data(nrng, a.shape, a.dtype))
        return Operands(arrays, self.kinds, self.formats, self.views, self.alias)


def draw_dtypes(rng: random.Random, n: int, case: Case) -> list[np.dtype[Any]]:
    if n > 1 and rng.random() < 0.25:
        dtypes = [rng.choice(DTYPES) for _ in range(n)]
    else:
        dtypes = [rng.choice(DTYPES)] * n
    if len(set(dtypes)) > 1:
        case.features.add("mixed-dtypes")
    for d in dtypes:
        case.features.add(d.name)
    return dtypes


_WEIGHTS = {"numpy": 4.5, "cupynumeric": 2.5, "tensor": 3.0}  # how often each operand kind is drawn
OPERAND_KINDS = tuple(k for k in _WEIGHTS if k != "cupynumeric" or HAS_CUPYNUMERIC)


def draw_operands(rng: random.Random, nrng: np.random.Generator, spec: Spec, case: Case, *,
                  kinds: tuple[str, ...] = OPERAND_KINDS, broadcast: bool = True) -> Operands:
    dtypes = draw_dtypes(rng, len(spec.inputs), case)
    arrays: list[np.ndarray] = []
    chosen: list[str] = []
    formats: list[dt.Format | None] = []
    views: list[str] = []
    for term, dtype in zip(spec.inputs, dtypes):
        kind = rng.choices(kinds, [_WEIGHTS[k] for k in kinds])[0]
        shape = [spec.extents[c] for c in term]
        if kind == "numpy" and broadcast and spec.ell and rng.random() < 0.3:
            dims = [d for d, c in enumerate(term) if c in spec.ell and spec.extents[c] > 1]
            if dims:
                shape[rng.choice(dims)] = 1
                case.features.add("size-one-broadcast")
        fmt = _format(rng, len(term)) if kind == "tensor" and term and rng.random() < 0.5 else None
        if fmt is not None:
            case.features.add("formatted-operand")
        case.features.add(f"{kind}-operand")
        view = rng.choice(("transposed", "offset")) if kind != "tensor" and term and rng.random() < 0.15 else ""
        if view:
            case.features.add(f"{view}-view")
        arrays.append(_data(nrng, tuple(shape), dtype))
        chosen.append(kind)
        formats.append(fmt)
        views.append(view)
    alias = [-1] * len(arrays)
    for k in range(1, len(arrays)):
        same = [j for j in range(k) if alias[j] < 0 and arrays[j].shape == arrays[k].shape
                and arrays[j].dtype == arrays[k].dtype]
        if same and rng.random() < 0.35:  # the same object passed again
            j = rng.choice(same)
            alias[k] = j
            arrays[k], chosen[k], formats[k], views[k] = arrays[j], chosen[j], formats[j], views[j]
            case.features.add("repeated-operand")
    return Operands(arrays, chosen, formats, views, alias)


# -- checking --------------------------------------------------------------------------------------------


def _wide(a: np.ndarray) -> np.ndarray:
    """`a` in the widest dtype of its kind (ints stay int64: exact)."""
    return a.astype(np.int64 if a.dtype.kind in "iu" else np.complex128 if a.dtype.kind == "c" else np.float64)


def compare(got: np.ndarray, expected: np.ndarray, magnitude: np.ndarray, dtype: np.dtype[Any]) -> str | None:
    """Why `got` is not `expected` (None when it is): NumPy's dtype and shape, int64 exactly, floats and
    complex numbers within a tolerance scaled by the sum of the terms' magnitudes."""
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if got.dtype != dtype:
        return f"dtype {got.dtype}, expected {dtype} (NumPy's)"
    if dtype.kind in "iu":
        bad = np.argwhere(got != expected)
    else:
        eps = 1e-5 if dtype in (np.float32, np.complex64) else 1e-11
        bad = np.argwhere(~(np.abs(_wide(got) - expected) <= eps * (magnitude + 1.0)))
    if not bad.size:
        return None
    with np.printoptions(threshold=20, precision=6):
        return f"differs at {len(bad)} element(s), e.g. {bad[:3].tolist()}: got {got!r}, expected {expected!r}"


def _oracle(args: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """numpy.einsum of `args` (NumPy's positional form) in wide dtypes, and of the magnitudes."""
    assert all(isinstance(a, str | list | np.ndarray) for a in args)
    wide = [_wide(a) if isinstance(a, np.ndarray) else a for a in args]
    mags = [np.abs(a).astype(np.float64) if isinstance(a, np.ndarray) else a for a in wide]
    return np.asarray(np.einsum(*wide)), np.asarray(np.einsum(*mags))


def _args(spec: Spec, arrays: list[Any], sublist: bool) -> list[Any]:
    if not sublist:
        return [spec.text(), *arrays]
    ins, out = spec.sublists()
    args: list[Any] = []
    for a, s in zip(arrays, ins):
        args += [a, s]
    return args if out is None else [*args, out]


def _numpy(x: Any) -> np.ndarray:
    return x.to_numpy() if isinstance(x, dt.Tensor) else np.asarray(x)


@contextlib.contextmanager
def _eager(off: bool) -> Iterator[None]:
    """DISTAL_EAGER=0 inside (auto never runs eagerly), or the variable unset."""
    before = os.environ.pop("DISTAL_EAGER", None)
    if off:
        os.environ["DISTAL_EAGER"] = "0"
    try:
        yield
    finally:
        os.environ.pop("DISTAL_EAGER", None)
        if before is not None:
            os.environ["DISTAL_EAGER"] = before


# -- the einsum kind ---------------------------------------------------------------------------------------


def _refusal(rng: random.Random, spec: Spec) -> tuple[str, str]:
    """Subscripts NumPy refuses, made from `spec`'s."""
    lhs = spec.text().split("->")[0]
    used = "".join(spec.inputs)
    named = spec.output.replace(spec.ell, "") if spec.ell else spec.output
    dots = "..." if spec.ell else ""
    ways = ["absent", *(["repeated"] if named else []), *(["no-ellipsis"] if spec.ell else [])]
    way = rng.choice(ways)
    if way == "absent":
        c = next(c for c in string.ascii_letters if c not in used)
        return f"{lhs}->{dots}{named}{c}", f"output subscript {c!r} in no operand"
    if way == "repeated":
        c = rng.choice(named)
        return f"{lhs}->{dots}{named}{c}", f"output subscript {c!r} twice"
    return f"{lhs}->{named}", "an explicit output without '...' while '...' stands for dimensions"


def run_einsum(rng: random.Random, nrng: np.random.Generator, case: Case) -> None:
    spec = draw_spec(rng, case)
    ops = draw_operands(rng, nrng, spec, case)
    mkind, machine = rng.choice(MACHINES)
    case.features.add(f"machine-{mkind}")
    eager_off = rng.random() < 0.4
    sublist = rng.random() < 0.12
    mode = rng.choices(("plain", "twice", "out-tensor", "out-array", "refused"), (70, 15, 5, 5, 5))[0]
    case.note(f"# {spec.explicit_text}, extents {spec.extents}")
    for k in range(len(ops.arrays)):
        case.note(f"# operand {k}: {ops.describe(k)}")
    if eager_off:
        case.note("os.environ['DISTAL_EAGER'] = '0'")
        case.features.add("eager-off")
    if sublist:
        case.features.add("sublist")
    passed = ops.passed()
    if mode == "refused":
        text, why = _refusal(rng, spec)
        case.note(f"dt.einsum({text!r}, *operands, machine={machine!r})  # NumPy refuses: {why}")
        try:
            np.einsum(text, *ops.arrays)
        except ValueError:
            pass
        else:
            raise AssertionError(f"the generator expected NumPy to refuse {text!r} ({why})")
        with _eager(eager_off):
            try:
                got = dt.einsum(text, *passed, machine=machine)
            except DistalError:
                case.features.add("refused")
                return
        raise Wrong(f"dt.einsum accepted {text!r}, which NumPy refuses ({why}); it returned "
                    f"{_numpy(got)!r}")
    args = _args(spec, passed, sublist)
    shown = f"{spec.text()!r}, *operands" if not sublist else f"*{_args(spec, ['op'] * len(passed), True)!r}"
    expected, magnitude = _oracle(_args(spec, list(ops.arrays), sublist))
    dtype = np.einsum(*_args(spec, list(ops.arrays), sublist)).dtype
    with _eager(eager_off):
        out: Any = None
        if mode == "out-tensor":
            out = dt.Tensor("O", expected.shape, dtype=dtype)
        elif mode == "out-array":
            out = np.full(expected.shape, 7, dtype=dtype)
        if out is not None:
            case.features.add(mode)
            case.note(f"out = {mode}")
        case.note(f"r = dt.einsum({shown}, machine={machine!r}{', out=out' if out is not None else ''})")
        result = dt.einsum(*args, machine=machine, out=out)
        if out is not None and result is not out:
            raise Wrong(f"dt.einsum(..., out=) returned {type(result).__name__}, not out")
        problem = compare(_numpy(result), expected, magnitude, dtype)
        if problem is not None:
            raise Wrong(problem)
        plan = dt.einsum_plan(*args, machine=machine)
        case.features.add("ran-eagerly" if plan.eager else "ran-on-legate")
        if eager_off and plan.eager:
            raise Wrong(f"ran eagerly with DISTAL_EAGER=0 set (plan.eager: {plan.eager!r})")
        if mode == "twice":
            again = ops.again(nrng)
            before = distal.api.einsum.cache_info()["hits"]
            case.note(f"r = dt.einsum({shown}, machine={machine!r})  # again, new data of the same shapes")
            second = dt.einsum(*_args(spec, again.passed(), sublist), machine=machine)
            problem = compare(_numpy(second), *_oracle(_args(spec, list(again.arrays), sublist)), dtype)
            if problem is not None:
                raise Wrong(f"second call: {problem}")
            problem = compare(_numpy(result), expected, magnitude, dtype)
            if problem is not None:
                raise Wrong(f"the first call's result, after the second call: {problem}")
            if distal.api.einsum.cache_info()["hits"] != before + 1:
                raise Wrong(f"second call: expected the cached plan reused, but cache_info() went from {before} "
                            f"hits to {distal.api.einsum.cache_info()}")
            case.features.add("plan-cache")


# -- the options kind ------------------------------------------------------------------------------------


def _statement(spec: Spec, tensors: list[dt.Tensor], dtype: np.dtype[Any]) -> dt.Tensor:
    """R(output) = X0(...) * X1(...) * ... over `tensors`, in index notation."""
    names = "".join(dict.fromkeys("".join(spec.inputs)))
    vars_ = dict(zip(names, dt.index_vars(" ".join(f"v{c}" for c in names)) if names else []))
    result = dt.Tensor("R", tuple(spec.extents[c] for c in spec.output), dtype=dtype)
    rhs: Any = None
    for t, term in zip(tensors, spec.inputs):
        access = t[tuple(vars_[c] for c in term)] if term else t[()]
        rhs = access if rhs is None else rhs * access
    result[tuple(vars_[c] for c in spec.output) if spec.output else ()] = rhs
    return result


def run_options(rng: random.Random, nrng: np.random.Generator, case: Case) -> None:
    spec = draw_spec(rng, case, ellipsis=False)
    ops = draw_operands(rng, nrng, spec, case, broadcast=False)
    machine = rng.choice(OPTION_MACHINES)
    formats = rng.random() < 0.5
    case.features.add("option-formats" if formats else "option-no-formats")
    case.note(f"# {spec.explicit_text}, extents {spec.extents}")
    for k in range(len(ops.arrays)):
        case.note(f"# X{k}: {ops.describe(k)}")
    passed = ops.passed()
    tensors: list[dt.Tensor] = []
    for k, p in enumerate(passed):  # an operand passed again is the same tensor again
        tensors.append(tensors[ops.alias[k]] if ops.alias[k] >= 0 else
                       p if isinstance(p, dt.Tensor) else dt.Tensor.from_array(f"X{k}", p))
    dtype = np.result_type(*ops.arrays)
    result = _statement(spec, tensors, dtype)
    case.note(f"{result.assignment}")
    found = dt.kernels.options(result.schedule(), machine, formats=formats)
    memory = None
    summed = [c for c in spec.extents if c not in spec.output and spec.extents[c] >= 2]
    if summed and rng.random() < 0.3:  # a bound no whole tile fits: summed variables fetched in steps
        memory = max(1, int(min(o.peak_bytes for o in found) * 0.6))
        found = dt.kernels.options(result.schedule(), machine, formats=formats, memory=memory)
    choices = [o for o in found if o.kind != "library"]
    split = [o for o in choices if o.split is not None]
    by_grid: dict[int, list[dt.kernels.Option]] = {}
    for o in choices:
        if o.kind == "distributed":
            by_grid.setdefault(len(o.grid), []).append(o)
    if split and rng.random() < 0.7:
        option = rng.choice(split)
    elif by_grid and rng.random() < 0.9:  # a grid of 1, 2 or 3 dimensions alike, then one plan on it
        option = rng.choice(by_grid[rng.choice(sorted(by_grid))])
    else:
        option = rng.choice(choices)
    case.note(f"found = dt.kernels.options(R.schedule(), {machine!r}, formats={formats}, memory={memory})")
    case.note(f"option = {option.what!r}  # of {len(found)}")
    case.note(f"sched = dt.kernels.realise(option, R.schedule(), {machine!r}, formats={formats})")
    if option.kind == "one task":
        case.features.add("option-one-task")
    elif option.kind == "distributed":
        case.features.add(f"option-grid-{len(option.grid)}d")
        p = (dt.Machine(machine) if isinstance(machine, dt.Grid) else machine or
             distal.search.default_machine()).size
        if option.grid == (2 * p,):
            case.features.add("option-over-decomposed")
        if any(v.name[1:] not in spec.output for v in option.vars):
            case.features.add("option-distributed-sum")
        if option.split is not None:
            case.features.add("option-split")
    sched = dt.kernels.realise(option, result.schedule(), machine, formats=formats)
    case.note(f"sched.compile().run()  # {sched.trace_text()}")
    sched.compile().run()
    expected, magnitude = _oracle([spec.explicit_text, *ops.arrays])
    problem = compare(result.to_numpy(), expected, magnitude, np.dtype(dtype))
    if problem is not None:
        raise Wrong(problem)


# -- the auto kind -----------------------------------------------------------------------------------------


@functools.cache
def _slow_leaves() -> Any:
    """This machine's time model (`distal.model.this_machine`), with leaves computing at 1 kflop/s."""
    from distal import model
    from distal.model.hardware import LEAF_KINDS

    here = model.this_machine()
    processor = replace(here.processor, flops=dict.fromkeys(LEAF_KINDS, 1e3), curves={}, streaming={})
    return replace(here, processor=processor)


def run_auto(rng: random.Random, nrng: np.random.Generator, case: Case) -> None:
    inner = legate_cases.Case(case.number)
    drawn = legate_cases._statement(rng, nrng, inner)
    case.text += inner.text
    stmt = drawn.stmt
    expected = einsum_oracle(stmt, drawn.inputs, drawn.init)
    magnitude = einsum_oracle(stmt, {k: np.abs(v) for k, v in drawn.inputs.items()}, np.abs(drawn.init))
    if stmt.accumulate:
        case.features.add("auto-accumulate")
    machine = drawn.machine if rng.random() < 0.75 else None
    slow = rng.random() < 0.5  # leaves as slow as a large problem's: spreading the work pays
    case.note(f"sched = A.schedule().auto({machine!r}{', model=slow_leaves' if slow else ''})")
    sched = drawn.out.schedule().auto(machine, model=_slow_leaves() if slow else None)
    case.note(f"# {sched.trace_text()}")
    case.note("sched.compile().run()")
    plan = sched.compile()
    case.features.add("auto-distributed" if plan.machine is not None else "auto-one-task")
    plan.run()
    got = drawn.out.to_numpy()
    problem = compare(got, expected.astype(drawn.init.dtype) if drawn.init.dtype.kind == "i" else expected,
                      magnitude, np.dtype(drawn.init.dtype))
    if problem is not None:
        raise Wrong(problem)


# -- running -----------------------------------------------------------------------------------------------


_LEGATE_NOISE = re.compile(r"^(\w+: )?LEGATE ERROR:( #\d| System:| Legate version:| Legion version:| Configure options:|"
                           r" LEGATE_CONFIG:| [=-]{20}|\s*$)")


def _message(exc: BaseException) -> str:
    """The exception's type and message, without Legate's banner and C++ stack frames."""
    lines = "".join(traceback.format_exception_only(exc)).strip().splitlines()
    return type(exc).__name__ + ": " + "\n".join(line for line in lines if not _LEGATE_NOISE.match(line))


def run_case(seed: int, n: int) -> dict[str, Any]:
    """Draw and run case `n`; the result as a JSON-able dict."""
    case = Case(n)
    rng = random.Random(case_seed(seed, n))
    nrng = np.random.default_rng(case_seed(seed, n))
    case.kind = rng.choices(KINDS, (60, 25, 15))[0]
    result: dict[str, Any] = {"case": n, "kind": case.kind, "status": "ok"}
    start = time.perf_counter()
    try:
        {"einsum": run_einsum, "options": run_options, "auto": run_auto}[case.kind](rng, nrng, case)
    except Wrong as exc:
        result.update(status="wrong", error=str(exc)[:2000])
    except Exception as exc:  # any failure is a finding, reported with its reproducer
        result.update(status="error", error=_message(exc)[:2000],
                      where="".join(traceback.format_tb(exc.__traceback__))[-1500:])
    result["seconds"] = round(time.perf_counter() - start, 3)
    result["features"] = sorted(case.features)
    result["repro"] = "\n".join(case.text)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case", type=int, default=None, help="replay this case alone")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    numbers = [args.case] if args.case is not None else range(args.cases)
    start = time.perf_counter()
    for n in numbers:
        print(json.dumps({"start": n}), flush=True)
        print(json.dumps(run_case(args.seed, n)), flush=True)
    print(json.dumps({"done": len(numbers), "seconds": round(time.perf_counter() - start, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
