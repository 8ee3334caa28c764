"""Hypothesis strategies and the `numpy.einsum` oracle for distal's tests.

`statements()` draws random index notation statements with data;
`schedules(sched)` applies random scheduling commands, keeping those that
are legal; `einsum_oracle` computes what a statement means, term by term with
`numpy.einsum`, independently of the compiler.

They live under tests/ (imported as `tests._strategies`), not in the distal
package, because Hypothesis is a test-only dependency: nothing shipped
imports it (tests/lower/test_shipped_imports.py checks).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import distal as dt
from distal.cin.relations import Substitute
from distal.cin.statements import Assign, assignments
from distal.errors import NotSupportedYet, ScheduleError
from distal.notation.ast import FUNCTIONS, Access, Add, Assignment, Call, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum
from distal.notation.check import extents
from distal.notation.sums import to_reduction_notation
from distal.notation.variable import TensorVar
from distal.schedule import tree
from distal.sizes import resolve

__all__ = ["COMMANDS", "Drawn", "einsum_oracle", "schedules", "statements"]

_VAR_NAMES = "ijklm"


@dataclass
class Drawn:
    """A random statement: its assignment, the initial output data and the inputs."""

    assignment: Assignment
    output_init: np.ndarray
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    output: dt.Tensor = field(default=None)  # type: ignore[assignment]  # the user tensor the statement computes

    def reset(self) -> None:
        """Put the initial data back into the output tensor."""
        self.output.set_array(self.output_init)


@st.composite
def statements(
    draw: st.DrawFn,
    min_operands: int = 2,
    max_operands: int = 4,
    max_order: int = 4,
    max_extent: int = 13,
    literals: bool = True,
    functions: bool = True,
) -> Drawn:
    """A random statement over 2-4 operands of order <= 4 with + and *; with `functions`, now and then an
    operand or a subexpression inside abs, conj, sqrt(abs(...)) or exp."""
    nvars = draw(st.integers(1, len(_VAR_NAMES)))
    vars_ = [IndexVar(n) for n in _VAR_NAMES[:nvars]]
    ext = {v: draw(st.integers(1, max_extent)) for v in vars_}
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    nops = draw(st.integers(min_operands, max_operands))
    exprs: list[Expr] = []
    inputs: dict[str, np.ndarray] = {}
    for n in range(nops):
        order = draw(st.integers(0, min(max_order, nvars)))
        idx = draw(st.permutations(vars_))[:order]
        name = string.ascii_uppercase[1 + n]
        data = rng.standard_normal(tuple(ext[v] for v in idx))
        t = dt.Tensor.from_array(name, data)
        inputs[name] = data
        e: Expr = t[tuple(idx)] if idx else t[()]
        if literals and draw(st.integers(0, 9)) == 0:
            e = Mul(Literal(2), e) if draw(st.booleans()) else Add(e, Literal(1.5))
        if functions and draw(st.integers(0, 19)) == 0:
            e = _function(draw, e)
        exprs.append(e)
    while len(exprs) > 1:
        at = draw(st.integers(0, len(exprs) - 2))
        op = draw(st.sampled_from([Add, Mul, Mul]))
        combined: Expr = op(exprs[at], exprs[at + 1])
        if functions and draw(st.integers(0, 24)) == 0:
            combined = _function(draw, combined)
        exprs[at : at + 2] = [combined]
    out_order = draw(st.integers(0, min(max_order, nvars)))
    out_idx = tuple(draw(st.permutations(vars_))[:out_order])
    out = dt.Tensor("A", tuple(ext[v] for v in out_idx))
    accumulate = draw(st.booleans())
    shape = out.concrete_shape()
    init = rng.standard_normal(shape) if accumulate else np.zeros(shape)
    out.set_array(init)
    lhs = out[out_idx] if out_idx else out[()]
    if accumulate:
        out[out_idx] = Access.__iadd__(lhs, exprs[0])
    else:
        out[out_idx] = exprs[0]
    assert out.assignment is not None
    return Drawn(out.assignment, init, inputs, out)


def _function(draw: st.DrawFn, e: Expr) -> Expr:
    """`e` inside a unary function; sqrt takes the absolute value first (real data stays real)."""
    name = draw(st.sampled_from(sorted(FUNCTIONS)))
    return Call("sqrt", Call("abs", e)) if name == "sqrt" else Call(name, e)


Term = tuple[float, list[Access], frozenset[IndexVar]]


def _terms(e: Expr, call: Callable[[Call], Access] | None = None) -> list[Term]:
    """Expand a reduction-notation expression into products.

    Each term is (coefficient, factors, summed variables): the term is summed
    over its summed variables, whether or not its factors mention them. A
    function call is one factor: `call` computes it into an array and returns
    an access of it.
    """
    if isinstance(e, Access):
        return [(1.0, [e], frozenset())]
    if isinstance(e, Literal):
        return [(float(e.value), [], frozenset())]
    if isinstance(e, Neg):
        return [(-c, f, b) for c, f, b in _terms(e.operand, call)]
    if isinstance(e, Add):
        return _terms(e.a, call) + _terms(e.b, call)
    if isinstance(e, Sub):
        return _terms(e.a, call) + [(-c, f, b) for c, f, b in _terms(e.b, call)]
    if isinstance(e, Mul):
        return [(ca * cb, fa + fb, ba | bb) for ca, fa, ba in _terms(e.a, call) for cb, fb, bb in _terms(e.b, call)]
    if isinstance(e, Sum):
        return [(c, f, b | {e.var}) for c, f, b in _terms(e.body, call)]
    if isinstance(e, Call) and call is not None:
        return [(1.0, [call(e)], frozenset())]
    raise NotImplementedError(f"the oracle handles + - *, sums and functions, not {type(e).__name__}")


def _free_vars(e: Expr) -> tuple[IndexVar, ...]:
    """The variables of `e` outside the sums that bind them, by first appearance."""
    if isinstance(e, Access):
        return e.indices
    if isinstance(e, Sum):
        return tuple(v for v in _free_vars(e.body) if v != e.var)
    return tuple(dict.fromkeys(v for c in e.children() for v in _free_vars(c)))


def einsum_oracle(stmt: Assignment, arrays: dict[str, np.ndarray], init: np.ndarray) -> np.ndarray:
    """What `stmt` computes, as a sum of `numpy.einsum` products.

    Summation follows Einstein's convention: a variable only on the right is
    summed over the whole product that holds it, and each additive term is a
    scope of its own (`to_reduction_notation` places the sums). The products
    are expanded and each is computed by `numpy.einsum`; a product summed over
    a variable it does not mention is multiplied by that variable's extent.
    Output variables a product does not mention broadcast.
    """
    lhs = stmt.lhs
    shape = lhs.tensor.concrete_shape()
    result = init.astype(np.float64).copy() if stmt.accumulate else np.zeros(shape)
    ext = {v: resolve(s) for v, s in extents(stmt).items()}
    letters: dict[IndexVar, str] = {}
    for v in stmt.index_vars():
        letters[v] = string.ascii_letters[len(letters)]
    arrays = dict(arrays)

    def add_terms(result: np.ndarray, e: Expr, out: tuple[IndexVar, ...]) -> np.ndarray:
        """`result` (over `out`) plus the terms of `e`, one `numpy.einsum` each."""
        for coef, factors, summed in _terms(e, call):
            mentioned = {v for a in factors for v in a.indices}
            scale = coef * float(np.prod([ext[v] for v in summed - mentioned]))
            if not factors:
                result = result + scale
                continue
            present = [v for v in out if v in mentioned]
            spec = ",".join("".join(letters[v] for v in a.indices) for a in factors)
            spec += "->" + "".join(letters[v] for v in present)
            term = np.einsum(spec, *(arrays[a.tensor.name] for a in factors)) * scale
            expand = tuple(slice(None) if v in present else np.newaxis for v in out)
            result = result + np.broadcast_to(term[expand] if expand else term, result.shape)
        return result

    def call(c: Call) -> Access:
        """The function of `c` on its operand's value over its free variables, as an access of a new array."""
        over = _free_vars(c.operand)
        value = getattr(np, FUNCTIONS[c.func])(add_terms(np.zeros([ext[v] for v in over]), c.operand, over))
        name = f"call{len(arrays)}"
        arrays[name] = value
        return Access(TensorVar(name, value.shape, value.dtype), over)

    return add_terms(result, to_reduction_notation(stmt).rhs, lhs.indices)


