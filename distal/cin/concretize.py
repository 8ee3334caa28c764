"""From index notation to concrete index notation (paper section 5.1).

Loops follow TACO's left-to-right order: the output's variables in output
order, then the summed variables in order of appearance. Sums at the root of
the right-hand side become loops around a `+=`; sums below the root stay in
the expression (reduction notation) and are computed where they stand.
"""

from __future__ import annotations

from distal.cin.statements import Assign, Forall, Stmt
from distal.notation.ast import Assignment
from distal.notation.sums import root_sums, to_reduction_notation

__all__ = ["concretize"]


def concretize(stmt: Assignment) -> Stmt:
    """The concrete index notation of an index notation statement.

    >>> import distal as dt
    >>> i, j, k = dt.index_vars("i j k")
    >>> A, B, C = (dt.Tensor(n, (2, 2)) for n in "ABC")
    >>> A[i, j] = B[i, k] * C[k, j]
    >>> print(concretize(A.assignment))
    ∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)
    """
    reduced = to_reduction_notation(stmt)
    sums, body = root_sums(reduced.rhs)
    out: Stmt = Assign(stmt.lhs, body, accumulate=stmt.accumulate or bool(sums))
    for v in reversed(stmt.lhs.indices + sums):
        out = Forall(v, out)
    return out
