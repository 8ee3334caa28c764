"""Bounds analysis over the provenance graph: which part of each tensor a task touches.

Given the values of some loop variables (a launch point: distributed loops
and sequential steps), every other loop variable ranges over its whole
extent. Intervals flow from the loop variables to the original variables
through the derivations (divide, split, fuse, rotate, precompute), clipped by
the guards of divide and split; a tensor's box is the product of the
intervals of the variables indexing it, over every access of the statement.
Symbolic sizes (`dt.Param`) are bound before this runs (`Provenance.extents`).

Intervals are half-open `(lo, hi)`; `lo >= hi` is empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from distal.cin.relations import Interval
from distal.cin.statements import Stmt, assignments, loop_vars
from distal.notation.ast import Access, IndexVar
from distal.notation.variable import TensorVar
from distal.notation.visit import summed_vars
from distal.schedule.provenance import Provenance

__all__ = ["Bounds", "Interval", "accesses", "sum_vars"]

def accesses(stmt: Stmt) -> list[Access]:
    """Every access of every assignment of `stmt`, left-hand sides first."""
    out: list[Access] = []
    for a in assignments(stmt):
        out.append(a.lhs)
        out.extend(a.rhs.accesses())
    return out


def sum_vars(stmt: Stmt) -> set[IndexVar]:
    """Variables bound by `Sum` nodes inside expressions (they range over their whole extent)."""
    return {v for a in assignments(stmt) for v in summed_vars(a.rhs)}


@dataclass(frozen=True, slots=True)
class Bounds:
    """Interval analysis of one statement with integer extents."""

    prov: Provenance
    ext: Mapping[IndexVar, int]
    loops: tuple[IndexVar, ...]
    free: frozenset[IndexVar]  # sum-bound variables

    @classmethod
    def of(cls, stmt: Stmt, prov: Provenance, ext: Mapping[IndexVar, int]) -> Bounds:
        return cls(prov, ext, loop_vars(stmt), frozenset(sum_vars(stmt)))

    def intervals(self, fixed: Mapping[IndexVar, int]) -> dict[IndexVar, Interval]:
        """Intervals of every variable reachable from the loops, `fixed` holding single values."""
        iv: dict[IndexVar, Interval] = {}
        for v in self.loops:
            iv[v] = (fixed[v], fixed[v] + 1) if v in fixed else (0, self.ext[v])
        for v in self.free:
            iv.setdefault(v, (0, self.ext[v]))
        changed = True
        while changed:
            changed = False
            for d in reversed(self.prov.derivations):
                new = d.bounds(iv, self.ext)
                for v, x in new.items():
                    if v not in iv:
                        iv[v] = x
                        changed = True
        return iv

    def box(self, tensor: TensorVar, shape: tuple[int, ...], accs: Iterable[Access],
            iv: Mapping[IndexVar, Interval]) -> tuple[Interval, ...]:
        """The bounding box of `tensor` over the accesses `accs`, given variable intervals."""
        lo = [n for n in shape]
        hi = [0 for _ in shape]
        touched = False
        for a in accs:
            if a.tensor != tensor:
                continue
            parts = [iv.get(v, (0, n)) for v, n in zip(a.indices, shape)]
            if any(p[0] >= p[1] for p in parts):
                continue
            touched = True
            for d, (plo, phi) in enumerate(parts):
                lo[d] = min(lo[d], plo)
                hi[d] = max(hi[d], phi)
        if not touched:
            return tuple((0, 0) for _ in shape)
        return tuple((a, b) for a, b in zip(lo, hi))
