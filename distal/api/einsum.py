"""`dt.einsum`: NumPy's einsum, distributed with no schedule written.

`einsum(subscripts, *operands, machine=None, out=None)` reads the
subscripts as NumPy does (explicit `->` or implicit output, repeated
letters for diagonals, `...`, size-one dimensions broadcast, the sublist
form), writes the statement `R(out) = A(...) * B(...) * ...` over tensors
holding the operands (NumPy arrays are read where they are, cuPyNumeric
arrays copied store to store on Legate, `dt.Tensor`s used as they are), and
runs the schedule `Schedule.auto` chooses for it on `machine` (default:
every processor the running Legate has), eager runs in this process
included. The result is a new `dt.Tensor` of NumPy's result dtype (or
`out`, which receives it).

Plans are cached: a call with the same subscripts, shapes, dtypes, formats,
data location (host or Legate) and machine as an earlier one runs the plan
compiled then, on the new data (at most `CACHE_SIZE` plans, least recently
used dropped first; `clear_cache()` empties it). `einsum_plan(...)` returns
that plan instead of running it, for `explain()`.
"""

from __future__ import annotations

import functools
import os
import string
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import distal.contract as contract
import distal.kernels as kernels
from distal.api.plan import Plan
from distal.api.tensor import Tensor
from distal.errors import DistalError, NotationError, NotSupportedYet
from distal.machine.grid import Grid, Machine
from distal.notation.ast import Access, Assignment, Expr, IndexVar, Literal
from distal.notation.check import check_statement
from distal.notation.storage import HostStorage
from distal.notation.variable import Bindings, TensorVar
from distal.search import resolve_machine

__all__ = ["CACHE_SIZE", "cache_info", "clear_cache", "einsum", "einsum_plan"]

CACHE_SIZE = 64  # compiled plans kept (least recently used dropped first)
_LETTERS = string.ascii_letters
_SUBLIST = string.ascii_uppercase + string.ascii_lowercase  # the letter NumPy's sublist form gives each integer


