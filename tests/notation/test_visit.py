"""The strict expression visitor, the rewriter, the product flattener and the sum collector.

A new `BinaryOp` subclass (`Max` below) is not a node the passes know: every
pass that interprets operators must refuse it with a `TypeError` naming the
node, never compute it as `+`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from distal.cin.blocks import evaluate_points
from distal.model.predict import _Ops
from distal.notation import IndexVar, TensorBase
from distal.notation.ast import Access, Add, Assignment, BinaryOp, Call, Div, Expr, Literal, Mul, Neg, Sub, Sum
from distal.notation.check import result_dtype
from distal.notation.sums import _pure, place_sum, to_reduction_notation
from distal.notation.visit import NODES, ExprRewriter, ExprVisitor, product_factors, summed_vars
from distal.schedule.trace import python


@dataclass(frozen=True, slots=True)
class Max(BinaryOp):
    symbol = "max"
    level = 2


i, j, k = IndexVar("i"), IndexVar("j"), IndexVar("k")
B = TensorBase("B", (2, 3))
c = TensorBase("c", (3,))
d = TensorBase("d", (3,))


def _lookup(arrays: dict[str, np.ndarray]) -> Any:
    def lookup(t: TensorBase) -> tuple[np.ndarray, tuple[int, ...]]:
        return arrays[t.name], (0,) * t.order

    return lookup


class _Count(ExprVisitor[int]):
    def visit_access(self, e: Access) -> int:
        return 1

    def visit_literal(self, e: Literal) -> int:
        return 1

    def visit_neg(self, e: Neg) -> int:
        return 1 + self(e.operand)

    def _two(self, e: BinaryOp) -> int:
        return 1 + self(e.a) + self(e.b)

    visit_add = visit_sub = visit_mul = visit_div = _two

    def visit_sum(self, e: Sum) -> int:
        return 1 + self(e.body)


def test_visitor_dispatches_every_known_node() -> None:
    e = Sum(k, -(B[i, k] * c[k]) + c[k] / 2 - d[k])
    assert _Count()(e) == 11
    assert set(NODES) == {Access, Literal, Neg, Add, Sub, Mul, Div, Sum, Call}


def test_visitor_refuses_an_unknown_binary_op() -> None:
    with pytest.raises(TypeError, match="_Count has no rule for the expression node Max: c\\(k\\) max d\\(k\\)"):
        _Count()(Max(c[k], d[k]))


def test_visitor_refuses_a_missing_method() -> None:
    class OnlyAccess(ExprVisitor[int]):
        def visit_access(self, e: Access) -> int:
            return 1

    assert OnlyAccess()(c[k]) == 1
    with pytest.raises(TypeError, match="OnlyAccess does not define visit_mul for c\\(k\\) \\* d\\(k\\)"):
        OnlyAccess()(c[k] * d[k])


def test_rewriter_identity_returns_the_same_object() -> None:
    e = Sum(k, -(B[i, k] * c[k]) + c[k] / 2 - d[k])
    assert ExprRewriter()(e) is e


def test_rewriter_changes_one_access() -> None:
    class Swap(ExprRewriter):
        def visit_access(self, e: Access) -> Expr:
            return Access(d.var, e.indices) if e.tensor == c.var else e

    e = B[i, k] * c[k] + B[i, k]
    out = Swap()(e)
    assert str(out) == "B(i,k) * d(k) + B(i,k)"
    assert isinstance(out, Add) and isinstance(out.a, Mul)
    assert out.b is e.b and out.a.a is e.a.a  # type: ignore[attr-defined]


def test_rewriter_refuses_an_unknown_binary_op() -> None:
    with pytest.raises(TypeError, match="ExprRewriter has no rule for the expression node Max"):
        ExprRewriter()(c[k] + Max(c[k], d[k]))


def test_product_factors() -> None:
    assert [str(f) for f in product_factors(B[i, k] * (c[k] * d[k]) * 2)] == ["B(i,k)", "c(k)", "d(k)", "2"]
    s = c[k] + d[k]
    assert product_factors(s) == (s,)
    assert [str(f) for f in product_factors((c[k] + d[k]) * c[k])] == ["c(k) + d(k)", "c(k)"]


def test_summed_vars() -> None:
    e = Sum(j, Sum(k, B[i, k] * c[k]) + Sum(j, c[j]) * Sum(i, c[i]))
    assert summed_vars(e) == (j, k, i)
    assert summed_vars(B[i, k] * c[k]) == ()


def test_evaluate_points_computes_known_operators() -> None:
    arrays = {"c": np.array([1.0, 2.0, 3.0]), "d": np.array([4.0, 5.0, 7.0])}
    vals = {k: np.arange(3)}
    for e, want in [(c[k] + d[k], [5.0, 7.0, 10.0]), (c[k] - d[k], [-3.0, -3.0, -4.0]),
                    (c[k] * d[k], [4.0, 10.0, 21.0]), (-(c[k] / 2), [-0.5, -1.0, -1.5])]:
        got = evaluate_points(e, vals, [], _lookup(arrays), {k: 3})
        np.testing.assert_array_equal(got, want)
    total = evaluate_points(Sum(j, c[j] * d[j]), {}, [], _lookup(arrays), {j: 3})
    np.testing.assert_array_equal(np.ravel(total), [35.0])


def test_evaluate_points_refuses_an_unknown_binary_op() -> None:
    arrays = {"c": np.array([1.0, 2.0, 3.0]), "d": np.array([4.0, 5.0, 7.0])}
    with pytest.raises(TypeError, match="has no rule for the expression node Max"):
        evaluate_points(Max(c[k], d[k]), {k: np.arange(3)}, [], _lookup(arrays), {k: 3})


def test_other_passes_refuse_an_unknown_binary_op() -> None:
    e = Max(c[k], d[k])
    for run in (lambda: _Ops()(e), lambda: python(e), lambda: result_dtype(e), lambda: _pure(e),
                lambda: place_sum(Mul(e, c[k]) + e, k)):
        with pytest.raises(TypeError, match="has no rule for the expression node Max"):
            run()


def test_operation_count_and_trace() -> None:
    e = Sum(k, -(B[i, k] * c[k]) + c[k] / 2 - d[k])
    assert _Ops()(e) == 4
    assert python(e) == "dt.Sum(k, (((-(B[i, k] * c[k])) + (c[k] / 2)) - d[k]))"


def test_reduction_notation_places_sums_unchanged() -> None:
    a = TensorBase("a", ())
    stmt = Assignment(Access(a.var, ()), (c[k] + 1) * (d[k] + 1))
    assert str(to_reduction_notation(stmt).rhs) == "sum(k, (c(k) + 1) * (d(k) + 1))"
    assert str(place_sum(B[i, k] + c[k] * d[k] / c[i], k)) == "sum(k, B(i,k)) + sum(k, c(k) * d(k)) / c(i)"
