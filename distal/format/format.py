"""Formats: a tensor distribution per machine level, and their semantics P and F (paper 3.2).

A `Format` pairs tensor distribution notation with a `Machine`: one
`Distribution` per machine level. Its meaning is the composition of

* P, the partitioning function, `fmt.color(coord, shape)`: a tensor
  coordinate to a color; and
* F, the placement, `fmt.owners(color)`: a color to the set of processors
  that hold it; `fmt.processors(coord, shape)` is F(P(coord)).

Partitioning is blocked: a tensor dimension of extent n partitioned over a
machine dimension of size g is cut into tiles of ceil(n/g) consecutive
coordinates, the last ones smaller or empty.

Hierarchy. Level l+1 partitions every tile of level l the same way, with the
nominal tile extent t of level l (not the clipped extent of an edge tile):
tiles of ceil(t/g) inside each tile, clipped to the tensor. This is what
lowering each level with `divide` gives (paper section 5.3). A color of a
hierarchical format is the colors of the levels concatenated (level 0
first), and a processor is named by its coordinates at every level
concatenated, as in `Machine.coords()`.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from distal._text import split_top_level
from distal.errors import DistalError, FormatError
from distal.format.distribution import BROADCAST, Distribution
from distal.format.picture import figure, png_bytes, save
from distal.machine.grid import Coord, Machine

if TYPE_CHECKING:
    from os import PathLike

    from distal.notation.tensor_base import TensorBase
    from distal.notation.variable import TensorVar

__all__ = ["Bounds", "Color", "Format"]

#: A color: a point in the partitioning machine dimensions (levels concatenated).
Color = tuple[int, ...]

#: Per tensor dimension, the half-open range [lo, hi) of a tile (lo == hi when empty).
Bounds = tuple[tuple[int, int], ...]


def _split_levels(text: str) -> list[str]:
    """`[a, b]` -> ['a', 'b'], splitting on commas outside parentheses."""
    inner = text.strip()[1:-1]
    if not inner.strip():
        return []
    return [p.strip() for p in split_top_level(inner)]


def _ints(values: Sequence[Any]) -> tuple[int, ...] | None:
    """The values as Python ints (NumPy integers welcome), or None if one is not an integer."""
    out = []
    for v in values:
        if isinstance(v, bool):
            return None
        try:
            out.append(operator.index(v))
        except TypeError:
            return None
    return tuple(out)


@dataclass(frozen=True, slots=True, init=False)
class Format:
    """How a tensor is distributed on a machine: one `Distribution` per machine level.

    >>> from distal.machine.grid import Grid, Machine
    >>> m = Machine(Grid(2, 2, 2))
    >>> fmt = Format("xy -> xy*", m)
    >>> fmt.color((0, 1), (2, 2))
    (0, 1)
    >>> sorted(fmt.processors((0, 1), (2, 2)))
    [(0, 1, 0), (0, 1, 1)]
    >>> str(Format(["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(4))))
    '[xy -> xy, xy -> x]'
    """

    levels: tuple[Distribution, ...]
    machine: Machine

    def __init__(
        self, spec: str | Distribution | Sequence[str | Distribution], machine: Machine
    ) -> None:
        if not isinstance(machine, Machine):
            raise FormatError(f"expected a Machine to distribute onto, but found {machine!r}", spec)
        if isinstance(spec, str) and spec.strip().startswith("["):
            if not spec.strip().endswith("]"):
                raise FormatError("expected a closing ] after the list of distributions", f"'{spec}'")
            spec = _split_levels(spec)
        items: list[str | Distribution]
        if isinstance(spec, str | Distribution):
            items = [spec]
        elif isinstance(spec, list | tuple):
            items = list(spec)
        else:
            raise FormatError(
                f"expected distribution text ('xy -> xy') or a list of them, one per machine level, "
                f"but found {spec!r}"
            )
        hierarchical = len(items) != 1
        where = "[" + ", ".join(str(s) for s in items) + "]" if hierarchical else f"'{items[0]}'"
        levels: list[Distribution] = []
        for level, item in enumerate(items):
            if isinstance(item, Distribution):
                levels.append(item)
            elif isinstance(item, str):
                try:
                    levels.append(Distribution.parse(item))
                except FormatError as exc:
                    if not hierarchical:
                        raise
                    raise FormatError(f"{exc.message} (level {level})", where) from None
            else:
                raise FormatError(f"expected distribution text at level {level}, but found {item!r}", where)
        if len(levels) != machine.levels:
            raise FormatError(
                f"expected {machine.levels} distribution(s), one per level of {machine!r}, "
                f"but found {len(levels)}",
                where,
            )
        for level, dist in enumerate(levels):
            dist.check_grid(machine.grids[level].sizes, level, where)
            if dist.ndim != levels[0].ndim:
                raise FormatError(
                    f"expected every level to name {levels[0].ndim} tensor dimension(s) like level 0 "
                    f"'{levels[0]}', but level {level} '{dist}' names {dist.ndim}",
                    where,
                )
        object.__setattr__(self, "levels", tuple(levels))
        object.__setattr__(self, "machine", machine)

    # -- text ------------------------------------------------------------------

    def __str__(self) -> str:
        if len(self.levels) == 1:
            return str(self.levels[0])
        return "[" + ", ".join(str(d) for d in self.levels) + "]"

    def __repr__(self) -> str:
        return f"Format({str(self)!r}, {self.machine!r})"

    def _repr_png_(self) -> bytes | None:
        """Notebook display: the picture of `distal.format.picture.draw` (None where it cannot be drawn)."""
        try:
            return png_bytes(self)
        except DistalError:
            return None

    def picture(self, shape: Sequence[int] | None = None, path: str | PathLike[str] | None = None, *,
                title: str | None = None) -> Any:
        """Where the tiles of a tensor of `shape` live, as a matplotlib `Figure`; also written as a PNG to `path`.

        `shape` defaults to two elements per tile along every dimension; a
        tensor of order 3 or more is drawn as slices (`distal.format.picture`).
        Needs matplotlib (`pip install 'distal[docs]'`); without it, a
        `DistalError` says how to install it.

        >>> from distal.machine.grid import Grid, Machine
        >>> Format("xy -> xy", Machine(Grid(2, 2))).picture((4, 4)).axes[0].get_title()
        'tensor 4x4: colors (P)'
        """
        fig = figure(self, shape, title=title)
        if path is not None:
            save(fig, path)
        return fig

    # -- symbolic machines -------------------------------------------------------

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters among its machine's grid sizes (empty when the machine is concrete)."""
        return self.machine.params

    def bound(self, bindings: Mapping[str, int]) -> Format:
        """The same distribution on the machine with its parameters bound (`Machine.bound`).

        >>> from distal.machine.grid import Grid, Machine
        >>> from distal.sizes import Param
        >>> fmt = Format("xy -> xy", Machine(Grid(Param("gx"), Param("gy"))))
        >>> fmt, fmt.bound({"gx": 2, "gy": 1})
        (Format('xy -> xy', Machine(Grid(gx, gy))), Format('xy -> xy', Machine(Grid(2, 1))))
        """
        if not self.params:
            return self
        return Format(list(self.levels), self.machine.bound(bindings))

    # -- structure -------------------------------------------------------------

    @property
    def order(self) -> int:
        """The order (number of dimensions) of the tensors this format distributes."""
        return self.levels[0].ndim

    @property
    def distribution(self) -> Distribution:
        """The top-level distribution."""
        return self.levels[0]

    def check_tensor(self, tensor: TensorBase | TensorVar) -> None:
        """Refuse a tensor whose order differs from |X| (called by `Tensor` when given this format)."""
        if tensor.order != self.order:
            raise FormatError(
                f"expected a {self.order}-dimensional tensor for format '{self}', but found "
                f"{tensor.name} with {tensor.order} dimension(s), shape {tensor.shape_text()}",
                repr(self),
            )

    def color_shape(self, level: int | None = None) -> tuple[int, ...]:
        """The extent of each color component: the partitioning grid dimensions, levels concatenated.

        >>> from distal.machine.grid import Grid, Machine
        >>> Format("xy -> yx0", Machine(Grid(2, 3, 2))).color_shape()
        (2, 3)
        """
        out: list[int] = []
        for lv, dist in enumerate(self.levels[: self._last(level) + 1]):
            dims = self.machine.grids[lv].dims
            out.extend(dims[k] for k in dist.partitioned)
        return tuple(out)

    def colors(self, level: int | None = None) -> Iterator[Color]:
        """Every color, row-major (level 0 outermost)."""
        return itertools.product(*(range(g) for g in self.color_shape(level)))

    # -- P: coordinates to colors ----------------------------------------------

    def _last(self, level: int | None) -> int:
        if level is None:
            return len(self.levels) - 1
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level < len(self.levels):
            raise FormatError(f"expected a level in [0, {len(self.levels)}), but found {level!r}", repr(self))
        return level

    def _shape(self, shape: Sequence[Any]) -> tuple[int, ...]:
        try:
            dims = tuple(int(n) for n in shape)
        except (TypeError, ValueError):
            raise FormatError(
                f"expected a tensor shape of integers for format '{self}', but found {shape!r}"
            ) from None
        if len(dims) != self.order or any(n < 0 for n in dims):
            raise FormatError(
                f"expected a shape of {self.order} non-negative extent(s) for format '{self}', "
                f"but found {tuple(shape)!r}"
            )
        return dims

    def _tile_shapes(self, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The nominal tile shape after each level."""
        out = []
        extent = shape
        for lv, dist in enumerate(self.levels):
            dims = self.machine.grids[lv].dims
            tile = list(extent)
            for d in range(self.order):
                k = dist.machine_dim_of(d)
                if k is not None:
                    tile[d] = -(-extent[d] // dims[k])
            extent = tuple(tile)
            out.append(extent)
        return out

    def tile_shape(self, shape: Sequence[int], level: int = 0) -> tuple[int, ...]:
        """The nominal shape of a tile after levels 0..`level`: ceil(n/g) where partitioned, n elsewhere.

        Tiles at the edge of the tensor are smaller (or empty); see `tiles`.

        >>> from distal.machine.grid import Grid, Machine
        >>> Format("xy -> x", Machine(Grid(3))).tile_shape((10, 4))
        (4, 4)
        """
        return self._tile_shapes(self._shape(shape))[self._last(level)]

    def level_colors(self, coord: Sequence[int], shape: Sequence[int]) -> tuple[Color, ...]:
        """P level by level: the color of `coord` at each level (over that level's partitioning dims).

        >>> from distal.machine.grid import Grid, Machine
        >>> Format(["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(2))).level_colors((3, 1), (4, 4))
        ((1, 0), (1,))
        """
        dims = self._shape(shape)
        point = _ints(coord)
        if point is None or len(point) != self.order or not all(0 <= c < n for c, n in zip(point, dims)):
            raise FormatError(
                f"expected a coordinate inside the tensor of shape {dims} for format '{self}', "
                f"but found {tuple(coord)!r}"
            )
        tiles = self._tile_shapes(dims)
        local = list(point)
        out = []
        for lv, dist in enumerate(self.levels):
            color = []
            for k in dist.partitioned:
                d = dist.tensor_dim_of(k)
                assert d is not None
                c = local[d] // tiles[lv][d]
                local[d] -= c * tiles[lv][d]
                color.append(c)
            out.append(tuple(color))
        return tuple(out)

    def color(self, coord: Sequence[int], shape: Sequence[int]) -> Color:
        """P: the color of tensor coordinate `coord` in a tensor of `shape`.

        A color is a point in the machine dimensions that partition the tensor
        (the paper's p), in machine-dimension order; for a hierarchical format
        the colors of all levels are concatenated, level 0 first.

        >>> from distal.machine.grid import Grid, Machine
        >>> Format("xy -> yx", Machine(Grid(2, 2))).color((0, 1), (2, 2))
        (1, 0)
        """
        return tuple(c for level in self.level_colors(coord, shape) for c in level)

    # -- F: colors to processors -----------------------------------------------

    def owners(self, color: Sequence[int]) -> frozenset[Coord]:
        """F: the processors holding the tiles of `color` (coordinates over all levels, concatenated).

        Partitioning dimensions take the color's value, fixed dimensions their
        index, broadcast dimensions every index.

        >>> from distal.machine.grid import Grid, Machine
        >>> sorted(Format("xy -> x*", Machine(Grid(2, 2))).owners((1,)))
        [(1, 0), (1, 1)]
        >>> Format("xy -> xy0", Machine(Grid(2, 2, 2))).owners((1, 0))
        frozenset({(1, 0, 0)})
        """
        shape = self.color_shape()
        point = _ints(color)
        if point is None or len(point) != len(shape) or not all(0 <= c < g for c, g in zip(point, shape)):
            raise FormatError(
                f"expected a color in a grid of shape {shape} for format '{self}', but found {tuple(color)!r}"
            )
        choices: list[range | tuple[int, ...]] = []
        at = 0
        for lv, dist in enumerate(self.levels):
            dims = self.machine.grids[lv].dims
            for k, y in enumerate(dist.machine_names):
                if y == BROADCAST:
                    choices.append(range(dims[k]))
                elif isinstance(y, int):
                    choices.append((y,))
                else:
                    choices.append((point[at],))
                    at += 1
        return frozenset(itertools.product(*choices))

    def processors(self, coord: Sequence[int], shape: Sequence[int]) -> frozenset[Coord]:
        """F(P(coord)): the processors holding tensor coordinate `coord`.

        >>> from distal.machine.grid import Grid, Machine
        >>> sorted(Format("xy -> xy*", Machine(Grid(2, 2, 2))).processors((1, 0), (2, 2)))
        [(1, 0, 0), (1, 0, 1)]
        """
        return self.owners(self.color(coord, shape))

    # -- tiles -------------------------------------------------------------------

    def tiles(self, shape: Sequence[int], level: int | None = None) -> Iterator[tuple[Color, Bounds]]:
        """Every color with the bounds of its tile, empty tiles included (lo == hi where empty).

        `level` stops after that level (colors of levels 0..level); by default
        the leaves. Bounds are global: per tensor dimension, [lo, hi).

        >>> from distal.machine.grid import Grid, Machine
        >>> list(Format("x -> x", Machine(Grid(3))).tiles((4,)))
        [((0,), ((0, 2),)), ((1,), ((2, 4),)), ((2,), ((4, 4),))]
        """
        dims = self._shape(shape)
        last = self._last(level)
        tiles = self._tile_shapes(dims)
        for color in self.colors(last):
            bounds = [(0, n) for n in dims]
            at = 0
            for lv, dist in enumerate(self.levels[: last + 1]):
                for k in dist.partitioned:
                    d = dist.tensor_dim_of(k)
                    assert d is not None
                    lo, hi = bounds[d]
                    start = min(lo + color[at] * tiles[lv][d], hi)
                    bounds[d] = (start, min(start + tiles[lv][d], hi))
                    at += 1
            yield color, tuple(bounds)

    def tile_of(self, color: Sequence[int], shape: Sequence[int]) -> Bounds:
        """The bounds of the tile of `color` (a leaf color) in a tensor of `shape`."""
        wanted = tuple(color)
        for c, bounds in self.tiles(shape):
            if c == wanted:
                return bounds
        raise FormatError(
            f"expected a color in a grid of shape {self.color_shape()} for format '{self}', "
            f"but found {wanted!r}"
        )

    def boxes(self, shape: Sequence[int]) -> dict[Coord, tuple[Bounds, ...]]:
        """Which boxes of a tensor of `shape` each processor holds: F(P) over the whole tensor (paper 5.3).

        The one answer to "who holds what" that placement, explain's traffic,
        the time model, redistribution and the runtime's device blocks read.
        Every processor of the machine is a key; one holding nothing (off a
        fixed face, or past a non-dividing edge) maps to `()`. Along
        broadcast dimensions several processors hold the same box. Bounds are
        global, per tensor dimension [lo, hi), and never empty.

        >>> from distal.machine.grid import Grid, Machine
        >>> Format("x -> x0", Machine(Grid(2, 2))).boxes((3,))
        {(0, 0): (((0, 2),),), (0, 1): (), (1, 0): (((2, 3),),), (1, 1): ()}
        """
        held: dict[Coord, list[Bounds]] = {c: [] for c in self.machine.coords()}
        for color, bounds in self.tiles(shape):
            if any(hi <= lo for lo, hi in bounds):
                continue
            for p in sorted(self.owners(color)):
                held[p].append(bounds)
        return {p: tuple(b) for p, b in held.items()}

    def local_size(self, shape: Sequence[int]) -> dict[Coord, int]:
        """The number of tensor elements each processor holds (0 for processors holding nothing)."""
        return {p: sum(math.prod(hi - lo for lo, hi in b) for b in boxes) for p, boxes in self.boxes(shape).items()}
