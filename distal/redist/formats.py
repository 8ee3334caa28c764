"""Formats as distributed types, and redistribution plans between formats.

A format's layout of a tensor (`distal.format.layout.Layout`, the format's
own blocks) becomes a distributed type of the redistribution paper
(papers/redistribution-collectives.txt, section 2.1) on a `Mesh`
(`mesh_of`, `dist_type`):

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

from distal.errors import FormatError
from distal.format.format import Format
from distal.format.layout import Layout, layout, machine_axes
from distal.machine.grid import Machine
from distal.redist.mesh import Mesh
from distal.redist.program import CollectiveProgram
from distal.redist.synth import synthesize
from distal.redist.types import Dim, DistType

__all__ = ["FormatProgram", "Repad", "dist_type", "mesh_of", "plan_redistribution"]


def mesh_of(machine: Machine) -> Mesh:
    """The mesh of a machine: one axis per grid dimension (`machine_axes`), levels concatenated.

    >>> from distal.machine.grid import Grid
    >>> str(mesh_of(Machine(Grid(2, 2), Grid(4))))
    '{x: 2, y: 2, x_1: 4}'
    """
    return Mesh(machine_axes(machine))


def dist_type(lay: Layout) -> DistType:
    """The padded distributed type of a format's layout (fixed axes replicated).

    >>> from distal.machine.grid import Grid
    >>> from distal.format.layout import layout
    >>> str(dist_type(layout(Format("xy -> xy0", Machine(Grid(2, 2, 2))), (5, 4))))
    '[3{x}6, 2{y}4]'
    >>> str(dist_type(layout(Format("xy -> y*", Machine(Grid(2, 2))), (4, 5))))
    '[4, 3{x}6]'
    >>> str(dist_type(layout(Format(["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(2))), (5, 4))))
    '[2{x_1,x}8, 2{y}4]'
    """
    return DistType(tuple(Dim(d.tile, d.axes, d.padded) for d in lay.dims))


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
    finished plan (`distal.redist.finish.finish`) adds ``expand`` before
    them when the source fixes a face and ``restrict`` after them when the
    target does. Costs and heights count
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
        return mesh_of(self.source.format.machine)

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
            f"  source type {dist_type(src)}" + _faces(src),
            f"  target type {dist_type(dst)}" + _faces(dst),
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
    bound on meshes mixing primes); `distal.redist.finish.finish` writes down
    the blocks each step reads through its frame, and the Legate executor
    (`runtime/_redistribute.py`) runs that.

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
    mesh = mesh_of(src.machine)
    ta, tb = dist_type(sa), dist_type(sb)
    if not conflicts:
        return FormatProgram(sa, sb, (synthesize(ta, tb, mesh, method=method),), method)
    # gather the conflicting dimensions, re-pad them locally, synthesize the rest; the other
    # dimensions keep the source's or take the target's axes there, whichever holds less
    best: FormatProgram | None = None
    for keep in (ta, tb):
        before = DistType(tuple(Dim(dm.global_, (), dm.global_) if d in conflicts else keep.dims[d]
                                for d, dm in enumerate(ta.dims)))
        after = DistType(tuple(Dim(dm.global_, (), dm.global_) if d in conflicts else keep.dims[d]
                               for d, dm in enumerate(tb.dims)))
        first = synthesize(ta, before, mesh, method=method)
        second = synthesize(after, tb, mesh, method=method)
        cand = FormatProgram(sa, sb, (first, Repad(before, after, tuple(conflicts)), second), method)
        if best is None or (cand.height, cand.cost) < (best.height, best.cost):
            best = cand
    assert best is not None
    return best
