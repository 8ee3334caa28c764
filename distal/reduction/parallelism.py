"""Parallelism placements (section 3.1) and the synthesis hierarchy (section 3.4 (d)).

A `Placement` is a parallelism matrix: row i factors parallelism axis i over the
system levels, column j multiplies to level j's cardinality. The synthesis
hierarchy keeps, per system level, the product of the reduction axes' factors
(the paper collapses factors of one hardware level) and drops levels whose
product is 1; a `root` of cardinality 1 sits above it.

A `DeviceLayout` says where the devices of the synthesis hierarchy are: replica r of
the reduction (one per combination of the non-reduction axes) puts
synthesis-device i on physical device `replicas[r][i]`. Programs are
synthesized once over the synthesis hierarchy and lowered through the layout.

Inside one system level, the level's index is row-major over the parallelism
axes (axis 0 varies slowest); the paper leaves this order open.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from distal.errors import ReductionError
from distal.reduction.system import System

__all__ = [
    "DeviceLayout",
    "Placement",
    "SynthesisHierarchy",
    "enumerate_placements",
    "layout_from_groups",
]


@dataclass(frozen=True, slots=True)
class SynthesisHierarchy:
    """Named levels with cardinalities under an implicit `(root, 1)`.

    `system_levels[k]` is the index of the system level that level k stands for.

    >>> h = SynthesisHierarchy(("node", "gpu"), (2, 16), (0, 1))
    >>> str(h), h.size
    ('[(root, 1), (node, 2), (gpu, 16)]', 32)
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    system_levels: tuple[int, ...]

    def __post_init__(self) -> None:
        if not len(self.names) == len(self.sizes) == len(self.system_levels):
            raise ReductionError(
                f"expected one size and one system level per name, but found "
                f"{len(self.names)} names, {len(self.sizes)} sizes, {len(self.system_levels)} levels"
            )
        if len(set(self.names)) != len(self.names) or "root" in self.names:
            raise ReductionError(
                f"expected distinct level names other than 'root', but found {list(self.names)}"
            )
        for n, s in zip(self.names, self.sizes):
            if isinstance(s, bool) or not isinstance(s, int) or s < 1:
                raise ReductionError(f"expected a positive size for level {n}, but found {s!r}")

    @property
    def size(self) -> int:
        return math.prod(self.sizes)

    @property
    def all_names(self) -> tuple[str, ...]:
        """`root` followed by the level names."""
        return ("root", *self.names)

    def __str__(self) -> str:
        inner = "".join(f", ({n}, {s})" for n, s in zip(self.names, self.sizes))
        return f"[(root, 1){inner}]"


@dataclass(frozen=True, slots=True)
class DeviceLayout:
    """Where the synthesis hierarchy's devices sit in a system, once per replica."""

    system: System
    hierarchy: SynthesisHierarchy
    replicas: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        seen: set[int] = set()
        for rep in self.replicas:
            assert len(rep) == self.hierarchy.size
            assert not seen.intersection(rep)
            seen.update(rep)

    @property
    def devices(self) -> tuple[int, ...]:
        """Every physical device taking part, replica by replica."""
        return tuple(d for rep in self.replicas for d in rep)

    def groups(self) -> tuple[tuple[int, ...], ...]:
        """The reduction groups: the physical devices of each replica."""
        return self.replicas


@dataclass(frozen=True, slots=True)
class Placement:
    """A parallelism matrix for parallelism axes on a system.

    >>> from distal.reduction.system import a100_system
    >>> p = Placement(a100_system(2), ((2, 1), (1, 16)), (0,))
    >>> str(p), p.axes
    ('[[2 1] [1 16]]', (2, 16))
    >>> str(p.hierarchy())
    '[(root, 1), (node, 2)]'
    """

    system: System
    matrix: tuple[tuple[int, ...], ...]
    reduction_axes: tuple[int, ...]

    def __post_init__(self) -> None:
        h = self.system.cardinalities
        if not self.matrix or any(len(row) != len(h) for row in self.matrix):
            raise ReductionError(
                f"expected a parallelism matrix with {len(h)} columns per row, "
                f"but found {self.matrix!r}"
            )
        for j, card in enumerate(h):
            col = math.prod(row[j] for row in self.matrix)
            if col != card:
                raise ReductionError(
                    f"expected column {j} of the parallelism matrix to multiply to {card}, "
                    f"but found {col}",
                    _matrix_text(self.matrix),
                )
        _check_axes(self.reduction_axes, len(self.matrix))

    @property
    def axes(self) -> tuple[int, ...]:
        """The parallelism axes: the products of the rows."""
        return tuple(math.prod(row) for row in self.matrix)

    def hierarchy(self) -> SynthesisHierarchy:
        """The collapsed reduction-axis synthesis hierarchy (option (d))."""
        names, sizes, levels = [], [], []
        for j, name in enumerate(self.system.names):
            size = math.prod(self.matrix[i][j] for i in self.reduction_axes)
            if size > 1:
                names.append(name)
                sizes.append(size)
                levels.append(j)
        return SynthesisHierarchy(tuple(names), tuple(sizes), tuple(levels))

    def layout(self) -> DeviceLayout:
        """The physical devices of each replica of the reduction."""
        hier = self.hierarchy()
        m, n = len(self.matrix), len(self.system.levels)
        red = set(self.reduction_axes)
        table: dict[tuple[int, ...], list[int]] = {}
        for device in range(self.system.size):
            coords = self.system.coords(device)
            dindex, key = 0, []
            for j in range(n):
                digits = _split(coords[j], [self.matrix[i][j] for i in range(m)])
                for i in range(m):
                    if i in red:
                        dindex = dindex * self.matrix[i][j] + digits[i]
                    else:
                        key.append(digits[i])
            table.setdefault(tuple(key), [-1] * hier.size)[dindex] = device
        return DeviceLayout(self.system, hier, tuple(tuple(v) for _, v in sorted(table.items())))

    def __str__(self) -> str:
        return _matrix_text(self.matrix)


