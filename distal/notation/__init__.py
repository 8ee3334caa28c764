"""Tensor index notation: the frontend."""

from distal.notation.ast import (
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
    index_vars,
)
from distal.notation.parse import parse
from distal.notation.tensor_base import TensorBase
from distal.notation.variable import TensorVar

__all__ = [
    "Access",
    "Add",
    "Assignment",
    "Call",
    "Div",
    "Expr",
    "IndexVar",
    "Literal",
    "Mul",
    "Neg",
    "Sub",
    "Sum",
    "TensorBase",
    "TensorVar",
    "index_vars",
    "parse",
]
