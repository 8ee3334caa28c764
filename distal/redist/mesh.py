"""Meshes of named axes and their decomposition into prime-factor axes.

A mesh is a logical grid of devices with named axes, listed in the order the
user declared them; a device coordinate is a tuple of indices in that order.
The synthesizer works on the mesh decomposed into axes of prime size
(paper, Principle 1): an axis ``x`` of size 12 becomes the factor axes
``x:(1)2``, ``x:(2)2``, ``x:(4)3`` (Shardy's sub-axis notation ``(pre)size``,
listed major-to-minor), so that ``i_x = 6*i_(1)2 + 3*i_(2)2 + i_(4)3``.
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field

from distal.errors import TypeNotationError

__all__ = ["FactorAxis", "Mesh", "prime_factors"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def prime_factors(n: int) -> tuple[int, ...]:
    """The prime factors of ``n`` in ascending order, with multiplicity.

    >>> prime_factors(12)
    (2, 2, 3)
    """
    out: list[int] = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FactorAxis:
    """One prime factor of a mesh axis: Shardy's sub-axis ``axis:(pre)size``.

    ``index`` numbers the factor axes of a mesh; ``stride`` is the weight of
    this factor in the coordinate of its axis.
    """

    index: int
    axis: str
    pre: int
    size: int
    stride: int

    def __str__(self) -> str:
        return f"{self.axis}:({self.pre}){self.size}"


@dataclass(frozen=True, slots=True)
class Mesh:
    """A mesh of named axes, e.g. ``Mesh(x=4, y=4)``.

    >>> m = Mesh(x=4, y=6)
    >>> str(m)
    '{x: 4, y: 6}'
    >>> Mesh.parse(str(m)) == m == Mesh.parse("x=4,y=6")
    True
    >>> m.size, m.shape
    (24, (4, 6))
    >>> [str(f) for f in m.factors]
    ['x:(1)2', 'x:(2)2', 'y:(1)2', 'y:(2)3']
    """

    axes: tuple[tuple[str, int], ...]
    factors: tuple[FactorAxis, ...] = field(init=False, repr=False, compare=False)

    def __init__(self, axes: tuple[tuple[str, int], ...] | None = None, /, **sizes: int) -> None:
        items = tuple(axes) if axes is not None else ()
        items = items + tuple(sizes.items())
        if not items:
            raise TypeNotationError("expected at least one mesh axis, but found none")
        seen: set[str] = set()
        for name, size in items:
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise TypeNotationError(f"expected an axis name, but found {name!r}")
            if name in seen:
                raise TypeNotationError(f"expected distinct axis names, but found {name!r} twice")
            seen.add(name)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise TypeNotationError(f"expected a positive integer size for axis {name}, but found {size!r}")
        object.__setattr__(self, "axes", tuple((n, int(s)) for n, s in items))
        facs: list[FactorAxis] = []
        for name, size in self.axes:
            pre = 1
            for p in prime_factors(size):
                facs.append(FactorAxis(len(facs), name, pre, p, size // (pre * p)))
                pre *= p
        object.__setattr__(self, "factors", tuple(facs))

    @staticmethod
    def parse(text: str) -> Mesh:
        """Parse ``x=4,y=4`` or the paper's ``{x: 4, y: 4}`` (names may be quoted)."""
        body = text.strip()
        if body.startswith("{") and body.endswith("}"):
            body = body[1:-1]
        items: list[tuple[str, int]] = []
        if body.strip():
            for part in body.split(","):
                m = re.fullmatch(r'\s*"?([A-Za-z_][A-Za-z_0-9]*)"?\s*[:=]\s*(\d+)\s*', part)
                if m is None:
                    raise TypeNotationError(f"expected a mesh axis like x=4, but found {part.strip()!r}", text)
                items.append((m.group(1), int(m.group(2))))
        try:
            return Mesh(tuple(items))
        except TypeNotationError as e:
            raise TypeNotationError(e.message, text) from None

    def __str__(self) -> str:
        return "{" + ", ".join(f"{n}: {s}" for n, s in self.axes) + "}"

    def __repr__(self) -> str:
        """The expression that makes it: `Mesh(x=4, y=4)` (axes named like keywords as a tuple of pairs)."""
        if all(n.isidentifier() and not keyword.iskeyword(n) for n in self.names):
            return "Mesh(" + ", ".join(f"{n}={s}" for n, s in self.axes) + ")"
        return f"Mesh({self.axes!r})"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s for _, s in self.axes)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def axis_size(self, name: str) -> int:
        for n, s in self.axes:
            if n == name:
                return s
        raise TypeNotationError(f"expected an axis of mesh {self}, but found {name!r}")

    def factors_of(self, name: str) -> tuple[FactorAxis, ...]:
        """The factor axes of axis ``name``, major-to-minor."""
        self.axis_size(name)
        return tuple(f for f in self.factors if f.axis == name)

    def devices(self) -> list[tuple[int, ...]]:
        """Every device coordinate, in row-major order of the declared axes."""
        out: list[tuple[int, ...]] = [()]
        for s in self.shape:
            out = [(*c, i) for c in out for i in range(s)]
        return out

    def factor_coords(self, device: tuple[int, ...]) -> tuple[int, ...]:
        """The coordinate of ``device`` along every factor axis."""
        pos = {n: k for k, n in enumerate(self.names)}
        return tuple((device[pos[f.axis]] // f.stride) % f.size for f in self.factors)

    def shardy(self, name: str = "mesh") -> str:
        """The Shardy mesh declaration, e.g. ``sdy.mesh @mesh = <["x"=4, "y"=4]>``."""
        axes = ", ".join(f'"{n}"={s}' for n, s in self.axes)
        return f"sdy.mesh @{name} = <[{axes}]>"
