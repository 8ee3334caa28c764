"""Formats as distributed types, and redistribution plans between formats.

A `Format` on a `Machine` becomes a distributed type of the redistribution
paper (papers/redistribution-collectives.txt, section 2.1) on a `Mesh`:

* every machine grid dimension is a mesh axis of the same size, named like
  the machine dimension (level 0) or ``name_level`` (deeper levels of a
  hierarchical machine), in the machine's order, so a mesh device
  coordinate *is* a machine processor coordinate;
* a tensor dimension partitioned over machine dimensions gets those axes,
  listed minor-to-major (the deepest level is the minor-most axis);
* a broadcast dimension ``*`` is an axis no tensor dimension uses
  (replicated);
* a fixed dimension (a digit) is also replicated in the type; the
  `Layout` remembers the face, and executing a plan adds an explicit step:
  the devices off the face copy the tile of their face partner first
  (``expand``), and only the face keeps the result (``restrict``).

Non-divisible extents. The paper's types need ``local * parts == global``.
distal pads: a dimension of extent n cut into tiles of t = ceil(n/g) (the
format's blocked tiles) lives in a padded dimension of g*t, element i at
position i (hierarchical levels pad every outer tile the same way, so
element i sits at ``(c0*g1 + c1)*t1 + r``). A dimension the format does
not partition takes any padded extent, so two formats agree on the padded
global type unless both partition one dimension with different padded
positions (e.g. 5 over 2 parts, tiles of 3, padded to 6, and over 4 parts,
tiles of 2, padded to 8). Then the plan gathers that dimension first,
re-pads it locally and synthesizes the rest (two programs); only this case
may exceed the memory bound, and `FormatProgram.height` says by how much.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distal.errors import FormatError
from distal.format.distribution import BROADCAST
from distal.format.format import Format
from distal.machine.grid import Machine
from distal.redist.mesh import Mesh
from distal.redist.program import CollectiveProgram
from distal.redist.synth import synthesize
from distal.redist.types import Dim, DistType

__all__ = [
    "DimLayout",
    "FormatProgram",
    "Layout",
    "Repad",
    "axis_names",
    "layout",
    "mesh_of",
    "plan_redistribution",
]


def axis_names(machine: Machine) -> tuple[tuple[str, ...], ...]:
    """The mesh axis name of every machine dimension, per level.

    >>> from distal.machine.grid import Grid
    >>> axis_names(Machine(Grid(2, 2), Grid(4)))
    (('x', 'y'), ('x_1',))
    """
    taken: set[str] = set(machine.grids[0].names)
    out: list[tuple[str, ...]] = [machine.grids[0].names]
    for level, grid in enumerate(machine.grids[1:], start=1):
        names = []
        for n in grid.names:
            name, k = f"{n}_{level}", level
            while name in taken:
                k += 1
                name = f"{n}_{k}"
            taken.add(name)
            names.append(name)
        out.append(tuple(names))
    return tuple(out)


def mesh_of(machine: Machine) -> Mesh:
    """The mesh of a machine: one axis per grid dimension, levels concatenated.

    >>> from distal.machine.grid import Grid
    >>> str(mesh_of(Machine(Grid(2, 2), Grid(4))))
    '{x: 2, y: 2, x_1: 4}'
    """
    names = [n for level in axis_names(machine) for n in level]
    return Mesh(tuple(zip(names, machine.full_shape, strict=True)))


@dataclass(frozen=True, slots=True)
class DimLayout:
    """How one tensor dimension of extent ``extent`` lies in its padded dimension.

    ``parts`` lists the partitioning levels, outermost first, as (mesh axis,
    parts, nominal tile after that level); ``padded`` is the padded extent.
    ``spread`` gives an unpartitioned dimension the padded positions of
    another layout's ``parts`` (so that both agree), without its axes.
    """

    extent: int
    padded: int
    parts: tuple[tuple[str, int, int], ...]
    spread: tuple[tuple[str, int, int], ...] = ()

    @property
    def tile(self) -> int:
        """The padded local extent (one device's block)."""
        return self.parts[-1][2] if self.parts else self.padded

    @property
    def axes(self) -> tuple[str, ...]:
        """The mesh axes of this dimension, minor-to-major (size-1 axes dropped)."""
        return tuple(a for a, g, _ in reversed(self.parts) if g > 1)

    def positions(self) -> np.ndarray:
        """The padded position of each element: an int64 array of length ``extent``.

        >>> DimLayout(5, 8, (("x", 2, 3), ("x_1", 2, 2))).positions()
        array([0, 1, 2, 4, 5])
        """
        idx = np.arange(self.extent, dtype=np.int64)
        parts = self.parts or self.spread
        if not parts:
            return idx
        pos = np.zeros_like(idx)
        rest = idx
        for _, g, t in parts:
            color = rest // t
            rest = rest - color * t
            pos = pos * g + color
        return pos * parts[-1][2] + rest

    def adopt(self, other: DimLayout) -> DimLayout:
        """This unpartitioned dimension laid out at ``other``'s padded positions."""
        assert not self.parts
        if not other.parts:
            return DimLayout(self.extent, max(self.padded, other.padded), ())
        return DimLayout(self.extent, other.padded, (), other.parts)

    def same_positions(self, other: DimLayout) -> bool:
        return self.padded == other.padded and bool(np.array_equal(self.positions(), other.positions()))


@dataclass(frozen=True, slots=True)
class Layout:
    """A format's layout of a tensor of ``shape``: padded type, faces, device blocks.

    >>> from distal.machine.grid import Grid
    >>> m = Machine(Grid(2, 2, 2))
    >>> lay = layout(Format("xy -> xy0", m), (5, 4))
    >>> str(lay.type), lay.fixed, lay.tile
    ('[3{x}6, 2{y}4]', (('z', 0),), (3, 2))
    """

    format: Format
    shape: tuple[int, ...]
    mesh: Mesh
    dims: tuple[DimLayout, ...]
    fixed: tuple[tuple[str, int], ...]

    @property
    def type(self) -> DistType:
        """The padded distributed type (fixed axes replicated)."""
        return DistType(tuple(Dim(d.tile, d.axes, d.padded) for d in self.dims))

    @property
    def tile(self) -> tuple[int, ...]:
        """The block every holding device keeps (padded nominal tile)."""
        return tuple(d.tile for d in self.dims)

    @property
    def padded(self) -> tuple[int, ...]:
        return tuple(d.padded for d in self.dims)

    def holds(self, device: Sequence[int]) -> bool:
        """Whether the device (a machine coordinate) holds data: it lies on every fixed face."""
        names = self.mesh.names
        return all(device[names.index(a)] == v for a, v in self.fixed)

    def holders(self) -> list[tuple[int, ...]]:
        """The devices that hold a block, row-major."""
        return [d for d in self.mesh.devices() if self.holds(d)]

    def positions(self) -> tuple[np.ndarray, ...]:
        """Per dimension, the padded position of every element (see `DimLayout.positions`)."""
        return tuple(d.positions() for d in self.dims)

    def pad(self, array: np.ndarray) -> np.ndarray:
        """The padded global array: ``array`` at its padded positions, zeros elsewhere."""
        out = np.zeros(self.padded, dtype=array.dtype)
        if array.size:
            out[np.ix_(*self.positions())] = array
        return out

    def crop(self, padded: np.ndarray) -> np.ndarray:
        """The tensor's elements of a padded global array (inverse of `pad`)."""
        if 0 in self.shape:
            return np.zeros(self.shape, dtype=padded.dtype)
        # np.ascontiguousarray makes a 0-d array 1-d: reshape back (a scalar stays 0-d)
        return np.ascontiguousarray(padded[np.ix_(*self.positions())]).reshape(self.shape)

    def adopt(self, other: Layout) -> Layout:
        """This layout with its unpartitioned dimensions at ``other``'s padded positions."""
        dims = tuple(d.adopt(o) if not d.parts else d for d, o in zip(self.dims, other.dims, strict=True))
        return Layout(self.format, self.shape, self.mesh, dims, self.fixed)


def layout(fmt: Format, shape: Sequence[int]) -> Layout:
    """The layout of a tensor of ``shape`` in format ``fmt`` (see the module docstring).

    >>> from distal.machine.grid import Grid
    >>> str(layout(Format("xy -> y*", Machine(Grid(2, 2))), (4, 5)).type)
    '[4, 3{x}6]'
    >>> str(layout(Format(["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(2))), (5, 4)).type)
    '[2{x_1,x}8, 2{y}4]'
    """
    if not isinstance(fmt, Format):
        raise FormatError(f"expected a Format, but found {fmt!r}")
    fmt.tile_shape(shape)  # refuses a shape of the wrong order
    dims_shape = tuple(int(n) for n in shape)
    names = axis_names(fmt.machine)
    parts: list[list[tuple[str, int, int]]] = [[] for _ in dims_shape]
    extent = list(dims_shape)
    fixed: list[tuple[str, int]] = []
    for level, dist in enumerate(fmt.levels):
        grid = fmt.machine.grids[level]
        for d in range(fmt.order):
            k = dist.machine_dim_of(d)
            if k is not None:
                g = grid.dims[k]
                extent[d] = max(-(-extent[d] // g), 1)
                parts[d].append((names[level][k], g, extent[d]))
        for k, y in enumerate(dist.machine_names):
            if isinstance(y, int):
                fixed.append((names[level][k], y))
            else:
                assert y == BROADCAST or dist.tensor_dim_of(k) is not None
    dims = []
    for n, ps in zip(dims_shape, parts, strict=True):
        # types need positive sizes: an empty dimension is padded to one element per part
        padded = ps[-1][2] * math.prod(g for _, g, _ in ps) if ps else max(n, 1)
        dims.append(DimLayout(n, padded, tuple(ps)))
    return Layout(fmt, dims_shape, mesh_of(fmt.machine), tuple(dims), tuple(fixed))


@dataclass(frozen=True, slots=True)
class Repad:
    """A local step: dimensions ``dims`` (unpartitioned here) change padded positions."""

    before: DistType
    after: DistType
    dims: tuple[int, ...]

    def __str__(self) -> str:
        return f"repad({', '.join(str(d) for d in self.dims)})"


Stage = CollectiveProgram | Repad


@dataclass(frozen=True)
class FormatProgram:
    """A redistribution from one format to another, for tensors of one shape.

    ``stages`` are programs of collectives on padded types (one, or two
    around a `Repad` when the formats pad a dimension differently). The
    executor adds ``expand`` before them when the source fixes a face and
    ``restrict`` after them when the target does. Costs and heights count
    elements per device, padding included, as in the paper's Fig. 11.

    >>> from distal.machine.grid import Grid
    >>> m = Machine(Grid(2, 2))
    >>> p = plan_redistribution(Format("xy -> xy", m), Format("xy -> yx", m), (4, 4))
    >>> [str(s) for s in p.steps], p.cost, p.height, p.bound
    (['allpermute'], 4, 4, 4)
    """

    source: Layout
    target: Layout
    stages: tuple[Stage, ...]
    method: str

    @property
    def mesh(self) -> Mesh:
        return self.source.mesh

    @property
    def programs(self) -> tuple[CollectiveProgram, ...]:
        return tuple(s for s in self.stages if isinstance(s, CollectiveProgram))

    @property
    def program(self) -> CollectiveProgram:
        """The program of collectives when there is one stage (the usual case)."""
        progs = self.programs
        if len(progs) != 1:
            raise FormatError(
                f"expected one program, but found {len(progs)} (the formats pad a dimension differently); see .stages"
            )
        return progs[0]

    @property
    def steps(self) -> tuple[object, ...]:
        """Every step, collectives and local steps, in order."""
        out: list[object] = []
        for s in self.stages:
            out.extend(s.steps if isinstance(s, CollectiveProgram) else (s,))
        return tuple(out)

    @property
    def expand_cost(self) -> int:
        """Elements each device off the source's face receives first (0 without a fixed face)."""
        return self.programs[0].source.local_size if self.source.fixed else 0

    @property
    def cost(self) -> int:
        """Elements communicated per device: the programs plus the expand step."""
        return self.expand_cost + sum(p.cost for p in self.programs)

    @property
    def height(self) -> int:
        """The largest block a device holds along the way (padded elements)."""
        sizes = [math.prod(self.source.tile), math.prod(self.target.tile)]
        sizes += [p.height for p in self.programs]
        return max(sizes)

    @property
    def bound(self) -> int:
        """The paper's bound: max(localsize(source type), localsize(target type))."""
        return max(self.programs[0].source.local_size, self.programs[-1].target.local_size)

    @property
    def naive_cost(self) -> int:
        """The cost of the naive program (allgather everything, then slice) between the same types."""
        first, last = self.programs[0].source, self.programs[-1].target
        if first.global_type != last.global_type:
            return self.cost
        return self.expand_cost + synthesize(first, last, self.mesh, method="naive").cost

    def __str__(self) -> str:
        src, dst = self.source, self.target
        lines = [
            f"redistribute {src.format} -> {dst.format} for shape {src.shape} on mesh {self.mesh}",
            f"  source type {src.type}" + _faces(src),
            f"  target type {dst.type}" + _faces(dst),
        ]
        if src.fixed:
            lines.append(f"  expand: devices off the face copy their face partner's block  cost {self.expand_cost}")
        for stage in self.stages:
            text = (str(stage) if isinstance(stage, CollectiveProgram)
                    else f"{stage}: {stage.before} => {stage.after}  cost 0")
            lines.extend("  " + line for line in text.splitlines())
        if dst.fixed:
            lines.append("  restrict: only the face keeps its block  cost 0")
        lines.append(f"cost {self.cost}, height {self.height} (bound {self.bound})")
        return "\n".join(lines)


def _faces(lay: Layout) -> str:
    if not lay.fixed:
        return ""
    return " on the face " + ", ".join(f"{a}={v}" for a, v in lay.fixed)


def plan_redistribution(src: Format, dst: Format, shape: Sequence[int], method: str = "search") -> FormatProgram:
    """The plan moving a tensor of ``shape`` from format ``src`` to ``dst`` (same machine).

    ``method`` is passed to `distal.redist.synthesize` ("search" or "naive").
    The programs may relabel the device map as the paper does (Theorem 6.7's
    bound on meshes mixing primes); the Legate executor
    (`runtime/_redistribute.py`) addresses blocks through each step's frame.

    >>> from distal.machine.grid import Grid
    >>> m = Machine(Grid(2, 2))
    >>> p = plan_redistribution(Format("xy -> x*", m), Format("xy -> y*", m), (5, 5))
    >>> print(p.program.source, p.program.target)
    [3{x}6, 6] [6, 3{x}6]
    """
    for f, side in ((src, "source"), (dst, "target")):
        if not isinstance(f, Format):
            raise FormatError(f"expected a Format as the {side} of a redistribution, but found {f!r}")
    if src.machine != dst.machine:
        raise FormatError(
            f"expected formats on the same machine, but found {src} on {src.machine!r} and {dst} on {dst.machine!r}"
        )
    if src.order != dst.order:
        raise FormatError(
            f"expected formats of the same order, but found {src} of order {src.order} and {dst} of order {dst.order}"
        )
    a, b = layout(src, shape), layout(dst, shape)
    conflicts = [d for d, (da, db) in enumerate(zip(a.dims, b.dims, strict=True))
                 if da.parts and db.parts and not da.same_positions(db)]
    sa, sb = a.adopt(b), b.adopt(a)
    mesh = a.mesh
    if not conflicts:
        return FormatProgram(sa, sb, (synthesize(sa.type, sb.type, mesh, method=method),), method)
    # gather the conflicting dimensions, re-pad them locally, synthesize the rest; the other
    # dimensions keep the source's or take the target's axes there, whichever holds less
    best: FormatProgram | None = None
    for keep in (sa.type, sb.type):
        before = DistType(tuple(Dim(dm.global_, (), dm.global_) if d in conflicts else keep.dims[d]
                                for d, dm in enumerate(sa.type.dims)))
        after = DistType(tuple(Dim(dm.global_, (), dm.global_) if d in conflicts else keep.dims[d]
                               for d, dm in enumerate(sb.type.dims)))
        first = synthesize(sa.type, before, mesh, method=method)
        second = synthesize(after, sb.type, mesh, method=method)
        cand = FormatProgram(sa, sb, (first, Repad(before, after, tuple(conflicts)), second), method)
        if best is None or (cand.height, cand.cost) < (best.height, best.cost):
            best = cand
    assert best is not None
    return best
