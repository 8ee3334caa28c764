"""One way to walk index notation expressions, strict on nodes it does not know.

`ExprVisitor` dispatches on the exact class of a node to one `visit_*`
method. The table `NODES` lists every expression class distal interprets; a
node of any other class (a new `BinaryOp` subclass, say) raises instead of
being computed as some other operator, and so does a visitor that lacks the
method for a known node. `ExprRewriter` rebuilds every node by default, so a
rewriter overrides only the nodes it changes.

`product_factors` and `summed_vars` are the one flattener of products and the
one collector of summation variables that the passes share.

>>> from distal.notation import IndexVar, TensorBase
>>> i, k = IndexVar("i"), IndexVar("k")
>>> B, c = TensorBase("B", (2, 3)), TensorBase("c", (3,))
>>> [str(f) for f in product_factors(B[i, k] * c[k] * 2)]
['B(i,k)', 'c(k)', '2']
"""

from __future__ import annotations

from typing import Generic, TypeVar

from distal.notation.ast import Access, Add, BinaryOp, Call, Div, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum

__all__ = ["NODES", "ExprRewriter", "ExprVisitor", "product_factors", "product_spec", "summed_vars"]

R = TypeVar("R")

# Every expression class the passes interpret, and the visitor method for it.
NODES: dict[type[Expr], str] = {
    Access: "visit_access",
    Literal: "visit_literal",
    Neg: "visit_neg",
    Add: "visit_add",
    Sub: "visit_sub",
    Mul: "visit_mul",
    Div: "visit_div",
    Sum: "visit_sum",
    Call: "visit_call",
}


class ExprVisitor(Generic[R]):
    """Calls `visit_<node>(e)` for the exact class of `e`; raises on any class not in `NODES`."""

    def __call__(self, e: Expr) -> R:
        name = NODES.get(type(e))
        if name is None:
            raise TypeError(f"{type(self).__name__} has no rule for the expression node {type(e).__name__}: {e}")
        method = getattr(self, name, None)
        if method is None:
            raise TypeError(f"{type(self).__name__} does not define {name} for {e}")
        result: R = method(e)
        return result


class ExprRewriter(ExprVisitor[Expr]):
    """Rebuilds an expression node by node; override the nodes a rewrite changes."""

    def visit_access(self, e: Access) -> Expr:
        return e

    def visit_literal(self, e: Literal) -> Expr:
        return e

    def visit_neg(self, e: Neg) -> Expr:
        operand = self(e.operand)
        return e if operand is e.operand else Neg(operand)

    def _binary(self, e: BinaryOp) -> Expr:
        a, b = self(e.a), self(e.b)
        return e if a is e.a and b is e.b else type(e)(a, b)

    def visit_add(self, e: Add) -> Expr:
        return self._binary(e)

    def visit_sub(self, e: Sub) -> Expr:
        return self._binary(e)

    def visit_mul(self, e: Mul) -> Expr:
        return self._binary(e)

    def visit_div(self, e: Div) -> Expr:
        return self._binary(e)

    def visit_sum(self, e: Sum) -> Expr:
        body = self(e.body)
        return e if body is e.body else Sum(e.var, body)

    def visit_call(self, e: Call) -> Expr:
        operand = self(e.operand)
        return e if operand is e.operand else Call(e.func, operand)


def product_factors(e: Expr) -> tuple[Expr, ...]:
    """The factors of a product, left to right; anything that is not a `Mul` is one factor."""
    if type(e) is Mul:
        return product_factors(e.a) + product_factors(e.b)
    return (e,)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def product_spec(lhs: Access, rhs: Expr) -> tuple[str, dict[IndexVar, str], tuple[Access, ...]] | None:
    """`lhs = rhs` as an einsum pattern where `rhs` is a product of accesses (and scalars): the pattern
    ("ij,jk->ik", the output's letters those some access has), each variable's letter, and the accesses
    in order. None for any other statement, or one of more than 52 variables."""
    factors = product_factors(rhs)
    accesses = tuple(f for f in factors if isinstance(f, Access))
    if not accesses or not all(isinstance(f, Access | Literal) for f in factors):
        return None
    letters: dict[IndexVar, str] = {}
    for acc in (*accesses, lhs):
        for v in acc.indices:
            if v not in letters:
                if len(letters) == len(_LETTERS):
                    return None
                letters[v] = _LETTERS[len(letters)]
    present = {v for acc in accesses for v in acc.indices}
    spec = ",".join("".join(letters[v] for v in acc.indices) for acc in accesses) + "->" + "".join(
        letters[v] for v in lhs.indices if v in present)
    return spec, letters, accesses


def summed_vars(e: Expr) -> tuple[IndexVar, ...]:
    """The variables of every explicit `sum` in `e`, outermost first, each once."""
    seen: dict[IndexVar, None] = {}
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Sum):
            seen.setdefault(node.var, None)
        stack.extend(reversed(node.children()))
    return tuple(seen)