@dataclass(frozen=True)
class _Call:
    """One call's subscripts (explicit, letters only) and its operands as distal sees them."""

    inputs: tuple[str, ...]
    output: str
    arrays: tuple[Any, ...]  # NumPy arrays (size-one broadcast dimensions squeezed), Legate arrays or Tensors

    @property
    def spec(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


@dataclass
class _Entry:
    plan: Plan
    inputs: tuple[TensorVar, ...]  # the plan's var of each operand, in operand order
    output: TensorVar
    # the store of the last result on Legate, and that result (weakly): when the result is gone by the next
    # call, that call writes into its store, memory Legate has already touched (a new store lands in pool
    # memory nothing touched yet: a 264 MB outer product took 0.22 s that way, 0.02 s in a store reused)
    spare: Any = None
    last: Any = None


@dataclass(frozen=True)
class _Eager:
    """A cached plan that runs eagerly, of a product over NumPy arrays: the result's dtype and shape (the
    operands are converted to the dtype, as the plan's task body converts them)."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]


_CACHE: OrderedDict[Any, _Entry] = OrderedDict()
_EAGER: OrderedDict[Any, _Eager] = OrderedDict()  # eager plans of products on NumPy arrays, by the call's key
_STATS = {"hits": 0, "misses": 0}


def clear_cache() -> None:
    """Forget every compiled plan."""
    _CACHE.clear()
    _EAGER.clear()


def _eager_allowed() -> bool:
    """Whether auto may choose an eager run (`DISTAL_EAGER=0` says no): part of a cached plan's key."""
    return os.environ.get("DISTAL_EAGER", "1") != "0"


def _run_eager(fast: _Eager, call: _Call) -> Tensor:
    """A call whose cached plan runs eagerly: the contraction its task body runs (`distal.contract`), straight
    on the NumPy operands, into a new host tensor."""
    arrays = [a if a.dtype == fast.dtype else a.astype(fast.dtype) for a in call.arrays]
    value = np.empty(fast.shape, dtype=fast.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        contract.contraction(call.spec, arrays).run(arrays, np, out=value)
    result = Tensor("R", fast.shape, dtype=fast.dtype)
    result.bind(HostStorage(value))
    return result


def cache_info() -> dict[str, int]:
    """Plans held, and calls that found (hits) or compiled (misses) their plan."""
    return {"plans": len(_CACHE), "size": CACHE_SIZE, **_STATS}


# -- subscripts -------------------------------------------------------------------------------------------


def _sublists(args: Sequence[Any]) -> tuple[str, list[Any]]:
    """NumPy's sublist form einsum(op0, sub0, op1, sub1, ..., [sub_out]) as a subscripts string."""
    def text(sub: Any) -> str:
        out = ""
        for x in sub:
            if x is Ellipsis:
                out += "..."
            elif isinstance(x, int | np.integer) and 0 <= int(x) < len(_SUBLIST):
                out += _SUBLIST[int(x)]  # NumPy's: 0-25 are A-Z, 26-51 are a-z
            else:
                raise NotationError(f"expected subscripts as integers 0-{len(_LETTERS) - 1} or ..., but found {x!r}")
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


def _parse(subscripts: Any, operands: Sequence[Any]) -> _Call:
    if not isinstance(subscripts, str):
        subscripts, ops = _sublists([subscripts, *operands])
        operands = ops
    shapes = tuple(tuple(int(n) for n in np.shape(op)) if not isinstance(op, Tensor) else op.concrete_shape()
                   for op in operands)
    spec = _read(subscripts, shapes)
    arrays: list[Any] = []
    for term, shape, op, drop in zip(spec.inputs, shapes, operands, spec.drops):
        if drop:
            if isinstance(op, Tensor) or hasattr(op, "__legate_data_interface__"):
                raise NotSupportedYet(f"a size-one dimension broadcast against a longer one in operand {term!r} "
                                      f"of {subscripts!r} is supported for NumPy arrays only; give it full size")
            op = np.asarray(op).reshape([n for d, n in enumerate(shape) if d not in drop])
        arrays.append(op)
    return _Call(spec.inputs, spec.output, tuple(arrays))


@functools.lru_cache(maxsize=1024)
def _read(subscripts: str, shapes: tuple[tuple[int, ...], ...]) -> _Spec:
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
        bad = [c for c in term.replace("...", "") if c not in _LETTERS]
        if bad or term.replace("...", "").count(".") or term.count("...") > 1:
            raise NotationError(f"expected subscripts of letters a-z, A-Z and at most one '...' per operand, but "
                                f"found {term!r} in {subscripts!r}")
    # '...' becomes letters no term uses, one per broadcast dimension (NumPy aligns them from the right)
    used = set(text)
    spare = [c for c in _LETTERS if c not in used]
    ell = 0
    for term, shape in zip(terms, shapes):
        if "..." in term:
            ell = max(ell, len(shape) - (len(term) - 3))
    if ell > len(spare):
        raise NotationError(f"expected at most {len(spare)} dimensions under '...', but found {ell}")
    ell_letters = "".join(spare[:ell])
    inputs = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            n = len(shape) - (len(term) - 3)
            if n < 0:
                raise NotationError(f"expected an operand of at least {len(term) - 3} dimensions for {term!r}, "
                                    f"but found shape {shape}")
            term = term.replace("...", ell_letters[ell - n:])
        if len(term) != len(shape):
            raise NotationError(f"expected an operand of {len(term)} dimension(s) for subscripts {term!r}, but "
                                f"found shape {shape}")
        inputs.append(term)
    letters = "".join(inputs)
    if out is None:  # NumPy's implicit output: '...' first, then the letters that appear once, sorted
        out = ell_letters + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                           and c not in ell_letters))
    elif "..." in out:
        out = out.replace("...", ell_letters)
    elif ell_letters:
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
    extent: dict[str, int] = {}
    for term, shape in zip(inputs, shapes):
        for c, n in zip(term, shape):
            if n != 1:
                if extent.setdefault(c, n) != n:
                    raise NotationError(f"expected one extent for subscript {c!r} in {subscripts!r}, but found "
                                        f"{extent[c]} and {n}")
    final: list[str] = []
    drops: list[tuple[int, ...]] = []
    for term, shape in zip(inputs, shapes):
        drop = tuple(d for d, (c, n) in enumerate(zip(term, shape)) if n == 1 and extent.get(c, 1) != 1)
        final.append("".join(c for d, c in enumerate(term) if d not in drop))
        drops.append(drop)
    return _Spec(tuple(final), out, tuple(drops))


