"""Reading a `dt.einsum` call as `numpy.einsum` reads it: subscripts, operands and keywords.

`read_call(subscripts, operands)` gives a `Call`: each operand's letters
(`...` and the sublist form turned into letters, size-one dimensions
broadcast against longer ones dropped), the output's, and the operands
normalised where they enter distal (`host_operand`): NumPy data in native
byte order and aligned (a copy only where it is not), every dtype outside
distal's refused by name. `cast_call` checks (and, for `dtype=`, makes) the
conversion of each operand to the computing dtype by the `casting=` rule.
`read_options` checks `order=`, `casting=`, `dtype=` and `optimize=` as
NumPy does. Errors name the user's own operand positions (numbered from 0,
as NumPy numbers them) and letters, never a letter distal gave `...`.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from distal.api.tensor import Tensor
from distal.errors import DtypeError, NotationError

__all__ = ["Call", "Options", "canonical", "cast_call", "host_operand", "read_call", "read_options"]

LETTERS = string.ascii_letters
_SUBLIST = string.ascii_uppercase + string.ascii_lowercase  # the letter NumPy's sublist form gives each integer
_ORDERS = ("C", "F", "A", "K")
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
# distal's dtypes (`check_dtype`) by kind and size, in any byte order and under any alias (longlong is int64)
_NUMERIC = {("i", 1), ("i", 2), ("i", 4), ("i", 8), ("u", 1), ("u", 2), ("u", 4), ("u", 8), ("f", 2), ("f", 4),
            ("f", 8), ("c", 8), ("c", 16)}


@functools.lru_cache(maxsize=256)
def canonical(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """`dtype` (one distal computes with) as NumPy's own name for it, native byte order: '>f8' and longlong
    become float64 and int64."""
    return np.dtype(f"{dtype.kind}{dtype.itemsize}")
_STRATEGIES = ("greedy", "optimal", "auto", "dp", "branch-all", "branch-2", "branch-1", "random-greedy",
               "random-greedy-128", "auto-hq", "eager")


@dataclass(frozen=True)
class Options:
    """NumPy's keywords of one call, checked: the computing dtype (None: NumPy's promotion of the operands),
    the casting rule, the result's memory order, and the pairwise order asked for (`optimize`: False, a
    strategy name of opt_einsum, or an explicit path of operand positions)."""

    dtype: np.dtype[Any] | None
    casting: str
    order: str
    optimize: bool | str | tuple[tuple[int, ...], ...]


def read_options(dtype: Any, order: Any, casting: Any, optimize: Any) -> Options:
    """The keywords as NumPy checks them (a ValueError or TypeError class, as NumPy raises, for a bad one)."""
    if order is None:
        order = "K"  # NumPy's meaning of None
    if not isinstance(order, str) or order.upper() not in _ORDERS:
        raise NotationError(f"expected order= one of 'C', 'F', 'A', or 'K', but found {order!r} (NumPy refuses it "
                            f"too)")
    if casting not in _CASTINGS:
        raise NotationError(f"expected casting= one of {', '.join(map(repr, _CASTINGS))}, but found {casting!r} "
                            f"(NumPy refuses it too)")
    dt = None
    if dtype is not None:
        try:
            dt = np.dtype(dtype)
        except TypeError as exc:
            raise DtypeError(f"expected dtype= a NumPy dtype, but found {dtype!r}") from exc
        _check_kind(dt, "dtype=")
        dt = canonical(dt)
    how: bool | str | tuple[tuple[int, ...], ...]
    if optimize is None or optimize is False:
        how = False
    elif optimize is True:
        how = "greedy"  # NumPy's meaning of True
    elif isinstance(optimize, str):
        if optimize not in _STRATEGIES:
            raise NotationError(f"expected optimize= False, True, a path or one of {', '.join(_STRATEGIES)}, but "
                                f"found {optimize!r}")
        how = optimize
    elif isinstance(optimize, tuple) and len(optimize) == 2 and isinstance(optimize[0], str):
        return read_options(dtype, order, casting, optimize[0])  # NumPy's (strategy, memory limit)
    elif isinstance(optimize, list | tuple):
        steps = list(optimize)
        if steps and steps[0] == "einsum_path":  # numpy.einsum_path's own form
            steps = steps[1:]
        try:
            how = tuple(tuple(int(i) for i in step) for step in steps)
        except (TypeError, ValueError):
            raise NotationError(f"expected optimize= a path of tuples of operand positions, but found "
                                f"{optimize!r}") from None
    else:
        raise NotationError(f"expected optimize= False, True, a strategy name or a path, but found {optimize!r}")
    return Options(dt, casting, order.upper(), how)


@dataclass(frozen=True)
class Call:
    """One call's subscripts (explicit, letters only) and its operands as distal sees them."""

    inputs: tuple[str, ...]
    output: str
    arrays: tuple[Any, ...]  # NumPy arrays (native, aligned; size-one broadcast dimensions squeezed), Legate
    # arrays or Tensors
    given: tuple[str, ...] = ()  # each operand's subscripts as the user wrote them (errors quote them)
    dtypes: tuple[np.dtype[Any], ...] = ()  # each operand's dtype as the user gave it (byte order included)
    text: str = ""  # the subscripts as the user wrote them (the sublist form as letters)

    @property
    def spec(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def _sublists(args: Sequence[Any]) -> tuple[str, list[Any]]:
    """NumPy's sublist form einsum(op0, sub0, op1, sub1, ..., [sub_out]) as a subscripts string."""
    def text(sub: Any) -> str:
        out = ""
        try:
            items = list(sub)
        except TypeError:
            raise DtypeError(f"expected each subscript list to be a list of integers or ..., but found "
                             f"{sub!r}") from None
        for x in items:
            if x is Ellipsis:
                out += "..."
            elif isinstance(x, int | np.integer) and not isinstance(x, bool) and 0 <= int(x) < len(_SUBLIST):
                out += _SUBLIST[int(x)]  # NumPy's: 0-25 are A-Z, 26-51 are a-z
            elif isinstance(x, int | np.integer) and not isinstance(x, bool):
                raise NotationError(f"expected subscripts as integers 0-{len(_SUBLIST) - 1} or ..., but found {x!r}")
            else:
                raise DtypeError(f"expected each subscript to be an integer or ..., but found {x!r}")
        return out

    ops = list(args[0::2][: len(args) // 2])
    subs = [text(s) for s in args[1::2][: len(args) // 2]]
    spec = ",".join(subs)
    if len(args) % 2 == 1:
        spec += "->" + text(args[-1])
    return spec, ops


@dataclass(frozen=True)
class _Spec:
    """Subscripts read for operands of given shapes: each operand's letters (size-one broadcast dimensions
    dropped: `drops`), the output's."""

    inputs: tuple[str, ...]
    output: str
    drops: tuple[tuple[int, ...], ...]  # per operand, the size-one dimensions broadcast against longer ones
    given: tuple[str, ...]


def _shape_of(op: Any) -> tuple[int, ...]:
    if isinstance(op, Tensor):
        return op.concrete_shape()
    return tuple(int(n) for n in np.shape(op))


def read_call(subscripts: Any, operands: Sequence[Any], paired: bool = False) -> Call:
    """The call's subscripts and operands as distal computes them (see the module docstring). `paired`: the
    call asks for a pairwise order (`optimize=`), whose NumPy reading sums the dimensions under '...' that an
    explicit output leaves out (without it, NumPy refuses such an output)."""
    if not isinstance(subscripts, str):
        if isinstance(subscripts, bytes):
            subscripts = subscripts.decode()
        else:
            subscripts, ops = _sublists([subscripts, *operands])
            operands = ops
    if not operands:
        raise NotationError("expected at least one operand for einsum, but found none (NumPy refuses it too)")
    normal = [host_operand(op, n) for n, op in enumerate(operands)]
    shapes = tuple(_shape_of(op) for op in normal)
    spec = _read(subscripts, shapes, paired)
    arrays: list[Any] = []
    for shape, op, drop in zip(shapes, normal, spec.drops):
        if drop:
            kept = [e for d, e in enumerate(shape) if d not in drop]
            if isinstance(op, Tensor):  # a view of host data, or read back from Legate (documented)
                op = np.asarray(op).reshape(kept)
            elif isinstance(op, np.ndarray):
                op = op.reshape(kept)
            else:  # a Legate array reshaped on Legate (cuPyNumeric's reshape)
                op = op.reshape(tuple(kept))
        arrays.append(op)
    given = tuple(op.dtype if isinstance(op, np.ndarray) else np.dtype(norm.dtype)
                  for op, norm in zip(operands, normal))
    return Call(spec.inputs, spec.output, tuple(arrays), spec.given, given, subscripts)


def cast_call(call: Call, dtype: np.dtype[Any], casting: Any, convert: bool) -> Call:
    """`call` with every operand checked castable to the computing `dtype` by the `casting` rule (NumPy
    casts each operand so: a `DtypeError`, a TypeError, names the one it refuses), and, with `convert`
    (`dtype=` given), converted to it first, as NumPy converts them (NumPy arrays here; a dt.Tensor or a
    Legate array only where the cast is not safe, through the host: a safe one gives the same numbers when
    the statement computes in `dtype`)."""
    arrays = []
    for n, op in enumerate(call.arrays):
        have = np.dtype(op.dtype)
        user = call.dtypes[n] if call.dtypes else have  # NumPy's 'no' and 'equiv' see the byte order
        if user != dtype and not np.can_cast(user, dtype, casting):
            raise DtypeError(f"expected operand {n} castable to the computing dtype {dtype} by the rule "
                             f"{casting!r}, but found {user} (NumPy refuses it too; pass casting='unsafe' to "
                             f"allow it)")
        if convert and have != dtype:
            if isinstance(op, np.ndarray):
                op = op.astype(dtype)
            elif not np.can_cast(have, dtype, "safe"):
                op = np.asarray(op).astype(dtype)
        arrays.append(op)
    if all(x is y for x, y in zip(arrays, call.arrays)):
        return call
    return replace(call, arrays=tuple(arrays))


def host_operand(op: Any, position: int) -> Any:
    """An operand as distal reads it: a dt.Tensor or a Legate array as it is (a Tensor of a non-native dtype
    read to the host and converted), anything else as a NumPy array of a dtype distal computes with, in
    native byte order and aligned (copied only where it is not). A `DtypeError` (a TypeError) names the
    operand's position otherwise."""
    where = f"operand {position}"
    if isinstance(op, Tensor) or hasattr(op, "__legate_data_interface__"):
        have = np.dtype(op.dtype)
        _check_kind(have, where)
        if have == canonical(have):
            return op
        data = np.asarray(op)
    elif isinstance(op, np.ndarray):
        data = op.view(np.ndarray) if type(op) is not np.ndarray else op  # a memmap or other subclass: its data
    else:
        try:
            data = np.asarray(op)
        except (TypeError, ValueError) as exc:
            raise DtypeError(f"expected {where} to be an array, but found {type(op).__name__}: {exc}") from None
    _check_kind(data.dtype, where)
    want = canonical(data.dtype)
    if data.dtype != want or not data.flags.aligned:
        # big-endian or unaligned data is converted once here: Legate's stores and BLAS read native, aligned
        # elements only (a big-endian array attached as it is read as garbage)
        data = data.astype(want, order="K" if data.ndim else "C", copy=True)
    return data


def _check_kind(dtype: np.dtype[Any], where: str) -> None:
    if (dtype.kind, dtype.itemsize) not in _NUMERIC:
        hint = " (NumPy's einsum sums bool with `or`; give it as an integer dtype)" if dtype.kind == "b" else ""
        raise DtypeError(f"expected {where} of a numeric dtype distal computes with (int8-64, uint8-64, "
                         f"float16/32/64, complex64/128), but found {dtype}{hint}")


@functools.lru_cache(maxsize=1024)
def _read(subscripts: str, shapes: tuple[tuple[int, ...], ...], paired: bool = False) -> _Spec:
    """The subscripts for operands of these shapes, as NumPy reads them (cached: a call reads them once)."""
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise NotationError(f"expected at most one '->' in the subscripts, but found {subscripts!r}")
    explicit = "->" in text
    lhs, out = text.split("->") if explicit else (text, None)
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise NotationError(f"expected {len(terms)} operand(s) for the subscripts {subscripts!r}, but found "
                            f"{len(shapes)}")
    for term in (*terms, out or ""):
        bad = [c for c in term.replace("...", "") if c not in LETTERS]
        if bad or term.replace("...", "").count(".") or term.count("...") > 1:
            raise NotationError(f"expected subscripts of letters a-z, A-Z and at most one '...' per operand, but "
                                f"found {term!r} in {subscripts!r}")
    # '...' becomes letters no term uses, one per broadcast dimension (NumPy aligns them from the right)
    used = set(text)
    spare = [c for c in LETTERS if c not in used]
    ell = 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            ell = max(ell, len(shape) - (len(term) - 3))
    if ell > len(spare):
        raise NotationError(f"expected at most {len(spare)} dimensions under '...', but found {ell}")
    ell_letters = "".join(spare[:ell])

    def said(c: str) -> str:  # a letter as the user wrote it: one of theirs, or a dimension under '...'
        if c in ell_letters:
            return f"the dimension {ell_letters.index(c) - ell} under '...' (counted from the right)"
        return f"subscript {c!r}"

    inputs = []
    for n, (term, shape) in enumerate(zip(terms, shapes)):
        if "..." in term:
            k = len(shape) - (len(term) - 3)
            if k < 0:
                raise NotationError(f"expected operand {n} of at least {len(term) - 3} dimension(s) for {term!r} "
                                    f"in {subscripts!r}, but found shape {shape}")
            term = term.replace("...", ell_letters[ell - k:])
        if len(term) != len(shape):
            raise NotationError(f"expected an operand of {len(term)} dimension(s) for subscripts {terms[n]!r}, but "
                                f"found shape {shape} in operand {n} of {subscripts!r} (NumPy refuses it too)")
        for c in set(term):  # a repeated letter (a diagonal) takes equal extents, with no broadcasting
            sizes = {e for d, e in zip(term, shape) if d == c}
            if len(sizes) > 1:
                raise NotationError(f"expected equal extents for the repeated {said(c)} of operand {n} "
                                    f"in {subscripts!r}, but found {sorted(sizes)} (NumPy refuses it too)")
        inputs.append(term)
    letters = "".join(inputs)
    if out is None:  # NumPy's implicit output: '...' first, then the letters that appear once, sorted
        out = ell_letters + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                           and c not in ell_letters))
    elif "..." in out:
        out = out.replace("...", ell_letters)
    elif ell_letters and not paired:
        raise NotationError(f"expected '...' in the output of {subscripts!r}, whose operands have dimensions under "
                            f"'...' (NumPy refuses it too: give the output '...' or sum them with letters)")
    for c in out:
        if out.count(c) > 1:
            raise NotationError(f"expected each output subscript once, but found {c!r} more than once in "
                                f"{subscripts!r} (NumPy refuses it too)")
        if c not in letters:
            raise NotationError(f"expected every output subscript in some operand, but found {c!r} in no operand "
                                f"of {subscripts!r} (NumPy refuses it: an einsum output is a sum over the operands)")
    # extents: one per letter; a dimension of extent one broadcasts against a longer one (as in NumPy)
    extent: dict[str, tuple[int, int]] = {}
    for n, (term, shape) in enumerate(zip(inputs, shapes)):
        for c, e in zip(term, shape):
            if e != 1:
                first = extent.setdefault(c, (e, n))
                if first[0] != e:
                    raise NotationError(f"expected one extent for {said(c)} in {subscripts!r}, but found "
                                        f"{first[0]} and {e} (operands {first[1]} and {n}; NumPy refuses it too)")
    final: list[str] = []
    drops: list[tuple[int, ...]] = []
    for term, shape in zip(inputs, shapes):
        drop = tuple(d for d, (c, e) in enumerate(zip(term, shape)) if e == 1 and extent.get(c, (1, 0))[0] != 1)
        final.append("".join(c for d, c in enumerate(term) if d not in drop))
        drops.append(drop)
    return _Spec(tuple(final), out, tuple(drops), tuple(terms))
