"""Schedule traces: each command as Python that replays it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distal.leaf import Leaf
from distal.machine.grid import Grid, Machine
from distal.notation.ast import Access, Add, BinaryOp, Call, Div, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum
from distal.notation.tensor_base import TensorBase
from distal.notation.variable import TensorVar
from distal.notation.visit import ExprVisitor
from distal.sizes import MachineDim, Param

__all__ = ["Command", "python"]


def _grid(g: Grid) -> str:
    if not g.params:
        return "dt." + repr(g)
    # a symbolic grid: its sizes as dt.Param(...), the rest of its repr unchanged
    sizes = ", ".join(python(d) for d in g.sizes)
    rest = repr(g)[len("Grid(") + len(", ".join(str(d) for d in g.sizes)):]
    return f"dt.Grid({sizes}{rest}"


def python(value: Any) -> str:
    """Python source that evaluates to `value` with `dt`, tensors and index variables in scope.

    A machine dimension prints as `m.x` (`m.dim('x', 1)` below the top level):
    the machine it belongs to is expected in scope as `m`.
    """
    if isinstance(value, IndexVar | TensorBase | TensorVar):
        return value.name
    if isinstance(value, list | tuple):
        return "[" + ", ".join(python(v) for v in value) + "]"
    if isinstance(value, Leaf):
        return repr(value)
    if isinstance(value, Grid):
        return _grid(value)
    if isinstance(value, Machine):
        return "dt.Machine(" + ", ".join(_grid(g) for g in value.grids) + ")"
    if isinstance(value, MachineDim):
        # the machine's dimension as the user wrote it, with the machine in scope as `m`
        return f"m.{value.name}" if value.level == 0 else f"m.dim({value.name!r}, {value.level})"
    if isinstance(value, Param):
        return f"dt.Param({value.name!r})"
    if isinstance(value, Expr):
        return _expr(value)
    return repr(value)


class _Python(ExprVisitor[str]):
    """An expression as the Python DSL that builds it (strict: an unknown node raises `TypeError`)."""

    def visit_access(self, e: Access) -> str:
        if not e.indices:
            return f"{e.tensor.name}[()]"
        return f"{e.tensor.name}[{', '.join(v.name for v in e.indices)}]"

    def visit_literal(self, e: Literal) -> str:
        return repr(e.value)

    def visit_neg(self, e: Neg) -> str:
        return f"(-{self(e.operand)})"

    def _binary(self, e: BinaryOp, symbol: str) -> str:
        return f"({self(e.a)} {symbol} {self(e.b)})"

    def visit_add(self, e: Add) -> str:
        return self._binary(e, "+")

    def visit_sub(self, e: Sub) -> str:
        return self._binary(e, "-")

    def visit_mul(self, e: Mul) -> str:
        return self._binary(e, "*")

    def visit_div(self, e: Div) -> str:
        return self._binary(e, "/")

    def visit_sum(self, e: Sum) -> str:
        return f"dt.Sum({e.var.name}, {self(e.body)})"

    def visit_call(self, e: Call) -> str:
        return f"dt.{e.func}({self(e.operand)})"


_expr = _Python()


@dataclass(frozen=True, slots=True)
class Command:
    """One scheduling command as called: name, positional and keyword arguments."""

    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        parts = [python(a) for a in self.args if a is not None] if self.name != "distribute" else [
            python(a) for a in _trim(self.args)
        ]
        parts += [f"{k}={python(v)}" for k, v in self.kwargs]
        return f"{self.name}({', '.join(parts)})"


def _trim(args: tuple[Any, ...]) -> tuple[Any, ...]:
    out = list(args)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)
