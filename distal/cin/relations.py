"""Scheduling relations: the `s.t.` clause of concrete index notation.

Derivation relations (divide, split, fuse, rotate, precompute) define new
index variables from old ones and form the provenance graph; annotation
relations (distribute, communicate, parallelize, substitute) tell the backend
how to run a loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from distal.notation.ast import Expr, IndexVar
from distal.sizes import Size

if TYPE_CHECKING:
    from distal.format.machine import Grid
    from distal.notation.tensor import Tensor

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


def _set(vs: tuple[IndexVar, ...]) -> str:
    return "{" + ", ".join(v.name for v in vs) + "}"


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


@dataclass(frozen=True, slots=True)
class Divide(Derivation):
    """`divide(i, io, ii, parts)`: io in [0, parts), ii in [0, ceil(n/parts)), i = io*ceil(n/parts) + ii."""

    parent: IndexVar
    outer: IndexVar
    inner: IndexVar
    parts: Size

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return (self.parent,)

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

    def __str__(self) -> str:
        return f"divide({self.parent}, {self.outer}, {self.inner}, {self.parts})"


@dataclass(frozen=True, slots=True)
class Split(Derivation):
    """`split(i, io, ii, size)`: ii in [0, size), io in [0, ceil(n/size)), i = io*size + ii."""

    parent: IndexVar
    outer: IndexVar
    inner: IndexVar
    size: Size

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return (self.parent,)

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

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

    def __str__(self) -> str:
        return f"rotate({self.target}, {_set(self.by)}, {self.result})"


@dataclass(frozen=True, slots=True)
class Precompute(Derivation):
    """`precompute(expr, vars, workspace_vars, w)`: w(vars) holds expr; each workspace var aliases its var."""

    expr: Expr
    vars: tuple[IndexVar, ...]
    workspace_vars: tuple[IndexVar, ...]
    workspace: Tensor

    @property
    def parents(self) -> tuple[IndexVar, ...]:
        return self.vars

    @property
    def derived(self) -> tuple[IndexVar, ...]:
        return self.workspace_vars

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

    tensors: tuple[Tensor, ...]
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