# -- random schedules ----------------------------------------------------------

Command = Callable[[st.DrawFn, dt.Schedule, "_Names"], dt.Schedule]


class Fresh:
    """New index variables: prefix1, prefix2, ... (every generator's source of derived variables)."""

    def __init__(self, prefix: str = "v") -> None:
        self.prefix, self.n = prefix, 0

    def __call__(self) -> IndexVar:
        self.n += 1
        return IndexVar(f"{self.prefix}{self.n}")


class _Names:
    def __init__(self) -> None:
        self.fresh = Fresh()
        self.bindings: dict[str, int] = {}


def _loop(draw: st.DrawFn, s: dt.Schedule) -> IndexVar:
    loops = s.loop_vars()
    if not loops:
        raise ScheduleError("no loops")
    return draw(st.sampled_from(loops))


def _size(draw: st.DrawFn, names: _Names) -> Any:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        p = f"p{len(names.bindings)}"
        names.bindings[p] = draw(st.integers(1, 4))
        return dt.Param(p)
    if kind == 1:
        return dt.Machine(dt.Grid(draw(st.integers(1, 3)), 2)).x
    return draw(st.integers(1, 5))


def _divide(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    return s.divide(_loop(draw, s), n.fresh(), n.fresh(), _size(draw, n))


def _split(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    return s.split(_loop(draw, s), n.fresh(), n.fresh(), _size(draw, n))


def _reorder(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    v = _loop(draw, s)
    path = tree.forall_path(s.stmt, v)
    assert path is not None
    _, chain, _ = tree.chain_at(s.stmt, path)
    k = draw(st.integers(1, len(chain)))
    return s.reorder(draw(st.permutations(chain))[:k])


def _fuse(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    v = _loop(draw, s)
    path = tree.forall_path(s.stmt, v)
    assert path is not None
    body = tree.node_at(s.stmt, path).children()[0]
    inner = getattr(body, "var", v)
    return s.fuse(v, inner, n.fresh())


def _parallelize(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    return s.parallelize(_loop(draw, s), draw(st.sampled_from(dt.schedule.PARALLEL_UNITS)))


def _subexpressions(e: Expr) -> list[Expr]:
    out = [e]
    for c in e.children():
        out += _subexpressions(c)
    return out


def _precompute(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    assign = next(iter(assignments(s.stmt)))
    expr = draw(st.sampled_from(_subexpressions(assign.rhs)))
    apath = tree.find(s.stmt, lambda x: x is assign)
    assert apath is not None
    enclosing = [
        node.var for k in range(len(apath)) if hasattr(node := tree.node_at(s.stmt, apath[:k]), "var")
    ]
    if not enclosing:
        raise ScheduleError("no loops")
    k = draw(st.integers(1, len(enclosing)))
    vs = enclosing[len(enclosing) - k :]
    return s.precompute(expr, vs, [n.fresh() for _ in vs])


def _distribute(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    if not s.loop_vars():
        raise ScheduleError("no loops")
    if draw(st.booleans()):
        loops = list(s.loop_vars())
        k = draw(st.integers(1, max(1, min(2, len(loops)))))
        return s.distribute(draw(st.permutations(loops))[:k])
    loops = list(s.loop_vars())
    k = draw(st.integers(1, max(1, min(3, len(loops)))))
    targets = draw(st.permutations(loops))[:k]
    grid = dt.Grid(*(draw(st.integers(1, 3)) for _ in targets))
    return s.distribute(targets, [n.fresh() for _ in targets], [n.fresh() for _ in targets], grid)


def _communicate(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    return s.communicate(draw(st.sampled_from(s.tensors())), _loop(draw, s))


def _rotate(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    t = _loop(draw, s)
    path = tree.forall_path(s.stmt, t)
    assert path is not None
    around = [
        node.var for k in range(len(path)) if hasattr(node := tree.node_at(s.stmt, path[:k]), "var")
    ]
    if not around:
        raise ScheduleError("nothing to rotate by")
    k = draw(st.integers(1, len(around)))
    return s.rotate(t, draw(st.permutations(around))[:k], n.fresh())


def _substitute(draw: st.DrawFn, s: dt.Schedule, n: _Names) -> dt.Schedule:
    v = _loop(draw, s)
    path = tree.forall_path(s.stmt, v)
    assert path is not None
    _, chain, body = tree.chain_at(s.stmt, path)
    if not isinstance(body, Assign) or any(isinstance(r, Substitute) for r in s.relations):
        raise ScheduleError("no leaf here")
    k = draw(st.integers(1, len(chain)))
    return s.substitute(chain[len(chain) - k :], dt.leaf.GENERIC)


COMMANDS: dict[str, Command] = {
    "divide": _divide,
    "split": _split,
    "reorder": _reorder,
    "fuse": _fuse,
    "parallelize": _parallelize,
    "precompute": _precompute,
    "distribute": _distribute,
    "communicate": _communicate,
    "rotate": _rotate,
    "substitute": _substitute,
}


@st.composite
def schedules(
    draw: st.DrawFn, sched: dt.Schedule, max_steps: int = 8
) -> tuple[dt.Schedule, dict[str, int], list[str]]:
    """Random legal schedules of `sched`: (schedule, parameter bindings, commands applied)."""
    names = _Names()
    applied: list[str] = []
    for _ in range(draw(st.integers(2, max_steps + 2))):
        name = draw(st.sampled_from(sorted(COMMANDS)))
        bound = dict(names.bindings)
        try:
            sched = COMMANDS[name](draw, sched, names)
        except (ScheduleError, NotSupportedYet):
            names.bindings = bound  # a parameter drawn for a refused command is not the schedule's
            continue
        applied.append(name)
    return sched, names.bindings, applied
