"""The provenance graph of derived index variables.

Derivation relations (divide, split, fuse, rotate, precompute) define new
variables from old ones. The graph computes every variable's extent
(symbolically with sympy, or as integers once parameters are bound) and
recovers the values of parent variables from the values of the loop
variables, together with the guards (`i < extent(i)`) that cut the remainder
iterations of divide and split when extents do not divide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from distal.cin.relations import Derivation, Form
from distal.errors import ScheduleError
from distal.notation.ast import IndexVar
from distal.sizes import Param, Size, as_expr, resolve

__all__ = ["Provenance"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """Original extents plus the derivations applied to them, in order."""

    base: tuple[tuple[IndexVar, Size], ...]
    derivations: tuple[Derivation, ...]

    @classmethod
    def of(cls, base: Mapping[IndexVar, Size], derivations: tuple[Derivation, ...] = ()) -> Provenance:
        return cls(tuple(base.items()), derivations)

    def with_derivation(self, d: Derivation) -> Provenance:
        return Provenance(self.base, (*self.derivations, d))

    # -- structure ---------------------------------------------------------------

    @property
    def originals(self) -> tuple[IndexVar, ...]:
        return tuple(v for v, _ in self.base)

    def variables(self) -> tuple[IndexVar, ...]:
        """Every variable: originals first, then derived ones in order of derivation."""
        out = list(self.originals)
        for d in self.derivations:
            out.extend(v for v in d.derived if v not in out)
        return tuple(out)

    def producer(self, var: IndexVar) -> Derivation | None:
        """The derivation that defined `var`, or None for an original variable."""
        for d in self.derivations:
            if var in d.derived:
                return d
        return None

    def roots(self, var: IndexVar) -> frozenset[IndexVar]:
        """The original variables that `var` is derived from."""
        d = self.producer(var)
        if d is None:
            return frozenset({var})
        out: frozenset[IndexVar] = frozenset()
        for p in d.sources:
            out |= self.roots(p)
        return out

    # -- extents -----------------------------------------------------------------

    def extent_expr(self, var: IndexVar) -> Any:
        """The extent of `var` as a sympy expression."""
        for v, s in self.base:
            if v == var:
                return as_expr(s)
        d = self.producer(var)
        if d is None:
            raise ScheduleError(f"expected a known index variable, but found {var}")
        return d.extent_expr(var, self.extent_expr)

    def extents(self, bindings: Mapping[str, int] | None = None) -> dict[IndexVar, int]:
        """Integer extents of every variable, parameters bound from `bindings`."""
        ext: dict[IndexVar, int] = {v: resolve(s, bindings) for v, s in self.base}
        for d in self.derivations:
            ext.update(d.extents(ext, bindings))
        return ext

    # -- recovery ----------------------------------------------------------------

    def determined(self, known: frozenset[IndexVar] | set[IndexVar]) -> frozenset[IndexVar]:
        """Every variable whose value follows from the values of `known`."""
        have = set(known)
        changed = True
        while changed:
            changed = False
            for d in reversed(self.derivations):
                new = d.fires(have)
                if new - have:
                    have |= new
                    changed = True
        return frozenset(have)

    def recover(
        self, values: Mapping[IndexVar, Any], ext: Mapping[IndexVar, int]
    ) -> tuple[dict[IndexVar, Any], list[Any]]:
        """Values of every determined variable, and the guards that must hold.

        `values` maps loop variables to integers or NumPy integer arrays (all
        broadcastable together). Each guard is a boolean (array) that is false
        where an iteration of a divided or split loop falls past the parent's
        extent.
        """
        vals: dict[IndexVar, Any] = dict(values)
        guards: list[Any] = []
        changed = True
        while changed:
            changed = False
            for d in reversed(self.derivations):
                if d.recover(vals, ext, guards):
                    changed = True
        return vals, guards

    def affine_forms(
        self, ints: Mapping[IndexVar, int], block: Sequence[IndexVar], ext: Mapping[IndexVar, int]
    ) -> tuple[dict[IndexVar, Form], dict[IndexVar, int]] | None:
        """Affine forms (block variable, offset) of the variables a block of loops reaches, and an upper bound
        per block variable (it stays inside every extent it reaches).

        `ints` holds the integer values recovered outside the block. None when
        a block variable reaches a variable that is no affine form of it
        (through fuse or rotate, or two block variables meeting).
        """
        forms: dict[IndexVar, Form] = {b: (b, 0) for b in block}
        upper = {b: ext[b] for b in block}
        changed = True
        while changed:
            changed = False
            for d in reversed(self.derivations):
                step = d.affine(ints, forms, upper, ext)
                if step is None:
                    return None
                changed = changed or step
        return forms, upper

    def extents_or_none(self) -> dict[IndexVar, int] | None:
        """Integer extents when no size is symbolic, else None."""
        if any(isinstance(s, Param) for _, s in self.base) or any(d.symbolic() for d in self.derivations):
            return None
        return self.extents()

    def block_points(
        self, env: Mapping[IndexVar, int], block: list[IndexVar], ext: Mapping[IndexVar, int]
    ) -> tuple[dict[IndexVar, Any], int] | None:
        """Every point of a block of loops at once, as index arrays.

        `env` fixes the loops outside the block; the block's loops run over
        their extents. Returns the values of every determined variable (arrays
        over the points, or integers) with the points past an extent (the
        guards of divide and split) dropped, and the number of points left;
        None when no point is left.
        """
        exts = [ext[v] for v in block]
        npts = math.prod(exts)
        if npts == 0:
            return None
        values: dict[IndexVar, Any] = dict(env)
        if block:
            grid = np.indices(exts).reshape(len(exts), -1)
            values.update(zip(block, grid))
        vals, guards = self.recover(values, ext)
        mask: Any = True
        for g in guards:
            mask = mask & g
        if mask is not True:
            mask = np.broadcast_to(np.asarray(mask), (npts,))
            if not mask.any():
                return None
            if not mask.all():
                vals = {v: (x[mask] if isinstance(x, np.ndarray) else x) for v, x in vals.items()}
                npts = int(mask.sum())
        return vals, npts
