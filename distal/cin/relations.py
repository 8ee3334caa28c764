"""Scheduling relations: the `s.t.` clause of concrete index notation.

Derivation relations (divide, split, fuse, rotate, precompute) define new
index variables from old ones and form the provenance graph; annotation
relations (distribute, communicate, parallelize, substitute) tell the backend
how to run a loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from distal.notation.ast import Expr, IndexVar
from distal.sizes import Param, Size, as_expr, resolve

if TYPE_CHECKING:
    from distal.machine.grid import Grid
    from distal.notation.variable import TensorVar

__all__ = [
    "Communicate",
    "Derivation",
    "Distribute",
    "Divide",
    "Fuse",
    "Parallelize",
    "Precompute",
    "Relation",
    "Rotate",
    "Split",
    "Substitute",
]


Interval = tuple[int, int]
"""A half-open range `(lo, hi)` of values of an index variable; `lo >= hi` is empty."""

Form = tuple[IndexVar, int]
"""An affine form `block_var + offset` of a variable over a block of loops."""


def _set(vs: tuple[IndexVar, ...]) -> str:
    return "{" + ", ".join(v.name for v in vs) + "}"


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _clip(iv: Interval, n: int) -> Interval:
    lo, hi = max(iv[0], 0), min(iv[1], n)
    return (lo, hi) if lo < hi else (0, 0)


class Relation:
    """Base of scheduling relations."""

    __slots__ = ()


class Derivation(Relation):
    """A relation that derives new index variables (`derived`) from `parents`."""

    __slots__ = ()

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        raise NotImplementedError

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        raise NotImplementedError

    # What the relation means. Every derivation defines each of these; the
    # generic passes (provenance, bounds, reference, schedule) only loop over
    # derivations and call them, so a relation that forgets one breaks loudly.

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        """The variables the derived ones depend on (roots of the provenance graph flow through these)."""
        raise NotImplementedError(f"{type(self).__name__}.sources")

    def symbolic(self) -> bool:
        """Whether a size of the relation is a symbolic parameter (`dt.Param`)."""
        raise NotImplementedError(f"{type(self).__name__}.symbolic")

    def extent_expr(self, var: IndexVar, extent_of: Callable[[IndexVar], Any]) -> Any:
        """The extent of derived `var` as a sympy expression; `extent_of` gives other variables' extents."""
        raise NotImplementedError(f"{type(self).__name__}.extent_expr")

    def extents(self, ext: Mapping[IndexVar, int], bindings: Mapping[str, int] | None) -> dict[IndexVar, int]:
        """Integer extents of the derived variables, from the extents `ext` of the parents."""
        raise NotImplementedError(f"{type(self).__name__}.extents")

    def fires(self, have: set[IndexVar]) -> set[IndexVar]:
        """The variables whose values follow from the values of `have` through this relation."""
        raise NotImplementedError(f"{type(self).__name__}.fires")

    def recover(self, vals: dict[IndexVar, Any], ext: Mapping[IndexVar, int], guards: list[Any]) -> bool:
        """One recovery step: add the values that follow from `vals` (and guards); whether any was added.

        Values are integers or NumPy integer arrays, all broadcastable together.
        """
        raise NotImplementedError(f"{type(self).__name__}.recover")

    def bounds(self, iv: Mapping[IndexVar, Interval], ext: Mapping[IndexVar, int]) -> dict[IndexVar, Interval]:
        """Intervals that follow from the intervals `iv` (possibly some already in `iv`)."""
        raise NotImplementedError(f"{type(self).__name__}.bounds")

    def affine(self, ints: Mapping[IndexVar, int], forms: dict[IndexVar, Form], upper: dict[IndexVar, int],
               ext: Mapping[IndexVar, int]) -> bool | None:
        """One step of affine forms over a block: add forms (tightening `upper`); whether any was added.

        None when a block variable reaches a variable that is no affine
        form of it (the block is no box).
        """
        raise NotImplementedError(f"{type(self).__name__}.affine")

    def tiles(self) -> tuple[IndexVar, IndexVar] | None:
        """`(outer, inner)` when the derived variables tile the one parent in contiguous blocks, else None."""
        raise NotImplementedError(f"{type(self).__name__}.tiles")

    def offset_parent(self, var: IndexVar) -> tuple[IndexVar, bool] | None:
        """`(parent, clipped)` when the parent is an offset plus derived `var`, else None.

        `clipped`: the parent's range is cut by its extent (and the offset is
        known only once the parent's value is).
        """
        raise NotImplementedError(f"{type(self).__name__}.offset_parent")


