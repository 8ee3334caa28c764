"""From einsum notation to reduction notation: where implicit sums go.

Summation follows Einstein's convention. A variable that appears only on the
right is summed over the whole product that holds it, and each additive term
is a scope of its own: in `A(i) = B(i,j) + C(i)` only `B` is summed, while in
`a = (b(i) + 1) * (c(i) + 1)` the whole product is summed over `i` (so the
constant `1 * 1` counts once per value of `i`). Concretely the sum over `v`
is placed at the lowest node that holds every use of `v` in one product: it
is pushed into each side of `+` and `-` that mentions `v`, into the one
factor of `*` that mentions `v` (or placed at the `*` when both do, or when
that factor is a pure product, where the two are equal), and
into the numerator of `/` (never into a denominator: `x / sum(v, y)` differs
from `sum(v, x / y)`).
"""

from __future__ import annotations

from distal.notation.ast import (
    Access,
    Add,
    Assignment,
    Div,
    Expr,
    IndexVar,
    Literal,
    Mul,
    Neg,
    Sub,
    Sum,
)

__all__ = ["place_sum", "to_reduction_notation"]


def _mentions(e: Expr, v: IndexVar) -> bool:
    return v in e.index_vars()


def _pure(e: Expr) -> bool:
    """A product of accesses, literals, negations and sums of such: no + - /."""
    if isinstance(e, Access | Literal):
        return True
    if isinstance(e, Neg):
        return _pure(e.operand)
    if isinstance(e, Mul):
        return _pure(e.a) and _pure(e.b)
    if isinstance(e, Sum):
        return _pure(e.body)
    return False


def place_sum(e: Expr, v: IndexVar) -> Expr:
    """Wrap the parts of `e` that use `v` in `sum(v, ...)`."""
    if not _mentions(e, v):
        return e
    if isinstance(e, Add | Sub):
        return type(e)(place_sum(e.a, v), place_sum(e.b, v))
    if isinstance(e, Mul):
        in_a, in_b = _mentions(e.a, v), _mentions(e.b, v)
        if in_a and in_b:
            return Sum(v, e)
        side = e.a if in_a else e.b
        if _pure(side):
            # sum(v, x) * y == sum(v, x * y) when x is a pure product: keep the
            # sum high so that v stays a loop of the concrete notation.
            return Sum(v, e)
        return Mul(place_sum(e.a, v), e.b) if in_a else Mul(e.a, place_sum(e.b, v))
    if isinstance(e, Div):
        if _mentions(e.b, v):
            return Sum(v, e)
        return Div(place_sum(e.a, v), e.b)
    if isinstance(e, Neg):
        return Neg(place_sum(e.operand, v))
    if isinstance(e, Sum):
        return Sum(e.var, place_sum(e.body, v))
    assert isinstance(e, Access), e
    return Sum(v, e)


def to_reduction_notation(stmt: Assignment) -> Assignment:
    """The statement with every implicit summation made an explicit `Sum`.

    Sums already explicit stay where they are.
    """
    explicit: set[IndexVar] = set()

    def bound(e: Expr) -> None:
        if isinstance(e, Sum):
            explicit.add(e.var)
        for c in e.children():
            bound(c)

    bound(stmt.rhs)
    rhs = stmt.rhs
    for v in stmt.reduction_vars:
        if v not in explicit:
            rhs = place_sum(rhs, v)
    return Assignment(stmt.lhs, rhs, stmt.accumulate)


def root_sums(e: Expr) -> tuple[tuple[IndexVar, ...], Expr]:
    """The chain of sums at the root of `e` and what they sum."""
    vars_: list[IndexVar] = []
    while isinstance(e, Sum):
        vars_.append(e.var)
        e = e.body
    return tuple(vars_), e


