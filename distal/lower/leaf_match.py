"""Which substituted leaf a block of a task body runs: the loops above an assignment, and its einsum pattern.

`substitute` records, per leaf, the loop variables it replaces
(`TaskBody.leaves`). A block of loops runs a leaf when all its loops are among
them and the block's pattern is the leaf's; these are the questions the task
body asks of the statement to decide that.
"""

from __future__ import annotations

from distal.cin.statements import Assign, Forall, Stmt
from distal.leaf import einsum_pattern
from distal.notation.ast import IndexVar

__all__ = ["chain_above", "leaf_pattern"]


def leaf_pattern(a: Assign) -> str | None:
    """The einsum pattern of `a` as leaves write theirs (`distal.leaf.einsum_pattern`), None when it has none."""
    return einsum_pattern(a.lhs, a.rhs)


def chain_above(stmt: Stmt, target: Assign) -> list[IndexVar]:
    """The loop variables enclosing `target` in `stmt`, outermost first."""
    for c in stmt.children():
        if _contains(c, target):
            rest = chain_above(c, target)
            return [stmt.var, *rest] if isinstance(stmt, Forall) else rest
    return []


def _contains(stmt: Stmt, target: Assign) -> bool:
    return stmt is target or any(_contains(c, target) for c in stmt.children())
