"""Sizes: plain integers, symbolic parameters and machine dimensions.

A size appears in `divide`, `split`, grids and tensor shapes. It is an `int`, a
`Param` (a sympy symbol bound at compile time) or a `MachineDim` (`m.x`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from distal.errors import DistalError

__all__ = ["MachineDim", "Param", "Size", "as_expr", "resolve"]


@dataclass(frozen=True, slots=True)
class Param:
    """A symbolic size, bound to an integer when a schedule is compiled.

    >>> gx = Param("gx")
    >>> str(gx)
    'gx'
    """

    name: str

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise DistalError(f"expected an identifier as parameter name, but found {self.name!r}")

    @property
    def symbol(self) -> Any:
        import sympy  # imported on first use: it costs 0.3 s, and only parameters need it

        return sympy.Symbol(self.name, integer=True, positive=True)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class MachineDim:
    """One dimension of a machine grid (`m.x`); usable wherever a size is.

    Its `size` is a `Param` when the grid is symbolic (`Grid(Param("gx"))`):
    then it binds like the parameter, and `int()` refuses it until bound.
    """

    name: str
    size: int | Param
    level: int = 0

    def __str__(self) -> str:
        return f"m.{self.name}" if self.level == 0 else f"m.{self.name}@{self.level}"

    def __int__(self) -> int:
        if isinstance(self.size, Param):
            raise DistalError(
                f"expected a concrete machine dimension, but {self} has symbolic size {self.size}; "
                f"bind it first ({self.size}=... at compile)"
            )
        return self.size

    def __index__(self) -> int:
        return int(self)


Size = int | Param | MachineDim


def as_expr(size: Size) -> Any:
    """The sympy expression of a size."""
    if isinstance(size, Param):
        return size.symbol
    if isinstance(size, MachineDim):
        return as_expr(size.size)
    if isinstance(size, bool) or not isinstance(size, int):
        raise DistalError(f"expected a size (int, Param or machine dimension), but found {size!r}")
    import sympy

    return sympy.Integer(size)


def resolve(size: Size, bindings: Mapping[str, int] | None = None) -> int:
    """The integer value of a size, binding parameters from `bindings`."""
    if isinstance(size, MachineDim):
        return resolve(size.size, bindings)
    if isinstance(size, Param):
        if bindings is None or size.name not in bindings:
            raise DistalError(f"parameter {size.name} is not bound; pass {size.name}=... to compile")
        value = bindings[size.name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DistalError(f"expected a positive integer for {size.name}, but found {value!r}")
        return value
    if isinstance(size, bool) or not isinstance(size, int):
        raise DistalError(f"expected a size (int, Param or machine dimension), but found {size!r}")
    return size
