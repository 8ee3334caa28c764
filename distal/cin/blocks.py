"""One block of loops at once, as index arrays: what the reference executor and task bodies share.

A block's points come from `Provenance.block_points`: the value of every
determined index variable, as host (NumPy) arrays over the points or as
integers. `run_index_block` evaluates an assignment's right side at every
point by gathering its accesses with those arrays (a sum inside the
expression becomes one more broadcast axis) and writes or adds the values
into the left side's array; points that hit one element add up.

Arrays are found through `lookup(tensor) -> (array, origin)`: `origin` is
the global coordinate of the array's first element (a task's tile), and is
subtracted from the indices. `xp` is the arrays' namespace (NumPy, or CuPy
for a GPU task's tiles); index arrays are computed on the host and moved to
`xp` where they index an array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from distal.cin.statements import Assign
from distal.errors import RuntimeFailure
from distal.notation.ast import FUNCTIONS, Access, Add, BinaryOp, Call, Div, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum
from distal.notation.check import compute_dtype, operand_dtype
from distal.notation.variable import TensorVar
from distal.notation.visit import ExprVisitor

__all__ = ["Lookup", "add", "apply", "evaluate_points", "operand", "run_index_block", "store"]

Lookup = Callable[[TensorVar], tuple[Any, tuple[int, ...]]]


def run_index_block(a: Assign, vals: Mapping[IndexVar, Any], npts: int, lookup: Lookup,
                    ext: Mapping[IndexVar, int], xp: Any = np) -> None:
    """Assign (or add, for `+=`) `a`'s right side at the block's `npts` points into its left side.

    A scalar left side written with `=` by several points keeps the last
    point's value, as the sequential loops would.
    """
    dtype = compute_dtype(a.lhs, a.rhs)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        value = xp.asarray(evaluate_points(a.rhs, vals, [], lookup, ext, xp, dtype))
    out, origin = lookup(a.lhs.tensor)
    value = _real_for(out, value, xp)
    idx = tuple(_device(xp, np.broadcast_to(np.asarray(_value_of(vals, v)) - o, (npts,)))
                for v, o in zip(a.lhs.indices, origin))
    value = xp.broadcast_to(value.reshape(-1) if value.ndim else value, (npts,))
    if not idx:
        if a.accumulate:
            add(out, _sum(value, None, xp), xp)
        else:
            out[()] = value[-1]
    elif not a.accumulate:
        out[idx] = value
    elif xp is np and out.dtype.kind == "f" and value.dtype.kind == "f" and out.flags.c_contiguous:
        flat = np.ravel_multi_index(idx, out.shape)  # bincount: much faster than add.at
        add(out.reshape(-1), np.bincount(flat, weights=value, minlength=out.size), xp)
    elif value.dtype.kind != out.dtype.kind:  # casting="unsafe": add in the promoted dtype, then cast once
        acc = out.astype(np.result_type(out.dtype, value.dtype))
        xp.add.at(acc, idx, value)
        out[...] = acc
    else:  # same kind (the casting rule was checked when the statement was built): wrapping sums agree
        xp.add.at(out, idx, value.astype(out.dtype))


def store(out: Any, value: Any, accumulate: bool, xp: Any = np) -> None:
    """Write (or add, for `+=`) `value` into the array view `out`, cast to its dtype.

    The statement's casting rule was checked when it was built, so the cast
    is unchecked here (a `casting="unsafe"` output truncates as NumPy's
    astype does; a complex value into a real output keeps its real part, as
    astype does, without NumPy's warning: a real right side computed in a
    complex dtype, `abs(X(i)) * B(i)`, has zero imaginary parts).
    """
    value = _real_for(out, value, xp)
    if accumulate:
        add(out, value, xp)
    else:
        out[...] = value


def add(out: Any, value: Any, xp: Any = np) -> None:
    """`out += value` computed in the promotion of both dtypes, then cast into `out` (NumPy's `+=`)."""
    value = _real_for(out, value, xp)
    if xp is np:
        np.add(out, value, out=out, casting="unsafe")
    elif value.dtype == out.dtype:
        out += value
    else:
        out[...] = out + value


def _real_for(out: Any, value: Any, xp: Any) -> Any:
    """`value`'s real part when it is complex and `out` (an array or a dtype) is not: what a cast keeps."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind == "c" and getattr(out, "dtype", out).kind != "c":
        return xp.real(value)
    return value


def apply(xp: Any, e: Call, value: Any) -> Any:
    """The function of `e` on its operand's `value` (computed in the statement's dtype): the value cast to the
    operand's own dtype first (`operand_dtype`), then NumPy's (or CuPy's) ufunc of that name."""
    dtype = operand_dtype(e)
    value = _real_for(dtype, xp.asarray(value), xp)  # a real operand in a complex statement: zero imaginary parts
    if value.dtype != dtype:
        value = value.astype(dtype)
    return getattr(xp, FUNCTIONS[e.func])(value)


def _sum(x: Any, axis: int | None, xp: Any) -> Any:
    """`x` summed in its own dtype, as einsum sums (NumPy's `sum` widens small integers)."""
    return x.sum(axis=axis, dtype=x.dtype) if xp is np else x.sum(axis=axis)


def operand(arr: Any, dtype: Any) -> Any:
    """An operand converted to the dtype the statement computes in (no copy when it has it)."""
    return arr if arr.dtype == dtype else arr.astype(dtype)


def evaluate_points(e: Expr, vals: Mapping[IndexVar, Any], scope: list[IndexVar], lookup: Lookup,
                    ext: Mapping[IndexVar, int], xp: Any = np, dtype: Any = None) -> Any:
    """`e` at every point: axis 0 runs over the points, axis 1 + n over `scope[n]` (sums being taken).

    Every operand is converted to `dtype` (the statement's `compute_dtype`) when given. An expression
    node outside `distal.notation.visit.NODES` raises `TypeError` (it is never computed as another operator).
    """
    return _Points(vals, list(scope), lookup, ext, xp, dtype)(e)


class _Points(ExprVisitor[Any]):
    """`evaluate_points` as a strict visitor; `scope` grows by one variable inside each `sum`."""

    def __init__(self, vals: Mapping[IndexVar, Any], scope: list[IndexVar], lookup: Lookup,
                 ext: Mapping[IndexVar, int], xp: Any, dtype: Any) -> None:
        self.vals, self.scope, self.lookup, self.ext, self.xp, self.dtype = vals, scope, lookup, ext, xp, dtype

    @property
    def depth(self) -> int:
        return 1 + len(self.scope)

    def visit_access(self, e: Access) -> Any:
        arr, origin = self.lookup(e.tensor)
        depth, xp = self.depth, self.xp
        idx = []
        for v, o in zip(e.indices, origin):
            if v in self.scope:
                shape = [1] * depth
                shape[1 + self.scope.index(v)] = self.ext[v]
                idx.append(_device(xp, np.arange(self.ext[v]).reshape(shape) - o))
            else:
                x = _value_of(self.vals, v)
                idx.append(_device(xp, x.reshape((-1,) + (1,) * (depth - 1)) - o) if isinstance(x, np.ndarray)
                           else x - o)
        return arr[tuple(idx)] if self.dtype is None else operand(arr[tuple(idx)], self.dtype)

    def visit_literal(self, e: Literal) -> Any:
        return e.value

    def visit_neg(self, e: Neg) -> Any:
        return -self(e.operand)

    def visit_sum(self, e: Sum) -> Any:
        depth, xp = self.depth, self.xp
        self.scope.append(e.var)
        try:
            b = xp.asarray(self(e.body))
        finally:
            self.scope.pop()
        b = b.reshape(b.shape + (1,) * (depth + 1 - b.ndim)) if b.ndim else b.reshape((1,) * (depth + 1))
        b = xp.broadcast_to(b, (*b.shape[:-1], self.ext[e.var]))
        return _sum(b, -1, xp)

    def visit_call(self, e: Call) -> Any:
        return apply(self.xp, e, self(e.operand))

    def _operands(self, e: BinaryOp) -> tuple[Any, Any]:
        return _align(self(e.a), self.depth), _align(self(e.b), self.depth)

    def visit_add(self, e: Add) -> Any:
        x, y = self._operands(e)
        return x + y

    def visit_sub(self, e: Sub) -> Any:
        x, y = self._operands(e)
        return x - y

    def visit_mul(self, e: Mul) -> Any:
        x, y = self._operands(e)
        return x * y

    def visit_div(self, e: Div) -> Any:
        x, y = self._operands(e)
        return x / y


def _value_of(vals: Mapping[IndexVar, Any], v: IndexVar) -> Any:
    if v not in vals:
        raise RuntimeFailure(f"index variable {v} is not determined by the loops around it")
    return vals[v]


def _device(xp: Any, x: Any) -> Any:
    """A host index array in the namespace `xp` (integers pass through)."""
    if xp is np or not isinstance(x, np.ndarray):
        return x
    return xp.asarray(x)


def _align(x: Any, depth: int) -> Any:
    """Give an array value `depth` dimensions (trailing ones) so values broadcast by axis."""
    ndim = getattr(x, "ndim", 0)
    if 0 < ndim < depth:
        return x.reshape(x.shape + (1,) * (depth - ndim))
    return x
