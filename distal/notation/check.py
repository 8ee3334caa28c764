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
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from distal.errors import DtypeError, NotationError
from distal.notation.ast import Access, Add, Assignment, Div, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum
from distal.sizes import Size

__all__ = ["check_statement", "compute_dtype", "extents", "result_dtype"]


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
    names: dict[str, object] = {}
    for access in (stmt.lhs, *stmt.rhs.accesses()):
        t = access.tensor
        if names.setdefault(t.name, t) is not t:
            raise NotationError(
                f"expected one tensor per name, but found two tensors named {t.name}", stmt
            )
        if access is not stmt.lhs and t is out:
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
    """The dtype `lhs = rhs` computes in: the right side's promoted with the output's (einsum's `out=`)."""
    return _compute_dtype(lhs.tensor.dtype, _signature(rhs))


Signature = tuple[Any, ...]


def _signature(e: Expr) -> Signature:
    """`e` with each access replaced by its tensor's dtype: what its dtype depends on (a cache key)."""
    if isinstance(e, Access):
        return ("access", e.tensor.dtype)
    if isinstance(e, Literal):
        return ("literal", e.value)
    return (type(e).__name__, *(_signature(c) for c in e.children()))


@functools.lru_cache(maxsize=1024)
def _compute_dtype(out: np.dtype, rhs: Signature) -> np.dtype:
    return np.result_type(_result_dtype(rhs), out)


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
    if kind == Neg.__name__:
        return -_sample(sig[1])
    if kind == Sum.__name__:
        return _sample(sig[1])  # einsum's sums keep the type (np.sum would widen small integers)
    a, b = _sample(sig[1]), _sample(sig[2])
    ufunc = {Mul.__name__: np.multiply, Div.__name__: np.true_divide, Sub.__name__: np.subtract,
             Add.__name__: np.add}[kind]
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


def _reduces(stmt: Assignment) -> bool:
    """Whether the right side sums: a variable only on the right, or an explicit sum."""
    def has_sum(e: Expr) -> bool:
        return isinstance(e, Sum) or any(has_sum(c) for c in e.children())

    free = {v for acc in stmt.rhs.accesses() for v in acc.indices}
    return bool(free - set(stmt.lhs.indices)) or has_sum(stmt.rhs)