class _Tiling(Derivation):
    """Shared meaning of divide and split: parent = outer * extent(inner) + inner."""

    __slots__ = ()
    parent: IndexVar
    outer: IndexVar
    inner: IndexVar

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return (self.parent,)

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.parent,)

    def fires(self, have: set[IndexVar]) -> set[IndexVar]:
        return {self.parent} if self.outer in have and self.inner in have else set()

    def recover(self, vals: dict[IndexVar, Any], ext: Mapping[IndexVar, int], guards: list[Any]) -> bool:
        if self.parent in vals or self.outer not in vals or self.inner not in vals:
            return False
        p = vals[self.outer] * ext[self.inner] + vals[self.inner]
        vals[self.parent] = p
        if ext[self.outer] * ext[self.inner] != ext[self.parent]:
            guards.append(p < ext[self.parent])
        return True

    def bounds(self, iv: Mapping[IndexVar, Interval], ext: Mapping[IndexVar, int]) -> dict[IndexVar, Interval]:
        if self.parent in iv or self.outer not in iv or self.inner not in iv:
            return {}
        (olo, ohi), (ilo, ihi) = iv[self.outer], iv[self.inner]
        if olo >= ohi or ilo >= ihi:
            return {self.parent: (0, 0)}
        ei = ext[self.inner]
        return {self.parent: _clip((olo * ei + ilo, (ohi - 1) * ei + ihi), ext[self.parent])}

    def affine(self, ints: Mapping[IndexVar, int], forms: dict[IndexVar, Form], upper: dict[IndexVar, int],
               ext: Mapping[IndexVar, int]) -> bool | None:
        if self.parent in ints or self.parent in forms:
            return False
        o, i = self.outer, self.inner
        ei = ext[i]
        if o in ints and i in forms:
            b, off = forms[i]
            forms[self.parent] = (b, ints[o] * ei + off)
        elif o in forms and i in ints and ei == 1:
            b, off = forms[o]
            forms[self.parent] = (b, off + ints[i])
        elif (o in forms and (i in forms or i in ints)) or (i in forms and o in forms):
            return None
        else:
            return False
        b, off = forms[self.parent]
        upper[b] = min(upper[b], ext[self.parent] - off)
        return True

    def tiles(self) -> tuple[IndexVar, IndexVar] | None:
        return (self.outer, self.inner)

    def offset_parent(self, var: IndexVar) -> tuple[IndexVar, bool] | None:
        return (self.parent, True) if var == self.inner else None


@dataclass(frozen=True, slots=True)
class Divide(_Tiling):
    """`divide(i, io, ii, parts)`: io in [0, parts), ii in [0, ceil(n/parts)), i = io*ceil(n/parts) + ii."""

    parent: IndexVar
    outer: IndexVar
    inner: IndexVar
    parts: Size

    def symbolic(self) -> bool:
        return isinstance(self.parts, Param)

    def extent_expr(self, var: IndexVar, extent_of: Callable[[IndexVar], Any]) -> Any:
        import sympy  # on first use (only plans with a dt.Param ask): it costs 0.3 s to import

        if var == self.outer:
            return as_expr(self.parts)
        return sympy.ceiling(extent_of(self.parent) / as_expr(self.parts))

    def extents(self, ext: Mapping[IndexVar, int], bindings: Mapping[str, int] | None) -> dict[IndexVar, int]:
        parts = resolve(self.parts, bindings)
        return {self.outer: parts, self.inner: _ceil_div(ext[self.parent], parts)}

    def __str__(self) -> str:
        return f"divide({self.parent}, {self.outer}, {self.inner}, {self.parts})"


@dataclass(frozen=True, slots=True)
class Split(_Tiling):
    """`split(i, io, ii, size)`: ii in [0, size), io in [0, ceil(n/size)), i = io*size + ii."""

    parent: IndexVar
    outer: IndexVar
    inner: IndexVar
    size: Size

    def symbolic(self) -> bool:
        return isinstance(self.size, Param)

    def extent_expr(self, var: IndexVar, extent_of: Callable[[IndexVar], Any]) -> Any:
        import sympy  # on first use (only plans with a dt.Param ask): it costs 0.3 s to import

        if var == self.inner:
            return as_expr(self.size)
        return sympy.ceiling(extent_of(self.parent) / as_expr(self.size))

    def extents(self, ext: Mapping[IndexVar, int], bindings: Mapping[str, int] | None) -> dict[IndexVar, int]:
        size = resolve(self.size, bindings)
        return {self.inner: size, self.outer: _ceil_div(ext[self.parent], size)}

    def __str__(self) -> str:
        return f"split({self.parent}, {self.outer}, {self.inner}, {self.size})"


