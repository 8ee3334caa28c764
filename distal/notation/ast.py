"""Tensor index notation: index variables, expressions and assignments.

Expressions are frozen dataclasses; `str()` prints the text form
(`B(i,k) * C(k,j)`) and `distal.parse` reads it back into an equal object.
One data structure serves TACO's dialects: einsum notation (variables only on
the right are summed implicitly) and reduction notation (explicit `Sum` nodes,
printed `sum(k, ...)`). The unary functions `FUNCTIONS` (`Call` nodes,
printed `sqrt(B(i,j))`) apply NumPy's ufunc of that name element-wise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from distal.errors import NotationError

if TYPE_CHECKING:
    from distal.notation.variable import TensorVar

__all__ = [
    "FUNCTIONS",
    "Access",
    "Accumulate",
    "Add",
    "Assignment",
    "BinaryOp",
    "Call",
    "Div",
    "Expr",
    "IndexVar",
    "Literal",
    "Mul",
    "Neg",
    "Sub",
    "Sum",
    "as_expr",
    "index_vars",
]


@dataclass(frozen=True, slots=True)
class IndexVar:
    """An index variable; two variables with the same name are the same variable.

    >>> i, j = index_vars("i j")
    >>> i
    IndexVar('i')
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise NotationError(f"expected an identifier as index variable name, but found {self.name!r}")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"IndexVar({self.name!r})"


def index_vars(names: str) -> tuple[IndexVar, ...]:
    """Index variables from a space- or comma-separated list of names.

    >>> [str(v) for v in index_vars("i j k")]
    ['i', 'j', 'k']
    """
    parts = names.replace(",", " ").split()
    if not parts:
        raise NotationError("expected at least one index variable name, but found none", names)
    for n, p in enumerate(parts):
        if p in parts[:n]:
            raise NotationError(f"expected distinct index variable names, but {p} is listed twice", names)
    return tuple(IndexVar(p) for p in parts)


Number = int | float
Operand = Union["Expr", int, float]


