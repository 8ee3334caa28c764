"""Leaf kernels for `substitute`: what a loop nest's body becomes on one processor.

A leaf matches an assignment by its canonical einsum pattern: index variables
renamed a, b, c, ... in order of first appearance (output first).

Each leaf carries its NumPy implementation (`Leaf.compute`): the pattern
computed on operands whose axes follow it (GEMM, TTV and TTM as
`matmul`, the others as `einsum`). The reference executor runs substituted
blocks with it; a caller may pass CuPy as `xp`.

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (2, 2)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> GEMM.matches(A.assignment.lhs, A.assignment.rhs)
True
>>> import numpy as np
>>> GEMM.compute(np.eye(2), np.ones((2, 2)))
array([[1., 1.],
       [1., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distal.errors import ScheduleError
from distal.notation.ast import Access, Expr, IndexVar, Mul

__all__ = ["GEMM", "GENERIC", "INNERPROD", "LEAVES", "MTTKRP", "TTM", "TTV", "Leaf", "einsum_pattern", "get"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _factors(e: Expr) -> list[Access] | None:
    if isinstance(e, Access):
        return [e]
    if isinstance(e, Mul):
        a, b = _factors(e.a), _factors(e.b)
        if a is None or b is None:
            return None
        return a + b
    return None


def einsum_pattern(lhs: Access, rhs: Expr) -> str | None:
    """The canonical einsum pattern of `lhs = rhs`, or None if rhs is no product of accesses."""
    factors = _factors(rhs)
    if factors is None:
        return None
    names: dict[IndexVar, str] = {}
    for a in (lhs, *factors):
        for v in a.indices:
            if v not in names:
                if len(names) == len(_LETTERS):
                    return None
                names[v] = _LETTERS[len(names)]

    def sub(a: Access) -> str:
        return "".join(names[v] for v in a.indices)

    return ",".join(sub(a) for a in factors) + "->" + sub(lhs)


def _einsum(pattern: str, xp: Any, *operands: Any) -> Any:
    return xp.einsum(pattern, *operands, optimize=len(operands) > 2)


def _matmul(pattern: str, xp: Any, *operands: Any) -> Any:
    return xp.matmul(*operands)


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf kernel: a name, the einsum pattern it computes (None: any statement), its NumPy kernel.

    `kernel(pattern, xp, *operands)` computes `pattern` over the operands with
    the array namespace `xp`; `compute` is how callers run it.
    """

    name: str
    pattern: str | None
    kernel: Callable[..., Any] = field(default=_einsum, repr=False, compare=False)

    def compute(self, *operands: Any, pattern: str | None = None, xp: Any = np) -> Any:
        """The leaf's pattern over `operands` (their axes in the pattern's order), as one array.

        GENERIC takes the pattern to compute as `pattern` (any einsum
        pattern of a product); the others compute their own. The result has
        NumPy's promoted dtype of the operands, as `numpy.einsum` gives.
        """
        spec = self.pattern if self.pattern is not None else pattern
        if spec is None or (pattern is not None and pattern != spec):
            raise ScheduleError(f"expected the pattern {self.pattern} for leaf {self.name}, but found {pattern}")
        inputs = spec.split("->")[0].split(",")
        if len(inputs) != len(operands) or any(len(ax) != getattr(op, "ndim", -1) for ax, op in zip(inputs, operands)):
            shapes = ", ".join(str(getattr(op, "shape", "?")) for op in operands)
            raise ScheduleError(f"expected operands of pattern {spec} for leaf {self.name}, but found shapes {shapes}")
        return self.kernel(spec, xp, *operands)

    def matches(self, lhs: Access, rhs: Expr) -> bool:
        if self.pattern is None:
            return True
        return einsum_pattern(lhs, rhs) == self.pattern

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"dt.leaf.{self.name}"


GEMM = Leaf("GEMM", "ac,cb->ab", _matmul)  # BLAS for floats
TTV = Leaf("TTV", "abc,c->ab", _matmul)  # (a, b, c) @ (c,)
TTM = Leaf("TTM", "abd,dc->abc", _matmul)  # (a, b, d) @ (d, c), broadcast over a
MTTKRP = Leaf("MTTKRP", "acd,cb,db->ab", _einsum)  # optimised contraction path
INNERPROD = Leaf("INNERPROD", "abc,abc->", _einsum)  # no conjugation (vdot would conjugate)
GENERIC = Leaf("GENERIC", None, _einsum)

LEAVES = {leaf.name: leaf for leaf in (GEMM, TTV, TTM, MTTKRP, INNERPROD, GENERIC)}


def get(name: str) -> Leaf:
    """The leaf kernel called `name`; the error lists the valid names."""
    try:
        return LEAVES[name.upper()]
    except KeyError:
        raise ScheduleError(
            f"expected a leaf kernel ({', '.join(LEAVES)}), but found {name!r}"
        ) from None
