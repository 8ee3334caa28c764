"""The unary functions in the Python form: `dt.sqrt(B[i, j])`, `dt.conj(X[i, j])`, `dt.abs`, `dt.exp`.

Each builds a `Call` node (the text form is `sqrt(B(i,j))`) that applies
NumPy's ufunc of that name element-wise, with NumPy's result dtype: `abs` of
a complex tensor is real, `sqrt` and `exp` of an integer tensor are NumPy's
floating type for it (float16 for int8), `conj` keeps the dtype. Python's
own `abs(B[i, j])` builds the same node.

>>> import distal as dt
>>> i, j = dt.index_vars("i j")
>>> X = dt.Tensor("X", (2, 2), dtype="complex128")
>>> n = dt.Tensor("n", (), dtype="complex128")
>>> n[()] = X[i, j] * dt.conj(X[i, j])
>>> print(n.assignment)
n = X(i,j) * conj(X(i,j))
"""

from __future__ import annotations

from distal.notation.ast import Call, Operand, as_expr

__all__ = ["abs", "conj", "exp", "sqrt"]


def abs(x: Operand) -> Call:
    """`abs(x)`: the absolute value of every element (of a complex element: its modulus, real)."""
    return Call("abs", as_expr(x))


def conj(x: Operand) -> Call:
    """`conj(x)`: the complex conjugate of every element (a real element is unchanged)."""
    return Call("conj", as_expr(x))


def sqrt(x: Operand) -> Call:
    """`sqrt(x)`: the square root of every element (NaN for a negative real, as NumPy)."""
    return Call("sqrt", as_expr(x))


def exp(x: Operand) -> Call:
    """`exp(x)`: e to the power of every element."""
    return Call("exp", as_expr(x))
