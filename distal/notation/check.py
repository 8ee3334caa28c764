"""Checks that make an assignment a valid tensor index notation statement."""

from __future__ import annotations

from distal.errors import NotationError
from distal.notation.ast import Access, Assignment, IndexVar, Sum
from distal.sizes import Size

__all__ = ["check_statement", "extents"]


def extents(stmt: Assignment) -> dict[IndexVar, Size]:
    """The extent of every index variable, from the shapes of the tensors it indexes.

    Raises `NotationError` when a variable indexes dimensions of two extents.
    """
    found: dict[IndexVar, tuple[Size, Access]] = {}
    for access in (stmt.lhs, *stmt.rhs.accesses()):
        for dim, v in enumerate(access.indices):
            size = access.tensor.shape[dim]
            if v in found and found[v][0] != size:
                size0, access0 = found[v]
                raise NotationError(
                    f"expected index variable {v} to have one extent, but found {size0} "
                    f"in {access0} and {size} in {access}",
                    stmt,
                )
            found.setdefault(v, (size, access))
    return {v: s for v, (s, _) in found.items()}


def check_statement(stmt: Assignment) -> Assignment:
    """Validate an index notation statement; returns it unchanged."""
    out = stmt.lhs.tensor
    if len(set(stmt.lhs.indices)) != len(stmt.lhs.indices):
        raise NotationError(
            f"expected distinct index variables on the left, but found {stmt.lhs}", stmt
        )
    names: dict[str, object] = {}
    for access in (stmt.lhs, *stmt.rhs.accesses()):
        t = access.tensor
        if names.setdefault(t.name, t) is not t:
            raise NotationError(
                f"expected one tensor per name, but found two tensors named {t.name}", stmt
            )
        if access is not stmt.lhs and t is out:
            raise NotationError(
                f"expected the output {out.name} only on the left, but found {access} "
                "on the right (use += to accumulate into it)",
                stmt,
            )
    _check_sums(stmt)
    extents(stmt)
    return stmt


def _check_sums(stmt: Assignment) -> None:
    free = set(stmt.lhs.indices)

    def walk(e: object, bound: frozenset[IndexVar]) -> None:
        if isinstance(e, Sum):
            if e.var in free or e.var in bound:
                raise NotationError(
                    f"expected sum over a variable that is not already bound, but found "
                    f"sum({e.var}, ...)",
                    stmt,
                )
            walk(e.body, bound | {e.var})
        elif hasattr(e, "children"):
            for c in e.children():  # type: ignore[attr-defined]
                walk(c, bound)

    walk(stmt.rhs, frozenset())
