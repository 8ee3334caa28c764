"""Checks that make an assignment a valid tensor index notation statement.

Dtypes follow NumPy, as `numpy.einsum(..., out=output)` does: the right
side's type (`result_dtype`) is NumPy's promotion of its operands and
literals (a sum keeps its body's type, as einsum does; `/` of integers is
float64, as NumPy's true division); the statement computes in the promotion
of that and the output's dtype (`compute_dtype`: every operand is converted
to it first, so sums into a wider integer output do not wrap); and the
result must be castable into the output by the output tensor's `casting`
rule (`same_kind` by default: float into an integer output is refused with a
`DtypeError` naming both dtypes when the statement is built; so is uint64 into
a signed integer output, which NumPy computes in float64). An output made with
`casting="unsafe"` takes such right sides as NumPy's astype does, in
statements without sums only: a sum's partial results would each be cast,
and the result would depend on the schedule.

A unary function (`sqrt(e)`, a `Call`) has the dtype NumPy's ufunc resolves
for `e`'s dtype (`numpy.sqrt` of int8 is float16, `numpy.absolute` of
complex128 is float64). Its operand is evaluated like the rest of the right
side, then cast to the operand's own dtype (`result_dtype(e)`) before the
function applies, so that `sqrt` of a real operand stays real (NaN for a
negative element) in a complex statement. The compute dtype is therefore
also at least every function operand's dtype: `A(i) = abs(X(i))` with a
complex X and a real A converts nothing to real before `abs`; the imaginary
parts of such a statement's real right side are zero, and `store` keeps the
real part.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from distal.errors import DtypeError, NotationError
from distal.notation.ast import (
    FUNCTIONS,
    Access,
    Add,
    Assignment,
    Call,
    Div,
    Expr,
    IndexVar,
    Literal,
    Mul,
    Neg,
    Sub,
    Sum,
)
from distal.notation.visit import ExprVisitor, summed_vars
from distal.sizes import Size

__all__ = ["check_statement", "compute_dtype", "extents", "operand_dtype", "result_dtype"]


def extents(stmt: Assignment) -> dict[IndexVar, Size]:
    """The extent of every index variable, from the shapes of the tensors it indexes.

    Raises `NotationError` when a variable indexes dimensions of two extents.
    """
    found: dict[IndexVar, tuple[Size, Access]] = {}
    for access in (stmt.lhs, *stmt.rhs.accesses()):
        for dim, v in enumerate(access.indices):
            size = access.tensor.shape[dim]
            if v in found and found[v][0] != size:
                size0, access0 = found[v]
                raise NotationError(
                    f"expected index variable {v} to have one extent, but found {size0} "
                    f"in {access0} and {size} in {access}",
                    stmt,
                )
            found.setdefault(v, (size, access))
    return {v: s for v, (s, _) in found.items()}


def check_statement(stmt: Assignment) -> Assignment:
    """Validate an index notation statement; returns it unchanged."""
    out = stmt.lhs.tensor
    if len(set(stmt.lhs.indices)) != len(stmt.lhs.indices):
        raise NotationError(
            f"expected distinct index variables on the left, but found {stmt.lhs}", stmt
        )
    names: dict[str, int] = {}
    for access in (stmt.lhs, *stmt.rhs.accesses()):
        t = access.tensor
        if names.setdefault(t.name, t.uid) != t.uid:
            raise NotationError(
                f"expected one tensor per name, but found two tensors named {t.name}", stmt
            )
        if access is not stmt.lhs and t.uid == out.uid:
            raise NotationError(
                f"expected the output {out.name} only on the left, but found {access} "
                "on the right (use += to accumulate into it)",
                stmt,
            )
    _check_sums(stmt)
    extents(stmt)
    _check_dtypes(stmt)
    return stmt


def result_dtype(e: Expr) -> np.dtype:
    """The dtype NumPy computes `e` in: its operands' and literals' promotion (`DtypeError` if none)."""
    return _result_dtype(_signature(e))


def compute_dtype(lhs: Access, rhs: Expr) -> np.dtype:
    """The dtype `lhs = rhs` computes in: the right side's promoted with the output's (einsum's `out=`) and
    with every function operand's (so that no operand of `abs` is made real before it applies)."""
    return _compute_dtype(lhs.tensor.dtype, _signature(rhs))


def operand_dtype(e: Call) -> np.dtype:
    """The dtype a function's operand is cast to before the function applies: the operand's own (NumPy's)."""
    return _result_dtype(_signature(e.operand))


Signature = tuple[Any, ...]


class _Signature(ExprVisitor[Signature]):
    """`e` with each access replaced by its tensor's dtype and each operator by its ufunc: what its dtype
    depends on (a cache key). Strict: an unknown node raises `TypeError`."""

    def visit_access(self, e: Access) -> Signature:
        return ("access", e.tensor.dtype)

    def visit_literal(self, e: Literal) -> Signature:
        return ("literal", e.value)

    def visit_neg(self, e: Neg) -> Signature:
        return ("neg", self(e.operand))

    def visit_sum(self, e: Sum) -> Signature:
        return ("sum", self(e.body))

    def visit_add(self, e: Add) -> Signature:
        return ("binary", np.add, self(e.a), self(e.b))

    def visit_sub(self, e: Sub) -> Signature:
        return ("binary", np.subtract, self(e.a), self(e.b))

    def visit_mul(self, e: Mul) -> Signature:
        return ("binary", np.multiply, self(e.a), self(e.b))

    def visit_div(self, e: Div) -> Signature:
        return ("binary", np.true_divide, self(e.a), self(e.b))

    def visit_call(self, e: Call) -> Signature:
        return ("call", getattr(np, FUNCTIONS[e.func]), self(e.operand))


_signature = _Signature()


@functools.lru_cache(maxsize=1024)
def _compute_dtype(out: np.dtype, rhs: Signature) -> np.dtype:
    return np.result_type(_result_dtype(rhs), out, *(_result_dtype(s) for s in _call_operands(rhs)))


def _call_operands(sig: Signature) -> list[Signature]:
    """The signatures of every function operand in `sig`, nested ones included."""
    kind = sig[0]
    if kind in ("access", "literal"):
        return []
    if kind == "call":
        return [sig[2], *_call_operands(sig[2])]
    return [s for part in sig[1:] if isinstance(part, tuple) for s in _call_operands(part)]


@functools.lru_cache(maxsize=1024)
def _result_dtype(sig: Signature) -> np.dtype:
    with np.errstate(all="ignore"):
        return np.asarray(_sample(sig)).dtype


def _sample(sig: Signature) -> Any:
    """The expression evaluated on one-element arrays of its operands' dtypes (literals stay Python numbers)."""
    kind = sig[0]
    if kind == "access":
        return np.ones(1, dtype=sig[1])
    if kind == "literal":
        return sig[1]
    if kind == "neg":
        return -_sample(sig[1])
    if kind == "sum":
        return _sample(sig[1])  # einsum's sums keep the type (np.sum would widen small integers)
    if kind == "call":
        try:
            return sig[1](_sample(sig[2]))
        except TypeError as exc:
            raise DtypeError(f"expected an operand NumPy's {sig[1].__name__} takes, but found {exc}") from None
    assert kind == "binary", sig
    ufunc, a, b = sig[1], _sample(sig[2]), _sample(sig[3])
    try:
        return ufunc(a, b)
    except (OverflowError, TypeError) as exc:
        raise DtypeError(f"expected operands NumPy can combine, but found {exc}") from None


def _check_dtypes(stmt: Assignment) -> None:
    out = stmt.lhs.tensor
    try:
        rhs = result_dtype(stmt.rhs)
    except DtypeError as exc:
        raise DtypeError(exc.message, stmt) from None
    casting: Any = getattr(out, "casting", "same_kind")
    computed = np.result_type(rhs, out.dtype)
    if not np.can_cast(computed, out.dtype, casting=casting):
        found = rhs.name if computed == rhs else (
            f"{rhs.name}, computed in {computed.name} with the output's {out.dtype.name} as NumPy promotes them")
        raise DtypeError(
            f"expected a right side castable to {out.dtype.name} (the dtype of {out.name}) under "
            f"casting={casting!r}, but found {found}; give {out.name} a dtype of that kind, or make it "
            f"with casting='unsafe' to truncate as NumPy's astype does",
            stmt,
        )
    if not np.can_cast(computed, out.dtype, casting="same_kind") and _reduces(stmt):
        raise DtypeError(
            f"expected a statement without sums for casting={casting!r} from {computed.name} into "
            f"{out.dtype.name} ({out.name}), but found summed variables; the partial sums would be cast "
            "one by one, so the result would depend on the schedule",
            stmt,
        )


def _check_sums(stmt: Assignment) -> None:
    free = set(stmt.lhs.indices)

    def walk(e: object, bound: frozenset[IndexVar]) -> None:
        if isinstance(e, Sum):
            if e.var in free or e.var in bound:
                raise NotationError(
                    f"expected sum over a variable that is not already bound, but found "
                    f"sum({e.var}, ...)",
                    stmt,
                )
            walk(e.body, bound | {e.var})
        elif hasattr(e, "children"):
            for c in e.children():  # type: ignore[attr-defined]
                walk(c, bound)

    walk(stmt.rhs, frozenset())
    _check_shadowing(stmt)


def _check_shadowing(stmt: Assignment) -> None:
    """Refuse an implicit sum of `v` that would hold an explicit `sum(v, ...)` (`sqrt(sum(j, B(i,j)) + B(i,j))`
    sums the call over j, and the inner sum would rebind the loop's j)."""
    from distal.notation.sums import to_reduction_notation

    def walk(e: Expr, bound: dict[IndexVar, Expr]) -> None:
        if isinstance(e, Sum):
            if e.var in bound:
                raise NotationError(
                    f"expected {e.var} to be summed either implicitly or by sum({e.var}, ...), but found both: "
                    f"the implicit sum over {e.var} of {bound[e.var]} would hold {e}; give the explicit sum "
                    f"another variable",
                    stmt,
                )
            bound = {**bound, e.var: e.body}
        for c in e.children():
            walk(c, bound)

    walk(to_reduction_notation(stmt).rhs, {})


def _reduces(stmt: Assignment) -> bool:
    """Whether the right side sums: a variable only on the right, or an explicit sum."""
    free = {v for acc in stmt.rhs.accesses() for v in acc.indices}
    return bool(free - set(stmt.lhs.indices)) or bool(summed_vars(stmt.rhs))
