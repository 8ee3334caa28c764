"""`dt.einsum`: NumPy's einsum, distributed with no schedule written.

`einsum(subscripts, *operands, out=None, dtype=None, order="K",
casting="safe", optimize=False, machine=None)` reads the call as NumPy does
(`distal.api._einsum_args`: subscripts, operands in native byte order and
aligned, NumPy's keywords and refusals, as ValueError/TypeError classes),
writes the statement `R(out) = A(...) * B(...) * ...` over tensors holding
the operands (NumPy arrays are read where they are, cuPyNumeric arrays
copied store to store on Legate, `dt.Tensor`s of any name used as they are),
and runs the schedule `Schedule.auto` chooses for it on `machine` (default:
every processor the running Legate has; a machine of processors Legate does
not run becomes the same machine of CPUs, with a warning), eager runs in
this process included. `optimize=` (other than False) runs opt_einsum's
pairwise path, a statement per pair. An operand or output over Legate's six
dimensions has letters that travel together folded into one, or runs
eagerly. The result is a new `dt.Tensor` of NumPy's result dtype (or `out`,
which receives it by NumPy's casting rule). Every 16 calls on Legate (or 64
MiB staged) wait for the queued work, so that what earlier calls dropped is
freed (`_settle`).

Plans are cached: a call with the same subscripts, shapes, dtypes, formats,
data location (host, Legate, or Legate with the host copy a store was placed
from) and machine as an earlier one runs the plan compiled then, on the new
data (an eager plan's contraction straight on the operands' host arrays; at
most `CACHE_SIZE` plans, least recently used dropped first; `clear_cache()`
empties it); they are compiled on
stand-ins of the operands, so the formats a plan gives its tensors never
reach the user's. `einsum_plan(...)` returns that plan instead of running
it, for `explain()`.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import distal.contract as contract
import distal.kernels as kernels
from distal.api._einsum_args import Call, Options, canonical, cast_call, read_call, read_options
from distal.api._threads import legate_section
from distal.api.plan import Plan
from distal.api.tensor import Tensor
from distal.errors import DistalFallbackWarning, DtypeError, NotationError
from distal.machine.grid import Grid, Machine
from distal.notation.ast import Access, Assignment, Expr, IndexVar, Literal
from distal.notation.check import check_statement
from distal.notation.storage import HostStorage, host_array, host_mirror
from distal.notation.variable import Bindings, TensorVar
from distal.search import resolve_machine

__all__ = ["CACHE_SIZE", "cache_info", "clear_cache", "einsum", "einsum_plan"]

CACHE_SIZE = 64  # compiled plans kept (least recently used dropped first)
_MAX_DIMS = 6  # of a Legate store (and launch): more is folded or run eagerly
_SETTLE_CALLS = 16  # Legate calls, or
_SETTLE_BYTES = 64 << 20  # bytes they staged, between two fences (`_settle`)


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
    """A cached plan that runs eagerly, of a product over operands in host memory (`_on_host`): the result's
    dtype and shape (the operands are converted to the dtype, as the plan's task body converts them)."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class _Quick:
    """A call `einsum(subscripts, *arrays)` with no keywords, of NumPy arrays distal reads as they are (native,
    aligned, of a dtype it computes with, no size-one dimension broadcast), whose cached plan runs eagerly: the
    contraction planned for their layouts and the result's shape and dtype, on the default machine it was chosen
    for (`_quick`: such a call skips reading its arguments again, 0.1-0.2 ms of a call right after work that
    evicted the interpreter's data from the caches)."""

    machine: Machine
    contraction: contract.Contraction
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


_CACHE: OrderedDict[Any, _Entry] = OrderedDict()
_EAGER: OrderedDict[Any, _Eager] = OrderedDict()  # eager plans of products on host data, by the call's key
_QUICK: OrderedDict[Any, _Quick] = OrderedDict()  # eager calls of NumPy arrays, by subscripts, shapes, strides, dtypes
_STATS = {"hits": 0, "misses": 0}


def clear_cache() -> None:
    """Forget every compiled plan."""
    _CACHE.clear()
    _EAGER.clear()
    _QUICK.clear()


def _quick_key(subscripts: Any, operands: Sequence[Any]) -> Any:
    """The key of a call in `_QUICK` (None where the call cannot be one: subscripts not a string, an operand not
    a plain NumPy array in native byte order and aligned)."""
    if type(subscripts) is not str:
        return None
    for op in operands:
        if type(op) is not np.ndarray or not op.dtype.isnative or not op.flags.aligned:
            return None
    return subscripts, tuple((op.shape, op.strides, op.dtype) for op in operands)


def _quick(key: Any, operands: Sequence[Any]) -> Tensor | None:
    """The call run as the eager call it was before (`_Quick`), None where it was not one or the default
    machine or `DISTAL_EAGER` changed since."""
    quick = _QUICK.get(key)
    if quick is None or quick.machine is not resolve_machine(None) or not _eager_allowed():
        return None
    _STATS["hits"] += 1
    return _eager_result(quick.contraction, quick.shape, quick.dtype, operands)


def _remember(key: Any, operands: Sequence[Any], call: Call, dtype: np.dtype[Any]) -> None:
    """Keep a call for `_quick` where its arguments read as they are (`call.arrays` the operands themselves)
    and its plan ran eagerly on them."""
    if len(call.arrays) != len(operands) or any(a is not o for a, o in zip(call.arrays, operands)):
        return
    machine = resolve_machine(None)
    eager = _EAGER.get(_eager_key(call, dtype, machine))
    if eager is None:
        return
    arrays = [a if a.dtype == eager.dtype else a.astype(eager.dtype) for a in call.arrays]
    _QUICK[key] = _Quick(machine, contract.contraction(call.spec, arrays), eager.shape, eager.dtype)
    while len(_QUICK) > CACHE_SIZE:
        _QUICK.popitem(last=False)


def _eager_allowed() -> bool:
    """Whether auto may choose an eager run (`DISTAL_EAGER=0` says no): part of a cached plan's key."""
    return os.environ.get("DISTAL_EAGER", "1") != "0"


def _eager_result(planned: contract.Contraction | None, shape: tuple[int, ...], dtype: np.dtype[Any],
                  hosts: Sequence[np.ndarray], spec: str = "") -> Tensor:
    """A call whose cached plan runs eagerly: a new host tensor of `shape` and `dtype` holding the contraction its
    task body runs (`distal.contract`; `planned` for these arrays, else `spec`'s planned now), straight on the
    operands' host arrays (`_on_host`), each converted to `dtype` first as the task body converts them."""
    arrays = [a if a.dtype == dtype else a.astype(dtype) for a in hosts]
    value = np.empty(shape, dtype=dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), contract.on_user_threads():
        (planned or contract.contraction(spec, arrays)).run(arrays, np, out=value)
    result = Tensor("R", shape, dtype=dtype)
    result.bind(HostStorage(value))
    return result


def cache_info() -> dict[str, int]:
    """Plans held, and calls that found (hits) or compiled (misses) their plan."""
    return {"plans": len(_CACHE), "size": CACHE_SIZE, **_STATS}


# -- tensors ------------------------------------------------------------------------------------------------


def _tensor(name: str, op: Any) -> Tensor:
    """A tensor holding an operand: a Legate array copied on Legate, NumPy data (already native and aligned,
    `host_operand`) read in place (a read-only view; nothing writes an operand)."""
    if hasattr(op, "__legate_data_interface__"):
        return Tensor.from_array(name, op)
    t = Tensor(name, op.shape, dtype=op.dtype)
    view = op.view()
    view.flags.writeable = False
    t.bind(HostStorage(view))
    return t


def _alias(name: str, t: Tensor) -> Tensor:
    """Another tensor over `t`'s data, named `name`: a statement has one tensor per name, and two of the user's
    tensors (two earlier results, say) may share one."""
    alias = Tensor(name, t.concrete_shape(), t.format, dtype=t.dtype)
    alias.bind(t.storage)
    return alias


def _fresh(base: str, taken: set[str]) -> str:
    """`base`, or `base_1`, `base_2`, ... : a name no tensor of the call has (added to `taken`)."""
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _operands(arrays: Sequence[Any], out: Tensor | None) -> tuple[list[Tensor], set[str]]:
    """The tensors of a call's operands: the user's tensors as they are (each name once: a second tensor of a
    name already used is read through an alias), the others under names no tensor of the call has; with the
    names taken."""
    taken = {a.name for a in arrays if isinstance(a, Tensor)} | ({out.name} if out is not None else set())
    by_name: dict[str, Tensor] = {}
    tensors = []
    for n, op in enumerate(arrays):
        if isinstance(op, Tensor):
            first = by_name.setdefault(op.name, op)
            t = op if first is op else _alias(_fresh(f"T{n}", taken), op)
        else:
            t = _tensor(_fresh(f"T{n}", taken), op)
        tensors.append(t)
    return tensors, taken


def _location(t: Tensor) -> str:
    """Where a tensor's data is, as auto prices reading it: a store on Legate with the host copy it was placed
    from (`host_mirror`: an eager run reads that) is not one without."""
    if t.on_legate:
        return "legate" if host_mirror(t.storage) is None else "legate+mirror"
    return "host" if t.has_data else "none"


def _on_host(op: Any) -> tuple[np.ndarray, Any] | None:
    """An operand's data where it is already in host memory, with what an eager plan's cache key says of it:
    a NumPy array; a tensor's host data, or the host copy its store on Legate was placed from (`host_mirror`),
    with its format and location. None for any other operand (a cuPyNumeric array, a store without a copy)."""
    if type(op) is np.ndarray:
        return op, (op.shape, op.dtype.str)
    if not isinstance(op, Tensor):
        return None
    data = host_array(op.storage)
    if data is None or data.shape != op.concrete_shape():
        return None
    return data, (data.shape, op.dtype.str, op.format, _location(op))


def _statement(call: Call, tensors: Sequence[Tensor], out: Tensor) -> Assignment:
    vars_ = {c: IndexVar(c) for c in dict.fromkeys("".join(call.inputs) + call.output)}
    factors = [Access(t.var, tuple(vars_[c] for c in term)) for t, term in zip(tensors, call.inputs)]
    rhs: Expr = factors[0] if factors else Literal(1)
    for f in factors[1:]:
        rhs = rhs * f
    return Assignment(Access(out.var, tuple(vars_[c] for c in call.output)), rhs)


def _build(call: Call, tensors: Sequence[Tensor], out: Tensor, machine: Machine, notes: tuple[str, ...],
           eager: str) -> _Entry:
    """Compile the call's plan on tensors like this call's (the output a stand-in of the result's kind), and
    keep it without their data (each call binds its own, `_bound`). `eager` (a reason) runs it eagerly."""
    holder = Tensor(out.name, out.shape, out.format, dtype=out.dtype, casting=out.casting)
    # the plan is built on stand-ins over the operands' data: an algorithm of the library gives the tensors it
    # runs on its formats, which must not change the user's tensors (`_bound` lays each call's out so)
    stand: dict[int, Tensor] = {}
    tensors = [stand.setdefault(id(t), _alias(t.name, t)) for t in tensors]  # the same tensor twice: one stand-in
    stmt = check_statement(_statement(call, tensors, holder))
    holder.record(stmt)
    if eager:
        sched = replace(holder.schedule(), eager=eager)
    else:
        sched = kernels.auto_schedule(holder.schedule(), machine, eager=True, formats=False)
    if notes:
        sched = sched.with_notes(*notes)
    plan = replace(sched.compile(), bindings=Bindings())
    return _Entry(plan, tuple(t.var for t in tensors), holder.var)


def _shape(call: Call) -> tuple[int, ...]:
    ext = {c: n for term, a in zip(call.inputs, call.arrays) for c, n in zip(term, _concrete(a))}
    return tuple(ext[c] for c in call.output)


def _concrete(a: Any) -> tuple[int, ...]:
    return a.concrete_shape() if isinstance(a, Tensor) else tuple(int(n) for n in np.shape(a))


def _prepare(call: Call, machine: Machine | Grid | None, dtype: np.dtype[Any], out: Tensor | None,
             notes: tuple[str, ...] = (), eager: str = "") -> tuple[_Entry, list[Tensor], Tensor]:
    """The call's cached plan (compiled on a miss), its operand tensors and its result tensor (`out`, or a new
    one of `dtype`)."""
    tensors, taken = _operands(call.arrays, out)
    if out is not None:
        result = out
    else:
        result = Tensor(_fresh("R", taken), _shape(call), dtype=dtype)
    m = resolve_machine(machine)
    operands = tuple((t.concrete_shape(), t.dtype.str, t.format, _location(t)) for t in tensors)
    key = (call.spec, _eager_allowed(), operands, (result.dtype.str, result.format, result.casting), m, eager)
    entry = _CACHE.get(key)
    if entry is None:
        _STATS["misses"] += 1
        entry = _build(call, tensors, result, m, notes, eager)
        _CACHE[key] = entry
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _STATS["hits"] += 1
        _CACHE.move_to_end(key)
    return entry, tensors, result


def _bound(entry: _Entry, tensors: Sequence[Tensor], result: Tensor) -> Plan:
    """The cached plan with its vars bound to this call's tensors (each read through a stand-in in the
    format the plan gave its var, where that is not the tensor's own: the run lays its data out so)."""
    pairs: list[tuple[TensorVar, Tensor]] = []
    for var, t in zip(entry.inputs, tensors):
        if t.format != var.format:
            t = _alias(t.name, t)
            t.set_format(var.format)
        pairs.append((var, t))
    pairs.append((entry.output, result))
    # a new plan object per call: what running it works out is cached by plan (`distal.lower.executable`), so a
    # call's run never shares the record of an earlier call's stores, and every call has a new output anyway
    return replace(entry.plan, bindings=Bindings.pairs(pairs))


# -- orders above Legate's six dimensions ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Folded:
    """A call with letters that travel together folded into one (`groups`: each new letter's letters), and
    the shape its output unfolds to; `eager`: why it runs eagerly (still over six dimensions), else ""."""

    call: Call
    shape: tuple[int, ...]
    notes: tuple[str, ...]
    eager: str


def _fold(call: Call) -> _Folded | None:
    """None when every operand and the output have at most six dimensions; else the call with each run of
    letters that appear together, in the same order and next to each other, in every operand and the output
    that has any of them folded into one letter (operands reshaped), and, if that is still too many, a
    reason to run eagerly in this process."""
    terms = [*call.inputs, call.output]
    if max(len(t) for t in terms) <= _MAX_DIMS:
        return None
    repeated = {c for t in terms for c in t if t.count(c) > 1}
    groups = [[c for c in t] for t in terms]

    def together(x: str, y: str) -> bool:
        for g in groups:
            if (x in g) != (y in g) or (x in g and g.index(y) != g.index(x) + 1):
                return False
        return True

    merged = True
    while merged and max(len(g) for g in groups) > _MAX_DIMS:
        merged = False
        for g in groups:
            for x, y in itertools.pairwise(g):
                if not set(x + y) & repeated and together(x, y):
                    for h in groups:
                        if x in h:
                            k = h.index(x)
                            h[k:k + 2] = [x + y]
                    merged = True
                    break
            if merged:
                break
    folded = {grp for g in groups for grp in g if len(grp) > 1}
    ext = {c: n for term, a in zip(call.inputs, call.arrays) for c, n in zip(term, _concrete(a))}
    shape = tuple(ext[c] for c in call.output)
    arrays = []
    for term, g, a in zip(call.inputs, groups, call.arrays):
        want = tuple(math.prod(ext[c] for c in grp) for grp in g)
        if len(g) == len(term):
            arrays.append(a)
        elif isinstance(a, Tensor):
            arrays.append(np.asarray(a).reshape(want))  # read from wherever it is, then viewed folded
        else:
            arrays.append(a.reshape(want))
    inputs = tuple("".join(grp[0] for grp in g) for g in groups[:-1])
    output = "".join(grp[0] for grp in groups[-1])
    notes = tuple(f"einsum: subscripts {grp} folded into one dimension ({grp[0]}): Legate stores have at most "
                  f"{_MAX_DIMS}" for grp in sorted(folded))
    left = max(len(t) for t in (*inputs, output))
    eager = "" if left <= _MAX_DIMS else (
        f"an operand or the output has {left} dimensions after folding the subscripts that travel together, more "
        f"than the {_MAX_DIMS} of a Legate store")
    if eager:  # the eager run reads the operands as they were, on the host
        return _Folded(replace(call, arrays=tuple(np.asarray(a) if isinstance(a, Tensor) and a.on_legate else a
                                                  for a in call.arrays)), shape, (), eager)
    return _Folded(Call(inputs, output, tuple(arrays), call.given), shape, notes, "")


# -- processors --------------------------------------------------------------------------------------------


def _on_this_host(machine: Machine | Grid | None) -> Machine | Grid | None:
    """`machine`, or, when its processors are of a kind the running Legate has none of (GPUs asked on a host
    without them), the same machine of CPUs, with a `DistalFallbackWarning`: auto then plans, times and
    explains the run that happens (README: such a run goes to the CPUs with a warning)."""
    if machine is None:
        return None
    m = resolve_machine(machine)
    if m.kind == "cpu":
        return machine
    import distal.runtime as rt  # a machine of GPUs runs on Legate: ask it what it has

    if rt.processor_count(m.kind) > 0:
        return machine
    warnings.warn(f"dt.einsum: the machine's processors are {m.kind}s, but Legate runs no {m.kind} here (start it "
                  f"with --{m.kind}s N, or LEGATE_CONFIG); it plans and runs on the CPUs", DistalFallbackWarning,
                  stacklevel=4)
    return Machine(*(Grid(*g.sizes, names=g.names, kind="cpu") for g in m.grids))


# -- memory -------------------------------------------------------------------------------------------------


_PENDING = {"calls": 0, "bytes": 0}


def _settle(nbytes: int) -> None:
    """After a call that ran on Legate: every `_SETTLE_CALLS` such calls, or once they staged `_SETTLE_BYTES`,
    wait for the queued work so that Legate frees what earlier calls dropped (their operands' copies, results
    nobody holds). Legate frees a dropped store only at a fence, and a loop of calls whose results are never
    read reaches none: its memory grew by 3-4 times the bytes it staged per call until Legate's mapper aborted
    the process (issue 33)."""
    _PENDING["calls"] += 1
    _PENDING["bytes"] += nbytes
    if _PENDING["calls"] >= _SETTLE_CALLS or _PENDING["bytes"] >= _SETTLE_BYTES:
        import distal.runtime as rt  # a run on Legate started it

        rt.fence()
        _PENDING["calls"] = _PENDING["bytes"] = 0


# -- running --------------------------------------------------------------------------------------------


def _computing(call: Call, opts: Options, out: Any) -> tuple[Call, np.dtype[Any]]:
    """The call with its operands checked (and, for `dtype=`, converted) for the dtype it computes in, and
    that dtype, as NumPy's einsum has them: `dtype=`, else the promotion of the operands and `out`; a single
    operand with nothing summed and no `out` is NumPy's view of it (its own dtype, no cast checked)."""
    if len(call.arrays) == 1 and out is None and set(call.inputs[0]) <= set(call.output):
        return call, canonical(np.dtype(call.arrays[0].dtype))
    if opts.dtype is not None:
        dtype = opts.dtype
    else:
        dtype = canonical(np.result_type(*(np.dtype(a.dtype) for a in call.arrays),
                                         *(() if out is None else (np.dtype(out.dtype),))))
    return cast_call(call, dtype, opts.casting, opts.dtype is not None), dtype


def _run_one(call: Call, machine: Machine | Grid | None, dtype: np.dtype[Any], into: Tensor | None) -> Tensor:
    """One statement's result (into `into` when given: a tensor of the result's shape and a dtype the
    statement casts into by its own rule)."""
    fold = _fold(call)
    if fold is not None:
        inner = _run_one_plan(fold.call, machine, dtype, into if fold.shape == _shape(fold.call) else None,
                              fold.notes, fold.eager)
        if inner.concrete_shape() == fold.shape:
            return inner
        result = Tensor("R", fold.shape, dtype=inner.dtype)
        result.bind(HostStorage(inner.to_numpy().reshape(fold.shape)))  # over six dimensions: on the host
        if into is not None:
            into.set_array(result.to_numpy())
            return into
        return result
    return _run_one_plan(call, machine, dtype, into)


def _run_one_plan(call: Call, machine: Machine | Grid | None, dtype: np.dtype[Any], into: Tensor | None,
                  notes: tuple[str, ...] = (), eager: str = "") -> Tensor:
    hosts = [_on_host(a) for a in call.arrays] if into is None and not eager and _eager_allowed() else [None]
    key = _eager_key(call, dtype, resolve_machine(machine), hosts)
    fast = _EAGER.get(key) if key is not None else None
    if fast is not None:  # an eager plan of a product on host data: its contraction, straight on the arrays
        _STATS["hits"] += 1
        return _eager_result(None, fast.shape, fast.dtype, [h[0] for h in hosts if h is not None], call.spec)
    entry, tensors, result = _prepare(call, machine, dtype, into, notes, eager)
    if result.format != entry.output.format:  # the plan's algorithm gave its output a format
        if into is None:
            result.set_format(entry.output.format)
        else:  # the user's out= is written from a result in that format
            result = Tensor(_fresh("R", {t.name for t in tensors} | {into.name}), into.concrete_shape(),
                            entry.output.format, dtype=into.dtype)
    mine = result is not into
    if mine and entry.spare is not None and (entry.last is None or entry.last() is None):
        result.bind(entry.spare)  # the last result is gone: its store takes this one
    staged = sum(math.prod(t.concrete_shape()) * t.dtype.itemsize for t in tensors if not t.on_legate)
    plan = _bound(entry, tensors, result)
    plan.run()
    if result.on_legate:
        _settle(staged + math.prod(result.concrete_shape()) * result.dtype.itemsize)
        if mine:
            entry.spare, entry.last = result.storage, weakref.ref(result)
    if key is not None and plan.eager:  # an einsum is a product: its task body runs one contraction
        _EAGER[key] = _Eager(result.dtype, result.concrete_shape())
        while len(_EAGER) > CACHE_SIZE:
            _EAGER.popitem(last=False)
    if into is not None and result is not into:
        into.set_array(result.to_numpy())
        return into
    return result


def _eager_key(call: Call, dtype: np.dtype[Any], machine: Machine, hosts: Sequence[Any] | None = None) -> Any:
    """The key of a call in `_EAGER`: subscripts, each operand's `_on_host` key, the computing dtype and the
    machine (None where an operand is not in host memory)."""
    found = [_on_host(a) for a in call.arrays] if hosts is None else hosts
    if not all(h is not None for h in found):
        return None
    return call.spec, tuple(h[1] for h in found if h is not None), dtype.str, machine


def _by_path(call: Call, path: Any, machine: Machine | Grid | None, dtype: np.dtype[Any]) -> Tensor:
    """The call as pairwise statements in the order `path` gives (opt_einsum's contraction list), each run
    as its own statement; intermediate results stay where their statement left them."""
    import opt_einsum  # type: ignore[import-untyped]  # (imported when a path is asked for)

    shapes = [_concrete(a) for a in call.arrays]
    try:
        _, info = opt_einsum.contract_path(call.spec, *shapes, shapes=True, optimize=path)
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise NotationError(f"expected optimize= a path over the {len(shapes)} operand(s) of "
                            f"{','.join(call.given) or call.spec}, but found {path!r}: {exc}") from None
    live: list[Any] = list(call.arrays)
    result: Tensor | None = None
    for inds, _, text, _, _ in info.contraction_list:
        picked = [live.pop(x) for x in inds]
        lhs, output = text.split("->")
        step = Call(tuple(lhs.split(",")), output, tuple(picked))
        result = _run_one(step, machine, dtype, None)
        live.append(result)
    assert result is not None and len(live) == 1
    return result


def _path(call: Call, opts: Options) -> Any:
    """The pairwise order `optimize=` asks for (None: distal's own, in one statement)."""
    if opts.optimize is False or len(call.arrays) < 3:
        return None
    if isinstance(opts.optimize, tuple):
        n = len(call.arrays)
        for step in opts.optimize:
            if len(set(step)) != len(step) or any(not 0 <= i < n for i in step) or len(step) < 1:
                raise NotationError(f"expected each step of optimize='s path to name distinct operands among the "
                                    f"{n} left, but found {step} in {opts.optimize}")
            n -= len(step) - 1
        return [tuple(s) for s in opts.optimize]
    return opts.optimize


def _check_out(out: Any, dtype: np.dtype[Any], casting: Any, call: Call, both: bool = False) -> None:
    """`out=` as NumPy checks it: an array of the result's shape, writeable, of a dtype the result casts into
    by `casting` (`both`, with `dtype=`: and castable into that dtype too, as NumPy's iterator asks)."""
    if out is None:
        return
    if not isinstance(out, Tensor | np.ndarray):
        raise DtypeError(f"expected out= a dt.Tensor or a NumPy array, but found {type(out).__name__} (NumPy "
                         f"refuses it too)")
    have = out.concrete_shape() if isinstance(out, Tensor) else out.shape
    shape = _shape(call)
    if tuple(have) != shape:
        raise NotationError(f"expected out of shape {shape} for {call.text or call.spec}, but found {tuple(have)} "
                            f"(NumPy refuses it too)")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise NotationError("expected out= a writeable array, but found a read-only one (NumPy refuses it too)")
    if both and not np.can_cast(out.dtype, dtype, casting):
        raise DtypeError(f"expected out= of a dtype that casts into dtype= {dtype} by the rule {casting!r}, as NumPy "
                         f"asks, but found {out.dtype} (NumPy refuses it too)")
    if not np.can_cast(dtype, out.dtype, casting):
        raise DtypeError(f"expected out= of a dtype the result's {dtype} casts into by the rule {casting!r}, but "
                         f"found {out.dtype} (NumPy refuses it too; pass casting='unsafe' or a wider out)")


def einsum_plan(subscripts: Any, *operands: Any, machine: Machine | Grid | None = None, out: Any = None,
                dtype: Any = None, casting: str = "safe", order: str = "K") -> Plan:
    """The plan `einsum` would run for these operands (compiled once, cached), bound to them: print it,
    `explain()` it, or `run()` it (its output is a new tensor, `plan.tensor(plan.output)`). A call over more
    than six dimensions gives the plan of its folded statement (explain() says so)."""
    with legate_section():  # one thread at a time: the caches are shared, and auto may start Legate
        return _einsum_plan(subscripts, operands, machine, out, dtype, casting, order)


def _einsum_plan(subscripts: Any, operands: Sequence[Any], machine: Machine | Grid | None, out: Any, dtype: Any,
                 casting: str, order: str) -> Plan:
    opts = read_options(dtype, order, casting, False)
    machine = _on_this_host(machine)
    call, rdtype = _computing(read_call(subscripts, operands), opts, out)
    _check_out(out, rdtype, opts.casting, call, both=opts.dtype is not None)
    fold = _fold(call)
    notes: tuple[str, ...] = ()
    eager = ""
    if fold is not None:
        call, notes, eager = fold.call, fold.notes, fold.eager
    target = out if isinstance(out, Tensor) and fold is None and out.dtype == rdtype else None
    entry, tensors, result = _prepare(call, machine, rdtype, target, notes, eager)
    if result.format != entry.output.format:
        result = Tensor(result.name, result.concrete_shape(), entry.output.format, dtype=result.dtype)
    return _bound(entry, tensors, result)


def einsum(subscripts: Any, *operands: Any, out: Any = None, dtype: Any = None, order: str = "K",
           casting: str = "safe", optimize: Any = False, machine: Machine | Grid | None = None) -> Any:
    """NumPy's einsum over NumPy arrays, cuPyNumeric arrays or dt.Tensors, scheduled by `Schedule.auto`.

    Takes `numpy.einsum`'s keywords (`out`, `dtype`, `order`, `casting`, `optimize`) with their meaning, and
    `machine`. Returns a new `dt.Tensor` of NumPy's result dtype; with `out` (a `dt.Tensor` or a NumPy array
    of the result's shape, of a dtype the result casts into by `casting`), the result is written there and
    `out` returned. See the module docstring.

    >>> import numpy as np
    >>> import distal as dt
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> np.allclose(dt.einsum("ij,kj->ik", a, a).to_numpy(), a @ a.T)
    True
    """
    with legate_section():  # one thread at a time: the caches are shared, and a run may use Legate
        plain = out is None and dtype is None and order == "K" and casting == "safe" and optimize is False \
            and machine is None
        key = _quick_key(subscripts, operands) if plain else None
        found = _quick(key, operands) if key is not None else None
        if found is not None:
            return found
        return _einsum(subscripts, operands, out, dtype, order, casting, optimize, machine, key)


def _einsum(subscripts: Any, operands: Sequence[Any], out: Any, dtype: Any, order: str, casting: str,
            optimize: Any, machine: Machine | Grid | None, quick: Any = None) -> Any:
    opts = read_options(dtype, order, casting, optimize)
    machine = _on_this_host(machine)
    if out is not None and not isinstance(out, Tensor | np.ndarray):
        raise DtypeError(f"expected out= a dt.Tensor or a NumPy array, but found {type(out).__name__} (NumPy "
                         f"refuses it too)")
    call, compute = _computing(read_call(subscripts, operands, opts.optimize is not False), opts, out)
    # NumPy's pairwise path (optimize= other than False) writes its last step into out= by its ufuncs' rule
    paired = opts.optimize is not False and len(call.arrays) > 1
    rule = ("unsafe" if opts.casting == "unsafe" else "same_kind") if paired else opts.casting
    _check_out(out, compute, rule, call, both=opts.dtype is not None and not paired)
    path = _path(call, opts)
    into = out if (isinstance(out, Tensor) and path is None and out.dtype == compute
                   and not any(a is out for a in call.arrays) and out.name not in _names(call.arrays)) else None
    if path is not None:
        result = _by_path(call, path, machine, compute)
    else:
        result = _run_one(call, machine, compute, into)
        if quick is not None:  # a plain call of NumPy arrays (`_quick_key`): kept where it ran eagerly on them
            _remember(quick, operands, call, compute)
    if out is None or into is not None:
        return result
    value = result.to_numpy()
    if isinstance(out, np.ndarray):
        np.copyto(out, value, casting="unsafe")  # the rule was checked above (`_check_out`)
    else:
        out.set_array(value.astype(out.dtype, copy=False))
    return out


def _names(arrays: Sequence[Any]) -> set[str]:
    return {a.name for a in arrays if isinstance(a, Tensor)}