# -- tensors ------------------------------------------------------------------------------------------------


def _tensor(name: str, op: Any) -> Tensor:
    """A tensor holding an operand: a dt.Tensor as it is, a Legate array copied on Legate, NumPy data read in
    place (a read-only view; nothing writes an operand)."""
    if isinstance(op, Tensor):
        return op
    if hasattr(op, "__legate_data_interface__"):
        return Tensor.from_array(name, op)
    data = np.asarray(op)
    if data.dtype == np.bool_ or data.dtype.kind not in "iufc":
        raise NotationError(f"expected numeric operands for einsum, but found dtype {data.dtype} in operand {name}")
    t = Tensor(name, data.shape, dtype=data.dtype)
    view = data.view()
    view.flags.writeable = False
    t.bind(HostStorage(view))
    return t


def _location(t: Tensor) -> str:
    return "legate" if t.on_legate else "host" if t.has_data else "none"


def _statement(call: _Call, tensors: Sequence[Tensor], out: Tensor) -> Assignment:
    vars_ = {c: IndexVar(c) for c in dict.fromkeys("".join(call.inputs) + call.output)}
    factors = [Access(t.var, tuple(vars_[c] for c in term)) for t, term in zip(tensors, call.inputs)]
    rhs: Expr = factors[0] if factors else Literal(1)
    for f in factors[1:]:
        rhs = rhs * f
    return Assignment(Access(out.var, tuple(vars_[c] for c in call.output)), rhs)


def _result_dtype(tensors: Sequence[Tensor]) -> np.dtype[Any]:
    return np.result_type(*(t.dtype for t in tensors)) if tensors else np.dtype(np.float64)


def _build(call: _Call, tensors: Sequence[Tensor], out: Tensor, machine: Machine) -> _Entry:
    """Compile the call's plan on tensors like this call's (the output a stand-in of the result's kind), and
    keep it without their data (each call binds its own, `_bound`)."""
    holder = Tensor(out.name, out.shape, out.format, dtype=out.dtype, casting=out.casting)
    stmt = check_statement(_statement(call, tensors, holder))
    holder.record(stmt)
    sched = kernels.auto_schedule(holder.schedule(), machine, eager=True, formats=False)
    plan = replace(sched.compile(), bindings=Bindings())
    return _Entry(plan, tuple(t.var for t in tensors), holder.var)


def _prepare(call: _Call, machine: Machine | Grid | None, out: Any) -> tuple[_Entry, list[Tensor], Tensor]:
    tensors = [_tensor(f"T{n}", op) for n, op in enumerate(call.arrays)]
    dtype = _result_dtype(tensors)
    ext = {c: n for term, t in zip(call.inputs, tensors) for c, n in zip(term, t.concrete_shape())}
    shape = tuple(ext[c] for c in call.output)
    if isinstance(out, Tensor):
        if out.concrete_shape() != shape:
            raise NotationError(f"expected out of shape {shape} for {call.spec}, but found {out.concrete_shape()}")
        result = out
    else:
        result = Tensor("R", shape, dtype=dtype)
    m = resolve_machine(machine)
    operands = tuple((t.concrete_shape(), t.dtype.str, t.format, _location(t)) for t in tensors)
    key = (call.spec, _eager_allowed(), operands, (result.dtype.str, result.format, result.casting), m)
    entry = _CACHE.get(key)
    if entry is None:
        _STATS["misses"] += 1
        entry = _build(call, tensors, result, m)
        _CACHE[key] = entry
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _STATS["hits"] += 1
        _CACHE.move_to_end(key)
    return entry, tensors, result