@dataclass(frozen=True, slots=True)
class Fuse(Derivation):
    """`fuse(i, j, f)`: f in [0, n_i * n_j), i = f / n_j, j = f mod n_j."""

    outer: IndexVar
    inner: IndexVar
    fused: IndexVar

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return (self.fused,)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

    def symbolic(self) -> bool:
        return False

    def extent_expr(self, var: IndexVar, extent_of: Callable[[IndexVar], Any]) -> Any:
        return extent_of(self.outer) * extent_of(self.inner)

    def extents(self, ext: Mapping[IndexVar, int], bindings: Mapping[str, int] | None) -> dict[IndexVar, int]:
        return {self.fused: ext[self.outer] * ext[self.inner]}

    def fires(self, have: set[IndexVar]) -> set[IndexVar]:
        return {self.outer, self.inner} if self.fused in have else set()

    def recover(self, vals: dict[IndexVar, Any], ext: Mapping[IndexVar, int], guards: list[Any]) -> bool:
        if self.fused not in vals or self.outer in vals or self.inner in vals:
            return False
        vals[self.outer] = vals[self.fused] // ext[self.inner]
        vals[self.inner] = vals[self.fused] % ext[self.inner]
        return True

    def bounds(self, iv: Mapping[IndexVar, Interval], ext: Mapping[IndexVar, int]) -> dict[IndexVar, Interval]:
        if self.fused not in iv or self.outer in iv:
            return {}
        lo, hi = iv[self.fused]
        n = ext[self.inner]
        if lo >= hi:
            return {self.outer: (0, 0), self.inner: (0, 0)}
        inner = (lo % n, (hi - 1) % n + 1) if lo // n == (hi - 1) // n else (0, n)
        return {self.outer: (lo // n, (hi - 1) // n + 1), self.inner: inner}

    def affine(self, ints: Mapping[IndexVar, int], forms: dict[IndexVar, Form], upper: dict[IndexVar, int],
               ext: Mapping[IndexVar, int]) -> bool | None:
        return None if self.fused in forms else False

    def tiles(self) -> tuple[IndexVar, IndexVar] | None:
        return None

    def offset_parent(self, var: IndexVar) -> tuple[IndexVar, bool] | None:
        return None

    def __str__(self) -> str:
        return f"fuse({self.outer}, {self.inner}, {self.fused})"


@dataclass(frozen=True, slots=True)
class Rotate(Derivation):
    """`rotate(t, I, r)`: t = (r + sum(I)) mod extent(t)."""

    target: IndexVar
    by: tuple[IndexVar, ...]
    result: IndexVar

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return (self.target,)

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return (self.result,)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.target, *self.by)

    def symbolic(self) -> bool:
        return False

    def extent_expr(self, var: IndexVar, extent_of: Callable[[IndexVar], Any]) -> Any:
        return extent_of(self.target)

    def extents(self, ext: Mapping[IndexVar, int], bindings: Mapping[str, int] | None) -> dict[IndexVar, int]:
        return {self.result: ext[self.target]}

    def fires(self, have: set[IndexVar]) -> set[IndexVar]:
        return {self.target} if self.result in have and all(b in have for b in self.by) else set()

    def recover(self, vals: dict[IndexVar, Any], ext: Mapping[IndexVar, int], guards: list[Any]) -> bool:
        if self.target in vals or self.result not in vals or any(b not in vals for b in self.by):
            return False
        total = vals[self.result]
        for b in self.by:
            total = total + vals[b]
        vals[self.target] = total % ext[self.target]
        return True

    def bounds(self, iv: Mapping[IndexVar, Interval], ext: Mapping[IndexVar, int]) -> dict[IndexVar, Interval]:
        if self.target in iv or self.result not in iv or any(b not in iv for b in self.by):
            return {}
        parts = [iv[self.result], *(iv[b] for b in self.by)]
        if any(lo >= hi for lo, hi in parts):
            return {self.target: (0, 0)}
        lo = sum(p[0] for p in parts)
        hi = sum(p[1] - 1 for p in parts) + 1
        n = ext[self.target]
        if hi - lo >= n or lo // n != (hi - 1) // n:
            return {self.target: (0, n)}
        return {self.target: (lo % n, (hi - 1) % n + 1)}

    def affine(self, ints: Mapping[IndexVar, int], forms: dict[IndexVar, Form], upper: dict[IndexVar, int],
               ext: Mapping[IndexVar, int]) -> bool | None:
        return None if any(v in forms for v in (self.result, *self.by)) else False

    def tiles(self) -> tuple[IndexVar, IndexVar] | None:
        return None

    def offset_parent(self, var: IndexVar) -> tuple[IndexVar, bool] | None:
        return None

    def __str__(self) -> str:
        return f"rotate({self.target}, {_set(self.by)}, {self.result})"


@dataclass(frozen=True, slots=True)
class Precompute(Derivation):
    """`precompute(expr, vars, workspace_vars, w)`: w(vars) holds expr; each workspace var aliases its var."""

    expr: Expr
    vars: tuple[IndexVar, ...]
    workspace_vars: tuple[IndexVar, ...]
    workspace: TensorVar

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return self.vars

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return self.workspace_vars

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return self.vars

    def symbolic(self) -> bool:
        return False

    def extent_expr(self, var: IndexVar, extent_of: Callable[[IndexVar], Any]) -> Any:
        return extent_of(self.vars[self.workspace_vars.index(var)])

    def extents(self, ext: Mapping[IndexVar, int], bindings: Mapping[str, int] | None) -> dict[IndexVar, int]:
        return {w: ext[v] for v, w in zip(self.vars, self.workspace_vars)}

    def fires(self, have: set[IndexVar]) -> set[IndexVar]:
        return {v for v, w in zip(self.vars, self.workspace_vars) if w in have}

    def recover(self, vals: dict[IndexVar, Any], ext: Mapping[IndexVar, int], guards: list[Any]) -> bool:
        changed = False
        for v, w in zip(self.vars, self.workspace_vars):
            if w in vals and v not in vals:
                vals[v] = vals[w]
                changed = True
        return changed

    def bounds(self, iv: Mapping[IndexVar, Interval], ext: Mapping[IndexVar, int]) -> dict[IndexVar, Interval]:
        return {v: iv[w] for v, w in zip(self.vars, self.workspace_vars) if w in iv and v not in iv}

    def affine(self, ints: Mapping[IndexVar, int], forms: dict[IndexVar, Form], upper: dict[IndexVar, int],
               ext: Mapping[IndexVar, int]) -> bool | None:
        changed = False
        for v, w in zip(self.vars, self.workspace_vars):
            if w in forms and v not in forms and v not in ints:
                forms[v] = forms[w]
                changed = True
        return changed

    def tiles(self) -> tuple[IndexVar, IndexVar] | None:
        return None

    def offset_parent(self, var: IndexVar) -> tuple[IndexVar, bool] | None:
        return (self.vars[self.workspace_vars.index(var)], False) if var in self.workspace_vars else None

    def __str__(self) -> str:
        return (
            f"precompute({self.expr}, {_set(self.vars)}, {_set(self.workspace_vars)}, "
            f"{self.workspace.name})"
        )


@dataclass(frozen=True, slots=True)
class Distribute(Relation):
    """`distribute(vars)`: the loops run at the same time on different processors.

    `grid` (optional) is the processor grid the loops map onto at `level` of
    a hierarchical machine; `dims[n]` is the grid dimension that `vars[n]`
    runs along (by default the n-th).
    """

    vars: tuple[IndexVar, ...]
    grid: Grid | None = None
    level: int = 0
    dims: tuple[int, ...] | None = None

    def grid_dims(self) -> tuple[int, ...]:
        return self.dims if self.dims is not None else tuple(range(len(self.vars)))

    def __str__(self) -> str:
        if self.grid is None:
            return f"distribute({_set(self.vars)})"
        return f"distribute({_set(self.vars)}, {self.grid!r})"


@dataclass(frozen=True, slots=True)
class Communicate(Relation):
    """`communicate(T, v)`: the data of T used under one iteration of v is fetched at v."""

    tensors: tuple[TensorVar, ...]
    var: IndexVar

    def __str__(self) -> str:
        names = ", ".join(t.name for t in self.tensors)
        if len(self.tensors) > 1:
            names = "{" + names + "}"
        return f"communicate({names}, {self.var})"


@dataclass(frozen=True, slots=True)
class Parallelize(Relation):
    """`parallelize(v, unit)`: the loop runs in parallel on `unit` of one processor."""

    var: IndexVar
    unit: str

    def __str__(self) -> str:
        return f"parallelize({self.var}, {self.unit})"


@dataclass(frozen=True, slots=True)
class Substitute(Relation):
    """`substitute(vars, leaf)`: the loops over vars are one call of a leaf kernel."""

    vars: tuple[IndexVar, ...]
    leaf: Any

    def __str__(self) -> str:
        return f"substitute({_set(self.vars)}, {self.leaf})"
