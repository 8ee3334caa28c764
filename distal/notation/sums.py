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
from `sum(v, x / y)`), and never into a function (`sqrt(B(i))` summed over
`i` is `sum(i, sqrt(B(i)))`: the function is a factor, like an access).

An explicit `sum` below the root (in a denominator, in a function's operand,
in one term of `+`) is no loop of the concrete notation: it is computed whole
where it stands, and scheduling commands cannot name its variable
(`summed_inside` says where such a variable is summed, for their errors).
"""

from __future__ import annotations

from collections.abc import Iterable

from distal.notation.ast import Access, Assignment, BinaryOp, Call, Div, Expr, IndexVar, Literal, Mul, Neg, Sum
from distal.notation.visit import ExprRewriter, ExprVisitor

__all__ = ["place_sum", "root_sums", "summed_inside", "summed_note", "to_reduction_notation"]


def _mentions(e: Expr, v: IndexVar) -> bool:
    """Whether `v` occurs in `e` outside every `sum(v, ...)` (a free occurrence)."""
    if isinstance(e, Access):
        return v in e.indices
    if isinstance(e, Sum) and e.var == v:
        return False
    return any(_mentions(c, v) for c in e.children())


class _Pure(ExprVisitor[bool]):
    """A product of accesses, function calls, literals, negations and sums of such: no + - / outside a call.

    A call counts as one factor: a sum over a variable of it is placed around the whole call
    (`sum(v, f(x)) * y == sum(v, f(x) * y)` for any `f` when `y` does not mention `v`).
    """

    def visit_access(self, e: Access) -> bool:
        return True

    def visit_literal(self, e: Literal) -> bool:
        return True

    def visit_neg(self, e: Neg) -> bool:
        return self(e.operand)

    def visit_mul(self, e: Mul) -> bool:
        return self(e.a) and self(e.b)

    def visit_sum(self, e: Sum) -> bool:
        return self(e.body)

    def visit_call(self, e: Call) -> bool:
        return True

    def _impure(self, e: BinaryOp) -> bool:
        return False

    visit_add = visit_sub = visit_div = _impure


_pure = _Pure()


class _PlaceSum(ExprRewriter):
    """`place_sum(e, v)` as a rewriter: the rules of this module's docstring, node by node."""

    def __init__(self, v: IndexVar) -> None:
        self.v = v

    def __call__(self, e: Expr) -> Expr:
        return super().__call__(e) if _mentions(e, self.v) else e

    def visit_access(self, e: Access) -> Expr:
        return Sum(self.v, e)

    def visit_call(self, e: Call) -> Expr:
        return Sum(self.v, e)  # never inside the function: sqrt(sum(v, x)) is not sum(v, sqrt(x))

    def visit_mul(self, e: Mul) -> Expr:
        in_a, in_b = _mentions(e.a, self.v), _mentions(e.b, self.v)
        if in_a and in_b:
            return Sum(self.v, e)
        if _pure(e.a if in_a else e.b):
            # sum(v, x) * y == sum(v, x * y) when x is a pure product: keep the
            # sum high so that v stays a loop of the concrete notation.
            return Sum(self.v, e)
        return Mul(self(e.a), e.b) if in_a else Mul(e.a, self(e.b))

    def visit_div(self, e: Div) -> Expr:
        if _mentions(e.b, self.v):
            return Sum(self.v, e)
        return Div(self(e.a), e.b)


def place_sum(e: Expr, v: IndexVar) -> Expr:
    """Wrap the parts of `e` that use `v` in `sum(v, ...)`."""
    return _PlaceSum(v)(e)


def to_reduction_notation(stmt: Assignment) -> Assignment:
    """The statement with every implicit summation made an explicit `Sum`.

    Sums already explicit stay where they are; a variable that an explicit sum binds and that also
    occurs outside it (`sum(j, B(i,j)) + B(i,j)`) is summed implicitly where it occurs outside.
    """
    rhs = stmt.rhs
    for v in stmt.reduction_vars:
        if _mentions(rhs, v):
            rhs = place_sum(rhs, v)
    return Assignment(stmt.lhs, rhs, stmt.accumulate)


def summed_inside(e: Expr, v: IndexVar) -> Expr | None:
    """Where an explicit `sum(v, ...)` in `e` is computed whole: the innermost function call or division
    whose operand or denominator holds it, else the sum itself; None when `e` has no `sum(v, ...)`.

    >>> from distal.notation import TensorBase
    >>> from distal.notation.ast import index_vars
    >>> i, j = index_vars("i j")
    >>> B = TensorBase("B", (2, 3))
    >>> print(summed_inside(Call("sqrt", Sum(j, B[i, j])) + 1, j))
    sqrt(sum(j, B(i,j)))
    """

    def find(node: Expr, around: Expr | None) -> Expr | None:
        if isinstance(node, Sum) and node.var == v:
            return around or node
        for n, child in enumerate(node.children()):
            inner = node if isinstance(node, Call) or (isinstance(node, Div) and n == 1) else around
            found = find(child, inner)
            if found is not None:
                return found
        return None

    return find(e, None)


def summed_note(v: IndexVar, rhs: Iterable[Expr]) -> str:
    """Why `v`, no loop of a concrete statement whose right sides are `rhs`, cannot be scheduled: the words
    a scheduling command adds to its error when `v` is summed by an explicit sum below the root ("" if not)."""
    for e in rhs:
        found = summed_inside(e, v)
        if isinstance(found, Call):
            return (f"; {v} is summed inside {found.func}: {found} is computed whole where it stands "
                    f"(a sum inside a function is never computed in pieces)")
        if isinstance(found, Div):
            return (f"; {v} is summed inside the divisor of {found}, which is computed whole where it stands "
                    f"(a sum in a divisor is never computed in pieces)")
        if found is not None:
            return f"; {v} is summed by {found}, which is computed whole where it stands"
    return ""


def root_sums(e: Expr) -> tuple[tuple[IndexVar, ...], Expr]:
    """The chain of sums at the root of `e` and what they sum."""
    vars_: list[IndexVar] = []
    while isinstance(e, Sum):
        vars_.append(e.var)
        e = e.body
    return tuple(vars_), e