def _bound(entry: _Entry, tensors: Sequence[Tensor], result: Tensor) -> Plan:
    """The cached plan with its vars bound to this call's tensors."""
    pairs = [*zip(entry.inputs, tensors), (entry.output, result)]
    # a new plan object per call: what running it works out is cached by plan (`distal.lower.executable`), so a
    # call's run never shares the record of an earlier call's stores, and every call has a new output anyway
    return replace(entry.plan, bindings=Bindings.pairs(pairs))


def einsum_plan(subscripts: Any, *operands: Any, machine: Machine | Grid | None = None, out: Any = None) -> Plan:
    """The plan `einsum` would run for these operands (compiled once, cached), bound to them: print it,
    `explain()` it, or `run()` it (its output is a new tensor, `plan.tensor(plan.output)`)."""
    call = _parse(subscripts, operands)
    entry, tensors, result = _prepare(call, machine, out if isinstance(out, Tensor) else None)
    return _bound(entry, tensors, result)


def einsum(subscripts: Any, *operands: Any, machine: Machine | Grid | None = None, out: Any = None) -> Any:
    """NumPy's einsum over NumPy arrays, cuPyNumeric arrays or dt.Tensors, scheduled by `Schedule.auto`.

    Returns a new `dt.Tensor` of NumPy's result dtype; with `out` (a `dt.Tensor` of the result's shape, or a
    NumPy array), the result is written there and `out` returned. See the module docstring.

    >>> import numpy as np
    >>> import distal as dt
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> np.allclose(dt.einsum("ij,kj->ik", a, a).to_numpy(), a @ a.T)
    True
    """
    if out is not None and not isinstance(out, Tensor | np.ndarray):
        raise DistalError(f"expected out= a dt.Tensor or a NumPy array, but found {type(out).__name__}")
    call = _parse(subscripts, operands)
    host = not isinstance(out, Tensor) and all(type(a) is np.ndarray for a in call.arrays)
    key = (call.spec, tuple((a.shape, a.dtype.str) for a in call.arrays), resolve_machine(machine)) \
        if host and _eager_allowed() else None
    fast = _EAGER.get(key) if key is not None else None
    if fast is not None:  # an eager plan of a product on NumPy arrays: its contraction, straight on them
        _STATS["hits"] += 1
        result = _run_eager(fast, call)
    else:
        entry, tensors, result = _prepare(call, machine, out if isinstance(out, Tensor) else None)
        mine = out is None or isinstance(out, np.ndarray)
        if mine and entry.spare is not None and (entry.last is None or entry.last() is None):
            result.bind(entry.spare)  # the last result is gone: its store takes this one
        plan = _bound(entry, tensors, result)
        plan.run()
        if mine and result.on_legate:
            entry.spare, entry.last = result.storage, weakref.ref(result)
        if key is not None and plan.eager:  # an einsum is a product: its task body runs one contraction
            _EAGER[key] = _Eager(result.dtype, result.concrete_shape())
            while len(_EAGER) > CACHE_SIZE:
                _EAGER.popitem(last=False)
    if isinstance(out, np.ndarray):
        value = result.to_numpy()
        if out.shape != value.shape:
            raise NotationError(f"expected out of shape {value.shape}, but found {out.shape}")
        np.copyto(out, value, casting="same_kind")
        return out
    return result
