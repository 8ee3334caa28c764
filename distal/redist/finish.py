"""Finishing a redistribution plan: the `Moves` the runtime interprets, worked out once from the synthesizer's objects.

`finish` reads a `FormatProgram` (its layouts, programs, device frames and
re-padding) and writes down what each launch reads and writes
(`distal.redist.moves`). A tensor's data lives on the machine's grid, and
the programs run on its factor grid (`FactorGrid`): one dimension per prime
factor of the machine's dimensions. Every step is a launch over that grid
that writes each device's block of a new store from blocks of the previous
one, as the step's per-device meaning says (`distal.redist.program`):

* dynslice: a device reads its own block and keeps a part of it;
* allgather, alltoall: a device reads the blocks of its group (the devices
  that differ from it only along the gathered or moved factor axes) and
  assembles its new block;
* allpermute: a device reads the one block it needs; when the source holder
  is an affine function of the device (factor axes matched size by size)
  one index launch does it, otherwise one pinned launch per device;
* relabel moves no data and launches nothing: it changes the program's
  frame (`CollectiveProgram.frames`, `distal.redist.frames`), the device that
  plays each point of the mesh. Until the final allpermute, a step runs at
  every point ``h`` and reads and writes the blocks of the devices playing
  the points it names (``frame[h]`` for its own): one pinned launch per
  point; the allpermute then reads each block from a device holding it in
  the frame and writes it where the mesh's own map wants it;
* repad (distal's own local step for formats that pad a dimension
  differently) moves the elements of a gathered dimension to new padded
  positions.

Before the programs, ``enter`` turns the source format's blocks into blocks
of the program's first type (a device off a fixed face copies its face
partner's block, ``expand``; unpartitioned dimensions are padded, ``pad``);
after them, ``exit`` keeps the target format's blocks (only the face,
``restrict``; cropped, ``crop``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from distal.format.layout import DimLayout, Layout, layout
from distal.redist.collectives import AllGather, AllPermute, AllToAll, DynSlice, Relabel
from distal.redist.formats import FormatProgram, Repad, mesh_of
from distal.redist.frames import Frame, identity, offsets_at, point_coords, point_index
from distal.redist.mesh import Mesh
from distal.redist.moves import (
    CollectiveMove,
    Exchange,
    FactorGrid,
    Lead,
    Moves,
    Permute,
    Pinned,
    ProgramMoves,
    Reframe,
    Reposition,
)
from distal.redist.program import CollectiveProgram
from distal.redist.types import DistType, ref_factors

__all__ = ["factor_grid", "finish", "finish_program"]


def factor_grid(mesh: Mesh) -> FactorGrid:
    """The factor grid of ``mesh`` as plain data (`Mesh.factors`)."""
    return FactorGrid(mesh.axes, tuple((f.axis, f.size, f.stride) for f in mesh.factors))


def _refs(mesh: Mesh, axes: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(f for a in axes for f in ref_factors(mesh, a))


def _exchange(mesh: Mesh, label: str, src: DistType, dst: DistType, gathers: list[tuple[int, tuple[int, ...]]],
              slices: list[tuple[int, tuple[int, ...]]], frame: Frame) -> Exchange:
    """One exchange; groups and indices are over points of ``frame`` (the device map of ``src``)."""
    sizes = tuple(f.size for f in mesh.factors)
    group = tuple(sorted({f for _, run in gathers for f in run}))
    members = tuple(itertools.product(*(range(sizes[f]) for f in group)))
    pinned: tuple[Pinned, ...] | None = None
    if frame != identity(mesh):
        # device frame[h] plays point h and holds its tile; a group member is the device playing a point
        # that differs only along the group's factors (no affine map of the device in general)
        pts = point_coords(mesh)
        launches = []
        for h, (c, dev) in enumerate(zip(pts, frame, strict=True)):
            reads = []
            for values in members:
                mc = list(c)
                for f, v in zip(group, values):
                    mc[f] = v
                reads.append(pts[frame[point_index(mesh, mc)]])
            launches.append(Pinned(c, tuple(reads), pts[dev], h))
        pinned = tuple(launches)
    return Exchange(label, group, members, tuple(gathers), tuple(slices), src.local_type, dst.local_type, pinned)


def _permute_map(mesh: Mesh, src: DistType, dst: DistType) -> tuple[int, ...] | None:
    """The source holder's factor coordinates as the device's (one launch dimension each), or None."""
    sizes = [f.size for f in mesh.factors]
    s_lists, d_lists = src.factor_lists(mesh), dst.factor_lists(mesh)
    lead = list(range(len(sizes)))
    for s, d in zip(s_lists, d_lists, strict=True):
        if [sizes[f] for f in s] != [sizes[f] for f in d]:
            return None
        for fs, fd in zip(s, d):
            lead[fs] = fd
    return tuple(lead)


def _permute(mesh: Mesh, label: str, src: DistType, dst: DistType, frame: Frame) -> Permute:
    """Every device receives the tile ``dst`` gives it (mesh's own map) from a holder in ``frame``."""
    lead = _permute_map(mesh, src, dst) if frame == identity(mesh) else None
    pinned: list[Pinned] = []
    if lead is None:
        pts = point_coords(mesh)
        holders: dict[tuple[int, ...], list[int]] = {}
        for h, off in enumerate(offsets_at(src, mesh)):
            holders.setdefault(off, []).append(frame[h])
        for d, want in enumerate(offsets_at(dst, mesh)):
            pool = holders[want]
            h = d if d in pool else pool[0]
            here = pts[d] or (0,)
            pinned.append(Pinned(here, (pts[h] or (0,),), here, d))
    return Permute(label, src.local_size, dst.local_size, lead, tuple(pinned))


def finish_program(program: CollectiveProgram) -> ProgramMoves:
    """The steps of ``program`` as launches on its mesh's factor grid (see the module docstring)."""
    mesh = program.mesh
    steps: list[CollectiveMove] = []
    for step, src, dst, frame in zip(program.steps, program.types, program.types[1:], program.frames):
        label = str(step)
        if isinstance(step, Relabel):
            steps.append(Reframe(label, dst.local_size))
        elif isinstance(step, AllPermute):
            steps.append(_permute(mesh, label, src, dst, frame))
        elif isinstance(step, AllGather):
            steps.append(_exchange(mesh, label, src, dst, [(i, _refs(mesh, r)) for i, r in step.axes], [], frame))
        elif isinstance(step, DynSlice):
            steps.append(_exchange(mesh, label, src, dst, [], [(i, _refs(mesh, r)) for i, r in step.axes], frame))
        elif isinstance(step, AllToAll):
            runs = [(i, j, _refs(mesh, r)) for i, j, r in step.moves]
            steps.append(_exchange(mesh, label, src, dst, [(i, r) for i, _, r in runs],
                                   [(j, r) for _, j, r in runs], frame))
        else:  # pragma: no cover - a new collective must be taught here
            raise AssertionError(f"expected a collective distal can run, but found {step!r}")
    return ProgramMoves(factor_grid(mesh), tuple(steps))


def _unpartitioned(lay: Layout) -> list[int]:
    return [d for d, dim in enumerate(lay.dims) if not dim.parts]


def _same(a: Layout, b: Layout, dims: Sequence[int]) -> bool:
    return a.tile == b.tile and all(a.dims[d].same_positions(b.dims[d]) for d in dims)


def _moves(dims: Sequence[int], old: Layout, new: Layout) -> tuple[tuple[int, DimLayout, DimLayout], ...]:
    return tuple((d, old.dims[d], new.dims[d]) for d in dims)


def _enter(own: Layout, src: Layout, grid: FactorGrid) -> Reposition | None:
    """Blocks of the first program's source type from the source format's blocks (None: they are)."""
    free = _unpartitioned(own)
    if not src.fixed and _same(own, src, free):
        return None
    fixed = {a for a, _ in src.fixed}
    lead: Lead = tuple((None, 0) if a in fixed else (k, 0) for k, (a, _, _) in enumerate(grid.factors)) or ((0, 0),)
    return Reposition("expand" if src.fixed else "pad", own.tile, src.tile, _moves(free, own, src), lead, grid.shape())


def _exit(last: Layout, target: Layout, grid: FactorGrid) -> Reposition | None:
    """The target format's blocks (face only, cropped) from blocks of the last program's type (None: they are)."""
    free = _unpartitioned(target)
    if not target.fixed and _same(last, target, free):
        return None
    faces = dict(target.fixed)
    lead: Lead = tuple((None, (faces[a] // stride) % size) if a in faces else (k, 0)
                       for k, (a, size, stride) in enumerate(grid.factors)) or ((0, 0),)
    return Reposition("restrict" if target.fixed else "crop", last.tile, target.tile, _moves(free, last, target),
                      lead, grid.shape(faces))


def _repad(plan: FormatProgram, stage: Repad, grid: FactorGrid) -> Reposition:
    own: Lead = tuple((k, 0) for k in range(len(grid.shape())))
    return Reposition(str(stage), stage.before.local_type, stage.after.local_type,
                      _moves(stage.dims, plan.source, plan.target), own, grid.shape())


def finish(plan: FormatProgram) -> Moves:
    """What the runtime runs to move a tensor held in ``plan``'s source format to its target format.

    The data starts in the source format's own layout and ends in the
    target format's (`distal.format.layout.layout`).

    >>> from distal.format.format import Format
    >>> from distal.machine.grid import Grid, Machine
    >>> from distal.redist.formats import plan_redistribution
    >>> m = Machine(Grid(2, 2))
    >>> moves = finish(plan_redistribution(Format("xy -> xy", m), Format("xy -> yx", m), (4, 4)))
    >>> [type(s).__name__ for p in moves.stages for s in p.steps], moves.enter, moves.exit
    (['Permute'], None, None)
    """
    shape = plan.source.shape
    own = layout(plan.source.format, shape)
    target = layout(plan.target.format, shape)
    grid = factor_grid(mesh_of(plan.source.format.machine))
    stages: list[ProgramMoves | Reposition] = []
    for stage in plan.stages:
        stages.append(finish_program(stage) if isinstance(stage, CollectiveProgram) else _repad(plan, stage, grid))
    return Moves(own, target, grid, _enter(own, plan.source, grid), tuple(stages),
                 _exit(plan.target, target, grid), plan.height)