def _matrix_text(matrix: Sequence[Sequence[int]]) -> str:
    return "[" + " ".join("[" + " ".join(str(x) for x in row) + "]" for row in matrix) + "]"


def _split(value: int, radices: Sequence[int]) -> list[int]:
    out = []
    for r in reversed(radices):
        out.append(value % r)
        value //= r
    return out[::-1]


def _check_axes(reduction_axes: tuple[int, ...], m: int) -> None:
    if not reduction_axes:
        raise ReductionError("expected at least one reduction axis, but found none")
    for a in reduction_axes:
        if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < m:
            raise ReductionError(
                f"expected reduction axes in [0, {m}), but found {a!r}", reduction_axes
            )
    if len(set(reduction_axes)) != len(reduction_axes):
        raise ReductionError(f"expected distinct reduction axes, but found {reduction_axes}")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_placements(
    system: System, axes: Sequence[int], reduction_axes: Sequence[int]
) -> tuple[Placement, ...]:
    """All parallelism matrices of `axes` on `system` (equations (1) and (2)).

    >>> from distal.reduction.system import a100_system
    >>> [str(p) for p in enumerate_placements(a100_system(2), [2, 16], [0])]
    ['[[1 2] [2 8]]', '[[2 1] [1 16]]']
    """
    axes = tuple(axes)
    for p in axes:
        if isinstance(p, bool) or not isinstance(p, int) or p < 1:
            raise ReductionError(f"expected positive parallelism axes, but found {axes!r}")
    if math.prod(axes) != system.size:
        raise ReductionError(
            f"expected parallelism axes multiplying to the {system.size} devices of {system}, "
            f"but found {list(axes)} (product {math.prod(axes)})"
        )
    red = tuple(reduction_axes)
    _check_axes(red, len(axes))
    return tuple(
        Placement(system, matrix, red) for matrix in _matrices(system.cardinalities, axes)
    )


def _matrices(
    columns: tuple[int, ...], axes: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], ...]]:
    if len(axes) == 1:
        if math.prod(columns) == axes[0]:
            yield (columns,)
        return
    for row in _rows(columns, axes[0]):
        rest = tuple(c // x for c, x in zip(columns, row))
        for tail in _matrices(rest, axes[1:]):
            yield (row, *tail)


def _rows(columns: tuple[int, ...], target: int) -> Iterator[tuple[int, ...]]:
    if not columns:
        if target == 1:
            yield ()
        return
    for x in _divisors(columns[0]):
        if target % x == 0:
            for tail in _rows(columns[1:], target // x):
                yield (x, *tail)


def layout_from_groups(system: System, groups: Sequence[Sequence[int]]) -> DeviceLayout:
    """A layout for explicit reduction groups of physical devices.

    Each group is summed separately. When every group is a product of
    per-level coordinate sets of the same shape (a regular sub-grid of the
    hierarchy, as any placement gives), the synthesis hierarchy has one level
    per system level the group spans; otherwise the group is one flat level.

    >>> from distal.reduction.system import a100_system
    >>> lay = layout_from_groups(a100_system(2), [[0, 1, 16, 17]])
    >>> str(lay.hierarchy), lay.replicas
    ('[(root, 1), (node, 2), (gpu, 2)]', ((0, 1, 16, 17),))
    """
    gs = [tuple(int(d) for d in g) for g in groups]
    if not gs or any(len(g) == 0 for g in gs):
        raise ReductionError(f"expected non-empty device groups, but found {groups!r}")
    flat = [d for g in gs for d in g]
    for d in flat:
        if not 0 <= d < system.size:
            raise ReductionError(
                f"expected device ids in [0, {system.size}), but found {d}", system
            )
    if len(set(flat)) != len(flat):
        raise ReductionError(f"expected disjoint device groups, but found {gs}")
    if len({len(g) for g in gs}) != 1:
        raise ReductionError(
            f"expected device groups of one size, but found sizes {sorted({len(g) for g in gs})}"
        )
    shapes = [_grid_shape(system, g) for g in gs]
    if shapes[0] is not None and all(s == shapes[0] for s in shapes):
        sets = shapes[0]
        levels = tuple(j for j, s in enumerate(sets) if s > 1)
        hier = SynthesisHierarchy(
            tuple(system.names[j] for j in levels), tuple(sets[j] for j in levels), levels
        )
        reps = tuple(tuple(sorted(g, key=system.coords)) for g in gs)
    else:
        inner = len(system.levels) - 1
        size = len(gs[0])
        if size == 1:
            hier = SynthesisHierarchy((), (), ())
        else:
            hier = SynthesisHierarchy((system.names[inner],), (size,), (inner,))
        reps = tuple(tuple(sorted(g)) for g in gs)
    return DeviceLayout(system, hier, reps)


def _grid_shape(system: System, group: tuple[int, ...]) -> tuple[int, ...] | None:
    coords = [system.coords(d) for d in group]
    sets = [sorted({c[j] for c in coords}) for j in range(len(system.levels))]
    if math.prod(len(s) for s in sets) != len(group):
        return None
    return tuple(len(s) for s in sets)
