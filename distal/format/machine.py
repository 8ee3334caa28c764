"""Abstract machines: (hierarchical) grids of processors with named dimensions.

A `Machine` is one `Grid` per level (nodes, then processors in a node). Each
grid's dimensions are named x, y, z, w, ... unless names are given. `m.x` is a
`MachineDim` usable wherever a size is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from distal.errors import MachineError
from distal.sizes import MachineDim

__all__ = ["DEFAULT_NAMES", "Grid", "Machine"]

DEFAULT_NAMES = ("x", "y", "z", "w", "v", "u", "t", "s")


@dataclass(frozen=True, slots=True, init=False)
class Grid:
    """An n-dimensional grid of abstract processors.

    >>> Grid(2, 2)
    Grid(2, 2)
    >>> Grid(2, 2).names
    ('x', 'y')
    """

    dims: tuple[int, ...]
    names: tuple[str, ...]

    def __init__(self, *dims: int, names: tuple[str, ...] | str | None = None) -> None:
        if not dims:
            raise MachineError("expected at least one grid dimension, but found none")
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, int) or d < 1:
                raise MachineError(f"expected positive integer grid sizes, but found {d!r}", dims)
        if names is None:
            if len(dims) > len(DEFAULT_NAMES):
                raise MachineError(f"grids have at most {len(DEFAULT_NAMES)} unnamed dimensions")
            names = DEFAULT_NAMES[: len(dims)]
        if isinstance(names, str):
            names = tuple(names)
        if len(names) != len(dims):
            raise MachineError(
                f"expected {len(dims)} dimension names, but found {len(names)}", names
            )
        if len(set(names)) != len(names):
            raise MachineError(f"expected distinct dimension names, but found {names}")
        for n in names:
            if not n.isidentifier():
                raise MachineError(f"expected identifiers as dimension names, but found {n!r}")
        object.__setattr__(self, "dims", tuple(dims))
        object.__setattr__(self, "names", tuple(names))

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def __repr__(self) -> str:
        args = ", ".join(str(d) for d in self.dims)
        if self.names != DEFAULT_NAMES[: len(self.dims)]:
            args += f", names={self.names!r}"
        return f"Grid({args})"


@dataclass(frozen=True, slots=True, init=False)
class Machine:
    """A machine: one grid per level of its hierarchy.

    >>> m = Machine(Grid(2, 2))
    >>> m.x
    MachineDim(name='x', size=2, level=0)
    >>> Machine(Grid(2, 2), Grid(4)).size
    16
    """

    grids: tuple[Grid, ...]

    def __init__(self, *grids: Grid) -> None:
        if not grids:
            raise MachineError("expected at least one grid, but found none")
        for g in grids:
            if not isinstance(g, Grid):
                raise MachineError(f"expected a Grid per machine level, but found {g!r}")
        object.__setattr__(self, "grids", tuple(grids))

    @property
    def levels(self) -> int:
        return len(self.grids)

    @property
    def grid(self) -> Grid:
        """The top-level grid."""
        return self.grids[0]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.grids[0].dims

    @property
    def ndim(self) -> int:
        return self.grids[0].ndim

    @property
    def size(self) -> int:
        return math.prod(g.size for g in self.grids)

    def dim(self, name: str, level: int = 0) -> MachineDim:
        grid = self.grids[level]
        if name not in grid.names:
            raise MachineError(
                f"expected a dimension of {grid.names} at level {level}, but found {name!r}"
            )
        return MachineDim(name, grid.dims[grid.names.index(name)], level)

    def dims(self, level: int = 0) -> tuple[MachineDim, ...]:
        return tuple(self.dim(n, level) for n in self.grids[level].names)

    def __getattr__(self, name: str) -> MachineDim:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            grids = object.__getattribute__(self, "grids")
        except AttributeError:
            raise AttributeError(name) from None
        if name in grids[0].names:
            return self.dim(name)
        raise AttributeError(f"machine has no dimension {name!r}; its dimensions are {grids[0].names}")

    def __repr__(self) -> str:
        return f"Machine({', '.join(repr(g) for g in self.grids)})"
