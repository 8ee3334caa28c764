"""Leaf kernels for `substitute`: what a loop nest's body becomes on one processor.

A leaf matches an assignment by its canonical einsum pattern: index variables
renamed a, b, c, ... in order of first appearance (output first).

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (2, 2)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> GEMM.matches(A.assignment.lhs, A.assignment.rhs)
True
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf kernel: a name and the einsum pattern it computes (None: any statement)."""

    name: str
    pattern: str | None

    def matches(self, lhs: Access, rhs: Expr) -> bool:
        if self.pattern is None:
            return True
        return einsum_pattern(lhs, rhs) == self.pattern

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"dt.leaf.{self.name}"


GEMM = Leaf("GEMM", "ac,cb->ab")
TTV = Leaf("TTV", "abc,c->ab")
TTM = Leaf("TTM", "abd,dc->abc")
MTTKRP = Leaf("MTTKRP", "acd,cb,db->ab")
INNERPROD = Leaf("INNERPROD", "abc,abc->")
GENERIC = Leaf("GENERIC", None)

LEAVES = {leaf.name: leaf for leaf in (GEMM, TTV, TTM, MTTKRP, INNERPROD, GENERIC)}


def get(name: str) -> Leaf:
    """The leaf kernel called `name`; the error lists the valid names."""
    try:
        return LEAVES[name.upper()]
    except KeyError:
        raise ScheduleError(
            f"expected a leaf kernel ({', '.join(LEAVES)}), but found {name!r}"
        ) from None