def as_expr(value: object) -> Expr:
    """An expression from an expression or a Python number."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        raise NotationError(f"expected a number or an expression, but found {value!r}")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise NotationError(f"expected a finite number, but found {value!r}")
        if value < 0:
            return Neg(Literal(-value))
        return Literal(value)
    raise NotationError(f"expected a number or an expression, but found {value!r}")


class Expr:
    """Base of index notation expressions; arithmetic builds new expressions."""

    __slots__ = ()

    def __add__(self, other: Operand) -> Expr:
        return Add(self, as_expr(other))

    def __radd__(self, other: Operand) -> Expr:
        return Add(as_expr(other), self)

    def __sub__(self, other: Operand) -> Expr:
        return Sub(self, as_expr(other))

    def __rsub__(self, other: Operand) -> Expr:
        return Sub(as_expr(other), self)

    def __mul__(self, other: Operand) -> Expr:
        return Mul(self, as_expr(other))

    def __rmul__(self, other: Operand) -> Expr:
        return Mul(as_expr(other), self)

    def __truediv__(self, other: Operand) -> Expr:
        return Div(self, as_expr(other))

    def __rtruediv__(self, other: Operand) -> Expr:
        return Div(as_expr(other), self)

    def __neg__(self) -> Expr:
        return Neg(self)

    def __abs__(self) -> Expr:
        return Call("abs", self)

    # Precedence for printing: 1 = additive, 2 = multiplicative, 3 = unary, 4 = atom.
    @property
    def precedence(self) -> int:
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        raise NotImplementedError

    def accesses(self) -> tuple[Access, ...]:
        """Every access, left to right."""
        if isinstance(self, Access):
            return (self,)
        return tuple(a for c in self.children() for a in c.accesses())

    def index_vars(self) -> tuple[IndexVar, ...]:
        """Index variables in order of first appearance (summation variables included)."""
        seen: dict[IndexVar, None] = {}
        _collect_vars(self, seen)
        return tuple(seen)


def _collect_vars(e: Expr, seen: dict[IndexVar, None]) -> None:
    if isinstance(e, Access):
        for v in e.indices:
            seen.setdefault(v, None)
    elif isinstance(e, Sum):
        seen.setdefault(e.var, None)
        _collect_vars(e.body, seen)
    else:
        for c in e.children():
            _collect_vars(c, seen)


@dataclass(frozen=True, slots=True, eq=True, weakref_slot=True)
class Access(Expr):
    """`T(i,j)`: a tensor variable (`TensorVar`, never the user's `Tensor`) indexed by index variables."""

    tensor: TensorVar
    indices: tuple[IndexVar, ...]

    def __post_init__(self) -> None:
        for v in self.indices:
            if not isinstance(v, IndexVar):
                raise NotationError(
                    f"expected index variables to index {self.tensor.name}, but found {v!r}"
                )
        if len(self.indices) != self.tensor.order:
            raise NotationError(
                f"expected {self.tensor.order} index variable(s) for {self.tensor.name} "
                f"of shape {self.tensor.shape_text()}, but found {len(self.indices)}",
                self,
            )

    @property
    def precedence(self) -> int:
        return 4

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __iadd__(self, other: Operand) -> Accumulate:  # type: ignore[misc,override]
        return Accumulate(self, as_expr(other))

    def __str__(self) -> str:
        if not self.indices:
            return self.tensor.name
        return f"{self.tensor.name}({','.join(v.name for v in self.indices)})"

    def __repr__(self) -> str:
        return f"<Access {self}>"


@dataclass(frozen=True, slots=True)
class Accumulate:
    """What `A[i, j] += e` hands to `Tensor.__setitem__`: not an expression."""

    target: Access
    rhs: Expr


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """A non-negative numeric literal (negative numbers are `Neg(Literal)`)."""

    value: Number

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise NotationError(f"expected a number, but found {self.value!r}")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise NotationError(f"expected a finite number, but found {self.value!r}")
        if self.value < 0:
            raise NotationError(f"expected a non-negative literal, but found {self.value!r}")

    @property
    def precedence(self) -> int:
        return 4

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Neg(Expr):
    """Unary minus."""

    operand: Expr

    @property
    def precedence(self) -> int:
        return 3

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        inner = str(self.operand)
        if self.operand.precedence < 3:
            inner = f"({inner})"
        return f"-{inner}"


# The unary functions of the notation, each NumPy's ufunc of the second name
# (CuPy has the same names): the result dtype is NumPy's type resolution of
# that ufunc (abs of complex is real, sqrt and exp of integers are floating).
FUNCTIONS: dict[str, str] = {"abs": "absolute", "conj": "conjugate", "exp": "exp", "sqrt": "sqrt"}


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """`sqrt(e)`: a unary function of `FUNCTIONS` applied to every element of `e`.

    An einsum variable summed implicitly is summed outside the function
    (`a = sqrt(B(i))` sums `sqrt(B(i))` over i); an explicit `sum` inside it
    (`sqrt(sum(i, B(i)))`) is computed whole before the function applies.

    >>> from distal.notation import TensorBase
    >>> i, j = index_vars("i j")
    >>> X = TensorBase("X", (2, 2), dtype="complex128")
    >>> print(X[i, j] * Call("conj", X[i, j]))
    X(i,j) * conj(X(i,j))
    """

    func: str
    operand: Expr

    def __post_init__(self) -> None:
        if self.func not in FUNCTIONS:
            raise NotationError(f"expected a function of {', '.join(sorted(FUNCTIONS))}, but found {self.func!r}")
        if not isinstance(self.operand, Expr):
            raise NotationError(f"expected an expression as the operand of {self.func}, but found {self.operand!r}")

    @property
    def precedence(self) -> int:
        return 4

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def __str__(self) -> str:
        return f"{self.func}({self.operand})"


@dataclass(frozen=True, slots=True)
class BinaryOp(Expr):
    """A binary operator; subclasses fix the symbol and precedence."""

    a: Expr
    b: Expr

    symbol = "?"
    level = 0

    @property
    def precedence(self) -> int:
        return self.level

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def __str__(self) -> str:
        left = str(self.a)
        if self.a.precedence < self.level:
            left = f"({left})"
        right = str(self.b)
        # Operators associate to the left: a right operand of equal precedence
        # keeps its parentheses so that parsing gives the same tree back.
        if self.b.precedence <= self.level:
            right = f"({right})"
        return f"{left} {self.symbol} {right}"


@dataclass(frozen=True, slots=True)
class Add(BinaryOp):
    symbol = "+"
    level = 1


@dataclass(frozen=True, slots=True)
class Sub(BinaryOp):
    symbol = "-"
    level = 1


@dataclass(frozen=True, slots=True)
class Mul(BinaryOp):
    symbol = "*"
    level = 2


@dataclass(frozen=True, slots=True)
class Div(BinaryOp):
    symbol = "/"
    level = 2


@dataclass(frozen=True, slots=True)
class Sum(Expr):
    """Reduction notation: `sum(k, e)` sums `e` over every value of `k`."""

    var: IndexVar
    body: Expr

    @property
    def precedence(self) -> int:
        return 4

    def children(self) -> tuple[Expr, ...]:
        return (self.body,)

    def __str__(self) -> str:
        return f"sum({self.var}, {self.body})"


@dataclass(frozen=True, slots=True)
class Assignment:
    """`lhs = rhs` or, with `accumulate`, `lhs += rhs`."""

    lhs: Access
    rhs: Expr
    accumulate: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.lhs, Access):
            raise NotationError(f"expected a tensor access on the left, but found {self.lhs!r}")
        if not isinstance(self.rhs, Expr):
            raise NotationError(f"expected an expression on the right, but found {self.rhs!r}")

    @property
    def op(self) -> str:
        return "+=" if self.accumulate else "="

    @property
    def free_vars(self) -> tuple[IndexVar, ...]:
        return self.lhs.indices

    @property
    def reduction_vars(self) -> tuple[IndexVar, ...]:
        """Variables that appear only on the right, in order of appearance."""
        free = set(self.lhs.indices)
        return tuple(v for v in self.rhs.index_vars() if v not in free)

    def index_vars(self) -> tuple[IndexVar, ...]:
        """Free variables in output order, then summed variables by appearance."""
        return self.free_vars + self.reduction_vars

    def tensors(self) -> tuple[TensorVar, ...]:
        """Every tensor variable, output first, each once."""
        seen: dict[TensorVar, None] = {self.lhs.tensor: None}
        for a in self.rhs.accesses():
            seen.setdefault(a.tensor, None)
        return tuple(seen)

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"


def _words(self: object) -> str:
    """An expression or assignment in words: its kind and its text form (`<Mul B(i,k) * C(k,j)>`)."""
    return f"<{type(self).__name__} {self}>"


# The dataclasses' own reprs dump every field (`Mul(a=Access(...), b=...)`); the text form reads better.
for _kind in (Literal, Neg, Add, Sub, Mul, Div, Sum, Call, Assignment):
    _kind.__repr__ = _words  # type: ignore[method-assign,assignment]
